//! One importer per ONNX op. Each takes the node (inputs as SSA values or
//! constants) and returns its outputs; ops tcc cannot express are errors
//! that name the op.

pub mod attention;
pub mod conv;
pub mod conv_transpose;
pub mod data_dependent;
pub mod deform_conv;
pub mod det;
pub mod einsum;
pub mod elementwise;
pub mod grid;
pub mod index;
pub mod loss;
pub mod matmul;
pub mod ml;
pub mod movement;
pub mod narrow;
pub mod norm;
pub mod normalize;
pub mod numeric;
pub mod pad;
pub mod pool;
pub mod quant;
pub mod reduce;
pub mod resize;
pub mod rnn;
pub mod roi;
pub mod rotary;
pub mod shape;
pub mod signal;
pub mod spatial;
pub mod state;
pub mod tfidf;
pub mod trees;

use std::path::Path;

use super::emit::Val;
use super::error::{ImportError, Result, bail};
use super::fold;
use super::importer::Importer;
use super::node::{Node, Value};
use super::proto::{AttributeProto, NodeProto, attribute_proto::AttributeType};

/// Every op type the importer handles (for documentation and tests).
pub const SUPPORTED_OPS: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "AffineGrid",
    "And",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Attention",
    "AveragePool",
    "BatchNormalization",
    "BitCast",
    "BitShift",
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "BlackmanWindow",
    "Cast",
    "CastLike",
    "CausalConvWithState",
    "Ceil",
    "Celu",
    "CenterCropPad",
    "Clip",
    "Col2Im",
    "Compress",
    "Concat",
    "ConcatFromSequence",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvInteger",
    "ConvTranspose",
    "Cos",
    "Cosh",
    "CumProd",
    "CumSum",
    "DeformConv",
    "DepthToSpace",
    "DequantizeLinear",
    "Det",
    "DFT",
    "Div",
    "Dropout",
    "DynamicQuantizeLinear",
    "Einsum",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "EyeLike",
    "Flatten",
    "Floor",
    "Gather",
    "GatherElements",
    "GatherND",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalLpPool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "GridSample",
    "GroupNormalization",
    "GRU",
    "HammingWindow",
    "HannWindow",
    "Hardmax",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "If",
    "InstanceNormalization",
    "IsInf",
    "IsNaN",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "LinearAttention",
    "Log",
    "LogSoftmax",
    "Loop",
    "LpNormalization",
    "LpPool",
    "LRN",
    "LSTM",
    "MatMul",
    "MatMulInteger",
    "Max",
    "MaxPool",
    "MaxUnpool",
    "Mean",
    "MeanVarianceNormalization",
    "MelWeightMatrix",
    "Min",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "NegativeLogLikelihoodLoss",
    "NonMaxSuppression",
    "NonZero",
    "Not",
    "OneHot",
    "Optional",
    "OptionalGetElement",
    "OptionalHasElement",
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
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Resize",
    "RoiAlign",
    "ReverseSequence",
    "RMSNormalization",
    "RNN",
    "RotaryEmbedding",
    "Round",
    "Scan",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "Selu",
    "SequenceAt",
    "SequenceConstruct",
    "SequenceEmpty",
    "SequenceErase",
    "SequenceInsert",
    "SequenceLength",
    "SequenceMap",
    "Shape",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Size",
    "Slice",
    "Softmax",
    "SoftmaxCrossEntropyLoss",
    "Softplus",
    "Softsign",
    "SpaceToDepth",
    "Split",
    "SplitToSequence",
    "Sqrt",
    "Squeeze",
    "STFT",
    "Sub",
    "Sum",
    "SwiGLU",
    "Swish",
    "Tan",
    "Tanh",
    "TensorScatter",
    "TfIdfVectorizer",
    "ThresholdedRelu",
    "Tile",
    "TopK",
    "Transpose",
    "Trilu",
    "Unique",
    "Unsqueeze",
    "Upsample",
    "Where",
    "Xor",
];

/// The opset the importer's own nodes ([`synthetic`]) are imported
/// under: one whose semantics for them are the current ones.
const SYNTHETIC_OPSET: i64 = 23;

/// Imports the default-domain op `op_type` on `inputs` with `attributes`
/// (a node of a lowering written in ONNX ops, not of the model: `Det`,
/// `FlexAttention`) and returns its first output.
pub fn synthetic(
    imp: &mut Importer,
    op_type: &str,
    inputs: Vec<Value>,
    attributes: Vec<AttributeProto>,
) -> Result<Value> {
    let proto = NodeProto {
        op_type: op_type.to_string(),
        input: (0..inputs.len())
            .map(|i| format!("{op_type}_{i}"))
            .collect(),
        output: vec![format!("{op_type}_out")],
        attribute: attributes,
        ..Default::default()
    };
    let node = Node {
        proto: &proto,
        opset: SYNTHETIC_OPSET,
        inputs: inputs.into_iter().map(Some).collect(),
    };
    import_node(imp, &node, None)?
        .into_iter()
        .next()
        .ok_or_else(|| ImportError::new(format!("{op_type} gave no output")))
}

/// An integer attribute for [`synthetic`].
pub fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Int as i32,
        i,
        ..Default::default()
    }
}

/// An integer-list attribute for [`synthetic`].
pub fn ints_attr(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Ints as i32,
        ints: values.to_vec(),
        ..Default::default()
    }
}

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
    if domain == "ai.onnx.preview.training" {
        bail!(
            "'{}' (domain {domain}) is a training op: tcc compiles inference graphs (gradients and optimizer updates are not imported)",
            node.op()
        );
    }
    if domain == "ai.onnx.ml" {
        return ml::import(imp, node);
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
        "Tan" | "Asin" | "Acos" | "Atan" | "Sinh" | "Cosh" | "Asinh" | "Acosh" | "Atanh" => {
            numeric::trigonometric(imp, node)
        }
        "Mod" => numeric::modulo(imp, node),
        "BitShift" => numeric::bit_shift(imp, node),
        "IsNaN" => numeric::is_nan(imp, node),
        "IsInf" => numeric::is_inf(imp, node),
        "Shrink" => numeric::shrink(imp, node),
        "Relu" => ew::relu(imp, node),
        "LeakyRelu" | "Elu" | "Selu" | "Celu" | "ThresholdedRelu" | "HardSigmoid" | "HardSwish"
        | "Softplus" | "Softsign" | "Mish" | "Gelu" | "Swish" => ew::activation(imp, node),
        "SwiGLU" => ew::swiglu(imp, node),
        "BitwiseAnd" | "BitwiseOr" | "BitwiseXor" | "BitwiseNot" => ew::bitwise(imp, node),
        "BitCast" => ew::bit_cast(imp, node),
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
        "DeformConv" => deform_conv::deform_conv(imp, node),
        "ConvTranspose" => conv_transpose::conv_transpose(imp, node),
        "BatchNormalization" => norm::batch_norm(imp, node),
        "InstanceNormalization" => norm::instance_norm(imp, node),
        "LayerNormalization" => norm::layer_norm(imp, node),
        "LRN" => norm::lrn(imp, node),
        "RMSNormalization" => normalize::rms_norm(imp, node),
        "GroupNormalization" => normalize::group_norm(imp, node),
        "MeanVarianceNormalization" => normalize::mean_variance_norm(imp, node),
        "LpNormalization" => normalize::lp_norm(imp, node),
        "Einsum" => einsum::einsum(imp, node),
        "Attention" => attention::attention(imp, node),
        "RotaryEmbedding" => rotary::rotary_embedding(imp, node),
        "LinearAttention" => state::linear_attention(imp, node),
        "CausalConvWithState" => state::causal_conv_with_state(imp, node),
        "GridSample" => grid::grid_sample(imp, node),
        "AffineGrid" => grid::affine_grid(imp, node),
        "Softmax" | "LogSoftmax" => norm::softmax(imp, node),
        "MaxPool" | "AveragePool" => pool::pool(imp, node),
        "GlobalAveragePool" | "GlobalMaxPool" => pool::global_pool(imp, node),
        "LpPool" => pool::lp_pool(imp, node),
        "GlobalLpPool" => pool::global_lp_pool(imp, node),
        "CenterCropPad" => spatial::center_crop_pad(imp, node),
        "Col2Im" => spatial::col2im(imp, node),
        // Quantized operators (as float computation, see quant.rs).
        "DequantizeLinear" => quant::dequantize_linear(imp, node),
        "QuantizeLinear" => quant::quantize_linear(imp, node),
        "DynamicQuantizeLinear" => quant::dynamic_quantize_linear(imp, node),
        "QLinearConv" => quant::qlinear_conv(imp, node),
        "QLinearMatMul" => quant::qlinear_matmul(imp, node),
        "MatMulInteger" => quant::matmul_integer(imp, node),
        "ConvInteger" => quant::conv_integer(imp, node),
        // Reductions.
        "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceL1"
        | "ReduceL2" | "ReduceSumSquare" | "ReduceLogSum" | "ReduceLogSumExp" => {
            reduce::reduce(imp, node)
        }
        "ArgMax" | "ArgMin" => reduce::arg(imp, node),
        "CumSum" | "CumProd" => index::cum_sum(imp, node),
        "ReverseSequence" => index::reverse_sequence(imp, node),
        "TopK" => index::top_k(imp, node),
        "Hardmax" => index::hardmax(imp, node),
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
        "GatherElements" => index::gather_elements(imp, node),
        "GatherND" => index::gather_nd(imp, node),
        "ScatterElements" => index::scatter_elements(imp, node),
        "Scatter" if node.opset < 11 => index::scatter_elements(imp, node),
        "ScatterND" => index::scatter_nd(imp, node),
        "TensorScatter" => index::tensor_scatter(imp, node),
        "MaxUnpool" => index::max_unpool(imp, node),
        "OneHot" => index::one_hot(imp, node),
        "Trilu" => index::trilu(imp, node),
        "NonZero" => data_dependent::non_zero(node),
        "Compress" => data_dependent::compress(node),
        "Unique" => data_dependent::unique(node),
        "NonMaxSuppression" => data_dependent::non_max_suppression(node),
        "Pad" => pad::pad(imp, node),
        "DepthToSpace" | "SpaceToDepth" => pad::depth_space(imp, node),
        "Resize" => resize::resize(imp, node),
        "Upsample" => resize::upsample(imp, node),
        // Loss functions (inference graphs may report a loss).
        "NegativeLogLikelihoodLoss" => loss::nll_loss(imp, node),
        "SoftmaxCrossEntropyLoss" => loss::softmax_cross_entropy(imp, node),
        // Recurrent ops, unrolled (rnn.rs).
        "RNN" | "GRU" | "LSTM" => rnn::rnn(imp, node),
        // Windows, spectra and other values computed at import time.
        "HannWindow" | "HammingWindow" | "BlackmanWindow" => signal::window(imp, node),
        "MelWeightMatrix" => signal::mel_weight_matrix(node),
        "DFT" => signal::dft(imp, node),
        "STFT" => signal::stft(imp, node),
        "EyeLike" => signal::eye_like(node),
        "TfIdfVectorizer" => tfidf::tfidf_vectorizer(imp, node),
        "Det" => det::det(imp, node),
        "RoiAlign" => roi::roi_align(imp, node),
        op if signal::refused(op).is_some() => {
            Err(ImportError::new(signal::refused(op).unwrap_or_default()))
        }
        "Range" => {
            // The first bound not known at import time.
            let (index, name) = node
                .inputs
                .iter()
                .enumerate()
                .find(|(_, v)| !matches!(v, Some(Value::Const(_))))
                .map(|(i, _)| (i, node.proto.input.get(i).map_or("", String::as_str)))
                .unwrap_or((0, ""));
            Err(ImportError::needs_value(
                format!(
                    "Range with bounds computed at run time is not supported (input #{index} '{name}'; tcc needs static shapes)"
                ),
                name,
            ))
        }
        op => Err(ImportError::new(format!(
            "unsupported op '{op}': the ONNX importer has no lowering for it"
        ))),
    }
}
