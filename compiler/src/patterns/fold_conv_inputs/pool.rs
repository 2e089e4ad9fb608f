//! Folding a max or sum pooling into the 1x1 convolution that is its only
//! user: reading a pooling `tcc.conv` apart ([`PoolParts`]) and unrolling its
//! window into the convolution's loads ([`inline_pool`]).

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, RegionLike, TypeLike, Value, ValueLike};

use super::build::{Builder, clone_remapped};
use super::{Combine, MAX_UNROLLED_WINDOW, WINDOWS, Window, pair};
use crate::config::PoolFolding;
use crate::ir::error::PassError;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, dialect_of, op_name, use_count, users};

/// A window op's strides: a named op's `strides`, a `tcc.conv`'s from its
/// window (`#tcc.conv`).
pub(crate) fn window_strides(op: OperationRef) -> Option<[i64; 2]> {
    if let Some(window) = crate::ir::conv::of(&op) {
        return Some(window.strides);
    }
    pair(op, "strides")
}

/// Whether `consumer` is a `linalg.conv_2d_nhwc_hwcf` with a 1x1 filter.
fn is_pointwise_conv(consumer: OperationRef) -> bool {
    op_name(&consumer) == "linalg.conv_2d_nhwc_hwcf"
        && consumer
            .operand(1)
            .ok()
            .and_then(|f| StaticTensor::of(f.r#type()))
            .is_some_and(|f| f.rank() == 4 && f.shape[0] == 1 && f.shape[1] == 1)
}

/// The pieces of a pooling `tcc.conv` (`tcc.conv<pooling_nhwc_max, ...>` or
/// `pooling_nhwc_sum`, after its own padding was folded) that unrolling
/// its window into a consumer's loads needs.
pub(super) struct PoolParts<'c> {
    window: &'static Window,
    /// Window height and width.
    size: [i64; 2],
    /// The accumulator's start (the scalar of the fill initialising it).
    init: Value<'c, 'c>,
    /// The body's final `combine(acc, a)`.
    combine: OperationRef<'c, 'c>,
    /// `a`: the window element combined.
    element: Value<'c, 'c>,
}

/// Reads a pooling `tcc.conv` apart; `None` unless its window has at most
/// [`MAX_UNROLLED_WINDOW`] cells, its init is a fill of a scalar, its body
/// holds only arith ops, `linalg.index` and `tensor.extract` before a
/// final `max`/`add` of the accumulator, and it reads neither the window
/// operand nor the accumulator elsewhere.
pub(super) fn pool_parts<'c>(op: OperationRef<'c, 'c>) -> Option<PoolParts<'c>> {
    if op.operand_count() != 2 || op.result_count() != 1 {
        return None;
    }
    let name = crate::ir::conv::of(&op)?.kind.name();
    let window = WINDOWS
        .iter()
        .find(|w| w.name == name && w.combine != Combine::MulAdd)?;
    let size = StaticTensor::of(op.operand(0).ok()?.r#type())?;
    if size.rank() != 2 || size.shape.iter().product::<i64>() > MAX_UNROLLED_WINDOW {
        return None;
    }
    let fill = defining_op(op.operand(1).ok()?)?;
    if op_name(&fill) != "linalg.fill" {
        return None;
    }
    let init = fill.operand(0).ok()?;
    if !init.r#type().is_f32() {
        return None;
    }
    let body = op.region(0).ok()?.first_block()?;
    let window_element: Value = body.argument(0).ok()?.into();
    let acc: Value = body.argument(1).ok()?.into();
    if use_count(window_element) != 0 || use_count(acc) != 1 {
        return None;
    }
    let terminator = body.terminator()?;
    let combine = defining_op(terminator.operand(0).ok()?)?;
    if !matches!(
        op_name(&combine).as_str(),
        "arith.maximumf" | "arith.maxnumf" | "arith.addf"
    ) || combine.operand_count() != 2
    {
        return None;
    }
    let operands: Vec<Value> = combine.operands().collect();
    let element = match operands.as_slice() {
        [a, b] if *a == acc => *b,
        [a, b] if *b == acc => *a,
        _ => return None,
    };
    let mut next = body.first_operation();
    while let Some(inner) = next {
        next = inner.next_in_block();
        let inner_name = op_name(&inner);
        if inner.region_count() > 0
            || !(dialect_of(&inner_name) == "arith"
                || matches!(
                    inner_name.as_str(),
                    "linalg.index" | "tensor.extract" | "linalg.yield"
                ))
        {
            return None;
        }
    }
    Some(PoolParts {
        window,
        size: [size.shape[0], size.shape[1]],
        init,
        combine,
        element: unsafe { Value::from_raw(element.to_raw()) },
    })
}

/// Whether `op`, a pooling (named, or a `tcc.conv` after its padding was
/// folded), can be unrolled into `consumer`'s loads: it feeds only a 1x1
/// convolution and its result is rank-4 f32.
pub(super) fn fusible_pool(op: OperationRef, consumer: OperationRef, pools: PoolFolding) -> bool {
    is_pointwise_conv(consumer)
        && window_strides(op).is_some_and(|s| pools.takes(s))
        && op.result(0).is_ok_and(|r| {
            use_count(r.into()) == 1
                && StaticTensor::of(r.r#type()).is_some_and(|t| t.element.is_f32() && t.rank() == 4)
        })
        && pool_parts(op).is_some()
}

/// Whether `op` is a named max or sum pooling whose only user is a 1x1
/// convolution: rewriting it into a `tcc.conv` (with nothing to fold) lets
/// the convolution's plan unroll it.
pub(super) fn pool_feeding_pointwise_conv(op: OperationRef, pools: PoolFolding) -> bool {
    pair(op, "strides").is_some_and(|s| pools.takes(s))
        && matches!(
            op_name(&op).as_str(),
            "linalg.pooling_nhwc_max" | "linalg.pooling_nhwc_sum"
        )
        && op.result(0).is_ok_and(|r| {
            let r: Value = r.into();
            use_count(r) == 1 && users(r).into_iter().all(is_pointwise_conv)
        })
}

/// Computes the pooled element at `coordinates` (of the pooling's output)
/// by cloning the pooling body once per window cell, with its
/// `linalg.index` ops bound to the coordinates and the cell, and chaining
/// the cells' elements through its combiner from the fill value.
pub(super) fn inline_pool<'c>(
    b: &Builder<'c>,
    pool: OperationRef<'c, 'c>,
    parts: &PoolParts<'c>,
    coordinates: &[Value<'c, 'c>; 4],
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = b.location;
    let err = |e: melior::Error| PassError::at(location, e.to_string());
    let body = pool
        .region(0)
        .map_err(err)?
        .first_block()
        .ok_or_else(|| PassError::at(location, "pooling without a body"))?;
    let window = parts.window;
    let mut acc = parts.init;
    for kh in 0..parts.size[0] {
        for kw in 0..parts.size[1] {
            let mut mapping: Vec<(mlir_sys::MlirValue, Value<'c, 'c>)> = Vec::new();
            let mut next = body.first_operation();
            while let Some(inner) = next {
                next = inner.next_in_block();
                if inner.to_raw().ptr == parts.combine.to_raw().ptr
                    || op_name(&inner) == "linalg.yield"
                {
                    continue;
                }
                let result: Value = inner.result(0).map_err(err)?.into();
                if op_name(&inner) == "linalg.index" {
                    let dim = inner
                        .attribute("dim")
                        .ok()
                        .and_then(crate::ir::util::integer_value)
                        .and_then(|d| usize::try_from(d).ok())
                        .ok_or_else(|| PassError::at(location, "linalg.index without a dim"))?;
                    let value = match dim {
                        d if d == window.n => coordinates[0],
                        d if d == window.oh => coordinates[1],
                        d if d == window.ow => coordinates[2],
                        d if d == window.c => coordinates[3],
                        d if d == window.kh => b.constant(kh)?,
                        d if d == window.kw => b.constant(kw)?,
                        _ => return Err(PassError::at(location, "pooling index out of range")),
                    };
                    mapping.push((result.to_raw(), value));
                    continue;
                }
                let clone = clone_remapped(b, inner, &mapping);
                for position in 0..inner.result_count() {
                    let old: Value = inner.result(position).map_err(err)?.into();
                    let new: Value = clone.result(position).map_err(err)?.into();
                    mapping.push((old.to_raw(), unsafe { Value::from_raw(new.to_raw()) }));
                }
            }
            let element = mapping
                .iter()
                .find(|(raw, _)| raw.ptr == parts.element.to_raw().ptr)
                .map(|(_, v)| *v)
                .unwrap_or(parts.element);
            acc = b.binary(&op_name(&parts.combine), acc, element)?;
        }
    }
    Ok(acc)
}
