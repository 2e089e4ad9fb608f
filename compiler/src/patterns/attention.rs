//! `tcc.attention`: its expansion into TOSA (what it means, for
//! `tcc-decompose-composites` and the reference), its destination-style
//! kernel form (`tcc.flash_attention`, for `tcc-convert-attention-to-kernel`)
//! and the matcher that raises the matmul/softmax chains exporters emit
//! (for `tcc-raise-attention`).

use melior::Context;
use melior::ir::attribute::{BoolAttribute, FloatAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::RankedTensorType;
use melior::ir::{Attribute, BlockLike, Identifier, RegionLike, Type, TypeLike, Value, ValueLike};

use super::{empty_like, insert_before};
use crate::ir::constant::ConstTensor;
use crate::ir::element_type::ElementType;
use crate::ir::error::PassError;
use crate::ir::operand::operand_at;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::{StaticTensor, broadcast_shapes, normalize_axis};
use crate::ir::util::{defining_op, integer_value, op_name, use_count, users};
use crate::patterns::propagate_layout::transpose_perm;

type Result<'c, T> = std::result::Result<T, PassError<'c>>;

/// A mask value at or below this is "masked out" in a causal triangle
/// (`torch.finfo(float32).min`, `-inf`): its exponential is exactly 0 next
/// to any finite score, as a skipped key's is.
pub const MASKED_OUT: f32 = -1.0e30;

/// The attributes of a `tcc.attention` or `tcc.flash_attention`.
fn scale_and_causal<'c>(op: OperationRef<'c, 'c>) -> Result<'c, (f64, bool)> {
    let scale = op
        .attribute("scale")
        .ok()
        .and_then(|a| FloatAttribute::try_from(a).ok())
        .map(|a| a.value())
        .ok_or_else(|| PassError::at(op.location(), "attention without a float scale"))?;
    let causal = op
        .attribute("causal")
        .ok()
        .and_then(|a| BoolAttribute::try_from(a).ok())
        .is_some_and(|a| a.value());
    Ok((scale, causal))
}

/// A `[rows, columns]` boolean constant, true where key `j <= i`, shaped
/// `[1, 1, rows, columns]`.
fn causal_condition<'c>(b: &TosaBuilder<'c>, rows: i64, columns: i64) -> Result<'c, Value<'c, 'c>> {
    let bits: Vec<i32> = (0..rows)
        .flat_map(|i| (0..columns).map(move |j| i32::from(j <= i)))
        .collect();
    let i1 = melior::ir::r#type::IntegerType::new(b.context(), 1).into();
    let ty: Type = RankedTensorType::new(&[1, 1, rows as u64, columns as u64], i1, None).into();
    let attribute = unsafe {
        Attribute::from_raw(mlir_sys::mlirDenseElementsAttrBoolGet(
            ty.to_raw(),
            bits.len() as isize,
            bits.as_ptr(),
        ))
    };
    b.constant(attribute, ty)
}

/// `tosa.matmul` of two rank-3 tensors (zero points 0).
fn matmul<'c>(
    b: &TosaBuilder<'c>,
    x: Value<'c, 'c>,
    y: Value<'c, 'c>,
) -> Result<'c, Value<'c, 'c>> {
    let (tx, ty) = (b.tensor(x)?, b.tensor(y)?);
    let zero_type = StaticTensor {
        shape: vec![1],
        element: tx.element,
    }
    .to_type();
    let zero = b.scalar(0.0, 1, tx.element)?;
    debug_assert_eq!(zero.r#type(), zero_type);
    let result = StaticTensor {
        shape: vec![tx.shape[0], tx.shape[1], ty.shape[2]],
        element: tx.element,
    }
    .to_type();
    b.insert("tosa.matmul", &[x, y, zero, zero], result, &[])
}

/// Key or value heads `[B, Hkv, S, D]` repeated for `group` query heads
/// each: `[B, Hkv * group, S, D]`, head `h` reading head `h / group`.
fn repeat_heads<'c>(
    b: &TosaBuilder<'c>,
    x: Value<'c, 'c>,
    group: i64,
) -> Result<'c, Value<'c, 'c>> {
    if group == 1 {
        return Ok(x);
    }
    let t = b.tensor(x)?;
    let [batch, heads, length, dim] = t.shape[..] else {
        return Err(b.error("attention operand is not rank 4"));
    };
    let wide = b.reshape(x, &[batch, heads, 1, length, dim])?;
    let multiples = b.const_shape(&[1, 1, group, 1, 1])?;
    let tiled = StaticTensor {
        shape: vec![batch, heads, group, length, dim],
        element: t.element,
    }
    .to_type();
    let tiled = b.insert("tosa.tile", &[wide, multiples], tiled, &[])?;
    b.reshape(tiled, &[batch, heads * group, length, dim])
}

/// `tcc.attention` → `softmax(scale * Q·Kᵀ [causal: -inf above the
/// diagonal] + mask) · V` in TOSA: key and value heads repeated for
/// grouped queries, the products as rank-3 `tosa.matmul`s over batch x
/// heads, the causal triangle as a `tosa.select` of `-inf`, the softmax
/// shifted by the row maximum.
pub fn decompose<'c>(b: &TosaBuilder<'c>, op: OperationRef<'c, 'c>) -> Result<'c, Value<'c, 'c>> {
    let (q, k, v) = (operand_at(op, 0)?, operand_at(op, 1)?, operand_at(op, 2)?);
    let mask = (op.operand_count() == 4)
        .then(|| operand_at(op, 3))
        .transpose()?;
    let (scale, causal) = scale_and_causal(op)?;
    let tq = b.tensor(q)?;
    let tk = b.tensor(k)?;
    let [batch, heads, q_len, dim] = tq.shape[..] else {
        return Err(b.error("attention query is not rank 4"));
    };
    let (kv_heads, kv_len) = (tk.shape[1], tk.shape[2]);
    let group = heads / kv_heads.max(1);
    let element = tq.element;
    let rows = batch * heads;
    let k = repeat_heads(b, k, group)?;
    let v = repeat_heads(b, v, group)?;
    let q3 = b.reshape(q, &[rows, q_len, dim])?;
    let kt = b.transpose(b.reshape(k, &[rows, kv_len, dim])?, &[0, 2, 1])?;
    let scores = b.reshape(matmul(b, q3, kt)?, &[batch, heads, q_len, kv_len])?;
    let mut scores = b.mul(scores, b.scalar(scale, 4, element)?)?;
    if causal {
        let condition = causal_condition(b, q_len, kv_len)?;
        let fill = b.scalar(f64::NEG_INFINITY, 4, element)?;
        let ty = scores.r#type();
        scores = b.insert("tosa.select", &[condition, scores, fill], ty, &[])?;
    }
    if let Some(mask) = mask {
        scores = b.binary("tosa.add", scores, mask)?;
    }
    let max = b.reduce("tosa.reduce_max", scores, 3)?;
    let exp = b.unary("tosa.exp", b.binary("tosa.sub", scores, max)?)?;
    let sum = b.reduce("tosa.reduce_sum", exp, 3)?;
    let probabilities = b.mul(exp, b.unary("tosa.reciprocal", sum)?)?;
    // A row without any key (every score -inf: its maximum is -inf) is 0,
    // not the softmax's NaN.
    let empty_row = StaticTensor {
        shape: b.tensor(max)?.shape,
        element: melior::ir::r#type::IntegerType::new(b.context(), 1).into(),
    }
    .to_type();
    let empty_row = b.insert(
        "tosa.equal",
        &[max, b.scalar(f64::NEG_INFINITY, 4, element)?],
        empty_row,
        &[],
    )?;
    let zero = b.scalar(0.0, 4, element)?;
    let probabilities = b.insert(
        "tosa.select",
        &[empty_row, zero, probabilities],
        probabilities.r#type(),
        &[],
    )?;
    let p3 = b.reshape(probabilities, &[rows, q_len, kv_len])?;
    let v3 = b.reshape(v, &[rows, kv_len, dim])?;
    b.reshape(matmul(b, p3, v3)?, &[batch, heads, q_len, dim])
}

/// The most head dimensions the flash-attention template takes (its K
/// and V tiles of at least one key must fit the targets' local memory).
pub const KERNEL_MAX_HEAD_DIM: i64 = 2048;

/// Whether a `tcc.attention` compiles as one kernel: f32, f16 or bf16 (all
/// operands one type), static shapes, a head dimension the template's
/// tiles fit.
pub fn fits_kernel(op: OperationRef) -> bool {
    let elements: Vec<_> = op
        .operands()
        .map(|v| {
            StaticTensor::of(v.r#type())
                .filter(|t| t.rank() == 4)
                .map(|t| t.element)
        })
        .collect();
    let one_kernel_type = elements.first().copied().flatten().is_some_and(|first| {
        (first.is_f32() || first.is_f16() || first.is_bf16())
            && elements.iter().all(|e| *e == Some(first))
    });
    one_kernel_type
        && op
            .operand(0)
            .ok()
            .and_then(|v| StaticTensor::of(v.r#type()))
            .is_some_and(|t| t.shape[3] <= KERNEL_MAX_HEAD_DIM)
}

/// Builds `tcc.flash_attention` in front of a `tcc.attention` and returns
/// its result.
pub fn to_kernel<'c>(context: &'c Context, op: OperationRef<'c, 'c>) -> Result<'c, Value<'c, 'c>> {
    let location = op.location();
    let mut operands: Vec<Value<'c, 'c>> = op.operands().collect();
    let (scale, causal) = scale_and_causal(op)?;
    let init = empty_like(context, op, operands[0])?;
    operands.push(init);
    insert_before(
        op,
        OperationBuilder::new("tcc.flash_attention", location)
            .add_operands(&operands)
            .add_results(&[init.r#type()])
            .add_attributes(&[
                (
                    Identifier::new(context, "scale"),
                    FloatAttribute::new(context, Type::float32(context), scale).into(),
                ),
                (
                    Identifier::new(context, "causal"),
                    BoolAttribute::new(context, causal).into(),
                ),
            ]),
        "tcc.flash_attention",
    )
}

// ---------------------------------------------------------------------------
// Recognition
// ---------------------------------------------------------------------------

/// A fill at or below this masks a key out in an f16 chain: f16's lowest
/// finite value, the `torch.finfo(float16).min` a half model's causal
/// `where` fills with (f16 has no `-1e30`). Its exponential next to any
/// score a half tensor can hold underflows to 0 in the softmax's f32.
const F16_MASKED_OUT: f32 = -65504.0;

/// One operand of the raised `tcc.attention` (Q, Kᵀ, V or the mask) in the
/// chain's storage type: `value`, then the data movements `moves`
/// (`tosa.reshape`s and `tosa.transpose`s of the f32 chain, innermost
/// first) replayed on it in that type, which is what the chain's f32
/// operand is once widened: a half chain's operands are casts up from the
/// half type, moved about in f32. A constant f32 mask of a half chain is
/// `constant`, narrowed exactly.
pub struct Operand<'c> {
    pub value: Value<'c, 'c>,
    pub moves: Vec<OperationRef<'c, 'c>>,
    pub constant: Option<ConstTensor>,
}

/// An attention found in primitive ops: `tosa.matmul(P, V)` whose `P` is a
/// last-axis `tcc.softmax` of the (scaled, masked) scores `Q·Kᵀ`.
pub struct AttentionMatch<'c> {
    /// Q as `[N, Sq, D]` (N = batch x heads), K as `[N, D, Skv]` (the
    /// matmul's right operand), V as `[N, Skv, D]`; any value of that
    /// many elements in that row-major order, in the storage type.
    pub query: Operand<'c>,
    pub key_transposed: Operand<'c>,
    pub value: Operand<'c>,
    /// `[N, Sq, D, Skv]`.
    pub sizes: [i64; 4],
    /// How N splits into batch and heads.
    pub batch: i64,
    pub heads: i64,
    pub scale: f64,
    pub causal: bool,
    /// The additive mask, rank 4 and broadcastable to `[B, H, Sq, Skv]`
    /// once reshaped as the shape says, and the factor it is multiplied by.
    pub mask: Option<(Operand<'c>, Vec<i64>, f64)>,
    /// The `tosa.matmul(P, V)`.
    pub root: OperationRef<'c, 'c>,
    /// The op whose result the attention replaces: the root (its result
    /// `[N, Sq, D]`), or, in a half chain computed in f32, the cast to the
    /// half type its result is stored through.
    pub output: OperationRef<'c, 'c>,
    /// The element type Q, K, V, the mask and the output are stored in:
    /// f32, f16 or bf16.
    pub storage: ElementType,
}

fn result<'c>(op: OperationRef<'c, 'c>) -> Option<Value<'c, 'c>> {
    (op.result_count() == 1)
        .then(|| op.result(0).ok().map(Into::into))
        .flatten()
}

/// The element type and static shape of a f32, f16 or bf16 tensor.
fn float_tensor(value: Value) -> Option<(ElementType, Vec<i64>)> {
    let t = StaticTensor::of(value.r#type())?;
    let element = ElementType::of_type(t.element)?;
    matches!(
        element,
        ElementType::F32 | ElementType::F16 | ElementType::BF16
    )
    .then_some((element, t.shape))
}

/// The shape of `value` if it is a static tensor a chain stored as
/// `storage` computes in: f32 or `storage` itself.
fn chain_shape(value: Value, storage: ElementType) -> Option<Vec<i64>> {
    float_tensor(value)
        .filter(|(e, _)| *e == ElementType::F32 || *e == storage)
        .map(|(_, shape)| shape)
}

/// If `op` is a `tosa.cast` between f32 and the half type `storage`
/// (either way, same shape), its input.
fn half_cast<'c>(op: OperationRef<'c, 'c>, storage: ElementType) -> Option<Value<'c, 'c>> {
    if op_name(&op) != "tosa.cast" || storage == ElementType::F32 {
        return None;
    }
    let input = op.operand(0).ok()?;
    let (from, from_shape) = float_tensor(input)?;
    let (to, to_shape) = float_tensor(result(op)?)?;
    let pair = [from, to];
    (from_shape == to_shape && pair.contains(&ElementType::F32) && pair.contains(&storage))
        .then_some(input)
}

/// A float constant's values as f32 (f16 and bf16 widen exactly).
fn float_values(constant: &ConstTensor) -> Option<Vec<f32>> {
    let halves = |f: fn([u8; 2]) -> f32| {
        Some(
            constant
                .bytes
                .chunks_exact(2)
                .map(|c| f([c[0], c[1]]))
                .collect(),
        )
    };
    match constant.element {
        ElementType::F32 => constant.f32s(),
        ElementType::F16 => halves(|b| half::f16::from_le_bytes(b).to_f32()),
        ElementType::BF16 => halves(|b| half::bf16::from_le_bytes(b).to_f32()),
        _ => None,
    }
}

/// The value of a splat-like float constant of all-1 shape (a scalar that
/// broadcasts against anything).
fn scalar_constant(value: Value) -> Option<f32> {
    let constant = ConstTensor::of_value(value)?;
    if constant.shape.iter().any(|&d| d != 1) {
        return None;
    }
    float_values(&constant)?.first().copied()
}

/// Whether a `tosa.mul`'s shift operand is absent or the constant 0.
fn zero_shift(mul: OperationRef) -> bool {
    match mul.operand(2) {
        Ok(shift) => ConstTensor::of_value(shift).is_some_and(|c| c.bytes.iter().all(|b| *b == 0)),
        Err(_) => true,
    }
}

/// Whether the matmul's zero points are constant zeros and its result a
/// rank-3 tensor of a type a chain stored as `storage` computes in.
fn float_matmul(matmul: OperationRef, storage: ElementType) -> bool {
    (2..matmul.operand_count()).all(|i| {
        matmul
            .operand(i)
            .ok()
            .and_then(ConstTensor::of_value)
            .is_some_and(|c| c.bytes.iter().all(|b| *b == 0))
    }) && result(matmul)
        .and_then(|r| chain_shape(r, storage))
        .is_some_and(|s| s.len() == 3)
}

/// `value` with reshapes (and, with `scale`, multiplications by a scalar
/// constant, whose factors multiply into it) stripped off, and in a half
/// chain (`storage` f16 or bf16) casts between f32 and that type, while
/// each stripped op's result has one use.
fn strip_operand<'c>(
    mut value: Value<'c, 'c>,
    mut scale: Option<&mut f64>,
    storage: ElementType,
) -> Value<'c, 'c> {
    while use_count(value) == 1
        && let Some(op) = defining_op(value)
    {
        match op_name(&op).as_str() {
            "tosa.reshape" => match op.operand(0) {
                Ok(input) => value = input,
                Err(_) => break,
            },
            "tosa.cast" => match half_cast(op, storage) {
                Some(input) => value = input,
                None => break,
            },
            "tosa.mul" if zero_shift(op) => {
                let (Some(scale), Ok(a), Ok(b)) =
                    (scale.as_deref_mut(), op.operand(0), op.operand(1))
                else {
                    break;
                };
                if let Some(c) = scalar_constant(b) {
                    *scale *= f64::from(c);
                    value = a;
                } else if let Some(c) = scalar_constant(a) {
                    *scale *= f64::from(c);
                    value = b;
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    value
}

/// `value` (a stripped Q, Kᵀ, V or mask) as an operand in `storage`: as it
/// is when it has that type; in a half chain, an f32 value that is a cast
/// up from `storage` through reshapes and transposes (the moves replayed on
/// the half value), or an f32 constant whose values `storage` holds
/// exactly. Anything else (an f32 tensor in a half chain: mixed types) is
/// `None`.
fn in_storage<'c>(value: Value<'c, 'c>, storage: ElementType) -> Option<Operand<'c>> {
    let (element, shape) = float_tensor(value)?;
    if element == storage {
        return Some(Operand {
            value,
            moves: Vec::new(),
            constant: None,
        });
    }
    if element != ElementType::F32 || storage == ElementType::F32 {
        return None;
    }
    if let Some(constant) = ConstTensor::of_value(value) {
        let values = float_values(&constant)?;
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|v| match storage {
                ElementType::F16 => half::f16::from_f32(*v).to_le_bytes(),
                _ => half::bf16::from_f32(*v).to_le_bytes(),
            })
            .collect();
        let narrowed = ConstTensor {
            shape,
            element: storage,
            bytes,
        };
        // Exactly: every value survives the round trip.
        let back = float_values(&narrowed)?;
        return values
            .iter()
            .zip(&back)
            .all(|(v, b)| v == b)
            .then_some(Operand {
                value,
                moves: Vec::new(),
                constant: Some(narrowed),
            });
    }
    let mut moves = Vec::new();
    let mut at = value;
    loop {
        let op = defining_op(at)?;
        match op_name(&op).as_str() {
            "tosa.reshape" | "tosa.transpose" => {
                moves.push(op);
                at = op.operand(0).ok()?;
            }
            "tosa.cast" => {
                let input = half_cast(op, storage)?;
                if float_tensor(input)?.0 != storage {
                    return None;
                }
                moves.reverse();
                return Some(Operand {
                    value: input,
                    moves,
                    constant: None,
                });
            }
            _ => return None,
        }
    }
}

/// Whether a constant `[.., rows, columns]` (leading dimensions 1) is the
/// causal triangle: `keep(j <= i)` where `keep` says whether element
/// `(i, j)` keeps its score.
fn is_triangle(
    constant: &ConstTensor,
    rows: i64,
    columns: i64,
    keep: impl Fn(usize) -> Option<bool>,
) -> bool {
    let shape = &constant.shape;
    if shape.len() < 2
        || shape[..shape.len() - 2].iter().any(|&d| d != 1)
        || shape[shape.len() - 2] != rows
        || shape[shape.len() - 1] != columns
    {
        return false;
    }
    (0..rows as usize)
        .all(|i| (0..columns as usize).all(|j| keep(i * columns as usize + j) == Some(j <= i)))
}
/// `arith.cmpf`'s `uno` predicate (true where either operand is NaN).
const CMPF_UNO: i64 = 14;

/// Whether `condition` is `isnan(x)` and used only once: an ONNX `IsNaN`
/// as the importer writes it (a `linalg.generic` over `x` alone whose body
/// is `arith.cmpf uno, %in, %in`) or as TOSA can (`logical_not(equal(x,
/// x))`).
fn is_nan_of<'c>(condition: Value<'c, 'c>, x: Value<'c, 'c>) -> bool {
    if use_count(condition) != 1 {
        return false;
    }
    let Some(op) = defining_op(condition) else {
        return false;
    };
    match op_name(&op).as_str() {
        "linalg.generic" => {
            // One input, x (or, in a half graph, x cast up to f32 for the
            // test alone: the importer computes IsNaN in f32); one output;
            // the body `cmpf uno, %in, %in`.
            let Ok(input) = op.operand(0) else {
                return false;
            };
            let widened = || {
                use_count(input) == 1
                    && defining_op(input).is_some_and(|cast| {
                        op_name(&cast) == "tosa.cast"
                            && cast.operand(0).ok() == Some(x)
                            && float_tensor(x).is_some_and(|(e, _)| {
                                matches!(e, ElementType::F16 | ElementType::BF16)
                            })
                            && float_tensor(input).is_some_and(|(e, _)| e == ElementType::F32)
                    })
            };
            if op.operand_count() != 2 || (input != x && !widened()) {
                return false;
            }
            let body = crate::ir::util::body_ops(op);
            let [compare, yield_] = &body[..] else {
                return false;
            };
            let Ok(region) = op.region(0) else {
                return false;
            };
            let Some(block) = region.first_block() else {
                return false;
            };
            let Ok(input) = block.argument(0) else {
                return false;
            };
            let input: Value = input.into();
            op_name(compare) == "arith.cmpf"
                && compare.attribute("predicate").ok().and_then(integer_value) == Some(CMPF_UNO)
                && compare.operand(0).ok() == Some(input)
                && compare.operand(1).ok() == Some(input)
                && op_name(yield_) == "linalg.yield"
                && yield_.operand_count() == 1
                && compare
                    .result(0)
                    .ok()
                    .is_some_and(|r| yield_.operand(0).ok() == Some(r.into()))
        }
        "tosa.logical_not" => op.operand(0).ok().is_some_and(|equal| {
            use_count(equal) == 1
                && defining_op(equal).is_some_and(|e| {
                    op_name(&e) == "tosa.equal"
                        && e.operand(0).ok() == Some(x)
                        && e.operand(1).ok() == Some(x)
                })
        }),
        _ => false,
    }
}

/// The NaN guard `torch.onnx` writes after the softmax of
/// `scaled_dot_product_attention` (transformers' `sdpa` attention):
/// `where(isnan(P), 0, P)`, which turns the rows a mask leaves without
/// any key (all `-inf`, softmax NaN) into zeros, as `tcc.attention`
/// defines them. Returns `P` when `select` is that guard and `P`'s only
/// uses are the guard's.
fn nan_guard<'c>(select: OperationRef<'c, 'c>) -> Option<Value<'c, 'c>> {
    let (condition, zero, x) = (
        select.operand(0).ok()?,
        select.operand(1).ok()?,
        select.operand(2).ok()?,
    );
    if scalar_constant(zero) != Some(0.0) || !is_nan_of(condition, x) {
        return None;
    }
    // x is read by the guard's select and its IsNaN (once as a generic's
    // input or by the cast up to it, twice by `equal(x, x)`), and nothing
    // else.
    let expected = match defining_op(condition).map(|op| op_name(&op)) {
        Some(name) if name == "linalg.generic" => 2,
        _ => 3,
    };
    (use_count(x) == expected).then_some(x)
}

/// Whether `condition` is true exactly on the query rows where `mask`
/// (the additive mask the walk found, if any) is `-inf` at every key,
/// the rows `tcc.attention` makes 0: what ONNX `Attention`'s import
/// selects zeros on (`equal(reduce_sum(select(equal(mask, -inf), 0, 1)),
/// 0)` for a runtime mask, a constant of the rows for a constant one). A
/// constant all-false condition guards nothing and always matches.
fn guards_empty_rows<'c>(condition: Value<'c, 'c>, mask: Option<Value<'c, 'c>>) -> bool {
    if let Some(constant) = ConstTensor::of_value(condition) {
        if constant.element != ElementType::I1 {
            return false;
        }
        if constant.bytes.iter().all(|b| *b == 0) {
            return true;
        }
        // Compare with the constant mask's rows.
        let Some(mask) = mask.and_then(ConstTensor::of_value) else {
            return false;
        };
        let Some(values) = float_values(&mask) else {
            return false;
        };
        let columns = mask.shape.last().copied().unwrap_or(1).max(1) as usize;
        let mut rows_shape = mask.shape.clone();
        if let Some(last) = rows_shape.last_mut() {
            *last = 1;
        }
        if constant.shape != rows_shape {
            return false;
        }
        return values
            .chunks(columns)
            .zip(&constant.bytes)
            .all(|(row, flag)| row.iter().all(|v| *v == f32::NEG_INFINITY) == (*flag != 0));
    }
    let Some(mask) = mask else {
        return false;
    };
    let is_scalar = |v: Value, c: f32| scalar_constant(v) == Some(c);
    fn operands<'c>(op: &OperationRef<'c, 'c>, name: &str, n: usize) -> Option<Vec<Value<'c, 'c>>> {
        (op_name(op) == name && op.operand_count() == n).then(|| op.operands().collect())
    }
    (|| {
        let equal = defining_op(condition)?;
        let [count, zero] = operands(&equal, "tosa.equal", 2)?[..] else {
            return None;
        };
        let sum = defining_op(count)?;
        let rank = float_tensor(mask)?.1.len() as i64;
        let [allowed] = operands(&sum, "tosa.reduce_sum", 1)?[..] else {
            return None;
        };
        let axis = sum.attribute("axis").ok().and_then(integer_value)?;
        let select = defining_op(allowed)?;
        let [masked, none, one] = operands(&select, "tosa.select", 3)?[..] else {
            return None;
        };
        let compare = defining_op(masked)?;
        let [m, minus_inf] = operands(&compare, "tosa.equal", 2)?[..] else {
            return None;
        };
        Some(
            is_scalar(zero, 0.0)
                && axis == rank - 1
                && is_scalar(none, 0.0)
                && is_scalar(one, 1.0)
                && m == mask
                && is_scalar(minus_inf, f32::NEG_INFINITY),
        )
    })()
    .unwrap_or(false)
}

/// What the walk from the softmax back to the scores found.
#[derive(Clone)]
struct Chain<'c> {
    scale: f64,
    causal: bool,
    /// The additive mask, the shape of the scores where it is added, and
    /// the factor the scales applied after it multiply it by.
    mask: Option<(Value<'c, 'c>, Vec<i64>, f64)>,
    /// The storage type: every value of the chain is f32 or this type.
    storage: ElementType,
    /// A causal fill at or below this masks a key out.
    masked_out: f32,
}

impl Chain<'_> {
    fn new(storage: ElementType) -> Self {
        Self {
            scale: 1.0,
            causal: false,
            mask: None,
            storage,
            masked_out: if storage == ElementType::F16 {
                F16_MASKED_OUT
            } else {
                MASKED_OUT
            },
        }
    }
}

/// Walks from `value` (the softmax's input, or an intermediate of the
/// scores) back to the `tosa.matmul` of the scores: scalar scales,
/// reshapes that keep the last two dimensions, additive masks and causal
/// selections, in a half chain casts between f32 and the half type, each
/// intermediate used once. Returns the matmul.
fn walk_scores<'c>(
    value: Value<'c, 'c>,
    tail: [i64; 2],
    chain: &mut Chain<'c>,
) -> Option<OperationRef<'c, 'c>> {
    if use_count(value) != 1 {
        return None;
    }
    let op = defining_op(value)?;
    let shape = chain_shape(value, chain.storage)?;
    if shape.len() < 2 || shape[shape.len() - 2..] != tail {
        return None;
    }
    match op_name(&op).as_str() {
        "tosa.matmul" => float_matmul(op, chain.storage).then_some(op),
        "tosa.reshape" => walk_scores(op.operand(0).ok()?, tail, chain),
        "tosa.cast" => walk_scores(half_cast(op, chain.storage)?, tail, chain),
        "tosa.mul" if zero_shift(op) => {
            let (a, b) = (op.operand(0).ok()?, op.operand(1).ok()?);
            let (scores, factor) = match (scalar_constant(a), scalar_constant(b)) {
                (_, Some(c)) => (a, c),
                (Some(c), _) => (b, c),
                // A scale that is not a scalar: no attention.
                _ => return None,
            };
            // Walking back, a mask already found was added after this
            // scale: it stays as it is.
            chain.scale *= f64::from(factor);
            walk_scores(scores, tail, chain)
        }
        "tosa.add" => {
            let (a, b) = (op.operand(0).ok()?, op.operand(1).ok()?);
            // The scores are the operand the walk gets through; the other
            // is the mask.
            for (scores, mask) in [(a, b), (b, a)] {
                if scores.r#type() != value.r#type() {
                    continue;
                }
                let mut inner = chain.clone();
                let mask_shape = chain_shape(mask, chain.storage)?;
                let constant = ConstTensor::of_value(mask);
                let values = constant.as_ref().and_then(float_values);
                if let Some(values) = &values
                    && values.iter().all(|v| *v == 0.0)
                    && mask_shape
                        .iter()
                        .zip(&shape)
                        .all(|(m, s)| m == s || *m == 1)
                {
                    // A zero mask adds nothing.
                } else if let (Some(c), Some(values)) = (&constant, &values)
                    && !inner.causal
                    // The scales after it keep a masked-out fill masked.
                    && inner.scale > 0.0
                    && is_triangle(c, tail[0], tail[1], |at| {
                        let v = values[at];
                        if v == 0.0 {
                            Some(true)
                        } else if v <= inner.masked_out {
                            Some(false)
                        } else {
                            None
                        }
                    })
                {
                    inner.causal = true;
                } else {
                    if inner.mask.is_some() || mask_shape.len() != shape.len() {
                        continue;
                    }
                    if !mask_shape
                        .iter()
                        .zip(&shape)
                        .all(|(m, s)| m == s || *m == 1)
                    {
                        continue;
                    }
                    // The scales applied after the add scale the mask too.
                    inner.mask = Some((mask, shape.clone(), inner.scale));
                }
                if let Some(found) = walk_scores(scores, tail, &mut inner) {
                    *chain = inner;
                    return Some(found);
                }
            }
            None
        }
        "tosa.select" => {
            let condition = ConstTensor::of_value(op.operand(0).ok()?)?;
            if condition.element != ElementType::I1 || chain.causal || chain.scale <= 0.0 {
                return None;
            }
            let (on_true, on_false) = (op.operand(1).ok()?, op.operand(2).ok()?);
            let masked_out = |v: Value| scalar_constant(v).is_some_and(|c| c <= chain.masked_out);
            // where(triangle, scores, fill) or where(upper, fill, scores).
            let (scores, keep_when) = if masked_out(on_false) {
                (on_true, true)
            } else if masked_out(on_true) {
                (on_false, false)
            } else {
                return None;
            };
            if !is_triangle(&condition, tail[0], tail[1], |at| {
                Some((condition.bytes[at] != 0) == keep_when)
            }) {
                return None;
            }
            chain.causal = true;
            walk_scores(scores, tail, chain)
        }
        _ => None,
    }
}

/// Where a half chain computed in f32 stores its output: the cast of the
/// root's result (through single-use reshapes) to f16 or bf16, if that is
/// the result's one use.
fn output_cast<'c>(root: OperationRef<'c, 'c>) -> Option<(OperationRef<'c, 'c>, ElementType)> {
    let mut value = result(root)?;
    loop {
        if use_count(value) != 1 {
            return None;
        }
        let user = users(value).first().copied()?;
        match op_name(&user).as_str() {
            "tosa.reshape" if user.operand(0).ok() == Some(value) => value = result(user)?,
            "tosa.cast" => {
                let (element, _) = float_tensor(result(user)?)?;
                return matches!(element, ElementType::F16 | ElementType::BF16)
                    .then_some((user, element));
            }
            _ => return None,
        }
    }
}

/// Matches an attention ending at `matmul` (a `tosa.matmul(P, V)`).
///
/// The chain is f32 throughout, or is stored in one half type (f16 or
/// bf16): Q, K, V (and the mask) are that type or f32 casts up from it,
/// the output is that type or stored through a cast to it, and the
/// scores and probabilities between compute in that type or in f32, with
/// casts between the two (a half model's import computes each op in f32
/// and rounds to half between ops; exporters upcast the softmax). The
/// kernel computes it all in f32 from the half operands: exact or better.
pub fn match_attention<'c>(matmul: OperationRef<'c, 'c>) -> Option<AttentionMatch<'c>> {
    if op_name(&matmul) != "tosa.matmul" {
        return None;
    }
    let (element, _) = float_tensor(result(matmul)?)?;
    if element != ElementType::F32 {
        return match_stored(matmul, element, matmul);
    }
    // An f32 result stored as half: the half chain, else the f32 one.
    output_cast(matmul)
        .and_then(|(cast, half)| match_stored(matmul, half, cast))
        .or_else(|| match_stored(matmul, ElementType::F32, matmul))
}

/// [`match_attention`] for a chain stored as `storage`, whose output is
/// `output`'s result.
fn match_stored<'c>(
    matmul: OperationRef<'c, 'c>,
    storage: ElementType,
    output: OperationRef<'c, 'c>,
) -> Option<AttentionMatch<'c>> {
    if !float_matmul(matmul, storage) {
        return None;
    }
    let out = chain_shape(result(matmul)?, storage)?;
    let (p, value) = (matmul.operand(0).ok()?, matmul.operand(1).ok()?);
    let p_shape = chain_shape(p, storage)?;
    let (n, q_len, kv_len, dim) = (p_shape[0], p_shape[1], p_shape[2], out[2]);
    // P back to its softmax through reshapes that keep [Sq, Skv], casts of
    // a half chain and at most one NaN guard.
    let mut probabilities = p;
    let mut guarded = false;
    let mut empty_rows = None;
    // The value a NaN guard reads (its uses are the guard's).
    let mut guarded_value = None;
    let softmax = loop {
        if Some(probabilities) != guarded_value && use_count(probabilities) != 1 {
            return None;
        }
        let op = defining_op(probabilities)?;
        match op_name(&op).as_str() {
            "tcc.softmax" => break op,
            "tosa.reshape" if guarded_value.is_none() => probabilities = op.operand(0).ok()?,
            // A NaN guard reads the softmax itself, or its cast.
            "tosa.cast" => probabilities = half_cast(op, storage)?,
            "tosa.select" if !guarded => {
                guarded = true;
                if let Some(x) = nan_guard(op) {
                    // The guarded value's uses are the guard's (checked
                    // by `nan_guard`).
                    guarded_value = Some(x);
                    probabilities = x;
                    continue;
                }
                // Else an empty-row guard, checked against the mask once
                // the walk has found it.
                let (condition, zero, x) = (
                    op.operand(0).ok()?,
                    op.operand(1).ok()?,
                    op.operand(2).ok()?,
                );
                if scalar_constant(zero) != Some(0.0) {
                    return None;
                }
                empty_rows = Some(condition);
                probabilities = x;
            }
            _ => return None,
        }
    };
    let softmax_shape = chain_shape(result(softmax)?, storage)?;
    let rank = softmax_shape.len();
    let axis = softmax.attribute("axis").ok().and_then(integer_value)?;
    if rank < 2
        || normalize_axis(axis, rank) != Some(rank - 1)
        || softmax_shape[rank - 2..] != [q_len, kv_len]
    {
        return None;
    }
    let mut chain = Chain::new(storage);
    let scores = walk_scores(softmax.operand(0).ok()?, [q_len, kv_len], &mut chain)?;
    let (query, key) = (scores.operand(0).ok()?, scores.operand(1).ok()?);
    let (q_shape, k_shape) = (chain_shape(query, storage)?, chain_shape(key, storage)?);
    if q_shape != [n, q_len, dim] || k_shape != [n, dim, kv_len] {
        return None;
    }
    let mut scale = chain.scale;
    let query = in_storage(strip_operand(query, Some(&mut scale), storage), storage)?;
    let key_transposed = in_storage(strip_operand(key, Some(&mut scale), storage), storage)?;
    // A scale on V scales the output, not the scores: it stays.
    let value = in_storage(strip_operand(value, None, storage), storage)?;
    let (batch, heads) = if rank == 4 && softmax_shape[0] * softmax_shape[1] == n {
        (softmax_shape[0], softmax_shape[1])
    } else {
        (1, n)
    };
    // The mask as rank 4 over [B, H, Sq, Skv].
    let mask_value = chain.mask.as_ref().map(|m| m.0);
    let mask = match chain.mask {
        None => None,
        Some((mask, at, factor)) => {
            let mask_shape = float_tensor(mask)?.1;
            let leading = &mask_shape[..mask_shape.len() - 2];
            let tail = &mask_shape[mask_shape.len() - 2..];
            let shape = if at.len() == 4 && at[0] * at[1] == n && at[..2] == [batch, heads] {
                mask_shape.clone()
            } else if leading.iter().all(|&d| d == 1) {
                vec![1, 1, tail[0], tail[1]]
            } else if leading.iter().product::<i64>() == n {
                vec![batch, heads, tail[0], tail[1]]
            } else {
                return None;
            };
            Some((in_storage(mask, storage)?, shape, factor))
        }
    };
    if let Some(condition) = empty_rows
        && !guards_empty_rows(condition, mask_value)
    {
        return None;
    }
    let scale = scale as f32;
    if !scale.is_finite() {
        return None;
    }
    Some(AttentionMatch {
        query,
        key_transposed,
        value,
        sizes: [n, q_len, dim, kv_len],
        batch,
        heads,
        scale: f64::from(scale),
        causal: chain.causal,
        mask,
        root: matmul,
        output,
        storage,
    })
}

/// How many ops deep [`narrowed`] looks through a mask's computation.
const NARROWING_DEPTH: usize = 12;

/// Pointwise TOSA ops of broadcasting operands (no operand of another
/// shape, such as `tosa.mul`'s shift), which [`narrowed`] rebuilds at
/// their operands' smaller broadcast shape.
const BROADCASTING_POINTWISE: &[&str] = &[
    "tosa.select",
    "tosa.logical_and",
    "tosa.logical_or",
    "tosa.logical_xor",
    "tosa.logical_not",
    "tosa.add",
    "tosa.sub",
    "tosa.maximum",
    "tosa.minimum",
    "tosa.equal",
    "tosa.greater",
    "tosa.greater_equal",
    "tosa.cast",
];

/// The element of a constant whose elements are all the same, as bytes.
fn splat_bytes(constant: &ConstTensor) -> Option<&[u8]> {
    let size = constant.element.size_bytes();
    (constant.bytes.len() >= size
        && constant
            .bytes
            .chunks_exact(size)
            .all(|c| c == &constant.bytes[..size]))
    .then(|| &constant.bytes[..size])
}

/// A value of a smaller shape equal to `value` broadcast to its shape,
/// built before the attention, or `None` when there is none: an
/// attention's mask computed by pointwise ops from operands that do not
/// vary along some of its axes, which the importer wrote at the full
/// shape of the scores. transformers' masks for BERT-style encoders
/// (`And(all-true [1, 1, Sq, 1], padding [B, 1, 1, Skv])`, selected into
/// 0 / -inf) vary along the keys only, but reach the attention as
/// `[B, 1, Sq, Skv]`: the kernel then reads one mask element per score
/// from memory, where a mask of one row per batch is staged once per key
/// tile. A splat constant narrows to all-ones extents; a pointwise op to
/// the broadcast of its operands' narrowed shapes (`tosa.logical_and`
/// with an all-true operand and `tosa.logical_or` with an all-false one
/// to their other operand); a `tosa.tile` that repeats only unit
/// dimensions to its input.
fn narrowed<'c>(
    b: &TosaBuilder<'c>,
    value: Value<'c, 'c>,
    depth: usize,
) -> Result<'c, Option<Value<'c, 'c>>> {
    let Some(tensor) = StaticTensor::of(value.r#type()) else {
        return Ok(None);
    };
    if depth == 0 || tensor.shape.iter().all(|&d| d == 1) {
        return Ok(None);
    }
    let Some(op) = defining_op(value) else {
        return Ok(None);
    };
    let name = op_name(&op);
    let rank = tensor.shape.len();
    if let Some(constant) = ConstTensor::of_value(value) {
        let Some(element) = splat_bytes(&constant) else {
            return Ok(None);
        };
        let ty = StaticTensor {
            shape: vec![1; rank],
            element: tensor.element,
        }
        .to_type();
        let attribute: Attribute = if constant.element == ElementType::I1 {
            let i1 = melior::ir::r#type::IntegerType::new(b.context(), 1).into();
            melior::ir::attribute::DenseElementsAttribute::splat(
                ty,
                melior::ir::attribute::IntegerAttribute::new(i1, i64::from(element[0] != 0)).into(),
            )
            .into()
        } else {
            ConstTensor {
                shape: vec![1; rank],
                element: constant.element,
                bytes: element.to_vec(),
            }
            .to_attribute(ty)
            .map_err(|e| b.error(e))?
        };
        return b.constant(attribute, ty).map(Some);
    }
    if name == "tosa.tile" {
        let input = op.operand(0).map_err(|e| b.error(e.to_string()))?;
        let Some(source) = StaticTensor::of(input.r#type()) else {
            return Ok(None);
        };
        // A repeat of unit dimensions only is a broadcast.
        if source.shape.len() != rank
            || !source
                .shape
                .iter()
                .zip(&tensor.shape)
                .all(|(s, t)| s == t || *s == 1)
        {
            return Ok(None);
        }
        return Ok(Some(narrowed(b, input, depth - 1)?.unwrap_or(input)));
    }
    if !BROADCASTING_POINTWISE.contains(&name.as_str()) || op.result_count() != 1 {
        return Ok(None);
    }
    let mut operands = Vec::with_capacity(op.operand_count());
    for index in 0..op.operand_count() {
        let operand = op.operand(index).map_err(|e| b.error(e.to_string()))?;
        if StaticTensor::of(operand.r#type()).is_none_or(|t| t.shape.len() != rank) {
            return Ok(None);
        }
        operands.push(narrowed(b, operand, depth - 1)?.unwrap_or(operand));
    }
    // An identity operand drops out: and(true, x) = x, or(false, x) = x.
    let identity = match name.as_str() {
        "tosa.logical_and" => Some(1u8),
        "tosa.logical_or" => Some(0u8),
        _ => None,
    };
    if let (Some(identity), [x, y]) = (identity, operands.as_slice()) {
        let is_identity = |v: &Value<'c, 'c>| {
            ConstTensor::of_value(*v)
                .as_ref()
                .and_then(splat_bytes)
                .is_some_and(|e| (e[0] != 0) == (identity != 0))
        };
        if is_identity(x) {
            return Ok(Some(*y));
        }
        if is_identity(y) {
            return Ok(Some(*x));
        }
    }
    let mut shape = vec![1i64; rank];
    for operand in &operands {
        let Some(t) = StaticTensor::of(operand.r#type()) else {
            return Ok(None);
        };
        let Some(joined) = broadcast_shapes(&shape, &t.shape) else {
            return Ok(None);
        };
        shape = joined;
    }
    if shape == tensor.shape {
        return Ok(None);
    }
    let ty = StaticTensor {
        shape,
        element: tensor.element,
    }
    .to_type();
    b.insert(&name, &operands, ty, &[]).map(Some)
}

/// `operand` built in front of the attention: its value, or its constant
/// narrowed, with its moves replayed.
fn build_operand<'c>(b: &TosaBuilder<'c>, operand: &Operand<'c>) -> Result<'c, Value<'c, 'c>> {
    let mut value = match &operand.constant {
        None => operand.value,
        Some(constant) => {
            let ty = StaticTensor {
                shape: constant.shape.clone(),
                element: storage_type(b.context(), constant.element),
            }
            .to_type();
            let attribute = constant.to_attribute(ty).map_err(|e| b.error(e))?;
            b.constant(attribute, ty)?
        }
    };
    for op in &operand.moves {
        let moved = result(*op).ok_or_else(|| b.error("a move without a result"))?;
        value = match transpose_perm(*op) {
            Some(perm) => b.transpose(value, &perm)?,
            None => b.reshape(value, &b.tensor(moved)?.shape)?,
        };
    }
    Ok(value)
}

/// The MLIR type of a storage element type.
fn storage_type(context: &Context, element: ElementType) -> Type<'_> {
    match element {
        ElementType::F16 => Type::float16(context),
        ElementType::BF16 => Type::bfloat16(context),
        _ => Type::float32(context),
    }
}

/// Replaces a matched attention's output by a `tcc.attention` over
/// `[B, H, S, D]` reshapes of its operands, in the chain's storage type
/// (the ops it leaves unused are erased by the canonicalizer that
/// follows).
pub fn rewrite_attention<'c>(context: &'c Context, m: &AttentionMatch<'c>) -> Result<'c, ()> {
    let b = TosaBuilder::before(context, m.root)?;
    let [n, q_len, dim, kv_len] = m.sizes;
    let (batch, heads) = (m.batch, m.heads);
    let query = b.reshape(build_operand(&b, &m.query)?, &[batch, heads, q_len, dim])?;
    let key = b.reshape(build_operand(&b, &m.key_transposed)?, &[n, dim, kv_len])?;
    let key = b.reshape(b.transpose(key, &[0, 2, 1])?, &[batch, heads, kv_len, dim])?;
    let value = b.reshape(build_operand(&b, &m.value)?, &[batch, heads, kv_len, dim])?;
    let mut operands = vec![query, key, value];
    if let Some((mask, shape, factor)) = &m.mask {
        let mut mask = build_operand(&b, mask)?;
        if b.tensor(mask)?.shape != *shape {
            mask = b.reshape(mask, shape)?;
        } else if let Some(narrow) = narrowed(&b, mask, NARROWING_DEPTH)? {
            // The kernel broadcasts a mask's unit dimensions itself.
            mask = narrow;
        }
        if *factor != 1.0 {
            let element = storage_type(context, m.storage);
            mask = b.mul(mask, b.scalar(*factor, 4, element)?)?;
        }
        operands.push(mask);
    }
    let attention = b.insert(
        "tcc.attention",
        &operands,
        query.r#type(),
        &[
            (
                "scale",
                FloatAttribute::new(context, Type::float32(context), m.scale).into(),
            ),
            ("causal", BoolAttribute::new(context, m.causal).into()),
        ],
    )?;
    let old = result(m.output).ok_or_else(|| b.error("attention output without a result"))?;
    let flat = b.reshape(attention, &b.tensor(old)?.shape)?;
    crate::ir::util::replace_and_erase(m.output, old, flat);
    Ok(())
}
