//! Attention (opsets 23-25). Where the node is exactly `tcc.attention`
//! (no softcap, the scores not asked for as an output) it becomes that op
//! with one additive mask: Q, K and V as 4-D heads (grouped K/V heads read
//! by the op itself), the scale, and the bias below. Otherwise it is the
//! composite: `Q x K^T` (`tosa.matmul`), a scale, the optional softcap
//! (`tanh`), the bias, `tcc.softmax` over the keys and `P x V`.
//!
//! The bias is the sum of what applies: `attn_mask` (float, or bool as
//! 0 / -inf; padded with -inf to the key length), the causal and sliding
//! window masks (import-time constants aligned bottom-right by the past
//! length) and, for `nonpad_kv_seqlen`, a runtime comparison. 3-D inputs
//! are split into heads (`q_num_heads`, `kv_num_heads`), `past_key`/
//! `past_value` concatenated in front of K and V (the `present_*`
//! outputs); in the composite grouped-query K and V heads are repeated.
//! Rows whose bias masks every key give 0, as the spec defines (and
//! `tcc.attention` defines); in the composite by a `tosa.select` on a
//! count of the allowed keys.

use super::super::dtype::DType;
use super::super::emit::{Attr, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::matmul::matmul_vals;

fn kv_len_of(k: &Val) -> i64 {
    k.shape()[2]
}

/// [B, S, H * D] -> [B, H, S, D].
fn split_heads(imp: &mut Importer, x: &Val, heads: i64, what: &str) -> Result<Val> {
    let s = x.shape().to_vec();
    if heads <= 0 || s[2] % heads != 0 {
        bail!(
            "Attention {what}: hidden size {} is not a multiple of {heads} heads",
            s[2]
        );
    }
    let r = imp.e.reshape(x, &[s[0], s[1], heads, s[2] / heads]);
    Ok(imp.e.transpose(&r, &[0, 2, 1, 3]))
}

pub fn attention(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (q_in, k_in, v_in) = (node.input(0)?, node.input(1)?, node.input(2)?);
    require_float(q_in, "Attention's Q")?;
    if k_in.dtype() != q_in.dtype() || v_in.dtype() != q_in.dtype() {
        bail!("Attention Q, K and V must share one element type");
    }
    let rank = q_in.rank();
    if !(rank == 3 || rank == 4) || k_in.rank() != rank || v_in.rank() != rank {
        bail!("Attention needs Q, K and V of rank 3 or 4 alike");
    }
    let dtype = q_in.dtype();
    let mut q = imp.val(q_in)?;
    let mut k = imp.val(k_in)?;
    let mut v = imp.val(v_in)?;
    let q_heads_attr = node.int_opt("q_num_heads")?;
    let kv_heads_attr = node.int_opt("kv_num_heads")?;
    if rank == 3 {
        let (Some(qh), Some(kvh)) = (q_heads_attr, kv_heads_attr) else {
            bail!("Attention with 3-D inputs needs q_num_heads and kv_num_heads");
        };
        q = split_heads(imp, &q, qh, "Q")?;
        k = split_heads(imp, &k, kvh, "K")?;
        v = split_heads(imp, &v, kvh, "V")?;
    }
    let (batch, q_heads, q_len, head) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    if k.shape()[0] != batch || v.shape()[0] != batch || k.shape()[3] != head {
        bail!(
            "Attention shapes Q {:?}, K {:?}, V {:?} do not agree",
            q.shape(),
            k.shape(),
            v.shape()
        );
    }
    // The cache.
    let past_len = match (node.opt(4), node.opt(5)) {
        (Some(pk), Some(pv)) => {
            let pk = imp.val(pk)?;
            let pv = imp.val(pv)?;
            if pk.rank() != 4 || pv.rank() != 4 {
                bail!("Attention past_key/past_value must be 4-D");
            }
            // Appended along the sequence (axis 2): every other extent,
            // and the element type, must be the new keys' and values'.
            let fits = |past: &Val, new: &Val| {
                past.dtype() == new.dtype()
                    && past.shape()[2] >= 0
                    && [0, 1, 3].iter().all(|&a| past.shape()[a] == new.shape()[a])
            };
            if !fits(&pk, &k) || !fits(&pv, &v) {
                bail!(
                    "Attention past_key {} and past_value {} do not match K {} and V {} but along the sequence (axis 2)",
                    pk.ty,
                    pv.ty,
                    k.ty,
                    v.ty
                );
            }
            let len = pk.shape()[2];
            k = imp.e.concat(&[pk, k], 2);
            v = imp.e.concat(&[pv, v], 2);
            len
        }
        (None, None) => 0,
        _ => bail!("Attention takes past_key and past_value together"),
    };
    if (q_len as i128) * (kv_len_of(&k) as i128) > super::super::fold::FOLD_LIMIT as i128 {
        bail!(
            "Attention with {q_len} queries and {} keys is too large",
            kv_len_of(&k)
        );
    }
    let present_k = k.clone();
    let present_v = v.clone();
    let kv_len = k.shape()[2];
    let kv_heads = k.shape()[1];
    if v.shape()[1] != kv_heads || v.shape()[2] != kv_len {
        bail!("Attention K {:?} and V {:?} differ", k.shape(), v.shape());
    }
    // Without a softcap and without the scores as an output, the node is
    // exactly `tcc.attention` (whose fully masked rows are 0, as here):
    // one op instead of the chain `tcc-raise-attention` would have to
    // find again. The op reads grouped K/V heads itself.
    let softcap = node.float("softcap", 0.0)? as f64;
    let qk_wanted = node.proto.output.get(3).is_some_and(|n| !n.is_empty());
    let direct = softcap == 0.0 && !qk_wanted && v.shape()[3] == head;
    if q_heads != kv_heads && (kv_heads == 0 || q_heads % kv_heads != 0) {
        bail!("Attention: {q_heads} query heads are not a multiple of {kv_heads} key/value heads");
    }
    // Grouped-query attention: each K/V head serves q_heads / kv_heads
    // consecutive query heads.
    if q_heads != kv_heads && !direct {
        let reps = q_heads / kv_heads;
        let repeat = |imp: &mut Importer, x: &Val| -> Val {
            let s = x.shape().to_vec();
            let r = imp.e.reshape(x, &[s[0], s[1], 1, s[2], s[3]]);
            let t = imp.e.tile(&r, &[1, 1, reps, 1, 1]);
            imp.e.reshape(&t, &[s[0], s[1] * reps, s[2], s[3]])
        };
        k = repeat(imp, &k);
        v = repeat(imp, &v);
    }
    let scale = match node.float_opt("scale")? {
        Some(s) => s as f64,
        None => 1.0 / (head as f64).sqrt(),
    };
    let scores_shape = [batch, q_heads, q_len, kv_len];
    let mut qk = if direct {
        // Not emitted: only its type is needed below.
        Val::placeholder(q.ty.with_shape(scores_shape.to_vec()))
    } else {
        let kt = imp.e.transpose(&k, &[0, 1, 3, 2]);
        let qk = matmul_vals(imp, &q, &kt)?;
        imp.e.scale(&qk, scale)?
    };
    if softcap > 0.0 {
        let d = imp.e.scale(&qk, 1.0 / softcap)?;
        let t = imp.e.unary("tosa.tanh", &d);
        qk = imp.e.scale(&t, softcap)?;
    }
    let qk_capped = qk.clone();

    // The import-time part of the bias: causal and window masks.
    let is_causal = node.int("is_causal", 0)? != 0;
    let left = node.int("left_window_size", -1)?;
    let right = node.int("right_window_size", -1)?;
    if left < -1 || right < -1 {
        bail!("Attention window sizes must be -1 or non-negative");
    }
    let nonpad = node.opt(6);
    if nonpad.is_some() && past_len > 0 {
        bail!("Attention nonpad_kv_seqlen cannot be combined with past_key/past_value");
    }
    let neg_inf = f64::NEG_INFINITY;
    let mut static_bias: Option<Vec<f64>> = None;
    let mut runtime_parts: Vec<Val> = Vec::new();
    let band = |i: i64, j: i64, offset: i64| -> bool {
        let diff = i + offset - j;
        (!is_causal || diff >= 0) && (left < 0 || diff <= left) && (right < 0 || -diff <= right)
    };
    if nonpad.is_none() && (is_causal || left >= 0 || right >= 0) {
        let mut b = vec![0.0; (q_len * kv_len) as usize];
        for i in 0..q_len {
            for j in 0..kv_len {
                if !band(i, j, past_len) {
                    b[(i * kv_len + j) as usize] = neg_inf;
                }
            }
        }
        static_bias = Some(b);
    }
    if let Some(n) = nonpad {
        // Per batch: keys j < len[b] are kept; causal/window frontiers are
        // offset by len[b] - q_len: allowed iff the band holds for
        // diff = i + len[b] - q_len - j.
        if n.shape() != [batch] || !n.dtype().is_int() {
            bail!("Attention nonpad_kv_seqlen must be an integer [batch] tensor");
        }
        let len = imp.val(n)?;
        let len = imp.e.cast(&len, DType::I32);
        let len = imp.e.reshape(&len, &[batch, 1, 1, 1]);
        let keys: Vec<i64> = (0..kv_len).collect();
        let keys = imp.e.constant(
            &Const::from_i64(DType::I32, vec![1, 1, 1, kv_len], &keys),
            "keys",
        )?;
        let mut allowed = imp.e.binary_to("tosa.greater", &len, &keys, DType::Bool)?;
        if is_causal || left >= 0 || right >= 0 {
            // d[i, j] = j - i + q_len; diff = len - d.
            let d: Vec<i64> = (0..q_len)
                .flat_map(|i| (0..kv_len).map(move |j| j - i + q_len))
                .collect();
            let d = imp.e.constant(
                &Const::from_i64(DType::I32, vec![1, 1, q_len, kv_len], &d),
                "frontier",
            )?;
            let diff = imp.e.sub(&len, &d)?;
            let zero = imp.e.scalar(DType::I32, 4, 0.0);
            if is_causal {
                let ok = imp
                    .e
                    .binary_to("tosa.greater_equal", &diff, &zero, DType::Bool)?;
                allowed = imp
                    .e
                    .binary_to("tosa.logical_and", &allowed, &ok, DType::Bool)?;
            }
            if left >= 0 {
                let l = imp.e.scalar(DType::I32, 4, left as f64);
                let ok = imp
                    .e
                    .binary_to("tosa.greater_equal", &l, &diff, DType::Bool)?;
                allowed = imp
                    .e
                    .binary_to("tosa.logical_and", &allowed, &ok, DType::Bool)?;
            }
            if right >= 0 {
                let r = imp.e.scalar(DType::I32, 4, -right as f64);
                let ok = imp
                    .e
                    .binary_to("tosa.greater_equal", &diff, &r, DType::Bool)?;
                allowed = imp
                    .e
                    .binary_to("tosa.logical_and", &allowed, &ok, DType::Bool)?;
            }
        }
        let zero = imp.e.scalar(dtype, 4, 0.0);
        let ninf = imp.e.scalar(dtype, 4, neg_inf);
        runtime_parts.push(imp.e.select(&allowed, &zero, &ninf)?);
    }
    // attn_mask: bool (true = attend) or additive, padded to the key length.
    let mut const_mask: Option<Const> = None;
    if let Some(m) = node.opt(3) {
        let ms = m.shape();
        if ms.is_empty() || ms.len() > 4 {
            bail!("Attention attn_mask of rank {}", ms.len());
        }
        let last = *ms.last().unwrap();
        if last > kv_len {
            bail!("Attention attn_mask has {last} keys, more than the {kv_len} of K");
        }
        let additive: Value = match m {
            Value::Const(c) => {
                let values: Vec<f64> = if c.dtype == DType::Bool {
                    c.i64s()
                        .iter()
                        .map(|&b| if b != 0 { 0.0 } else { neg_inf })
                        .collect()
                } else if c.dtype.is_float() {
                    c.f64s()
                } else {
                    bail!("Attention attn_mask must be bool or float, not {}", c.dtype)
                };
                Value::constant(Const::from_f64(dtype, ms.clone(), &values))
            }
            Value::Tensor(t) => {
                if t.dtype() == DType::Bool {
                    let zero = imp.e.scalar(dtype, t.rank(), 0.0);
                    let ninf = imp.e.scalar(dtype, t.rank(), neg_inf);
                    Value::Tensor(imp.e.select(t, &zero, &ninf)?)
                } else if t.dtype() == dtype {
                    Value::Tensor(t.clone())
                } else {
                    bail!(
                        "Attention attn_mask must be bool or {dtype}, not {}",
                        t.dtype()
                    )
                }
            }
        };
        let padded = if last < kv_len {
            let mut pads = vec![(0, 0); ms.len()];
            pads[ms.len() - 1] = (0, kv_len - last);
            match &additive {
                Value::Const(c) => {
                    let mut shape = ms.clone();
                    *shape.last_mut().unwrap() = kv_len;
                    let src = c.f64s();
                    let rows = src.len() / last.max(1) as usize;
                    let mut out = Vec::with_capacity(rows * kv_len as usize);
                    for r in 0..rows {
                        out.extend_from_slice(&src[r * last as usize..(r + 1) * last as usize]);
                        out.extend(std::iter::repeat_n(neg_inf, (kv_len - last) as usize));
                    }
                    Value::constant(Const::from_f64(dtype, shape, &out))
                }
                Value::Tensor(t) => Value::Tensor(imp.e.pad(t, &pads, neg_inf)),
            }
        } else {
            additive
        };
        match padded {
            Value::Const(c) => const_mask = Some((*c).clone()),
            Value::Tensor(t) => runtime_parts.push(t),
        }
    }
    // One bias: constants folded together (into [.., q_len, kv_len]).
    let mut bias_const: Option<Const> = match (static_bias, const_mask) {
        (None, None) => None,
        (Some(b), None) => Some(Const::from_f64(dtype, vec![q_len, kv_len], &b)),
        (None, Some(m)) => Some(m),
        (Some(b), Some(m)) => {
            let bc = Const::from_f64(dtype, vec![q_len, kv_len], &b);
            let Some(shape) = super::super::emit::broadcast_shapes(&m.shape, &bc.shape) else {
                bail!(
                    "Attention attn_mask {:?} does not broadcast to [{q_len}, {kv_len}]",
                    m.shape
                );
            };
            let mb = super::super::fold::broadcast(&m, &shape).f64s();
            let bb = super::super::fold::broadcast(&bc, &shape).f64s();
            let sum: Vec<f64> = mb.iter().zip(&bb).map(|(a, b)| a + b).collect();
            Some(Const::from_f64(dtype, shape, &sum))
        }
    };
    // A constant bias of zeros changes nothing.
    if bias_const
        .as_ref()
        .is_some_and(|c| c.f64s().iter().all(|&x| x == 0.0))
    {
        bias_const = None;
    }
    let mut bias: Option<Val> = match &bias_const {
        Some(c) => Some(imp.e.constant(c, "attention_bias")?),
        None => None,
    };
    let bias_is_runtime = !runtime_parts.is_empty();
    for part in runtime_parts {
        bias = Some(match bias {
            Some(b) => imp.e.add(&b, &part)?,
            None => part,
        });
    }
    if direct {
        let mask = match &bias {
            Some(b) => {
                let b = imp.e.to_rank(b, 4);
                let fits = b
                    .shape()
                    .iter()
                    .zip(scores_shape)
                    .all(|(&m, full)| m == 1 || m == full);
                if !fits {
                    bail!(
                        "Attention attn_mask does not broadcast to the scores {:?}",
                        qk.shape()
                    );
                }
                Some(b)
            }
            None => None,
        };
        let mut operands = vec![&q, &k, &v];
        if let Some(m) = &mask {
            operands.push(m);
        }
        let ty = q.ty.clone();
        let attrs = [("scale", Attr::Float(scale, DType::F32))];
        let y = imp.e.op("tcc.attention", &operands, &attrs, ty);
        return Ok(attention_outputs(imp, y, rank, present_k, present_v, None));
    }
    let scores = match &bias {
        Some(b) => imp.e.add(&qk, b)?,
        None => qk.clone(),
    };
    if scores.shape() != qk.shape() {
        bail!(
            "Attention attn_mask does not broadcast to the scores {:?}",
            qk.shape()
        );
    }
    let precision = node.int_opt("softmax_precision")?;
    if let Some(p) = precision
        && !matches!(p, 1 | 10 | 11 | 16)
    {
        bail!("Attention softmax_precision {p} is not a float type");
    }
    let ty = scores.ty.clone();
    let mut probs = imp
        .e
        .op("tcc.softmax", &[&scores], &[("axis", Attr::i64(3))], ty);
    // Rows whose bias masks every key are 0: decided at import time for a
    // constant bias, else from a runtime count of the allowed keys.
    if let Some(b) = &bias {
        let none = match (&bias_const, bias_is_runtime) {
            (Some(c), false) => {
                let kv = *c.shape.last().unwrap() as usize;
                let values = c.f64s();
                let rows: Vec<i64> = values
                    .chunks(kv.max(1))
                    .map(|r| r.iter().all(|&x| x == neg_inf) as i64)
                    .collect();
                if rows.iter().all(|&r| r == 0) {
                    None
                } else {
                    let mut shape = c.shape.clone();
                    *shape.last_mut().unwrap() = 1;
                    Some(
                        imp.e
                            .constant(&Const::from_i64(DType::Bool, shape, &rows), "masked_rows")?,
                    )
                }
            }
            _ => {
                let ninf = imp.e.scalar(dtype, b.rank(), neg_inf);
                let is_masked = imp.e.binary_to("tosa.equal", b, &ninf, DType::Bool)?;
                let one = imp.e.scalar(dtype, b.rank(), 1.0);
                let zero = imp.e.scalar(dtype, b.rank(), 0.0);
                let allowed = imp.e.select(&is_masked, &zero, &one)?;
                let count = imp.e.reduce("tosa.reduce_sum", &allowed, b.rank() - 1);
                let zero_c = imp.e.scalar(dtype, count.rank(), 0.0);
                Some(
                    imp.e
                        .binary_to("tosa.equal", &count, &zero_c, DType::Bool)?,
                )
            }
        };
        if let Some(none) = none {
            let zeros = imp.e.scalar(dtype, 4, 0.0);
            probs = imp.e.select(&none, &zeros, &probs)?;
        }
    }
    let y = matmul_vals(imp, &probs, &v)?;
    let mode = node.int("qk_matmul_output_mode", 0)?;
    let qk_out = match mode {
        0 | 1 => qk_capped,
        2 => scores,
        3 => probs,
        other => bail!("Attention qk_matmul_output_mode {other} (0 to 3)"),
    };
    Ok(attention_outputs(
        imp,
        y,
        rank,
        present_k,
        present_v,
        Some(qk_out),
    ))
}

/// The node's outputs: `Y` ([B, H, S, D], merged back to [B, S, H * D]
/// for 3-D inputs), `present_key`, `present_value` and, where computed,
/// the scores output (`qk_matmul_output_mode`).
fn attention_outputs(
    imp: &mut Importer,
    y: Val,
    rank: usize,
    present_k: Val,
    present_v: Val,
    qk_out: Option<Val>,
) -> Vec<Value> {
    let y = if rank == 3 {
        let t = imp.e.transpose(&y, &[0, 2, 1, 3]);
        let s = t.shape().to_vec();
        imp.e.reshape(&t, &[s[0], s[1], s[2] * s[3]])
    } else {
        y
    };
    let mut outputs = vec![
        Value::Tensor(y),
        Value::Tensor(present_k),
        Value::Tensor(present_v),
    ];
    outputs.extend(qk_out.map(Value::Tensor));
    outputs
}
