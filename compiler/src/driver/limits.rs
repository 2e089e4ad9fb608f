//! The byte limit on one tensor (`tcc compile --max-constant-bytes`),
//! checked on the parsed model before any pass runs: a constant or an
//! intermediate larger than the limit is a located error before anything
//! allocates it. A 150-byte file declaring a splat `tosa.const` of
//! `tensor<4294967296xi8>` used to grow past 8 GB while later phases
//! materialized the splat, and then abort on a C++ allocation failure
//! ("Rust cannot catch foreign exceptions"). The default limit is a
//! sixteenth of this machine's memory: compiling still takes several
//! times a constant's size (a 4 GiB splat had reached 7.7 GB of RSS when
//! it was stopped), so a quarter let a 4 GiB splat through on a 23 GB
//! machine and exhaust it.

use anyhow::{Result, bail};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{TypeLike, ValueLike};

/// A sixteenth of the physical memory (`sysconf`), or 1 GiB when unknown.
pub fn default_max_tensor_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        (pages as u64).saturating_mul(page as u64) / 16
    } else {
        1 << 30
    }
}

/// Bytes of one element of `element` as tcc stores it (`i1` in a byte).
fn element_bytes(element: melior::ir::Type) -> u64 {
    if element.is_f16() || element.is_bf16() {
        2
    } else if element.is_f64() || element.is_index() {
        8
    } else if let Ok(int) = melior::ir::r#type::IntegerType::try_from(element) {
        (int.width() as u64).div_ceil(8).max(1)
    } else {
        4
    }
}

/// The bytes of a statically shaped tensor type (saturating).
fn tensor_bytes(ty: melior::ir::Type) -> Option<u64> {
    let tensor = crate::ir::types::StaticTensor::of(ty)?;
    // Past the element limit: `tcc-check-supported` says so, in its words.
    crate::ir::types::checked_element_count(&tensor.shape)?;
    Some(
        tensor
            .shape
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(d.max(0) as u64))
            .saturating_mul(element_bytes(tensor.element)),
    )
}

/// Refuses the first op of `root` with a tensor result of more than
/// `limit` bytes, naming it and its location.
pub fn check_tensor_bytes(root: OperationRef, limit: u64) -> Result<()> {
    for op in crate::ir::util::collect_ops(root) {
        for value in op.results() {
            let ty = value.r#type();
            let Some(bytes) = tensor_bytes(ty) else {
                continue;
            };
            if bytes <= limit {
                continue;
            }
            let name = crate::ir::util::op_name(&op);
            let what = if name.ends_with(".const") || name.ends_with(".constant") {
                "constant"
            } else {
                "intermediate"
            };
            let at = crate::diagnostics::location_string(op.location().to_raw())
                .map(|l| format!("{l}: "))
                .unwrap_or_default();
            bail!(
                "{at}the {what} '{name}' has the type '{}' of {bytes} bytes, more than the limit of {limit} bytes per tensor (--max-constant-bytes; the default is a sixteenth of this machine's memory)",
                crate::diagnostics::truncate_for_message(&ty.to_string())
            );
        }
    }
    Ok(())
}
