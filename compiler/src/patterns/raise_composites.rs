//! Matchers that recognize softmax and layer normalization written in
//! primitive TOSA ops, and the rewrites that replace them by `tcc.softmax`
//! and `tcc.layer_norm`.
//!
//! A match is exact: f32 statically shaped tensors, reductions over the
//! composite's axis, the right constants (`1/N` for the reduced length `N`,
//! a finite positive epsilon, an exponent of exactly 2, zero `tosa.mul`
//! shifts), and every intermediate value used only inside the matched
//! subgraph (an intermediate used elsewhere leaves the subgraph alone, so
//! nothing is computed twice). Each matcher starts from one op (`tosa.mul`
//! for softmax, `tosa.rsqrt` for layer norm) and walks operands and users
//! from there.

use melior::Context;
use melior::ir::attribute::{AttributeLike, FloatAttribute, IntegerAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::IntegerType;
use melior::ir::{Attribute, BlockLike, Identifier, Type, TypeLike, Value, ValueLike};

use crate::ir::error::PassError;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, integer_value, op_name, same_op, use_count, users};

type Result<'c, T> = std::result::Result<T, PassError<'c>>;

/// A softmax found in primitive ops.
pub struct SoftmaxMatch<'c> {
    /// The normalized tensor.
    pub input: Value<'c, 'c>,
    /// The reduced axis (non-negative).
    pub axis: usize,
    /// The final `tosa.mul`; its result is the softmax.
    pub root: OperationRef<'c, 'c>,
    /// The other ops of the subgraph, users before producers, so that they
    /// can be erased in this order once the root is replaced.
    pub dead: Vec<OperationRef<'c, 'c>>,
}

/// A layer normalization over the last axis found in primitive ops.
pub struct LayerNormMatch<'c> {
    pub input: Value<'c, 'c>,
    pub epsilon: f32,
    /// The multiplier (`gamma`), shaped `1x..x1xN`, if the subgraph has one.
    pub scale: Option<Value<'c, 'c>>,
    /// The addend (`beta`), shaped `1x..x1xN`, if the subgraph has one.
    pub bias: Option<Value<'c, 'c>>,
    /// The last op of the subgraph; its result is the layer norm.
    pub root: OperationRef<'c, 'c>,
    /// The other ops, users before producers.
    pub dead: Vec<OperationRef<'c, 'c>>,
}

fn operand<'c>(op: OperationRef<'c, 'c>, index: usize) -> Option<Value<'c, 'c>> {
    op.operand(index).ok()
}

fn result<'c>(op: OperationRef<'c, 'c>) -> Option<Value<'c, 'c>> {
    (op.result_count() == 1)
        .then(|| op.result(0).ok().map(Into::into))
        .flatten()
}

/// The op defining `value` if it is named `name`.
fn defined_by<'c>(value: Value<'c, 'c>, name: &str) -> Option<OperationRef<'c, 'c>> {
    defining_op(value).filter(|op| op_name(op) == name)
}

/// `value` is used by exactly one op, `user` (once).
fn only_use(value: Value, user: OperationRef) -> bool {
    use_count(value) == 1 && users(value).first().is_some_and(|u| same_op(u, &user))
}

/// The static f32 tensor type of `value`.
fn f32_tensor<'c>(value: Value<'c, 'c>) -> Option<StaticTensor<'c>> {
    StaticTensor::of(value.r#type()).filter(|t| t.element.is_f32())
}

/// The value of a splat f32 `tosa.const`.
fn splat_f32(value: Value) -> Option<f32> {
    let op = defined_by(value, "tosa.const")?;
    let attribute = op.attribute("values").ok()?;
    let raw = attribute.to_raw();
    unsafe {
        if !mlir_sys::mlirAttributeIsADenseElements(raw)
            || !mlir_sys::mlirDenseElementsAttrIsSplat(raw)
        {
            return None;
        }
        let ty = mlir_sys::mlirAttributeGetType(raw);
        if !mlir_sys::mlirTypeIsAF32(mlir_sys::mlirShapedTypeGetElementType(ty)) {
            return None;
        }
        Some(mlir_sys::mlirDenseElementsAttrGetFloatSplatValue(raw))
    }
}

/// A `tosa.mul` whose shift operand is a constant zero (the only shift a
/// float multiplication may have).
fn float_mul(op: OperationRef) -> bool {
    if op_name(&op) != "tosa.mul" || op.operand_count() != 3 {
        return false;
    }
    let Some(shift) = operand(op, 2).and_then(|v| defined_by(v, "tosa.const")) else {
        return false;
    };
    let Ok(attribute) = shift.attribute("values") else {
        return false;
    };
    let raw = attribute.to_raw();
    unsafe {
        mlir_sys::mlirAttributeIsADenseElements(raw)
            && mlir_sys::mlirDenseElementsAttrIsSplat(raw)
            && mlir_sys::mlirDenseElementsAttrGetInt8SplatValue(raw) == 0
    }
}

/// The two value operands of a commutative binary op, both orders.
fn both_orders<'c>(op: OperationRef<'c, 'c>) -> Option<[(Value<'c, 'c>, Value<'c, 'c>); 2]> {
    let (a, b) = (operand(op, 0)?, operand(op, 1)?);
    Some([(a, b), (b, a)])
}

/// A `tosa.reduce_*` named `name` of `input` along `axis`.
fn is_reduce(op: OperationRef, name: &str, axis: usize) -> bool {
    op_name(&op) == name
        && op
            .attribute("axis")
            .ok()
            .and_then(integer_value)
            .is_some_and(|a| a == axis as i64)
}

/// `shape` with dimension `axis` set to 1.
fn keep_dims(shape: &[i64], axis: usize) -> Vec<i64> {
    let mut shape = shape.to_vec();
    shape[axis] = 1;
    shape
}

fn has_shape(value: Value, shape: &[i64]) -> bool {
    f32_tensor(value).is_some_and(|t| t.shape == shape)
}

/// Softmax from its final multiplication: `e * reciprocal(reduce_sum(e))`
/// (either order) where `e = exp(x - reduce_max(x))` or `e = exp(x)`, both
/// reductions along the same axis.
pub fn match_softmax<'c>(root: OperationRef<'c, 'c>) -> Option<SoftmaxMatch<'c>> {
    if !float_mul(root) {
        return None;
    }
    let output = result(root)?;
    for (exp_value, inverse) in both_orders(root)? {
        let Some(reciprocal) = defined_by(inverse, "tosa.reciprocal") else {
            continue;
        };
        let Some(exp) = defined_by(exp_value, "tosa.exp") else {
            continue;
        };
        let Some(sum) = operand(reciprocal, 0).and_then(|v| defined_by(v, "tosa.reduce_sum"))
        else {
            continue;
        };
        let (Some(sum_value), Some(sum_input)) = (result(sum), operand(sum, 0)) else {
            continue;
        };
        if sum_input != exp_value || !only_use(inverse, root) || !only_use(sum_value, reciprocal) {
            continue;
        }
        // exp(x) feeds the sum and the final product, nothing else.
        if use_count(exp_value) != 2 {
            continue;
        }
        let Some(shape) = f32_tensor(exp_value).map(|t| t.shape) else {
            continue;
        };
        if output.r#type() != exp_value.r#type() {
            continue;
        }
        let Some(axis) = sum
            .attribute("axis")
            .ok()
            .and_then(integer_value)
            .and_then(|a| usize::try_from(a).ok())
            .filter(|a| *a < shape.len())
        else {
            continue;
        };
        if !has_shape(sum_value, &keep_dims(&shape, axis))
            || !has_shape(inverse, &keep_dims(&shape, axis))
        {
            continue;
        }
        let Some(exp_input) = operand(exp, 0) else {
            continue;
        };
        let mut dead = vec![reciprocal, sum, exp];
        // The shifted form: exp(x - reduce_max(x)).
        let mut input = exp_input;
        if let Some(sub) = defined_by(exp_input, "tosa.sub")
            && let (Some(x), Some(max_value)) = (operand(sub, 0), operand(sub, 1))
            && let Some(max) = defined_by(max_value, "tosa.reduce_max")
            && is_reduce(max, "tosa.reduce_max", axis)
            && operand(max, 0) == Some(x)
            && only_use(exp_input, exp)
            && only_use(max_value, sub)
            && x.r#type() == exp_value.r#type()
            && has_shape(max_value, &keep_dims(&shape, axis))
        {
            input = x;
            dead.extend([sub, max]);
        }
        if input.r#type() != exp_value.r#type() {
            continue;
        }
        return Some(SoftmaxMatch {
            input,
            axis,
            root,
            dead,
        });
    }
    None
}

/// Whether `value` is `reduce_sum(x, last) * (1/N)` (either order), the
/// sum and the product used only by `user`: the mean of the rows of `x`.
/// Returns the ops (product, sum).
fn match_mean<'c>(
    value: Value<'c, 'c>,
    user: OperationRef<'c, 'c>,
    x: Option<Value<'c, 'c>>,
) -> Option<(Value<'c, 'c>, [OperationRef<'c, 'c>; 2])> {
    let mul = defining_op(value).filter(|op| float_mul(*op))?;
    if !only_use(value, user) {
        return None;
    }
    for (sum_value, factor) in both_orders(mul)? {
        let Some(sum) = defined_by(sum_value, "tosa.reduce_sum") else {
            continue;
        };
        let Some(input) = operand(sum, 0) else {
            continue;
        };
        if x.is_some_and(|x| x != input) {
            continue;
        }
        let Some(shape) = f32_tensor(input).map(|t| t.shape) else {
            continue;
        };
        let last = shape.len().checked_sub(1)?;
        let stats = keep_dims(&shape, last);
        if !is_reduce(sum, "tosa.reduce_sum", last)
            || !only_use(sum_value, mul)
            || !has_shape(sum_value, &stats)
            || !has_shape(value, &stats)
        {
            continue;
        }
        let count = shape[last] as f64;
        // 1/N as an f32 (rounding error at most half an ulp, 2^-24).
        if splat_f32(factor).is_some_and(|f| ((f as f64) * count - 1.0).abs() <= 1.2e-7) {
            return Some((input, [mul, sum]));
        }
    }
    None
}

/// Layer normalization over the last axis, from its `tosa.rsqrt`:
/// `d = x - mean(x)`, `var = mean(d * d)` (or `mean(pow(d, 2))`),
/// `n = d * rsqrt(var + epsilon)`, then optionally `n * gamma` and
/// `+ beta` (either operand order everywhere), with `mean(v) =
/// reduce_sum(v) * (1/N)`.
pub fn match_layer_norm<'c>(rsqrt: OperationRef<'c, 'c>) -> Option<LayerNormMatch<'c>> {
    if op_name(&rsqrt) != "tosa.rsqrt" {
        return None;
    }
    let inv_std = result(rsqrt)?;
    let add = operand(rsqrt, 0).and_then(|v| defined_by(v, "tosa.add"))?;
    let add_value = result(add)?;
    if !only_use(add_value, rsqrt) {
        return None;
    }
    // var + epsilon
    let (variance, epsilon) = both_orders(add)?
        .into_iter()
        .find_map(|(v, e)| splat_f32(e).map(|e| (v, e)))?;
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return None;
    }
    let (square_value, [var_mul, var_sum]) = match_mean(variance, add, None)?;
    if add_value.r#type() != variance.r#type() || inv_std.r#type() != variance.r#type() {
        return None;
    }
    // d * d or pow(d, 2)
    let square = defining_op(square_value)?;
    let centred = match op_name(&square).as_str() {
        "tosa.mul" if float_mul(square) && operand(square, 0) == operand(square, 1) => {
            operand(square, 0)?
        }
        "tosa.pow" if operand(square, 1).and_then(splat_f32) == Some(2.0) => operand(square, 0)?,
        _ => return None,
    };
    if square_value.r#type() != centred.r#type() {
        return None;
    }
    let sub = defined_by(centred, "tosa.sub")?;
    let (x, mean_value) = (operand(sub, 0)?, operand(sub, 1)?);
    let (_, [mean_mul, mean_sum]) = match_mean(mean_value, sub, Some(x))?;
    if centred.r#type() != x.r#type() {
        return None;
    }
    // n = d * rsqrt(...), the only other user of d.
    if !only_use(inv_std, users(inv_std).first().copied()?) {
        return None;
    }
    let normalize = users(inv_std)[0];
    if !float_mul(normalize)
        || !both_orders(normalize)?
            .iter()
            .any(|(a, b)| *a == centred && *b == inv_std)
    {
        return None;
    }
    let square_uses = if op_name(&square) == "tosa.mul" { 2 } else { 1 };
    let centred_users = users(centred);
    if centred_users.len() != square_uses + 1
        || !centred_users
            .iter()
            .all(|u| same_op(u, &square) || same_op(u, &normalize))
    {
        return None;
    }
    let mut root = normalize;
    let mut output = result(normalize)?;
    if output.r#type() != x.r#type() {
        return None;
    }
    let shape = f32_tensor(x)?.shape;
    let mut affine_shape = vec![1; shape.len()];
    *affine_shape.last_mut()? = *shape.last()?;
    let mut dead = vec![
        rsqrt, add, var_mul, var_sum, square, sub, mean_mul, mean_sum,
    ];
    // The optional affine part, each step only when it is the sole user.
    let affine = |op_filter: &dyn Fn(OperationRef) -> bool,
                  output: Value<'c, 'c>|
     -> Option<(OperationRef<'c, 'c>, Value<'c, 'c>)> {
        let user = users(output).first().copied()?;
        if !only_use(output, user) || !op_filter(user) || result(user)?.r#type() != output.r#type()
        {
            return None;
        }
        let (_, other) = both_orders(user)?.into_iter().find(|(a, _)| *a == output)?;
        has_shape(other, &affine_shape).then_some((user, other))
    };
    let mut scale = None;
    if let Some((user, gamma)) = affine(&|op| float_mul(op), output) {
        dead.insert(0, root);
        root = user;
        output = result(user)?;
        scale = Some(gamma);
    }
    let mut bias = None;
    if let Some((user, beta)) = affine(&|op| op_name(&op) == "tosa.add", output) {
        dead.insert(0, root);
        root = user;
        bias = Some(beta);
    }
    Some(LayerNormMatch {
        input: x,
        epsilon,
        scale,
        bias,
        root,
        dead,
    })
}

/// Replaces `root`'s result by `replacement` and erases `root` and `dead`
/// (users before producers; each is unused once its users are gone).
fn replace<'c>(
    root: OperationRef<'c, 'c>,
    dead: &[OperationRef<'c, 'c>],
    replacement: Value<'c, 'c>,
) -> Result<'c, ()> {
    let old = result(root).ok_or_else(|| PassError::at(root.location(), "expected one result"))?;
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), replacement.to_raw()) };
    for op in std::iter::once(&root).chain(dead) {
        if (0..op.result_count()).any(|i| op.result(i).is_ok_and(|r| use_count(r.into()) > 0)) {
            return Err(PassError::at(
                op.location(),
                "matched op still has uses after the rewrite",
            ));
        }
        crate::ir::util::erase_op(*op);
    }
    Ok(())
}

fn insert_before<'c>(
    anchor: OperationRef<'c, 'c>,
    name: &str,
    operands: &[Value<'c, 'c>],
    result_type: Type<'c>,
    attributes: &[(Identifier<'c>, Attribute<'c>)],
) -> Result<'c, Value<'c, 'c>> {
    let location = anchor.location();
    let block = anchor
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let op = OperationBuilder::new(name, location)
        .add_operands(operands)
        .add_results(&[result_type])
        .add_attributes(attributes)
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build {name}: {e}")))?;
    let op = block.insert_operation_before(anchor, op);
    Ok(op
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into())
}

/// Replaces a matched softmax by `tcc.softmax`.
pub fn rewrite_softmax<'c>(context: &'c Context, m: &SoftmaxMatch<'c>) -> Result<'c, ()> {
    let axis = IntegerAttribute::new(IntegerType::new(context, 64).into(), m.axis as i64);
    let softmax = insert_before(
        m.root,
        "tcc.softmax",
        &[m.input],
        m.input.r#type(),
        &[(Identifier::new(context, "axis"), axis.into())],
    )?;
    replace(m.root, &m.dead, softmax)
}

/// Replaces a matched layer norm by `tcc.layer_norm` over the last axis;
/// a missing scale is a constant 1, a missing bias a constant 0.
pub fn rewrite_layer_norm<'c>(context: &'c Context, m: &LayerNormMatch<'c>) -> Result<'c, ()> {
    let b = TosaBuilder::before(context, m.root)?;
    let tensor = b.tensor(m.input)?;
    let rank = tensor.rank();
    let columns = *tensor
        .shape
        .last()
        .ok_or_else(|| b.error("layer norm of a rank-0 tensor"))?;
    let affine_type = StaticTensor {
        shape: vec![columns],
        element: tensor.element,
    }
    .to_type();
    let vector = |value: Option<Value<'c, 'c>>, fill: f32| -> Result<'c, Value<'c, 'c>> {
        match value {
            Some(v) if rank == 1 => Ok(v),
            Some(v) => b.reshape(v, &[columns]),
            None => b.constant(
                melior::ir::attribute::DenseElementsAttribute::f32_splat(affine_type, fill).into(),
                affine_type,
            ),
        }
    };
    let (scale, bias) = (vector(m.scale, 1.0)?, vector(m.bias, 0.0)?);
    let axis = IntegerAttribute::new(IntegerType::new(context, 64).into(), rank as i64 - 1);
    let epsilon = FloatAttribute::new(context, Type::float32(context), m.epsilon as f64);
    let layer_norm = insert_before(
        m.root,
        "tcc.layer_norm",
        &[m.input, scale, bias],
        m.input.r#type(),
        &[
            (Identifier::new(context, "axis"), axis.into()),
            (Identifier::new(context, "epsilon"), epsilon.into()),
        ],
    )?;
    replace(m.root, &m.dead, layer_norm)
}
