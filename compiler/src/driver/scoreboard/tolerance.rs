//! How close a scoreboard case's outputs must be to the expected ones:
//! exact for data-movement and integer ops, otherwise a relative bound
//! plus an absolute one that grows with the longest accumulation in the
//! model.

use melior::ir::ValueLike;
use melior::ir::operation::{OperationLike, OperationRef};

use crate::ir::dense::int_array_attribute;
use crate::ir::types::{normalize_axis, static_shape};
use crate::ir::util::{collect_ops, integer_value, op_name};

/// Relative tolerance of an inexact output: `|got - want| <= atol + RTOL *
/// |want|`, a few ulp of the transcendental functions (OpenCL allows up to
/// 16 for pow) over short chains of them.
pub const RTOL: f64 = 1e-5;

/// The absolute term of an inexact output, per unit of the output's scale
/// (its largest |element|) and per square root of the longest accumulation
/// in the model: 8 float32 epsilons (2^-23), the typical rounding of an
/// n-term sum added in another order being about `sqrt(n) * eps * |terms|`.
pub const ATOL_PER_SCALE: f64 = 8.0 * f32::EPSILON as f64;

/// ONNX ops whose float results are exact: they move, select, compare or
/// convert values, or compute exactly rounded results that every correct
/// implementation gets bit for bit (max, min, abs, neg, relu, clip). A
/// model made only of these must match bit for bit.
pub const EXACT_OPS: &[&str] = &[
    "Abs",
    "And",
    "ArgMax",
    "ArgMin",
    "Cast",
    "CastLike",
    "Ceil",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "DepthToSpace",
    "Dropout",
    "Equal",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Greater",
    "GreaterOrEqual",
    "Identity",
    "Less",
    "LessOrEqual",
    "Max",
    "MaxPool",
    "Min",
    "Neg",
    "Not",
    "Or",
    "Pad",
    "ReduceMax",
    "ReduceMin",
    "Relu",
    "Reshape",
    "Shape",
    "Size",
    "Slice",
    "SpaceToDepth",
    "Split",
    "Squeeze",
    "Tile",
    "Transpose",
    "Unsqueeze",
    "Where",
    "Xor",
];

/// How one case's outputs are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaseTolerance {
    /// Every op is in [`EXACT_OPS`]: outputs must match bit for bit.
    pub exact: bool,
    /// The longest accumulation (sum of products, reduction, window,
    /// normalization) in the imported model; 1 when there is none.
    pub length: usize,
}

impl CaseTolerance {
    /// `(atol, rtol)` for an inexact float output whose largest |element|
    /// is `scale`.
    pub fn bounds(&self, scale: f64) -> (f64, f64) {
        if self.exact {
            return (0.0, 0.0);
        }
        (
            ATOL_PER_SCALE * (self.length.max(1) as f64).sqrt() * scale,
            RTOL,
        )
    }

    /// [`CaseTolerance::bounds`] for an output of element type `dtype`:
    /// the same rule with that type's machine epsilon in place of
    /// float32's (f16 2^-10, bf16 2^-7, f64 2^-52), and a relative
    /// tolerance of one epsilon for the half types, whose reference values
    /// are rounded to half after every op where tcc rounds once.
    pub fn bounds_for(&self, scale: f64, dtype: tcc_runtime::DType) -> (f64, f64) {
        if self.exact {
            return (0.0, 0.0);
        }
        let eps = match dtype {
            tcc_runtime::DType::F16 => half::f16::EPSILON.to_f64(),
            tcc_runtime::DType::BF16 => half::bf16::EPSILON.to_f64(),
            tcc_runtime::DType::F64 => f64::EPSILON,
            _ => return self.bounds(scale),
        };
        let (atol, rtol) = self.bounds(scale);
        let ratio = eps / f32::EPSILON as f64;
        let rtol = match dtype {
            tcc_runtime::DType::F64 => rtol * ratio,
            _ => eps,
        };
        (atol * ratio, rtol)
    }

    pub fn describe(&self) -> String {
        if self.exact {
            "bit for bit".into()
        } else {
            format!(
                "rtol {RTOL}, atol 8 eps * sqrt({}) * max|want|",
                self.length
            )
        }
    }
}

/// The case's tolerance: exact when every node of the ONNX graph is in
/// [`EXACT_OPS`], else from the longest accumulation of the imported TOSA.
pub fn case_tolerance(
    model: &crate::front::onnx::proto::ModelProto,
    module: &melior::ir::Module,
) -> CaseTolerance {
    let exact = model.graph.as_ref().is_some_and(|g| {
        g.node
            .iter()
            .all(|n| EXACT_OPS.contains(&n.op_type.as_str()))
    });
    CaseTolerance {
        exact,
        length: accumulation_length(module),
    }
}

/// The longest accumulation of the imported module: K of matmuls, kernel
/// volume times input channels of convolutions, the reduced dimension of
/// reductions, softmax and layer norm, the window of average pools (1
/// when there is none).
pub fn accumulation_length(module: &melior::ir::Module) -> usize {
    let root = unsafe { OperationRef::from_raw(module.as_operation().to_raw()) };
    collect_ops(root)
        .into_iter()
        .filter_map(accumulation)
        .fold(1, usize::max)
}

/// The accumulation length of one op, when it accumulates.
fn accumulation(op: OperationRef) -> Option<usize> {
    let dims = |index: usize| -> Option<Vec<usize>> {
        let shape = static_shape(op.operand(index).ok()?.r#type())?;
        shape.into_iter().map(|d| usize::try_from(d).ok()).collect()
    };
    let axis = || op.attribute("axis").ok().and_then(integer_value);
    // The dimension `axis` names in operand 0's shape, and that shape.
    let along_axis = || {
        let dims = dims(0)?;
        let axis = normalize_axis(axis()?, dims.len())?;
        Some((dims, axis))
    };
    let name = op_name(&op);
    match name.as_str() {
        "tosa.matmul" => dims(0)?.last().copied(),
        "tosa.conv2d" | "tosa.conv3d" | "tosa.transpose_conv2d" => {
            Some(dims(1)?.iter().skip(1).product())
        }
        "tosa.depthwise_conv2d" => Some(dims(1)?.get(..2)?.iter().product()),
        "tosa.avg_pool2d" => {
            let kernel = int_array_attribute(op, "kernel")?;
            Some(
                kernel
                    .iter()
                    .map(|&k| usize::try_from(k).unwrap_or(0))
                    .product(),
            )
        }
        "tcc.layer_norm" => along_axis().map(|(dims, axis)| dims[axis..].iter().product()),
        "tcc.softmax" | "tcc.log_softmax" => along_axis().map(|(dims, axis)| dims[axis]),
        reduce if reduce.starts_with("tosa.reduce_") => along_axis().map(|(dims, axis)| dims[axis]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accumulation_of(text: &str) -> usize {
        let context = tcc_dialects::new_context();
        let module = tcc_dialects::parse_module(&context, text, "test.mlir").expect("parses");
        accumulation_length(&module)
    }

    #[test]
    fn accumulation_length_reads_the_reducing_ops() {
        let conv = r#"
func.func @f(%x: tensor<2x7x5x3xf32>, %w: tensor<4x3x2x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x5x4xf32> {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.conv2d %x, %w, %b, %z, %z {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x7x5x3xf32>, tensor<4x3x2x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x5x4x4xf32>
  %1 = tosa.transpose %0 {perms = array<i32: 0, 3, 1, 2>} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
  return %1 : tensor<2x4x5x4xf32>
}"#;
        assert_eq!(accumulation_of(conv), 18);
        // Generic syntax too.
        let reductions = r#"
func.func @f(%a: tensor<1x4x40xf32>, %b: tensor<1x40x3xf32>, %x: tensor<3x70x2xf32>, %y: tensor<2x9xf32>) -> (tensor<1x4x3xf32>, tensor<3x1x2xf32>, tensor<2x9xf32>) {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %1 = "tosa.matmul"(%a, %b, %z, %z) : (tensor<1x4x40xf32>, tensor<1x40x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>
  %2 = "tosa.reduce_sum"(%x) <{axis = 1 : i32}> : (tensor<3x70x2xf32>) -> tensor<3x1x2xf32>
  %3 = tcc.softmax %y axis = -1 : tensor<2x9xf32>
  return %1, %2, %3 : tensor<1x4x3xf32>, tensor<3x1x2xf32>, tensor<2x9xf32>
}"#;
        assert_eq!(accumulation_of(reductions), 70);
        let elementwise = r#"
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tosa.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"#;
        assert_eq!(accumulation_of(elementwise), 1);
    }

    #[test]
    fn tolerance_bounds() {
        let exact = CaseTolerance {
            exact: true,
            length: 100,
        };
        assert_eq!(exact.bounds(5.0), (0.0, 0.0));
        assert_eq!(exact.bounds_for(5.0, tcc_runtime::DType::F16), (0.0, 0.0));
        let sum = CaseTolerance {
            exact: false,
            length: 16,
        };
        let (atol, rtol) = sum.bounds(2.0);
        assert_eq!(rtol, RTOL);
        assert!((atol - 8.0 * f32::EPSILON as f64 * 4.0 * 2.0).abs() < 1e-15);
    }
}
