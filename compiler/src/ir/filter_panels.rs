//! A convolution filter stored in panels of output channels: the layout
//! `tcc-pack-weight-panels` gives a constant HWCF filter so that the
//! register-blocked GEMM reads it in order.
//!
//! A 2-D convolution `tcc.conv` (`tcc.conv<conv_2d_nhwc_hwcf, ...>`, loops
//! `(n, oh, ow, f, kh, kw, c)`) reads its `KH x KW x C x F` filter through
//! `(d4, d5, d6, d3)`: the GEMM's B is `K x N` row-major, rows of F. In
//! panels of P channels the filter is a `F/P x KH x KW x C x P` tensor
//! read through `(d3 floordiv P, d4, d5, d6, d3 mod P)`: P consecutive
//! output channels are contiguous, and consecutive k are P floats apart
//! (B's `[N/P][K][P]`). F need not be a multiple of P: the last panel is
//! padded with zero channels, which the GEMM computes and never stores.
//! Everything that derives a convolution's GEMM shape or filter geometry
//! reads it through [`hwcf_filter_shape`], so the packed form is a layout,
//! not a different op.

use melior::ir::ValueLike;
use melior::ir::attribute::ArrayAttribute;
use melior::ir::operation::{OperationLike, OperationRef};

use super::types::static_shape;

/// The loops of a 2-D convolution generic (`n, oh, ow, f, kh, kw, c`).
const CONV_LOOPS: &str = "(d0, d1, d2, d3, d4, d5, d6)";

/// The filter's indexing map in panels of `panel` output channels.
pub fn panel_map_text(panel: i64) -> String {
    format!("affine_map<{CONV_LOOPS} -> (d3 floordiv {panel}, d4, d5, d6, d3 mod {panel})>")
}

/// The filter's plain HWCF indexing map.
pub const HWCF_MAP_TEXT: &str = "affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>";

/// The indexing map attribute of `op`'s operand `index`, as text.
pub fn operand_map_text(op: OperationRef, index: usize) -> Option<String> {
    let maps = ArrayAttribute::try_from(op.attribute("indexing_maps").ok()?).ok()?;
    Some(maps.element(index).ok()?.to_string())
}

/// The panel width of `op`'s filter (operand `filter_index`) if it is
/// stored in panels: a 5-D `F/P x KH x KW x C x P` operand read through
/// [`panel_map_text`]`(P)`.
pub fn panel_width(op: OperationRef, filter_index: usize) -> Option<i64> {
    let shape = static_shape(op.operand(filter_index).ok()?.r#type())?;
    let [_, _, _, _, panel] = shape.as_slice() else {
        return None;
    };
    (operand_map_text(op, filter_index)? == panel_map_text(*panel)).then_some(*panel)
}

/// The logical `[KH, KW, C, F]` shape of a convolution's filter (operand
/// `filter_index`), stored plainly or in panels (F then rounded up to
/// whole panels: the output's channels are the real count); `None` when
/// it is neither or not static.
pub fn hwcf_filter_shape(op: OperationRef, filter_index: usize) -> Option<[i64; 4]> {
    let shape = static_shape(op.operand(filter_index).ok()?.r#type())?;
    match shape.as_slice() {
        [kh, kw, c, f] => Some([*kh, *kw, *c, *f]),
        [panels, kh, kw, c, panel] => {
            panel_width(op, filter_index).map(|_| [*kh, *kw, *c, panels * panel])
        }
        _ => None,
    }
}

/// The loops of a matmul (`i, j, k`) or batched matmul (`b, i, j, k`).
fn matmul_loops(batched: bool) -> &'static str {
    if batched {
        "(d0, d1, d2, d3)"
    } else {
        "(d0, d1, d2)"
    }
}

/// The indexing maps of a matmul generic whose B (a constant `K x N`,
/// batch 1 when batched) is stored in panels of `panel` columns: a
/// `[1 x] N/P x K x P` tensor read through `(j floordiv P, k, j mod P)`,
/// A and C as the named op reads them. `tcc-pack-weight-panels` gives a
/// `linalg.matmul` or `linalg.batch_matmul` with a constant B this form.
pub fn matmul_panel_maps_text(batched: bool, panel: i64) -> [String; 3] {
    let loops = matmul_loops(batched);
    if batched {
        [
            format!("affine_map<{loops} -> (d0, d1, d3)>"),
            format!("affine_map<{loops} -> (d0, d2 floordiv {panel}, d3, d2 mod {panel})>"),
            format!("affine_map<{loops} -> (d0, d1, d2)>"),
        ]
    } else {
        [
            format!("affine_map<{loops} -> (d0, d2)>"),
            format!("affine_map<{loops} -> (d1 floordiv {panel}, d2, d1 mod {panel})>"),
            format!("affine_map<{loops} -> (d0, d1)>"),
        ]
    }
}

/// The panel width of a matmul generic reading its B in panels (the maps
/// of [`matmul_panel_maps_text`], operands A, B, C), or `None` for any
/// other op.
pub fn matmul_panel_width(op: OperationRef) -> Option<i64> {
    if crate::ir::util::op_name(&op) != "linalg.generic" || op.operand_count() != 3 {
        return None;
    }
    let b_shape = static_shape(op.operand(1).ok()?.r#type())?;
    let batched = match b_shape.len() {
        4 => true,
        3 => false,
        _ => return None,
    };
    let panel = *b_shape.last()?;
    let maps = matmul_panel_maps_text(batched, panel);
    (0..3)
        .all(|index| operand_map_text(op, index).as_deref() == Some(maps[index].as_str()))
        .then_some(panel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panel_map_reads_channel_panels() {
        assert_eq!(
            panel_map_text(16),
            "affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3 floordiv 16, d4, d5, d6, d3 mod 16)>"
        );
    }
}
