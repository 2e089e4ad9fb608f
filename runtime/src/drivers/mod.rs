//! Drivers beneath the runtime's sessions, one folder each. Vulkan is the
//! first to live here (`vulkan`); it keeps a small surface (device,
//! buffer, compute pipeline from SPIR-V, dispatch, fences and timestamps)
//! so that a driver-neutral core can sit on top of it.

pub mod vulkan;
