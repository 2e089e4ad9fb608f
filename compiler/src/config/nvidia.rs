//! Configuration for NVIDIA GPUs (measured on an H100 with NVIDIA's OpenCL):
//! 256 work-items per group keeps enough warps resident per SM for
//! bandwidth-bound kernels.

use super::KernelKind;

pub fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise => 256,
        KernelKind::Reduction => 256,
        KernelKind::Matmul | KernelKind::Convolution => 256,
    }
}
