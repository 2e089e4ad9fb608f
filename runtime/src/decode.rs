//! Greedy autoregressive decoding with the key/value cache kept in device
//! memory (issue 33): the loop `tcc-benchmark --decode`, the Rust example
//! `generate` and the Python example run, on any driver
//! ([`DriverSession::run_values`]).
//!
//! The function is a decoder step exported with a *static* cache, as
//! transformers' `StaticCache` (the form `torch.compile` decodes with) and
//! optimum's static-cache exports name them:
//!
//! - inputs `input_ids` [batch, sequence] (int64), `attention_mask`
//!   [batch, max_cache] (positions filled so far: 1), `cache_position`
//!   [sequence] (int64: where the step's tokens go) or `position_ids`
//!   [batch, sequence], and per layer `past_key_values.L.key` / `.value`
//!   (any rank, one axis `max_cache` long);
//! - outputs `logits` [batch, sequence, vocab] and per layer
//!   `present.L.key` / `.value`, the cache buffers with the step written.
//!
//! The prompt runs as one step (its whole length at positions 0..P, the
//! cache zero), then each new token as a one-token step whose cache inputs
//! are the previous step's outputs, left where they are (device memory);
//! only the step's ids, mask and positions go up and the last row of
//! logits comes back for the argmax. A cache whose length grows with each
//! step (`past_sequence + sequence`) does not compile (the symbolic
//! import keeps dimensions independent); the signature check says so.

use std::time::Instant;

use crate::artifact::{FunctionInfo, TensorDesc};
use crate::error::{Error, Result};
use crate::hal::{DriverSession, Value};
use crate::tensor::{DType, HostTensor};

/// Where a decoder step's inputs and outputs are, found by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeSignature {
    pub input_ids: usize,
    pub attention_mask: Option<usize>,
    pub cache_position: Option<usize>,
    pub position_ids: Option<usize>,
    /// Each cache buffer: (input index, output index).
    pub cache: Vec<(usize, usize)>,
    pub logits: usize,
    /// Positions the cache holds (the mask's length).
    pub max_cache: usize,
    /// The largest batch the function takes.
    pub max_batch: usize,
}

fn find(descs: &[TensorDesc], name: &str) -> Option<usize> {
    descs.iter().position(|d| d.name == name)
}

fn refuse(function: &FunctionInfo, why: String) -> Error {
    Error::InvalidInput(format!(
        "@{} is not a decoder step with a static key/value cache: {why} (its signature: {})",
        function.name,
        function.signature()
    ))
}

impl DecodeSignature {
    /// The decoder-step roles of `function`'s inputs and outputs, or an
    /// error naming what is missing or of the wrong form.
    pub fn of(function: &FunctionInfo) -> Result<Self> {
        let (ins, outs) = (&function.inputs, &function.outputs);
        let input_ids = find(ins, "input_ids")
            .ok_or_else(|| refuse(function, "no input named input_ids".into()))?;
        let ids = &ins[input_ids];
        if ids.dtype != DType::I64 || ids.shape.len() != 2 {
            return Err(refuse(
                function,
                format!(
                    "input_ids is {}, not [batch, sequence] int64",
                    ids.type_string()
                ),
            ));
        }
        if !ids.is_symbolic(1) {
            return Err(refuse(
                function,
                "input_ids has a static sequence axis: the prompt's step and the one-token steps need it symbolic (tcc compile --dim sequence=1..N)".into(),
            ));
        }
        let logits = find(outs, "logits")
            .ok_or_else(|| refuse(function, "no output named logits".into()))?;
        if outs[logits].shape.len() != 3 {
            return Err(refuse(
                function,
                format!(
                    "logits is {}, not [batch, sequence, vocab]",
                    outs[logits].type_string()
                ),
            ));
        }
        let attention_mask = find(ins, "attention_mask");
        let cache_position = find(ins, "cache_position");
        let position_ids = find(ins, "position_ids");
        let mut cache = Vec::new();
        for (index, desc) in ins.iter().enumerate() {
            let rest = desc
                .name
                .strip_prefix("past_key_values.")
                .or_else(|| desc.name.strip_prefix("past."));
            let Some(rest) = rest else { continue };
            let output = find(outs, &format!("present.{rest}")).ok_or_else(|| {
                refuse(
                    function,
                    format!("input {} has no output present.{rest}", desc.name),
                )
            })?;
            cache.push((index, output));
        }
        if cache.is_empty() {
            return Err(refuse(
                function,
                "no cache inputs (past_key_values.L.key / .value with outputs present.L.key / .value)".into(),
            ));
        }
        // A static cache: each present buffer has its past buffer's type.
        for &(i, o) in &cache {
            let (past, present) = (&ins[i], &outs[o]);
            let symbolic = |d: &TensorDesc| {
                (0..d.shape.len())
                    .filter(|&a| d.is_symbolic(a) && a != 0)
                    .count()
            };
            if symbolic(past) > 0
                || symbolic(present) > 0
                || past.shape != present.shape
                || past.dtype != present.dtype
            {
                return Err(refuse(
                    function,
                    format!(
                        "{} is {} and {} is {}: a cache whose length grows with each step does not compile (tcc keeps symbolic dimensions independent); export with a static cache (transformers' StaticCache)",
                        past.name,
                        past.type_string(),
                        present.name,
                        present.type_string()
                    ),
                ));
            }
        }
        let max_cache = match attention_mask {
            Some(m) => {
                let mask = &ins[m];
                if mask.shape.len() != 2 || mask.is_symbolic(1) {
                    return Err(refuse(
                        function,
                        format!(
                            "attention_mask is {}, not [batch, max_cache]",
                            mask.type_string()
                        ),
                    ));
                }
                mask.shape[1]
            }
            None => {
                // Without a mask: the cache's longest static axis past the batch.
                ins[cache[0].0]
                    .shape
                    .iter()
                    .skip(1)
                    .copied()
                    .max()
                    .unwrap_or(0)
            }
        };
        if cache_position.is_none() && position_ids.is_none() {
            return Err(refuse(
                function,
                "no cache_position [sequence] or position_ids [batch, sequence] input: a static cache needs the step's positions".into(),
            ));
        }
        Ok(DecodeSignature {
            input_ids,
            attention_mask,
            cache_position,
            position_ids,
            cache,
            logits,
            max_cache,
            max_batch: ids.shape[0],
        })
    }
}

/// What a greedy generation made and how long its steps took.
#[derive(Clone, Debug, Default)]
pub struct Generation {
    /// Per row of the prompt, the new tokens.
    pub tokens: Vec<Vec<i64>>,
    /// The prompt's step (uploads and the logits' read-back included).
    pub prefill_s: f64,
    /// Each one-token step, in order.
    pub step_s: Vec<f64>,
}

impl Generation {
    /// The one-token steps' mean, in milliseconds per token (per row).
    pub fn ms_per_token(&self) -> f64 {
        if self.step_s.is_empty() {
            return 0.0;
        }
        1000.0 * self.step_s.iter().sum::<f64>() / self.step_s.len() as f64
    }
}

fn i64_tensor(shape: Vec<usize>, values: &[i64]) -> Result<HostTensor> {
    HostTensor::new(
        DType::I64,
        shape,
        values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
}

fn mask_tensor(dtype: DType, batch: usize, max_cache: usize, filled: usize) -> Result<HostTensor> {
    let mut t = HostTensor::zeros(dtype, vec![batch, max_cache])?;
    let size = dtype.size();
    let one: Vec<u8> = match dtype {
        DType::I64 => 1i64.to_le_bytes().to_vec(),
        DType::I32 => 1i32.to_le_bytes().to_vec(),
        DType::F32 => 1f32.to_le_bytes().to_vec(),
        DType::F16 => half::f16::ONE.to_le_bytes().to_vec(),
        DType::BF16 => half::bf16::ONE.to_le_bytes().to_vec(),
        DType::Bool | DType::I8 | DType::U8 => vec![1],
        other => {
            return Err(Error::InvalidInput(format!(
                "attention_mask of element type {other}: expected an integer, bool or float mask"
            )));
        }
    };
    for row in 0..batch {
        for p in 0..filled {
            let at = (row * max_cache + p) * size;
            t.bytes[at..at + size].copy_from_slice(&one);
        }
    }
    Ok(t)
}

/// The argmax of each row's last position of `logits` [batch, seq, vocab]
/// (the first of equal maxima; NaN never wins).
fn last_argmax(logits: &HostTensor) -> Vec<i64> {
    let (batch, seq, vocab) = (logits.shape[0], logits.shape[1], logits.shape[2]);
    let size = logits.dtype.size();
    (0..batch)
        .map(|row| {
            let base = (row * seq + seq - 1) * vocab;
            let last = &logits.bytes[base * size..(base + vocab) * size];
            let best = match logits.dtype {
                DType::F32 => argmax_f32(last),
                // A step reads a whole vocabulary per row (50257 logits
                // for GPT-2): half logits are compared by their bits, not
                // widened one by one (in software where the CPU lacks
                // F16C: milliseconds a step at batch 8).
                DType::F16 => argmax_half_bits(last, 0x7c00),
                DType::BF16 => argmax_half_bits(last, 0x7f80),
                dtype => {
                    // f64 and integer logits compare exactly in f64.
                    let mut best = (0usize, f64::NEG_INFINITY);
                    for (v, c) in last.chunks_exact(size).enumerate() {
                        let x = dtype.value_f64(c);
                        if x > best.1 {
                            best = (v, x);
                        }
                    }
                    best.0
                }
            };
            best as i64
        })
        .collect()
}

fn argmax_f32(bytes: &[u8]) -> usize {
    let mut best = (0usize, f32::NEG_INFINITY);
    for (v, c) in bytes.chunks_exact(4).enumerate() {
        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if x > best.1 {
            best = (v, x);
        }
    }
    best.0
}

/// The argmax of little-endian 16-bit floats (f16 or bf16, whose
/// exponent bits are `infinity`) by their bit patterns: sign and magnitude
/// mapped to an unsigned key in the floats' order (negative values
/// flipped), -0 and +0 one key, NaNs skipped.
fn argmax_half_bits(bytes: &[u8], infinity: u16) -> usize {
    let mut best = (0usize, 0u16);
    for (v, c) in bytes.chunks_exact(2).enumerate() {
        let bits = u16::from_le_bytes([c[0], c[1]]);
        let magnitude = bits & 0x7fff;
        if magnitude > infinity {
            continue;
        }
        let key = if bits & 0x8000 != 0 && magnitude != 0 {
            0x7fff - magnitude
        } else {
            0x8000 | magnitude
        };
        if key > best.1 {
            best = (v, key);
        }
    }
    best.0
}

/// Generates `new_tokens` tokens greedily after `prompt` ([batch, P]
/// int64) with `function` of `session`: the prompt's step, then
/// `new_tokens - 1` one-token steps, the cache in device memory between
/// them.
pub fn generate<S: DriverSession>(
    session: &mut S,
    function: &str,
    prompt: &HostTensor,
    new_tokens: usize,
) -> Result<Generation> {
    let info = session.model().function(function)?.clone();
    let sig = DecodeSignature::of(&info)?;
    if prompt.dtype != DType::I64 || prompt.shape.len() != 2 || prompt.shape.contains(&0) {
        return Err(Error::InvalidInput(format!(
            "the prompt is {}: expected token ids [batch, length] int64, neither empty",
            prompt.type_string()
        )));
    }
    let (batch, length) = (prompt.shape[0], prompt.shape[1]);
    if batch > sig.max_batch {
        return Err(Error::InvalidInput(format!(
            "a prompt of {batch} rows: @{function} takes at most {}",
            sig.max_batch
        )));
    }
    if new_tokens == 0 {
        return Err(Error::InvalidInput("generate at least one token".into()));
    }
    // The prompt fills positions 0..P, each step after the first new token one more.
    let positions = length + new_tokens - 1;
    if positions > sig.max_cache {
        return Err(Error::InvalidInput(format!(
            "a prompt of {length} tokens and {new_tokens} new ones need {positions} cache positions; @{function}'s cache holds {}",
            sig.max_cache
        )));
    }
    let cache_desc: Vec<TensorDesc> = sig
        .cache
        .iter()
        .map(|&(i, _)| info.inputs[i].clone())
        .collect();
    let mut cache: Vec<Value> = cache_desc
        .iter()
        .map(|d| {
            let mut shape = d.shape.clone();
            shape[0] = batch;
            HostTensor::zeros(d.dtype, shape).map(Value::Host)
        })
        .collect::<Result<_>>()?;
    let mask_dtype = sig.attention_mask.map(|m| info.inputs[m].dtype);
    let mut generation = Generation {
        tokens: vec![Vec::with_capacity(new_tokens); batch],
        ..Default::default()
    };
    let mut ids = prompt.clone();
    let mut start = 0usize;
    for step in 0..new_tokens {
        let began = Instant::now();
        let seq = ids.shape[1];
        let mut inputs: Vec<Option<Value>> = (0..info.inputs.len()).map(|_| None).collect();
        inputs[sig.input_ids] = Some(Value::Host(ids.clone()));
        if let (Some(m), Some(dtype)) = (sig.attention_mask, mask_dtype) {
            inputs[m] = Some(Value::Host(mask_tensor(
                dtype,
                batch,
                sig.max_cache,
                start + seq,
            )?));
        }
        let here: Vec<i64> = (start..start + seq).map(|p| p as i64).collect();
        if let Some(c) = sig.cache_position {
            inputs[c] = Some(Value::Host(i64_tensor(vec![seq], &here)?));
        }
        if let Some(p) = sig.position_ids {
            let rows: Vec<i64> = (0..batch).flat_map(|_| here.iter().copied()).collect();
            inputs[p] = Some(Value::Host(i64_tensor(vec![batch, seq], &rows)?));
        }
        for (&(i, _), value) in sig.cache.iter().zip(cache.drain(..)) {
            inputs[i] = Some(value);
        }
        let inputs: Vec<Value> = inputs
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "@{function}'s input {} ({}) has no role in a decoder step",
                        i, info.inputs[i].name
                    ))
                })
            })
            .collect::<Result<_>>()?;
        let mut outputs: Vec<Option<Value>> = session
            .run_values(function, inputs)?
            .into_iter()
            .map(Some)
            .collect();
        for &(_, o) in &sig.cache {
            cache.push(outputs[o].take().expect("each output once"));
        }
        let logits = outputs[sig.logits].take().expect("logits").into_host()?;
        let next = last_argmax(&logits);
        for (row, &token) in next.iter().enumerate() {
            generation.tokens[row].push(token);
        }
        let elapsed = began.elapsed().as_secs_f64();
        if step == 0 {
            generation.prefill_s = elapsed;
        } else {
            generation.step_s.push(elapsed);
        }
        start += seq;
        ids = i64_tensor(vec![batch, 1], &next)?;
    }
    Ok(generation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(name: &str, dtype: DType, shape: &[usize], dims: &[&str]) -> TensorDesc {
        TensorDesc {
            name: name.into(),
            dtype,
            shape: shape.to_vec(),
            dims: dims.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn argmax_takes_each_rows_last_position() {
        // [2, 2, 3]: row 0's last position peaks at 2, row 1's at 0.
        let values = [0., 9., 0., 0., 1., 5., 0., 0., 9., 7., 1., 2.];
        let logits = HostTensor::from_f32(vec![2, 2, 3], &values).unwrap();
        assert_eq!(last_argmax(&logits), vec![2, 0]);
        // Half logits (a graph exported in fp16) the same way.
        let half: Vec<half::f16> = values.iter().map(|&v| half::f16::from_f32(v)).collect();
        let logits = HostTensor::from_elements(vec![2, 2, 3], &half).unwrap();
        assert_eq!(last_argmax(&logits), vec![2, 0]);
        let bf16: Vec<half::bf16> = values.iter().map(|&v| half::bf16::from_f32(v)).collect();
        let logits = HostTensor::from_elements(vec![2, 2, 3], &bf16).unwrap();
        assert_eq!(last_argmax(&logits), vec![2, 0]);
        // The first of equal maxima; a NaN never wins; f64 compared in f64.
        let tied = [f32::NAN, 3.0, 3.0, 1.0];
        let logits = HostTensor::from_f32(vec![1, 1, 4], &tied).unwrap();
        assert_eq!(last_argmax(&logits), vec![1]);
        let halves = [-2.0f32, -0.0, 0.0, -1.0, f32::NAN];
        let logits =
            HostTensor::from_elements(vec![1, 1, 5], &halves.map(half::f16::from_f32)).unwrap();
        assert_eq!(last_argmax(&logits), vec![1], "-0 and +0 tie");
        let negative = [-3.0f32, -1.5, -2.0, f32::NEG_INFINITY];
        let logits =
            HostTensor::from_elements(vec![1, 1, 4], &negative.map(half::bf16::from_f32)).unwrap();
        assert_eq!(last_argmax(&logits), vec![1]);
        let close = [1.0f64, 1.0 + 1e-12, 1.0];
        let logits = HostTensor::from_elements(vec![1, 1, 3], &close).unwrap();
        assert_eq!(last_argmax(&logits), vec![1]);
    }

    #[test]
    fn masks_cover_the_filled_positions_of_every_row() {
        let mask = mask_tensor(DType::I64, 2, 4, 3).unwrap();
        let got: Vec<i64> = mask.to_elements().unwrap();
        assert_eq!(got, vec![1, 1, 1, 0, 1, 1, 1, 0]);
    }

    #[test]
    fn a_static_cache_steps_roles_are_found_by_name() {
        let ids = desc("input_ids", DType::I64, &[4, 32], &["batch", "sequence"]);
        let mask = desc("attention_mask", DType::I64, &[4, 32], &["batch", ""]);
        let position = desc("cache_position", DType::I64, &[32], &["sequence"]);
        let cache = |name: &str| desc(name, DType::F16, &[4, 2, 32, 16], &["batch", "", "", ""]);
        let logits = desc(
            "logits",
            DType::F16,
            &[4, 32, 10],
            &["batch", "sequence", ""],
        );
        let f = FunctionInfo::for_test(
            "step",
            vec![
                ids,
                mask,
                position,
                cache("past_key_values.0.key"),
                cache("past_key_values.0.value"),
            ],
            vec![logits, cache("present.0.value"), cache("present.0.key")],
        );
        let sig = DecodeSignature::of(&f).unwrap();
        assert_eq!(
            (
                sig.input_ids,
                sig.attention_mask,
                sig.cache_position,
                sig.position_ids
            ),
            (0, Some(1), Some(2), None)
        );
        // Each past buffer with its own present one, whatever the output order.
        assert_eq!(sig.cache, vec![(3, 2), (4, 1)]);
        assert_eq!((sig.logits, sig.max_cache, sig.max_batch), (0, 32, 4));
        // Without positions a static cache cannot place the step.
        let mut no_positions = f.clone();
        no_positions.inputs.remove(2);
        let e = DecodeSignature::of(&no_positions).unwrap_err().to_string();
        assert!(
            e.contains("no cache_position [sequence] or position_ids"),
            "{e}"
        );
    }

    #[test]
    fn a_growing_cache_is_refused_with_the_reason() {
        let ids = desc("input_ids", DType::I64, &[4, 8], &["batch", "sequence"]);
        let past = desc(
            "past_key_values.0.key",
            DType::F32,
            &[4, 2, 8, 16],
            &["batch", "", "past", ""],
        );
        let present = desc(
            "present.0.key",
            DType::F32,
            &[4, 2, 16, 16],
            &["batch", "", "total", ""],
        );
        let logits = desc(
            "logits",
            DType::F32,
            &[4, 8, 10],
            &["batch", "sequence", ""],
        );
        let f = FunctionInfo::for_test("step", vec![ids, past], vec![logits, present]);
        let e = DecodeSignature::of(&f).unwrap_err().to_string();
        assert!(e.contains("a cache whose length grows"), "{e}");
    }
}
