//! The loss functions NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
//! (ordinary default-domain ops: the spec allows them in inference graphs,
//! e.g. a model that reports its own loss). The class of each target picks
//! its input through a one-hot mask (`target == iota(C)`) and a sum over
//! the class axis, so targets computed at run time need no gather; weights
//! are picked the same way, `ignore_index` zeroes an entry's weight.

use super::super::dtype::DType;
use super::super::emit::{Attr, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;

/// The loss of log-probabilities `x` (`[N, C, d...]`) for `target`
/// (`[N, d...]`) with the node's weight (input 2), `ignore_index` and
/// `reduction`.
fn nll(imp: &mut Importer, node: &Node, x: &Val) -> Result<Val> {
    let op = node.op();
    let target = node.input(1)?;
    let shape = x.shape().to_vec();
    if shape.len() < 2 {
        bail!("{op}'s input must be [N, C, ...], not {shape:?}");
    }
    let (n, c) = (shape[0], shape[1]);
    let mut want = vec![n];
    want.extend_from_slice(&shape[2..]);
    if target.shape() != want || !target.dtype().is_int() {
        bail!(
            "{op}'s target must be integers of shape {want:?}, not {}",
            target.ty()
        );
    }
    let d: i64 = shape[2..].iter().product();
    let dtype = x.dtype();
    let x3 = imp.e.reshape(x, &[n, c, d]);
    let t = imp.val(target)?;
    let t = imp.e.reshape(&t, &[n, 1, d]);
    let classes: Vec<i64> = (0..c).collect();
    let iota = Const::from_i64(t.dtype(), vec![1, c, 1], &classes);
    let iota = imp.e.constant(&iota, "classes")?;
    let onehot = imp.e.binary_to("tosa.equal", &t, &iota, DType::Bool)?;
    let zeros = imp.e.splat(dtype, vec![1, 1, 1], 0.0);
    let chosen = imp.e.select(&onehot, &x3, &zeros)?;
    let picked = imp.e.reduce("tosa.reduce_sum", &chosen, 1);
    // The weight of each entry: weight[target], 0 where ignored.
    let mut weight = match node.opt(2) {
        Some(w) => {
            if w.shape() != [c] || w.dtype() != dtype {
                bail!("{op}'s weight must be [{c}] of {dtype}, not {}", w.ty());
            }
            let w = imp.val(w)?;
            let w = imp.e.reshape(&w, &[1, c, 1]);
            let chosen = imp.e.select(&onehot, &w, &zeros)?;
            Some(imp.e.reduce("tosa.reduce_sum", &chosen, 1))
        }
        None => None,
    };
    if let Some(ignore) = node.int_opt("ignore_index")? {
        let ignored = imp.e.splat(t.dtype(), vec![1, 1, 1], ignore as f64);
        let is_ignored = imp.e.binary_to("tosa.equal", &t, &ignored, DType::Bool)?;
        let base = match weight {
            Some(w) => w,
            None => imp.e.splat(dtype, vec![n, 1, d], 1.0),
        };
        weight = Some(imp.e.select(&is_ignored, &zeros, &base)?);
    }
    let neg = imp.e.negate(&picked);
    let loss = match &weight {
        Some(w) => imp.e.mul(&neg, w)?,
        None => neg,
    };
    let reduction = node.string("reduction", "mean")?;
    let sum_all = |imp: &mut Importer, v: &Val| -> Val {
        let s = imp.e.reduce_axes("tosa.reduce_sum", v, &[0, 1, 2]);
        imp.e.reshape(&s, &[])
    };
    Ok(match reduction.as_str() {
        "none" => imp.e.reshape(&loss, &want),
        "sum" => sum_all(imp, &loss),
        "mean" => {
            let total = sum_all(imp, &loss);
            match &weight {
                Some(w) => {
                    let count = sum_all(imp, w);
                    imp.e.div(&total, &count)?
                }
                None => imp.e.scale(&total, 1.0 / (n * d) as f64)?,
            }
        }
        other => bail!("{op}'s reduction '{other}' is not none, sum or mean"),
    })
}

/// NegativeLogLikelihoodLoss (opsets 12, 13).
pub fn nll_loss(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    require_float(x, "NegativeLogLikelihoodLoss's input")?;
    let x = imp.val(x)?;
    Ok(vec![Value::Tensor(nll(imp, node, &x)?)])
}

/// SoftmaxCrossEntropyLoss (opsets 12, 13): the loss of the log-softmax
/// over the class axis, which is its optional second output.
pub fn softmax_cross_entropy(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    require_float(x, "SoftmaxCrossEntropyLoss's scores")?;
    let x = imp.val(x)?;
    if x.rank() < 2 {
        bail!(
            "SoftmaxCrossEntropyLoss's scores must be [N, C, ...], not {:?}",
            x.shape()
        );
    }
    let ty = x.ty.clone();
    let log_prob = imp
        .e
        .op("tcc.log_softmax", &[&x], &[("axis", Attr::i64(1))], ty);
    let loss = nll(imp, node, &log_prob)?;
    Ok(vec![Value::Tensor(loss), Value::Tensor(log_prob)])
}
