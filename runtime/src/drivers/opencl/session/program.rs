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
/// else the OpenCL C. PTX that needs CUDA dynamic shared memory (its
/// `// tcc-dynamic-local:` markers) is never built here (see [`plan`]).
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
    let options = inner.build_options(&art.build_options);
    let portable = ProgramSource {
        kind: art.source_kind,
        bytes: &art.source,
        options: &options,
    };
    let build = |source: &ProgramSource| {
        inner
            .programs()
            .get_or_build(&inner.context, device, source, art.prepared.as_ref())
    };
    let built = |(program, origin): (Arc<Program>, ProgramOrigin), format, note| BuiltProgram {
        program,
        origin,
        format,
        note,
    };
    let nvidia = device.platform_name.contains("NVIDIA");
    let target = PlanInput {
        format: inner.kernel_format,
        ptx: art.ptx.as_deref(),
        kernels: &art.kernels,
        path: &art.path,
        nvidia,
        device_name: &device.name,
        platform_name: &device.platform_name,
        portable_name: portable.kind.name(),
    };
    let portable_build = |source: &ProgramSource| {
        check_fp64(device, art, source)?;
        build(source)
    };
    match plan(&target)? {
        Plan::Portable(note) => Ok(built(portable_build(&portable)?, portable.kind, note)),
        Plan::Ptx(ptx) => Ok(built(build(&ptx_source(ptx))?, SourceKind::Ptx, None)),
        Plan::PtxElsePortable(ptx) => match build(&ptx_source(ptx)) {
            Ok(p) => Ok(built(p, SourceKind::Ptx, None)),
            Err(e) => {
                let first_line = e.to_string().lines().next().unwrap_or_default().to_string();
                let note = format!(
                    "{} did not take the artifact's PTX ({first_line}); built its {} instead",
                    device.name,
                    portable.kind.name()
                );
                Ok(built(portable_build(&portable)?, portable.kind, Some(note)))
            }
        },
    }
}

/// An OpenCL C program with f64 kernels (it enables `cl_khr_fp64`) on a
/// device without that extension: a clear error instead of the device
/// compiler's, naming the way out (PTX computes in f64 on every NVIDIA GPU).
fn check_fp64(device: &crate::DeviceInfo, art: &Artifact, source: &ProgramSource) -> Result<()> {
    if device.fp64 || !needs_fp64(source) {
        return Ok(());
    }
    Err(Error::ArtifactLoad {
        path: art.path.clone(),
        reason: format!(
            "its kernels compute in float64, and {} ({}) has no cl_khr_fp64; run it on a device \
             with fp64, or import the ONNX model with `tcc import --demote-f64` (float32) and \
             compile that",
            device.name, device.platform_name
        ),
    })
}

/// Whether a program's OpenCL C source enables `cl_khr_fp64`.
fn needs_fp64(source: &ProgramSource) -> bool {
    source.kind == SourceKind::OpenClC
        && std::str::from_utf8(source.bytes)
            .is_ok_and(|text| text.contains("#pragma OPENCL EXTENSION cl_khr_fp64 : enable"))
}

/// What [`plan`] decides from.
struct PlanInput<'a> {
    format: KernelFormat,
    ptx: Option<&'a [u8]>,
    /// The kernels' launch records (their dynamic local memory).
    kernels: &'a [tcc_abi::LaunchRecord],
    path: &'a std::path::Path,
    /// The device is on NVIDIA's OpenCL platform.
    nvidia: bool,
    device_name: &'a str,
    platform_name: &'a str,
    /// The name of the portable form ("OpenCL C").
    portable_name: &'a str,
}

/// Which kernel form to build.
#[derive(Debug, PartialEq, Eq)]
enum Plan<'a> {
    /// The portable form (OpenCL C or SPIR-V), with a note on why the
    /// artifact's PTX is not used, when it has PTX.
    Portable(Option<String>),
    /// The PTX or an error.
    Ptx(&'a [u8]),
    /// The PTX, else the portable form with a note.
    PtxElsePortable(&'a [u8]),
}

/// The form [`build_program`] builds: the kernel format asked for, the
/// artifact's PTX and the device decide. PTX whose kernels' launch records
/// ask for dynamic local memory is for the CUDA backend only: OpenCL cannot grant more
/// than 48 KiB of local memory on NVIDIA, so `Auto` builds the portable
/// form (with a note) and `Ptx` is refused.
fn plan<'a>(input: &PlanInput<'a>) -> Result<Plan<'a>> {
    let cuda_only = match (input.format, input.ptx) {
        (KernelFormat::OpenClC, _) | (_, None) => None,
        (_, Some(_)) => cuda_only_reason(input.kernels),
    };
    Ok(match (input.format, input.ptx) {
        (KernelFormat::OpenClC, _) => Plan::Portable(None),
        (KernelFormat::Ptx, None) => {
            return Err(Error::Unsupported(format!(
                "PTX kernels were asked for ({KERNEL_FORMAT_ENV}=ptx or --kernel-format=ptx) but {} carries none; compile it with --target=nvidia or --ptx=on",
                input.path.display()
            )));
        }
        (KernelFormat::Ptx, Some(_)) if cuda_only.is_some() => {
            return Err(Error::Unsupported(format!(
                "{}: run with --backend=cuda for the PTX (or --kernel-format=opencl-c for its {})",
                cuda_only.unwrap_or_default(),
                input.portable_name
            )));
        }
        (KernelFormat::Ptx, Some(ptx)) => Plan::Ptx(ptx),
        (KernelFormat::Auto, Some(_)) if cuda_only.is_some() => Plan::Portable(Some(format!(
            "{}: built its {}; run with --backend=cuda for the PTX",
            cuda_only.unwrap_or_default(),
            input.portable_name
        ))),
        (KernelFormat::Auto, Some(ptx)) if input.nvidia => Plan::PtxElsePortable(ptx),
        (KernelFormat::Auto, Some(_)) => Plan::Portable(Some(format!(
            "the artifact's PTX is for NVIDIA's OpenCL; {} ({}) builds its {}",
            input.device_name, input.platform_name, input.portable_name
        ))),
        (KernelFormat::Auto, None) => Plan::Portable(None),
    })
}

/// Why the artifact's PTX cannot run on OpenCL, if a kernel's launch
/// record asks for dynamic local memory: "the artifact's PTX needs the
/// CUDA backend (kernel K takes N KiB of local memory; NVIDIA's OpenCL
/// gives 48 KiB)".
fn cuda_only_reason(kernels: &[tcc_abi::LaunchRecord]) -> Option<String> {
    let markers = crate::cuda::dynamic_local_of(kernels);
    let largest = markers.iter().max_by_key(|m| m.bytes)?;
    let others = match markers.len() {
        1 => String::new(),
        n => format!(", {} kernels in all", n),
    };
    Some(format!(
        "the artifact's PTX needs the CUDA backend (kernel {} takes {:.1} KiB of local memory{others}; NVIDIA's OpenCL gives 48 KiB)",
        largest.kernel,
        largest.bytes as f64 / 1024.0
    ))
}

fn ptx_source(ptx: &[u8]) -> ProgramSource<'_> {
    ProgramSource {
        kind: SourceKind::Ptx,
        bytes: ptx,
        options: "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &[u8] = b"//\n.version 8.0\n.visible .entry gemm_0()\n{ ret; }\n";

    /// gemm_0's launch record, asking for `bytes` of dynamic local memory.
    fn gemm(bytes: u32) -> Vec<tcc_abi::LaunchRecord> {
        vec![tcc_abi::LaunchRecord {
            name: "gemm_0".into(),
            workgroup_size: [256, 1, 1],
            dynamic_local_bytes: bytes,
            ..Default::default()
        }]
    }

    fn input<'a>(
        format: KernelFormat,
        ptx: Option<&'a [u8]>,
        nvidia: bool,
        kernels: &'a [tcc_abi::LaunchRecord],
    ) -> PlanInput<'a> {
        PlanInput {
            format,
            ptx,
            kernels,
            path: std::path::Path::new("m.so"),
            nvidia,
            device_name: "NVIDIA H100",
            platform_name: "NVIDIA CUDA",
            portable_name: "OpenCL C",
        }
    }

    #[test]
    fn auto_builds_the_opencl_c_of_ptx_that_needs_cuda() {
        let (marked, plain) = (gemm(197632), gemm(0));
        for nvidia in [true, false] {
            let Plan::Portable(Some(note)) =
                plan(&input(KernelFormat::Auto, Some(PTX), nvidia, &marked)).unwrap()
            else {
                panic!("expected the portable form with a note");
            };
            assert_eq!(
                note,
                "the artifact's PTX needs the CUDA backend (kernel gemm_0 takes 193.0 KiB of local memory; NVIDIA's OpenCL gives 48 KiB): built its OpenCL C; run with --backend=cuda for the PTX"
            );
        }
        // Without dynamic local memory nothing changes.
        assert_eq!(
            plan(&input(KernelFormat::Auto, Some(PTX), true, &plain)).unwrap(),
            Plan::PtxElsePortable(PTX)
        );
        assert_eq!(
            plan(&input(KernelFormat::Ptx, Some(PTX), false, &plain)).unwrap(),
            Plan::Ptx(PTX)
        );
        assert_eq!(
            plan(&input(KernelFormat::OpenClC, Some(PTX), true, &marked)).unwrap(),
            Plan::Portable(None)
        );
    }

    #[test]
    fn forced_ptx_that_needs_cuda_is_unsupported() {
        let marked = gemm(197632);
        let e = plan(&input(KernelFormat::Ptx, Some(PTX), true, &marked)).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
        let e = e.to_string();
        assert!(
            e.starts_with(
                "the artifact's PTX needs the CUDA backend (kernel gemm_0 takes 193.0 KiB"
            ) && e.contains("run with --backend=cuda for the PTX"),
            "{e}"
        );
    }
}
