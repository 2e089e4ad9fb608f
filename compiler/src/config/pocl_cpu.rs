//! Configuration for CPUs through PoCL: PoCL runs a work-group as a loop on
//! one core and vectorizes across work-items, so moderate groups amortize
//! scheduling without starving the other cores.

use super::KernelKind;

pub fn workgroup_size(kind: KernelKind) -> i64 {
    match kind {
        KernelKind::Elementwise => 256,
        KernelKind::Reduction | KernelKind::Matmul | KernelKind::Convolution => 64,
    }
}
