//! The A computation of convolutions whose input padding and producer
//! were folded into their loads (`tcc.conv` ops, `tcc-fold-conv-inputs`):
//! the op's body before its combiner translated into C statements,
//! one channel at a time or 4 (`float4`, or `char4` for int8 convolutions)
//! where every load reads neighbouring channels of one pixel. The implicit
//! GEMM (`gemm.rs`) and the window template (`window.rs`) compute their
//! operands with it.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{TypeLike, Value, ValueLike};

use super::writer::{KernelWriter, key, memref_shape};
use crate::back::{CodegenError, ErrorAt};
use crate::ir::util::op_name;

/// The float ops a convolution's A computation may hold in its float4
/// form, with their vector C function (`None`: an infix operator).
const VECTOR_FLOAT_OPS: &[(&str, Option<&str>)] = &[
    ("arith.addf", None),
    ("arith.subf", None),
    ("arith.mulf", None),
    ("arith.maximumf", Some("tcc_maximumf4")),
    ("arith.minimumf", Some("tcc_minimumf4")),
    ("arith.maxnumf", Some("fmax")),
    ("arith.minnumf", Some("fmin")),
    ("arith.select", None),
];

/// Whether a `tcc.conv`'s A computation (the body before its
/// `acc + a * w`) can run 4 channels at a time: every load's last index is
/// the channel (`linalg.index channel_dim`, unclamped), so 4 neighbouring channels
/// lie next to each other in one pixel; every float op is elementwise
/// (add, sub, mul, max, min, a select by a scalar bounds check) on loaded
/// values and scalars from outside the body; everything else is index
/// arithmetic and bounds checks, shared by the 4 channels. A padded
/// input, a folded BatchNorm + ReLU and an unrolled max pool qualify; a
/// transposed (NCHW) input does not. In an int8 convolution's body the
/// int8 values may only be selected (the zero pad).
pub(super) fn channel_vectorizable(ops: &[OperationRef], channel_dim: i64) -> bool {
    let is_float = |v: Value| v.r#type().is_f32() || v.r#type().is_f16() || v.r#type().is_f64();
    let is_int8 = |v: Value| is_i8(v.r#type());
    ops.iter().all(|op| {
        let name = op_name(op);
        match name.as_str() {
            "linalg.index" => true,
            "memref.load" => {
                op.operand_count() >= 2
                    && op
                        .operand(op.operand_count() - 1)
                        .ok()
                        .and_then(crate::ir::util::defining_op)
                        .is_some_and(|index| {
                            op_name(&index) == "linalg.index"
                                && index
                                    .attribute("dim")
                                    .ok()
                                    .and_then(crate::ir::util::integer_value)
                                    == Some(channel_dim)
                        })
            }
            "arith.constant" => true,
            name if name.starts_with("arith.") => {
                // A compare or cast of a float would see a float4.
                let float = op.results().any(|r| is_float(r.into())) || op.operands().any(is_float);
                let int8 = op.results().any(|r| is_int8(r.into())) || op.operands().any(is_int8);
                (!float || VECTOR_FLOAT_OPS.iter().any(|(n, _)| *n == name))
                    && (!int8 || name == "arith.select")
            }
            _ => false,
        }
    })
}

/// Whether `ty` is an integer of `width` bits.
fn is_integer(ty: melior::ir::Type, width: u32) -> bool {
    unsafe {
        mlir_sys::mlirTypeIsAInteger(ty.to_raw())
            && mlir_sys::mlirIntegerTypeGetWidth(ty.to_raw()) == width
    }
}

/// Whether `ty` is `i8` (an int8 convolution's values).
fn is_i8(ty: melior::ir::Type) -> bool {
    is_integer(ty, 8)
}

/// The C vector type of `lanes` channels of a value of type `ty` in the
/// vector form of a convolution's A computation: `charN` for int8, else
/// `floatN`.
fn vector_type(ty: melior::ir::Type, lanes: u32) -> String {
    if is_i8(ty) {
        format!("char{lanes}")
    } else {
        format!("float{lanes}")
    }
}

/// `function(a, b)` over `lanes` channels, for the prelude's `float4`
/// functions (`tcc_maximumf4`, `tcc_minimumf4`): wider vectors call them
/// on each group of 4 lanes; `fmax`/`fmin` take any width.
fn vector_call(function: &str, lanes: u32, a: &str, b: &str) -> String {
    if lanes <= 4 || !function.ends_with('4') {
        return format!("{function}({a}, {b})");
    }
    let parts: Vec<String> = (0..lanes / 4)
        .map(|part| {
            let swizzle: String = (part * 4..part * 4 + 4)
                .map(|lane| char::from_digit(lane, 16).unwrap_or('0'))
                .collect();
            format!("{function}({a}.s{swizzle}, {b}.s{swizzle})")
        })
        .collect();
    format!("(float{lanes})({})", parts.join(", "))
}

/// Whether `value` is a float (or int8) result of one of `ops` (a vector
/// in the float4 form of a convolution's A computation).
fn defining_in(ops: &[OperationRef], value: Value) -> bool {
    (value.r#type().is_f32() || is_i8(value.r#type()))
        && crate::ir::util::defining_op(unsafe { Value::from_raw(value.to_raw()) })
            .is_some_and(|d| ops.iter().any(|op| op.to_raw().ptr == d.to_raw().ptr))
}

/// The one condition of a convolution's A computation that selects by the
/// window position alone (the padding's bounds check): the condition of
/// every `arith.select` among `ops` whose backward slice within `ops` is
/// index arithmetic on `linalg.index` of dimensions other than
/// `channel_dim` (no loads, no channel). `None` when there is none, or
/// more than one distinct such condition. It holds for a whole filter tap
/// of an output pixel, so the register-blocked GEMM tests it once per tap
/// and runs the taps inside the image without it.
pub(super) fn tap_condition<'c>(
    ops: &[OperationRef<'c, '_>],
    channel_dim: i64,
) -> Option<Value<'c, 'c>> {
    fn invariant(ops: &[OperationRef], value: Value, channel_dim: i64, depth: usize) -> bool {
        let Some(op) = crate::ir::util::defining_op(value) else {
            // A block argument: the filter or accumulator, never a bound.
            return false;
        };
        if !ops.iter().any(|o| o.to_raw().ptr == op.to_raw().ptr) {
            // Defined outside the body (a constant): the same everywhere.
            return true;
        }
        if depth > 64 {
            return false;
        }
        match op_name(&op).as_str() {
            "linalg.index" => op
                .attribute("dim")
                .ok()
                .and_then(crate::ir::util::integer_value)
                .is_some_and(|d| d != channel_dim),
            "arith.constant" => true,
            name if name.starts_with("arith.") => {
                let index_or_bool = |v: Value| v.r#type().is_index() || is_integer(v.r#type(), 1);
                op.results().all(|r| index_or_bool(r.into()))
                    && op.operands().all(|v| {
                        index_or_bool(v)
                            && invariant(
                                ops,
                                unsafe { Value::from_raw(v.to_raw()) },
                                channel_dim,
                                depth + 1,
                            )
                    })
            }
            _ => false,
        }
    }
    let mut found: Option<Value> = None;
    for op in ops.iter().filter(|op| op_name(*op) == "arith.select") {
        let condition = op.operand(0).ok()?;
        if !invariant(ops, condition, channel_dim, 0) {
            continue;
        }
        match found {
            Some(previous) if previous != condition => return None,
            _ => found = Some(unsafe { Value::from_raw(condition.to_raw()) }),
        }
    }
    found
}

impl KernelWriter {
    /// Translates the input computation of a `tcc.conv` (its body
    /// before the combiner) into statements: `linalg.index` bound to the C
    /// expressions of `dims` (`None`: a dimension the input must not
    /// depend on), and with `lanes` above 1 every load and float op that
    /// many channels wide (see [`channel_vectorizable`]); `aligned_index`
    /// names the index the caller keeps a multiple of `lanes` (its vector
    /// loads along it are aligned where the view allows). `reserved` (the filter's and
    /// accumulator's block arguments) must not be read.
    ///
    /// With `tap_condition` (see [`tap_condition`]) every use of that
    /// condition reads `(tcc_inside | CONDITION)`: a caller that has
    /// checked the condition for its whole loop declares `const bool
    /// tcc_inside = true` and the bounds checks fold away (else `false`).
    /// Returns the condition's own C name, for that check.
    pub(super) fn conv_input_ops(
        &mut self,
        op: OperationRef,
        input_ops: &[OperationRef],
        dims: &[Option<String>],
        lanes: u32,
        aligned_index: Option<&str>,
        reserved: &[Value],
        tap_condition: Option<Value>,
    ) -> Result<Option<String>, CodegenError> {
        let mut condition_name = None;
        let vector = lanes > 1;
        for inner in input_ops {
            if inner.operands().any(|v| reserved.contains(&v)) {
                return Err(CodegenError::at(
                    inner,
                    "the input computation of a convolution reads its filter or accumulator",
                ));
            }
            if op_name(inner) == "linalg.index" {
                let dim = inner
                    .attribute("dim")
                    .ok()
                    .and_then(crate::ir::util::integer_value)
                    .and_then(|d| dims.get(d as usize).cloned().flatten())
                    .ok_or_else(|| {
                        CodegenError::at(
                            inner,
                            "the input of a convolution depends on its output channel",
                        )
                    })?;
                let result: Value = inner.result(0).at(&op)?.into();
                self.names.insert(key(result), dim);
            } else if vector && op_name(inner) == "memref.load" {
                // The first of the channels: the same address, `lanes` wide.
                let memref = inner.operand(0).at(&op)?;
                let (view, address) = self.element_address(*inner, memref, 1)?;
                // Aligned where the contiguous dimension's index is the
                // one the caller keeps a multiple of `lanes`.
                let aligned = aligned_index.is_some_and(|name| {
                    view.strides
                        .iter()
                        .position(|s| *s == 1)
                        .is_some_and(|dim| {
                            view.vector_aligned(lanes, dim, &memref_shape(memref.r#type()))
                                && self
                                    .operand(*inner, 1 + dim)
                                    .is_ok_and(|index| index == name)
                        })
                });
                let name = self.fresh();
                let result: Value = inner.result(0).at(&op)?.into();
                self.line(&format!(
                    "const {} {name} = {};",
                    vector_type(result.r#type(), lanes),
                    if aligned {
                        view.buffer.load_vector_aligned(lanes, &address)
                    } else {
                        view.buffer.load_vector(lanes, &address)
                    }
                ));
                let result: Value = inner.result(0).at(&op)?.into();
                self.names.insert(key(result), name);
            } else if vector
                && let Some((_, function)) =
                    VECTOR_FLOAT_OPS.iter().find(|(n, _)| *n == op_name(inner))
                && inner
                    .results()
                    .any(|r| r.r#type().is_f32() || (is_i8(r.r#type()) && function.is_none()))
            {
                // 4 channels at once; scalars from outside (a pad value,
                // an accumulator start) are splat.
                let mut args = Vec::new();
                for (index, operand) in inner.operands().enumerate() {
                    let name = self.operand(*inner, index)?;
                    // A select's condition stays scalar.
                    let condition = index == 0 && op_name(inner) == "arith.select";
                    args.push(if condition || defining_in(input_ops, operand) {
                        name
                    } else {
                        format!("({})({name})", vector_type(operand.r#type(), lanes))
                    });
                }
                let expr = match (op_name(inner).as_str(), function) {
                    ("arith.select", _) => format!("({} ? {} : {})", args[0], args[1], args[2]),
                    (_, Some(function)) => vector_call(function, lanes, &args[0], &args[1]),
                    ("arith.addf", None) => format!("({} + {})", args[0], args[1]),
                    ("arith.subf", None) => format!("({} - {})", args[0], args[1]),
                    (_, None) => format!("({} * {})", args[0], args[1]),
                };
                let name = self.fresh();
                let result: Value = inner.result(0).at(&op)?.into();
                self.line(&format!(
                    "const {} {name} = {expr};",
                    vector_type(result.r#type(), lanes)
                ));
                self.names.insert(key(result), name);
            } else {
                self.op(*inner)?;
            }
            if let Some(condition) = tap_condition
                && inner.results().any(|r| Value::from(r) == condition)
            {
                let name = self.name(op, condition)?;
                self.names
                    .insert(key(condition), format!("(tcc_inside | {name})"));
                condition_name = Some(name);
            }
        }
        Ok(condition_name)
    }
}
