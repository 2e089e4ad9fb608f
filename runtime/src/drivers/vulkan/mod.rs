//! The Vulkan driver: runs the Shader-capability SPIR-V of
//! `tcc compile --target=vulkan` on any Vulkan 1.1 device with
//! `VK_KHR_push_descriptor` (Mesa's lavapipe on a CPU, NVIDIA's driver on
//! its GPUs), through the `ash` bindings.
//!
//! The loader (`libvulkan.so.1`) is opened at run time, so a machine
//! without it gets an error that says so, not a link failure. Its surface
//! is small, to sit beneath a driver-neutral core:
//!
//! - `device`: loader, instance, device and queue, buffers (device-local,
//!   or host-visible and mapped for staging);
//! - `executable`: the artifact's SPIR-V as one shader module, each entry
//!   point's `LocalSize`, a compute pipeline per kernel (storage buffers
//!   through push descriptors, scalars through push constants);
//! - `session`: [`VulkanSession`], a call as one command buffer with a
//!   fence, dispatch timestamps for the kernel profile, and the
//!   `tcc_runtime_api` callbacks the artifact's host code calls.

mod device;
mod executable;
mod session;

pub use device::VulkanDeviceInfo;
pub use session::{VULKAN_DEVICE_ENV, VulkanRuntime, VulkanSession};

/// How many Vulkan devices the loader reports (`VulkanRuntime::with_device`
/// takes 0 to this less one).
pub fn device_count() -> crate::Result<usize> {
    device::Device::count()
}

/// Whether `model`'s kernels are SPIR-V with the Shader capability (for
/// Vulkan) rather than Kernel (for OpenCL).
pub fn is_shader_spirv(model: &crate::Model) -> bool {
    spirv_is_shader(&model.artifact().source)
}

/// Whether the SPIR-V module `spirv` declares the Shader capability.
pub fn spirv_is_shader(spirv: &[u8]) -> bool {
    let words: Vec<u32> = spirv
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    words.first() == Some(&0x0723_0203)
        && executable::entry_points(&words).is_ok_and(|(shader, _)| shader)
}
