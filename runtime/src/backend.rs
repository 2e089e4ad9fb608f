//! Which API runs an artifact's kernels, and what a session of either
//! offers a caller that runs calls one at a time.
//!
//! [`Backend::OpenCl`] is the default: a [`Session`] on any OpenCL device.
//! [`Backend::Cuda`] is a [`CudaSession`] through NVIDIA's CUDA driver,
//! needed by artifacts whose kernels take more local memory than NVIDIA's
//! OpenCL grants (`cuda` module). [`Calls`] is the part of a session the
//! tools and the in-turns measurement use, implemented by both.

use crate::cuda::CudaSession;
use crate::drivers::vulkan::VulkanSession;
use crate::error::{Error, Result};
use crate::session::KernelProfile;
use crate::tensor::HostTensor;
use crate::{Model, Session};

/// Environment variable choosing the backend (`opencl`, `cuda` or `vulkan`) when a
/// tool's `--backend` is not given.
pub const BACKEND_ENV: &str = "TCC_BACKEND";

/// The API that runs the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Backend {
    /// OpenCL (any device; the artifact's OpenCL C, SPIR-V or PTX).
    OpenCl,
    /// NVIDIA's CUDA driver (the artifact's PTX).
    Cuda,
    /// Vulkan (the Shader SPIR-V of `tcc compile --target=vulkan`).
    Vulkan,
}

impl std::str::FromStr for Backend {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "opencl" => Ok(Backend::OpenCl),
            "cuda" => Ok(Backend::Cuda),
            "vulkan" => Ok(Backend::Vulkan),
            other => Err(Error::InvalidInput(format!(
                "backend `{other}`: expected opencl, cuda or vulkan"
            ))),
        }
    }
}

impl Backend {
    /// `opencl`, `cuda` or `vulkan`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::OpenCl => "opencl",
            Backend::Cuda => "cuda",
            Backend::Vulkan => "vulkan",
        }
    }

    /// `OpenCL`, `CUDA` or `Vulkan`, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Backend::OpenCl => "OpenCL",
            Backend::Cuda => "CUDA",
            Backend::Vulkan => "Vulkan",
        }
    }

    /// `TCC_BACKEND`, when set and non-empty (an unknown value is an error).
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(BACKEND_ENV) {
            Ok(v) if !v.is_empty() => v
                .parse()
                .map(Some)
                .map_err(|e| Error::InvalidInput(format!("{BACKEND_ENV}: {e}"))),
            _ => Ok(None),
        }
    }

    /// The backend `model` asks for when none is given: Vulkan for Shader
    /// SPIR-V (`--target=vulkan`), CUDA when its PTX has kernels that need
    /// CUDA dynamic shared memory (the `// tcc-dynamic-local:` markers),
    /// else OpenCL.
    pub fn preferred_for(model: &Model) -> Result<Self> {
        if model.source_kind() == crate::program_cache::SourceKind::SpirV
            && crate::drivers::vulkan::is_shader_spirv(model)
        {
            return Ok(Backend::Vulkan);
        }
        Ok(if crate::cuda::dynamic_local(model)?.is_empty() {
            Backend::OpenCl
        } else {
            Backend::Cuda
        })
    }
}

/// Calls one at a time on a session of either backend, with the kernel
/// profile.
pub trait Calls {
    /// Runs `function` on host tensors; `sources[i]` says where input `i`
    /// came from, for error messages.
    fn run_with_sources(
        &mut self,
        function: &str,
        inputs: &[HostTensor],
        sources: &[&str],
    ) -> Result<Vec<HostTensor>>;

    /// Hands outputs of an earlier call back for later calls to write into.
    fn recycle(&mut self, outputs: Vec<HostTensor>);

    /// Per-kernel device time since the start or the last reset (empty
    /// without profiling).
    fn kernel_profile(&mut self) -> Result<Vec<KernelProfile>>;

    fn reset_profile(&mut self) -> Result<()>;

    /// Records a timeline of the next `max_calls` calls (profiling must
    /// be on; see `timeline`).
    fn record_timeline(&mut self, max_calls: usize) -> Result<()>;

    /// The timeline recorded so far; stops recording.
    fn take_timeline(&mut self) -> Option<crate::timeline::Timeline>;

    /// Waits for the programs specialized per call shape that earlier
    /// calls started building (OpenCL: `Session::wait_for_specializations`;
    /// nothing elsewhere).
    fn wait_for_specializations(&mut self) {}
}

impl Calls for Session {
    fn run_with_sources(
        &mut self,
        function: &str,
        inputs: &[HostTensor],
        sources: &[&str],
    ) -> Result<Vec<HostTensor>> {
        Session::run_with_sources(self, function, inputs, sources)
    }

    fn recycle(&mut self, outputs: Vec<HostTensor>) {
        Session::recycle(self, outputs)
    }

    fn kernel_profile(&mut self) -> Result<Vec<KernelProfile>> {
        Session::kernel_profile(self)
    }

    fn reset_profile(&mut self) -> Result<()> {
        Session::reset_profile(self)
    }

    fn record_timeline(&mut self, max_calls: usize) -> Result<()> {
        Session::record_timeline(self, max_calls)
    }

    fn take_timeline(&mut self) -> Option<crate::timeline::Timeline> {
        Session::take_timeline(self)
    }

    fn wait_for_specializations(&mut self) {
        Session::wait_for_specializations(self)
    }
}

impl Calls for CudaSession {
    fn run_with_sources(
        &mut self,
        function: &str,
        inputs: &[HostTensor],
        sources: &[&str],
    ) -> Result<Vec<HostTensor>> {
        CudaSession::run_with_sources(self, function, inputs, sources)
    }

    fn recycle(&mut self, outputs: Vec<HostTensor>) {
        CudaSession::recycle(self, outputs)
    }

    fn kernel_profile(&mut self) -> Result<Vec<KernelProfile>> {
        CudaSession::kernel_profile(self)
    }

    fn reset_profile(&mut self) -> Result<()> {
        CudaSession::reset_profile(self)
    }

    fn record_timeline(&mut self, max_calls: usize) -> Result<()> {
        CudaSession::record_timeline(self, max_calls)
    }

    fn take_timeline(&mut self) -> Option<crate::timeline::Timeline> {
        CudaSession::take_timeline(self)
    }
}

impl Calls for VulkanSession {
    fn run_with_sources(
        &mut self,
        function: &str,
        inputs: &[HostTensor],
        sources: &[&str],
    ) -> Result<Vec<HostTensor>> {
        VulkanSession::run_with_sources(self, function, inputs, sources)
    }

    /// Outputs are fresh host vectors on Vulkan: nothing to hand back.
    fn recycle(&mut self, _outputs: Vec<HostTensor>) {}

    fn kernel_profile(&mut self) -> Result<Vec<KernelProfile>> {
        VulkanSession::kernel_profile(self)
    }

    fn reset_profile(&mut self) -> Result<()> {
        VulkanSession::reset_profile(self)
    }

    fn record_timeline(&mut self, _max_calls: usize) -> Result<()> {
        Err(Error::Unsupported(
            "the Vulkan backend records no timeline (--timeline needs --backend=opencl or cuda)"
                .into(),
        ))
    }

    fn take_timeline(&mut self) -> Option<crate::timeline::Timeline> {
        None
    }
}
