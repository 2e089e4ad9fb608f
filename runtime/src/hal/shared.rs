//! What the drivers' sessions share below the traits: the launch
//! callback's kernel-index check and the kernel profile table (per kernel:
//! launches and device time since the start or the last reset), so that
//! OpenCL's and CUDA's sessions check and report the same way.

use crate::KernelProfile;
use crate::error::{Error, Result};

/// Kernel `kernel` of the artifact's `kernels`, or the error every driver
/// gives for an index the artifact has no kernel at.
pub(crate) fn kernel_at<T>(kernels: &[T], kernel: u32) -> Result<&T> {
    kernels.get(kernel as usize).ok_or_else(|| {
        Error::InvalidInput(format!(
            "kernel index {kernel} out of range (the artifact has {} kernels)",
            kernels.len()
        ))
    })
}

/// An empty profile table, one row per kernel name in the artifact's order.
pub(crate) fn profile_table(names: &[String]) -> Vec<KernelProfile> {
    names
        .iter()
        .map(|n| KernelProfile {
            name: n.clone(),
            ..Default::default()
        })
        .collect()
}

/// The kernels of `table` launched at least once.
pub(crate) fn launched(table: &[KernelProfile]) -> Vec<KernelProfile> {
    table.iter().filter(|p| p.calls > 0).cloned().collect()
}

/// Starts `table` again from zero.
pub(crate) fn reset(table: &mut [KernelProfile]) {
    for p in table {
        p.calls = 0;
        p.total_ns = 0;
    }
}
