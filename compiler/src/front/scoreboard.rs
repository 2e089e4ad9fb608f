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
use crate::config::Target;
use crate::driver::compile::compile_to_kernels;
use crate::driver::run::target_for;
use crate::driver::session::Session;
use crate::front::onnx::{self, DType, ImportOptions, proto::TensorProto, tensor};

/// Relative tolerance of an inexact output: `|got - want| <= atol + RTOL *
/// |want|`, a few ulp of the transcendental functions (OpenCL allows up to
/// 16 for pow) over short chains of them.
pub const RTOL: f64 = 1e-5;

/// The absolute term of an inexact output, per unit of the output's scale
/// (its largest |element|) and per square root of the longest accumulation
/// in the model: 8 float32 epsilons (2^-23), the typical rounding of an
/// n-term sum added in another order being about `sqrt(n) * eps * |terms|`.
pub const ATOL_PER_SCALE: f64 = 8.0 * f32::EPSILON as f64;

/// ONNX ops whose float results are exact: they move, select, compare or
/// convert values, or compute exactly rounded results that every correct
/// implementation gets bit for bit (max, min, abs, neg, relu, clip). A
/// model made only of these must match bit for bit.
pub const EXACT_OPS: &[&str] = &[
    "Abs",
    "And",
    "ArgMax",
    "ArgMin",
    "Cast",
    "CastLike",
    "Ceil",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "DepthToSpace",
    "Dropout",
    "Equal",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Greater",
    "GreaterOrEqual",
    "Identity",
    "Less",
    "LessOrEqual",
    "Max",
    "MaxPool",
    "Min",
    "Neg",
    "Not",
    "Or",
    "Pad",
    "ReduceMax",
    "ReduceMin",
    "Relu",
    "Reshape",
    "Shape",
    "Size",
    "Slice",
    "SpaceToDepth",
    "Split",
    "Squeeze",
    "Tile",
    "Transpose",
    "Unsqueeze",
    "Where",
    "Xor",
];

/// How one case's outputs are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaseTolerance {
    /// Every op is in [`EXACT_OPS`]: outputs must match bit for bit.
    pub exact: bool,
    /// The longest accumulation (sum of products, reduction, window,
    /// normalization) in the imported model; 1 when there is none.
    pub length: usize,
}

impl CaseTolerance {
    /// `(atol, rtol)` for an inexact float output whose largest |element|
    /// is `scale`.
    pub fn bounds(&self, scale: f64) -> (f64, f64) {
        if self.exact {
            return (0.0, 0.0);
        }
        (
            ATOL_PER_SCALE * (self.length.max(1) as f64).sqrt() * scale,
            RTOL,
        )
    }

    pub fn describe(&self) -> String {
        if self.exact {
            "bit for bit".into()
        } else {
            format!(
                "rtol {RTOL}, atol 8 eps * sqrt({}) * max|want|",
                self.length
            )
        }
    }
}

/// The case's tolerance: exact when every node of the ONNX graph is in
/// [`EXACT_OPS`], else from the longest accumulation of the imported TOSA.
pub fn case_tolerance(model: &crate::front::onnx::proto::ModelProto, mlir: &str) -> CaseTolerance {
    let exact = model.graph.as_ref().is_some_and(|g| {
        g.node
            .iter()
            .all(|n| EXACT_OPS.contains(&n.op_type.as_str()))
    });
    CaseTolerance {
        exact,
        length: accumulation_length(mlir),
    }
}

/// Dimensions of the `index`th `tensor<...>` type in `text`.
fn tensor_dims(text: &str, index: usize) -> Option<Vec<usize>> {
    let body = text.split("tensor<").nth(index + 1)?;
    let body = body.split('>').next()?;
    let mut parts: Vec<&str> = body.split('x').collect();
    parts.pop(); // the element type
    parts.iter().map(|p| p.trim().parse().ok()).collect()
}

fn attribute_int(line: &str, name: &str) -> Option<i64> {
    let rest = line.split(&format!("{name} = ")).nth(1)?;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

fn axis_dim(dims: &[usize], axis: i64) -> Option<usize> {
    let axis = if axis < 0 {
        axis + dims.len() as i64
    } else {
        axis
    };
    dims.get(usize::try_from(axis).ok()?).copied()
}

/// The longest accumulation of the imported module (custom op syntax, as
/// the importer prints it): K of matmuls, kernel volume times input
/// channels of convolutions, the reduced dimension of reductions, softmax
/// and layer norm, the window of average pools.
pub fn accumulation_length(mlir: &str) -> usize {
    let mut longest = 1usize;
    for line in mlir.lines() {
        let Some(op) = line
            .split_whitespace()
            .find(|w| w.starts_with("tosa.") || w.starts_with("tcc."))
        else {
            continue;
        };
        // The operand types follow the last " : ".
        let types = line.rsplit_once(" : ").map(|(_, t)| t).unwrap_or("");
        let length = match op {
            "tosa.matmul" => tensor_dims(types, 0).and_then(|d| d.last().copied()),
            "tosa.conv2d" | "tosa.conv3d" | "tosa.transpose_conv2d" => {
                tensor_dims(types, 1).map(|d| d.iter().skip(1).product())
            }
            "tosa.depthwise_conv2d" => tensor_dims(types, 1).map(|d| d[..2].iter().product()),
            "tosa.avg_pool2d" => line.split("kernel = array<i64: ").nth(1).map(|k| {
                k.split('>')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|v| v.trim().parse::<usize>().ok())
                    .product()
            }),
            _ if op.starts_with("tosa.reduce_") => tensor_dims(types, 0)
                .zip(attribute_int(line, "axis"))
                .and_then(|(d, a)| axis_dim(&d, a)),
            "tcc.softmax" | "tcc.log_softmax" => tensor_dims(types, 0)
                .zip(attribute_int(line, "axis"))
                .and_then(|(d, a)| axis_dim(&d, a)),
            "tcc.layer_norm" => {
                tensor_dims(types, 0)
                    .zip(attribute_int(line, "axis"))
                    .map(|(d, a)| {
                        let a = if a < 0 { a + d.len() as i64 } else { a } as usize;
                        d.iter().skip(a).product()
                    })
            }
            _ => None,
        };
        longest = longest.max(length.unwrap_or(1));
    }
    longest
}

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
    /// Run nothing: compile every case for --target into this directory, with its inputs and expected outputs as .npy, for a machine without the compiler (`scripts/onnx-scoreboard-device.sh` runs them there).
    #[arg(long, value_name = "DIR", requires = "target")]
    pub prepare: Option<PathBuf>,
    /// The target --prepare compiles for.
    #[arg(long, value_parser = |s: &str| s.parse::<Target>())]
    pub target: Option<Target>,
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

/// Compares one output (dtype, shape, every element); `None` when it
/// matches. Integer and boolean outputs, and every output of an exact case,
/// must be equal (NaN matches NaN; -0 and +0 are told apart in exact cases).
fn compare(
    name: &str,
    got: &HostTensor,
    want: &onnx::tensor::Const,
    tolerance: &CaseTolerance,
) -> Option<String> {
    let want_dtype = runtime_dtype(want.dtype);
    if want_dtype != Some(got.dtype) {
        return Some(format!(
            "output '{name}' has element type {:?}, expected {}",
            got.dtype, want.dtype
        ));
    }
    let want_shape: Vec<usize> = want.shape.iter().map(|&d| d as usize).collect();
    if got.shape != want_shape {
        return Some(format!(
            "output '{name}' has shape {:?}, expected {:?}",
            got.shape, want_shape
        ));
    }
    let float = matches!(got.dtype, tcc_runtime::DType::F32 | tcc_runtime::DType::F16);
    let scale = (0..want.numel())
        .map(|i| want.f64_at(i).abs())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (atol, rtol) = if float {
        tolerance.bounds(scale)
    } else {
        (0.0, 0.0)
    };
    let bitwise = !float || tolerance.exact;
    let mut worst: Option<(usize, f64, f64)> = None;
    let mut bad = 0usize;
    for i in 0..want.numel() {
        let (g, w) = (host_value(got, i), want.f64_at(i));
        let ok = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if bitwise {
            g == w && g.is_sign_negative() == w.is_sign_negative()
        } else {
            g == w || (g - w).abs() <= atol + rtol * w.abs()
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
            "output '{name}': {bad} of {} elements differ ({}), worst at {i}: {g} vs {w}",
            want.numel(),
            if bitwise {
                "bit for bit".to_string()
            } else {
                format!("atol {atol:.3e}, rtol {rtol}")
            }
        )
    })
}

/// The `output_N.pb` files of a test data set, in order; `N` must run
/// from 0 without gaps.
fn output_files(set: &Path) -> Result<Vec<PathBuf>> {
    let mut count = 0;
    while set.join(format!("output_{count}.pb")).is_file() {
        count += 1;
    }
    let stray = std::fs::read_dir(set)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("output_") && n.ends_with(".pb"))
        .count();
    if stray != count {
        bail!(
            "{}: the output_N.pb files are not numbered 0..{count}",
            set.display()
        );
    }
    Ok((0..count)
        .map(|i| set.join(format!("output_{i}.pb")))
        .collect())
}

/// A case after import: what running it here and preparing it for
/// another machine both need.
struct ImportedCase {
    imported: onnx::Imported,
    tolerance: CaseTolerance,
    graph_outputs: usize,
    /// Its `test_data_set_*` directories, in order.
    sets: Vec<PathBuf>,
}

/// Imports `case`: `Err(outcome)` when the importer refuses it (an
/// unsupported op or attribute) or the case is malformed.
fn import_case(case: &Path) -> std::result::Result<ImportedCase, Outcome> {
    let model = case.join("model.onnx");
    let options = ImportOptions::default();
    let imported = match onnx::import_file(&model, &options) {
        Ok(imported) => imported,
        Err(error) => {
            return Err(Outcome::Unsupported(
                error.message.replace(&format!("{}: ", model.display()), ""),
            ));
        }
    };
    let rest = (|| -> Result<(CaseTolerance, usize, Vec<PathBuf>)> {
        let proto = onnx::parse_model(&std::fs::read(&model)?).map_err(|e| anyhow!("{e}"))?;
        let graph_outputs = proto.graph.as_ref().map_or(0, |g| g.output.len());
        if imported.outputs.len() != graph_outputs {
            bail!(
                "the graph has {graph_outputs} outputs, the imported function {}",
                imported.outputs.len()
            );
        }
        let tolerance = case_tolerance(&proto, &imported.mlir);
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
        Ok((tolerance, graph_outputs, sets))
    })();
    match rest {
        Ok((tolerance, graph_outputs, sets)) => Ok(ImportedCase {
            imported,
            tolerance,
            graph_outputs,
            sets,
        }),
        Err(error) => Err(failure(error)),
    }
}

/// A failed case's outcome: the first line of the error chain.
fn failure(error: anyhow::Error) -> Outcome {
    Outcome::Fail(
        format!("{error:#}")
            .lines()
            .next()
            .unwrap_or("")
            .to_string(),
    )
}

impl ImportedCase {
    /// One test data set's inputs, in the function's input types.
    fn inputs(&self, set: &Path) -> Result<Vec<HostTensor>> {
        self.imported
            .inputs
            .iter()
            .enumerate()
            .map(|(i, info)| {
                to_host(
                    &load_tensor(&set.join(format!("input_{i}.pb")))?,
                    info.ty.dtype,
                )
            })
            .collect()
    }

    /// One test data set's expected outputs.
    fn expected(&self, set: &Path) -> Result<Vec<onnx::tensor::Const>> {
        let files = output_files(set)?;
        if files.len() != self.graph_outputs {
            bail!(
                "{}: the graph has {} outputs, the test data {}",
                set_name(set),
                self.graph_outputs,
                files.len()
            );
        }
        files.iter().map(|file| load_tensor(file)).collect()
    }
}

fn set_name(set: &Path) -> String {
    set.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Runs one case on `runtime`.
pub fn run_case(case: &Path, runtime: &Runtime) -> Outcome {
    let case = match import_case(case) {
        Ok(case) => case,
        Err(outcome) => return outcome,
    };
    let result = (|| -> Result<Option<String>> {
        let session = Session::new();
        let directory = tempfile::tempdir()?;
        let mlir = directory.path().join("model.mlir");
        std::fs::write(&mlir, &case.imported.mlir)?;
        let target = target_for(runtime.device());
        let compiled = compile_to_kernels(&session, &mlir, target)?;
        let host = host_llvm::emit(&compiled.module, &compiled.program, None, "model")?;
        let library = directory.path().join("model.so");
        host_llvm::link_shared(&host.object, &library)?;
        let loaded = Model::load(&library)?;
        let mut run_session = runtime.session(&loaded)?;
        for set in &case.sets {
            let inputs = case.inputs(set)?;
            let outputs = run_session.run(&case.imported.function, &inputs)?;
            let expected = case.expected(set)?;
            if outputs.len() != case.graph_outputs {
                bail!(
                    "{}: the graph has {} outputs, the run {}",
                    set_name(set),
                    case.graph_outputs,
                    outputs.len()
                );
            }
            for ((info, want), got) in case.imported.outputs.iter().zip(&expected).zip(&outputs) {
                if let Some(difference) = compare(&info.name, got, want, &case.tolerance) {
                    return Ok(Some(format!("{}: {difference}", set_name(set))));
                }
            }
        }
        Ok(None)
    })();
    match result {
        Ok(None) => Outcome::Pass,
        Ok(Some(difference)) => Outcome::Fail(difference),
        Err(error) => failure(error),
    }
}

/// `--prepare=DIR`: compiles `case` for `target` into `DIR/NAME/model.so`
/// and writes each test data set's inputs and expected outputs as .npy
/// (`DIR/NAME/SET.inputI.npy`, `SET.expectedI.npy`), so that a machine
/// with an OpenCL driver but no compiler can run the scoreboard with
/// tcc-run and tcc-compare. Returns the MANIFEST lines: `NAME SET
/// FUNCTION NUM_INPUTS TOLERANCE...`, one tolerance per output (`exact`,
/// or `ABS:REL` for an inexact float output, computed from the expected
/// output as the scoreboard does here).
fn prepare_case(
    case: &ImportedCase,
    name: &str,
    target: Target,
    out: &Path,
) -> Result<Vec<String>> {
    let directory = out.join(name);
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("cannot create {}", directory.display()))?;
    let mlir = directory.join("model.mlir");
    std::fs::write(&mlir, &case.imported.mlir)?;
    crate::driver::compile::compile_file(&mlir, target, &directory.join("model.so"))?;
    std::fs::remove_file(&mlir)?;
    let mut lines = Vec::new();
    for set in &case.sets {
        let set_tag = set_name(set);
        let inputs = case.inputs(set)?;
        for (i, input) in inputs.iter().enumerate() {
            tcc_runtime::npy::write_npy(&directory.join(format!("{set_tag}.input{i}.npy")), input)?;
        }
        let mut tolerances = Vec::new();
        for (i, (info, want)) in case
            .imported
            .outputs
            .iter()
            .zip(case.expected(set)?)
            .enumerate()
        {
            let host =
                to_host(&want, want.dtype).with_context(|| format!("output '{}'", info.name))?;
            tcc_runtime::npy::write_npy(
                &directory.join(format!("{set_tag}.expected{i}.npy")),
                &host,
            )?;
            let float = matches!(
                host.dtype,
                tcc_runtime::DType::F32 | tcc_runtime::DType::F16
            );
            tolerances.push(if !float || case.tolerance.exact {
                "exact".to_string()
            } else {
                let scale = (0..want.numel())
                    .map(|i| want.f64_at(i).abs())
                    .filter(|v| v.is_finite())
                    .fold(0.0f64, f64::max);
                let (atol, rtol) = case.tolerance.bounds(scale);
                format!("{atol:e}:{rtol:e}")
            });
        }
        lines.push(format!(
            "{name} {set_tag} {} {} {}",
            case.imported.function,
            inputs.len(),
            tolerances.join(" ")
        ));
    }
    Ok(lines)
}

/// `--prepare=DIR` over every case: DIR/MANIFEST lists the prepared test
/// data sets, DIR/OUTCOMES the cases that end before running (in the
/// expectation-list format: the importer's refusals, compile failures).
pub fn prepare_cases(
    cases: &[PathBuf],
    target: Target,
    out: &Path,
    verbose: bool,
) -> Result<BTreeMap<String, Outcome>> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut manifest = String::new();
    let mut ended = BTreeMap::new();
    for case in cases {
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let start = Instant::now();
        let outcome = match import_case(case) {
            Err(outcome) => Some(outcome),
            Ok(imported) => match prepare_case(&imported, &name, target, out) {
                Ok(lines) => {
                    for line in lines {
                        manifest.push_str(&line);
                        manifest.push('\n');
                    }
                    None
                }
                Err(error) => {
                    let _ = std::fs::remove_dir_all(out.join(&name));
                    Some(failure(error))
                }
            },
        };
        if verbose || outcome.is_some() {
            eprintln!(
                "{name}: {} ({:.1}s)",
                outcome
                    .as_ref()
                    .map_or("prepared".to_string(), Outcome::render),
                start.elapsed().as_secs_f64()
            );
        }
        if let Some(outcome) = outcome {
            ended.insert(name, outcome);
        }
    }
    crate::driver::write_atomically(&out.join("MANIFEST"), manifest.as_bytes())?;
    crate::driver::write_atomically(
        &out.join("OUTCOMES"),
        render_expectations(&ended).as_bytes(),
    )?;
    Ok(ended)
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

/// Whether `outcome` is what `expected` says: `pass` must pass;
/// `unsupported: R` and `fail: R` must end the same way with a reason that
/// contains `R` (so an expectation names its reason, and a different
/// failure, or a pass, does not match).
pub fn matches_expectation(outcome: &Outcome, expected: &Outcome) -> bool {
    match (outcome, expected) {
        (Outcome::Pass, Outcome::Pass) => true,
        (Outcome::Unsupported(got), Outcome::Unsupported(want))
        | (Outcome::Fail(got), Outcome::Fail(want)) => {
            !want.is_empty() && got.contains(want.as_str())
        }
        _ => false,
    }
}

/// Cases that did not end as expected (a case without an entry must pass),
/// including expected failures that now pass (the list must be updated).
pub fn regressions(
    outcomes: &BTreeMap<String, Outcome>,
    expected: &BTreeMap<String, Outcome>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, outcome) in outcomes {
        let want = expected.get(name).cloned().unwrap_or(Outcome::Pass);
        if !matches_expectation(outcome, &want) {
            let hint = if *outcome == Outcome::Pass {
                " (it now passes: update the expectation)"
            } else {
                ""
            };
            out.push(format!(
                "{name}: expected {}, got {}{hint}",
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
         # `tcc onnx-test DIRS --expectations test/onnx/expectations.txt` fails when a case does not end as listed (outcome and reason).\n",
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
    if let Some(out) = &args.prepare {
        let target = args.target.expect("clap requires --target with --prepare");
        let ended = prepare_cases(&cases, target, out, args.verbose)?;
        return crate::driver::write_stdout(&format!(
            "{} of {} cases prepared in {} for --target={target}; {} ended before running (listed in OUTCOMES)\n",
            cases.len() - ended.len(),
            cases.len(),
            out.display(),
            ended.len()
        ));
    }
    let outcomes = run_cases(&cases, args.device.as_deref(), args.verbose)?;
    if let Some(path) = &args.write_expectations {
        crate::driver::write_atomically(path, render_expectations(&outcomes).as_bytes())?;
    }
    crate::driver::write_stdout(&format!(
        "{} (of {} cases; outputs compared bit for bit for exact ops, else with rtol {RTOL} and an atol scaled by the output and the longest accumulation)\n",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulation_length_reads_the_reducing_ops() {
        let mlir = r#"
    %4 = tosa.conv2d %0, %2, %3, %1, %1 {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x7x5x3xf32>, tensor<4x3x2x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x5x4x4xf32> loc(#loc2)
    %5 = tosa.transpose %4 {perms = array<i32: 0, 3, 1, 2>} : (tensor<2x5x4x4xf32>) -> tensor<2x4x5x4xf32>
"#;
        assert_eq!(accumulation_length(mlir), 18);
        let mlir = "%1 = tosa.matmul %a, %b, %z, %z : (tensor<1x4x40xf32>, tensor<1x40x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>\n\
                    %2 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<3x70x2xf32>) -> tensor<3x1x2xf32>\n\
                    %3 = tcc.softmax %x axis = -1 : tensor<2x9xf32>";
        assert_eq!(accumulation_length(mlir), 70);
        assert_eq!(
            accumulation_length(
                "%0 = tosa.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>"
            ),
            1
        );
    }

    #[test]
    fn tolerance_bounds() {
        let exact = CaseTolerance {
            exact: true,
            length: 100,
        };
        assert_eq!(exact.bounds(5.0), (0.0, 0.0));
        let sum = CaseTolerance {
            exact: false,
            length: 16,
        };
        let (atol, rtol) = sum.bounds(2.0);
        assert_eq!(rtol, RTOL);
        assert!((atol - 8.0 * f32::EPSILON as f64 * 4.0 * 2.0).abs() < 1e-15);
    }
}
