//! Quantized ONNX operators, imported as the float computation they
//! stand for (the "QDQ" reading of a quantized model).
//!
//! - `DequantizeLinear` is `(x - zero_point) * scale`. On a constant (the
//!   int8 weights of a QDQ model) it is evaluated here, so the following
//!   convolution or matmul sees f32 weights and takes tcc's usual kernels
//!   (and BatchNorm folding); on a run-time tensor it is one elementwise
//!   op that fusion merges into its neighbours.
//! - `QuantizeLinear` is `saturate(round_half_even(x / scale) +
//!   zero_point)`, as onnxruntime computes it (a true division, not a
//!   multiplication by the reciprocal), to int8 or uint8. uint8 tensors
//!   inside the graph are carried as the bits of `i8` (converted with
//!   `fptoui`/`uitofp`); they cannot be model inputs or outputs.
//! - `QLinearConv` and `QLinearMatMul` are dequantize, the float op,
//!   quantize. The products are exact in f32; the sums are rounded as any
//!   f32 convolution's, so an output can differ from onnxruntime's
//!   integer arithmetic by one quantization step where the exact result
//!   lies on a rounding boundary.
//! - `MatMulInteger` and `ConvInteger` give exact int32 results: the
//!   zero-point-shifted operands are multiplied and summed in f32, which
//!   is exact while every partial sum stays below 2^24. The importer
//!   checks that bound from the reduction length and the operands' ranges
//!   (a constant's actual values) and rejects the op where it does not
//!   hold.
//!
//! Scales and zero points must be constants: tcc quantizes with
//! parameters known at compile time. Per-tensor and per-axis parameters
//! are supported; blocked quantization (opset 21's `block_size`) is not.

use super::{conv, matmul, one};
use crate::front::onnx::dtype::{DType, TType};
use crate::front::onnx::emit::{Val, float_literal};
use crate::front::onnx::error::{ImportError, Result, bail};
use crate::front::onnx::importer::Importer;
use crate::front::onnx::node::{Node, Value, tensor_value};
use crate::front::onnx::tensor::Const;

/// The largest integer below which every f32 sum of integers is exact.
const EXACT_F32_INTEGERS: f64 = (1u64 << 24) as f64;

/// The quantization parameters of one tensor.
struct QuantParams {
    /// One scale per tensor or per slice along `axis`.
    scales: Vec<f64>,
    zero_points: Vec<i64>,
    /// The axis the parameters vary along (`None`: per tensor).
    axis: Option<usize>,
    /// The quantized element type (int8, uint8 or int32).
    dtype: DType,
}

impl QuantParams {
    /// Reads the scale (input `scale_at`) and zero point (`scale_at + 1`)
    /// of `node` for a tensor of rank `rank` and shape `shape`. `default`
    /// is the quantized type when the zero point is absent.
    fn read(
        node: &Node,
        scale_at: usize,
        shape: &[i64],
        axis_attribute: i64,
        default: DType,
    ) -> Result<Self> {
        let op = node.op();
        for (at, what) in [(scale_at, "scale"), (scale_at + 1, "zero point")] {
            if let Some(Value::Tensor(_)) = node.opt(at) {
                bail!(
                    "{op}'s {what} is computed at run time; tcc quantizes with parameters \
                     known at compile time (constants)"
                );
            }
        }
        let scale = node
            .const_input(scale_at, "the scale")?
            .ok_or_else(|| ImportError::new(format!("{op} needs a scale")))?;
        if !scale.dtype.is_float() {
            bail!("{op}'s scale is {}, not a float tensor", scale.dtype);
        }
        let zero_point = node.const_input(scale_at + 1, "the zero point")?;
        let dtype = zero_point.map_or(default, |z| z.dtype);
        if !matches!(dtype, DType::I8 | DType::U8 | DType::I32) {
            bail!("{op} to or from {dtype} is not supported (int8, uint8 and int32 are)");
        }
        if node.int("block_size", 0)? != 0 {
            bail!("{op} with block_size (blocked quantization) is not supported");
        }
        let scales = scale.f64s();
        if let Some(bad) = scales.iter().find(|s| !s.is_finite() || **s == 0.0) {
            bail!("{op}'s scale {bad} is not a finite non-zero number");
        }
        let zero_points = match zero_point {
            Some(z) => z.i64s(),
            None => vec![0; scales.len()],
        };
        if zero_points.len() != scales.len() {
            bail!(
                "{op}: {} scales but {} zero points",
                scales.len(),
                zero_points.len()
            );
        }
        let axis = if scale.numel() == 1 && scale.shape.len() <= 1 {
            None
        } else {
            let axis = node.axis(axis_attribute, shape.len(), "axis")?;
            if scale.shape.len() != 1 || scale.shape[0] != shape[axis] {
                bail!(
                    "{op}: a scale of shape {:?} for a tensor of shape {shape:?} along axis {axis} \
                     (per-tensor or per-axis scales are supported)",
                    scale.shape
                );
            }
            Some(axis)
        };
        Ok(QuantParams {
            scales,
            zero_points,
            axis,
            dtype,
        })
    }

    /// The index into the parameters of element `index` of a tensor of
    /// `shape`.
    fn slot(&self, shape: &[i64], index: usize) -> usize {
        match self.axis {
            None => 0,
            Some(axis) => {
                let inner: i64 = shape[axis + 1..].iter().product();
                (index / inner as usize) % shape[axis] as usize
            }
        }
    }

    /// The range of the quantized type.
    fn bounds(&self) -> (i64, i64) {
        match self.dtype {
            DType::I8 => (-128, 127),
            DType::U8 => (0, 255),
            _ => (i32::MIN as i64, i32::MAX as i64),
        }
    }

    /// The largest `|q - zero_point|` a quantized value can have.
    fn max_shifted(&self) -> f64 {
        let (lo, hi) = self.bounds();
        self.zero_points
            .iter()
            .map(|&z| (z - lo).max(hi - z) as f64)
            .fold(0.0, f64::max)
    }

    /// The scales (and zero points as f32) as tensors that broadcast
    /// against a tensor of `shape`: scalars per tensor, `1 x .. x C x .. x 1`
    /// per axis.
    fn operands(&self, imp: &mut Importer, shape: &[i64]) -> Result<(Val, Val)> {
        let mut param_shape = vec![1; shape.len()];
        if let Some(axis) = self.axis {
            param_shape[axis] = shape[axis];
        }
        let zero_points: Vec<f64> = self.zero_points.iter().map(|&z| z as f64).collect();
        let scale = Const::from_f64(DType::F32, param_shape.clone(), &self.scales);
        let zero = Const::from_f64(DType::F32, param_shape, &zero_points);
        Ok((
            imp.e.constant(&scale, "quant_scale")?,
            imp.e.constant(&zero, "quant_zero_point")?,
        ))
    }
}

/// `(c - zero_point) * scale` of a constant, as onnxruntime computes it
/// (the subtraction in integers, the product in f32).
fn dequantize_const(c: &Const, q: &QuantParams) -> Const {
    let values: Vec<f64> = (0..c.numel())
        .map(|i| {
            let slot = q.slot(&c.shape, i);
            let shifted = (c.i64_at(i) - q.zero_points[slot]) as f32;
            (shifted * q.scales[slot] as f32) as f64
        })
        .collect();
    Const::from_f64(DType::F32, c.shape.clone(), &values)
}

/// Dequantizes `value` with `q`: folded for a constant, else one
/// elementwise op.
fn dequantize(imp: &mut Importer, value: &Value, q: &QuantParams) -> Result<Value> {
    if let Value::Const(c) = value {
        return Ok(Value::constant(dequantize_const(c, q)));
    }
    let x = imp.val(value)?;
    if x.dtype() != q.dtype {
        bail!(
            "dequantizing a {} tensor with {} zero points",
            x.dtype(),
            q.dtype
        );
    }
    let (scale, zero) = q.operands(imp, x.shape())?;
    let to_float = if x.dtype() == DType::U8 {
        "arith.uitofp"
    } else {
        "arith.sitofp"
    };
    let from = x.dtype().mlir();
    let ty = x.ty.with_dtype(DType::F32);
    Ok(tensor_value(imp.e.map(&[&x, &scale, &zero], ty, &|a| {
        format!(
            "%f = {to_float} {} : {from} to f32\n%d = arith.subf %f, {} : f32\n%r = arith.mulf %d, {} : f32",
            a[0], a[2], a[1]
        )
    })))
}

/// Quantizes the f32 `x` with `q` (to int8, or uint8 carried as i8 bits).
fn quantize(imp: &mut Importer, x: &Val, q: &QuantParams) -> Result<Value> {
    if x.dtype() != DType::F32 {
        bail!("quantizing a {} tensor (float is supported)", x.dtype());
    }
    if q.dtype == DType::I32 {
        bail!("quantizing to int32 is not supported (int8 and uint8 are)");
    }
    let (scale, zero) = q.operands(imp, x.shape())?;
    let (lo, hi) = q.bounds();
    let (lo, hi) = (
        float_literal(lo as f64, DType::F32),
        float_literal(hi as f64, DType::F32),
    );
    let to_int = if q.dtype == DType::U8 {
        "arith.fptoui"
    } else {
        "arith.fptosi"
    };
    let ty = TType::new(q.dtype, x.shape().to_vec());
    Ok(tensor_value(imp.e.map(&[x, &scale, &zero], ty, &|a| {
        format!(
            "%q = arith.divf {}, {} : f32\n%n = math.roundeven %q : f32\n%z = arith.addf %n, {} : f32\n\
             %lo = arith.constant {lo} : f32\n%hi = arith.constant {hi} : f32\n\
             %c = arith.maximumf %z, %lo : f32\n%s = arith.minimumf %c, %hi : f32\n\
             %r = {to_int} %s : f32 to i8",
            a[0], a[1], a[2]
        )
    })))
}

/// Checks an attribute that names the float type a quantize/dequantize
/// computes in (opset 23's `precision` and `output_dtype`): absent, 0
/// (the scale's type) or float; other types are the element-type work's.
fn float_precision(node: &Node, attribute: &str) -> Result<()> {
    match node.int_opt(attribute)? {
        None | Some(0) | Some(1) => Ok(()),
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
    // Opset 23: `output_dtype` picks the output type (default: the scale's,
    // float here).
    float_precision(node, "output_dtype")?;
    let q = QuantParams::read(node, 1, &x.shape(), node.int("axis", 1)?, x.dtype())?;
    one(dequantize(imp, x, &q)?)
}

/// `QuantizeLinear(x, scale, zero_point)`.
pub fn quantize_linear(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    // Opset 23: `precision` is the type the division by the scale is
    // computed in (default: the scale's, float here).
    float_precision(node, "precision")?;
    let default = match node.int_opt("output_dtype")? {
        Some(code) if code != 0 => DType::from_onnx(code as i32).ok_or_else(|| {
            ImportError::new(format!(
                "QuantizeLinear to {} is not supported",
                DType::onnx_code_name(code as i32)
            ))
        })?,
        _ => DType::U8,
    };
    let q = QuantParams::read(node, 1, &x.shape(), node.int("axis", 1)?, default)?;
    let x = imp.val(x)?;
    one(quantize(imp, &x, &q)?)
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

/// `QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B)`.
pub fn qlinear_conv(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (x, w) = (node.input(0)?, node.input(3)?);
    let xq = QuantParams::read(node, 1, &x.shape(), 1, x.dtype())?;
    if xq.axis.is_some() {
        bail!("QLinearConv with a per-channel input scale is not supported");
    }
    let wq = QuantParams::read(node, 4, &w.shape(), 0, w.dtype())?;
    let yq = QuantParams::read(node, 6, &[], 1, DType::U8)?;
    let bias = match node.opt(8) {
        None => None,
        Some(Value::Const(b)) => {
            // int32 bias with scale x_scale * w_scale and zero point 0.
            let channels = b.numel();
            let values: Vec<f64> = (0..channels)
                .map(|c| {
                    let w_scale = wq.scales[if wq.axis.is_some() { c } else { 0 }];
                    (b.i64_at(c) as f32 * (xq.scales[0] * w_scale) as f32) as f64
                })
                .collect();
            Some(Value::constant(Const::from_f64(
                DType::F32,
                b.shape.clone(),
                &values,
            )))
        }
        Some(Value::Tensor(_)) => bail!("QLinearConv with a bias computed at run time"),
    };
    let inputs = vec![
        Some(dequantize(imp, x, &xq)?),
        Some(dequantize(imp, w, &wq)?),
        bias,
    ];
    let y = float_op(imp, node, inputs, conv::conv)?;
    one(quantize(imp, &y, &yq)?)
}

/// `QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)`.
pub fn qlinear_matmul(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(3)?);
    let rank_a = a.rank();
    let rank_b = b.rank();
    let aq = QuantParams::read(node, 1, &a.shape(), rank_a as i64 - 2, a.dtype())?;
    let bq = QuantParams::read(node, 4, &b.shape(), rank_b as i64 - 1, b.dtype())?;
    let yq = QuantParams::read(node, 6, &[], 1, DType::U8)?;
    let inputs = vec![
        Some(dequantize(imp, a, &aq)?),
        Some(dequantize(imp, b, &bq)?),
    ];
    let y = float_op(imp, node, inputs, matmul::matmul)?;
    one(quantize(imp, &y, &yq)?)
}

/// The zero-point-shifted f32 operand of an integer op, and the largest
/// magnitude its elements can have.
fn shifted_operand(
    imp: &mut Importer,
    node: &Node,
    value: &Value,
    zero_point_at: usize,
    axis: Option<usize>,
) -> Result<(Value, f64)> {
    let op = node.op();
    let dtype = value.dtype();
    if !matches!(dtype, DType::I8 | DType::U8) {
        bail!("{op} of a {dtype} operand (int8 and uint8 are supported)");
    }
    let shape = value.shape();
    let zero_points = match node.const_input(zero_point_at, "the zero point")? {
        Some(z) if z.numel() == 1 => vec![z.i64_at(0)],
        Some(z) => match axis {
            Some(axis) if z.shape.len() == 1 && z.shape[0] == shape[axis] => z.i64s(),
            _ => bail!(
                "{op}: a zero point of shape {:?} for an operand of shape {shape:?}",
                z.shape
            ),
        },
        None => vec![0],
    };
    let q = QuantParams {
        scales: vec![1.0; zero_points.len()],
        axis: (zero_points.len() > 1).then_some(axis).flatten(),
        zero_points,
        dtype,
    };
    let bound = match value {
        Value::Const(c) => (0..c.numel())
            .map(|i| (c.i64_at(i) - q.zero_points[q.slot(&c.shape, i)]).abs() as f64)
            .fold(0.0, f64::max),
        Value::Tensor(_) => q.max_shifted(),
    };
    Ok((dequantize(imp, value, &q)?, bound))
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
    tensor_value(imp.e.map(&[y], ty, &|a| {
        format!("%r = arith.fptosi {} : f32 to i32", a[0])
    }))
}

/// `MatMulInteger(a, b, a_zero_point, b_zero_point)`: int32 products.
pub fn matmul_integer(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    let (rank_a, rank_b) = (a.rank(), b.rank());
    if rank_a == 0 || rank_b == 0 {
        bail!("MatMulInteger of a scalar");
    }
    let k = a.shape()[rank_a - 1];
    let (a_f, a_max) = shifted_operand(imp, node, a, 2, Some(rank_a.saturating_sub(2)))?;
    let (b_f, b_max) = shifted_operand(imp, node, b, 3, Some(rank_b - 1))?;
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
    if node
        .opt(2)
        .is_some_and(|z| z.shape().iter().product::<i64>() != 1)
    {
        bail!("ConvInteger with a per-channel input zero point is not supported");
    }
    let terms: i64 = ws[1..].iter().product();
    let (x_f, x_max) = shifted_operand(imp, node, x, 2, None)?;
    let (w_f, w_max) = shifted_operand(imp, node, w, 3, Some(0))?;
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
    let scale = imp.e.map(&[&low, &high], scalar.clone(), &|a| {
        format!(
            "%zero = arith.constant 0.0 : f32\n%steps = arith.constant 255.0 : f32\n\
             %lo = arith.minimumf {}, %zero : f32\n%hi = arith.maximumf {}, %zero : f32\n\
             %range = arith.subf %hi, %lo : f32\n%r = arith.divf %range, %steps : f32",
            a[0], a[1]
        )
    });
    // The zero point as a float (an integer in [0, 255]).
    let zero = imp.e.map(&[&low, &scale], scalar, &|a| {
        format!(
            "%zero = arith.constant 0.0 : f32\n%top = arith.constant 255.0 : f32\n\
             %lo = arith.minimumf {}, %zero : f32\n%q = arith.divf %lo, {} : f32\n\
             %n = arith.negf %q : f32\n%rn = math.roundeven %n : f32\n\
             %c = arith.maximumf %rn, %zero : f32\n%r = arith.minimumf %c, %top : f32",
            a[0], a[1]
        )
    });
    let y = imp.e.map(&[&x, &scale, &zero], x.ty.with_dtype(DType::U8), &|a| {
        format!(
            "%q = arith.divf {}, {} : f32\n%n = math.roundeven %q : f32\n%z = arith.addf %n, {} : f32\n\
             %lo = arith.constant 0.0 : f32\n%hi = arith.constant 255.0 : f32\n\
             %c = arith.maximumf %z, %lo : f32\n%s = arith.minimumf %c, %hi : f32\n\
             %r = arith.fptoui %s : f32 to i8",
            a[0], a[1], a[2]
        )
    });
    let zero_point = imp.e.map(&[&zero], TType::new(DType::U8, vec![1]), &|a| {
        format!("%r = arith.fptoui {} : f32 to i8", a[0])
    });
    let scale = imp.e.reshape(&scale, &[]);
    let zero_point = imp.e.reshape(&zero_point, &[]);
    Ok(vec![
        tensor_value(y),
        tensor_value(scale),
        tensor_value(zero_point),
    ])
}
