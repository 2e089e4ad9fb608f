//! `tcc profile model.onnx --inputs=DIR -o profile.json`: runs a model on
//! representative inputs and records the range of every float tensor it
//! computes, the calibration profile that post-training quantization
//! reads (Glow's and TensorRT's profile-guided quantization).
//!
//! The model is imported with every float32 tensor a node computes as an
//! extra result (`ImportOptions::expose_intermediates`), compiled for the
//! device and run once per sample to find each tensor's minimum and
//! maximum, then once more per sample to fill a histogram of `--bins`
//! equal bins between them, so that both min/max and percentile or entropy
//! calibration can be derived from the file. Tensors are named as in the
//! ONNX graph; the graph's float inputs are recorded after them (from the
//! samples), so that a quantized model's first layer has a range too.
//! Non-finite values are counted, not binned. The profile records the
//! samples' directory, where `tcc compile --quantize` finds them again for
//! its accuracy report.
//!
//! A sample is a subdirectory of DIR holding `<input name>.npy` for every
//! graph input, or, for a model with one input, a `.npy` file directly in
//! DIR; samples are taken in name order.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime};

use super::pipeline::compile_module_to_kernels;
use super::progress::Progress;
use super::session::Session;
use crate::front::onnx::{self, ImportOptions};
use crate::phases::GemmChoice;

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// The model (.onnx).
    pub input: PathBuf,
    /// The samples: subdirectories with `<input name>.npy` per graph input,
    /// or `.npy` files for a model with one input.
    #[arg(long)]
    pub inputs: PathBuf,
    /// Where to write the profile (JSON).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// OpenCL device: index from `tcc-run --list-devices` or a name substring.
    #[arg(long)]
    pub device: Option<String>,
    /// A tuning target (generic, nvidia, pocl-cpu) or `auto` (the device's).
    #[arg(long, default_value = "auto")]
    pub target: String,
    /// Histogram bins per tensor.
    #[arg(long, default_value_t = 2048)]
    pub bins: usize,
    /// Also write the profile as a self-contained HTML page (no network):
    /// a summary, then per tensor its range, percentiles, outlier and
    /// saturation marks and a histogram, sortable by column.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// A shape for a graph input with dynamic dimensions (NAME=1x3x224x224).
    #[arg(long = "input-shape", value_parser = super::import::parse_input_shape)]
    pub input_shapes: Vec<(String, Vec<i64>)>,
}

/// The profile's format belongs to the pass that reads it.
pub use crate::passes::profile::{FORMAT, Profile, TensorRange, VERSION};

/// The samples in `dir`, each one tensor per graph input (in input order).
pub(super) fn read_samples(
    dir: &Path,
    inputs: &[onnx::IoInfo],
) -> Result<Vec<(String, Vec<HostTensor>)>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("--inputs: cannot read {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("--inputs: cannot read {}", dir.display()))?;
    entries.sort();
    let read = |path: &Path| -> Result<HostTensor> {
        Ok(tcc_runtime::cli::parse_input(&format!("@{}", path.display()))?.tensor)
    };
    let mut samples = Vec::new();
    for entry in entries {
        let label = entry.display().to_string();
        if entry.is_dir() {
            let tensors = inputs
                .iter()
                .map(|input| {
                    let file = entry.join(format!("{}.npy", input.name));
                    if !file.exists() {
                        bail!(
                            "sample {label} has no {} (one .npy per graph input: {})",
                            file.display(),
                            names(inputs)
                        );
                    }
                    read(&file)
                })
                .collect::<Result<_>>()?;
            samples.push((label, tensors));
        } else if entry.extension().is_some_and(|e| e == "npy") {
            if inputs.len() != 1 {
                bail!(
                    "{label}: the model has {} inputs ({}); give each sample as a directory \
                     with one .npy per input",
                    inputs.len(),
                    names(inputs)
                );
            }
            samples.push((label, vec![read(&entry)?]));
        }
    }
    if samples.is_empty() {
        bail!(
            "--inputs {} holds no samples (.npy files, or directories of them)",
            dir.display()
        );
    }
    Ok(samples)
}

fn names(inputs: &[onnx::IoInfo]) -> String {
    inputs
        .iter()
        .map(|i| i.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The f32 elements of a result.
fn values(tensor: &HostTensor) -> impl Iterator<Item = f32> + '_ {
    tensor
        .bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The histogram bin of `value` in `bins` bins from `min` to `max`.
pub fn bin_of(value: f32, min: f32, max: f32, bins: usize) -> usize {
    if max <= min {
        return 0;
    }
    let at = ((value - min) as f64 / (max - min) as f64 * bins as f64) as usize;
    at.min(bins - 1)
}

pub fn run(args: &ProfileArgs) -> Result<()> {
    if !super::import::is_onnx(&args.input) {
        bail!(
            "{}: tcc profile takes an ONNX model (.onnx): the profile names tensors as the graph does",
            args.input.display()
        );
    }
    if args.bins == 0 {
        bail!("--bins must be at least 1");
    }
    let options = ImportOptions {
        input_shapes: args.input_shapes.clone(),
        expose_intermediates: true,
        ..ImportOptions::default()
    };
    let imported = onnx::import_file(&args.input, &options).map_err(|e| anyhow::anyhow!("{e}"))?;
    let samples = read_samples(&args.inputs, &imported.inputs)?;

    let runtime = Runtime::new(DeviceSelector::from_flag_or_env(args.device.as_deref()))?;
    let target = if args.target == "auto" {
        super::run::target_for(runtime.device())
    } else {
        args.target
            .parse()
            .map_err(|e| anyhow::anyhow!("--target: {e}, or `auto`"))?
    };
    let stages = Progress::spinner("tcc profile");
    stages.message("compiling the model with every tensor as an output");
    let directory = tempfile::tempdir().context("cannot create a temporary directory")?;
    let session = Session::new();
    let module = super::import::build_imported(
        &session,
        &args.input.display().to_string(),
        imported.clone(),
    )?;
    let compiled = compile_module_to_kernels(&session, module, target, &GemmChoice::default())?;
    let library = directory.path().join("profiled.so");
    compiled.link("profiled", &library)?;
    let model = Model::load(&library)?;
    let function = imported.function.clone();
    stages.message(format!(
        "building {} kernels for {}",
        model.kernel_names().len(),
        runtime.device().name
    ));
    let mut run_session = runtime.session(&model)?;
    drop(stages);

    // The graph's own float outputs and the exposed tensors.
    let profiled: Vec<usize> = (0..imported.outputs.len())
        .filter(|&i| imported.outputs[i].ty.dtype == onnx::DType::F32)
        .collect();
    let graph_inputs: Vec<usize> = (0..imported.inputs.len())
        .filter(|&i| imported.inputs[i].ty.dtype == onnx::DType::F32)
        .collect();
    let mut tensors: Vec<TensorRange> = profiled
        .iter()
        .map(|&i| &imported.outputs[i])
        .chain(graph_inputs.iter().map(|&i| &imported.inputs[i]))
        .map(|info| TensorRange {
            name: info.name.clone(),
            shape: info.ty.shape.clone(),
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            nonfinite: 0,
            histogram: vec![0; args.bins],
        })
        .collect();

    let progress = Progress::bar("tcc profile", 2 * samples.len() as u64);
    for pass in ["ranges", "histograms"] {
        for (label, inputs) in &samples {
            progress.message(format!("{pass}: {label}"));
            let results = run_session
                .run(&function, inputs)
                .with_context(|| format!("running sample {label}"))?;
            let observed = profiled
                .iter()
                .map(|&i| &results[i])
                .chain(graph_inputs.iter().map(|&i| &inputs[i]));
            for (range, result) in tensors.iter_mut().zip(observed) {
                for value in values(result) {
                    if pass == "ranges" {
                        if value.is_finite() {
                            range.min = range.min.min(value);
                            range.max = range.max.max(value);
                        } else {
                            range.nonfinite += 1;
                        }
                    } else if value.is_finite() {
                        range.histogram[bin_of(value, range.min, range.max, args.bins)] += 1;
                    }
                }
            }
            progress.step();
        }
        if pass == "ranges" {
            for range in &mut tensors {
                if range.min > range.max {
                    (range.min, range.max) = (0.0, 0.0);
                }
            }
        }
    }
    drop(progress);

    let profile = Profile {
        format: FORMAT.into(),
        version: VERSION,
        model: args
            .input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        samples: samples.len(),
        tensors,
        inputs: Some(
            std::fs::canonicalize(&args.inputs)
                .unwrap_or_else(|_| args.inputs.clone())
                .display()
                .to_string(),
        ),
    };
    let text = serde_json::to_string_pretty(&profile)? + "\n";
    super::write_atomically(&args.output, text.as_bytes())?;
    eprintln!(
        "tcc profile: {} tensors over {} samples -> {}",
        profile.tensors.len(),
        profile.samples,
        args.output.display()
    );
    if let Some(report) = &args.report {
        let page = super::profile_report::render(&profile);
        super::write_atomically(report, page.as_bytes())?;
        eprintln!("tcc profile: report -> {}", report.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::bin_of;

    #[test]
    fn bins_cover_the_range_ends_included() {
        assert_eq!(bin_of(-1.0, -1.0, 1.0, 4), 0);
        assert_eq!(bin_of(-0.01, -1.0, 1.0, 4), 1);
        assert_eq!(bin_of(0.0, -1.0, 1.0, 4), 2);
        assert_eq!(bin_of(1.0, -1.0, 1.0, 4), 3);
        assert_eq!(bin_of(5.0, 5.0, 5.0, 4), 0);
    }
}
