//! tcc-run: runs one function of a tcc-compiled model on an OpenCL device
//! (or through NVIDIA's CUDA driver, `--backend=cuda`), with
//! iree-run-module's conventions for inputs and outputs.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use tcc_runtime::cli::{self, OutputArg};
use tcc_runtime::{Backend, Model, list_devices};

const EXAMPLES: &str = "Examples:
  tcc-run model.so --function=mlp --input=@x.npy --output=@y.npy
  tcc-run model.so --function=add --input=2x3xf32=1,2,3,4,5,6 --input=2x3xf32=1
  tcc-run --list-devices
  tcc-run --prepare model.so --device=pthread   (build and cache everything, for deployment)
  tcc-run model.so --backend=cuda --input=@x.npy   (the PTX through NVIDIA's CUDA driver)

Environment: TCC_DEVICE (default device), TCC_CACHE_DIR (program cache),
TCC_KERNEL_FORMAT (auto, ptx or opencl-c), TCC_BACKEND (opencl or cuda),
TCC_LIBCUDA (the CUDA driver library, default libcuda.so.1).";

/// Run a function of a tcc-compiled model (model.so) on an OpenCL device,
/// or through NVIDIA's CUDA driver.
#[derive(Parser)]
#[command(name = "tcc-run", version = tcc_runtime::cli::version(), after_help = EXAMPLES)]
struct Args {
    #[command(flatten)]
    call: cli::CallArgs,
    /// Where output N goes, in order: @FILE.npy (written atomically),
    /// @FILE.bin (raw bytes), +FILE.npy or +FILE.bin (appended), or - to
    /// print. Outputs without an --output are printed (not with
    /// --expected_output, whose verdict is the report).
    #[arg(long = "output", value_name = "OUTPUT")]
    outputs: Vec<String>,
    /// What output N should be, in order: @FILE.npy, TYPE=@FILE.bin, a
    /// literal, or - to skip one. Prints [SUCCESS], or per mismatching
    /// result a [FAILED] line with the count and the first 5 differing
    /// elements (exit 1); results are not printed unless --output asks.
    #[arg(
        long = "expected_output",
        value_name = "EXPECTED",
        allow_hyphen_values = true
    )]
    expected_outputs: Vec<String>,
    /// Absolute tolerance of floating-point --expected_output comparisons
    /// (iree-run-module's name).
    #[arg(
        long = "expected_f32_threshold",
        default_value_t = 1e-4,
        value_name = "ATOL"
    )]
    expected_atol: f64,
    /// Relative tolerance of floating-point --expected_output comparisons:
    /// |got - expected| <= ATOL + RTOL * |expected|.
    #[arg(long = "expected_rtol", default_value_t = 0.0, value_name = "RTOL")]
    expected_rtol: f64,
    /// Device: global index or name substring, as listed by --list-devices
    /// (default: $TCC_DEVICE, else the first GPU, else the first CPU). With
    /// --backend=cuda: a CUDA device ordinal (default 0).
    #[arg(long)]
    device: Option<String>,
    /// Which API runs the kernels: opencl (any OpenCL device) or cuda (the
    /// artifact's PTX through NVIDIA's driver, libcuda.so.1; one device, one
    /// call at a time; no --prepare, --cpu-partition or device lists).
    /// Default: $TCC_BACKEND, else cuda for an artifact whose kernels need
    /// CUDA dynamic shared memory (said on stderr), else opencl.
    #[arg(long, value_name = "opencl|cuda")]
    backend: Option<String>,
    /// List OpenCL platforms and devices (CUDA devices with
    /// --backend=cuda), then exit.
    #[arg(long)]
    list_devices: bool,
    /// Build and cache everything the model needs on the device, then exit
    /// without running it: the kernel program (into tcc's program cache)
    /// and each kernel's launch-size compile (one call of each function, or
    /// of --function, on zero inputs; PoCL caches those on disk). A later
    /// process's first call then builds nothing. Prints what it did and how
    /// long it took; exits 1 if anything fails.
    #[arg(long, conflicts_with_all = ["inputs", "outputs", "list_devices"])]
    prepare: bool,
    /// Which form of the kernels to build: auto (PTX on NVIDIA when the
    /// model carries it, else OpenCL C), ptx, or opencl-c
    /// (default: $TCC_KERNEL_FORMAT, else auto).
    #[arg(long, value_name = "FORMAT")]
    kernel_format: Option<String>,
    /// Split each CPU device into N parts (device fission); with several
    /// devices or parts the call's batch is split across them.
    #[arg(long, default_value_t = 1, value_name = "N")]
    cpu_partition: usize,
    /// Place functions on devices: FUNCTION=I[,FUNCTION=I...], I a device's
    /// position in --device's list (e.g. --device=0,1
    /// --placement=encoder=0,decoder=1); functions not named run on the
    /// first. --function may then name several functions, comma-separated:
    /// a pipeline, each one's outputs the next one's inputs, kept in device
    /// memory and copied device to device where two functions run on
    /// different devices (CUDA: peer to peer; OpenCL: through the host).
    #[arg(long, value_name = "FUNCTION=I,...")]
    placement: Option<String>,
    /// Print the device, the kernel form and where the program came from on stderr.
    #[arg(long)]
    verbose: bool,
    /// Elements printed per output before the rest is elided as "..."
    /// (also iree-run-module's --print_max_element_count).
    #[arg(long, default_value_t = 1024, alias = "print_max_element_count")]
    print_max_elements: usize,
    /// Hash the model's constants and compare them with the checksum the
    /// compiler stored (the tables are always checked): a damaged artifact
    /// is an error instead of wrong outputs. Costs one pass over the
    /// weights.
    #[arg(long)]
    verify: bool,
    /// (Internal: the background half of a tool's deferred program cache
    /// write; see `cli::finish_cache_writes`.) The entry's key, in hex.
    #[arg(long, hide = true, value_name = "KEY", requires_all = ["cache_lock_fd", "cache_lock", "cache_build_options"])]
    write_cache_entry: Option<String>,
    /// (Internal) The inherited, locked descriptor of the entry's lock file.
    #[arg(long, hide = true, value_name = "FD")]
    cache_lock_fd: Option<i32>,
    /// (Internal) The entry's lock file.
    #[arg(long, hide = true, value_name = "PATH")]
    cache_lock: Option<std::path::PathBuf>,
    /// (Internal) The build options the entry's program was built with.
    #[arg(long, hide = true, value_name = "OPTIONS", allow_hyphen_values = true)]
    cache_build_options: Option<String>,
    /// After each kernel launch, read back the float buffers the kernel
    /// writes (f32, f16, bf16, f64) and stop at the first NaN or infinity
    /// a kernel produced, naming the kernel (OpenCL backend; serializes
    /// the queue: for debugging, e.g. a --precision=fp16 model whose
    /// values overflow half).
    #[arg(long)]
    check_numerics: bool,
}

fn main() -> ExitCode {
    // An interrupted --output write leaves no partial file behind.
    tcc_runtime::output_file::remove_partial_files_on_interrupt();
    match cli::parse_args::<Args>() {
        Ok(args) => cli::report("tcc-run", run(args)),
        Err(code) => code,
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    if args.list_devices {
        let text = match cli::backend_flag_or_env(args.backend.as_deref())? {
            Some(Backend::Cuda) => {
                cli::format_cuda_device_list(&tcc_runtime::cuda::list_cuda_devices()?)
            }
            Some(Backend::Vulkan) => {
                format!("{}\n", tcc_runtime::VulkanRuntime::new()?.info().summary())
            }
            _ => cli::format_device_list(&list_devices()?),
        };
        write!(stdout, "{text}")?;
        return Ok(());
    }
    let model_path = args.call.model_path().context(
        "missing the model: tcc-run model.so (or --module=model.so) --function=NAME --input=... (see --help)",
    )?;
    let model = Model::load(&model_path)?;
    if let (Some(key), Some(fd), Some(lock), Some(options)) = (
        &args.write_cache_entry,
        args.cache_lock_fd,
        &args.cache_lock,
        &args.cache_build_options,
    ) {
        return cli::write_handed_over_entry(
            &model,
            args.device.as_deref(),
            args.kernel_format.as_deref(),
            options,
            key,
            fd,
            lock,
        );
    }
    if args.verify {
        model.verify()?;
    }
    let backend = cli::choose_backend("tcc-run", args.backend.as_deref(), &model)?;
    if backend != Backend::OpenCl {
        cli::refuse_opencl_options(&[
            ("--prepare", args.prepare),
            ("--cpu-partition", args.cpu_partition != 1),
            ("--check-numerics", args.check_numerics),
        ])?;
    }
    if args.prepare {
        return prepare(&args, &model, &mut stdout);
    }
    if let Some(spec) = &args.placement {
        if args.check_numerics || args.cpu_partition != 1 || !args.expected_outputs.is_empty() {
            bail!(
                "--placement runs without --check-numerics, --cpu-partition and --expected_output"
            );
        }
        return run_placed(&args, backend, &model, spec, &mut stdout);
    }
    let function = cli::resolve_function(&model, args.call.function.as_deref())?;
    let signature = model.function(&function)?;
    let outputs = args
        .outputs
        .iter()
        .map(|s| cli::parse_output(s))
        .collect::<Result<Vec<_>, _>>()?;
    if outputs.len() > signature.outputs.len() {
        bail!(
            "@{function} has {} output(s) but {} --output flags were given",
            signature.outputs.len(),
            outputs.len()
        );
    }
    let expected = args
        .expected_outputs
        .iter()
        .map(|s| tcc_runtime::iree_flags::parse_expected(s))
        .collect::<Result<Vec<_>, _>>()?;
    if expected.len() > signature.outputs.len() {
        bail!(
            "@{function} has {} output(s) but {} --expected_output flags were given",
            signature.outputs.len(),
            expected.len()
        );
    }
    if !(args.expected_atol >= 0.0 && args.expected_rtol >= 0.0) {
        bail!("--expected_f32_threshold and --expected_rtol must be non-negative");
    }
    if backend == Backend::OpenCl
        && cli::wants_several_devices(args.device.as_deref(), args.cpu_partition)?
    {
        if args.check_numerics {
            bail!("--check-numerics runs on one device: drop --cpu-partition or the device list");
        }
        return run_on_several(&args, &model, &function, &outputs, &mut stdout);
    }
    if backend != Backend::OpenCl
        && args.device.is_some()
        && cli::device_ordinals(backend, args.device.as_deref())?.len() > 1
    {
        return run_on_core_group(&args, backend, &model, &function, &outputs, &mut stdout);
    }
    // Check the inputs' types against the signature before any is built
    // (and before the possibly slow kernel build).
    let (tensors, sources) = cli::parse_inputs_for(&args.call.inputs, signature)?;
    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();

    let mut opened = cli::Opened::open(
        "tcc-run",
        backend,
        args.device.as_deref(),
        args.kernel_format.as_deref(),
        false,
        &model,
    )?;
    if args.verbose {
        eprintln!("{}", opened.verbose_line("tcc-run"));
    }
    if args.check_numerics
        && let cli::Opened::OpenCl { session, .. } = &mut opened
    {
        session.check_numerics()?;
    }
    let results = opened.first_call("tcc-run", |s| {
        s.run_with_sources(&function, &tensors, &sources)
    })?;
    writeln!(stdout, "EXEC @{function}")?;
    for (i, r) in results.iter().enumerate() {
        // With --expected_output the verdict is the report: results are
        // printed only where an --output asks for them.
        let arg = match outputs.get(i) {
            Some(arg) => arg,
            None if !expected.is_empty() => continue,
            None => &OutputArg::Print,
        };
        cli::emit_output(arg, i, r, &mut stdout, args.print_max_elements)?;
    }
    let mut matched = true;
    if !expected.is_empty() {
        let tolerance = tcc_runtime::iree_flags::Tolerance {
            atol: args.expected_atol,
            rtol: args.expected_rtol,
        };
        let (lines, ok) = tcc_runtime::iree_flags::check_all(&results, &expected, tolerance)?;
        for line in lines {
            writeln!(stdout, "{line}")?;
        }
        matched = ok;
    }
    stdout.flush()?;
    opened.finish("tcc-run");
    if !matched {
        bail!("@{function}'s results do not match the expected outputs");
    }
    Ok(())
}

/// `--device=all`, a list, or `--cpu-partition=N`: the call's batch is
/// split across the devices (inputs with exactly the model's types run
/// whole on one of them).
fn run_on_several(
    args: &Args,
    model: &Model,
    function: &str,
    outputs: &[OutputArg],
    stdout: &mut impl Write,
) -> anyhow::Result<()> {
    if args.cpu_partition == 0 {
        bail!("--cpu-partition must be at least 1");
    }
    let (tensors, plan) = cli::parse_inputs_split(&args.call.inputs, model.function(function)?)?;
    let group = cli::device_group(
        args.device.as_deref(),
        args.cpu_partition,
        args.kernel_format.as_deref(),
        false,
    )?;
    for rt in group.runtimes() {
        cli::warn_target_mismatch("tcc-run", model, rt.device());
    }
    let mut gs = cli::with_progress(
        "tcc-run",
        &format!(
            "building {} kernels for {} devices",
            model.kernel_names().len(),
            group.len()
        ),
        " (once per model and driver; later runs use the cache)",
        "kernels ready",
        || group.session(model),
    )?;
    if args.verbose {
        for rt in group.runtimes() {
            eprintln!("tcc-run: device {}", rt.device().summary());
        }
        eprintln!(
            "tcc-run: the batch runs as {} part(s) over {} device(s)",
            plan.parts,
            group.len()
        );
    }
    let results = gs.run_split(function, &tensors)?;
    print_results(args, function, outputs, &results, stdout)?;
    drop(gs);
    for rt in group.runtimes() {
        cli::finish_cache_writes("tcc-run", rt);
    }
    Ok(())
}

/// Several CUDA or Vulkan devices (`--device=0,1` or `all`): the batch
/// split across them through the runtime core (`hal::Group`), as OpenCL's
/// device list does.
fn run_on_core_group(
    args: &Args,
    backend: Backend,
    model: &Model,
    function: &str,
    outputs: &[OutputArg],
    stdout: &mut impl Write,
) -> anyhow::Result<()> {
    if args.check_numerics {
        bail!("--check-numerics runs on one device: drop the device list");
    }
    let (tensors, plan) = cli::parse_inputs_split(&args.call.inputs, model.function(function)?)?;
    let ordinals = cli::device_ordinals(backend, args.device.as_deref())?;
    let devices =
        tcc_runtime::hal::open_devices(backend, &tcc_runtime::DeviceList::All, &ordinals, false)?;
    let mut group = tcc_runtime::hal::Group::new(&devices, model, 1)?;
    if args.verbose {
        for d in &devices {
            eprintln!("tcc-run: device {}", tcc_runtime::hal::Device::summary(d));
        }
        eprintln!(
            "tcc-run: the batch runs as {} part(s) over {} {} device(s)",
            plan.parts,
            devices.len(),
            backend.title()
        );
    }
    let results = group.run_split(function, &tensors)?;
    print_results(args, function, outputs, &results, stdout)
}

/// `--placement`: functions on the devices of `--device`, a pipeline of
/// them where `--function` names several, through the runtime core
/// (`hal::Placement`).
fn run_placed(
    args: &Args,
    backend: Backend,
    model: &Model,
    spec: &str,
    stdout: &mut impl Write,
) -> anyhow::Result<()> {
    let places = tcc_runtime::hal::parse_placement(spec)?;
    let functions: Vec<String> = match args.call.function.as_deref() {
        Some(list) => list
            .split(',')
            .map(|f| Ok(model.function(f.trim())?.name.clone()))
            .collect::<tcc_runtime::Result<_>>()?,
        None => vec![cli::resolve_function(model, None)?],
    };
    let outputs = args
        .outputs
        .iter()
        .map(|s| cli::parse_output(s))
        .collect::<Result<Vec<_>, _>>()?;
    let last = model.function(functions.last().expect("at least one function"))?;
    if outputs.len() > last.outputs.len() {
        bail!(
            "@{} has {} output(s) but {} --output flags were given",
            last.name,
            last.outputs.len(),
            outputs.len()
        );
    }
    let (tensors, _) = cli::parse_inputs_for(&args.call.inputs, model.function(&functions[0])?)?;
    let devices: Vec<tcc_runtime::hal::AnyDevice> = if backend == Backend::OpenCl {
        cli::device_group(
            args.device.as_deref(),
            1,
            args.kernel_format.as_deref(),
            false,
        )?
        .runtimes()
        .iter()
        .cloned()
        .map(tcc_runtime::hal::AnyDevice::OpenCl)
        .collect()
    } else {
        let ordinals = cli::device_ordinals(backend, args.device.as_deref())?;
        tcc_runtime::hal::open_devices(backend, &tcc_runtime::DeviceList::All, &ordinals, false)?
    };
    let mut placement = tcc_runtime::hal::Placement::new(&devices, model, &places)?;
    if args.verbose {
        for f in &functions {
            let d = placement.device_of(f)?;
            eprintln!(
                "tcc-run: @{f} on device {d}: {}",
                tcc_runtime::hal::Device::summary(&devices[d])
            );
        }
    }
    let names: Vec<&str> = functions.iter().map(String::as_str).collect();
    let results = placement.run_pipeline(&names, &tensors)?;
    if args.verbose {
        let c = placement.copies();
        eprintln!(
            "tcc-run: between devices: {} value(s) copied device to device ({} over peer access), {} through the host, {} bytes",
            c.device_to_device, c.peer, c.through_host, c.bytes
        );
    }
    print_results(args, &last.name, &outputs, &results, stdout)
}

/// A split call's outputs, as `--output` says (else printed).
fn print_results(
    args: &Args,
    function: &str,
    outputs: &[OutputArg],
    results: &[tcc_runtime::HostTensor],
    stdout: &mut impl Write,
) -> anyhow::Result<()> {
    writeln!(stdout, "EXEC @{function}")?;
    for (i, r) in results.iter().enumerate() {
        let arg = outputs.get(i).unwrap_or(&OutputArg::Print);
        cli::emit_output(arg, i, r, &mut *stdout, args.print_max_elements)?;
    }
    stdout.flush()?;
    Ok(())
}

/// `--prepare`: builds the program (cache entry included) and runs each
/// function once on zeros, reporting each step's time.
fn prepare(args: &Args, model: &Model, out: &mut impl Write) -> anyhow::Result<()> {
    let started = Instant::now();
    let functions: Vec<String> = match &args.call.function {
        Some(name) => vec![model.function(name)?.name.clone()],
        None => model.functions().iter().map(|f| f.name.clone()).collect(),
    };
    let rt = cli::runtime(args.device.as_deref(), args.kernel_format.as_deref(), false)?;
    cli::warn_target_mismatch("tcc-run", model, rt.device());
    let mut session = cli::open_session("tcc-run", &rt, model)?;
    writeln!(
        out,
        "prepared {} for {} ({})",
        model.path().display(),
        rt.device().name,
        rt.device().platform_name
    )?;
    writeln!(
        out,
        "  kernel program: {} kernels, {}, {} in {:.2} s",
        model.kernel_names().len(),
        session.program_format().map_or("none", |f| f.name()),
        session
            .program_origin()
            .map_or("nothing to build".to_string(), |o| o.to_string()),
        session.program_seconds()
    )?;
    for name in &functions {
        let seconds = cli::with_progress(
            "tcc-run",
            &format!("compiling @{name}'s kernels for their launch sizes (a call on zeros)"),
            "",
            "done",
            || session.warm_up(name),
        )
        .with_context(|| format!("preparing @{name} (a call on zero inputs)"))?;
        writeln!(out, "  first call of @{name} on zeros: {seconds:.2} s")?;
    }
    let waited = Instant::now();
    let stats = rt.cache_stats();
    let cache = match (rt.cache_entries_dir(), &stats.last_disk_problem) {
        (None, _) => match &stats.refused_dir {
            Some(why) => format!("off (refused: {why})"),
            None => "off (no disk cache)".to_string(),
        },
        (Some(dir), Some(problem)) if stats.disk_errors > 0 => {
            bail!(
                "the program cache in {} could not be written: {problem}",
                dir.display()
            )
        }
        (Some(dir), _) => format!(
            "{} ({} written, {} loaded)",
            dir.display(),
            stats.disk_writes,
            stats.disk_hits
        ),
    };
    writeln!(
        out,
        "  program cache: {cache}; waited {:.2} s for the entry",
        waited.elapsed().as_secs_f64()
    )?;
    writeln!(out, "  total {:.2} s", started.elapsed().as_secs_f64())?;
    out.flush()?;
    Ok(())
}
