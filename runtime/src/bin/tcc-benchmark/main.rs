//! tcc-benchmark: times a function of a tcc-compiled model end to end and
//! per kernel (OpenCL profiling events, or CUDA events with
//! `--backend=cuda`), and reports buffer-pool and program-cache
//! statistics (a second run shows the disk cache hit).
//!
//! This file holds the flags and picks the measurement; `synchronous` is
//! the one-call-at-a-time loop and its report, `in_turns` times builds of
//! one model in turns, `throughput` serves calls from threads, in flight
//! or across devices.

mod decode;
mod in_turns;
mod lanes;
mod synchronous;
mod throughput;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::Parser;
use tcc_runtime::cli;
use tcc_runtime::{Backend, Model};

const EXAMPLES: &str = "Examples:
  tcc-benchmark model.so --function=mlp --input=@x.npy --iterations=100
  tcc-benchmark model.so --input=1x8x128xf32=0.5 --flops=262144 --json
  tcc-benchmark a.so --in-turns-with=b.so --input=@x.npy --iterations=20
  tcc-benchmark model.so --input=@x.npy --in-flight=4             (4 asynchronous calls in flight)
  tcc-benchmark model.so --input=@x.npy --concurrency=2 --cpu-partition=2   (2 sessions, 1 CPU part each)
  tcc-benchmark model.so --input=@x32.npy --device=0,1 --split    (a batch split across 2 devices)
  tcc-benchmark model.so --input=@x.npy --backend=cuda            (through NVIDIA's CUDA driver)
  tcc-benchmark decoder.so --decode=128 --prompt=1x128            (greedy decoding, tokens per second)
(GFLOP/s are also reported per kernel, and per call without --flops, for the
matmul and convolution kernels whose flops the artifact counts.)

Environment: TCC_DEVICE (default device), TCC_CACHE_DIR (program cache),
TCC_BACKEND (opencl or cuda), TCC_LIBCUDA (the CUDA driver library).";

/// Benchmark a function of a tcc-compiled model (model.so) on an OpenCL device.
#[derive(Parser)]
#[command(name = "tcc-benchmark", version = tcc_runtime::cli::version(), after_help = EXAMPLES)]
struct Args {
    #[command(flatten)]
    call: cli::CallArgs,
    /// Device: global index or name substring (default: $TCC_DEVICE, else
    /// the first GPU, else the first CPU). With --backend=cuda: a CUDA
    /// device ordinal (default 0), or several (`0,1`, `all`) for whole
    /// calls round robin or --split.
    #[arg(long)]
    device: Option<String>,
    /// Which API runs the kernels: opencl or cuda (the artifact's PTX
    /// through NVIDIA's driver; kernel times from CUDA events; the
    /// synchronous, --in-turns-with, --in-flight and several-device
    /// measurements). Default: $TCC_BACKEND, else cuda for an artifact
    /// with PTX where NVIDIA's driver is (said on stderr), else opencl.
    #[arg(long, value_name = "opencl|cuda")]
    backend: Option<String>,
    /// Which form of the kernels to build: auto, ptx or opencl-c (default:
    /// $TCC_KERNEL_FORMAT, else auto).
    #[arg(long, value_name = "FORMAT")]
    kernel_format: Option<String>,
    /// Untimed runs before measuring.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed runs.
    #[arg(long, default_value_t = 10, conflicts_with = "duration")]
    iterations: usize,
    /// Measure for this many seconds (per repetition) instead of a fixed
    /// number of --iterations: calls run until the time is up (at least
    /// one); the report says how many ran. The synchronous measurement
    /// only.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Without --input: random inputs from SEED (default 0; floats
    /// uniform in [0, 1), integers and booleans 0 or 1) instead of zeros.
    /// The same seed gives the same inputs.
    #[arg(
        long,
        value_name = "SEED",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "0"
    )]
    random_inputs: Option<u64>,
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
    /// With --backend=cuda: calls in flight per device (that many
    /// sessions, each on a CUDA stream of its own).
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
    /// of one device (--concurrency) can run kernels at the same time:
    /// --compute-queues=1.
    #[arg(long, conflicts_with = "compute_queues")]
    own_queues: bool,
    /// The compute queues of each session's asynchronous calls: auto (on
    /// a GPU, one of its own per call in flight, so that one session's
    /// calls run kernels at the same time; on a CPU the device's queue),
    /// shared (the device's queue, shared by every session) or N (up to N
    /// of its own).
    #[arg(long, value_name = "auto|shared|N")]
    compute_queues: Option<String>,
    /// Serve another model at the same time, on zero inputs (its only
    /// function, or FUNCTION): with --concurrency=2, thread 0 serves MODEL
    /// and thread 1 this one (repeatable; threads take the models in turn).
    #[arg(long, value_name = "MODEL2.so[@FUNCTION]")]
    with_model: Vec<String>,
    /// Write a timeline of the calls to FILE as a Chrome/Perfetto trace
    /// (Trace Event Format JSON: open it in ui.perfetto.dev or
    /// chrome://tracing): a host track with each call and its host gaps,
    /// and a track of the OpenCL queue or CUDA stream with every kernel
    /// (its name as `tcc inspect` shows it, flops where counted), upload,
    /// download and copy (with its bytes). The warm-up calls come first,
    /// labelled. The synchronous measurement only.
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// The most calls --trace records (warm-up included); later calls run
    /// but are not in the trace.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    trace_calls: usize,
    /// Time greedy decoding of N new tokens instead of single calls: a
    /// decoder step with a static key/value cache (inputs input_ids,
    /// attention_mask, cache_position or position_ids and
    /// past_key_values.*, outputs logits and present.*; see
    /// docs/runtime.md) runs the prompt, then N - 1 one-token steps with
    /// the cache left in device memory between them. --warmup and
    /// --iterations count whole generations. Reports the prompt's step,
    /// milliseconds per token and tokens per second, and the tokens.
    #[arg(long, value_name = "N")]
    decode: Option<usize>,
    /// The prompt of --decode: @FILE.npy (token ids [batch, length],
    /// int64) or BxL (seeded random ids below the logits' vocabulary).
    #[arg(
        long,
        value_name = "@FILE.npy|BxL",
        default_value = "1x16",
        requires = "decode"
    )]
    prompt: String,
    /// Drop each call's outputs instead of handing them back to the
    /// session for the next call to write into (Session::recycle): every
    /// call then writes fresh host memory (page faults included).
    #[arg(long)]
    fresh_outputs: bool,
    /// Keep the inputs and outputs in device memory: the inputs are
    /// uploaded once before the warm-up, each call runs on them and leaves
    /// its outputs on the device (ONNX Runtime's IOBinding; what PyTorch's
    /// timings of a model on GPU tensors measure). The latencies are then
    /// the device's, launches and (CUDA) the graph replay included, and no
    /// transfer to or from the host. The synchronous measurement only
    /// (OpenCL or CUDA).
    #[arg(long, conflicts_with_all = ["fresh_outputs", "decode", "in_turns_with"])]
    resident: bool,
}

fn main() -> ExitCode {
    // An interrupted --output write leaves no partial file behind.
    tcc_runtime::output_file::remove_partial_files_on_interrupt();
    match cli::parse_args::<Args>() {
        Ok(args) => cli::report("tcc-benchmark", run(args)),
        Err(code) => code,
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if args.iterations == 0 {
        bail!("--iterations must be at least 1");
    }
    if let Some(d) = args.duration
        && !(d.is_finite() && d > 0.0)
    {
        bail!("--duration must be a positive number of seconds");
    }
    if let Some(f) = args.flops
        && !(f.is_finite() && f > 0.0)
    {
        bail!("--flops must be a positive number of floating-point operations per call");
    }
    if args.repetitions == 0 {
        bail!("--benchmark_repetitions must be at least 1");
    }
    let Some(model_path) = args.call.model_path() else {
        bail!("missing the model: tcc-benchmark model.so (or --module=model.so) (see --help)");
    };
    let model = Model::load(&model_path)?;
    let function = cli::resolve_function(&model, args.call.function.as_deref())?;
    let backend = cli::choose_backend("tcc-benchmark", args.backend.as_deref(), &model)?;
    if backend != Backend::OpenCl {
        cli::refuse_opencl_options(&[
            ("--concurrency", args.concurrency != 1),
            ("--cpu-partition", args.cpu_partition != 1),
            ("--own-queues", args.own_queues),
            ("--compute-queues", args.compute_queues.is_some()),
            ("--with-model", !args.with_model.is_empty()),
        ])?;
    }
    if args.random_inputs.is_some() && !args.call.inputs.is_empty() {
        bail!("--random-inputs makes the inputs when no --input is given; give one or the other");
    }
    if args.trace_calls == 0 {
        bail!("--trace-calls must be at least 1");
    }
    let duration_refused = |mode: &str| {
        if args.trace.is_some() {
            bail!("--trace records the synchronous measurement, not {mode}");
        }
        args.duration.map_or(Ok(()), |_| {
            Err(anyhow::anyhow!(
                "--duration times the synchronous measurement, not {mode}; use --iterations"
            ))
        })
    };
    if let Some(tokens) = args.decode {
        duration_refused("--decode")?;
        if args.concurrency != 1
            || args.in_flight != 1
            || args.split
            || !args.call.inputs.is_empty()
        {
            bail!(
                "--decode runs one generation at a time from --prompt: no --input, --concurrency, --in-flight or --split"
            );
        }
        return decode::measure(&args, &model, &function, backend, tokens);
    }
    if !args.in_turns_with.is_empty() {
        duration_refused("--in-turns-with")?;
        return in_turns::measure(&args, &model, &function, backend);
    }
    if args.concurrency == 0 || args.in_flight == 0 || args.cpu_partition == 0 {
        bail!("--concurrency, --in-flight and --cpu-partition must be at least 1");
    }
    if args.resident
        && (args.concurrency > 1
            || args.in_flight > 1
            || args.split
            || args.own_queues
            || args.compute_queues.is_some()
            || !args.with_model.is_empty()
            || if backend == Backend::OpenCl {
                cli::wants_several_devices(args.device.as_deref(), args.cpu_partition)?
            } else {
                cli::device_ordinals(backend, args.device.as_deref())?.len() > 1
            })
    {
        bail!(
            "--resident times the synchronous measurement (one call at a time on one device): no --concurrency, --in-flight, --split or several devices"
        );
    }
    if backend != Backend::OpenCl
        && (args.in_flight > 1
            || args.split
            || cli::device_ordinals(backend, args.device.as_deref())?.len() > 1)
    {
        duration_refused("the throughput measurement (--in-flight, several devices)")?;
        return lanes::measure(&args, &model, &function, backend);
    }
    if args.concurrency > 1
        || args.in_flight > 1
        || args.split
        || args.own_queues
        || args.compute_queues.is_some()
        || !args.with_model.is_empty()
        || cli::wants_several_devices(args.device.as_deref(), args.cpu_partition)?
    {
        duration_refused(
            "the throughput measurement (--concurrency, --in-flight, several devices)",
        )?;
        return throughput::measure(&args, &model, &function);
    }
    synchronous::measure(&args, &model, &function, backend)
}

/// The inputs of a call of `function`: the --input flags, or without any
/// zeros (or seeded random values with --random-inputs) of the
/// signature's types, said once on stderr.
fn inputs(
    args: &Args,
    function: &tcc_runtime::FunctionInfo,
) -> anyhow::Result<(Vec<tcc_runtime::HostTensor>, Vec<String>)> {
    if !args.call.inputs.is_empty() || function.inputs.is_empty() {
        return Ok(cli::parse_inputs_for(&args.call.inputs, function)?);
    }
    let (tensors, sources) = cli::default_inputs(function, args.random_inputs)?;
    eprintln!(
        "tcc-benchmark: no --input given: {} for {}",
        sources[0],
        function
            .inputs
            .iter()
            .map(|d| d.type_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok((tensors, sources))
}

/// How host tensors move, as the reports say it.
fn host_io_text(io: tcc_runtime::HostIo) -> &'static str {
    match io {
        tcc_runtime::HostIo::InPlace => "used in place where aligned (host-memory device)",
        tcc_runtime::HostIo::Copy => "copied",
    }
}
