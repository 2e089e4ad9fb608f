//! Evaluation of TOSA ops whose operands are all constants, used by
//! `tcc-fold-constants`. Upstream's `tosa-layerwise-constant-fold` and the
//! op folders only read `dense<...>` attributes; ONNX weights arrive as
//! `dense_resource` blobs, so without this every weight transpose, reshape
//! or scaling would run as a kernel on every call. After TOSA is lowered,
//! the one op left to fold is `linalg.transpose` of a weight (the HWCF
//! filter layout tosa-to-linalg-named produces).

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, TypeLike, Value, ValueLike};

use crate::ir::constant::{ConstTensor, FOLD_ELEMENT_LIMIT};
use crate::ir::error::PassError;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::op_name;
use crate::patterns::propagate_layout::transpose_perm;

fn operand_constant(op: OperationRef, index: usize) -> Option<ConstTensor> {
    let value: Value = op.operand(index).ok()?;
    ConstTensor::of_value(value)
}

/// The values of a `tosa.const_shape` operand.
pub fn shape_operand(op: OperationRef, index: usize) -> Option<Vec<i64>> {
    let value: Value = op.operand(index).ok()?;
    let producer = crate::ir::util::defining_op(value)?;
    if op_name(&producer) != "tosa.const_shape" {
        return None;
    }
    let tensor = ConstTensor::from_attribute(producer.attribute("values").ok()?).ok()?;
    Some(
        tensor
            .bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
    )
}

fn float_attribute(op: OperationRef, name: &str) -> Option<f32> {
    let attribute = op.attribute(name).ok()?;
    let raw = attribute.to_raw();
    unsafe { mlir_sys::mlirAttributeIsAFloat(raw) }
        .then(|| unsafe { mlir_sys::mlirFloatAttrGetValueDouble(raw) } as f32)
}

fn binary(name: &str) -> Option<fn(f32, f32) -> f32> {
    Some(match name {
        "tosa.add" => |a, b| a + b,
        "tosa.sub" => |a, b| a - b,
        "tosa.mul" => |a, b| a * b,
        "tosa.maximum" => |a: f32, b: f32| {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                a.max(b)
            }
        },
        "tosa.minimum" => |a: f32, b: f32| {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                a.min(b)
            }
        },
        "tosa.pow" => f32::powf,
        _ => return None,
    })
}

fn unary(name: &str) -> Option<fn(f32) -> f32> {
    Some(match name {
        "tosa.reciprocal" => |x| 1.0 / x,
        "tosa.rsqrt" => |x: f32| 1.0 / x.sqrt(),
        "tosa.exp" => f32::exp,
        "tosa.log" => f32::ln,
        "tosa.abs" => f32::abs,
        "tosa.tanh" => f32::tanh,
        "tosa.sigmoid" => |x: f32| 1.0 / (1.0 + (-x).exp()),
        "tosa.floor" => f32::floor,
        "tosa.ceil" => f32::ceil,
        _ => return None,
    })
}

/// The value of `op` when every operand it reads is a constant and the op
/// is one tcc evaluates; `None` otherwise (the op stays).
pub fn evaluate(op: OperationRef) -> Option<ConstTensor> {
    if op.result_count() != 1 {
        return None;
    }
    let result: Value = op.result(0).ok()?.into();
    let shape = StaticTensor::of(result.r#type())?.shape;
    if shape.iter().try_fold(1i64, |n, &d| n.checked_mul(d))? > FOLD_ELEMENT_LIMIT {
        return None;
    }
    let name = op_name(&op);
    let folded = match name.as_str() {
        "tosa.transpose" => operand_constant(op, 0)?
            .transpose(&transpose_perm(op)?)
            .ok()?,
        // A weight layout change tosa-to-linalg-named makes (OHWI -> HWCF).
        "linalg.transpose" => {
            let attribute = op.attribute("permutation").ok()?;
            let raw = attribute.to_raw();
            if !unsafe { mlir_sys::mlirAttributeIsADenseI64Array(raw) } {
                return None;
            }
            let count = unsafe { mlir_sys::mlirDenseArrayGetNumElements(raw) };
            let perm: Option<Vec<usize>> = (0..count)
                .map(|i| {
                    usize::try_from(unsafe { mlir_sys::mlirDenseI64ArrayGetElement(raw, i) }).ok()
                })
                .collect();
            operand_constant(op, 0)?.transpose(&perm?).ok()?
        }
        "tosa.reshape" => operand_constant(op, 0)?.reshape(&shape).ok()?,
        "tosa.slice" => {
            let start = shape_operand(op, 1)?;
            operand_constant(op, 0)?.slice(&start, &shape).ok()?
        }
        "tosa.concat" => {
            let axis = op
                .attribute("axis")
                .ok()
                .and_then(crate::ir::util::integer_value)?;
            let parts: Option<Vec<_>> = (0..op.operand_count())
                .map(|i| operand_constant(op, i))
                .collect();
            ConstTensor::concat(&parts?, usize::try_from(axis).ok()?).ok()?
        }
        "tosa.clamp" => {
            let (low, high) = (
                float_attribute(op, "min_val")?,
                float_attribute(op, "max_val")?,
            );
            if !(low <= high) {
                return None;
            }
            operand_constant(op, 0)?
                .map_f32(|x| if x.is_nan() { x } else { x.clamp(low, high) })
                .ok()?
        }
        "tosa.mul" => {
            // A float multiply's shift operand is zero.
            let (a, b) = (operand_constant(op, 0)?, operand_constant(op, 1)?);
            if op.operand_count() > 2 {
                let shift = operand_constant(op, 2)?;
                if shift.bytes.iter().any(|&byte| byte != 0) {
                    return None;
                }
            }
            a.zip_f32(&b, &shape, |x, y| x * y).ok()?
        }
        other => {
            if let Some(f) = binary(other) {
                if op.operand_count() != 2 {
                    return None;
                }
                let (a, b) = (operand_constant(op, 0)?, operand_constant(op, 1)?);
                a.zip_f32(&b, &shape, f).ok()?
            } else if let Some(f) = unary(other) {
                if op.operand_count() != 1 {
                    return None;
                }
                operand_constant(op, 0)?.map_f32(f).ok()?
            } else {
                return None;
            }
        }
    };
    // Booleans are stored one byte each here but bit-packed in attributes.
    (folded.shape == shape && folded.element != crate::ir::element_type::ElementType::I1)
        .then_some(folded)
}

/// The constant `op` computes without changing any byte: a `tosa.reshape`
/// of a constant. A `dense_resource` operand (an ONNX weight, mapped from
/// the file) gives a `dense_resource` of the new shape on the same blob, so
/// the weight is not copied at all; a `dense` operand gives MLIR's reshaped
/// `dense` attribute. [`evaluate`] would read the bytes into a vector and
/// build a new attribute from them: a weight of a `MatMul` (reshaped to
/// the batch matmul's 3-D operand) would then be held twice, and a
/// transformer's weights are mostly such matrices.
pub fn view<'c>(op: OperationRef<'c, 'c>) -> Option<Attribute<'c>> {
    if op.result_count() != 1 || op_name(&op) != "tosa.reshape" {
        return None;
    }
    let result: Value = op.result(0).ok()?.into();
    let ty = result.r#type();
    StaticTensor::of(ty)?;
    let producer = crate::ir::util::defining_op(op.operand(0).ok()?)?;
    let attribute = match op_name(&producer).as_str() {
        "tosa.const" => producer.attribute("values").ok()?,
        "arith.constant" => producer.attribute("value").ok()?,
        _ => return None,
    };
    let raw = attribute.to_raw();
    let reshaped = if unsafe { mlir_sys::mlirAttributeIsADenseResourceElements(raw) } {
        // A blob that does not hold exactly the tensor's bytes stays an op
        // (`ConstTensor::from_attribute` reports it where it is read).
        ConstTensor::attribute_bytes(attribute).ok()?;
        unsafe { tcc_dialects::dense_resource_reshape(raw, ty.to_raw()) }?
    } else if unsafe { mlir_sys::mlirAttributeIsADenseElements(raw) } {
        let reshaped = unsafe { mlir_sys::mlirDenseElementsAttrReshapeGet(raw, ty.to_raw()) };
        (!reshaped.ptr.is_null()).then_some(reshaped)?
    } else {
        return None;
    };
    Some(unsafe { Attribute::from_raw(reshaped) })
}

/// Folds `op` when its operands are constants: into a view of its operand
/// ([`view`]) where it only reshapes one, else into the value [`evaluate`]
/// computes. Returns whether it folded.
pub fn fold<'c>(
    context: &'c melior::Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    if let Some(attribute) = view(op) {
        replace_with_attribute(context, op, attribute)?;
        return Ok(true);
    }
    match evaluate(op) {
        Some(value) => {
            replace_with_constant(context, op, &value)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Replaces `op`'s single result by a `tosa.const` holding `value`.
pub fn replace_with_constant<'c>(
    context: &'c melior::Context,
    op: OperationRef<'c, 'c>,
    value: &ConstTensor,
) -> Result<(), PassError<'c>> {
    let location = op.location();
    let result: Value = op
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into();
    let attribute = value
        .to_attribute(result.r#type())
        .map_err(|message| PassError::at(location, message))?;
    replace_with_attribute(context, op, attribute)
}

/// Replaces `op`'s single result by a constant op holding `attribute` (of
/// the result's type).
fn replace_with_attribute<'c>(
    context: &'c melior::Context,
    op: OperationRef<'c, 'c>,
    attribute: Attribute<'c>,
) -> Result<(), PassError<'c>> {
    let location = op.location();
    let result: Value = op
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into();
    let ty = result.r#type();
    let builder = TosaBuilder::before(context, op)?;
    // TOSA ops fold into `tosa.const`; ops of the lowered phases (after
    // tosa-to-arith) into `arith.constant`.
    let constant = if crate::ir::util::dialect_of(&crate::ir::util::op_name(&op)) == "tosa" {
        builder.constant(attribute, ty)?
    } else {
        builder.insert("arith.constant", &[], ty, &[("value", attribute)])?
    };
    crate::ir::util::replace_and_erase(op, result, constant);
    Ok(())
}
