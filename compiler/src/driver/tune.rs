//! `tcc tune model --device=D -o record.json`: measures every GEMM and
//! convolution kernel of a model under each of its target's candidate
//! configurations on a device, and records the fastest per product shape
//! (a [`TuningRecord`] for `tcc compile --tuning=FILE`).
//!
//! The model is compiled once per round: round `i` gives every GEMM its
//! `i`-th candidate ([`Target::gemm_candidates`], the table's choice
//! first), so each kernel is measured in place, with its real epilogue,
//! its real A operand (a convolution's windows) and its neighbours'
//! cache state, not as a synthetic matmul. All rounds are loaded at once
//! and take turns, one call on zero inputs each with profiling events on,
//! so that the machine's load changes touch them alike; each kernel keeps
//! its fastest call, and kernels of the same kind and shape add up.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use melior::ir::operation::OperationLike;
use tcc_runtime::in_turns::{Turn, measure_in_turns};
use tcc_runtime::{HostTensor, Model};

use super::compile::compile_to_kernels_in;
use super::session::Session;
use crate::config::Target;
use crate::config::tuning::{TunedGemm, TuningRecord};
use crate::phases::{GemmChoice, Phase};

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// The model: MLIR (TOSA/linalg level) text, or an ONNX model (.onnx).
    pub input: PathBuf,
    /// Where to write the tuning record (JSON).
    #[arg(short = 'o', long = "output", required_unless_present = "prepare")]
    pub output: Option<PathBuf>,
    /// OpenCL device: index from `tcc-run --list-devices` or a name substring (default: TCC_DEVICE, else first GPU, else first CPU).
    #[arg(long)]
    pub device: Option<String>,
    /// The target whose candidates are measured (default: the one that suits the device).
    #[arg(long, value_parser = parse_target)]
    pub target: Option<Target>,
    /// A shape for an ONNX graph input, as for `tcc compile` (repeat).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Timed calls per round (after one untimed call), taken in turns with the other rounds.
    #[arg(long, default_value_t = 5)]
    pub iterations: usize,
    /// Measure at most this many candidates per kernel (the table's first).
    #[arg(long, value_name = "N")]
    pub max_candidates: Option<usize>,
    /// Add to the record at --output instead of replacing it: shapes measured now replace its entries for them, the others stay (the record must be for the same device and target).
    #[arg(long)]
    pub update: bool,
    /// Measure nothing: compile the rounds into DIR (DIR/roundN.so) for a machine without the compiler, and print the command that measures them there (needs --target).
    #[arg(long, value_name = "DIR", requires = "target", conflicts_with_all = ["measured", "update"])]
    pub prepare: Option<PathBuf>,
    /// Write the record from measurements made elsewhere: the JSON that `tcc-benchmark ROUND0.so --in-turns-with=ROUND1.so ... --json` printed for the rounds of --prepare (same model, target and flags).
    #[arg(long, value_name = "FILE", requires = "target")]
    pub measured: Option<PathBuf>,
}

fn parse_target(text: &str) -> Result<Target, String> {
    text.parse()
}

/// A GEMM kernel of the model: its name, kind and product shape.
struct GemmKernel {
    name: String,
    kind: String,
    shape: [i64; 4],
    candidates: usize,
}

/// The model's GEMM kernels as the artifact launches them: the `gpu.func`s
/// of its gpu-phase IR with a GEMM strategy. Not the tile phase's
/// kernels: outlining merges identical kernels (SqueezeNet's repeated
/// fire modules launch `conv_min_max_4` for `conv_min_max_6` too), so a
/// tile-phase name may never be launched, and its time would never be
/// measured.
fn gemm_kernels(
    session: &Session,
    args: &TuneArgs,
    target: Target,
    input_shapes: &[(String, Vec<i64>)],
) -> Result<Vec<GemmKernel>> {
    let mut module = super::import::parse_model_with(session, &args.input, input_shapes)?;
    session.run_passes(&mut module, &crate::phases::pipeline_to(Phase::Gpu, target))?;
    let mut kernels = Vec::new();
    for op in crate::ir::util::collect_ops(module.as_operation()) {
        let is_kernel = op.name().as_string_ref().as_str() == Ok("gpu.func");
        let Some(crate::ir::strategy::KernelStrategy::Gemm { shape, .. }) =
            crate::ir::strategy::of(&op).filter(|_| is_kernel)
        else {
            continue;
        };
        let tcc_kernels::GemmShape { batch, m, n, k } = shape;
        let string = |name: &str| {
            op.attribute(name)
                .ok()
                .and_then(crate::ir::util::string_value)
                .unwrap_or_default()
        };
        kernels.push(GemmKernel {
            name: string("sym_name"),
            kind: string(crate::ir::attr_names::KIND),
            shape: [batch, m, n, k],
            candidates: target.gemm_candidates(batch, m, n, k).len(),
        });
    }
    Ok(kernels)
}

/// Compiles round `candidate` (every GEMM's `candidate`-th configuration)
/// into `directory/round{candidate}.so`.
fn compile_round(
    args: &TuneArgs,
    target: Target,
    input_shapes: &[(String, Vec<i64>)],
    candidate: usize,
    directory: &std::path::Path,
) -> Result<PathBuf> {
    let session = Session::new();
    let choice = GemmChoice {
        tuning: None,
        candidate: Some(candidate),
        max_fused_ops: None,
        ..GemmChoice::default()
    };
    let mut compiled = compile_to_kernels_in(&session, &args.input, target, input_shapes, &choice)?;
    if target == Target::Nvidia {
        compiled.add_ptx(&crate::back::ptx::PtxOptions::default())?;
    }
    let library = directory.join(format!("round{candidate}.so"));
    compiled.link("tune", &library)?;
    Ok(library)
}

/// Checks that the artifact of a round holds every kernel to tune, so that
/// a kernel whose time could never be measured fails the run before any
/// measuring, naming it.
fn check_launched(kernels: &[GemmKernel], library: &std::path::Path) -> Result<()> {
    let model = Model::load(library)?;
    for kernel in kernels {
        if !model.kernel_names().contains(&kernel.name) {
            bail!(
                "kernel {} ({} {}) is not among the compiled model's {} kernels, so its time cannot be measured (the tuner and the compiler disagree on the kernels: a bug, please report it)",
                kernel.name,
                kernel.kind,
                kernel.shape.map(|d| d.to_string()).join("x"),
                model.kernel_names().len()
            );
        }
    }
    Ok(())
}

/// Loads a compiled round on `runtime` with zero inputs and runs it once.
fn load_round(runtime: &tcc_runtime::Runtime, library: &std::path::Path) -> Result<Turn> {
    let model = Model::load(library)?;
    let function = tcc_runtime::cli::resolve_function(&model, None)?;
    let inputs: Vec<HostTensor> = model
        .function(&function)?
        .inputs
        .iter()
        .map(|input| HostTensor::zeros(input.dtype, input.shape.clone()))
        .collect::<Result<_, _>>()?;
    Ok(Turn::new(runtime, &model, &function, inputs)?)
}

/// Measurements made elsewhere (`--measured`): the device and each
/// round's fastest kernel calls, from `tcc-benchmark --in-turns-with
/// --json` over round0.so, round1.so, ... in that order.
fn read_measurements(
    path: &std::path::Path,
    rounds: usize,
) -> Result<(String, String, Vec<BTreeMap<String, f64>>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let report: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not the JSON of tcc-benchmark --in-turns-with",
            path.display()
        )
    })?;
    let device = report["device"]
        .as_str()
        .with_context(|| format!("{}: no \"device\"", path.display()))?
        .to_string();
    // Measurements from before the driver was reported have none.
    let driver = report["driver"].as_str().unwrap_or_default().to_string();
    let builds = report["builds"]
        .as_array()
        .with_context(|| format!("{}: no \"builds\" list", path.display()))?;
    if builds.len() != rounds {
        bail!(
            "{}: {} builds measured, but this model has {rounds} rounds for these flags",
            path.display(),
            builds.len()
        );
    }
    let mut times = Vec::new();
    for (round, build) in builds.iter().enumerate() {
        let model = build["model"].as_str().unwrap_or_default();
        if !model.ends_with(&format!("round{round}.so")) {
            bail!(
                "{}: build {round} is {model}, not round{round}.so: give the rounds in order",
                path.display()
            );
        }
        let kernels = build["fastest_ms"]
            .as_object()
            .with_context(|| format!("{}: build {round} has no \"fastest_ms\"", path.display()))?;
        times.push(
            kernels
                .iter()
                .filter_map(|(name, ms)| ms.as_f64().map(|ms| (name.clone(), ms)))
                .collect(),
        );
    }
    Ok((device, driver, times))
}

pub fn run(args: &TuneArgs) -> Result<()> {
    let input_shapes: Vec<(String, Vec<i64>)> = args
        .input_shapes
        .iter()
        .map(|s| super::import::parse_input_shape(s))
        .collect::<Result<_>>()?;
    // Measured here: open the device first (the target follows it).
    let runtime = if args.prepare.is_none() && args.measured.is_none() {
        Some(tcc_runtime::cli::runtime(
            args.device.as_deref(),
            None,
            true,
        )?)
    } else {
        None
    };
    let target = match (args.target, &runtime) {
        (Some(target), _) => target,
        (None, Some(runtime)) => super::run::target_for(runtime.device()),
        (None, None) => unreachable!("clap requires --target with --prepare and --measured"),
    };
    let kernels = gemm_kernels(&Session::new(), args, target, &input_shapes)?;
    if kernels.is_empty() {
        bail!(
            "{} has no GEMM or convolution kernel for --target={target}: nothing to tune",
            args.input.display()
        );
    }
    let most = kernels.iter().map(|k| k.candidates).max().unwrap_or(1);
    let rounds = args.max_candidates.map_or(most, |cap| most.min(cap.max(1)));
    if let Some(directory) = &args.prepare {
        std::fs::create_dir_all(directory)
            .with_context(|| format!("cannot create {}", directory.display()))?;
        let mut libraries = Vec::new();
        for round in 0..rounds {
            let started = Instant::now();
            libraries.push(compile_round(
                args,
                target,
                &input_shapes,
                round,
                directory,
            )?);
            eprintln!(
                "tcc tune: round {}/{rounds} compiled in {:.1} s",
                round + 1,
                started.elapsed().as_secs_f64()
            );
        }
        let zero_inputs = {
            let model = Model::load(&libraries[0])?;
            let function = tcc_runtime::cli::resolve_function(&model, None)?;
            model
                .function(&function)?
                .inputs
                .iter()
                .map(|input| format!("--input={}=0", input.type_string()))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let names: Vec<String> = libraries.iter().map(|l| l.display().to_string()).collect();
        let others: Vec<String> = names[1..]
            .iter()
            .map(|n| format!("--in-turns-with={n}"))
            .collect();
        return super::write_stdout(&format!(
            "{rounds} rounds of {} GEMM kernels for --target={target} in {}. Measure them on the device with\n  tcc-benchmark {} {} {zero_inputs} --iterations={} --json > measured.json\nthen write the record here with the same flags and --measured=measured.json -o RECORD.json\n",
            kernels.len(),
            directory.display(),
            names[0],
            others.join(" "),
            args.iterations.max(1)
        ));
    }
    let output = args
        .output
        .as_ref()
        .expect("clap requires --output unless --prepare");
    let (device, driver, times) = if let Some(path) = &args.measured {
        read_measurements(path, rounds)?
    } else {
        let runtime = runtime.as_ref().expect("opened above");
        eprintln!(
            "tcc tune: {} GEMM kernels on {} (--target={target}), {rounds} rounds",
            kernels.len(),
            runtime.device().name
        );
        let directory = tempfile::tempdir().context("cannot create a temporary directory")?;
        let mut turns = Vec::new();
        let progress = super::progress::Progress::bar("tcc tune", rounds as u64);
        for round in 0..rounds {
            progress.message(format!("compiling and building round {}", round + 1));
            let started = Instant::now();
            let built = compile_round(args, target, &input_shapes, round, directory.path())
                .and_then(|library| {
                    // Before any measuring: every kernel to tune must be
                    // one the artifact launches, or its time never comes.
                    if round == 0 {
                        check_launched(&kernels, &library)?;
                    }
                    load_round(runtime, &library)
                });
            match built {
                Ok(turn) => turns.push(turn),
                Err(e) if round == 0 => {
                    return Err(e.context("round 1 (the target's table, the baseline)"));
                }
                Err(e) => {
                    // The rounds before it are measured and recorded.
                    progress.println(format!(
                        "tcc tune: round {}/{rounds} failed, so the record compares the {round} rounds before it: {e:#}",
                        round + 1
                    ));
                    break;
                }
            }
            progress.println(format!(
                "tcc tune: round {}/{rounds} compiled and built in {:.1} s",
                round + 1,
                started.elapsed().as_secs_f64()
            ));
            progress.step();
        }
        drop(progress);
        // The rounds take turns, one call each, so that a change in the
        // machine's load touches every round alike; each kernel keeps its
        // fastest call.
        let started = Instant::now();
        let progress = super::progress::Progress::bar("tcc tune", args.iterations.max(1) as u64);
        progress.message("measuring (interleaved calls of every round)");
        for iteration in 0..args.iterations.max(1) {
            match measure_in_turns(&mut turns, 1) {
                Ok(()) => progress.step(),
                Err(e) if iteration == 0 => return Err(e.into()),
                Err(e) => {
                    // The calls made so far are kept.
                    progress.println(format!(
                        "tcc tune: call {} of the rounds failed, the record keeps the {iteration} before it: {e}",
                        iteration + 1
                    ));
                    break;
                }
            }
        }
        drop(progress);
        eprintln!(
            "tcc tune: {} interleaved calls of each round in {:.1} s",
            args.iterations.max(1),
            started.elapsed().as_secs_f64()
        );
        (
            runtime.device().name.clone(),
            runtime.device().driver_version.clone(),
            turns.into_iter().map(Turn::into_fastest).collect(),
        )
    };
    // Per (kind, shape): the summed time of its kernels in each round
    // that gave them a candidate of their own.
    let mut shapes: BTreeMap<(String, [i64; 4]), Vec<&GemmKernel>> = BTreeMap::new();
    for kernel in &kernels {
        shapes
            .entry((kernel.kind.clone(), kernel.shape))
            .or_default()
            .push(kernel);
    }
    let mut record = if args.update && output.exists() {
        let existing = TuningRecord::load(&output).map_err(anyhow::Error::msg)?;
        if existing.device != device || existing.target != target.name() {
            bail!(
                "{} is a record for {} (--target={}); this run measures {device} (--target={target})",
                output.display(),
                existing.device,
                existing.target
            );
        }
        // A record updated on another driver says so.
        if driver.is_empty() {
            existing
        } else {
            TuningRecord { driver, ..existing }
        }
    } else {
        TuningRecord::new(&device, &driver, target)
    };
    let mut unmeasured = 0;
    println!("| kind | batch x M x N x K | kernels | table ms | best ms | best config |");
    println!("|---|---|---|---|---|---|");
    for ((kind, shape), members) in shapes {
        let [batch, m, n, k] = shape;
        let candidates = target.gemm_candidates(batch, m, n, k);
        let summed = |round: usize| -> Option<f64> {
            members
                .iter()
                .map(|kernel| times[round].get(&kernel.name).copied())
                .sum()
        };
        let Some(default_ms) = summed(0) else {
            // Not launched by the function that ran (another function's
            // kernel): the other shapes are still recorded.
            let missing: Vec<&str> = members
                .iter()
                .filter(|kernel| !times[0].contains_key(&kernel.name))
                .map(|kernel| kernel.name.as_str())
                .collect();
            eprintln!(
                "tcc tune: warning: {kind} {batch}x{m}x{n}x{k} not tuned: no call of kernel {} was timed in the first round (the function that ran does not launch it)",
                missing.join(", ")
            );
            unmeasured += 1;
            continue;
        };
        let (best_round, best_ms) = (0..times.len().min(candidates.len()))
            .filter_map(|round| summed(round).map(|ms| (round, ms)))
            .fold(
                (0, default_ms),
                |best, this| {
                    if this.1 < best.1 { this } else { best }
                },
            );
        let config = candidates[best_round];
        println!(
            "| {kind} | {batch}x{m}x{n}x{k} | {} | {default_ms:.3} | {best_ms:.3} | {}x{}x{} tiles, {}x{} per work-item, split-K {}{} |",
            members.len(),
            config.tile_m,
            config.tile_n,
            config.tile_k,
            config.work_m,
            config.work_n,
            config.split_k,
            if config.is_few_rows() {
                format!(", {} lanes along K", config.k_lanes)
            } else {
                String::new()
            }
        );
        record
            .gemms
            .retain(|entry| !(entry.kind == kind && entry.shape == shape));
        record.gemms.push(TunedGemm {
            kind,
            shape,
            config: [
                config.tile_m,
                config.tile_n,
                config.tile_k,
                config.work_m,
                config.work_n,
                config.split_k,
            ],
            k_lanes: config.k_lanes,
            best_ms,
            default_ms,
        });
    }
    if record.gemms.is_empty() {
        bail!(
            "none of the {unmeasured} GEMM shapes was timed: no record written (see the warnings above)"
        );
    }
    record
        .gemms
        .sort_by(|a, b| (&a.kind, a.shape).cmp(&(&b.kind, b.shape)));
    let total = |pick: fn(&TunedGemm) -> f64| record.gemms.iter().map(pick).sum::<f64>();
    eprintln!(
        "tcc tune: the record's GEMM kernels {:.3} ms with the table, {:.3} ms tuned; written to {}",
        total(|g| g.default_ms),
        total(|g| g.best_ms),
        output.display()
    );
    super::write_atomically(&output, format!("{}\n", record.to_json()).as_bytes())
}
