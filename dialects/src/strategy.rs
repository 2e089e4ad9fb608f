//! The typed kernel strategy (`td/TccAttrs.td`): how one kernel is
//! compiled, as one Rust enum. The per-target configuration
//! (`tcc-configure-kernels`) writes it once as a `tcc.strategy` attribute;
//! outlining copies it onto the `gpu.func`; loop lowering and every back
//! end decode it here, in one place, and `match` on it.

use melior::ir::Attribute;
use melior::ir::attribute::AttributeLike;
use mlir_sys::{MlirAttribute, MlirContext};
pub use tcc_kernels::{GemmConfig, GemmShape, WindowConfig};

pub use crate::target::Precision;

/// `TccKernelStrategy` of `cpp/TccCAPI.h`: every strategy's parameters,
/// flat.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RawStrategy {
    kind: i32,
    workgroup_size: i64,
    max_workgroups: i64,
    tile_m: i64,
    tile_n: i64,
    tile_k: i64,
    work_m: i64,
    work_n: i64,
    split_k: i64,
    k_lanes: i64,
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    columns: i64,
    vector: i64,
    work_items: i64,
    block_q: i64,
    block_k: i64,
    key_lanes: i64,
    precision: i32,
    rows: i64,
}

unsafe extern "C" {
    fn tccKernelStrategyGet(context: MlirContext, strategy: *const RawStrategy) -> MlirAttribute;
    fn tccKernelStrategyRead(attr: MlirAttribute, strategy: *mut RawStrategy) -> bool;
}

/// `TccStrategyKind` values.
const LOOPS: i32 = 1;
const GEMM: i32 = 2;
const ROW_REDUCE: i32 = 3;
const SOFTMAX: i32 = 4;
const LAYER_NORM: i32 = 5;
const WINDOW: i32 = 6;
const ATTENTION: i32 = 7;

/// How one kernel is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelStrategy {
    /// `#tcc.loops`: parallel loop nests, one point per work-item, in
    /// work-groups of `workgroup_size`; at most `max_workgroups` groups
    /// (grid-stride loops cover the rest) where given.
    Loops {
        workgroup_size: i64,
        max_workgroups: Option<i64>,
    },
    /// `#tcc.gemm`: the tiled GEMM template for a product of `shape`, in
    /// `precision` (tensor cores where not fp32).
    Gemm {
        config: GemmConfig,
        shape: GemmShape,
        precision: Precision,
    },
    /// `#tcc.row_reduce`: one work-group per output element.
    RowReduce { workgroup_size: i64 },
    /// `#tcc.softmax`: one work-group per row.
    Softmax { workgroup_size: i64 },
    /// `#tcc.layer_norm`: `workgroup_size` work-items per row, `rows`
    /// rows per work-group.
    LayerNorm { workgroup_size: i64, rows: i64 },
    /// `#tcc.window`: a depthwise convolution or pooling on the window
    /// template, `work_items` work-items each computing a block of
    /// outputs.
    Window {
        config: WindowConfig,
        work_items: i64,
    },
    /// `#tcc.attention`: the flash-attention template, one work-group of
    /// `block_q` work-items per `block_q` query rows of one batch and
    /// head, keys in tiles of `block_k`; with `key_lanes` above 1, the
    /// key-parallel form (`key_lanes` work-items per row, each over every
    /// `key_lanes`-th key, merged in the work-group).
    Attention {
        block_q: i64,
        block_k: i64,
        key_lanes: i64,
    },
}

impl KernelStrategy {
    /// Decodes a strategy attribute; `None` for any other attribute.
    pub fn from_attribute(attribute: Attribute) -> Option<Self> {
        let mut raw = RawStrategy::default();
        if !unsafe { tccKernelStrategyRead(attribute.to_raw(), &mut raw) } {
            return None;
        }
        let size = raw.workgroup_size;
        let u32_of = |v: i64| u32::try_from(v).ok();
        Some(match raw.kind {
            LOOPS => KernelStrategy::Loops {
                workgroup_size: size,
                max_workgroups: (raw.max_workgroups > 0).then_some(raw.max_workgroups),
            },
            GEMM => KernelStrategy::Gemm {
                config: GemmConfig {
                    tile_m: u32_of(raw.tile_m)?,
                    tile_n: u32_of(raw.tile_n)?,
                    tile_k: u32_of(raw.tile_k)?,
                    work_m: u32_of(raw.work_m)?,
                    work_n: u32_of(raw.work_n)?,
                    split_k: u32_of(raw.split_k)?,
                    k_lanes: u32_of(raw.k_lanes)?,
                },
                shape: GemmShape {
                    batch: raw.batch,
                    m: raw.m,
                    n: raw.n,
                    k: raw.k,
                },
                precision: Precision::from_code(raw.precision)?,
            },
            ROW_REDUCE => KernelStrategy::RowReduce {
                workgroup_size: size,
            },
            SOFTMAX => KernelStrategy::Softmax {
                workgroup_size: size,
            },
            LAYER_NORM => KernelStrategy::LayerNorm {
                workgroup_size: size,
                rows: raw.rows,
            },
            WINDOW => KernelStrategy::Window {
                config: WindowConfig {
                    workgroup_size: u32_of(size)?,
                    columns: u32_of(raw.columns)?,
                    vector: u32_of(raw.vector)?,
                },
                work_items: raw.work_items,
            },
            ATTENTION => KernelStrategy::Attention {
                block_q: raw.block_q,
                block_k: raw.block_k,
                key_lanes: raw.key_lanes,
            },
            _ => return None,
        })
    }

    /// The strategy as an attribute of `context`; `None` when its
    /// parameters fail the attribute's verifier (reported through the
    /// context's diagnostics).
    pub fn to_attribute<'c>(&self, context: &'c melior::Context) -> Option<Attribute<'c>> {
        let mut raw = RawStrategy::default();
        match *self {
            KernelStrategy::Loops {
                workgroup_size,
                max_workgroups,
            } => {
                raw.kind = LOOPS;
                raw.workgroup_size = workgroup_size;
                raw.max_workgroups = max_workgroups.unwrap_or(0);
            }
            KernelStrategy::Gemm {
                config,
                shape,
                precision,
            } => {
                raw.kind = GEMM;
                raw.precision = precision.code();
                raw.tile_m = config.tile_m.into();
                raw.tile_n = config.tile_n.into();
                raw.tile_k = config.tile_k.into();
                raw.work_m = config.work_m.into();
                raw.work_n = config.work_n.into();
                raw.split_k = config.split_k.into();
                raw.k_lanes = config.k_lanes.into();
                (raw.batch, raw.m, raw.n, raw.k) = (shape.batch, shape.m, shape.n, shape.k);
            }
            KernelStrategy::RowReduce { workgroup_size } => {
                raw.kind = ROW_REDUCE;
                raw.workgroup_size = workgroup_size;
            }
            KernelStrategy::Softmax { workgroup_size } => {
                raw.kind = SOFTMAX;
                raw.workgroup_size = workgroup_size;
            }
            KernelStrategy::LayerNorm {
                workgroup_size,
                rows,
            } => {
                raw.kind = LAYER_NORM;
                raw.workgroup_size = workgroup_size;
                raw.rows = rows;
            }
            KernelStrategy::Window { config, work_items } => {
                raw.kind = WINDOW;
                raw.workgroup_size = config.workgroup_size.into();
                raw.columns = config.columns.into();
                raw.vector = config.vector.into();
                raw.work_items = work_items;
            }
            KernelStrategy::Attention {
                block_q,
                block_k,
                key_lanes,
            } => {
                raw.kind = ATTENTION;
                (raw.block_q, raw.block_k, raw.key_lanes) = (block_q, block_k, key_lanes);
            }
        }
        let attribute = unsafe { tccKernelStrategyGet(context.to_raw(), &raw) };
        (!attribute.ptr.is_null()).then(|| unsafe { Attribute::from_raw(attribute) })
    }

    /// Whether the kernel is instantiated from an OpenCL C template
    /// (`tcc-kernels`) rather than lowered as loop nests.
    pub fn is_template(&self) -> bool {
        !matches!(self, KernelStrategy::Loops { .. })
    }

    /// Work-items per work-group (the GEMM's two-dimensional groups
    /// counted whole).
    pub fn workgroup_size(&self) -> i64 {
        match *self {
            KernelStrategy::Gemm { config, .. } => config.workgroup_size().into(),
            KernelStrategy::Window { config, .. } => config.workgroup_size.into(),
            KernelStrategy::Attention { block_q, .. } => block_q,
            KernelStrategy::Loops { workgroup_size, .. }
            | KernelStrategy::RowReduce { workgroup_size }
            | KernelStrategy::Softmax { workgroup_size } => workgroup_size,
            KernelStrategy::LayerNorm {
                workgroup_size,
                rows,
            } => workgroup_size * rows,
        }
    }

    /// The strategy's name, as its attribute's mnemonic.
    pub fn name(&self) -> &'static str {
        match self {
            KernelStrategy::Loops { .. } => "loops",
            KernelStrategy::Gemm { .. } => "gemm",
            KernelStrategy::RowReduce { .. } => "row_reduce",
            KernelStrategy::Softmax { .. } => "softmax",
            KernelStrategy::LayerNorm { .. } => "layer_norm",
            KernelStrategy::Window { .. } => "window",
            KernelStrategy::Attention { .. } => "attention",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_round_trip_through_their_attributes() {
        let context = crate::new_context();
        context.load_all_available_dialects();
        let strategies = [
            KernelStrategy::Loops {
                workgroup_size: 64,
                max_workgroups: Some(64),
            },
            KernelStrategy::Loops {
                workgroup_size: 256,
                max_workgroups: None,
            },
            KernelStrategy::Gemm {
                config: GemmConfig {
                    tile_m: 32,
                    tile_n: 32,
                    tile_k: 16,
                    work_m: 2,
                    work_n: 2,
                    split_k: 4,
                    k_lanes: 1,
                },
                shape: GemmShape {
                    batch: 1,
                    m: 49,
                    n: 512,
                    k: 4608,
                },
                precision: Precision::Fp32,
            },
            KernelStrategy::Gemm {
                config: GemmConfig {
                    tile_m: 128,
                    tile_n: 128,
                    tile_k: 32,
                    work_m: 8,
                    work_n: 8,
                    split_k: 1,
                    k_lanes: 1,
                },
                shape: GemmShape {
                    batch: 1,
                    m: 256,
                    n: 256,
                    k: 256,
                },
                precision: Precision::Bf16,
            },
            KernelStrategy::Gemm {
                config: GemmConfig::few_rows(1, 8, 2, 128),
                shape: GemmShape {
                    batch: 1,
                    m: 1,
                    n: 2304,
                    k: 768,
                },
                precision: Precision::Fp16,
            },
            KernelStrategy::RowReduce {
                workgroup_size: 128,
            },
            KernelStrategy::Softmax {
                workgroup_size: 256,
            },
            KernelStrategy::LayerNorm {
                workgroup_size: 1,
                rows: 1,
            },
            KernelStrategy::LayerNorm {
                workgroup_size: 8,
                rows: 32,
            },
            KernelStrategy::Window {
                config: WindowConfig {
                    workgroup_size: 128,
                    columns: 4,
                    vector: 4,
                },
                work_items: 3136,
            },
            KernelStrategy::Attention {
                block_q: 64,
                block_k: 32,
                key_lanes: 1,
            },
            KernelStrategy::Attention {
                block_q: 1,
                block_k: 64,
                key_lanes: 64,
            },
        ];
        for strategy in strategies {
            let attribute = strategy.to_attribute(&context).unwrap();
            assert_eq!(KernelStrategy::from_attribute(attribute), Some(strategy));
            let parsed = Attribute::parse(&context, &attribute.to_string()).unwrap();
            assert_eq!(parsed, attribute, "{attribute}");
        }
        let text = KernelStrategy::Softmax { workgroup_size: 8 }
            .to_attribute(&context)
            .unwrap()
            .to_string();
        assert_eq!(text, "#tcc.softmax<workgroup_size = 8>");
        // fp32, the default precision, is not printed.
        let gemm = Attribute::parse(
            &context,
            "#tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 64, k = 64>",
        )
        .unwrap();
        assert!(matches!(
            KernelStrategy::from_attribute(gemm),
            Some(KernelStrategy::Gemm {
                precision: Precision::Fp32,
                ..
            })
        ));
        assert!(!gemm.to_string().contains("precision"), "{gemm}");
        assert!(
            KernelStrategy::from_attribute(Attribute::parse(&context, "64 : i64").unwrap())
                .is_none()
        );
    }

    #[test]
    fn invalid_parameters_give_no_attribute() {
        let context = crate::new_context();
        context.load_all_available_dialects();
        let bad = KernelStrategy::RowReduce { workgroup_size: 0 };
        assert!(bad.to_attribute(&context).is_none());
        assert!(Attribute::parse(&context, "#tcc.loops<workgroup_size = -1>").is_none());
        assert!(
            Attribute::parse(
                &context,
                "#tcc.window<workgroup_size = 64, columns = 2, vector = 3, work_items = 8>"
            )
            .is_none()
        );
        assert!(Attribute::parse(&context, "#tcc.attention<block_q = 0, block_k = 32>").is_none());
        assert!(
            Attribute::parse(
                &context,
                "#tcc.gemm<tile_m = 32, tile_n = 32, tile_k = 16, work_m = 2, work_n = 2, split_k = 1, batch = 1, m = 64, n = 64, k = 64, precision = \"fp8\">"
            )
            .is_none()
        );
    }
}
