//! The `ai.onnx.ml` ops of numeric inference graphs (scikit-learn
//! exports through skl2onnx): `Binarizer`, `ArrayFeatureExtractor`,
//! `Scaler` and `Normalizer`, written in the importer's own ops
//! ([`super::synthetic`]). The ops on strings (`LabelEncoder` with string
//! keys or values, `CategoryMapper`, ...) stop at the string tensor with
//! the error for strings; the others (tree ensembles, linear and SVM
//! models, `OneHotEncoder`, ...) are an error naming the op.

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
        op => Err(ImportError::new(format!(
            "unsupported op '{op}' of domain 'ai.onnx.ml': tcc imports Binarizer, ArrayFeatureExtractor, Scaler and Normalizer of that domain"
        ))),
    }
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
