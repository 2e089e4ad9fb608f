//! `--in-turns-with`: builds of one model timed in turns, one call of each
//! in turn with profiling events on, each kernel's fastest call per build.

use std::io::Write;

use anyhow::bail;
use serde_json::json;
use tcc_runtime::Model;
use tcc_runtime::cli;
use tcc_runtime::in_turns::{Turn, measure_in_turns};

use crate::Args;

/// `--in-turns-with`: every build in turn, each kernel's fastest call.
pub(crate) fn measure(args: &Args, model: &Model, function: &str) -> anyhow::Result<()> {
    let signature = model.function(function)?;
    let (tensors, _) = cli::parse_inputs_for(&args.call.inputs, signature)?;
    let mut models = vec![model.clone()];
    for path in &args.in_turns_with {
        let other = Model::load(path)?;
        let theirs = other.function(function).map_err(|e| {
            anyhow::anyhow!(
                "{}: {e} (--in-turns-with needs builds of the same model)",
                path.display()
            )
        })?;
        if theirs.inputs != signature.inputs {
            bail!(
                "{}: @{function} takes other inputs than in {} (--in-turns-with needs builds of the same model)",
                path.display(),
                model.path().display()
            );
        }
        models.push(other);
    }
    let rt = cli::runtime(args.device.as_deref(), args.kernel_format.as_deref(), true)?;
    let mut turns = Vec::new();
    for (index, build) in models.iter().enumerate() {
        eprintln!(
            "tcc-benchmark: build {}/{}: {} ...",
            index + 1,
            models.len(),
            build.path().display()
        );
        turns.push(Turn::new(&rt, build, function, tensors.clone())?);
    }
    for _ in 0..args.warmup {
        for turn in &mut turns {
            turn.measure()?;
        }
    }
    // The warm-up calls' times are not kept.
    for turn in &mut turns {
        turn.forget();
    }
    measure_in_turns(&mut turns, args.iterations)?;
    let dev = rt.device();
    let mut out = std::io::stdout().lock();
    let totals: Vec<f64> = turns.iter().map(|t| t.fastest().values().sum()).collect();
    if args.json {
        let report = json!({
            "function": function,
            "device": dev.name,
            "driver": dev.driver_version,
            "platform": dev.platform_name,
            "iterations": args.iterations,
            "builds": models.iter().zip(&turns).zip(&totals).map(|((m, t), total)| json!({
                "model": m.path().display().to_string(),
                "fastest_ms": t.fastest(),
                "device_ms_per_call": total,
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(
            out,
            "@{function} on {} [{}]: each kernel's fastest of {} calls in turns, ms",
            dev.name, dev.kind, args.iterations
        )?;
        let mut names: Vec<&String> = turns.iter().flat_map(|t| t.fastest().keys()).collect();
        names.sort();
        names.dedup();
        write!(out, "  {:<32}", "kernel")?;
        for index in 0..models.len() {
            write!(out, " {:>12}", format!("build {}", index + 1))?;
        }
        writeln!(out)?;
        for name in names {
            write!(out, "  {name:<32}")?;
            for turn in &turns {
                match turn.fastest().get(name) {
                    Some(ms) => write!(out, " {ms:>12.4}")?,
                    None => write!(out, " {:>12}", "-")?,
                }
            }
            writeln!(out)?;
        }
        write!(out, "  {:<32}", "sum")?;
        for total in &totals {
            write!(out, " {total:>12.4}")?;
        }
        writeln!(out)?;
        for (index, m) in models.iter().enumerate() {
            writeln!(out, "  build {}: {}", index + 1, m.path().display())?;
        }
    }
    cli::finish_cache_writes("tcc-benchmark", &rt);
    Ok(())
}
