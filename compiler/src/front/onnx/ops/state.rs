//! The opset-27 ops of recurrent decoders that carry a state from call to
//! call: `LinearAttention` (linear, gated, delta and gated-delta
//! recurrences, Gated DeltaNet / GLA / RetNet style) and
//! `CausalConvWithState` (the causal depthwise 1-D convolution of Mamba and
//! Gated DeltaNet). Both are imported as the recurrence the spec defines,
//! unrolled over the static sequence length as RNN/GRU/LSTM are
//! (`ops/rnn.rs`): `LinearAttention` as one state update and one read-out
//! (`tosa.matmul`s and elementwise ops) per token, `CausalConvWithState`
//! as a sum of `k` shifted slices of the state-prefixed input, each
//! multiplied by its kernel tap.

use super::super::dtype::DType;
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, tensor_value};
use super::super::tensor::Const;

/// The value of `value` (float, f16/bf16 come widened to f32).
fn float_input(imp: &mut Importer, node: &Node, index: usize, what: &str) -> Result<Val> {
    let value = node.input(index)?;
    if value.dtype() != DType::F32 {
        bail!(
            "{}'s {what} is {}, not float (float16 and bfloat16 compute in float)",
            node.op(),
            value.dtype()
        );
    }
    imp.val(value)
}

/// `x` of shape `[B, T, H * d]` as `[B, H, T, d]`.
fn heads(imp: &mut Importer, x: &Val, h: i64) -> Val {
    let (b, t, hd) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let r = imp.e.reshape(x, &[b, t, h, hd / h]);
    imp.e.transpose(&r, &[0, 2, 1, 3])
}

/// Token `t` of a `[B, H, T, d]` value, as `[B, H, 1, d]`.
fn token(imp: &mut Importer, x: &Val, t: i64) -> Val {
    imp.e.slice_axis(x, 2, t, t + 1)
}

/// `[B, H, 1, d]` as the column `[B, H, d, 1]`.
fn column(imp: &mut Importer, x: &Val) -> Val {
    let s = x.shape();
    imp.e.reshape(x, &[s[0], s[1], s[3], 1])
}

/// `a x b` for 4-D operands `[B, H, m, k] x [B, H, k, n]`.
fn matmul4(imp: &mut Importer, a: &Val, b: &Val) -> Val {
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    let a3 = imp.e.reshape(a, &[sa[0] * sa[1], sa[2], sa[3]]);
    let b3 = imp.e.reshape(b, &[sb[0] * sb[1], sb[2], sb[3]]);
    let c = imp.e.matmul3(&a3, &b3);
    imp.e.reshape(&c, &[sa[0], sa[1], sa[2], sb[3]])
}

/// `LinearAttention(query, key, value, past_state?, decay?, beta?) ->
/// (output, present_state)` (opset 27).
pub fn linear_attention(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let op = node.op();
    let rule = node.string("update_rule", "gated_delta")?;
    let (gated, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        other => {
            bail!("{op}'s update_rule '{other}' is not one of linear, gated, delta, gated_delta")
        }
    };
    let hq = node.int("q_num_heads", 0)?;
    let hkv = node.int("kv_num_heads", 0)?;
    if hq <= 0 || hkv <= 0 || hq % hkv != 0 {
        bail!("{op} needs q_num_heads a positive multiple of kv_num_heads, not {hq} and {hkv}");
    }
    let q = float_input(imp, node, 0, "query")?;
    let k = float_input(imp, node, 1, "key")?;
    let v = float_input(imp, node, 2, "value")?;
    for (x, what, h) in [(&q, "query", hq), (&k, "key", hkv), (&v, "value", hkv)] {
        if x.rank() != 3 || x.shape()[2] % h != 0 {
            bail!(
                "{op}'s {what} of shape {:?} is not [batch, sequence, {h} heads x head size]",
                x.shape()
            );
        }
    }
    let (batch, steps) = (q.shape()[0], q.shape()[1]);
    if k.shape()[..2] != [batch, steps] || v.shape()[..2] != [batch, steps] {
        bail!(
            "{op}: query {:?}, key {:?} and value {:?} differ in batch or sequence length",
            q.shape(),
            k.shape(),
            v.shape()
        );
    }
    let dk = q.shape()[2] / hq;
    let dv = v.shape()[2] / hkv;
    if k.shape()[2] / hkv != dk {
        bail!(
            "{op}: the key's head size {} is not the query's {dk}",
            k.shape()[2] / hkv
        );
    }
    let group = hq / hkv;
    let scale = match node.float("scale", 0.0)? {
        0.0 => 1.0 / (dk as f64).sqrt(),
        s => s as f64,
    };
    let qh = heads(imp, &q, hq);
    let kh = heads(imp, &k, hkv);
    let vh = heads(imp, &v, hkv);
    // Per-head values ([B, T, H] or [B, T, 1]) and per-key-dimension ones
    // ([B, T, H * dk]) as [B, H, T, dk or 1].
    let per_head =
        |imp: &mut Importer, index: usize, what: &str, per_key: bool| -> Result<Option<Val>> {
            if node.opt(index).is_none() {
                return Ok(None);
            }
            let x = float_input(imp, node, index, what)?;
            let s = x.shape().to_vec();
            let ok = s.len() == 3
                && s[..2] == [batch, steps]
                && (s[2] == hkv || s[2] == 1 || (per_key && s[2] == hkv * dk));
            if !ok {
                bail!(
                    "{op}'s {what} of shape {s:?} is not [{batch}, {steps}, {}]",
                    if per_key {
                        format!("{hkv} or {}", hkv * dk)
                    } else {
                        format!("{hkv} or 1")
                    }
                );
            }
            let h = if s[2] == 1 { 1 } else { hkv };
            let r = imp.e.reshape(&x, &[batch, steps, h, s[2] / h]);
            Ok(Some(imp.e.transpose(&r, &[0, 2, 1, 3])))
        };
    let decay = if gated {
        match per_head(imp, 4, "decay", true)? {
            Some(d) => Some(imp.e.unary("tosa.exp", &d)),
            None => bail!("{op} with update_rule '{rule}' needs the decay (input #4)"),
        }
    } else {
        None
    };
    let beta = if delta {
        match per_head(imp, 5, "beta", false)? {
            Some(b) => Some(b),
            None => bail!("{op} with update_rule '{rule}' needs beta (input #5)"),
        }
    } else {
        None
    };
    let state_shape = [batch, hkv, dk, dv];
    let mut state = match node.opt(3) {
        Some(_) => {
            let s = float_input(imp, node, 3, "past_state")?;
            if s.shape() != state_shape {
                bail!(
                    "{op}'s past_state of shape {:?} is not {state_shape:?}",
                    s.shape()
                );
            }
            s
        }
        None => imp.e.splat(DType::F32, state_shape.to_vec(), 0.0),
    };
    let mut outputs = Vec::new();
    for t in 0..steps {
        let k_col = {
            let kt = token(imp, &kh, t);
            column(imp, &kt)
        };
        let v_row = token(imp, &vh, t);
        if let Some(decay) = &decay {
            // exp(g) per key dimension ([B, H, dk, 1]) or per head ([B, H, 1, 1]).
            let g = token(imp, decay, t);
            let g = column(imp, &g);
            state = imp.e.mul(&state, &g)?;
        }
        let write = if let Some(beta) = &beta {
            // beta * (v - S^T k): S^T k as the rows of S weighted by k, summed.
            let weighted = imp.e.mul(&state, &k_col)?;
            let retrieved = imp.e.reduce("tosa.reduce_sum", &weighted, 2);
            let diff = imp.e.sub(&v_row, &retrieved)?;
            let b = token(imp, beta, t);
            imp.e.mul(&diff, &b)?
        } else {
            v_row
        };
        let outer = imp.e.mul(&k_col, &write)?;
        state = imp.e.add(&state, &outer)?;
        // o = scale * q^T S, the query heads of one KV head together.
        let qt = token(imp, &qh, t);
        let q_group = imp.e.reshape(&qt, &[batch, hkv, group, dk]);
        let read = matmul4(imp, &q_group, &state);
        let read = imp.e.scale(&read, scale)?;
        outputs.push(imp.e.reshape(&read, &[batch, 1, hq * dv]));
    }
    let output = imp.e.concat(&outputs, 1);
    Ok(vec![tensor_value(output), tensor_value(state)])
}

/// `CausalConvWithState(input, weight, bias?, past_state?) -> (output,
/// present_state)` (opset 27): `y[b, c, t] = bias[c] + sum_j w[c, 0, j] *
/// x'[b, c, t + j]` over the input prefixed by the state (`x'`, length
/// `L + k - 1`), optionally followed by SiLU; the new state is the last
/// `k - 1` positions of `x'`.
pub fn causal_conv_with_state(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let op = node.op();
    let activation = node.string("activation", "none")?;
    let silu = match activation.as_str() {
        "none" => false,
        "silu" | "swish" => true,
        other => bail!("{op}'s activation '{other}' is not one of none, silu, swish"),
    };
    let x = float_input(imp, node, 0, "input")?;
    let w = float_input(imp, node, 1, "weight")?;
    let xs = x.shape().to_vec();
    let ws = w.shape().to_vec();
    if xs.len() != 3 {
        bail!("{op}'s input of shape {xs:?} is not [batch, channels, length]");
    }
    let (batch, channels, length) = (xs[0], xs[1], xs[2]);
    if ws.len() != 3 || ws[0] != channels || ws[1] != 1 || ws[2] < 1 {
        bail!("{op}'s weight of shape {ws:?} is not [{channels}, 1, kernel size]");
    }
    let taps = ws[2];
    let state_shape = vec![batch, channels, taps - 1];
    let past = match node.opt(3) {
        Some(_) => {
            let s = float_input(imp, node, 3, "past_state")?;
            if s.shape() != state_shape {
                bail!(
                    "{op}'s past_state of shape {:?} is not {state_shape:?}",
                    s.shape()
                );
            }
            Some(s)
        }
        None if taps > 1 => Some(imp.e.splat(DType::F32, state_shape.clone(), 0.0)),
        None => None,
    };
    let full = match &past {
        Some(p) if taps > 1 => imp.e.concat(&[p.clone(), x.clone()], 2),
        _ => x.clone(),
    };
    let mut y: Option<Val> = None;
    for j in 0..taps {
        let window = imp.e.slice_axis(&full, 2, j, j + length);
        let tap = imp.e.slice_axis(&w, 2, j, j + 1);
        let tap = imp.e.reshape(&tap, &[1, channels, 1]);
        let term = imp.e.mul(&window, &tap)?;
        y = Some(match y {
            Some(acc) => imp.e.add(&acc, &term)?,
            None => term,
        });
    }
    let mut y = y.expect("a kernel of at least one tap");
    if node.opt(2).is_some() {
        let bias = float_input(imp, node, 2, "bias")?;
        if bias.shape() != [channels] {
            bail!(
                "{op}'s bias of shape {:?} is not [{channels}]",
                bias.shape()
            );
        }
        let bias = imp.e.reshape(&bias, &[1, channels, 1]);
        y = imp.e.add(&y, &bias)?;
    }
    if silu {
        let s = imp.e.unary("tosa.sigmoid", &y);
        y = imp.e.mul(&y, &s)?;
    }
    let total = full.shape()[2];
    let present = if taps > 1 {
        imp.e.slice_axis(&full, 2, total - (taps - 1), total)
    } else {
        // No state to carry: an empty tensor (a constant of no elements).
        return Ok(vec![
            tensor_value(y),
            Value::constant(Const::from_f64(DType::F32, state_shape, &[])),
        ]);
    };
    Ok(vec![tensor_value(y), tensor_value(present)])
}
