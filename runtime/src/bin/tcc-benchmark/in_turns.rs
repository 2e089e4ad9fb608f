//! `--in-turns-with`: builds of one model timed in turns, one call of each
//! in turn with profiling events on, each kernel's fastest call per build,
//! on either backend (all builds on the same one).

use std::io::Write;

use anyhow::bail;
use serde_json::json;
use tcc_runtime::cli;
use tcc_runtime::in_turns::{Turn, measure_in_turns};
use tcc_runtime::{Backend, Model};

use crate::Args;

/// `--in-turns-with`: every build in turn, each kernel's fastest call.
pub(crate) fn measure(
    args: &Args,
    model: &Model,
    function: &str,
    backend: Backend,
) -> anyhow::Result<()> {
    let signature = model.function(function)?;
    let (tensors, _) = crate::inputs(args, signature)?;
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
    // The runtime of either backend, and the device's name, kind, driver
    // and platform.
    let (rt, (device_name, device_kind, driver, platform)) = match backend {
        Backend::OpenCl => {
            let rt = cli::runtime(args.device.as_deref(), args.kernel_format.as_deref(), true)?;
            let d = rt.device();
            let about = (
                d.name.clone(),
                d.kind.to_string(),
                d.driver_version.clone(),
                d.platform_name.clone(),
            );
            (Runtimes::OpenCl(rt), about)
        }
        Backend::Cuda => {
            cli::check_cuda_kernel_format(args.kernel_format.as_deref())?;
            for build in &models {
                tcc_runtime::cuda::check_runnable(build)?;
            }
            let rt = cli::cuda_runtime(args.device.as_deref(), true)?;
            let d = rt.device();
            let about = (
                d.name.clone(),
                "GPU".to_string(),
                d.driver_version.clone(),
                format!("CUDA driver {}", d.driver_version),
            );
            (Runtimes::Cuda(rt), about)
        }
        Backend::Vulkan => {
            bail!("--in-turns-with runs on the OpenCL or CUDA backend, not on Vulkan")
        }
    };
    let mut turns = Vec::new();
    for (index, build) in models.iter().enumerate() {
        eprintln!(
            "tcc-benchmark: build {}/{}: {} ...",
            index + 1,
            models.len(),
            build.path().display()
        );
        turns.push(match &rt {
            Runtimes::OpenCl(rt) => Turn::new(rt, build, function, tensors.clone())?,
            Runtimes::Cuda(rt) => Turn::new_cuda(rt, build, function, tensors.clone())?,
        });
    }
    // One profiled call per build and round: seconds on a large model.
    cli::with_progress(
        "tcc-benchmark",
        &format!(
            "calling {} builds in turns ({} warm-up and {} timed rounds)",
            turns.len(),
            args.warmup,
            args.iterations
        ),
        "",
        "measured",
        || -> anyhow::Result<()> {
            for _ in 0..args.warmup {
                for turn in &mut turns {
                    turn.measure()?;
                }
            }
            // The warm-up calls' times are not kept.
            for turn in &mut turns {
                turn.forget();
            }
            Ok(measure_in_turns(&mut turns, args.iterations)?)
        },
    )?;
    let mut out = std::io::stdout().lock();
    let totals: Vec<f64> = turns.iter().map(|t| t.fastest().values().sum()).collect();
    if args.json {
        let report = json!({
            "function": function,
            "device": device_name,
            "driver": driver,
            "platform": platform,
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
            "@{function} on {device_name} [{device_kind}]: each kernel's fastest of {} calls in turns, ms",
            args.iterations
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
    if let Runtimes::OpenCl(rt) = &rt {
        cli::finish_cache_writes("tcc-benchmark", rt);
    }
    Ok(())
}

/// The runtime the builds run on.
enum Runtimes {
    OpenCl(tcc_runtime::Runtime),
    Cuda(tcc_runtime::CudaRuntime),
}
