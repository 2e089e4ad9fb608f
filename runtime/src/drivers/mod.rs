//! Drivers beneath the runtime core (`hal`), one folder each: `opencl`
//! (the OpenCL session: the artifact's OpenCL C, SPIR-V or PTX through
//! the ICD loader), `cuda` (NVIDIA's driver API, the artifact's PTX) and
//! `vulkan` (Shader SPIR-V through `ash`). Each offers a device, buffers,
//! an executable of the artifact's kernels, a queue or stream and events;
//! what all of them share (input checks, the callback table, handles,
//! arena sizing, profiles, calls in flight, several devices) is in `hal`.

pub mod cuda;
pub mod opencl;
pub mod vulkan;
