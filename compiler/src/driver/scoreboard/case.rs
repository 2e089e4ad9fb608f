//! One scoreboard case: its ONNX model imported and compiled, its data
//! sets loaded, run on the runtime and compared (`run_case`), or prepared
//! for another machine (`prepare_cases`).

use super::*;

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
        DType::BF16 => tcc_runtime::DType::BF16,
        DType::F64 => tcc_runtime::DType::F64,
        DType::I16 => tcc_runtime::DType::I16,
        DType::U8 => tcc_runtime::DType::U8,
        DType::U16 => tcc_runtime::DType::U16,
        DType::U32 => tcc_runtime::DType::U32,
        DType::U64 => tcc_runtime::DType::U64,
        // One value a byte at the interface (see the importer's narrow types).
        DType::I4 | DType::I2 => tcc_runtime::DType::I8,
        DType::U4 | DType::U2 => tcc_runtime::DType::U8,
        DType::F8E4M3FN => tcc_runtime::DType::F8E4M3FN,
        DType::F8E4M3FNUZ => tcc_runtime::DType::F8E4M3FNUZ,
        DType::F8E5M2 => tcc_runtime::DType::F8E5M2,
        DType::F8E5M2FNUZ => tcc_runtime::DType::F8E5M2FNUZ,
        DType::F4E2M1 => tcc_runtime::DType::F4E2M1,
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
    let size = t.dtype.size();
    t.dtype.value_f64(&t.bytes[size * i..size * (i + 1)])
}

/// Compares one output (dtype, shape, every element); `None` when it
/// matches. Integer and boolean outputs, and every output of an exact case,
/// must be equal (NaN matches NaN; -0 and +0 are told apart in exact cases).
fn compare(
    name: &str,
    got: &HostTensor,
    want: &onnx::tensor::Const,
    tolerance: &CaseTolerance,
    own: Option<OwnTolerance>,
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
    let float = got.dtype.is_float();
    let scale = (0..want.numel())
        .map(|i| want.f64_at(i).abs())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (atol, rtol) = if float {
        tolerance.bounds_for(scale, got.dtype)
    } else {
        (0.0, 0.0)
    };
    // The minifloats come from conversions, which are exact.
    let bitwise = !float || tolerance.exact || got.dtype.minifloat().is_some();
    let mut worst: Option<(usize, f64, f64)> = None;
    let mut bad = 0usize;
    // Whether every element is within the case's own bounds (its
    // data.json), said in the message of a case that fails the
    // scoreboard's.
    let mut within_own = own.is_some() && float;
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
            if let Some(own) = own {
                within_own &= !(w.is_nan() || g.is_nan())
                    && (g == w || (g - w).abs() <= own.atol + own.rtol * w.abs());
            }
            bad += 1;
            if worst.is_none_or(|(_, wg, ww)| (g - w).abs() > (wg - ww).abs() || wg.is_nan()) {
                worst = Some((i, g, w));
            }
        }
    }
    worst.map(|(i, g, w)| {
        let note = match own {
            Some(own) if within_own => format!(
                "; all within the case's own rtol {}, atol {} (its expected values are coarser than float32)",
                own.rtol, own.atol
            ),
            _ => String::new(),
        };
        format!(
            "output '{name}': {bad} of {} elements differ ({}), worst at {i}: {g} vs {w}{note}",
            want.numel(),
            if bitwise {
                "bit for bit".to_string()
            } else {
                format!("atol {atol:.3e}, rtol {rtol}")
            }
        )
    })
}

/// The bounds a test case states for itself (`data.json`'s `rtol` and
/// `atol`, as the onnx package's model cases and `test/onnx/node_suite.py`
/// write them). The scoreboard does not pass a case by them — its own
/// bounds are tighter, see tolerance.rs — but names them in the message of
/// a case that fails its bounds and not the case's own, so that an
/// expectation can say why.
#[derive(Clone, Copy, Debug)]
pub(super) struct OwnTolerance {
    rtol: f64,
    atol: f64,
}

fn own_tolerance(case: &Path) -> Option<OwnTolerance> {
    let text = std::fs::read_to_string(case.join("data.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let rtol = json.get("rtol")?.as_f64()?;
    let atol = json.get("atol")?.as_f64()?;
    (rtol.is_finite() && atol.is_finite() && rtol >= 0.0 && atol >= 0.0)
        .then_some(OwnTolerance { rtol, atol })
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
    own: Option<OwnTolerance>,
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
            own: own_tolerance(case),
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

/// A case's name: its directory's.
pub(super) fn case_name(case: &Path) -> String {
    case.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("?")
        .to_string()
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
        let library = directory.path().join("model.so");
        compiled.link("model", &library)?;
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
                if let Some(difference) = compare(&info.name, got, want, &case.tolerance, case.own)
                {
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
            let float = host.dtype.is_float();
            tolerances.push(if !float || case.tolerance.exact {
                "exact".to_string()
            } else {
                let scale = (0..want.numel())
                    .map(|i| want.f64_at(i).abs())
                    .filter(|v| v.is_finite())
                    .fold(0.0f64, f64::max);
                let (atol, rtol) = case.tolerance.bounds_for(scale, host.dtype);
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
        let name = case_name(case);
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
