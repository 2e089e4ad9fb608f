//! Quantized ONNX operators, imported as the computation they stand for
//! (the "QDQ" reading of a quantized model), with scales and zero points
//! that are constants or computed at run time.
//!
//! - `DequantizeLinear` is `(x - zero_point) * scale`: the subtraction in
//!   integers, the product in f32, as onnxruntime and ONNX's reference
//!   compute it. On a constant with constant parameters (the int8 weights
//!   of a QDQ model) it is evaluated here, so the following convolution or
//!   matmul sees f32 weights and takes tcc's usual kernels (and BatchNorm
//!   folding); otherwise it is one elementwise op that fusion merges into
//!   its neighbours. A float8/float4 input is decoded (its zero point is
//!   zero by the spec's rule and not read).
//! - `QuantizeLinear` is `saturate(round_half_even(x / scale) +
//!   zero_point)` with a true division, to int8/uint8, int16/uint16 and
//!   the 4- and 2-bit integers; to float8 it is `x / scale` encoded with
//!   the `saturate` attribute, to float4e2m1 `x / scale + zero_point`
//!   encoded (ONNX's reference, which onnxruntime follows).
//! - Parameters are per tensor (one value), per axis (a 1-D tensor along
//!   `axis`) or blocked (opset 21's `block_size`: a tensor of the input's
//!   rank with `ceil(d / block_size)` values along `axis`, each repeated
//!   over its block). Run-time parameters are reshaped (and for blocks
//!   tiled) to broadcast against the input inside the elementwise op.
//! - `QLinearConv` and `QLinearMatMul` compute as the spec defines them:
//!   the zero-point-shifted integer operands multiplied and summed (in
//!   f32, exact while partial sums stay below 2^24, and otherwise within
//!   f32 rounding), then requantized by `(a_scale * b_scale) / y_scale`
//!   (a constant multiplier when the scales are constants), the output
//!   zero point added, rounded half to even and saturated.
//! - `MatMulInteger` and `ConvInteger` give exact int32 results: the
//!   shifted operands are multiplied and summed in f32, which is exact
//!   while every partial sum stays below 2^24. The importer checks that
//!   bound from the reduction length and the operands' ranges (a
//!   constant's actual values, a run-time zero point's type range) and
//!   rejects the op where it does not hold.

use super::{conv, matmul, narrow, one};
use crate::front::onnx::dtype::{DType, TType};
use crate::front::onnx::emit::{Body, Sv, Val, broadcast_shapes};
use crate::front::onnx::error::{ImportError, Result, bail};
use crate::front::onnx::importer::Importer;
use crate::front::onnx::node::{Node, Value, tensor_value};
use crate::front::onnx::tensor::Const;

/// The largest integer below which every f32 sum of integers is exact.
const EXACT_F32_INTEGERS: f64 = (1u64 << 24) as f64;

/// How a scale or zero point lines up with the tensor it (de)quantizes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// One value for the whole tensor.
    Tensor,
    /// One value per slice along an axis (a 1-D parameter).
    Axis(usize),
    /// One value per `block` consecutive elements along `axis` (a
    /// parameter of the tensor's rank).
    Blocked { axis: usize, block: i64 },
}

impl Layout {
    /// The layout of a parameter of `param` shape for a tensor of `shape`
    /// (`axis` and `block` as the node's attributes say).
    fn of(
        node: &Node,
        what: &str,
        param: &[i64],
        shape: &[i64],
        axis: i64,
        block: i64,
    ) -> Result<Self> {
        let op = node.op();
        let numel: i64 = param.iter().product();
        if block == 0 && numel == 1 && param.len() <= 1 {
            return Ok(Layout::Tensor);
        }
        if block < 0 {
            bail!("{op}'s block_size {block} is negative");
        }
        let axis = node.axis(axis, shape.len(), "axis")?;
        if block == 0 {
            if param.len() != 1 || param[0] != shape[axis] {
                bail!(
                    "{op}: a {what} of shape {param:?} for a tensor of shape {shape:?} along axis \
                     {axis} (per tensor: one value; per axis: {} values)",
                    shape[axis]
                );
            }
            return Ok(Layout::Axis(axis));
        }
        let blocks = (shape[axis] + block - 1) / block;
        let fits = param.len() == shape.len()
            && param
                .iter()
                .zip(shape)
                .enumerate()
                .all(|(i, (&p, &d))| if i == axis { p == blocks } else { p == d });
        if !fits {
            bail!(
                "{op}: a {what} of shape {param:?} for blocks of {block} along axis {axis} of a \
                 tensor of shape {shape:?} (it must have the tensor's shape with {blocks} along \
                 the axis)"
            );
        }
        Ok(Layout::Blocked { axis, block })
    }

    /// The flat index into a parameter of `param` shape of element `index`
    /// of a tensor of `shape`.
    fn slot(self, param: &[i64], shape: &[i64], index: usize) -> usize {
        let coordinate = |axis: usize| {
            let inner: i64 = shape[axis + 1..].iter().product();
            (index as i64 / inner) % shape[axis]
        };
        match self {
            Layout::Tensor => 0,
            Layout::Axis(axis) => coordinate(axis) as usize,
            Layout::Blocked { axis, block } => {
                let mut flat = 0;
                for (d, &extent) in param.iter().enumerate() {
                    let mut c = coordinate(d);
                    if d == axis {
                        c /= block;
                    }
                    flat = flat * extent + c;
                }
                flat as usize
            }
        }
    }

    /// `param` as a value that numpy-broadcasts against a tensor of
    /// `shape`: one element of the tensor's rank, `1 x .. x C x .. x 1`
    /// along the axis, or blocks repeated (tiled) and cut to the axis.
    fn broadcast(self, imp: &mut Importer, param: &Value, shape: &[i64]) -> Result<Val> {
        let v = imp.val(param)?;
        let rank = shape.len();
        Ok(match self {
            Layout::Tensor => imp.e.reshape(&v, &vec![1; rank]),
            Layout::Axis(axis) => {
                let mut to = vec![1; rank];
                to[axis] = shape[axis];
                imp.e.reshape(&v, &to)
            }
            Layout::Blocked { axis, block } => {
                let p = v.shape().to_vec();
                let mut split = p.clone();
                split.insert(axis + 1, 1);
                let split = imp.e.reshape(&v, &split);
                let mut multiples = vec![1; rank + 1];
                multiples[axis + 1] = block;
                let tiled = imp.e.tile(&split, &multiples);
                let mut merged = p;
                merged[axis] *= block;
                let merged = imp.e.reshape(&tiled, &merged);
                imp.e.slice_axis(&merged, axis, 0, shape[axis])
            }
        })
    }
}

/// A scale and zero point as a node gives them.
struct Params<'v> {
    scale: Option<&'v Value>,
    zero: Option<&'v Value>,
    layout: Layout,
}

impl<'v> Params<'v> {
    /// The scale (input `scale_at`, when `Some`) and zero point (input
    /// `zero_at`) of `node` for a tensor of `shape`.
    fn read(
        node: &'v Node,
        scale_at: Option<usize>,
        zero_at: usize,
        shape: &[i64],
        axis: i64,
    ) -> Result<Self> {
        let op = node.op();
        let scale = match scale_at {
            Some(at) => Some(node.input(at)?),
            None => None,
        };
        let zero = node.opt(zero_at);
        if let Some(s) = scale {
            if s.dtype() != DType::F32 {
                bail!(
                    "{op}'s scale is {}, not float (float16 and bfloat16 compute in float)",
                    s.dtype()
                );
            }
            if let Value::Const(c) = s
                && let Some(bad) = c.f64s().into_iter().find(|v| !v.is_finite() || *v == 0.0)
            {
                bail!("{op}'s scale {bad} is not a finite non-zero number");
            }
        }
        let block = node.int("block_size", 0)?;
        let layout = match (scale, zero) {
            (Some(s), _) => Layout::of(node, "scale", &s.shape(), shape, axis, block)?,
            (None, Some(z)) => Layout::of(node, "zero point", &z.shape(), shape, axis, block)?,
            (None, None) => Layout::Tensor,
        };
        if let (Some(s), Some(z)) = (scale, zero) {
            let (ss, zs) = (s.shape(), z.shape());
            let count = |d: &[i64]| d.iter().product::<i64>();
            if ss != zs && !(count(&ss) == 1 && count(&zs) == 1) {
                bail!("{op}: a scale of shape {ss:?} with a zero point of shape {zs:?}");
            }
        }
        Ok(Params {
            scale,
            zero,
            layout,
        })
    }

    /// The quantized type: the zero point's, else `default`.
    fn dtype(&self, default: DType) -> DType {
        self.zero.map_or(default, Value::dtype)
    }
}

/// The integer range of a quantized type, if it is an integer type.
fn int_range(dtype: DType) -> Option<(i64, i64)> {
    Some(match dtype {
        DType::I8 => (-128, 127),
        DType::U8 => (0, 255),
        DType::I16 => (-32768, 32767),
        DType::U16 => (0, 65535),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        DType::I4 => (-8, 7),
        DType::U4 => (0, 15),
        DType::I2 => (-2, 1),
        DType::U2 => (0, 3),
        _ => return None,
    })
}

/// The i64 value of `v`, of the (widened, at most 32-bit) integer type
/// `dtype`.
fn int64_of(b: &mut Body, v: Sv, dtype: DType) -> Sv {
    let ext = if dtype.is_unsigned() {
        "arith.extui"
    } else {
        "arith.extsi"
    };
    b.cast(ext, v, DType::I64)
}

/// The zero-point-shifted value `x - zero` times `scale` (1 when absent)
/// in f32: evaluated here when every operand is a constant integer
/// tensor, else one elementwise op.
fn dequantize(imp: &mut Importer, x: &Value, p: &Params) -> Result<Value> {
    let dtype = x.dtype();
    let shape = x.shape();
    if int_range(dtype).is_none() && !dtype.is_minifloat() {
        bail!(
            "dequantizing a {dtype} tensor (the 8-, 16- and 32-bit, 4- and 2-bit integer, float8 and float4 types are supported)"
        );
    }
    if let Some(zero) = p.zero
        && !dtype.is_minifloat()
        && zero.dtype() != dtype
    {
        bail!(
            "dequantizing a {dtype} tensor with a {} zero point",
            zero.dtype()
        );
    }
    let zero = p.zero.filter(|_| !dtype.is_minifloat());
    if let Value::Const(c) = x
        && !dtype.is_minifloat()
        && p.scale.is_none_or(|s| s.as_const().is_some())
        && zero.is_none_or(|z| z.as_const().is_some())
    {
        let scale = p.scale.and_then(Value::as_const);
        let zero = zero.and_then(Value::as_const);
        let values: Vec<f64> = (0..c.numel())
            .map(|i| {
                let z = zero.map_or(0, |z| z.i64_at(p.layout.slot(&z.shape, &shape, i)));
                let shifted = (c.i64_at(i) - z) as f32;
                let s = scale.map_or(1.0, |s| s.f64_at(p.layout.slot(&s.shape, &shape, i)) as f32);
                (shifted * s) as f64
            })
            .collect();
        return Ok(Value::constant(Const::from_f64(DType::F32, shape, &values)));
    }
    let xv = imp.val(x)?;
    let xv = narrow::widen(imp, &xv);
    let mut inputs = vec![xv.clone()];
    let integer = xv.dtype() != DType::F32;
    // The positions of the zero point and the scale among the inputs.
    let mut zero_at = None;
    if integer && let Some(z) = zero {
        let zv = p.layout.broadcast(imp, z, &shape)?;
        zero_at = Some(inputs.len());
        inputs.push(narrow::widen(imp, &zv));
    }
    let mut scale_at = None;
    match p.scale {
        Some(s) => {
            scale_at = Some(inputs.len());
            inputs.push(p.layout.broadcast(imp, s, &shape)?);
        }
        // A float input without a scale is already the result.
        None if !integer => return Ok(tensor_value(xv)),
        None => {}
    }
    let dtypes: Vec<DType> = inputs.iter().map(Val::dtype).collect();
    let refs: Vec<&Val> = inputs.iter().collect();
    let ty = TType::new(DType::F32, shape);
    Ok(tensor_value(imp.e.map(&refs, ty, &|b, a| {
        let mut value = a[0];
        if integer {
            let mut shifted = int64_of(b, a[0], dtypes[0]);
            if let Some(z) = zero_at {
                let z64 = int64_of(b, a[z], dtypes[z]);
                shifted = b.op("arith.subi", &[shifted, z64]);
            }
            value = b.cast("arith.sitofp", shifted, DType::F32);
        }
        match scale_at {
            Some(s) => b.op("arith.mulf", &[value, a[s]]),
            None => value,
        }
    })))
}

/// Rounds the f32 `y` (already divided by its scale) half to even, adds
/// the zero point (`zero`, broadcast, widened), saturates to `target`'s
/// range and stores it as `target` (int8/uint8 in `i8`, int16/uint16 in
/// `i16`, the 4- and 2-bit integers one a byte).
fn round_to_int(imp: &mut Importer, y: &Val, zero: Option<&Val>, target: DType) -> Result<Val> {
    let Some((lo, hi)) = int_range(target) else {
        bail!("{target} is not an integer quantized type");
    };
    if target == DType::I32 {
        bail!(
            "quantizing to int32 is not supported (the 8-, 16-, 4- and 2-bit integer, float8 and float4 types are)"
        );
    }
    let zero_dtype = zero.map(Val::dtype);
    let mut inputs = vec![y];
    if let Some(z) = zero {
        inputs.push(z);
    }
    let ty = y.ty.with_dtype(target);
    Ok(imp.e.map(&inputs, ty, &|b, a| {
        let n = b.op("math.roundeven", &[a[0]]);
        let sum = match zero_dtype {
            Some(dtype) => {
                let z = int64_of(b, a[1], dtype);
                let zf = b.cast("arith.sitofp", z, DType::F32);
                b.op("arith.addf", &[n, zf])
            }
            None => n,
        };
        let lo = b.constant(lo as f64, DType::F32);
        let hi = b.constant(hi as f64, DType::F32);
        let c = b.op("arith.maximumf", &[sum, lo]);
        let cl = b.op("arith.minimumf", &[c, hi]);
        let i = b.cast("arith.fptosi", cl, DType::I32);
        b.cast("arith.trunci", i, target)
    }))
}

/// `QuantizeLinear`'s computation on the f32 `x` with the parameters `p`
/// to `target`.
fn quantize(imp: &mut Importer, x: &Val, p: &Params, target: DType, saturate: bool) -> Result<Val> {
    if x.dtype() != DType::F32 {
        bail!("quantizing a {} tensor (float is supported)", x.dtype());
    }
    let shape = x.shape().to_vec();
    let scale = match p.scale {
        Some(s) => p.layout.broadcast(imp, s, &shape)?,
        None => bail!("QuantizeLinear needs a scale"),
    };
    let divided = imp.e.map(&[x, &scale], x.ty.clone(), &|b, a| {
        b.op("arith.divf", &[a[0], a[1]])
    });
    let zero = match p.zero {
        Some(z) => {
            let zv = p.layout.broadcast(imp, z, &shape)?;
            Some(narrow::widen(imp, &zv))
        }
        None => None,
    };
    if target.is_minifloat() {
        // float8: the zero point is zero (the spec's rule) and not read;
        // float4e2m1: added before the encoding, as the reference does.
        let y = match zero {
            Some(z) if target == DType::F4E2M1 => {
                imp.e.map(&[&divided, &z], x.ty.clone(), &|b, a| {
                    b.op("arith.addf", &[a[0], a[1]])
                })
            }
            _ => divided,
        };
        return narrow::encode(imp, &y, target, saturate);
    }
    round_to_int(imp, &divided, zero.as_ref(), target)
}

/// The float type an attribute names (opset 23's `precision` and
/// `output_dtype`): `None` when absent or 0 (the scale's type), float, or
/// for `output_dtype` the half types; other types are an error.
fn float_attribute(node: &Node, attribute: &str, halves: bool) -> Result<Option<DType>> {
    match node.int_opt(attribute)? {
        None | Some(0) => Ok(None),
        Some(1) => Ok(Some(DType::F32)),
        Some(10) if halves => Ok(Some(DType::F16)),
        Some(16) if halves => Ok(Some(DType::BF16)),
        Some(code) => bail!(
            "{} with {attribute} = {} is not supported (tcc computes it in float)",
            node.op(),
            DType::onnx_code_name(code as i32)
        ),
    }
}

/// `DequantizeLinear(x, scale, zero_point)`.
pub fn dequantize_linear(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    // Opset 23: `output_dtype` picks the output type (default: the
    // scale's; a half scale's result is rounded from f32 by the half
    // wrapper).
    let output = float_attribute(node, "output_dtype", true)?;
    let p = Params::read(node, Some(1), 2, &x.shape(), node.int("axis", 1)?)?;
    let y = dequantize(imp, x, &p)?;
    match output {
        Some(half @ (DType::F16 | DType::BF16)) => {
            let y = imp.val(&y)?;
            one(tensor_value(imp.e.cast(&y, half)))
        }
        _ => one(y),
    }
}

/// `QuantizeLinear(x, scale, zero_point)`.
pub fn quantize_linear(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    // Opset 23: `precision` is the type the division by the scale is
    // computed in (default: the scale's, float here).
    float_attribute(node, "precision", false)?;
    let default = match node.int_opt("output_dtype")? {
        Some(code) if code != 0 => DType::from_onnx(code as i32).ok_or_else(|| {
            ImportError::new(format!(
                "QuantizeLinear to {} is not supported",
                DType::onnx_code_name(code as i32)
            ))
        })?,
        _ => DType::U8,
    };
    let p = Params::read(node, Some(1), 2, &x.shape(), node.int("axis", 1)?)?;
    let target = p.dtype(default);
    if int_range(target).is_none() && !target.is_minifloat() {
        bail!(
            "QuantizeLinear to {target} is not supported (it quantizes to the 8-, 16-, 4- and 2-bit integer, float8 and float4 types)"
        );
    }
    let saturate = node.int("saturate", 1)? != 0;
    let x = imp.val(x)?;
    one(tensor_value(quantize(imp, &x, &p, target, saturate)?))
}

/// Runs the float importer of `op_node`'s op on `inputs` (the node's own
/// attributes apply).
fn float_op(
    imp: &mut Importer,
    node: &Node,
    inputs: Vec<Option<Value>>,
    importer: fn(&mut Importer, &Node) -> Result<Vec<Value>>,
) -> Result<Val> {
    let float_node = Node {
        proto: node.proto,
        opset: node.opset,
        inputs,
    };
    let out = importer(imp, &float_node)?;
    match out.into_iter().next() {
        Some(value) => imp.val(&value),
        None => bail!("{} produced no result", node.op()),
    }
}

/// A scale and the shape it takes (right-aligned) against the integer
/// result it multiplies: per tensor one value, per axis its values on the
/// result's dimension `from_end` places before the last.
fn scale_factor(scale: &Value, layout: Layout, from_end: usize) -> (Value, Vec<i64>) {
    let mut shape = vec![1; from_end + 1];
    if let Layout::Axis(_) = layout {
        shape[0] = scale.shape().iter().product();
    }
    (scale.clone(), shape)
}

/// The flat index into an operand of `dims` (of the rank of `out`,
/// broadcast against it) of element `index` of `out`.
fn broadcast_index(out: &[i64], dims: &[i64], index: usize) -> usize {
    let (mut rest, mut flat, mut weight) = (index as i64, 0i64, 1i64);
    for d in (0..out.len()).rev() {
        let coordinate = rest % out[d];
        rest /= out[d];
        if dims[d] != 1 {
            flat += coordinate * weight;
        }
        weight *= dims[d];
    }
    flat as usize
}

/// Requantizes the exact integer result `c` (f32) of a QLinear op:
/// `saturate(round(c * (s1 * s2 / sy)) + zy)` to `target`, the factors
/// `(scale, shape)` right-aligned against `c`. The multiplier is
/// evaluated here when the scales are constants (in f32, as the reference
/// computes it for float scales).
fn requantize(
    imp: &mut Importer,
    c: &Val,
    factors: [(Value, Vec<i64>); 2],
    y_scale: &Value,
    y_zero: Option<&Value>,
    target: DType,
) -> Result<Val> {
    let rank = c.rank();
    let as_rank = |shape: &[i64]| {
        let mut full = vec![1; rank.saturating_sub(shape.len())];
        full.extend_from_slice(shape);
        full
    };
    let [(s1, d1), (s2, d2)] = factors;
    let (d1, d2) = (as_rank(&d1), as_rank(&d2));
    let out_shape = broadcast_shapes(&d1, &d2).ok_or_else(|| {
        ImportError::new(format!(
            "scales of shapes {d1:?} and {d2:?} do not broadcast"
        ))
    })?;
    if y_scale.shape().iter().product::<i64>() != 1 {
        bail!(
            "the output scale must be one value (per tensor), not of shape {:?}",
            y_scale.shape()
        );
    }
    let multiplier = match (s1.as_const(), s2.as_const(), y_scale.as_const()) {
        (Some(a), Some(b), Some(y)) => {
            let sy = y.f64_at(0) as f32;
            let count: i64 = out_shape.iter().product();
            let values: Vec<f64> = (0..count as usize)
                .map(|i| {
                    let at = |c: &Const, dims: &[i64]| {
                        c.f64_at(broadcast_index(&out_shape, dims, i)) as f32
                    };
                    ((at(a, &d1) * at(b, &d2)) / sy) as f64
                })
                .collect();
            let m = Const::from_f64(DType::F32, out_shape.clone(), &values);
            imp.e.constant(&m, "requant_multiplier")?
        }
        _ => {
            let v1 = imp.val(&s1)?;
            let v1 = imp.e.reshape(&v1, &d1);
            let v2 = imp.val(&s2)?;
            let v2 = imp.e.reshape(&v2, &d2);
            let vy = imp.val(y_scale)?;
            let vy = imp.e.reshape(&vy, &vec![1; rank]);
            imp.e.map(
                &[&v1, &v2, &vy],
                TType::new(DType::F32, out_shape),
                &|b, a| {
                    let p = b.op("arith.mulf", &[a[0], a[1]]);
                    b.op("arith.divf", &[p, a[2]])
                },
            )
        }
    };
    let scaled = imp.e.map(&[c, &multiplier], c.ty.clone(), &|b, a| {
        b.op("arith.mulf", &[a[0], a[1]])
    });
    let zero = match y_zero {
        Some(z) => {
            if z.shape().iter().product::<i64>() != 1 {
                bail!(
                    "the output zero point must be one value (per tensor), not of shape {:?}",
                    z.shape()
                );
            }
            let zv = imp.val(z)?;
            let zv = imp.e.reshape(&zv, &vec![1; rank]);
            Some(narrow::widen(imp, &zv))
        }
        None => None,
    };
    // round(c * m + zy) = round(c * m) + zy for an integer zy.
    round_to_int(imp, &scaled, zero.as_ref(), target)
}

/// The zero-point-shifted integer operand (f32) of a QLinear or integer
/// op, and the largest magnitude its elements can have.
fn shifted_operand(imp: &mut Importer, node: &Node, x: &Value, p: &Params) -> Result<(Value, f64)> {
    let op = node.op();
    let dtype = x.dtype();
    let Some((lo, hi)) = int_range(dtype).filter(|_| matches!(dtype, DType::I8 | DType::U8)) else {
        bail!("{op} of a {dtype} operand (int8 and uint8 are supported)");
    };
    let shape = x.shape();
    let bound = match (x, p.zero) {
        (Value::Const(c), None) => c
            .i64s()
            .into_iter()
            .map(|v| v.abs() as f64)
            .fold(0.0, f64::max),
        (Value::Const(c), Some(Value::Const(z))) => (0..c.numel())
            .map(|i| (c.i64_at(i) - z.i64_at(p.layout.slot(&z.shape, &shape, i))).abs() as f64)
            .fold(0.0, f64::max),
        (_, Some(Value::Const(z))) => z
            .i64s()
            .into_iter()
            .map(|z| (z - lo).max(hi - z) as f64)
            .fold(0.0, f64::max),
        (_, None) => lo.abs().max(hi) as f64,
        // A zero point in the type's range.
        (_, Some(Value::Tensor(_))) => (hi - lo) as f64,
    };
    let unscaled = Params {
        scale: None,
        zero: p.zero,
        layout: p.layout,
    };
    Ok((dequantize(imp, x, &unscaled)?, bound))
}

/// `QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B)`.
pub fn qlinear_conv(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (x, w) = (node.input(0)?, node.input(3)?);
    let xp = Params::read(node, Some(1), 2, &x.shape(), 1)?;
    if xp.layout != Layout::Tensor {
        bail!(
            "QLinearConv with a per-channel input scale is not supported (the spec's is per tensor)"
        );
    }
    let wp = Params::read(node, Some(4), 5, &w.shape(), 0)?;
    let yp = Params::read(node, Some(6), 7, &[], 0)?;
    let (x_int, _) = shifted_operand(imp, node, x, &xp)?;
    let (w_int, _) = shifted_operand(imp, node, w, &wp)?;
    // The int32 bias is added to the integer sums.
    let bias = match node.opt(8) {
        None => None,
        Some(b) if b.dtype() != DType::I32 => {
            bail!("QLinearConv's bias is {}, not int32", b.dtype())
        }
        Some(Value::Const(b)) => Some(Value::constant(b.cast(DType::F32))),
        Some(b @ Value::Tensor(_)) => {
            let bv = imp.val(b)?;
            Some(tensor_value(imp.e.map(
                &[&bv],
                bv.ty.with_dtype(DType::F32),
                &|b, a| b.cast("arith.sitofp", a[0], DType::F32),
            )))
        }
    };
    let c = float_op(imp, node, vec![Some(x_int), Some(w_int), bias], conv::conv)?;
    let spatial = c.rank().saturating_sub(2);
    let sx = scale_factor(xp.scale.expect("a scale"), Layout::Tensor, 0);
    let sw = scale_factor(wp.scale.expect("a scale"), wp.layout, spatial);
    let target = yp.dtype(x.dtype());
    one(tensor_value(requantize(
        imp,
        &c,
        [sx, sw],
        node.input(6)?,
        yp.zero,
        target,
    )?))
}

/// `QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)`.
pub fn qlinear_matmul(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(3)?);
    let (rank_a, rank_b) = (a.rank(), b.rank());
    if rank_a < 2 || rank_b < 2 {
        bail!("QLinearMatMul of a {rank_a}-D and a {rank_b}-D operand (2-D or more are supported)");
    }
    // Per row of a, per column of b.
    let ap = Params::read(node, Some(1), 2, &a.shape(), rank_a as i64 - 2)?;
    let bp = Params::read(node, Some(4), 5, &b.shape(), rank_b as i64 - 1)?;
    let yp = Params::read(node, Some(6), 7, &[], 0)?;
    let (a_int, _) = shifted_operand(imp, node, a, &ap)?;
    let (b_int, _) = shifted_operand(imp, node, b, &bp)?;
    let c = float_op(imp, node, vec![Some(a_int), Some(b_int)], matmul::matmul)?;
    let sa = scale_factor(ap.scale.expect("a scale"), ap.layout, 1);
    let sb = scale_factor(bp.scale.expect("a scale"), bp.layout, 0);
    let target = yp.dtype(a.dtype());
    one(tensor_value(requantize(
        imp,
        &c,
        [sa, sb],
        node.input(6)?,
        yp.zero,
        target,
    )?))
}

/// Checks that an integer op's f32 sums are exact: `terms` products of at
/// most `a` and `b` in magnitude stay below 2^24.
fn check_exact(node: &Node, terms: i64, a: f64, b: f64) -> Result<()> {
    let bound = terms as f64 * a * b;
    if bound >= EXACT_F32_INTEGERS {
        bail!(
            "{}: sums of {terms} products of up to {a} x {b} may reach {bound}, past 2^24, \
             where tcc's f32 accumulation of integer products stops being exact",
            node.op()
        );
    }
    Ok(())
}

/// The exact f32 integer result `y` as int32.
fn to_int32(imp: &mut Importer, y: &Val) -> Value {
    let ty = y.ty.with_dtype(DType::I32);
    tensor_value(
        imp.e
            .map(&[y], ty, &|b, a| b.cast("arith.fptosi", a[0], DType::I32)),
    )
}

/// `MatMulInteger(a, b, a_zero_point, b_zero_point)`: int32 products.
pub fn matmul_integer(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    let (rank_a, rank_b) = (a.rank(), b.rank());
    if rank_a == 0 || rank_b == 0 {
        bail!("MatMulInteger of a scalar");
    }
    let k = a.shape()[rank_a - 1];
    let ap = Params::read(node, None, 2, &a.shape(), rank_a.saturating_sub(2) as i64)?;
    let bp = Params::read(node, None, 3, &b.shape(), rank_b as i64 - 1)?;
    let (a_f, a_max) = shifted_operand(imp, node, a, &ap)?;
    let (b_f, b_max) = shifted_operand(imp, node, b, &bp)?;
    check_exact(node, k, a_max, b_max)?;
    let y = float_op(imp, node, vec![Some(a_f), Some(b_f)], matmul::matmul)?;
    one(to_int32(imp, &y))
}

/// `ConvInteger(x, w, x_zero_point, w_zero_point)`: an int32 convolution.
pub fn conv_integer(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (x, w) = (node.input(0)?, node.input(1)?);
    let ws = w.shape();
    if ws.len() < 3 {
        bail!("ConvInteger with weights of shape {ws:?}");
    }
    let xp = Params::read(node, None, 2, &x.shape(), 1)?;
    if xp.layout != Layout::Tensor {
        bail!(
            "ConvInteger with a per-channel input zero point is not supported (the spec's is per tensor)"
        );
    }
    let wp = Params::read(node, None, 3, &ws, 0)?;
    let terms: i64 = ws[1..].iter().product();
    let (x_f, x_max) = shifted_operand(imp, node, x, &xp)?;
    let (w_f, w_max) = shifted_operand(imp, node, w, &wp)?;
    check_exact(node, terms, x_max, w_max)?;
    let y = float_op(imp, node, vec![Some(x_f), Some(w_f)], conv::conv)?;
    one(to_int32(imp, &y))
}
/// `DynamicQuantizeLinear(x) -> (y, y_scale, y_zero_point)`: uint8
/// quantization with the scale and zero point computed from the data at
/// run time, as the spec defines them: the range `[min(0, min x), max(0,
/// max x)]` over 255 steps, the zero point `saturate(round(-min / scale))`,
/// then `y = saturate(round(x / scale) + zero_point)` (rounding half to
/// even, the division a true one).
pub fn dynamic_quantize_linear(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    if input.dtype() != DType::F32 {
        bail!(
            "DynamicQuantizeLinear's input must be float, not {}",
            input.dtype()
        );
    }
    let x = imp.val(input)?;
    let flat = imp.e.reshape(&x, &[x.ty.numel()]);
    let low = imp.e.reduce_axes("tosa.reduce_min", &flat, &[0]);
    let high = imp.e.reduce_axes("tosa.reduce_max", &flat, &[0]);
    let scalar = TType::new(DType::F32, vec![1]);
    let scale = imp.e.map(&[&low, &high], scalar.clone(), &|b, a| {
        let zero = b.constant(0.0, DType::F32);
        let steps = b.constant(255.0, DType::F32);
        let lo = b.op("arith.minimumf", &[a[0], zero]);
        let hi = b.op("arith.maximumf", &[a[1], zero]);
        let range = b.op("arith.subf", &[hi, lo]);
        b.op("arith.divf", &[range, steps])
    });
    // The zero point as a float (an integer in [0, 255]).
    let zero = imp.e.map(&[&low, &scale], scalar, &|b, a| {
        let zero = b.constant(0.0, DType::F32);
        let top = b.constant(255.0, DType::F32);
        let lo = b.op("arith.minimumf", &[a[0], zero]);
        let q = b.op("arith.divf", &[lo, a[1]]);
        let n = b.op("arith.negf", &[q]);
        let rn = b.op("math.roundeven", &[n]);
        let c = b.op("arith.maximumf", &[rn, zero]);
        b.op("arith.minimumf", &[c, top])
    });
    let y = imp
        .e
        .map(&[&x, &scale, &zero], x.ty.with_dtype(DType::U8), &|b, a| {
            let q = b.op("arith.divf", &[a[0], a[1]]);
            let n = b.op("math.roundeven", &[q]);
            let z = b.op("arith.addf", &[n, a[2]]);
            let lo = b.constant(0.0, DType::F32);
            let hi = b.constant(255.0, DType::F32);
            let c = b.op("arith.maximumf", &[z, lo]);
            let s = b.op("arith.minimumf", &[c, hi]);
            b.cast("arith.fptoui", s, DType::U8)
        });
    let zero_point = imp
        .e
        .map(&[&zero], TType::new(DType::U8, vec![1]), &|b, a| {
            b.cast("arith.fptoui", a[0], DType::U8)
        });
    let scale = imp.e.reshape(&scale, &[]);
    let zero_point = imp.e.reshape(&zero_point, &[]);
    Ok(vec![
        tensor_value(y),
        tensor_value(scale),
        tensor_value(zero_point),
    ])
}
