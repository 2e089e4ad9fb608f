//! How close a scoreboard case's outputs must be to the expected ones:
//! exact for data-movement and integer ops, otherwise a relative bound
//! plus an absolute one that grows with the longest accumulation in the
//! model.

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
pub fn case_tolerance(model: &crate::front::onnx::proto::ModelProto, mlir: &str) -> CaseTolerance {
    let exact = model.graph.as_ref().is_some_and(|g| {
        g.node
            .iter()
            .all(|n| EXACT_OPS.contains(&n.op_type.as_str()))
    });
    CaseTolerance {
        exact,
        length: accumulation_length(mlir),
    }
}

/// Dimensions of the `index`th `tensor<...>` type in `text`.
fn tensor_dims(text: &str, index: usize) -> Option<Vec<usize>> {
    let body = text.split("tensor<").nth(index + 1)?;
    let body = body.split('>').next()?;
    let mut parts: Vec<&str> = body.split('x').collect();
    parts.pop(); // the element type
    parts.iter().map(|p| p.trim().parse().ok()).collect()
}

fn attribute_int(line: &str, name: &str) -> Option<i64> {
    let rest = line.split(&format!("{name} = ")).nth(1)?;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

fn axis_dim(dims: &[usize], axis: i64) -> Option<usize> {
    let axis = if axis < 0 {
        axis + dims.len() as i64
    } else {
        axis
    };
    dims.get(usize::try_from(axis).ok()?).copied()
}

/// The longest accumulation of the imported module (custom op syntax, as
/// the importer prints it): K of matmuls, kernel volume times input
/// channels of convolutions, the reduced dimension of reductions, softmax
/// and layer norm, the window of average pools.
pub fn accumulation_length(mlir: &str) -> usize {
    let mut longest = 1usize;
    for line in mlir.lines() {
        let Some(op) = line
            .split_whitespace()
            .find(|w| w.starts_with("tosa.") || w.starts_with("tcc."))
        else {
            continue;
        };
        // The operand types follow the last " : ".
        let types = line.rsplit_once(" : ").map(|(_, t)| t).unwrap_or("");
        let length = match op {
            "tosa.matmul" => tensor_dims(types, 0).and_then(|d| d.last().copied()),
            "tosa.conv2d" | "tosa.conv3d" | "tosa.transpose_conv2d" => {
                tensor_dims(types, 1).map(|d| d.iter().skip(1).product())
            }
            "tosa.depthwise_conv2d" => tensor_dims(types, 1).map(|d| d[..2].iter().product()),
            "tosa.avg_pool2d" => line.split("kernel = array<i64: ").nth(1).map(|k| {
                k.split('>')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|v| v.trim().parse::<usize>().ok())
                    .product()
            }),
            _ if op.starts_with("tosa.reduce_") => tensor_dims(types, 0)
                .zip(attribute_int(line, "axis"))
                .and_then(|(d, a)| axis_dim(&d, a)),
            "tcc.softmax" | "tcc.log_softmax" => tensor_dims(types, 0)
                .zip(attribute_int(line, "axis"))
                .and_then(|(d, a)| axis_dim(&d, a)),
            "tcc.layer_norm" => {
                tensor_dims(types, 0)
                    .zip(attribute_int(line, "axis"))
                    .map(|(d, a)| {
                        let a = if a < 0 { a + d.len() as i64 } else { a } as usize;
                        d.iter().skip(a).product()
                    })
            }
            _ => None,
        };
        longest = longest.max(length.unwrap_or(1));
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulation_length_reads_the_reducing_ops() {
        let mlir = r#"
    %4 = tosa.conv2d %0, %2, %3, %1, %1 {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x7x5x3xf32>, tensor<4x3x2x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x5x4x4xf32> loc(#loc2)
    %5 = tosa.transpose %4 {perms = array<i32: 0, 3, 1, 2>} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
"#;
        assert_eq!(accumulation_length(mlir), 18);
        let mlir = "%1 = tosa.matmul %a, %b, %z, %z : (tensor<1x4x40xf32>, tensor<1x40x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>\n\
                    %2 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<3x70x2xf32>) -> tensor<3x1x2xf32>\n\
                    %3 = tcc.softmax %x axis = -1 : tensor<2x9xf32>";
        assert_eq!(accumulation_length(mlir), 70);
        assert_eq!(
            accumulation_length(
                "%0 = tosa.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>"
            ),
            1
        );
    }

    #[test]
    fn tolerance_bounds() {
        let exact = CaseTolerance {
            exact: true,
            length: 100,
        };
        assert_eq!(exact.bounds(5.0), (0.0, 0.0));
        let sum = CaseTolerance {
            exact: false,
            length: 16,
        };
        let (atol, rtol) = sum.bounds(2.0);
        assert_eq!(rtol, RTOL);
        assert!((atol - 8.0 * f32::EPSILON as f64 * 4.0 * 2.0).abs() < 1e-15);
    }
}
