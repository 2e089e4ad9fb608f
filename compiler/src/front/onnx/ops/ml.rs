//! The `ai.onnx.ml` ops of numeric inference graphs (scikit-learn
//! exports through skl2onnx): `Binarizer`, `ArrayFeatureExtractor`,
//! `Scaler`, `Normalizer`, `LinearRegressor` and `LinearClassifier`,
//! written in the importer's own ops ([`super::synthetic`]), and the tree
//! ensembles (`super::trees`). The ops on strings (`LabelEncoder` with
//! string keys or values, `CategoryMapper`, ...) stop at the string tensor
//! with the error for strings; the others (SVMs, `OneHotEncoder`, ...) are
//! an error naming the op.

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::shape::reshape_value;
use super::{int_attr, one, synthetic};

/// Imports an `ai.onnx.ml` node.
pub fn import(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    match node.op() {
        "Binarizer" => binarizer(imp, node),
        "ArrayFeatureExtractor" => array_feature_extractor(imp, node),
        "Scaler" => scaler(imp, node),
        "Normalizer" => normalizer(imp, node),
        "LinearRegressor" => linear_regressor(imp, node),
        "LinearClassifier" => linear_classifier(imp, node),
        "TreeEnsembleRegressor" => super::trees::tree_ensemble_regressor(imp, node),
        "TreeEnsemble" => {
            let opset = imp.opset_of("ai.onnx.ml", 0);
            if opset < 5 {
                bail!(
                    "TreeEnsemble is an op of ai.onnx.ml opset 5; the model imports opset {opset} of that domain"
                );
            }
            super::trees::tree_ensemble(imp, node)
        }
        op => Err(ImportError::new(format!(
            "unsupported op '{op}' of domain 'ai.onnx.ml': tcc imports {} of that domain",
            ML_OPS.join(", ")
        ))),
    }
}

/// The `ai.onnx.ml` ops tcc imports.
pub const ML_OPS: &[&str] = &[
    "ArrayFeatureExtractor",
    "Binarizer",
    "LinearClassifier",
    "LinearRegressor",
    "Normalizer",
    "Scaler",
    "TreeEnsemble",
    "TreeEnsembleRegressor",
];

/// X as a float matrix `[N, C]` (double stays double, as the reference
/// computes it; integers and halves become float32).
fn as_matrix(imp: &mut Importer, node: &Node) -> Result<(Value, i64, i64)> {
    let x = node.input(0)?.clone();
    let (n, c) = match x.shape().as_slice() {
        [c] => (1, *c),
        [n, c] => (*n, *c),
        shape => bail!("{}'s input must be [N, C] or [C], not {shape:?}", node.op()),
    };
    let to = if x.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    if !matches!(
        x.dtype(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 | DType::I32 | DType::I64
    ) {
        bail!(
            "{}'s input must be float, double or integer, not {}",
            node.op(),
            x.dtype()
        );
    }
    let x = if x.dtype() == to {
        x
    } else {
        synthetic(
            imp,
            "Cast",
            vec![x],
            vec![int_attr("to", to.onnx_code() as i64)],
        )?
    };
    Ok((reshape_value(imp, &x, &[n, c])?, n, c))
}

/// `X · coefficientsᵀ + intercepts` for `rows` rows of coefficients.
fn linear_scores(imp: &mut Importer, node: &Node, x: Value, c: i64) -> Result<(Value, i64)> {
    let dtype = x.dtype();
    let coefficients = node.floats("coefficients")?.unwrap_or_default();
    if coefficients.is_empty() || coefficients.len() as i64 % c != 0 {
        bail!(
            "{} has {} coefficients, not a whole number of rows of the input's {c} features",
            node.op(),
            coefficients.len()
        );
    }
    let rows = coefficients.len() as i64 / c;
    // Stored transposed: [C, rows].
    let mut w = vec![0.0; coefficients.len()];
    for r in 0..rows as usize {
        for k in 0..c as usize {
            w[k * rows as usize + r] = coefficients[r * c as usize + k] as f64;
        }
    }
    let w = Value::constant(Const::from_f64(dtype, vec![c, rows], &w));
    let mut scores = synthetic(imp, "MatMul", vec![x, w], vec![])?;
    if let Some(b) = node.floats("intercepts")?.filter(|b| !b.is_empty()) {
        if b.len() as i64 != rows && b.len() != 1 {
            bail!(
                "{} has {} intercepts for {rows} rows of coefficients",
                node.op(),
                b.len()
            );
        }
        let b: Vec<f64> = b.iter().map(|&v| v as f64).collect();
        let b = Value::constant(Const::from_f64(dtype, vec![1, b.len() as i64], &b));
        scores = synthetic(imp, "Add", vec![scores, b], vec![])?;
    }
    Ok((scores, rows))
}

/// `post_transform` NONE, LOGISTIC or SOFTMAX (over the last axis).
fn post_transform(imp: &mut Importer, node: &Node, scores: Value) -> Result<Value> {
    match node.string("post_transform", "NONE")?.as_str() {
        "NONE" => Ok(scores),
        "LOGISTIC" => synthetic(imp, "Sigmoid", vec![scores], vec![]),
        "SOFTMAX" => synthetic(imp, "Softmax", vec![scores], vec![int_attr("axis", -1)]),
        other => bail!(
            "{}'s post_transform {other} is not supported (tcc takes NONE, LOGISTIC and SOFTMAX)",
            node.op()
        ),
    }
}

/// `LinearRegressor`: `X · coefficientsᵀ + intercepts`, `[N, targets]`.
fn linear_regressor(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (x, _, c) = as_matrix(imp, node)?;
    let targets = node.int("targets", 1)?;
    let (scores, rows) = linear_scores(imp, node, x, c)?;
    if rows != targets {
        bail!(
            "LinearRegressor has coefficients for {rows} targets, its targets attribute says {targets}"
        );
    }
    one(post_transform(imp, node, scores)?)
}

/// `LinearClassifier`: the scores `X · coefficientsᵀ + intercepts` (one
/// row of coefficients for two classes: the columns `-s, s`), post
/// transformed, and the label of the largest (onnxruntime's and ONNX's
/// reference rules; one score column alone: the first label where the
/// score reaches 0, or 0.5 after a transform, else 0).
fn linear_classifier(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    if node.has("classlabels_strings") && !node.has("classlabels_ints") {
        bail!(
            "LinearClassifier with classlabels_strings: strings are not supported (tcc computes on numeric tensors only; give classlabels_ints)"
        );
    }
    let labels = node.ints("classlabels_ints")?.unwrap_or_default();
    let (x, n, c) = as_matrix(imp, node)?;
    let dtype = x.dtype();
    let (mut scores, rows) = linear_scores(imp, node, x, c)?;
    if rows == 1 && labels.len() == 2 {
        let negated = synthetic(imp, "Neg", vec![scores.clone()], vec![])?;
        scores = super::movement::concat_values(imp, &[&negated, &scores], 1)?;
    } else if rows > 1 && labels.len() as i64 != rows {
        bail!(
            "LinearClassifier has {} classlabels_ints for {rows} rows of coefficients",
            labels.len()
        );
    }
    let scores = post_transform(imp, node, scores)?;
    let columns = scores.shape()[1];
    let label = if columns > 1 {
        let best = synthetic(
            imp,
            "ArgMax",
            vec![scores.clone()],
            vec![int_attr("axis", 1), int_attr("keepdims", 0)],
        )?;
        synthetic(
            imp,
            "Gather",
            vec![
                Value::constant(Const::from_i64(DType::I64, vec![columns], &labels)),
                best,
            ],
            vec![int_attr("axis", 0)],
        )?
    } else {
        let threshold = if node.string("post_transform", "NONE")? == "NONE" {
            0.0
        } else {
            0.5
        };
        let reached = synthetic(
            imp,
            "GreaterOrEqual",
            vec![scores.clone(), scalar(dtype, 2, threshold)],
            vec![],
        )?;
        let first = labels.first().copied().unwrap_or(1);
        let chosen = synthetic(
            imp,
            "Where",
            vec![
                reached,
                Value::constant(Const::from_i64(DType::I64, vec![1, 1], &[first])),
                Value::constant(Const::from_i64(DType::I64, vec![1, 1], &[0])),
            ],
            vec![],
        )?;
        reshape_value(imp, &chosen, &[n])?
    };
    Ok(vec![label, scores])
}

fn scalar(dtype: DType, rank: usize, v: f64) -> Value {
    Value::constant(Const::from_f64(dtype, vec![1; rank], &[v]))
}

/// `Binarizer`: 1 where `X > threshold`, else 0, in X's type.
fn binarizer(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    require_float(&x, "Binarizer's input")?;
    let (dtype, rank) = (x.dtype(), x.rank());
    let threshold = node.float("threshold", 0.0)? as f64;
    let above = synthetic(
        imp,
        "Greater",
        vec![x, scalar(dtype, rank, threshold)],
        vec![],
    )?;
    one(synthetic(
        imp,
        "Where",
        vec![above, scalar(dtype, rank, 1.0), scalar(dtype, rank, 0.0)],
        vec![],
    )?)
}

/// `ArrayFeatureExtractor`: the elements of X's last axis at the indices
/// Y (flattened); a 1-D X gives `[1, k]`.
fn array_feature_extractor(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    let y = node.input(1)?.clone();
    if !matches!(y.dtype(), DType::I64) {
        bail!(
            "ArrayFeatureExtractor's indices must be int64, not {}",
            y.dtype()
        );
    }
    let rank = x.rank();
    if rank == 0 {
        bail!("ArrayFeatureExtractor of a scalar");
    }
    let k = y.ty().numel();
    if k == 0 {
        bail!("ArrayFeatureExtractor needs at least one index");
    }
    let indices = reshape_value(imp, &y, &[k])?;
    let z = synthetic(
        imp,
        "Gather",
        vec![x, indices],
        vec![int_attr("axis", rank as i64 - 1)],
    )?;
    if rank == 1 {
        return one(reshape_value(imp, &z, &[1, k])?);
    }
    one(z)
}

/// One value per feature (the last axis), or one for all.
fn per_feature(node: &Node, name: &str, features: i64) -> Result<Option<Vec<f64>>> {
    match node.floats(name)? {
        None => Ok(None),
        Some(v) if v.len() == 1 || v.len() as i64 == features => {
            Ok(Some(v.iter().map(|&f| f as f64).collect()))
        }
        Some(v) => bail!(
            "{}'s {name} has {} values, the input {features} features",
            node.op(),
            v.len()
        ),
    }
}

/// `Scaler`: `(X - offset) * scale`, per feature, as float32.
fn scaler(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    let rank = x.rank();
    if rank == 0 {
        bail!("Scaler of a scalar");
    }
    let features = x.shape()[rank - 1];
    let x = if x.dtype() == DType::F32 {
        x
    } else {
        synthetic(
            imp,
            "Cast",
            vec![x],
            vec![int_attr("to", DType::F32.onnx_code() as i64)],
        )?
    };
    let vector = |v: Vec<f64>| {
        let mut shape = vec![1; rank];
        shape[rank - 1] = v.len() as i64;
        Value::constant(Const::from_f64(DType::F32, shape, &v))
    };
    let mut y = x;
    if let Some(offset) = per_feature(node, "offset", features)? {
        y = synthetic(imp, "Sub", vec![y, vector(offset)], vec![])?;
    }
    if let Some(scale) = per_feature(node, "scale", features)? {
        y = synthetic(imp, "Mul", vec![y, vector(scale)], vec![])?;
    }
    one(y)
}

/// `Normalizer`: each row (the last axis of a 1-D or 2-D input) divided by
/// its `MAX` (largest magnitude, as scikit-learn's `Normalizer` and ONNX's
/// reference evaluator compute it), `L1` (sum of magnitudes) or `L2`
/// (Euclidean) norm, as float32; a zero norm leaves the row as it is.
fn normalizer(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    let rank = x.rank();
    if !(rank == 1 || rank == 2) {
        bail!("Normalizer takes [C] or [N, C], not {}", x.ty());
    }
    let x = if x.dtype() == DType::F32 {
        x
    } else {
        synthetic(
            imp,
            "Cast",
            vec![x],
            vec![int_attr("to", DType::F32.onnx_code() as i64)],
        )?
    };
    let norm = node.string("norm", "MAX")?;
    let (reduce, of) = match norm.as_str() {
        "MAX" => ("ReduceMax", synthetic(imp, "Abs", vec![x.clone()], vec![])?),
        "L1" => ("ReduceL1", x.clone()),
        "L2" => ("ReduceL2", x.clone()),
        other => bail!("Normalizer's norm '{other}' is not one of MAX, L1, L2"),
    };
    let axes = Value::constant(Const::from_i64(DType::I64, vec![1], &[rank as i64 - 1]));
    let n = synthetic(imp, reduce, vec![of, axes], vec![int_attr("keepdims", 1)])?;
    let zero = synthetic(
        imp,
        "Equal",
        vec![n.clone(), scalar(DType::F32, rank, 0.0)],
        vec![],
    )?;
    let safe = synthetic(
        imp,
        "Where",
        vec![zero, scalar(DType::F32, rank, 1.0), n],
        vec![],
    )?;
    one(synthetic(imp, "Div", vec![x, safe], vec![])?)
}
