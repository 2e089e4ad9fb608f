//! The tools' `--backend=opencl|cuda` flag: choosing the backend, refusing
//! OpenCL-only options on CUDA, and opening a session of either
//! ([`Opened`]), so that `tcc-run` and `tcc-benchmark` print the same
//! things whichever runs the kernels.

use std::fmt::Write as _;

use super::setup::{first_call, open_session, runtime, with_progress};
use crate::backend::{BACKEND_ENV, Backend, Calls};
use crate::cuda::{self, CudaDeviceInfo, CudaRuntime, CudaSession};
use crate::device::DEVICE_ENV;
use crate::drivers::vulkan::{VULKAN_DEVICE_ENV, VulkanRuntime, VulkanSession};
use crate::error::{Error, Result};
use crate::{Model, Runtime, Session};

/// `--backend`, else `TCC_BACKEND`, else `None` (the model decides).
pub fn backend_flag_or_env(flag: Option<&str>) -> Result<Option<Backend>> {
    match flag {
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|e| Error::InvalidInput(format!("--backend={text}: {e}"))),
        None => Backend::from_env(),
    }
}

/// The backend a tool runs `model` on: `--backend`, else `TCC_BACKEND`,
/// else CUDA for an artifact that carries PTX where NVIDIA's driver and a
/// device are there (said in one line on stderr: NVIDIA's CUDA driver runs
/// the same kernels faster than its OpenCL, and grants the dynamic shared
/// memory that some kernels need), else OpenCL. Without the driver, an
/// artifact whose PTX needs CUDA dynamic shared memory runs its OpenCL C
/// through OpenCL, also said.
pub fn choose_backend(tool: &str, flag: Option<&str>, model: &Model) -> Result<Backend> {
    if let Some(backend) = backend_flag_or_env(flag)? {
        return Ok(backend);
    }
    // Shader SPIR-V (`--target=vulkan`) runs on Vulkan only.
    if model.source_kind() == crate::program_cache::SourceKind::SpirV
        && crate::drivers::vulkan::is_shader_spirv(model)
    {
        eprintln!(
            "{tool}: using the Vulkan backend: the artifact's kernels are Shader SPIR-V (--target=vulkan)"
        );
        return Ok(Backend::Vulkan);
    }
    if model.artifact().ptx.is_none() || model.kernel_names().is_empty() {
        return Ok(Backend::OpenCl);
    }
    let needs = cuda::dynamic_local(model)?;
    let need = needs.iter().max_by_key(|d| d.bytes).map(|largest| {
        format!(
            "{}'s kernel {} takes {:.1} KiB of CUDA dynamic shared memory",
            model.path().display(),
            largest.kernel,
            largest.bytes as f64 / 1024.0
        )
    });
    match (cuda::list_cuda_devices(), need) {
        (Ok(devices), need) if !devices.is_empty() => {
            let why = need.map_or_else(
                || format!("{} carries PTX", model.path().display()),
                |need| format!("{need}, more than OpenCL gives"),
            );
            eprintln!(
                "{tool}: using the CUDA backend: {why} and NVIDIA's driver is here (--backend=opencl runs it through OpenCL instead)"
            );
            Ok(Backend::Cuda)
        }
        (unavailable, Some(need)) => {
            let why = match unavailable {
                Err(e) => e.to_string().lines().next().unwrap_or_default().to_string(),
                Ok(_) => "no CUDA device".to_string(),
            };
            eprintln!(
                "{tool}: {need}, but the CUDA backend is unavailable ({why}): running its OpenCL C through OpenCL"
            );
            Ok(Backend::OpenCl)
        }
        (_, None) => Ok(Backend::OpenCl),
    }
}

/// The CUDA device ordinal of a tool's `--device` (else `TCC_DEVICE`),
/// which on the CUDA backend must be a plain integer; 0 when neither is
/// given.
pub fn cuda_ordinal(flag: Option<&str>) -> Result<usize> {
    let (text, origin) = match flag {
        Some(text) => (text.to_string(), "--device".to_string()),
        None => match std::env::var(DEVICE_ENV) {
            Ok(v) if !v.trim().is_empty() => (v, DEVICE_ENV.to_string()),
            _ => return Ok(0),
        },
    };
    text.trim().parse::<usize>().map_err(|_| {
        Error::InvalidInput(format!(
            "{origin}={text}: the CUDA backend takes a CUDA device ordinal (0, 1, ...), not an OpenCL device name or list"
        ))
    })
}

/// The CUDA device ordinals of a tool's `--device` (else `TCC_DEVICE`):
/// one ordinal, a comma-separated list (`0,1`), or `all`; `[0]` when
/// neither is given. A device named twice is an error.
pub fn cuda_ordinals(flag: Option<&str>) -> Result<Vec<usize>> {
    let text = match flag {
        Some(text) => text.to_string(),
        None => match std::env::var(DEVICE_ENV) {
            Ok(v) if !v.trim().is_empty() => v,
            _ => return Ok(vec![0]),
        },
    };
    if text.trim() == "all" {
        return Ok((0..cuda::list_cuda_devices()?.len()).collect());
    }
    let mut out: Vec<usize> = Vec::new();
    for part in text.split(',') {
        let o = cuda_ordinal(Some(part))?;
        if out.contains(&o) {
            return Err(Error::InvalidInput(format!(
                "--device={text}: CUDA device {o} is named twice"
            )));
        }
        out.push(o);
    }
    Ok(out)
}

/// The device ordinals of a tool's `--device` on the CUDA or Vulkan
/// backend (the core's drivers by ordinal): one, a comma-separated list,
/// or `all`. Without the flag, CUDA reads `TCC_DEVICE` and Vulkan
/// `TCC_VULKAN_DEVICE`, else device 0.
pub fn device_ordinals(backend: Backend, flag: Option<&str>) -> Result<Vec<usize>> {
    if backend != Backend::Vulkan {
        return cuda_ordinals(flag);
    }
    let (text, origin) = match flag {
        Some(text) => (text.to_string(), "--device"),
        None => match std::env::var(VULKAN_DEVICE_ENV) {
            Ok(v) if !v.trim().is_empty() => (v, VULKAN_DEVICE_ENV),
            _ => return Ok(vec![0]),
        },
    };
    if text.trim() == "all" {
        return Ok((0..crate::drivers::vulkan::device_count()?).collect());
    }
    let mut out: Vec<usize> = Vec::new();
    for part in text.split(',') {
        let o = part.trim().parse::<usize>().map_err(|_| {
            Error::InvalidInput(format!(
                "{origin}={text}: the Vulkan backend takes Vulkan device indices (0, 1, ... or all), not an OpenCL device name"
            ))
        })?;
        if out.contains(&o) {
            return Err(Error::InvalidInput(format!(
                "{origin}={text}: Vulkan device {o} is named twice"
            )));
        }
        out.push(o);
    }
    Ok(out)
}

/// Refuses the first OpenCL-only option that was given (`(flag, given)`
/// pairs) when the backend is CUDA, rather than ignoring it.
pub fn refuse_opencl_options(options: &[(&str, bool)]) -> Result<()> {
    match options.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(Error::InvalidInput(format!(
            "{flag} is an OpenCL option; the CUDA and Vulkan backends (--backend=cuda|vulkan or {BACKEND_ENV}) take --in-flight, --split and several --device ordinals, not this"
        ))),
        None => Ok(()),
    }
}

/// Checks `--kernel-format` on the CUDA backend, which runs the PTX:
/// `opencl-c` is an error (an unknown value too).
pub fn check_cuda_kernel_format(flag: Option<&str>) -> Result<()> {
    match flag.map(str::parse::<crate::KernelFormat>).transpose()? {
        Some(crate::KernelFormat::OpenClC) => Err(Error::InvalidInput(
            "--kernel-format=opencl-c: the CUDA backend runs the artifact's PTX; use --backend=opencl for its OpenCL C".into(),
        )),
        _ => Ok(()),
    }
}

/// The CUDA runtime of a tool's `--device` (a CUDA ordinal).
pub fn cuda_runtime(device: Option<&str>, profiling: bool) -> Result<CudaRuntime> {
    CudaRuntime::new(cuda_ordinal(device)?, profiling)
}

/// Creates the CUDA session for `model` (the driver compiles its PTX,
/// which can take a while on a cold driver cache), with a progress line.
pub fn open_cuda_session(tool: &str, rt: &CudaRuntime, model: &Model) -> Result<CudaSession> {
    let message = format!(
        "loading {} kernels' PTX into the CUDA driver for {}",
        model.kernel_names().len(),
        rt.device().name
    );
    with_progress(
        tool,
        &message,
        " (ptxas; the driver caches the result)",
        "kernels ready",
        || rt.session(model),
    )
}

/// The `--list-devices` report of the CUDA backend.
pub fn format_cuda_device_list(devices: &[CudaDeviceInfo]) -> String {
    let mut out = String::new();
    for d in devices {
        let default = if d.ordinal == 0 { " (default)" } else { "" };
        let _ = writeln!(out, "CUDA device {}: {}{default}", d.ordinal, d.name);
        let rows = [
            ("driver CUDA", d.driver_version.clone()),
            (
                "compute",
                format!("sm_{}{}", d.compute_capability.0, d.compute_capability.1),
            ),
            ("multiprocessors", d.multiprocessors.to_string()),
            ("global memory", super::format_bytes(d.global_mem_bytes)),
            (
                "shared memory",
                format!(
                    "{} per block, {} opted in",
                    super::format_bytes(d.shared_mem_per_block),
                    super::format_bytes(d.shared_mem_per_block_optin)
                ),
            ),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "    {:<16} {v}", format!("{k}:"));
        }
    }
    out
}

/// A session of either backend with its runtime, opened for a tool.
pub enum Opened {
    OpenCl {
        rt: Runtime,
        session: Session,
    },
    Cuda {
        rt: CudaRuntime,
        session: CudaSession,
    },
    Vulkan {
        rt: VulkanRuntime,
        session: VulkanSession,
    },
}

/// A call's inputs kept in one session's device memory
/// ([`Opened::resident_inputs`]).
pub enum ResidentInputs {
    OpenCl(Vec<crate::DeviceTensor>),
    Cuda(Vec<crate::CudaTensor>),
}

impl Opened {
    /// Opens `model` on `backend`: the runtime of `device` (an OpenCL
    /// selector, or a CUDA ordinal) with `kernel_format` (OpenCL only)
    /// and `profiling`, and the session, with progress lines.
    pub fn open(
        tool: &str,
        backend: Backend,
        device: Option<&str>,
        kernel_format: Option<&str>,
        profiling: bool,
        model: &Model,
    ) -> Result<Opened> {
        match backend {
            Backend::OpenCl => {
                let rt = runtime(device, kernel_format, profiling)?;
                super::warn_target_mismatch(tool, model, rt.device());
                let session = open_session(tool, &rt, model)?;
                Ok(Opened::OpenCl { rt, session })
            }
            Backend::Cuda => {
                check_cuda_kernel_format(kernel_format)?;
                // Without PTX there is nothing to run: say so before
                // looking for the driver.
                cuda::check_runnable(model)?;
                let rt = cuda_runtime(device, profiling)?;
                let session = open_cuda_session(tool, &rt, model)?;
                Ok(Opened::Cuda { rt, session })
            }
            Backend::Vulkan => {
                if let Some(format) = kernel_format {
                    return Err(Error::InvalidInput(format!(
                        "--kernel-format={format}: the Vulkan backend runs the artifact's SPIR-V"
                    )));
                }
                let rt = match device {
                    None => VulkanRuntime::new()?,
                    Some(_) => match device_ordinals(Backend::Vulkan, device)?[..] {
                        [index] => VulkanRuntime::with_device(index)?,
                        _ => {
                            return Err(Error::InvalidInput(
                                "several Vulkan devices run through --split or --in-flight (tcc-benchmark) and --split (tcc-run)".into(),
                            ));
                        }
                    },
                }
                .with_profiling(profiling);
                let session = rt.session(model)?;
                Ok(Opened::Vulkan { rt, session })
            }
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Opened::OpenCl { .. } => Backend::OpenCl,
            Opened::Cuda { .. } => Backend::Cuda,
            Opened::Vulkan { .. } => Backend::Vulkan,
        }
    }

    /// Greedy generation with the cache in device memory
    /// ([`crate::decode::generate`]) on this session.
    pub fn generate(
        &mut self,
        function: &str,
        prompt: &crate::HostTensor,
        new_tokens: usize,
    ) -> Result<crate::decode::Generation> {
        match self {
            Opened::OpenCl { session, .. } => {
                crate::decode::generate(session, function, prompt, new_tokens)
            }
            Opened::Cuda { session, .. } => {
                crate::decode::generate(session, function, prompt, new_tokens)
            }
            Opened::Vulkan { session, .. } => {
                crate::decode::generate(session, function, prompt, new_tokens)
            }
        }
    }

    /// `inputs` uploaded once into this session's device memory, for
    /// [`Opened::run_resident`]: calls on tensors that stay on the device,
    /// as a serving loop that keeps its data there (ONNX Runtime's
    /// IOBinding) and as PyTorch's timings of a model on GPU tensors run.
    /// The Vulkan driver's calls take host tensors: an error there.
    pub fn resident_inputs(&mut self, inputs: &[crate::HostTensor]) -> Result<ResidentInputs> {
        match self {
            Opened::OpenCl { session, .. } => Ok(ResidentInputs::OpenCl(
                inputs
                    .iter()
                    .map(|t| session.upload(t))
                    .collect::<Result<_>>()?,
            )),
            Opened::Cuda { rt, .. } => Ok(ResidentInputs::Cuda(
                inputs
                    .iter()
                    .map(|t| crate::CudaTensor::upload(rt, t))
                    .collect::<Result<_>>()?,
            )),
            Opened::Vulkan { .. } => Err(Error::InvalidInput(
                "the Vulkan backend's calls take host tensors: device-resident inputs need --backend=opencl or cuda".into(),
            )),
        }
    }

    /// One call of `function` on `inputs` (from [`Opened::resident_inputs`]
    /// of this session), returned once it has finished; its outputs stay
    /// in device memory and go back to the session's memory when dropped
    /// (CUDA: replaying the function's graph from the second call on, the
    /// inputs and outputs copied device to device as for any device call).
    pub fn run_resident(&mut self, function: &str, inputs: &ResidentInputs) -> Result<()> {
        match (self, inputs) {
            (Opened::OpenCl { session, .. }, ResidentInputs::OpenCl(tensors)) => {
                let refs: Vec<&crate::DeviceTensor> = tensors.iter().collect();
                session.run_device(function, &refs).map(drop)
            }
            (Opened::Cuda { session, .. }, ResidentInputs::Cuda(tensors)) => {
                let io: Vec<_> = tensors.iter().map(crate::CudaTensor::as_input).collect();
                // SAFETY: every input is a live allocation of this
                // session's device (uploaded by `resident_inputs`, which
                // waited for the copy), borrowed for the whole call.
                unsafe { session.run_device(function, &io) }.map(drop)
            }
            _ => Err(Error::InvalidInput(
                "resident inputs of another backend's session".into(),
            )),
        }
    }

    /// The session, for calls one at a time.
    pub fn calls(&mut self) -> &mut dyn Calls {
        match self {
            Opened::OpenCl { session, .. } => session,
            Opened::Cuda { session, .. } => session,
            Opened::Vulkan { session, .. } => session,
        }
    }

    /// The first call: on OpenCL with a progress line while the driver
    /// compiles each kernel for its launch size ([`first_call`]).
    pub fn first_call<T>(&mut self, tool: &str, call: impl FnOnce(&mut dyn Calls) -> T) -> T {
        match self {
            Opened::OpenCl { session, .. } => first_call(tool, session, |s| call(s)),
            Opened::Cuda { session, .. } => call(session),
            Opened::Vulkan { session, .. } => call(session),
        }
    }

    /// The device name, its kind and its platform (`NVIDIA CUDA` and the
    /// driver's CUDA version on the CUDA backend).
    pub fn device_summary(&self) -> (String, String, String) {
        match self {
            Opened::OpenCl { rt, .. } => {
                let d = rt.device();
                (d.name.clone(), d.kind.to_string(), d.platform_name.clone())
            }
            Opened::Cuda { rt, .. } => {
                let d = rt.device();
                (
                    d.name.clone(),
                    "GPU".into(),
                    format!("CUDA driver {}", d.driver_version),
                )
            }
            Opened::Vulkan { rt, .. } => {
                let d = rt.info();
                (
                    d.name.clone(),
                    d.kind.clone(),
                    format!("Vulkan {}", d.driver),
                )
            }
        }
    }

    /// `--verbose`'s line: the device, the kernel form and where the
    /// program came from.
    pub fn verbose_line(&self, tool: &str) -> String {
        match self {
            Opened::OpenCl { rt, session } => format!(
                "{tool}: {} ({}); kernels: {}, {} in {:.2} s",
                rt.device().name,
                rt.device().platform_name,
                session.program_format().map_or("none", |f| f.name()),
                session
                    .program_origin()
                    .map_or("nothing to build".to_string(), |o| o.to_string()),
                session.program_seconds()
            ),
            Opened::Cuda { rt, session } => {
                let dynamic: Vec<String> = session
                    .dynamic_local()
                    .iter()
                    .map(|d| format!("{} {:.1} KiB", d.kernel, d.bytes as f64 / 1024.0))
                    .collect();
                format!(
                    "{tool}: {} (CUDA backend); kernels: {}, loaded by the CUDA driver in {:.2} s{}",
                    rt.device().summary(),
                    if session.model().kernel_names().is_empty() {
                        "none"
                    } else {
                        "PTX"
                    },
                    session.load_seconds(),
                    if dynamic.is_empty() {
                        String::new()
                    } else {
                        format!("; dynamic shared memory: {}", dynamic.join(", "))
                    }
                )
            }
            Opened::Vulkan { rt, session } => format!(
                "{tool}: {} (Vulkan backend); kernels: {} SPIR-V entry points",
                rt.info().summary(),
                session.model().kernel_names().len()
            ),
        }
    }

    /// Writes the OpenCL program cache entries deferred so far (nothing
    /// on CUDA, which has no program cache of its own).
    pub fn finish(&self, tool: &str) {
        if let Opened::OpenCl { rt, .. } = self {
            super::setup::finish_cache_writes(tool, rt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_devices_are_ordinals() {
        assert_eq!(cuda_ordinal(Some("1")).unwrap(), 1);
        assert_eq!(cuda_ordinal(Some(" 0 ")).unwrap(), 0);
        for bad in ["all", "0,1", "NVIDIA", "-1", ""] {
            let e = cuda_ordinal(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("takes a CUDA device ordinal"), "{bad}: {e}");
        }
    }

    #[test]
    fn opencl_options_are_refused_on_cuda() {
        refuse_opencl_options(&[("--cpu-partition", false)]).unwrap();
        let e = refuse_opencl_options(&[("--cpu-partition", false), ("--in-flight", true)])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--in-flight is an OpenCL option"), "{e}");
        check_cuda_kernel_format(None).unwrap();
        check_cuda_kernel_format(Some("ptx")).unwrap();
        assert!(check_cuda_kernel_format(Some("opencl-c")).is_err());
        assert!(check_cuda_kernel_format(Some("spirv")).is_err());
    }

    #[test]
    fn backend_flags() {
        assert_eq!(
            backend_flag_or_env(Some("cuda")).unwrap(),
            Some(Backend::Cuda)
        );
        assert_eq!(
            backend_flag_or_env(Some("opencl")).unwrap(),
            Some(Backend::OpenCl)
        );
        assert_eq!(
            backend_flag_or_env(Some("vulkan")).unwrap(),
            Some(Backend::Vulkan)
        );
        let e = backend_flag_or_env(Some("metal")).unwrap_err().to_string();
        assert_eq!(
            e,
            "--backend=metal: backend `metal`: expected opencl, cuda or vulkan"
        );
    }
}
