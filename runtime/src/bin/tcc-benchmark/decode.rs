//! `--decode=N`: greedy decoding through `tcc_runtime::decode` (the
//! key/value cache in device memory between steps), timed per step:
//! the prompt's step, milliseconds per new token and tokens per second.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::json;
use tcc_runtime::cli::Opened;
use tcc_runtime::decode::{DecodeSignature, Generation};
use tcc_runtime::{Backend, DType, HostTensor, Model};

use crate::Args;

/// The prompt: a .npy of token ids, or `BxL` seeded random ids below `vocab`.
fn prompt(spec: &str, vocab: usize) -> anyhow::Result<HostTensor> {
    if let Some(path) = spec.strip_prefix('@') {
        let t = tcc_runtime::npy::read_npy(Path::new(path))
            .with_context(|| format!("--prompt={spec}"))?;
        if t.dtype != DType::I64 || t.shape.len() != 2 {
            bail!(
                "--prompt={spec} is {}: expected token ids [batch, length] int64",
                t.type_string()
            );
        }
        return Ok(t);
    }
    let parsed = spec
        .split_once('x')
        .and_then(|(b, l)| Some((b.parse::<usize>().ok()?, l.parse::<usize>().ok()?)));
    let Some((batch, length)) = parsed.filter(|&(b, l)| b > 0 && l > 0) else {
        bail!("--prompt={spec}: expected @FILE.npy or BxL (rows x tokens, both at least 1)");
    };
    // A fixed linear congruential sequence: the same prompt every run.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let ids: Vec<i64> = (0..batch * length)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % vocab.max(1) as u64) as i64
        })
        .collect();
    Ok(HostTensor::from_elements(vec![batch, length], &ids)?)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

pub(crate) fn measure(
    args: &Args,
    model: &Model,
    function: &str,
    backend: Backend,
    tokens: usize,
) -> anyhow::Result<()> {
    let info = model.function(function)?;
    let signature = DecodeSignature::of(info)?;
    let vocab = info.outputs[signature.logits].shape[2];
    let ids = prompt(&args.prompt, vocab)?;
    let mut opened = Opened::open(
        "tcc-benchmark",
        backend,
        args.device.as_deref(),
        args.kernel_format.as_deref(),
        false,
        model,
    )?;
    for _ in 0..args.warmup {
        opened.generate(function, &ids, tokens)?;
    }
    let runs: Vec<Generation> = (0..args.iterations)
        .map(|_| opened.generate(function, &ids, tokens))
        .collect::<Result<_, _>>()?;
    let (batch, length) = (ids.shape[0], ids.shape[1]);
    let prefill_ms = median(runs.iter().map(|g| 1000.0 * g.prefill_s).collect());
    let ms_per_token = median(runs.iter().map(Generation::ms_per_token).collect());
    let tokens_per_s = if ms_per_token > 0.0 {
        1000.0 * batch as f64 / ms_per_token
    } else {
        0.0
    };
    let generated = &runs.last().expect("at least one iteration").tokens;
    let (device, kind, platform) = opened.device_summary();
    if args.json {
        let report = json!({
            "model": args.call.model_path(),
            "function": function,
            "device": device,
            "backend": backend.title(),
            "decode": {
                "batch": batch,
                "prompt": length,
                "new_tokens": tokens,
                "max_cache": signature.max_cache,
                "generations": runs.len(),
                "prefill_ms": prefill_ms,
                "ms_per_token": ms_per_token,
                "tokens_per_second": tokens_per_s,
                "tokens": generated,
            },
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "device:        {device} ({kind}, {platform}), {} backend",
        backend.title()
    );
    println!(
        "decode:        @{function}, batch {batch}, prompt {length} tokens, {tokens} new (cache of {} positions), {} generations after {} warm-up",
        signature.max_cache,
        runs.len(),
        args.warmup
    );
    println!("prompt step:   {prefill_ms:.3} ms (median)");
    println!("per new token: {ms_per_token:.3} ms (median of the generations' means)");
    println!("tokens/s:      {tokens_per_s:.1} (batch x new tokens per second of one-token steps)");
    for (row, t) in generated.iter().enumerate().take(4) {
        let shown: Vec<String> = t.iter().take(16).map(i64::to_string).collect();
        let more = if t.len() > 16 { " ..." } else { "" };
        println!("tokens[{row}]:     {}{more}", shown.join(" "));
    }
    Ok(())
}
