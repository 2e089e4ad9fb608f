//! The strategy of int8 contractions (`tcc-quantize-int8`'s int8 x int8
//! -> int32 convolutions and matmuls): the GEMM template's int8 form
//! (`tcc-kernels`' `gemm::int8`: `mma.sync` s8 in the PTX form, integer
//! sums in OpenCL C) on the GPU targets, with the fp32 table's tiles and a
//! k step of 32 (one `mma` k); loop nests on `pocl-cpu`, whose table picks
//! the register-blocked CPU form, which has no integer version.
//!
//! `TCC_INT8_GEMM=off` keeps every int8 contraction in loop nests (what
//! tcc did before the template took them: to time and test the template
//! against them); `TCC_INT8_GEMM=N` takes a k step of N (a multiple of
//! 32) instead.

use melior::ir::TypeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::ValueLike;

use crate::config::{GemmConfig, Target};

/// The environment variable that turns the int8 template off or sets its
/// k step.
pub const INT8_GEMM_ENV: &str = "TCC_INT8_GEMM";

/// The k step of int8 tiles: one `mma.sync.m16n8k32`.
const INT8_TILE_K: u32 = 32;

/// Whether `op` is an int8 contraction: every shaped operand holds i8
/// but the last (the accumulator), which holds i32.
pub(super) fn int8_operands(op: OperationRef) -> bool {
    let elements: Vec<_> = op
        .operands()
        .filter_map(|v| {
            let ty = v.r#type().to_raw();
            unsafe { mlir_sys::mlirTypeIsAShaped(ty) }
                .then(|| unsafe { mlir_sys::mlirShapedTypeGetElementType(ty) })
        })
        .collect();
    let Some((accumulator, inputs)) = elements.split_last() else {
        return false;
    };
    let is_int = |ty, width| unsafe {
        mlir_sys::mlirTypeIsAInteger(ty) && mlir_sys::mlirIntegerTypeGetWidth(ty) == width
    };
    !inputs.is_empty() && inputs.iter().all(|t| is_int(*t, 8)) && is_int(*accumulator, 32)
}

/// The int8 template's configuration from the fp32 one `config` (the
/// table's for the same shape) on `target`, or `None` for loop nests.
pub(super) fn int8_config(target: Target, config: Option<GemmConfig>) -> Option<GemmConfig> {
    let tile_k = match std::env::var(INT8_GEMM_ENV).as_deref() {
        Ok("off") => return None,
        Ok(value) => value
            .parse::<u32>()
            .ok()
            .filter(|k| k.is_multiple_of(INT8_TILE_K))
            .unwrap_or(INT8_TILE_K),
        Err(_) => INT8_TILE_K,
    };
    let config = config?;
    if target == Target::PoclCpu || config.is_register_blocked() || config.tile_n % 4 != 0 {
        return None;
    }
    Some(GemmConfig { tile_k, ..config })
}
