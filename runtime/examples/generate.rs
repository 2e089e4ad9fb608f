//! Greedy text generation with a decoder compiled by tcc, its key/value
//! cache kept in device memory between steps (issue 33).
//!
//! The model is a decoder step exported with a static cache (transformers'
//! `StaticCache`; `test/onnx/exporters/kv_cache.py` and
//! `scripts/bench/decode-device.py` export GPT-2 this way), compiled once
//! with the batch and the sequence symbolic:
//!
//! ```text
//! tcc compile decoder.onnx -o decoder.so --dim batch=1..8 --dim sequence=1..256
//! cargo run -p tcc-runtime --example generate -- decoder.so --prompt 27,69,126 --tokens 20
//! ```
//!
//! `tcc_runtime::decode::generate` runs the prompt's step and then one
//! step per new token, each step's cache inputs the previous step's
//! outputs left in device memory ([`tcc_runtime::hal::DriverSession::run_values`]).
//! Rows of a batch are separated by `;` in `--prompt`. `--backend=cuda`
//! runs the artifact's PTX through NVIDIA's CUDA driver.

use std::process::ExitCode;

use tcc_runtime::{CudaRuntime, DeviceSelector, HostTensor, Model, Runtime};

struct Options {
    model: String,
    prompt: Vec<Vec<i64>>,
    tokens: usize,
    cuda: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let usage =
        "usage: generate MODEL.so --prompt 1,2,3[;4,5,6] [--tokens N] [--backend=opencl|cuda]";
    let (mut model, mut prompt, mut tokens, mut cuda) = (None, None, 16usize, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--prompt" => prompt = args.next(),
            "--tokens" => {
                let n = args.next().ok_or(usage)?;
                tokens = n
                    .parse()
                    .map_err(|_| format!("--tokens {n}: not a count"))?;
            }
            "--backend=cuda" => cuda = true,
            "--backend=opencl" => cuda = false,
            a if a.starts_with('-') => return Err(format!("unknown option {a}\n{usage}")),
            a => model = Some(a.to_string()),
        }
    }
    let (Some(model), Some(prompt)) = (model, prompt) else {
        return Err(usage.to_string());
    };
    let rows = prompt
        .split(';')
        .map(|row| {
            row.split(',')
                .map(|t| {
                    t.trim()
                        .parse::<i64>()
                        .map_err(|_| format!("--prompt: '{t}' is not a token id"))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    if rows.iter().any(|r| r.len() != rows[0].len()) {
        return Err("--prompt: every row needs the same length".into());
    }
    Ok(Options {
        model,
        prompt: rows,
        tokens,
        cuda,
    })
}

fn run(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let model = Model::load(&options.model)?;
    let function = model
        .functions()
        .first()
        .ok_or("the model has no function")?
        .name
        .clone();
    let (batch, length) = (options.prompt.len(), options.prompt[0].len());
    let flat: Vec<i64> = options.prompt.concat();
    let prompt = HostTensor::from_elements(vec![batch, length], &flat)?;
    let generation = if options.cuda {
        let rt = CudaRuntime::new(0, false)?;
        let mut session = rt.session(&model)?;
        tcc_runtime::decode::generate(&mut session, &function, &prompt, options.tokens)?
    } else {
        let rt = Runtime::new(DeviceSelector::Default)?;
        let mut session = rt.session(&model)?;
        tcc_runtime::decode::generate(&mut session, &function, &prompt, options.tokens)?
    };
    for row in &generation.tokens {
        let text: Vec<String> = row.iter().map(i64::to_string).collect();
        println!("{}", text.join(" "));
    }
    eprintln!(
        "prompt step {:.3} ms, {:.3} ms per token ({} one-token steps)",
        1000.0 * generation.prefill_s,
        generation.ms_per_token(),
        generation.step_s.len()
    );
    Ok(())
}

fn main() -> ExitCode {
    match parse(std::env::args().skip(1))
        .map_err(Into::into)
        .and_then(run)
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("generate: {e}");
            ExitCode::FAILURE
        }
    }
}
