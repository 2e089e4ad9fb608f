//! The session's kernel program: built in the form the runtime's
//! [`KernelFormat`] asks for (PTX or the portable OpenCL C / SPIR-V) and
//! one kernel object per kernel the artifact's entries launch by index.

use std::sync::Arc;

use opencl3::kernel::Kernel;
use opencl3::program::Program;

use crate::artifact::Artifact;
use crate::error::{ClResultExt, Error, Result};
use crate::program_cache::{ProgramOrigin, ProgramSource, SourceKind};
use crate::{KERNEL_FORMAT_ENV, KernelFormat, Runtime};

/// One of the artifact's kernels, as `launch` finds it by index.
pub(super) struct KernelSlot {
    pub(super) kernel: Kernel,
    pub(super) name: String,
    pub(super) num_args: u32,
}

/// The artifact's kernels, in its order, from `program`.
pub(super) fn kernel_slots(program: &Program, art: &Artifact) -> Result<Vec<KernelSlot>> {
    art.kernel_names
        .iter()
        .map(|name| {
            let kernel = Kernel::create(program, name).map_err(|e| Error::MalformedArtifact {
                path: art.path.clone(),
                reason: format!(
                    "kernel `{name}` is not in the kernel program ({e}); the program defines: {}",
                    program.get_kernel_names().unwrap_or_default()
                ),
            })?;
            let num_args = kernel
                .num_args()
                .cl("clGetKernelInfo(CL_KERNEL_NUM_ARGS)")?;
            Ok(KernelSlot {
                kernel,
                name: name.clone(),
                num_args,
            })
        })
        .collect()
}

/// A built kernel program and how it was chosen.
pub(super) struct BuiltProgram {
    pub(super) program: Arc<Program>,
    pub(super) origin: ProgramOrigin,
    pub(super) format: SourceKind,
    pub(super) note: Option<String>,
}

/// Builds the artifact's kernels in the form the runtime's
/// [`KernelFormat`] asks for: PTX where the artifact has it and the device
/// is NVIDIA's (falling back to the OpenCL C when the driver refuses it),
/// else the OpenCL C.
pub(super) fn build_program(rt: &Runtime, art: &Artifact) -> Result<BuiltProgram> {
    let inner = &rt.inner;
    let device = &inner.device;
    if inner.faults.take(crate::Fault::KernelBuild) {
        return Err(Error::Build {
            device: device.name.clone(),
            code: "CL_BUILD_PROGRAM_FAILURE".into(),
            kernels: Vec::new(),
            log: "injected fault (Runtime::inject_fault)".into(),
        });
    }
    let portable = ProgramSource {
        kind: art.source_kind,
        bytes: &art.source,
        options: &art.build_options,
    };
    let build = |source: &ProgramSource| {
        inner
            .programs()
            .get_or_build(&inner.context, device, source)
    };
    let built = |(program, origin): (Arc<Program>, ProgramOrigin), format, note| BuiltProgram {
        program,
        origin,
        format,
        note,
    };
    let nvidia = device.platform_name.contains("NVIDIA");
    match (inner.kernel_format, art.ptx.as_deref()) {
        (KernelFormat::OpenClC, _) => Ok(built(build(&portable)?, portable.kind, None)),
        (KernelFormat::Ptx, None) => Err(Error::Unsupported(format!(
            "PTX kernels were asked for ({KERNEL_FORMAT_ENV}=ptx or --kernel-format=ptx) but {} carries none; compile it with --target=nvidia or --ptx=on",
            art.path.display()
        ))),
        (KernelFormat::Ptx, Some(ptx)) => {
            Ok(built(build(&ptx_source(ptx))?, SourceKind::Ptx, None))
        }
        (KernelFormat::Auto, Some(ptx)) if nvidia => match build(&ptx_source(ptx)) {
            Ok(p) => Ok(built(p, SourceKind::Ptx, None)),
            Err(e) => {
                let first_line = e.to_string().lines().next().unwrap_or_default().to_string();
                let note = format!(
                    "{} did not take the artifact's PTX ({first_line}); built its {} instead",
                    device.name,
                    portable.kind.name()
                );
                Ok(built(build(&portable)?, portable.kind, Some(note)))
            }
        },
        (KernelFormat::Auto, Some(_)) => {
            let note = format!(
                "the artifact's PTX is for NVIDIA's OpenCL; {} ({}) builds its {}",
                device.name,
                device.platform_name,
                portable.kind.name()
            );
            Ok(built(build(&portable)?, portable.kind, Some(note)))
        }
        (KernelFormat::Auto, None) => Ok(built(build(&portable)?, portable.kind, None)),
    }
}

fn ptx_source(ptx: &[u8]) -> ProgramSource<'_> {
    ProgramSource {
        kind: SourceKind::Ptx,
        bytes: ptx,
        options: "",
    }
}
