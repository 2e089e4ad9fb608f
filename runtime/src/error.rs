//! The runtime's error type. Every failure a user can cause (bad device
//! selector, wrong input, malformed artifact, kernel build failure, missing
//! OpenCL driver) is a variant with a message that says what went wrong and,
//! where there is one, what to do about it.

use std::path::PathBuf;

use opencl3::error_codes::ClError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No OpenCL platform (ICD) is installed or loadable.
    #[error(
        "no OpenCL platform found ({0}); install an OpenCL driver, e.g. the CPU driver PoCL: \
         `apt-get install pocl-opencl-icd ocl-icd-libopencl1`"
    )]
    NoPlatform(String),

    /// The device selector matches no device.
    #[error("no OpenCL device matches {selector}; available devices:\n{available}")]
    NoSuchDevice { selector: String, available: String },

    /// An OpenCL call failed.
    #[error("{what} failed: {code} ({})", code.0)]
    OpenCl { what: String, code: ClError },

    /// The device could not provide memory.
    #[error("out of device memory: {0}")]
    OutOfDeviceMemory(String),

    /// `model.so` could not be opened or does not export `tcc_artifact_v1`.
    #[error("cannot load artifact {}: {reason}", path.display())]
    ArtifactLoad { path: PathBuf, reason: String },

    /// The artifact was built for another ABI version.
    #[error(
        "artifact {} uses tcc ABI version {found}, this runtime supports versions {}..={expected}: \
         rebuild the model with this tcc (`tcc compile`, tcc {})",
        path.display(),
        crate::abi::TCC_ABI_VERSION_MIN,
        env!("CARGO_PKG_VERSION")
    )]
    AbiVersion {
        path: PathBuf,
        found: u32,
        expected: u32,
    },

    /// The artifact's self-description is inconsistent.
    #[error("malformed artifact {}: {reason}", path.display())]
    MalformedArtifact { path: PathBuf, reason: String },

    /// The driver rejected the kernel program; `log` is its build log and
    /// `kernels` the kernels its errors point into (from the source lines
    /// the log names, where it names them).
    #[error(
        "kernel program failed to build for {device}: {code}{}\nbuild log:\n{log}",
        failing_kernels(kernels)
    )]
    Build {
        device: String,
        code: String,
        kernels: Vec<String>,
        log: String,
    },

    /// The artifact's kernel format cannot run on the selected device.
    #[error("{0}")]
    Unsupported(String),

    /// A runtime call made by the artifact's host code was wrong or failed,
    /// or the entry reported failure on its own.
    #[error("{0}")]
    ArtifactCall(String),

    /// No function of that name in the model.
    #[error("no function @{name} in {model}; available functions: {available}")]
    NoSuchFunction {
        name: String,
        model: String,
        available: String,
    },

    /// Inputs do not match the function's signature, or a tensor literal or
    /// type string is malformed.
    #[error("{0}")]
    InvalidInput(String),

    /// The artifact's host code reported a failure, or a runtime call it
    /// made failed.
    #[error("@{function} failed: {message}")]
    Execution { function: String, message: String },

    /// The CUDA backend cannot start: NVIDIA's driver library is missing,
    /// lacks a symbol, or finds no CUDA device.
    #[error("the CUDA backend needs NVIDIA's driver (libcuda.so.1) and a CUDA device: {0}")]
    CudaUnavailable(String),

    /// A CUDA driver call failed: `name` is the driver's error name
    /// (`CUDA_ERROR_INVALID_VALUE`), `description` its explanation.
    #[error("{what} failed: {name} ({code}): {description}")]
    Cuda {
        what: String,
        code: i32,
        name: String,
        description: String,
    },

    /// The Vulkan backend cannot start: no loader, no device, or no device
    /// with what it needs.
    #[error("the Vulkan backend needs a Vulkan driver and device: {0}")]
    VulkanUnavailable(String),

    /// A Vulkan call failed or the driver refused what it was given.
    #[error("Vulkan: {what} failed: {code}")]
    Vulkan { what: String, code: String },

    /// Reading or writing a `.npy` file failed.
    #[error("{}: {reason}", path.display())]
    Npy { path: PathBuf, reason: String },
}

impl Error {
    /// An OpenCL failure in `what` (e.g. "clCreateBuffer").
    /// Allocation and resource failures become `OutOfDeviceMemory`.
    pub fn cl(what: impl Into<String>, code: ClError) -> Self {
        use opencl3::error_codes::{
            CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY, CL_OUT_OF_RESOURCES,
        };
        let what = what.into();
        match code.0 {
            CL_MEM_OBJECT_ALLOCATION_FAILURE | CL_OUT_OF_RESOURCES | CL_OUT_OF_HOST_MEMORY => {
                Error::OutOfDeviceMemory(format!(
                    "{what} failed with {code} ({}): the device ran out of memory or other resources",
                    code.0
                ))
            }
            _ => Error::OpenCl { what, code },
        }
    }
}

/// `result.cl("clFinish")?` attaches the failing call's name to an OpenCL error.
pub(crate) trait ClResultExt<T> {
    fn cl(self, what: &str) -> Result<T>;
}

impl<T> ClResultExt<T> for std::result::Result<T, ClError> {
    fn cl(self, what: &str) -> Result<T> {
        self.map_err(|code| Error::cl(what, code))
    }
}

/// ` (errors in kernel a, b)`, or nothing when no kernel is known.
fn failing_kernels(kernels: &[String]) -> String {
    match kernels {
        [] => String::new(),
        [one] => format!(" (errors in kernel {one})"),
        many => format!(" (errors in kernels {})", many.join(", ")),
    }
}

/// The message a caught panic carried (`panic!("...")`), or "unknown panic".
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
