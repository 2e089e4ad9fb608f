//! `FlexAttention` (domain `ai.onnx.preview`, opset 1, the ONNX 1.20
//! preview of PyTorch's `flex_attention`): scaled dot-product attention
//! over rank-4 Q/K/V with two user subgraphs, `score_mod` (applied to the
//! scaled scores `Q·Kᵀ`) and `prob_mod` (applied to the softmax). The
//! subgraphs take and return a whole `[B, H, L, S]` tensor, so they are
//! imported inline (like an `If` branch) on the scores and the
//! probabilities: elementwise math, masks built from `Shape`/`Range` (which
//! fold, the shapes being static) and constants all compile to ordinary
//! kernels around the two matmuls and the softmax. Grouped K/V heads
//! (`q_num_heads` a multiple of `kv_num_heads`) are repeated to the query
//! heads. Half inputs compute in float32 (the op's `softmax_precision`
//! default), double ones in float64.

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::super::ops::shape::reshape_value;
use super::super::ops::{int_attr as int, ints_attr as ints, synthetic as op};
use super::super::proto::{AttributeProto, NodeProto};
use super::super::tensor::Const;
use super::Importer;
use super::control::Body;
use super::half;
use super::nodes::Walk;
use super::scope::{Item, Scope};

/// Imports a `FlexAttention` node (`items`: Q, K, V).
pub(super) fn import(
    imp: &mut Importer,
    proto: &NodeProto,
    items: &[Option<Item>],
    walk: Walk,
    scope: &Scope,
    location: &str,
) -> Result<Vec<Item>> {
    let input = |i: usize, name: &str| -> Result<Value> {
        match items.get(i) {
            Some(Some(item)) => Ok(item.tensor(&format!("FlexAttention's {name}"))?.clone()),
            _ => bail!("FlexAttention needs its input {name} (#{i})"),
        }
    };
    let (q, k, v) = (input(0, "Q")?, input(1, "K")?, input(2, "V")?);
    for (x, name) in [(&q, "Q"), (&k, "K"), (&v, "V")] {
        if x.rank() != 4 {
            bail!(
                "FlexAttention's {name} must be rank 4 (batch, heads, sequence, head size), not {}",
                x.ty()
            );
        }
    }
    let dtype = q.dtype();
    if k.dtype() != dtype || v.dtype() != dtype {
        bail!("FlexAttention's Q, K and V must have one element type");
    }
    // The type the scores and probabilities are computed in.
    let compute = match dtype {
        DType::F32 | DType::F16 | DType::BF16 => DType::F32,
        DType::F64 => DType::F64,
        other => bail!("FlexAttention on {other} tensors is not supported (float types only)"),
    };
    if let Some(p) = attr(proto, "softmax_precision").map(|a| a.i)
        && DType::from_onnx(p as i32) != Some(compute)
    {
        bail!(
            "FlexAttention's softmax_precision {} is not supported: tcc computes {dtype} attention in {compute}",
            DType::onnx_code_name(p as i32)
        );
    }
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    let (batch, q_heads, q_len, head) = (qs[0], qs[1], qs[2], qs[3]);
    let (kv_heads, kv_len) = (ks[1], ks[2]);
    if ks[0] != batch || vs[0] != batch || vs[1] != kv_heads || vs[2] != kv_len || ks[3] != head {
        bail!(
            "FlexAttention's shapes disagree: Q {}, K {}, V {} (K must be [batch, kv_heads, kv_len, head_size] and V [batch, kv_heads, kv_len, v_head_size])",
            q.ty(),
            k.ty(),
            v.ty()
        );
    }
    if kv_heads == 0 || q_heads % kv_heads != 0 {
        bail!(
            "FlexAttention's query heads ({q_heads}) must be a multiple of its key/value heads ({kv_heads})"
        );
    }
    let [q, k, v] = [&q, &k, &v].map(|x| half::widen(imp, x));
    let (q, mut k, mut v) = (q?, k?, v?);
    let group = q_heads / kv_heads;
    if group > 1 {
        k = repeat_heads(imp, &k, group)?;
        v = repeat_heads(imp, &v, group)?;
    }
    let scale = match attr(proto, "scale") {
        Some(a) => a.f as f64,
        None => 1.0 / (head as f64).sqrt(),
    };
    let kt = op(imp, "Transpose", vec![k], vec![ints("perm", &[0, 1, 3, 2])])?;
    let scores = op(imp, "MatMul", vec![q, kt], vec![])?;
    let factor = Value::constant(Const::from_f64(compute, vec![], &[scale]));
    let mut scores = op(imp, "Mul", vec![scores, factor], vec![])?;
    let want = vec![batch, q_heads, q_len, kv_len];
    if let Some(graph) = proto.attribute.iter().find(|a| a.name == "score_mod") {
        scores = modifier(
            imp,
            graph,
            scores,
            &want,
            walk,
            scope,
            location,
            "score_mod",
        )?;
    }
    let mut probs = op(imp, "Softmax", vec![scores], vec![int("axis", -1)])?;
    if let Some(graph) = proto.attribute.iter().find(|a| a.name == "prob_mod") {
        probs = modifier(imp, graph, probs, &want, walk, scope, location, "prob_mod")?;
    }
    let y = op(imp, "MatMul", vec![probs, v], vec![])?;
    let y = match dtype {
        DType::F16 | DType::BF16 => half::narrow(imp, y, dtype)?,
        _ => y,
    };
    Ok(vec![Item::Tensor(y)])
}

/// Imports the modifier subgraph `attr` (`score_mod` or `prob_mod`) on
/// `x`; its result must keep the shape `want` and the element type.
#[allow(clippy::too_many_arguments)]
fn modifier(
    imp: &mut Importer,
    attr: &AttributeProto,
    x: Value,
    want: &[i64],
    walk: Walk,
    scope: &Scope,
    location: &str,
    what: &str,
) -> Result<Value> {
    let Some(graph) = attr.g.as_ref() else {
        bail!("FlexAttention's {what} must be a graph")
    };
    if graph.input.len() != 1 || graph.output.len() != 1 {
        bail!(
            "FlexAttention's {what} must have one input and one output (it has {} and {})",
            graph.input.len(),
            graph.output.len()
        );
    }
    let dtype = x.dtype();
    let body = Body::new(graph, scope)?;
    let out = body
        .run(
            imp,
            walk,
            scope,
            vec![Item::Tensor(x)],
            format!("{location}/{what}/"),
        )
        .map_err(|e| e.context(format!("in FlexAttention's {what}")))?;
    let out = out[0]
        .tensor(&format!("FlexAttention's {what} output"))?
        .clone();
    if out.shape() != want || out.dtype() != dtype {
        bail!(
            "FlexAttention's {what} returns {}, but must keep its input's type {dtype} and shape {want:?}",
            out.ty()
        );
    }
    Ok(out)
}

/// `x` (`[B, H, S, D]`) with each head repeated `group` times in a row
/// (`[B, H * group, S, D]`): grouped-query attention's K/V heads.
fn repeat_heads(imp: &mut Importer, x: &Value, group: i64) -> Result<Value> {
    let s = x.shape();
    let five = reshape_value(imp, x, &[s[0], s[1], 1, s[2], s[3]])?;
    let repeats = Value::constant(Const::from_i64(DType::I64, vec![5], &[1, 1, group, 1, 1]));
    let tiled = op(imp, "Tile", vec![five, repeats], vec![])?;
    reshape_value(imp, &tiled, &[s[0], s[1] * group, s[2], s[3]])
}

fn attr<'a>(proto: &'a NodeProto, name: &str) -> Option<&'a AttributeProto> {
    proto.attribute.iter().find(|a| a.name == name)
}
