//! Configuration for any OpenCL 1.2 device: conservative work-group sizes
//! that every driver accepts (CL_DEVICE_MAX_WORK_GROUP_SIZE >= 256 on all
//! devices tcc has met).

use super::KernelKind;

pub fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise | KernelKind::Reduction => 128,
        KernelKind::Matmul | KernelKind::Convolution => 128,
    }
}
