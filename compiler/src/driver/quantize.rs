//! `tcc compile --quantize=int8 --profile=FILE`: post-training int8
//! quantization from a `tcc profile` calibration profile. This module
//! holds the flags, their checks, the import that names each node's ops
//! by its output tensor (as the profile names tensors), what the compiler
//! reports about the quantized ops, and the accuracy report: the f32 and
//! the int8 model run on the profile's sample inputs on the default
//! OpenCL device, compared by top-1 agreement and absolute differences.
//! The rewrite itself is the pass `tcc-quantize-int8`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::{Args, ValueEnum};
use melior::ir::Module;
use melior::ir::operation::OperationLike;
use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime};

use super::session::Session;
use crate::config::Target;
use crate::front::onnx::{self, ImportOptions};
use crate::passes::{
    Calibration, F32_FALLBACKS_ATTR, QUANTIZATION_ATTR, QUANTIZED_OPS_ATTR, Ranges,
};

/// `--quantize`: the quantized form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QuantizeArg {
    /// int8 weights (per output channel) and activations (per tensor), int32 accumulation.
    Int8,
}

/// `--calibration`: how an activation's range is clipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CalibrationArg {
    /// The largest magnitude the profile saw.
    Max,
    /// The magnitude below which --percentile % of the values lay (from the histogram).
    Percentile,
}

#[derive(Args, Debug, Clone)]
pub struct QuantizeArgs {
    /// Post-training quantization: int8 runs convolutions and matmuls as int8 x int8 products with int32 accumulation (weights per output channel, activations per tensor from --profile); other ops stay f32. Prints the accuracy against f32 on the profile's samples.
    #[arg(long, value_enum)]
    pub quantize: Option<QuantizeArg>,
    /// The calibration profile (`tcc profile`'s output) for --quantize.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// How --quantize chooses each activation's range: max or percentile.
    #[arg(long, value_enum, default_value = "max")]
    pub calibration: CalibrationArg,
    /// The share of values (percent) inside the range for --calibration=percentile.
    #[arg(long, default_value_t = 99.99, value_name = "P")]
    pub percentile: f64,
    /// Sample inputs for --quantize's accuracy report (as `tcc profile --inputs`; default: the directory the profile was made from).
    #[arg(long = "calibration-inputs", value_name = "DIR")]
    pub calibration_inputs: Option<PathBuf>,
    /// Skip --quantize's accuracy report (for artifacts measured on another machine: scripts/onnx/quant-accuracy.py --device-bundle).
    #[arg(long = "no-accuracy-report")]
    pub no_accuracy_report: bool,
}

impl QuantizeArgs {
    /// The checked options of `tcc-quantize-int8`, or `None` without
    /// `--quantize`. The profile is read here too, so that a bad one fails
    /// before anything compiles.
    pub fn pass_options(&self) -> Result<Option<Vec<(&'static str, String)>>> {
        let Some(QuantizeArg::Int8) = self.quantize else {
            if self.no_accuracy_report {
                bail!("--no-accuracy-report applies to --quantize=int8");
            }
            if self.profile.is_some() || self.calibration_inputs.is_some() {
                bail!("--profile and --calibration-inputs apply to --quantize=int8");
            }
            return Ok(None);
        };
        let Some(profile) = &self.profile else {
            bail!(
                "--quantize=int8 needs --profile=FILE, a calibration profile: tcc profile model.onnx --inputs=DIR -o profile.json"
            )
        };
        let method = match self.calibration {
            CalibrationArg::Max => "max",
            CalibrationArg::Percentile => "percentile",
        };
        let calibration = Calibration::parse(method, self.percentile)
            .map_err(|e| anyhow::anyhow!("--percentile: {e}"))?;
        Ranges::load(profile, calibration).map_err(anyhow::Error::msg)?;
        let text = profile.display().to_string();
        if text.contains(['"', '{', '}']) {
            bail!("the profile's path {text} contains a quote or a brace");
        }
        Ok(Some(vec![
            ("profile", format!("\"{text}\"")),
            ("calibration", method.to_string()),
            ("percentile", self.percentile.to_string()),
        ]))
    }
}

/// Parses the model for quantization: an ONNX model imported with each
/// node's ops located at its output tensor's name (MLIR as it is).
pub fn parse_named<'c>(
    session: &'c Session,
    path: &Path,
    input_shapes: &[(String, Vec<i64>)],
) -> Result<Module<'c>> {
    if !super::import::is_onnx(path) {
        return super::import::parse_model_with(session, path, input_shapes);
    }
    let options = ImportOptions {
        input_shapes: input_shapes.to_vec(),
        name_by_outputs: true,
        ..ImportOptions::default()
    };
    let imported =
        crate::front::onnx::import_file(path, &options).map_err(|e| anyhow::anyhow!("{e}"))?;
    super::import::build_imported(session, &path.display().to_string(), imported)
}

/// What `tcc-quantize-int8` recorded on the module: the count of int8
/// ops and why the others stayed f32; `None` when it did not run.
pub fn summary(module: &Module) -> Option<(i64, Vec<String>)> {
    let op = module.as_operation();
    op.attribute(QUANTIZATION_ATTR).ok()?;
    let count = op
        .attribute(QUANTIZED_OPS_ATTR)
        .ok()
        .and_then(crate::ir::util::integer_value)
        .unwrap_or(0);
    let reasons = op
        .attribute(F32_FALLBACKS_ATTR)
        .ok()
        .and_then(|a| melior::ir::attribute::ArrayAttribute::try_from(a).ok())
        .map(|array| {
            (0..array.len())
                .filter_map(|i| array.element(i).ok())
                .filter_map(crate::ir::util::string_value)
                .collect()
        })
        .unwrap_or_default();
    Some((count, reasons))
}

/// Prints the summary to stderr.
pub fn print_summary(module: &Module) {
    let Some((count, reasons)) = summary(module) else {
        return;
    };
    eprintln!(
        "tcc compile: int8: {count} convolution(s) and matmul(s) quantized, {} left f32",
        reasons.len()
    );
    for reason in reasons {
        eprintln!("  {reason}");
    }
}

/// Top-1 agreement and absolute differences of one model's outputs
/// against another's.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Agreement {
    pub rows: usize,
    pub agreeing: usize,
    pub max_abs: f64,
    pub sum_abs: f64,
    pub elements: usize,
}

impl Agreement {
    /// Adds one output pair (f32) of rows of `row` elements.
    pub fn add(&mut self, reference: &[f32], other: &[f32], row: usize) {
        let row = row.max(1);
        for (a, b) in reference.chunks(row).zip(other.chunks(row)) {
            self.rows += 1;
            if argmax(a) == argmax(b) {
                self.agreeing += 1;
            }
        }
        for (a, b) in reference.iter().zip(other) {
            let difference = (f64::from(*a) - f64::from(*b)).abs();
            self.max_abs = self.max_abs.max(if difference.is_nan() {
                f64::INFINITY
            } else {
                difference
            });
            self.sum_abs += difference;
            self.elements += 1;
        }
    }

    pub fn mean_abs(&self) -> f64 {
        self.sum_abs / self.elements.max(1) as f64
    }

    pub fn top1(&self) -> f64 {
        self.agreeing as f64 / self.rows.max(1) as f64
    }
}

/// The index of the largest element (the first of equals; NaN never wins).
pub fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] || values[best].is_nan() && !v.is_nan() {
            best = i;
        }
    }
    best
}

fn f32s(tensor: &HostTensor) -> Vec<f32> {
    tensor
        .bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The accuracy report of `tcc compile --quantize`: compiles the f32
/// model beside the int8 artifact and runs both on the samples. Prints
/// why it is skipped (no samples, no device, not ONNX) and never fails the
/// compilation for that.
pub fn report_accuracy(
    args: &QuantizeArgs,
    input: &Path,
    input_shapes: &[(String, Vec<i64>)],
    target: Target,
    artifact: &Path,
) -> Result<()> {
    let skip = |why: &str| {
        eprintln!("tcc compile: int8 accuracy not measured: {why} (the artifact is written)");
        Ok(())
    };
    if args.no_accuracy_report {
        return skip("--no-accuracy-report");
    }
    if !super::import::is_onnx(input) {
        return skip("the accuracy report runs ONNX models, whose inputs the samples name");
    }
    let samples_dir = match (&args.calibration_inputs, &args.profile) {
        (Some(dir), _) => dir.clone(),
        (None, Some(profile)) => match profile_inputs(profile) {
            Some(dir) => dir,
            None => {
                return skip(
                    "the profile does not say where its samples are: give --calibration-inputs=DIR",
                );
            }
        },
        (None, None) => return skip("no samples"),
    };
    let runtime = match Runtime::new(DeviceSelector::from_flag_or_env(None)) {
        Ok(runtime) => runtime,
        Err(e) => return skip(&format!("no OpenCL device ({e})")),
    };
    let imported = onnx::import_file(
        input,
        &ImportOptions {
            input_shapes: input_shapes.to_vec(),
            ..ImportOptions::default()
        },
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let samples = super::profile::read_samples(&samples_dir, &imported.inputs)?;

    // Tens of seconds after the artifact is written: say what is going on.
    let progress = super::progress::Progress::spinner("tcc compile");
    progress.message("int8 accuracy report: compiling the f32 model to compare with");
    let directory = tempfile::tempdir().context("cannot create a temporary directory")?;
    let reference = directory.path().join("f32.so");
    let session = Session::new();
    let compiled = super::compile::compile_to_kernels_with(&session, input, target, input_shapes)?;
    compiled.link("f32", &reference)?;
    let f32_model = Model::load(&reference)?;
    let int8_model = Model::load(artifact)?;
    progress.message(format!(
        "int8 accuracy report: building both models' kernels for {}",
        runtime.device().name
    ));
    let mut f32_session = runtime.session(&f32_model)?;
    let mut int8_session = runtime.session(&int8_model)?;
    let function = imported.function.clone();
    let mut agreement = Agreement::default();
    for (done, (label, inputs)) in samples.iter().enumerate() {
        progress.message(format!(
            "int8 accuracy report: sample {}/{} ({label}) on both models",
            done + 1,
            samples.len()
        ));
        let expected = f32_session
            .run(&function, inputs)
            .with_context(|| format!("running the f32 model on {label}"))?;
        let got = int8_session
            .run(&function, inputs)
            .with_context(|| format!("running the int8 model on {label}"))?;
        for ((e, g), info) in expected.iter().zip(&got).zip(&imported.outputs) {
            if info.ty.dtype != onnx::DType::F32 {
                continue;
            }
            // One row per batch element: its classes are everything else
            // (a [1, 1000, 1, 1] score map included).
            let row = info.ty.shape.iter().skip(1).product::<i64>().max(1) as usize;
            agreement.add(&f32s(e), &f32s(g), row);
        }
    }
    eprintln!(
        "tcc compile: int8 accuracy against f32 over {} samples ({}) on {}: top-1 agreement {}/{} ({:.2}%), max abs difference {:.4e}, mean abs difference {:.4e}",
        samples.len(),
        samples_dir.display(),
        runtime.device().name,
        agreement.agreeing,
        agreement.rows,
        100.0 * agreement.top1(),
        agreement.max_abs,
        agreement.mean_abs()
    );
    Ok(())
}

/// The samples directory a profile records (`inputs`), if it exists.
fn profile_inputs(profile: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(profile).ok()?;
    let profile: super::profile::Profile = serde_json::from_str(&text).ok()?;
    profile.inputs.map(PathBuf::from).filter(|p| p.is_dir())
}

#[cfg(test)]
mod tests {
    use super::{Agreement, argmax};

    #[test]
    fn agreement_counts_rows_and_differences() {
        let mut a = Agreement::default();
        a.add(&[0.0, 1.0, 2.0, 0.0], &[0.0, 1.5, 1.0, 2.0], 2);
        assert_eq!((a.rows, a.agreeing), (2, 1));
        assert_eq!(a.max_abs, 2.0);
        assert_eq!(a.mean_abs(), 3.5 / 4.0);
        assert_eq!(argmax(&[f32::NAN, 1.0, 3.0, 3.0]), 2);
    }
}
