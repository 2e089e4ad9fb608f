//! tcc-benchmark: times a function of a tcc-compiled model end to end and
//! per kernel (OpenCL profiling events), and reports buffer-pool and
//! program-cache statistics (a second run shows the disk cache hit).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use clap::Parser;
use serde_json::json;
use tcc_runtime::Model;
use tcc_runtime::cli::{self, format_bytes};
use tcc_runtime::in_turns::{Turn, measure_in_turns};

const EXAMPLES: &str = "Examples:
  tcc-benchmark model.so --function=mlp --input=@x.npy --iterations=100
  tcc-benchmark model.so --input=1x8x128xf32=0.5 --flops=262144 --json
  tcc-benchmark a.so --in-turns-with=b.so --input=@x.npy --iterations=20
  tcc-benchmark model.so --input=@x.npy --in-flight=4             (4 asynchronous calls in flight)
  tcc-benchmark model.so --input=@x.npy --concurrency=2 --cpu-partition=2   (2 sessions, 1 CPU part each)
  tcc-benchmark model.so --input=@x32.npy --device=0,1 --split    (a batch split across 2 devices)
(GFLOP/s are also reported per kernel, and per call without --flops, for the
matmul and convolution kernels whose flops the artifact counts.)

Environment: TCC_DEVICE (default device), TCC_CACHE_DIR (program cache).";

/// Benchmark a function of a tcc-compiled model (model.so) on an OpenCL device.
#[derive(Parser)]
#[command(name = "tcc-benchmark", version = tcc_runtime::cli::version(), after_help = EXAMPLES)]
struct Args {
    /// The compiled model (model.so).
    model: Option<PathBuf>,
    /// The compiled model, as iree-benchmark-module's --module (instead of the positional argument).
    #[arg(long = "module", value_name = "MODEL", conflicts_with = "model")]
    module: Option<PathBuf>,
    /// Function to run (default: the model's only function).
    #[arg(long)]
    function: Option<String>,
    /// An input, in order: @FILE.npy or a literal such as 2x3xf32=1,2,3,4,5,6.
    #[arg(long = "input", value_name = "INPUT", allow_hyphen_values = true)]
    inputs: Vec<String>,
    /// Device: global index or name substring (default: $TCC_DEVICE, else
    /// the first GPU, else the first CPU).
    #[arg(long)]
    device: Option<String>,
    /// Which form of the kernels to build: auto, ptx or opencl-c (default:
    /// $TCC_KERNEL_FORMAT, else auto).
    #[arg(long, value_name = "FORMAT")]
    kernel_format: Option<String>,
    /// Untimed runs before measuring.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed runs.
    #[arg(long, default_value_t = 10)]
    iterations: usize,
    /// Floating-point operations of one call; enables GFLOP/s.
    #[arg(long)]
    flops: Option<f64>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Repeat the whole measurement (warm-up excluded) this many times and
    /// report each repetition plus mean, median, stddev and cv across them
    /// (Google Benchmark's flag).
    #[arg(long = "benchmark_repetitions", default_value_t = 1, value_name = "N")]
    repetitions: usize,
    /// console (the table) or json (Google Benchmark's JSON on stdout).
    #[arg(long = "benchmark_format", default_value = "console", value_name = "FORMAT", value_parser = ["console", "json"])]
    format: String,
    /// Also write Google Benchmark's JSON report to FILE.
    #[arg(long = "benchmark_out", value_name = "FILE")]
    out_file: Option<PathBuf>,
    /// Another build of the same model (same function and inputs) to time
    /// in turns with MODEL, one call of each in turn with profiling events
    /// on (repeat for more): reports each kernel's fastest call per build,
    /// side by side, instead of the usual report. `tcc tune --prepare`'s
    /// rounds are measured this way.
    #[arg(long = "in-turns-with", value_name = "MODEL")]
    in_turns_with: Vec<PathBuf>,
    /// Threads serving the model at once, each with its own session(s);
    /// reports throughput (calls per second) next to latency.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Asynchronous calls each thread keeps in flight (Session::submit);
    /// 1 with one device and one thread is the plain synchronous loop.
    #[arg(long, default_value_t = 1)]
    in_flight: usize,
    /// Split each CPU device into N parts of equal cores (device fission);
    /// with --concurrency=N each thread gets its own part.
    #[arg(long, default_value_t = 1, value_name = "N")]
    cpu_partition: usize,
    /// Each call's batch (axis 0 of the inputs, a multiple of the model's)
    /// is split across the devices (data parallel).
    #[arg(long)]
    split: bool,
    /// Give each session a compute queue of its own, so that the sessions
    /// of one device (--concurrency) can run kernels at the same time
    /// (default: all share the device's queue).
    #[arg(long)]
    own_queues: bool,
    /// Serve another model at the same time, on zero inputs (its only
    /// function, or FUNCTION): with --concurrency=2, thread 0 serves MODEL
    /// and thread 1 this one (repeatable; threads take the models in turn).
    #[arg(long, value_name = "MODEL2.so[@FUNCTION]")]
    with_model: Vec<String>,
}

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
    iterations: usize,
    reps: &[Repetition],
) -> serde_json::Value {
    let name = format!("@{function}/real_time");
    let mut benchmarks = Vec::new();
    for (index, r) in reps.iter().enumerate() {
        benchmarks.push(json!({
            "name": name, "family_index": 0, "per_family_instance_index": 0,
            "run_name": name, "run_type": "iteration", "repetitions": reps.len(),
            "repetition_index": index, "threads": 1, "iterations": iterations,
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

fn main() -> ExitCode {
    match cli::parse_args::<Args>() {
        Ok(args) => cli::report("tcc-benchmark", run(args)),
        Err(code) => code,
    }
}

/// `--in-turns-with`: every build in turn, each kernel's fastest call.
fn in_turns(args: &Args, model: &Model, function: &str) -> anyhow::Result<()> {
    let signature = model.function(function)?;
    let (tensors, _) = cli::parse_inputs_for(&args.inputs, signature)?;
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

fn run(args: Args) -> anyhow::Result<()> {
    if args.iterations == 0 {
        bail!("--iterations must be at least 1");
    }
    if let Some(f) = args.flops
        && !(f.is_finite() && f > 0.0)
    {
        bail!("--flops must be a positive number of floating-point operations per call");
    }
    if args.repetitions == 0 {
        bail!("--benchmark_repetitions must be at least 1");
    }
    let Some(model_path) = args.model.clone().or(args.module.clone()) else {
        bail!("missing the model: tcc-benchmark model.so (or --module=model.so) (see --help)");
    };
    let model = Model::load(&model_path)?;
    let function = cli::resolve_function(&model, args.function.as_deref())?;
    if !args.in_turns_with.is_empty() {
        return in_turns(&args, &model, &function);
    }
    if args.concurrency == 0 || args.in_flight == 0 || args.cpu_partition == 0 {
        bail!("--concurrency, --in-flight and --cpu-partition must be at least 1");
    }
    if args.concurrency > 1
        || args.in_flight > 1
        || args.split
        || args.own_queues
        || !args.with_model.is_empty()
        || cli::wants_several_devices(args.device.as_deref(), args.cpu_partition)?
    {
        return throughput(&args, &model, &function);
    }
    // Input types are checked against the signature before any is built.
    let (tensors, sources) = cli::parse_inputs_for(&args.inputs, model.function(&function)?)?;
    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();

    let rt = cli::runtime(args.device.as_deref(), args.kernel_format.as_deref(), true)?;
    let mut session = cli::open_session("tcc-benchmark", &rt, &model)?;
    // Each call's outputs go back to the session for the next call, as a
    // serving loop done with its results would hand them back.
    for _ in 0..args.warmup {
        let outputs = session.run_with_sources(&function, &tensors, &sources)?;
        session.recycle(outputs);
    }
    session.reset_profile()?;
    // Constant memory whatever the iteration count (no vector per call).
    let mut latencies_ms = cli::LatencyStats::default();
    let mut repetitions = Vec::with_capacity(args.repetitions);
    for _ in 0..args.repetitions {
        let mut this = cli::LatencyStats::default();
        let (wall, cpu) = (Instant::now(), thread_cpu_seconds());
        for _ in 0..args.iterations {
            let start = Instant::now();
            let outputs = session.run_with_sources(&function, &tensors, &sources)?;
            let ms = start.elapsed().as_secs_f64() * 1e3;
            latencies_ms.push(ms);
            this.push(ms);
            session.recycle(outputs);
        }
        repetitions.push(Repetition {
            real_ms: wall.elapsed().as_secs_f64() * 1e3 / args.iterations as f64,
            cpu_ms: (thread_cpu_seconds() - cpu) * 1e3 / args.iterations as f64,
            median_ms: this.percentile(50.0),
        });
    }
    // All repetitions' calls: the per-call figures below divide by this.
    let calls = args.iterations * args.repetitions;
    let mut kernels = session.kernel_profile()?;
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
    let pool = rt.pool_stats();
    let transfers = rt.transfer_stats();
    let cache = rt.cache_stats();
    let dev = rt.device();

    let mut out = std::io::stdout().lock();
    let google = benchmark_json(
        &function,
        &model.path().display().to_string(),
        &dev.name,
        args.iterations,
        &repetitions,
    );
    if let Some(path) = &args.out_file {
        let text = format!("{}\n", serde_json::to_string_pretty(&google)?);
        tcc_runtime::output_file::write_output_bytes(path, text.as_bytes(), false)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if args.format == "json" {
        writeln!(out, "{}", serde_json::to_string_pretty(&google)?)?;
        cli::finish_cache_writes("tcc-benchmark", &rt);
        return Ok(());
    }
    if args.json {
        let report = json!({
            "model": model.path().display().to_string(),
            "function": function,
            "device": dev.name,
            "platform": dev.platform_name,
            "warmup": args.warmup,
            "iterations": args.iterations,
            "repetitions": args.repetitions,
            "latency_ms": { "min": min, "median": median, "p90": p90, "mean": mean, "quantile_samples": latencies_ms.sample_count() },
            "throughput_calls_per_s": calls_per_second,
            "concurrency": 1,
            "in_flight": 1,
            "device_ms_per_call": device_ms_per_call,
            "flops": flops_per_call,
            "gflops": gflops.map(|(e2e, d)| json!({ "end_to_end": e2e, "device": d })),
            "kernels": kernels.iter().map(|k| json!({
                "name": k.name, "calls": k.calls,
                "total_ms": k.total_ns as f64 / 1e6, "mean_us": k.mean_ns() / 1e3,
                "gflops": kernel_gflops(k),
            })).collect::<Vec<_>>(),
            "program_origin": session.program_origin(),
            "program_format": session.program_format().map(|f| f.name()),
            "program_seconds": session.program_seconds(),
            "program_note": session.program_note(),
            "program_cache": cache,
            "buffer_pool": pool,
            "host_io": rt.host_io(),
            "transfers": transfers,
        });
        writeln!(out, "{report}")?;
        return Ok(());
    }
    writeln!(
        out,
        "@{function} on {} [{}] ({})",
        dev.name, dev.kind, dev.platform_name
    )?;
    writeln!(
        out,
        "iterations: {} (after {} warm-up){}",
        args.iterations,
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
    writeln!(
        out,
        "latency end-to-end: min {min:.3} ms  median {median:.3} ms  p90 {p90:.3} ms  mean {mean:.3} ms"
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
        match rt.host_io() {
            tcc_runtime::HostIo::InPlace => "used in place where aligned (host-memory device)",
            tcc_runtime::HostIo::Copy => "copied",
        },
        transfers.inputs_in_place,
        transfers.outputs_in_place,
        format_bytes(transfers.bytes_to_device),
        format_bytes(transfers.bytes_to_host)
    )?;
    cli::finish_cache_writes("tcc-benchmark", &rt);
    Ok(())
}

/// `--concurrency`, `--in-flight`, several devices, `--cpu-partition` or
/// `--split`: asynchronous calls from one or more threads
/// (`tcc_runtime::throughput`), throughput next to latency.
fn throughput(args: &Args, model: &Model, function: &str) -> anyhow::Result<()> {
    let signature = model.function(function)?;
    let tensors = if args.split {
        cli::parse_inputs_split(&args.inputs, signature)?.0
    } else {
        cli::parse_inputs_for(&args.inputs, signature)?.0
    };
    let group = cli::device_group(
        args.device.as_deref(),
        args.cpu_partition,
        args.kernel_format.as_deref(),
        false,
    )?;
    let mut jobs = vec![tcc_runtime::throughput::Job {
        model: model.clone(),
        function: function.to_string(),
        inputs: tensors,
    }];
    for spec in &args.with_model {
        // `other.so@f`: the text after the last `@` names the function when
        // it holds no `/`.
        let (path, function) = match spec.rsplit_once('@') {
            Some((p, f)) if !f.contains('/') && !p.is_empty() => (p, Some(f)),
            _ => (spec.as_str(), None),
        };
        let other = Model::load(path)?;
        let f = cli::resolve_function(&other, function)?;
        let zeros = other
            .function(&f)?
            .inputs
            .iter()
            .map(|d| tcc_runtime::HostTensor::zeros(d.dtype, d.shape.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        jobs.push(tcc_runtime::throughput::Job {
            model: other,
            function: f,
            inputs: zeros,
        });
    }
    let options = tcc_runtime::throughput::ThroughputOptions {
        concurrency: args.concurrency,
        in_flight: args.in_flight,
        warmup: args.warmup,
        iterations: args.iterations,
        split: args.split,
        own_queues: args.own_queues,
    };
    let report = cli::with_progress(
        "tcc-benchmark",
        &format!(
            "opening {} session(s) on {} device(s) ({} kernels; a cold cache builds them), then measuring",
            args.concurrency,
            group.len(),
            model.kernel_names().len()
        ),
        "",
        "measured",
        || tcc_runtime::throughput::measure_jobs(&group, &jobs, &options),
    )?;
    let lat = &report.latency_ms;
    let (min, median, p90, mean) = (
        lat.min(),
        lat.percentile(50.0),
        lat.percentile(90.0),
        lat.mean(),
    );
    let devices: Vec<String> = group
        .runtimes()
        .iter()
        .map(|r| r.device().summary())
        .collect();
    let staging: Vec<_> = group.runtimes().iter().map(|r| r.staging_stats()).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = json!({
            "model": model.path().display().to_string(),
            "function": function,
            "devices": devices,
            "concurrency": args.concurrency,
            "in_flight": args.in_flight,
            "cpu_partition": args.cpu_partition,
            "split": args.split,
            "own_queues": args.own_queues,
            "warmup": args.warmup,
            "iterations": args.iterations,
            "calls": report.calls,
            "seconds": report.seconds,
            "throughput_calls_per_s": report.calls_per_second,
            "calls_per_device": report.calls_per_device,
            "per_model": report.per_model,
            "latency_ms": { "min": min, "median": median, "p90": p90, "mean": mean, "quantile_samples": lat.sample_count() },
            "host_io": group.runtimes()[0].host_io(),
            "pinned_staging": staging,
            "buffer_pool": group.runtimes().iter().map(|r| r.pool_stats()).collect::<Vec<_>>(),
            "transfers": group.runtimes().iter().map(|r| r.transfer_stats()).collect::<Vec<_>>(),
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "@{function} on {} device(s):", devices.len())?;
        for (d, n) in devices.iter().zip(&report.calls_per_device) {
            writeln!(out, "  {d}: {n} calls")?;
        }
        writeln!(
            out,
            "{} thread(s) x {} calls (after {} warm-up each), {} in flight per thread{}",
            args.concurrency,
            args.iterations,
            args.warmup,
            args.in_flight,
            if args.split {
                ", each call split across the devices"
            } else {
                ""
            }
        )?;
        writeln!(
            out,
            "throughput: {:.2} calls/s ({} calls in {:.3} s)",
            report.calls_per_second, report.calls, report.seconds
        )?;
        if report.per_model.len() > 1 {
            for m in &report.per_model {
                writeln!(
                    out,
                    "  {}: {} calls in {:.3} s, {:.2} calls/s",
                    m.model, m.calls, m.seconds, m.calls_per_second
                )?;
            }
        }
        writeln!(
            out,
            "latency submit-to-result: min {min:.3} ms  median {median:.3} ms  p90 {p90:.3} ms  mean {mean:.3} ms"
        )?;
        let pinned: u64 = staging.iter().map(|s| s.current_bytes).sum();
        writeln!(
            out,
            "host tensors: {}; pinned staging {}",
            match group.runtimes()[0].host_io() {
                tcc_runtime::HostIo::InPlace => "used in place where aligned (host-memory device)",
                tcc_runtime::HostIo::Copy => "copied",
            },
            format_bytes(pinned)
        )?;
    }
    for rt in group.runtimes() {
        cli::finish_cache_writes("tcc-benchmark", rt);
    }
    Ok(())
}
