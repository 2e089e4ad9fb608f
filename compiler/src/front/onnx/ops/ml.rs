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
        "LabelEncoder" => label_encoder(imp, node),
        "OneHotEncoder" => one_hot_encoder(imp, node),
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
    "LabelEncoder",
    "LinearClassifier",
    "LinearRegressor",
    "Normalizer",
    "OneHotEncoder",
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

/// A numeric key list: integers or floats (attribute lists, or opset 4's
/// `keys_tensor`), as f64 with their type.
fn numeric_list(node: &Node, kind: &str) -> Result<Option<(DType, Vec<f64>)>> {
    if node.has(&format!("{kind}_strings")) {
        bail!(
            "{} with {kind}_strings: strings are not supported (tcc computes on numeric tensors only)",
            node.op()
        );
    }
    if let Some(v) = node
        .ints(&format!("{kind}_int64s"))?
        .filter(|v| !v.is_empty())
    {
        return Ok(Some((DType::I64, v.iter().map(|&i| i as f64).collect())));
    }
    if let Some(v) = node
        .floats(&format!("{kind}_floats"))?
        .filter(|v| !v.is_empty())
    {
        return Ok(Some((DType::F32, v.iter().map(|&f| f as f64).collect())));
    }
    if let Some(t) = node.tensor(&format!("{kind}_tensor"))? {
        let c = super::super::tensor::decode(t, None, kind)?;
        if !(c.dtype.is_float() || matches!(c.dtype, DType::I64 | DType::I32)) {
            bail!(
                "{}'s {kind}_tensor of type {} is not supported (numbers only)",
                node.op(),
                c.dtype
            );
        }
        return Ok(Some((c.dtype, c.f64s())));
    }
    Ok(None)
}

/// `x == key` over a new last axis of `keys.len()`, as bool `[..., K]`
/// (a NaN matches no key, NaN keys included, as in onnxruntime).
fn matches_keys(imp: &mut Importer, x: &Value, keys: &[f64]) -> Result<Value> {
    let rank = x.rank();
    let mut shape = x.shape().to_vec();
    shape.push(1);
    let column = reshape_value(imp, x, &shape)?;
    let mut key_shape = vec![1; rank];
    key_shape.push(keys.len() as i64);
    let key_values = Value::constant(Const::from_f64(x.dtype(), key_shape, keys));
    synthetic(imp, "Equal", vec![column, key_values], vec![])
}

/// `LabelEncoder` (ai.onnx.ml 2 and 4) with numeric keys and values: each
/// element's value at its key (the last of equal keys, as the reference's
/// map), else the default (a NaN finds no key); string keys or values are
/// the error for strings.
fn label_encoder(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    let Some((key_type, keys)) = numeric_list(node, "keys")? else {
        bail!(
            "LabelEncoder has no keys (keys_int64s, keys_floats or keys_tensor; opset 1's classes_strings are strings)"
        )
    };
    let Some((value_type, values)) = numeric_list(node, "values")? else {
        bail!("LabelEncoder has no values (values_int64s, values_floats or values_tensor)")
    };
    if keys.len() != values.len() {
        bail!(
            "LabelEncoder has {} keys and {} values",
            keys.len(),
            values.len()
        );
    }
    if key_type.is_float() != x.dtype().is_float() {
        bail!(
            "LabelEncoder's keys are {key_type} and its input {}: the types must agree",
            x.dtype()
        );
    }
    let default = if let Some(t) = node.tensor("default_tensor")? {
        super::super::tensor::decode(t, None, "default_tensor")?.f64_at(0)
    } else if value_type.is_float() {
        node.float("default_float", -0.0)? as f64
    } else {
        node.int("default_int64", -1)? as f64
    };
    // The last value of each key, in the order of first appearance.
    let mut unique: Vec<(f64, f64)> = Vec::new();
    for (&k, &v) in keys.iter().zip(&values) {
        match unique.iter_mut().find(|(u, _)| *u == k) {
            Some(entry) => entry.1 = v,
            None => unique.push((k, v)),
        }
    }
    let keys: Vec<f64> = unique.iter().map(|(k, _)| *k).collect();
    let values: Vec<f64> = unique.iter().map(|(_, v)| *v).collect();
    let out_type = if value_type.is_float() {
        value_type
    } else {
        DType::I64
    };
    let rank = x.rank();
    let hits = matches_keys(imp, &x, &keys)?;
    let hits = synthetic(
        imp,
        "Cast",
        vec![hits],
        vec![int_attr("to", DType::I32.onnx_code() as i64)],
    )?;
    let index = synthetic(
        imp,
        "ArgMax",
        vec![hits.clone()],
        vec![int_attr("axis", rank as i64), int_attr("keepdims", 0)],
    )?;
    let found = synthetic(
        imp,
        "ReduceMax",
        vec![
            hits,
            Value::constant(Const::from_i64(DType::I64, vec![1], &[rank as i64])),
        ],
        vec![int_attr("keepdims", 0)],
    )?;
    let found = synthetic(
        imp,
        "Cast",
        vec![found],
        vec![int_attr("to", DType::Bool.onnx_code() as i64)],
    )?;
    let mapped = synthetic(
        imp,
        "Gather",
        vec![
            Value::constant(Const::from_f64(
                out_type,
                vec![values.len() as i64],
                &values,
            )),
            index,
        ],
        vec![int_attr("axis", 0)],
    )?;
    one(synthetic(
        imp,
        "Where",
        vec![
            found,
            mapped,
            Value::constant(Const::from_f64(out_type, vec![1; rank], &[default])),
        ],
        vec![],
    )?)
}

/// `OneHotEncoder` (ai.onnx.ml 1) with integer categories: `[..., C]` of
/// float 1 where the element is the category. `zeros = 0` asks for an
/// error on a value of no category, which a compiled program cannot raise
/// at run time: such a row is all zeros (as with `zeros = 1`).
fn one_hot_encoder(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    if node.has("cats_strings") && !node.has("cats_int64s") {
        bail!(
            "OneHotEncoder with cats_strings: strings are not supported (tcc computes on numeric tensors only)"
        );
    }
    let cats = node.ints("cats_int64s")?.unwrap_or_default();
    if cats.is_empty() {
        bail!("OneHotEncoder has no categories (cats_int64s)");
    }
    let x = node.input(0)?.clone();
    let x = match x.dtype() {
        DType::I64 => x,
        DType::I32 | DType::F32 | DType::F64 => synthetic(
            imp,
            "Cast",
            vec![x],
            vec![int_attr("to", DType::I64.onnx_code() as i64)],
        )?,
        other => bail!("OneHotEncoder's input must be int64, int32, float or double, not {other}"),
    };
    let cats: Vec<f64> = cats.iter().map(|&c| c as f64).collect();
    let hits = matches_keys(imp, &x, &cats)?;
    one(synthetic(
        imp,
        "Cast",
        vec![hits],
        vec![int_attr("to", DType::F32.onnx_code() as i64)],
    )?)
}
