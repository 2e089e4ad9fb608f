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

/// The artifact's kernels, in its order, from `programs` (each kernel in
/// the first program that defines it).
pub(super) fn kernel_slots(programs: &[Arc<Program>], art: &Artifact) -> Result<Vec<KernelSlot>> {
    let defined: Vec<Vec<String>> = programs
        .iter()
        .map(|program| {
            program
                .get_kernel_names()
                .map(|names| names.split(';').map(str::to_string).collect())
                .unwrap_or_default()
        })
        .collect();
    art.kernel_names
        .iter()
        .map(|name| {
            let program = defined
                .iter()
                .position(|names| names.iter().any(|n| n == name))
                .map_or(&programs[0], |index| &programs[index]);
            let kernel = Kernel::create(program, name).map_err(|e| Error::MalformedArtifact {
                path: art.path.clone(),
                reason: format!(
                    "kernel `{name}` is not in the kernel program ({e}); the program defines: {}",
                    defined.concat().join(";")
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

/// A built kernel program (one, or one per PTX module) and how it was
/// chosen.
pub(super) struct BuiltProgram {
    pub(super) programs: Vec<Arc<Program>>,
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
    let build = |sources: &[ProgramSource]| {
        let built = inner
            .programs()
            .get_or_build_all(&inner.context, device, sources)?;
        Ok::<_, Error>(combine(built))
    };
    let built =
        |(programs, origin): (Vec<Arc<Program>>, ProgramOrigin), format, note| BuiltProgram {
            programs,
            origin,
            format,
            note,
        };
    let portable = [portable];
    let nvidia = device.platform_name.contains("NVIDIA");
    match (inner.kernel_format, art.ptx.as_deref()) {
        (KernelFormat::OpenClC, _) => Ok(built(build(&portable)?, portable[0].kind, None)),
        (KernelFormat::Ptx, None) => Err(Error::Unsupported(format!(
            "PTX kernels were asked for ({KERNEL_FORMAT_ENV}=ptx or --kernel-format=ptx) but {} carries none; compile it with --target=nvidia or --ptx=on",
            art.path.display()
        ))),
        (KernelFormat::Ptx, Some(ptx)) => {
            Ok(built(build(&ptx_sources(ptx))?, SourceKind::Ptx, None))
        }
        (KernelFormat::Auto, Some(ptx)) if nvidia => match build(&ptx_sources(ptx)) {
            Ok(p) => Ok(built(p, SourceKind::Ptx, None)),
            Err(e) => {
                let first_line = e.to_string().lines().next().unwrap_or_default().to_string();
                let note = format!(
                    "{} did not take the artifact's PTX ({first_line}); built its {} instead",
                    device.name,
                    portable[0].kind.name()
                );
                Ok(built(build(&portable)?, portable[0].kind, Some(note)))
            }
        },
        (KernelFormat::Auto, Some(_)) => {
            let note = format!(
                "the artifact's PTX is for NVIDIA's OpenCL; {} ({}) builds its {}",
                device.name,
                device.platform_name,
                portable[0].kind.name()
            );
            Ok(built(build(&portable)?, portable[0].kind, Some(note)))
        }
        (KernelFormat::Auto, None) => Ok(built(build(&portable)?, portable[0].kind, None)),
    }
}

/// The programs and where they came from as one origin: built from
/// source if any was, else loaded from disk if any was, else from memory.
fn combine(built: Vec<(Arc<Program>, ProgramOrigin)>) -> (Vec<Arc<Program>>, ProgramOrigin) {
    let rank = |origin: &ProgramOrigin| match origin {
        ProgramOrigin::SourceBuild => 2,
        ProgramOrigin::DiskHit => 1,
        ProgramOrigin::MemoryHit => 0,
    };
    let origin = built
        .iter()
        .map(|(_, origin)| *origin)
        .max_by_key(rank)
        .unwrap_or(ProgramOrigin::MemoryHit);
    (
        built.into_iter().map(|(program, _)| program).collect(),
        origin,
    )
}

/// The artifact's PTX as one program source per module (the text's
/// modules are separated by [`tcc_abi::PTX_MODULE_SEPARATOR`] lines).
fn ptx_sources(ptx: &[u8]) -> Vec<ProgramSource<'_>> {
    split_modules(ptx)
        .into_iter()
        .map(|bytes| ProgramSource {
            kind: SourceKind::Ptx,
            bytes,
            options: "",
        })
        .collect()
}

/// Splits PTX text at its module separator lines (which belong to no
/// module); a text without one is one module.
fn split_modules(ptx: &[u8]) -> Vec<&[u8]> {
    let separator = tcc_abi::PTX_MODULE_SEPARATOR.as_bytes();
    let mut modules = Vec::new();
    let mut start = 0;
    let mut line_start = 0;
    while line_start < ptx.len() {
        let line_end = ptx[line_start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(ptx.len(), |i| line_start + i);
        let line = &ptx[line_start..line_end];
        let next = (line_end + 1).min(ptx.len());
        if line.trim_ascii_end() == separator {
            modules.push(&ptx[start..line_start]);
            start = next;
        }
        line_start = next;
    }
    modules.push(&ptx[start..]);
    modules
}

#[cfg(test)]
mod tests {
    use super::split_modules;

    #[test]
    fn ptx_text_splits_at_separator_lines_only() {
        let one = b".version 8.0\n.entry a() { ret; }\n";
        assert_eq!(split_modules(one), vec![&one[..]]);
        let text = b".version 8.0\n.entry a() {}\n//@tcc-ptx-module\n.version 8.0\n.entry b() {}\n//@tcc-ptx-module\r\n.version 8.0\n// //@tcc-ptx-module in a comment\n";
        let modules = split_modules(text);
        assert_eq!(modules.len(), 3);
        assert_eq!(modules[0], b".version 8.0\n.entry a() {}\n");
        assert_eq!(modules[1], b".version 8.0\n.entry b() {}\n");
        assert_eq!(
            modules[2],
            b".version 8.0\n// //@tcc-ptx-module in a comment\n"
        );
    }
}
