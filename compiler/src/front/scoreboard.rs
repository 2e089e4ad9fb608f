//! `tcc onnx-test DIR...`: runs ONNX backend test cases — directories
//! with `model.onnx` and `test_data_set_*/{input,output}_*.pb`, as in the
//! onnx package's `backend/test/data/pytorch-{converted,operator}` — through
//! import, compilation and the OpenCL runtime, compares the outputs, and
//! reports `N passed, M failed, K unsupported`. With `--expectations` a
//! case that does worse than its entry (`pass`, `unsupported: ...`,
//! `fail: ...`) is a regression and the command fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::Args;
use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime};

use crate::back::host_llvm;
use crate::driver::compile::compile_to_kernels;
use crate::driver::run::target_for;
use crate::driver::session::Session;
use crate::front::onnx::{self, DType, ImportOptions, proto::TensorProto, tensor};

/// Relative and absolute tolerance of the output comparison:
/// `|got - want| <= ATOL + RTOL * |want|`.
pub const RTOL: f64 = 1e-3;
pub const ATOL: f64 = 1e-4;

#[derive(Args, Debug)]
pub struct ScoreboardArgs {
    /// Test-case directories, or directories of them (e.g. .../onnx/backend/test/data/pytorch-converted).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Expectation list (case → pass | unsupported: reason | fail: reason); a case doing worse is a regression.
    #[arg(long)]
    pub expectations: Option<PathBuf>,
    /// Write the observed results in the expectation-list format to this file.
    #[arg(long)]
    pub write_expectations: Option<PathBuf>,
    /// Only cases whose name contains this.
    #[arg(long)]
    pub filter: Option<String>,
    /// OpenCL device (index or name substring; default TCC_DEVICE, else first GPU, else first CPU).
    #[arg(long)]
    pub device: Option<String>,
    /// Print every case, not only failures.
    #[arg(short, long)]
    pub verbose: bool,
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The importer (or the input phase) rejects the model: an op, type or
    /// feature tcc does not support.
    Unsupported(String),
    /// Anything else: a compile error, a run error, wrong numbers.
    Fail(String),
}

impl Outcome {
    fn rank(&self) -> u8 {
        match self {
            Outcome::Pass => 2,
            Outcome::Unsupported(_) => 1,
            Outcome::Fail(_) => 0,
        }
    }

    pub fn render(&self) -> String {
        match self {
            Outcome::Pass => "pass".into(),
            Outcome::Unsupported(r) => format!("unsupported: {r}"),
            Outcome::Fail(r) => format!("fail: {r}"),
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        let text = text.trim();
        if text == "pass" {
            return Some(Outcome::Pass);
        }
        if let Some(r) = text.strip_prefix("unsupported:") {
            return Some(Outcome::Unsupported(r.trim().to_string()));
        }
        text.strip_prefix("fail:")
            .map(|r| Outcome::Fail(r.trim().to_string()))
    }
}

/// The case directories under `dirs` (a directory with `model.onnx` is a
/// case; otherwise its subdirectories are searched).
pub fn find_cases(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut cases = Vec::new();
    for dir in dirs {
        if dir.join("model.onnx").is_file() {
            cases.push(dir.clone());
            continue;
        }
        let entries =
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.join("model.onnx").is_file())
            .collect();
        if found.is_empty() {
            bail!(
                "{} has no test cases (directories with model.onnx)",
                dir.display()
            );
        }
        found.sort();
        cases.extend(found);
    }
    Ok(cases)
}

/// Reads an expectation list: `name: outcome` lines, `#` comments.
pub fn read_expectations(path: &Path) -> Result<BTreeMap<String, Outcome>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, outcome) = line
            .split_once(' ')
            .ok_or_else(|| anyhow!("{}:{}: expected 'case outcome'", path.display(), number + 1))?;
        let outcome = Outcome::parse(outcome).ok_or_else(|| {
            anyhow!(
                "{}:{}: unknown outcome '{outcome}'",
                path.display(),
                number + 1
            )
        })?;
        out.insert(name.to_string(), outcome);
    }
    Ok(out)
}

fn load_tensor(path: &Path) -> Result<onnx::tensor::Const> {
    use prost::Message as _;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let proto = TensorProto::decode(bytes.as_slice())
        .with_context(|| format!("{}: not a TensorProto", path.display()))?;
    tensor::decode(&proto, path.parent(), &path.display().to_string()).map_err(|e| anyhow!("{e}"))
}

fn runtime_dtype(dtype: DType) -> Option<tcc_runtime::DType> {
    Some(match dtype {
        DType::F32 => tcc_runtime::DType::F32,
        DType::F16 => tcc_runtime::DType::F16,
        DType::I64 => tcc_runtime::DType::I64,
        DType::I32 => tcc_runtime::DType::I32,
        DType::I8 => tcc_runtime::DType::I8,
        DType::Bool => tcc_runtime::DType::Bool,
        _ => return None,
    })
}

fn to_host(c: &onnx::tensor::Const, want: DType) -> Result<HostTensor> {
    let c = c.cast(want);
    let dtype = runtime_dtype(c.dtype).ok_or_else(|| anyhow!("no runtime type for {}", c.dtype))?;
    HostTensor::new(
        dtype,
        c.shape.iter().map(|&d| d as usize).collect(),
        c.full_bytes(),
    )
    .map_err(|e| anyhow!("{e}"))
}

/// Element `i` of a host tensor as f64.
fn host_value(t: &HostTensor, i: usize) -> f64 {
    let b = &t.bytes;
    match t.dtype {
        tcc_runtime::DType::F32 => {
            f32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap()) as f64
        }
        tcc_runtime::DType::F16 => {
            onnx::dtype::f16_to_f32(u16::from_le_bytes([b[2 * i], b[2 * i + 1]])) as f64
        }
        tcc_runtime::DType::I32 => {
            i32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap()) as f64
        }
        tcc_runtime::DType::I64 => {
            i64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap()) as f64
        }
        tcc_runtime::DType::I8 => b[i] as i8 as f64,
        tcc_runtime::DType::Bool => (b[i] != 0) as u8 as f64,
    }
}

/// Compares one output; `None` when it matches.
fn compare(name: &str, got: &HostTensor, want: &onnx::tensor::Const) -> Option<String> {
    let want_shape: Vec<usize> = want.shape.iter().map(|&d| d as usize).collect();
    if got.shape != want_shape {
        return Some(format!(
            "output '{name}' has shape {:?}, expected {:?}",
            got.shape, want_shape
        ));
    }
    let mut worst: Option<(usize, f64, f64)> = None;
    let mut bad = 0usize;
    for i in 0..want.numel() {
        let (g, w) = (host_value(got, i), want.f64_at(i));
        let ok = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else {
            g == w || (g - w).abs() <= ATOL + RTOL * w.abs()
        };
        if !ok {
            bad += 1;
            if worst.is_none_or(|(_, wg, ww)| (g - w).abs() > (wg - ww).abs() || wg.is_nan()) {
                worst = Some((i, g, w));
            }
        }
    }
    worst.map(|(i, g, w)| {
        format!(
            "output '{name}': {bad} of {} elements differ, worst at {i}: {g} vs {w}",
            want.numel()
        )
    })
}

/// Runs one case on `runtime`.
pub fn run_case(case: &Path, runtime: &Runtime) -> Outcome {
    let model = case.join("model.onnx");
    let options = ImportOptions::default();
    let imported = match onnx::import_file(&model, &options) {
        Ok(imported) => imported,
        Err(error) => {
            return Outcome::Unsupported(
                error.message.replace(&format!("{}: ", model.display()), ""),
            );
        }
    };
    let result = (|| -> Result<Option<String>> {
        let session = Session::new();
        let directory = tempfile::tempdir()?;
        let mlir = directory.path().join("model.mlir");
        std::fs::write(&mlir, &imported.mlir)?;
        let target = target_for(runtime.device());
        let compiled = compile_to_kernels(&session, &mlir, target)?;
        let host = host_llvm::emit(&compiled.module, &compiled.program, None, "model")?;
        let library = directory.path().join("model.so");
        host_llvm::link_shared(&host.object, &library)?;
        let loaded = Model::load(&library)?;
        let mut sets: Vec<PathBuf> = std::fs::read_dir(case)?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("test_data_set_"))
            })
            .collect();
        sets.sort();
        if sets.is_empty() {
            bail!("no test_data_set_* directories");
        }
        let mut run_session = runtime.session(&loaded)?;
        for set in sets {
            let mut inputs = Vec::new();
            for (i, info) in imported.inputs.iter().enumerate() {
                let c = load_tensor(&set.join(format!("input_{i}.pb")))?;
                inputs.push(to_host(&c, info.ty.dtype)?);
            }
            let outputs = run_session.run(&imported.function, &inputs)?;
            for (i, info) in imported.outputs.iter().enumerate() {
                let want = load_tensor(&set.join(format!("output_{i}.pb")))?;
                let Some(got) = outputs.get(i) else {
                    bail!("no output {i}")
                };
                if let Some(difference) = compare(&info.name, got, &want) {
                    return Ok(Some(format!(
                        "{}: {difference}",
                        set.file_name().unwrap().to_string_lossy()
                    )));
                }
            }
        }
        Ok(None)
    })();
    match result {
        Ok(None) => Outcome::Pass,
        Ok(Some(difference)) => Outcome::Fail(difference),
        Err(error) => Outcome::Fail(
            format!("{error:#}")
                .lines()
                .next()
                .unwrap_or("")
                .to_string(),
        ),
    }
}

/// Runs every case and prints the summary; returns the outcomes by name.
pub fn run_cases(
    cases: &[PathBuf],
    device: Option<&str>,
    verbose: bool,
) -> Result<BTreeMap<String, Outcome>> {
    let runtime = Runtime::new(DeviceSelector::from_flag_or_env(device))?;
    let mut outcomes = BTreeMap::new();
    for case in cases {
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let start = Instant::now();
        let outcome = run_case(case, &runtime);
        if verbose || outcome != Outcome::Pass {
            eprintln!(
                "{name}: {} ({:.1}s)",
                outcome.render(),
                start.elapsed().as_secs_f64()
            );
        }
        outcomes.insert(name, outcome);
    }
    Ok(outcomes)
}

/// Cases that did worse than expected (and cases without an entry that did
/// not pass).
pub fn regressions(
    outcomes: &BTreeMap<String, Outcome>,
    expected: &BTreeMap<String, Outcome>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, outcome) in outcomes {
        let want = expected.get(name).cloned().unwrap_or(Outcome::Pass);
        if outcome.rank() < want.rank() {
            out.push(format!(
                "{name}: expected {}, got {}",
                want.render(),
                outcome.render()
            ));
        }
    }
    out
}

pub fn summary(outcomes: &BTreeMap<String, Outcome>) -> String {
    let passed = outcomes.values().filter(|o| **o == Outcome::Pass).count();
    let unsupported = outcomes
        .values()
        .filter(|o| matches!(o, Outcome::Unsupported(_)))
        .count();
    let failed = outcomes.len() - passed - unsupported;
    format!("{passed} passed, {failed} failed, {unsupported} unsupported")
}

pub fn render_expectations(outcomes: &BTreeMap<String, Outcome>) -> String {
    let mut text = String::from(
        "# ONNX backend test cases (onnx package: backend/test/data/pytorch-converted and pytorch-operator)\n\
         # and what tcc does with them: pass | unsupported: reason | fail: reason.\n\
         # `tcc onnx-test DIRS --expectations test/onnx/expectations.txt` fails when a case does worse.\n",
    );
    for (name, outcome) in outcomes {
        text.push_str(&format!("{name} {}\n", outcome.render()));
    }
    text
}

pub fn run(args: &ScoreboardArgs) -> Result<()> {
    let mut cases = find_cases(&args.dirs)?;
    if let Some(filter) = &args.filter {
        cases.retain(|c| {
            c.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(filter.as_str()))
        });
    }
    let outcomes = run_cases(&cases, args.device.as_deref(), args.verbose)?;
    if let Some(path) = &args.write_expectations {
        crate::driver::write_atomically(path, render_expectations(&outcomes).as_bytes())?;
    }
    crate::driver::write_stdout(&format!(
        "{} (of {} cases; outputs compared with rtol {RTOL}, atol {ATOL})\n",
        summary(&outcomes),
        outcomes.len()
    ))?;
    if let Some(path) = &args.expectations {
        let expected = read_expectations(path)?;
        let regressions = regressions(&outcomes, &expected);
        if !regressions.is_empty() {
            bail!(
                "{} regression(s) against {}:\n  {}",
                regressions.len(),
                path.display(),
                regressions.join("\n  ")
            );
        }
    }
    Ok(())
}
