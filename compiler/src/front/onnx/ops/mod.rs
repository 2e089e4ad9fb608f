//! One importer per ONNX op. Each takes the node (inputs as SSA values or
//! constants) and returns its outputs; ops tcc cannot express are errors
//! that name the op.

pub mod conv;
pub mod conv_transpose;
pub mod elementwise;
pub mod matmul;
pub mod movement;
pub mod norm;
pub mod pad;
pub mod pool;
pub mod quant;
pub mod reduce;
pub mod shape;

use std::path::Path;

use super::emit::Val;
use super::error::{ImportError, Result, bail};
use super::fold;
use super::importer::Importer;
use super::node::{Node, Value};

/// Every op type the importer handles (for documentation and tests).
pub const SUPPORTED_OPS: &[&str] = &[
    "Abs",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "CastLike",
    "Ceil",
    "Celu",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvInteger",
    "ConvTranspose",
    "Cos",
    "DepthToSpace",
    "DequantizeLinear",
    "Div",
    "Dropout",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "InstanceNormalization",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "LRN",
    "MatMul",
    "MatMulInteger",
    "Max",
    "MaxPool",
    "Mean",
    "Min",
    "Mish",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "Pad",
    "Pow",
    "PRelu",
    "QLinearConv",
    "QLinearMatMul",
    "QuantizeLinear",
    "Range",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Round",
    "Selu",
    "Shape",
    "Sigmoid",
    "Sign",
    "Sin",
    "Size",
    "Slice",
    "Softmax",
    "Softplus",
    "Softsign",
    "SpaceToDepth",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tanh",
    "ThresholdedRelu",
    "Tile",
    "Transpose",
    "Unsqueeze",
    "Where",
    "Xor",
];

/// Ops that exist only for training (their domain `ai.onnx.preview.training`
/// holds the optimizers and `Gradient`): refused as training ops.
pub const TRAINING_OPS: &[&str] = &["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"];

pub fn one(value: Value) -> Result<Vec<Value>> {
    Ok(vec![value])
}

/// One tensor output.
pub fn tensor(v: Val) -> Result<Vec<Value>> {
    one(Value::Tensor(v))
}

/// Imports one node.
pub fn import_node(imp: &mut Importer, node: &Node, base_dir: Option<&Path>) -> Result<Vec<Value>> {
    let domain = node.proto.domain.as_str();
    if domain == "ai.onnx.preview.training" || TRAINING_OPS.contains(&node.op()) {
        bail!(
            "'{}' is a training op (a loss, gradient or optimizer): tcc compiles inference graphs",
            node.op()
        );
    }
    if !domain.is_empty() && domain != "ai.onnx" {
        bail!(
            "unsupported op '{}' of domain '{domain}': tcc imports only the default ONNX domain",
            node.op()
        );
    }
    if let Some(values) = fold::try_fold(imp, node)? {
        return Ok(values);
    }
    use elementwise as ew;
    match node.op() {
        // Elementwise math and activations.
        "Abs" => ew::abs(imp, node),
        "Neg" => ew::neg(imp, node),
        "Exp" => ew::float_unary(imp, node, "tosa.exp"),
        "Log" => ew::float_unary(imp, node, "tosa.log"),
        "Tanh" => ew::float_unary(imp, node, "tosa.tanh"),
        "Sigmoid" => ew::float_unary(imp, node, "tosa.sigmoid"),
        "Erf" => ew::float_unary(imp, node, "tosa.erf"),
        "Reciprocal" => ew::float_unary(imp, node, "tosa.reciprocal"),
        "Sqrt" | "Floor" | "Ceil" | "Round" | "Sin" | "Cos" => ew::math_unary(imp, node),
        "Sign" => ew::sign(imp, node),
        "Relu" => ew::relu(imp, node),
        "LeakyRelu" | "Elu" | "Selu" | "Celu" | "ThresholdedRelu" | "HardSigmoid" | "HardSwish"
        | "Softplus" | "Softsign" | "Mish" | "Gelu" => ew::activation(imp, node),
        "PRelu" => ew::prelu(imp, node),
        "Clip" => ew::clip(imp, node),
        "Add" | "Sub" | "Mul" | "Div" | "Pow" => ew::arithmetic(imp, node),
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" => ew::compare(imp, node),
        "And" | "Or" | "Xor" => ew::logical(imp, node),
        "Not" => ew::not(imp, node),
        "Max" | "Min" | "Sum" | "Mean" => ew::variadic(imp, node),
        "Where" => ew::where_(imp, node),
        "Cast" | "CastLike" => ew::cast(imp, node),
        // Contractions, normalization.
        "MatMul" => matmul::matmul(imp, node),
        "Gemm" => matmul::gemm(imp, node),
        "Conv" => conv::conv(imp, node),
        "ConvTranspose" => conv_transpose::conv_transpose(imp, node),
        "BatchNormalization" => norm::batch_norm(imp, node),
        "InstanceNormalization" => norm::instance_norm(imp, node),
        "LayerNormalization" => norm::layer_norm(imp, node),
        "LRN" => norm::lrn(imp, node),
        "Softmax" | "LogSoftmax" => norm::softmax(imp, node),
        "MaxPool" | "AveragePool" => pool::pool(imp, node),
        "GlobalAveragePool" | "GlobalMaxPool" => pool::global_pool(imp, node),
        // Quantized operators (as float computation, see quant.rs).
        "DequantizeLinear" => quant::dequantize_linear(imp, node),
        "QuantizeLinear" => quant::quantize_linear(imp, node),
        "QLinearConv" => quant::qlinear_conv(imp, node),
        "QLinearMatMul" => quant::qlinear_matmul(imp, node),
        "MatMulInteger" => quant::matmul_integer(imp, node),
        "ConvInteger" => quant::conv_integer(imp, node),
        // Reductions.
        "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceL1"
        | "ReduceL2" | "ReduceSumSquare" | "ReduceLogSumExp" => reduce::reduce(imp, node),
        "ArgMax" | "ArgMin" => reduce::arg(imp, node),
        // Shapes and data movement.
        "Constant" => shape::constant(imp, node, base_dir),
        "ConstantOfShape" => shape::constant_of_shape(imp, node),
        "Shape" => shape::shape_of(node),
        "Size" => shape::size_of(node),
        "Identity" | "Dropout" => shape::identity(node),
        "Reshape" => shape::reshape_op(imp, node),
        "Flatten" => shape::flatten(imp, node),
        "Squeeze" => shape::squeeze(imp, node),
        "Unsqueeze" => shape::unsqueeze(imp, node),
        "Transpose" => shape::transpose_op(imp, node),
        "Concat" => movement::concat_op(imp, node),
        "Split" => movement::split(imp, node),
        "Slice" => movement::slice_op(imp, node),
        "Gather" => movement::gather_op(imp, node),
        "Expand" => movement::expand(imp, node),
        "Tile" => movement::tile_op(imp, node),
        "Pad" => pad::pad(imp, node),
        "DepthToSpace" | "SpaceToDepth" => pad::depth_space(imp, node),
        "Range" => bail!(
            "Range with bounds computed at run time is not supported (tcc needs static shapes)"
        ),
        op => Err(ImportError::new(format!(
            "unsupported op '{op}': the ONNX importer has no lowering for it"
        ))),
    }
}
