//! The synchronous measurement: one call at a time on one session (of
//! either backend), its latency, per-kernel device time (OpenCL profiling
//! events or CUDA events), GFLOP/s and the runtime's counters, as a
//! table, JSON, or Google Benchmark's JSON.

use std::io::Write;
use std::time::Instant;

use serde_json::json;
use tcc_runtime::cli::{self, Opened, format_bytes};
use tcc_runtime::{Backend, Model};

use crate::{Args, host_io_text};

/// The calling thread's CPU time in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: plain system call writing into `t`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// One repetition's timings (milliseconds per call).
struct Repetition {
    /// Calls timed (--iterations, or as many as --duration allowed).
    calls: usize,
    real_ms: f64,
    cpu_ms: f64,
    median_ms: f64,
}

/// mean, median, stddev (sample) and cv of `xs`.
fn aggregates(xs: &[f64]) -> [(&'static str, f64); 4] {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let stddev = if xs.len() > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let cv = if mean > 0.0 { stddev / mean } else { 0.0 };
    [
        ("mean", mean),
        ("median", median),
        ("stddev", stddev),
        ("cv", cv),
    ]
}

/// Google Benchmark's JSON report: a context and one entry per repetition,
/// plus the aggregates when there are several.
fn benchmark_json(
    function: &str,
    model: &str,
    device: &str,
    reps: &[Repetition],
) -> serde_json::Value {
    let name = format!("@{function}/real_time");
    let mut benchmarks = Vec::new();
    for (index, r) in reps.iter().enumerate() {
        benchmarks.push(json!({
            "name": name, "family_index": 0, "per_family_instance_index": 0,
            "run_name": name, "run_type": "iteration", "repetitions": reps.len(),
            "repetition_index": index, "threads": 1, "iterations": r.calls,
            "real_time": r.real_ms, "cpu_time": r.cpu_ms, "time_unit": "ms",
            "median_real_time": r.median_ms,
        }));
    }
    if reps.len() > 1 {
        let real: Vec<f64> = reps.iter().map(|r| r.real_ms).collect();
        let cpu: Vec<f64> = reps.iter().map(|r| r.cpu_ms).collect();
        for ((aggregate, real), (_, cpu)) in aggregates(&real).into_iter().zip(aggregates(&cpu)) {
            benchmarks.push(json!({
                "name": format!("{name}_{aggregate}"), "family_index": 0,
                "per_family_instance_index": 0, "run_name": name,
                "run_type": "aggregate", "repetitions": reps.len(), "threads": 1,
                "aggregate_name": aggregate,
                "aggregate_unit": if aggregate == "cv" { "percentage" } else { "time" },
                "iterations": reps.len(), "real_time": real, "cpu_time": cpu, "time_unit": "ms",
            }));
        }
    }
    json!({
        "context": {
            "executable": "tcc-benchmark",
            "tcc_version": tcc_runtime::version_string(),
            "model": model,
            "device": device,
            "num_cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
            "library_build_type": if cfg!(debug_assertions) { "debug" } else { "release" },
        },
        "benchmarks": benchmarks,
    })
}

/// Writes `timeline` to `path` as a Chrome/Perfetto trace (`--trace`), and
/// says so on stderr.
fn write_trace(
    path: &std::path::Path,
    timeline: &tcc_runtime::timeline::Timeline,
    warmup_calls: u64,
    args: &Args,
    model: &Model,
    function: &str,
) -> anyhow::Result<()> {
    let mut other = serde_json::Map::new();
    other.insert("model".into(), json!(model.path().display().to_string()));
    other.insert("function".into(), json!(function));
    other.insert("iterations".into(), json!(args.iterations));
    let info = tcc_runtime::timeline::TraceInfo {
        process: format!(
            "tcc-benchmark {} @{function}",
            model.path().file_name().map_or_else(
                || model.path().display().to_string(),
                |n| n.to_string_lossy().into_owned()
            )
        ),
        warmup_calls,
        other,
    };
    let text = serde_json::to_string(&timeline.chrome_trace(&info))? + "\n";
    tcc_runtime::output_file::write_output_bytes(path, text.as_bytes(), false)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    let skipped = if timeline.calls_not_recorded > 0 {
        format!(
            " ({} later calls not recorded: --trace-calls)",
            timeline.calls_not_recorded
        )
    } else {
        String::new()
    };
    eprintln!(
        "tcc-benchmark: trace of {} calls{skipped} -> {} (open in ui.perfetto.dev or chrome://tracing)",
        timeline.calls.len(),
        path.display()
    );
    Ok(())
}

/// Runs `function` `--iterations` times (per repetition) after the
/// warm-up, and prints the report.
pub(crate) fn measure(
    args: &Args,
    model: &Model,
    function: &str,
    backend: Backend,
) -> anyhow::Result<()> {
    // Input types are checked against the signature before any is built.
    let (tensors, sources) = crate::inputs(args, model.function(function)?)?;
    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();

    // On the CUDA backend, calls replay CUDA graphs unless TCC_CUDA_GRAPHS
    // turns them off; graphs need profiling off, so the latencies come
    // from a session without events and the kernel table from a second,
    // profiled session running the same calls.
    let graphs = backend == Backend::Cuda && tcc_runtime::cuda::CudaOptions::from_env(false).graphs;
    let open = |profiling| {
        Opened::open(
            "tcc-benchmark",
            backend,
            args.device.as_deref(),
            args.kernel_format.as_deref(),
            profiling,
            model,
        )
    };
    let mut opened = open(!graphs)?;
    // --trace: a timeline of the calls, from the profiled session (this
    // one, unless CUDA graphs time the calls without events).
    if args.trace.is_some() && !graphs {
        opened.calls().record_timeline(args.trace_calls)?;
    }
    // --resident: the inputs uploaded once, the outputs left on the device.
    let resident = if args.resident {
        Some(opened.resident_inputs(&tensors)?)
    } else {
        None
    };
    // Each call's outputs go back to the session for the next call, as a
    // serving loop done with its results would hand them back (unless
    // --fresh-outputs).
    let call = |opened: &mut Opened| -> anyhow::Result<()> {
        match &resident {
            Some(inputs) => opened.run_resident(function, inputs)?,
            None => {
                let session = opened.calls();
                let outputs = session.run_with_sources(function, &tensors, &sources)?;
                if !args.fresh_outputs {
                    session.recycle(outputs);
                }
            }
        }
        Ok(())
    };
    // The first call compiles each kernel for its launch size (PoCL):
    // seconds on a large model, with a progress line.
    cli::with_progress(
        "tcc-benchmark",
        &format!("warming up ({} untimed calls)", args.warmup),
        " (the first call compiles each kernel for its launch size)",
        "warmed up",
        || -> anyhow::Result<()> {
            for _ in 0..args.warmup {
                call(&mut opened)?;
            }
            Ok(())
        },
    )?;
    // A function on a symbolic dimension: the warm-up's second call
    // started the build of its shape's specialized program; the measured
    // calls launch it.
    opened.calls().wait_for_specializations();
    opened.calls().reset_profile()?;
    // Constant memory whatever the iteration count (no vector per call).
    let mut latencies_ms = cli::LatencyStats::default();
    let mut repetitions = Vec::with_capacity(args.repetitions);
    let measuring = match args.duration {
        Some(seconds) => format!("measuring for {seconds} s"),
        None => format!("measuring {} calls", args.iterations),
    };
    let measuring = if args.repetitions > 1 {
        format!("{measuring}, {} times", args.repetitions)
    } else {
        measuring
    };
    cli::with_progress(
        "tcc-benchmark",
        &measuring,
        "",
        "measured",
        || -> anyhow::Result<()> {
            for _ in 0..args.repetitions {
                let mut this = cli::LatencyStats::default();
                let (wall, cpu) = (Instant::now(), thread_cpu_seconds());
                let mut count = 0usize;
                // --duration: calls until the time is up; else --iterations calls.
                while match args.duration {
                    Some(seconds) => count == 0 || wall.elapsed().as_secs_f64() < seconds,
                    None => count < args.iterations,
                } {
                    let start = Instant::now();
                    call(&mut opened)?;
                    let ms = start.elapsed().as_secs_f64() * 1e3;
                    latencies_ms.push(ms);
                    this.push(ms);
                    count += 1;
                }
                repetitions.push(Repetition {
                    calls: count,
                    real_ms: wall.elapsed().as_secs_f64() * 1e3 / count as f64,
                    cpu_ms: (thread_cpu_seconds() - cpu) * 1e3 / count as f64,
                    median_ms: this.percentile(50.0),
                });
            }
            Ok(())
        },
    )?;
    // All repetitions' calls: the per-call figures below divide by this.
    let calls: usize = repetitions.iter().map(|r| r.calls).sum();
    let (mut kernels, timeline) = if graphs {
        let mut profiled = open(true)?;
        let session = profiled.calls();
        if args.trace.is_some() {
            session.record_timeline(args.trace_calls)?;
        }
        // As long again as the measurement: said on stderr.
        cli::with_progress(
            "tcc-benchmark",
            &format!("timing the kernels: a profiled session repeats the {calls} calls"),
            " (CUDA graphs timed the calls without events)",
            "kernels timed",
            || -> anyhow::Result<_> {
                for _ in 0..args.warmup.max(1) {
                    session.run_with_sources(function, &tensors, &sources)?;
                }
                session.reset_profile()?;
                for _ in 0..calls {
                    let outputs = session.run_with_sources(function, &tensors, &sources)?;
                    session.recycle(outputs);
                }
                Ok((
                    session.kernel_profile()?,
                    session.take_timeline().map(|t| (t, args.warmup.max(1))),
                ))
            },
        )?
    } else {
        let session = opened.calls();
        (
            session.kernel_profile()?,
            session.take_timeline().map(|t| (t, args.warmup)),
        )
    };
    if let (Some(path), Some((timeline, warmup))) = (&args.trace, timeline) {
        write_trace(path, &timeline, warmup as u64, args, model, function)?;
    }
    let (device_name, device_kind, platform) = opened.device_summary();
    // The kernel table, most device time first.
    kernels.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    let calls_per_second = if latencies_ms.mean() > 0.0 {
        1e3 / latencies_ms.mean()
    } else {
        0.0
    };
    let (min, median, p90, mean) = (
        latencies_ms.min(),
        latencies_ms.percentile(50.0),
        latencies_ms.percentile(90.0),
        latencies_ms.mean(),
    );
    let device_ms_per_call =
        kernels.iter().map(|k| k.total_ns as f64).sum::<f64>() / 1e6 / calls as f64;
    // Flops per call: --flops, else what the artifact counts per kernel.
    let counted: f64 = kernels
        .iter()
        .map(|k| {
            let per_launch = model
                .kernel_names()
                .iter()
                .position(|n| *n == k.name)
                .and_then(|i| model.kernel_flops().get(i).copied())
                .unwrap_or(0);
            per_launch as f64 * k.calls as f64 / calls as f64
        })
        .sum();
    let flops_per_call = args.flops.or((counted > 0.0).then_some(counted));
    let kernel_gflops = |k: &tcc_runtime::KernelProfile| -> Option<f64> {
        let index = model.kernel_names().iter().position(|n| *n == k.name)?;
        let flops = *model.kernel_flops().get(index)?;
        (flops > 0 && k.mean_ns() > 0.0).then(|| flops as f64 / k.mean_ns())
    };
    let gflops = flops_per_call.map(|f| {
        let per = |ms: f64| {
            if ms > 0.0 {
                Some(f / (ms * 1e-3) / 1e9)
            } else {
                None
            }
        };
        (per(median), per(device_ms_per_call))
    });

    let mut out = std::io::stdout().lock();
    let google = benchmark_json(
        function,
        &model.path().display().to_string(),
        &device_name,
        &repetitions,
    );
    if let Some(path) = &args.out_file {
        let text = format!("{}\n", serde_json::to_string_pretty(&google)?);
        tcc_runtime::output_file::write_output_bytes(path, text.as_bytes(), false)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if args.format == "json" {
        writeln!(out, "{}", serde_json::to_string_pretty(&google)?)?;
        opened.finish("tcc-benchmark");
        return Ok(());
    }
    if args.json {
        let mut report = json!({
            "model": model.path().display().to_string(),
            "function": function,
            "device": device_name,
            "platform": platform,
            "warmup": args.warmup,
            "iterations": calls / args.repetitions,
            "duration_s": args.duration,
            "repetitions": args.repetitions,
            "latency_ms": { "min": min, "median": median, "p90": p90, "mean": mean, "quantile_samples": latencies_ms.sample_count() },
            "throughput_calls_per_s": calls_per_second,
            "concurrency": 1,
            "in_flight": 1,
            "resident": args.resident,
            "device_ms_per_call": device_ms_per_call,
            "flops": flops_per_call,
            "gflops": gflops.map(|(e2e, d)| json!({ "end_to_end": e2e, "device": d })),
            "kernels": kernels.iter().map(|k| json!({
                "name": k.name, "calls": k.calls,
                "total_ms": k.total_ns as f64 / 1e6, "mean_us": k.mean_ns() / 1e3,
                "gflops": kernel_gflops(k),
            })).collect::<Vec<_>>(),
        });
        // The backend's own part: program, memory and transfers.
        let details = match &opened {
            Opened::OpenCl { rt, session } => json!({
                "program_origin": session.program_origin(),
                "program_format": session.program_format().map(|f| f.name()),
                "program_seconds": session.program_seconds(),
                "program_note": session.program_note(),
                "program_cache": rt.cache_stats(),
                "specialization": session.specialization(),
                "specialization_stats": session.specialization_stats(),
                "buffer_pool": rt.pool_stats(),
                "host_io": rt.host_io(),
                "transfers": rt.transfer_stats(),
            }),
            Opened::Cuda { rt, session } => json!({
                "backend": "cuda",
                "cuda_device": rt.device(),
                "program_origin": null,
                "program_format": (!model.kernel_names().is_empty()).then_some("PTX"),
                "program_seconds": session.load_seconds(),
                "program_note": null,
                "dynamic_local": session.dynamic_local().iter().map(|d| json!({
                    "kernel": d.kernel, "bytes": d.bytes,
                })).collect::<Vec<_>>(),
                "buffer_pool": session.pool_stats(),
                "host_io": tcc_runtime::HostIo::Copy,
                "cuda_graphs": {
                    "enabled": graphs,
                    "recorded": session.graphs_recorded(),
                    "unavailable": session.graph_notes().into_iter()
                        .map(|(f, why)| json!({ "function": f, "reason": why }))
                        .collect::<Vec<_>>(),
                },
            }),
            Opened::Vulkan { rt, .. } => json!({
                "backend": "vulkan",
                "vulkan_device": rt.info(),
                "program_origin": null,
                "program_format": (!model.kernel_names().is_empty()).then_some("SPIR-V"),
                "program_note": null,
                "host_io": tcc_runtime::HostIo::Copy,
            }),
        };
        if let (Some(report), serde_json::Value::Object(details)) =
            (report.as_object_mut(), details)
        {
            report.extend(details);
        }
        writeln!(out, "{report}")?;
        return Ok(());
    }
    writeln!(
        out,
        "@{function} on {device_name} [{device_kind}] ({platform})"
    )?;
    // A function with static variants (`tcc compile --specialize`): which
    // one the calls ran.
    if let Ok(f) = model.function(function)
        && !f.specializations.is_empty()
    {
        let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape.as_slice()).collect();
        let buckets = |list: &[Vec<(String, i64)>]| {
            list.iter()
                .map(|b| tcc_runtime::describe_bucket(b))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match f.specialization_of_call(&shapes) {
            Some(bucket) => writeln!(
                out,
                "specialization: the static variant {} (tcc compile --specialize)",
                tcc_runtime::describe_bucket(bucket)
            )?,
            None => writeln!(
                out,
                "specialization: the generic function (static variants: {})",
                buckets(&f.specializations)
            )?,
        }
    }
    writeln!(
        out,
        "iterations: {}{} (after {} warm-up){}",
        calls / args.repetitions,
        args.duration
            .map_or(String::new(), |d| format!(" in {d} s")),
        args.warmup,
        if args.repetitions > 1 {
            format!(", {} repetitions", args.repetitions)
        } else {
            String::new()
        }
    )?;
    if args.repetitions > 1 {
        for (i, r) in repetitions.iter().enumerate() {
            writeln!(
                out,
                "  repetition {}: mean {:.3} ms  median {:.3} ms  cpu {:.3} ms",
                i + 1,
                r.real_ms,
                r.median_ms,
                r.cpu_ms
            )?;
        }
        let real: Vec<f64> = repetitions.iter().map(|r| r.real_ms).collect();
        let [mean, median, stddev, cv] = aggregates(&real);
        writeln!(
            out,
            "  across repetitions: mean {:.3} ms  median {:.3} ms  stddev {:.3} ms  cv {:.2} %",
            mean.1,
            median.1,
            stddev.1,
            cv.1 * 100.0
        )?;
    }
    // --resident: no host transfers in the latencies.
    let latency = if args.resident {
        "latency, inputs and outputs resident on the device"
    } else {
        "latency end-to-end"
    };
    writeln!(
        out,
        "{latency}: min {min:.3} ms  median {median:.3} ms  p90 {p90:.3} ms  mean {mean:.3} ms"
    )?;
    writeln!(
        out,
        "throughput: {calls_per_second:.2} calls/s (one call at a time, synchronous)"
    )?;
    if (latencies_ms.sample_count() as u64) < latencies_ms.count() {
        writeln!(
            out,
            "  (median and p90 from a uniform sample of {} of the {} calls)",
            latencies_ms.sample_count(),
            latencies_ms.count()
        )?;
    }
    writeln!(
        out,
        "device time per call (kernels): {device_ms_per_call:.3} ms"
    )?;
    if let Some((e2e, d)) = gflops {
        let show = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        writeln!(
            out,
            "GFLOP/s: {} end-to-end (median), {} device",
            show(e2e),
            show(d)
        )?;
    }
    writeln!(
        out,
        "kernels (device time from profiling events, most first):"
    )?;
    writeln!(
        out,
        "  {:<32} {:>8} {:>12} {:>12} {:>10}",
        "name", "calls", "total ms", "mean us", "GFLOP/s"
    )?;
    for k in &kernels {
        writeln!(
            out,
            "  {:<32} {:>8} {:>12.3} {:>12.2} {:>10}",
            k.name,
            k.calls,
            k.total_ns as f64 / 1e6,
            k.mean_ns() / 1e3,
            kernel_gflops(k).map_or("-".to_string(), |g| format!("{g:.1}"))
        )?;
    }
    let (rt, session) = match &opened {
        Opened::OpenCl { rt, session } => (rt, session),
        Opened::Vulkan { rt, .. } => {
            writeln!(
                out,
                "kernels: {} SPIR-V entry points on {}",
                model.kernel_names().len(),
                rt.info().summary()
            )?;
            writeln!(
                out,
                "host tensors: {}",
                host_io_text(tcc_runtime::HostIo::Copy)
            )?;
            return Ok(());
        }
        Opened::Cuda { session, .. } => {
            writeln!(
                out,
                "kernels: {}, loaded by the CUDA driver in {:.2} s",
                if model.kernel_names().is_empty() {
                    "none"
                } else {
                    "PTX"
                },
                session.load_seconds()
            )?;
            for d in session.dynamic_local() {
                writeln!(
                    out,
                    "  {}: {} of CUDA dynamic shared memory",
                    d.kernel,
                    format_bytes(d.bytes as u64)
                )?;
            }
            let recorded = session.graphs_recorded();
            if graphs {
                writeln!(
                    out,
                    "CUDA graphs: {} (latencies from graph replays; the kernel table from a profiled session, TCC_CUDA_GRAPHS=0 measures without graphs)",
                    if recorded.is_empty() {
                        "none recorded".to_string()
                    } else {
                        format!("@{} replayed", recorded.join(", @"))
                    }
                )?;
            }
            for (f, why) in session.graph_notes() {
                writeln!(out, "  @{f} runs without a graph: {why}")?;
            }
            let pool = session.pool_stats();
            writeln!(
                out,
                "device memory: {} allocations, {} reuse hits, {} held (peak {}), peak in use {}",
                pool.allocations,
                pool.reuse_hits,
                format_bytes(pool.current_bytes),
                format_bytes(pool.peak_bytes),
                format_bytes(pool.peak_in_use_bytes)
            )?;
            writeln!(
                out,
                "host tensors: {}",
                host_io_text(tcc_runtime::HostIo::Copy)
            )?;
            return Ok(());
        }
    };
    let pool = rt.pool_stats();
    let transfers = rt.transfer_stats();
    let cache = rt.cache_stats();
    let origin = session
        .program_origin()
        .map_or("none (no kernels)".to_string(), |o| o.to_string());
    writeln!(
        out,
        "kernels: {}, {origin} in {:.2} s",
        session.program_format().map_or("none", |f| f.name()),
        session.program_seconds()
    )?;
    writeln!(
        out,
        "program cache: {origin}; source builds {}, disk hits {}, memory hits {}, disk writes {}, rejected entries {}",
        cache.source_builds,
        cache.disk_hits,
        cache.memory_hits,
        cache.disk_writes,
        cache.disk_rejects
    )?;
    if let Some(p) = &cache.last_disk_problem {
        writeln!(out, "program cache note: {p}")?;
    }
    // A function on a symbolic dimension: its kernels specialized per
    // call shape (`TCC_SPECIALIZE`).
    let spec = session.specialization_stats();
    if spec.specialized_calls + spec.generic_calls > 0 {
        writeln!(
            out,
            "shape specialization: {}; {} program(s) in {:.2} s, {} specialized call(s), {} generic",
            match session.specialization() {
                tcc_runtime::Specialization::Off => "off (TCC_SPECIALIZE=off)",
                tcc_runtime::Specialization::Exact => "per exact shape",
            },
            spec.programs,
            spec.build_seconds,
            spec.specialized_calls,
            spec.generic_calls
        )?;
        if let Some(failure) = &spec.last_failure {
            writeln!(out, "shape specialization failed: {failure}")?;
        }
    }
    writeln!(
        out,
        "buffer pool: {} allocations, {} reuse hits, {} held (peak {}), peak in use {}",
        pool.allocations,
        pool.reuse_hits,
        format_bytes(pool.current_bytes),
        format_bytes(pool.peak_bytes),
        format_bytes(pool.peak_in_use_bytes)
    )?;
    writeln!(
        out,
        "host tensors: {} ({} inputs, {} outputs used in place; {} copied to the device, {} to the host, constants included)",
        host_io_text(rt.host_io()),
        transfers.inputs_in_place,
        transfers.outputs_in_place,
        format_bytes(transfers.bytes_to_device),
        format_bytes(transfers.bytes_to_host)
    )?;
    cli::finish_cache_writes("tcc-benchmark", rt);
    Ok(())
}
