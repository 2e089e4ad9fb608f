//! The one place that derives a contraction's GEMM shape: `(batch, M, N,
//! K)` of a plain or batched matmul, or of a convolution run as an
//! implicit GEMM, from its operand types, on tensors or on buffers alike.

use melior::ir::ValueLike;
use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
pub use tcc_kernels::GemmShape;

use super::util::op_name;

/// The default (row-major, untransposed) indexing maps of the named
/// matmuls: any other form is no GEMM for the template.
const MATMUL_MAPS: &str = "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]";
const BATCH_MATMUL_MAPS: &str = "[affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]";

/// The shape of `op`'s operand `index`, a `?` taken as `extent`
/// (static shapes only without one).
fn operand_shape(op: OperationRef, index: usize, extent: Option<i64>) -> Option<Vec<i64>> {
    let value = op.operand(index).ok()?;
    let shape = super::types::ranked_shape(value.r#type())?;
    shape
        .iter()
        .enumerate()
        .map(|(axis, d)| match d {
            Some(d) => Some(*d),
            // A `?` that is a multiple of the dimension (a matmul's
            // `batch x tokens` rows) at its bound where the IR tells it.
            None => extent.map(|max| super::dynamic::max_extent(value, axis, max).unwrap_or(max)),
        })
        .collect()
}

/// The GEMM a contraction computes, if the GEMM template can run it: a
/// `linalg.matmul` or `linalg.batch_matmul` with the default indexing, or
/// the same with B in panels (`tcc-pack-weight-panels`), or
/// an NHWC/HWCF convolution (named, or the `tcc.conv` of
/// `tcc-fold-conv-inputs`) as an implicit GEMM with `M = N*OH*OW`,
/// `N = F` and `K = KH*KW*C`, or a grouped convolution
/// (`ir::grouped_conv`) as G such GEMMs (`batch = G`, `N = Fg`,
/// `K = KH*KW*Cg`). Shapes must be static.
pub fn gemm_shape(op: OperationRef) -> Option<GemmShape> {
    gemm_shape_at(op, None)
}

/// [`gemm_shape`] of a contraction whose operands may have a dynamic
/// dimension, each `?` taken as `extent` (the tile phase's choice for a
/// symbolic batch: `ir::dynamic::strategy_extent`); without `extent`,
/// static shapes only.
pub fn gemm_shape_at(op: OperationRef, extent: Option<i64>) -> Option<GemmShape> {
    // A grouped convolution (static shapes): one implicit GEMM per group,
    // the group its batch.
    if let Some(conv) = super::grouped_conv::of(op) {
        let [n, oh, ow, _] = conv.output;
        let [groups, kh, kw, cg, fg] = conv.filter;
        return Some(GemmShape {
            batch: groups,
            m: n * oh * ow,
            n: fg,
            k: kh * kw * cg,
        });
    }
    let name = op_name(&op);
    let (window, filter_index, output_index) = window_layout(op);
    if window == "conv_2d_nhwc_hwcf" {
        let output = operand_shape(op, output_index, extent)?;
        // Plain HWCF or in panels (`tcc-pack-weight-panels`).
        let [kh, kw, c, _] = super::filter_panels::hwcf_filter_shape(op, filter_index)?;
        if output.len() != 4 {
            return None;
        }
        return Some(GemmShape {
            batch: 1,
            m: output[0] * output[1] * output[2],
            n: output[3],
            k: kh * kw * c,
        });
    }
    let default_maps = match name.as_str() {
        "linalg.matmul" => MATMUL_MAPS,
        "linalg.batch_matmul" => BATCH_MATMUL_MAPS,
        // B packed in panels (`tcc-pack-weight-panels`): N is C's.
        "linalg.generic" if super::filter_panels::matmul_panel_width(op).is_some() => {
            let a = operand_shape(op, 0, extent)?;
            let c = operand_shape(op, 2, extent)?;
            let ra = a.len();
            return Some(GemmShape {
                batch: a[..ra - 2].iter().product(),
                m: a[ra - 2],
                n: *c.last()?,
                k: a[ra - 1],
            });
        }
        _ => return None,
    };
    if let Ok(maps) = op.attribute("indexing_maps") {
        let default = unsafe {
            mlir_sys::mlirAttributeParseGet(
                mlir_sys::mlirOperationGetContext(op.to_raw()),
                melior::StringRef::new(default_maps).to_raw(),
            )
        };
        if default.ptr.is_null() || !unsafe { mlir_sys::mlirAttributeEqual(default, maps.to_raw()) }
        {
            return None;
        }
    }
    let a = operand_shape(op, 0, extent)?;
    let b = operand_shape(op, 1, extent)?;
    let (ra, rb) = (a.len(), b.len());
    if ra < 2 || rb < 2 {
        return None;
    }
    Some(GemmShape {
        batch: a[..ra - 2].iter().product(),
        m: a[ra - 2],
        n: b[rb - 1],
        k: a[ra - 1],
    })
}

/// For a window op, named or rewritten: the name of the op it computes
/// (without `linalg.`) and the operand positions of its filter (or
/// window) and output. Named ops take the input first; a `tcc.conv` has
/// no input operand.
pub fn window_layout(op: OperationRef) -> (String, usize, usize) {
    if let Some(conv) = crate::ir::conv::of(&op) {
        return (conv.kind.name().to_string(), 0, 1);
    }
    let name = op_name(&op);
    (
        name.strip_prefix("linalg.").unwrap_or(&name).to_string(),
        1,
        2,
    )
}
