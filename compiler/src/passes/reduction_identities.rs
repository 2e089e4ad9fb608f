//! `tcc-reduction-identities`: gives max/min reductions, max pools and
//! arg-max/arg-min searches the identities ∓inf instead of ∓FLT_MAX.
//!
//! Upstream `tosa-to-linalg(-named)` starts `reduce_max`, `max_pool2d` and
//! `argmax` from the most negative *finite* float (`-3.4028235e38`; the min
//! forms from `+FLT_MAX`) and pads max pools with it. That is the identity
//! of `max` on every float except -inf, so a row (or pooling window) of
//! only -inf — a fully masked attention row, an empty set — reduced to
//! -3.4028235e38 instead of -inf, and an arg-max over `[-inf, -FLT_MAX]`
//! answered 0 instead of 1. The TOSA specification's identities are the
//! infinities.
//!
//! This pass runs right after the TOSA → linalg conversion (and in the
//! reference oracle's lowering), before anything fuses or folds the fills:
//! every `linalg.fill` of `-FLT_MAX` whose result is only the init of a max
//! combination (a `linalg.reduce` whose body takes `arith.maximumf` or
//! `arith.maxnumf`, a `linalg.pooling_*_max`, an arg-max `linalg.generic`
//! that compares with `>`) gets -inf, the `+FLT_MAX` fills of the min forms
//! +inf, and a `tensor.pad` that pads a max pool's input with `-FLT_MAX`
//! pads with -inf. At that point every such fill comes from the
//! conversion (the ONNX importer's own pools already use the infinities),
//! so the finite bound always means "the identity". Every kernel template
//! (row reductions, window kernels, loops) takes the init from the IR, so
//! this one rewrite fixes them all.

use melior::Context;
use melior::dialect::arith;
use melior::ir::attribute::{Attribute, FloatAttribute};
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{BlockLike, Value, ValueLike};

use super::form_dispatches::init_operands;
use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::{body_ops, collect_ops, op_name, users};

pub struct ReductionIdentities;

impl TccPass for ReductionIdentities {
    const ARGUMENT: &'static str = "tcc-reduction-identities";
    const SUMMARY: &'static str = "Start max/min reductions, max pools and arg-max searches from -inf/+inf, not -FLT_MAX/+FLT_MAX";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "arith", "tensor"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for op in collect_ops(root) {
            match op_name(&op).as_str() {
                "linalg.fill" => fix_fill(context, op)?,
                "tensor.pad" => fix_pad(context, op)?,
                _ => {}
            }
        }
        Ok(())
    }
}

/// Which way a consumer of an identity combines.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Max,
    Min,
}

impl Direction {
    /// The finite bound upstream uses as this direction's identity for a
    /// float of `width` bits (f32 or f16), and the infinity that is the
    /// identity.
    fn bounds(self, width: u32) -> Option<(f64, f64)> {
        let largest = match width {
            32 => f32::MAX as f64,
            16 => 65504.0,
            _ => return None,
        };
        Some(match self {
            Direction::Max => (-largest, f64::NEG_INFINITY),
            Direction::Min => (largest, f64::INFINITY),
        })
    }
}

/// The width of a scalar float type (`f32`, `f16`), else `None`.
fn float_width(value: Value) -> Option<u32> {
    match value.r#type().to_string().as_str() {
        "f32" => Some(32),
        "f16" => Some(16),
        _ => None,
    }
}

/// The combination `op` computes on its init operands, when it is a max
/// or a min: a `linalg.reduce` or reduction `linalg.generic` whose body
/// takes the maximum/minimum (or, as arg-max/arg-min do, selects on a
/// greater/less comparison), or a max/min pooling op.
fn direction(op: OperationRef) -> Option<Direction> {
    let name = op_name(&op);
    if let Some(kind) = name.strip_prefix("linalg.pooling_") {
        // `_max_unsigned` / `_min_unsigned` are integer pools.
        return match kind.rsplit('_').next()? {
            "max" => Some(Direction::Max),
            "min" => Some(Direction::Min),
            _ => None,
        };
    }
    let reduces = match name.as_str() {
        "linalg.reduce" => true,
        // Only a reduction reads its init; an elementwise generic's init
        // is a destination.
        "linalg.generic" => op
            .attribute("iterator_types")
            .is_ok_and(|types| types.to_string().contains("reduction")),
        _ => false,
    };
    if !reduces {
        return None;
    }
    let mut found = None;
    for child in body_ops(op) {
        let here = match op_name(&child).as_str() {
            "arith.maximumf" | "arith.maxnumf" => Direction::Max,
            "arith.minimumf" | "arith.minnumf" => Direction::Min,
            "arith.cmpf" => match cmpf_predicate(child)? {
                // ogt, oge, ugt, uge
                2 | 3 | 9 | 10 => Direction::Max,
                // olt, ole, ult, ule
                4 | 5 | 11 | 12 => Direction::Min,
                // eq/ne/ord/uno: checks, not the comparison of a search.
                _ => continue,
            },
            _ => continue,
        };
        match found {
            None => found = Some(here),
            Some(d) if d == here => {}
            // A body that takes both cannot be told apart: leave it.
            Some(_) => return None,
        }
    }
    found
}

/// `arith.cmpf`'s predicate (`arith::CmpFPredicate` as an integer).
fn cmpf_predicate(op: OperationRef) -> Option<i64> {
    let attribute = op.attribute("predicate").ok()?;
    crate::ir::util::integer_value(attribute)
}

/// Whether `value` is one of `user`'s init operands.
fn is_init_of(value: Value, user: OperationRef) -> bool {
    init_operands(user).contains(&value)
}

/// A new `arith.constant` of `value` (of `like`'s type) in front of `op`.
fn constant_before<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    like: Value<'c, 'c>,
    value: f64,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = op.location();
    let block = op
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let attribute: Attribute = FloatAttribute::new(context, like.r#type(), value).into();
    let constant = block.insert_operation_before(op, arith::constant(context, attribute, location));
    Ok(constant
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into())
}

/// The one direction of every user of `value`, when each takes it as a
/// max or min init (`init = true`) or as a max/min pool's input.
fn users_direction(value: Value, init: bool) -> Option<Direction> {
    let mut found = None;
    for user in users(value) {
        if init && !is_init_of(value, user) {
            return None;
        }
        if !init && (!op_name(&user).starts_with("linalg.pooling_") || is_init_of(value, user)) {
            return None;
        }
        let here = direction(user)?;
        if found.is_some_and(|d| d != here) {
            return None;
        }
        found = Some(here);
    }
    found
}

/// A fill of ∓FLT_MAX that only max (min) combinations start from.
fn fix_fill<'c>(context: &'c Context, fill: OperationRef<'c, 'c>) -> PassResult<'c> {
    let (Ok(scalar), Ok(result)) = (fill.operand(0), fill.result(0)) else {
        return Ok(());
    };
    let Some(value) = crate::ir::util::constant_float(scalar) else {
        return Ok(());
    };
    let Some(direction) = users_direction(result.into(), true) else {
        return Ok(());
    };
    let Some((bound, infinity)) = float_width(scalar).and_then(|w| direction.bounds(w)) else {
        return Ok(());
    };
    if value != bound {
        return Ok(());
    }
    let replacement = constant_before(context, fill, scalar, infinity)?;
    unsafe { OperationRefMut::from_raw(fill.to_raw()) }.set_operand(0, replacement);
    Ok(())
}

/// A `tensor.pad` of a max (min) pool's input with ∓FLT_MAX: padding never
/// wins a window, so it must be ∓inf.
fn fix_pad<'c>(context: &'c Context, pad: OperationRef<'c, 'c>) -> PassResult<'c> {
    let Ok(result) = pad.result(0) else {
        return Ok(());
    };
    let Some(direction) = users_direction(result.into(), false) else {
        return Ok(());
    };
    let Some(yield_op) = body_ops(pad)
        .into_iter()
        .find(|op| op_name(op) == "tensor.yield")
    else {
        return Ok(());
    };
    let Ok(padding) = yield_op.operand(0) else {
        return Ok(());
    };
    let Some((bound, infinity)) = float_width(padding).and_then(|w| direction.bounds(w)) else {
        return Ok(());
    };
    if crate::ir::util::constant_float(padding) != Some(bound) {
        return Ok(());
    }
    let replacement = constant_before(context, pad, padding, infinity)?;
    unsafe { OperationRefMut::from_raw(yield_op.to_raw()) }.set_operand(0, replacement);
    Ok(())
}
