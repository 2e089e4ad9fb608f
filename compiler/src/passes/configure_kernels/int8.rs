//! The strategy of int8 contractions (`tcc-quantize-int8`'s int8 x int8
//! -> int32 convolutions and matmuls): the GEMM template's int8 form
//! (`tcc-kernels`' `gemm::int8`: `mma.sync` s8 in the PTX form, integer
//! sums in OpenCL C) on the GPU targets, with the fp32 table's tiles, a k
//! step of 64 (two `mma` k; 32 took 8% longer over ResNet-50's int8
//! GEMMs at batch 32 on the H100, docs/benchmarks.md), and 128x64 tiles
//! instead of 128x128 where N is at most 64 (ResNet-50's first stage: the
//! square tile would compute as many columns outside the product as in
//! it). On `pocl-cpu`, whose table picks the register-blocked CPU form
//! (which has no integer version), the generic target's tiles: over
//! ResNet-50 at batch 1 on PoCL they took 1.27x less kernel time than the
//! loop nests (docs/benchmarks.md).
//!
//! `tcc-configure-kernels{int8-gemm=off}` (`tcc compile` maps the
//! deprecated `TCC_INT8_GEMM` environment variable to it) keeps every int8
//! contraction in loop nests, int32 row sums (an int8 matrix-vector
//! product, which the row-reduction template takes otherwise) included
//! (what tcc did before the templates took them: to time and test the
//! templates against them); `int8-gemm=N` takes a k step of N (a multiple
//! of 32) instead.

use melior::ir::TypeLike;
use melior::ir::ValueLike;
use melior::ir::operation::{OperationLike, OperationRef};

use crate::config::{GemmConfig, Target};
use crate::ir::contraction::GemmShape;

/// Whether int8 contractions take the GEMM template
/// (`int8-gemm=on|off|N`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Int8Gemm {
    /// The template, with its k step of 64.
    #[default]
    On,
    /// Loop nests (int32 row sums too).
    Off,
    /// The template with a k step of this many (a multiple of 32).
    TileK(u32),
}

impl std::fmt::Display for Int8Gemm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Int8Gemm::On => f.write_str("on"),
            Int8Gemm::Off => f.write_str("off"),
            Int8Gemm::TileK(k) => write!(f, "{k}"),
        }
    }
}

impl std::str::FromStr for Int8Gemm {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "" | "on" => Ok(Int8Gemm::On),
            "off" => Ok(Int8Gemm::Off),
            other => match other.parse::<u32>() {
                Ok(k) if k > 0 && k.is_multiple_of(MMA_K) => Ok(Int8Gemm::TileK(k)),
                _ => Err(format!(
                    "int8-gemm must be on, off or a k step that is a multiple of {MMA_K}, not '{other}'"
                )),
            },
        }
    }
}

/// The k step of int8 tiles: two `mma.sync.m16n8k32`.
const INT8_TILE_K: u32 = 64;

/// What `int8-gemm=N` must be a multiple of: one `mma` k.
const MMA_K: u32 = 32;

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

/// The int8 template's configuration for `shape` from the fp32 one
/// `config` (the table's, or the tuning record's, for the same shape) on
/// `target`, or `None` for loop nests.
pub(super) fn int8_config(
    target: Target,
    choice: Int8Gemm,
    config: Option<GemmConfig>,
    shape: &GemmShape,
) -> Option<GemmConfig> {
    let tile_k = match choice {
        Int8Gemm::Off => return None,
        Int8Gemm::On => INT8_TILE_K,
        Int8Gemm::TileK(k) => k,
    };
    let config = match target {
        Target::PoclCpu => Target::Generic.gemm_config(shape.batch, shape.m, shape.n, shape.k),
        _ => config,
    }?;
    if config.is_register_blocked() || config.tile_n % 4 != 0 {
        return None;
    }
    let (tile_n, work_n) = if config.tile_m == 128 && config.tile_n == 128 && shape.n <= 64 {
        (64, config.work_n / 2)
    } else {
        (config.tile_n, config.work_n)
    };
    Some(GemmConfig {
        tile_k,
        tile_n,
        work_n,
        ..config
    })
}
