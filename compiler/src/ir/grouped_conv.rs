//! The grouped convolution (`1 < groups < channels`) as one
//! `linalg.generic`, the form `tcc-merge-grouped-convs` gives a channel
//! concat of per-group convolutions: loops `(n, oh, ow, g, f | kh, kw,
//! c)` over an NHWC input of `G * Cg` channels, a `[G, KH, KW, Cg, Fg]`
//! filter and an NHWC output of `G * Fg` channels,
//!
//! ```text
//! out[n, oh, ow, g * Fg + f] += in[n, oh * sh + kh * dh, ow * sw + kw * dw, g * Cg + c]
//!                              * w[g, kh, kw, c, f]
//! ```
//!
//! or, where a channel shuffle of the same groups follows (ShuffleNet's:
//! `[.., G, Fg] -> [.., Fg, G]`), with that shuffle as its output order,
//! `out[n, oh, ow, f * G + g]` (the shuffle's copy kernel gone), over
//! loops `(n, oh, ow, f, g | kh, kw, c)`
//!
//! (linalg has no named op of this layout: `conv_2d_nhwgc_gfhwc` wants
//! the group as its own dimension of input and output, and its filter
//! puts F before the window, which the GEMM template would read
//! transposed). For each group it is an implicit GEMM of `M = N*OH*OW`,
//! `N = Fg`, `K = KH*KW*Cg`, so the template runs it with the group as its
//! batch. The op carries `tcc.grouped_conv = array<i64: G, sh, sw, dh,
//! dw, shuffled>` (`shuffled` 1 for the second output order, else 0);
//! [`of`] recognizes it only where its maps, iterators and body are
//! exactly that, so a generic that merely carries the attribute stays a
//! loop nest (correct everywhere, only slower).

use melior::Context;
use melior::ir::attribute::DenseI64ArrayAttribute;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{AffineMap, Attribute, BlockLike, RegionLike, TypeLike, ValueLike};

use super::affine::{IteratorType, indexing_maps, iterator_types};
use super::util::op_name;

/// The discardable attribute that marks the op (see the module comment).
pub const ATTRIBUTE: &str = "tcc.grouped_conv";

/// A grouped convolution's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupedConv {
    pub groups: i64,
    pub strides: [i64; 2],
    pub dilations: [i64; 2],
    /// `[G, KH, KW, Cg, Fg]`.
    pub filter: [i64; 5],
    /// `[N, OH, OW, G * Fg]`.
    pub output: [i64; 4],
    /// Output channel `f * G + g` (a channel shuffle folded in) instead
    /// of `g * Fg + f`.
    pub shuffled: bool,
}

impl GroupedConv {
    /// Input channels per group.
    pub fn group_channels(&self) -> i64 {
        self.filter[3]
    }

    /// Output channels per group.
    pub fn group_features(&self) -> i64 {
        self.filter[4]
    }

    /// The marking attribute's value.
    pub fn attribute<'c>(&self, context: &'c Context) -> Attribute<'c> {
        let [sh, sw] = self.strides;
        let [dh, dw] = self.dilations;
        DenseI64ArrayAttribute::new(
            context,
            &[self.groups, sh, sw, dh, dw, i64::from(self.shuffled)],
        )
        .into()
    }

    /// The op's three indexing maps (input, filter, output).
    pub fn maps<'c>(&self, context: &'c Context) -> [AffineMap<'c>; 3] {
        self.raw_maps(context.to_raw())
            .map(|map| unsafe { AffineMap::from_raw(map) })
    }

    /// [`GroupedConv::maps`] in the context `context` (any op's).
    fn raw_maps(&self, context: mlir_sys::MlirContext) -> [mlir_sys::MlirAffineMap; 3] {
        use mlir_sys::{
            MlirAffineExpr, mlirAffineAddExprGet, mlirAffineConstantExprGet, mlirAffineDimExprGet,
            mlirAffineMapGet, mlirAffineMulExprGet,
        };
        let d = |i: isize| unsafe { mlirAffineDimExprGet(context, i) };
        let c = |v: i64| unsafe { mlirAffineConstantExprGet(context, v) };
        let add = |a: MlirAffineExpr, b: MlirAffineExpr| unsafe { mlirAffineAddExprGet(a, b) };
        let mul = |a: MlirAffineExpr, b: MlirAffineExpr| unsafe { mlirAffineMulExprGet(a, b) };
        let [sh, sw] = self.strides;
        let [dh, dw] = self.dilations;
        // The shuffled form loops over (n, oh, ow, f, g): its parallel
        // loops then run in its output's order, as a loop nest mapped onto
        // work-items needs (each work-item's fill, convolution and
        // epilogue write the same element).
        let (g, f) = if self.shuffled {
            (d(4), d(3))
        } else {
            (d(3), d(4))
        };
        let mut input = [
            d(0),
            add(mul(d(1), c(sh)), mul(d(5), c(dh))),
            add(mul(d(2), c(sw)), mul(d(6), c(dw))),
            add(mul(g, c(self.group_channels())), d(7)),
        ];
        let mut filter = [g, d(5), d(6), d(7), f];
        let channel = if self.shuffled {
            add(mul(f, c(self.groups)), g)
        } else {
            add(mul(g, c(self.group_features())), f)
        };
        let mut output = [d(0), d(1), d(2), channel];
        let map = |exprs: &mut [MlirAffineExpr]| unsafe {
            mlirAffineMapGet(context, 8, 0, exprs.len() as isize, exprs.as_mut_ptr())
        };
        [map(&mut input), map(&mut filter), map(&mut output)]
    }

    /// The op's iterator types: five parallel loops, three reductions.
    pub fn iterators() -> [IteratorType; 8] {
        let (p, r) = (IteratorType::Parallel, IteratorType::Reduction);
        [p, p, p, p, p, r, r, r]
    }
}

/// Static shape of a shaped type (tensor or memref), `None` if dynamic.
fn static_shape(ty: melior::ir::Type) -> Option<Vec<i64>> {
    let raw = ty.to_raw();
    if !unsafe { mlir_sys::mlirTypeIsAShaped(raw) }
        || !unsafe { mlir_sys::mlirShapedTypeHasRank(raw) }
    {
        return None;
    }
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(raw) };
    (0..rank)
        .map(|i| {
            let d = unsafe { mlir_sys::mlirShapedTypeGetDimSize(raw, i as isize) };
            (d >= 0 && !unsafe { mlir_sys::mlirShapedTypeIsDynamicDim(raw, i as isize) })
                .then_some(d)
        })
        .collect()
}

/// The grouped convolution `op` computes, if it is one (a `linalg.generic`
/// on tensors or buffers of static shapes, marked, with exactly the maps,
/// iterators and `acc + in * w` body of the module comment).
pub fn of(op: OperationRef) -> Option<GroupedConv> {
    if op_name(&op) != "linalg.generic" || op.operand_count() != 3 {
        return None;
    }
    let marked = op.attribute(ATTRIBUTE).ok()?;
    let values = DenseI64ArrayAttribute::try_from(marked).ok()?;
    if values.len() != 6 {
        return None;
    }
    let value = |i| values.element(i).ok();
    let (groups, strides, dilations) = (value(0)?, [value(1)?, value(2)?], [value(3)?, value(4)?]);
    let shuffled = match value(5)? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let input = static_shape(op.operand(0).ok()?.r#type())?;
    let filter = static_shape(op.operand(1).ok()?.r#type())?;
    let output = static_shape(op.operand(2).ok()?.r#type())?;
    let ([_, _, _, channels], [g, kh, kw, cg, fg], [n, oh, ow, features]) = (
        <[i64; 4]>::try_from(input).ok()?,
        <[i64; 5]>::try_from(filter).ok()?,
        <[i64; 4]>::try_from(output).ok()?,
    );
    if g != groups || groups < 2 || channels != groups * cg || features != groups * fg {
        return None;
    }
    let conv = GroupedConv {
        groups,
        strides,
        dilations,
        filter: [g, kh, kw, cg, fg],
        output: [n, oh, ow, features],
        shuffled,
    };
    let context = unsafe { mlir_sys::mlirOperationGetContext(op.to_raw()) };
    let maps = indexing_maps(op)?;
    let expected = conv.raw_maps(context);
    if maps.len() != 3
        || maps
            .iter()
            .zip(expected)
            .any(|(map, expected)| !unsafe { mlir_sys::mlirAffineMapEqual(map.to_raw(), expected) })
        || iterator_types(op)?[..] != GroupedConv::iterators()[..]
        || !multiply_add_body(op)
    {
        return None;
    }
    Some(conv)
}

/// Whether `op`'s body is `yield(acc + in * w)` on f32 (either order of
/// the operands of the add and of the multiply).
fn multiply_add_body(op: OperationRef) -> bool {
    let Some(block) = op.region(0).ok().and_then(|r| r.first_block()) else {
        return false;
    };
    let arguments: Vec<melior::ir::Value> = (0..block.argument_count())
        .filter_map(|i| block.argument(i).ok().map(Into::into))
        .collect();
    let [input, weight, acc] = arguments[..] else {
        return false;
    };
    if !(input.r#type().is_f32() && weight.r#type().is_f32() && acc.r#type().is_f32()) {
        return false;
    }
    let mut ops = Vec::new();
    let mut next = block.first_operation();
    while let Some(inner) = next {
        next = inner.next_in_block();
        ops.push(inner);
    }
    let [multiply, add, terminator] = ops.as_slice() else {
        return false;
    };
    let operands = |o: &melior::ir::operation::OperationRef| -> Vec<usize> {
        o.operands().map(|v| v.to_raw().ptr as usize).collect()
    };
    let ptr = |v: melior::ir::Value| v.to_raw().ptr as usize;
    let (product, sum) = match (multiply.result(0), add.result(0)) {
        (Ok(p), Ok(s)) => (p.to_raw().ptr as usize, s.to_raw().ptr as usize),
        _ => return false,
    };
    let (input, weight, acc) = (ptr(input), ptr(weight), ptr(acc));
    op_name(multiply) == "arith.mulf"
        && op_name(add) == "arith.addf"
        && op_name(terminator) == "linalg.yield"
        && (operands(multiply) == [input, weight] || operands(multiply) == [weight, input])
        && (operands(add) == [acc, product] || operands(add) == [product, acc])
        && operands(terminator) == [sum]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{first_op, parse};

    /// A grouped convolution of 2 groups (Cg 4, Fg 6, 3x3, stride 2,
    /// dilation 1) with its maps, marking, iterators and body replaced by
    /// the `@`-placeholders.
    fn module(input_map: &str, mark: &str, iterators: &str, body: &str) -> String {
        format!(
            r#"
        func.func @f(%x: tensor<1x9x9x8xf32>, %w: tensor<2x3x3x4x6xf32>, %init: tensor<1x4x4x12xf32>) -> tensor<1x4x4x12xf32> {{
          %0 = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> {input_map}>,
                                                affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d5, d6, d7, d4)>,
                                                affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3 * 6 + d4)>],
                               iterator_types = [{iterators}]}}
              ins(%x, %w : tensor<1x9x9x8xf32>, tensor<2x3x3x4x6xf32>) outs(%init : tensor<1x4x4x12xf32>) {mark} {{
          ^bb0(%a: f32, %b: f32, %c: f32):
            {body}
          }} -> tensor<1x4x4x12xf32>
          return %0 : tensor<1x4x4x12xf32>
        }}"#
        )
    }

    const INPUT: &str = "(d0, d1 * 2 + d5, d2 * 2 + d6, d3 * 4 + d7)";
    const MARK: &str = "attrs = {tcc.grouped_conv = array<i64: 2, 2, 2, 1, 1, 0>}";
    const ITERATORS: &str = r#""parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction""#;
    const BODY: &str = "%m = arith.mulf %a, %b : f32\n            %s = arith.addf %c, %m : f32\n            linalg.yield %s : f32";

    fn recognized(text: &str) -> Option<GroupedConv> {
        let context = tcc_dialects::new_context();
        let module = parse(&context, text);
        of(first_op(&module, "linalg.generic"))
    }

    #[test]
    fn recognizes_the_marked_generic_and_reads_its_geometry() {
        let conv =
            recognized(&module(INPUT, MARK, ITERATORS, BODY)).expect("a grouped convolution");
        assert_eq!(
            conv,
            GroupedConv {
                groups: 2,
                strides: [2, 2],
                dilations: [1, 1],
                filter: [2, 3, 3, 4, 6],
                output: [1, 4, 4, 12],
                shuffled: false,
            }
        );
        assert_eq!((conv.group_channels(), conv.group_features()), (4, 6));
    }

    #[test]
    fn near_misses_are_not_grouped_convolutions() {
        // Unmarked; marked with other strides than its maps have; a map
        // that reads another channel; a reduction less; a body that is
        // not a multiply-add.
        let other_strides = "attrs = {tcc.grouped_conv = array<i64: 2, 1, 1, 1, 1, 0>}";
        // Marked shuffled, its output map the plain order's.
        let shuffled = "attrs = {tcc.grouped_conv = array<i64: 2, 2, 2, 1, 1, 1>}";
        let wrong_channel = "(d0, d1 * 2 + d5, d2 * 2 + d6, d3 * 3 + d7)";
        let parallel = ITERATORS.replacen("reduction", "parallel", 1);
        let max_body = "%m = arith.mulf %a, %b : f32\n            %s = arith.maximumf %c, %m : f32\n            linalg.yield %s : f32";
        for text in [
            module(INPUT, "", ITERATORS, BODY),
            module(INPUT, other_strides, ITERATORS, BODY),
            module(INPUT, shuffled, ITERATORS, BODY),
            module(wrong_channel, MARK, ITERATORS, BODY),
            module(INPUT, MARK, &parallel, BODY),
            module(INPUT, MARK, ITERATORS, max_body),
        ] {
            assert_eq!(recognized(&text), None, "{text}");
        }
    }
}
