//! `tcc run model.mlir ...`: compile in-process and run, with tcc-run's
//! flags (`--function`, `--input=@x.npy`, `--input=2x3xf32=1,2,3,4,5,6`,
//! `--output=@y.npy`, `--device`), plus `--target=reference` to run the
//! upstream-MLIR reference lowering on the CPU instead.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use tcc_runtime::cli::{self, OutputArg};
use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime};

use super::session::Session;
use crate::config::Target;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The model (MLIR, or ONNX: .onnx).
    pub input: PathBuf,
    /// The function to run (default: the model's only function).
    #[arg(long)]
    pub function: Option<String>,
    /// An input: @file.npy or a literal like 2x3xf32=1,2,3,4,5,6 (repeat in order).
    #[arg(long = "input")]
    pub inputs: Vec<String>,
    /// Where to put each result: @file.npy, or - to print (default: print all).
    #[arg(long = "output")]
    pub outputs: Vec<String>,
    /// OpenCL device: index from `tcc-run --list-devices` or a name substring (default: TCC_DEVICE, else first GPU, else first CPU).
    #[arg(long)]
    pub device: Option<String>,
    /// `reference` runs the upstream-MLIR CPU lowering; a known target (opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, or the family names generic, nvidia, pocl-cpu), `host` (this CPU) or `auto` (the one that suits the device) runs on OpenCL. The default is `tcc compile`'s, generic, so that both build the same kernels.
    #[arg(long, default_value = "generic")]
    pub target: String,
    /// Print at most this many elements per result.
    #[arg(long, default_value_t = 1024)]
    pub print_max_elements: usize,
    /// A shape for an ONNX graph input, as `tcc compile --input-shape` takes it: NAME=DIMS (repeat).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Give an ONNX graph input its value at compile time, as `tcc compile --input-value` does: NAME=0,2, NAME=@file.npy or NAME=@file.pb (repeat). The compiled function no longer takes it: give --input for the others only.
    #[arg(long = "input-value", value_name = "NAME=VALUES", value_parser = super::import::parse_input_value_arg)]
    pub input_values: Vec<(String, crate::front::onnx::InputValue)>,
}

/// The tuning target that suits a device.
pub fn target_for(device: &tcc_runtime::DeviceInfo) -> Target {
    tcc_runtime::cli::target_for_device(device)
        .parse()
        .unwrap_or(Target::Generic)
}

pub fn run(args: &RunArgs) -> Result<()> {
    let mut tensors = Vec::new();
    let mut sources = Vec::new();
    for spec in &args.inputs {
        let input = cli::parse_input(spec)?;
        tensors.push(input.tensor);
        sources.push(input.source);
    }
    let outputs: Vec<OutputArg> = args
        .outputs
        .iter()
        .map(|s| cli::parse_output(s))
        .collect::<Result<_, _>>()?;

    let (function, results) = if args.target == "reference" {
        if !args.input_shapes.is_empty() || !args.input_values.is_empty() {
            bail!(
                "--input-shape and --input-value apply to the OpenCL targets, not to --target=reference"
            );
        }
        let function = match &args.function {
            Some(f) => f.clone(),
            None => single_function(&args.input)?,
        };
        let results = super::reference::run(&args.input, &function, &tensors)?;
        (function, results)
    } else {
        run_opencl(args, &tensors, &sources)?
    };

    if outputs.len() > results.len() {
        bail!(
            "@{function} has {} output(s) but {} --output flags were given",
            results.len(),
            outputs.len()
        );
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "EXEC @{function}")?;
    for (index, result) in results.iter().enumerate() {
        let arg = outputs.get(index).unwrap_or(&OutputArg::Print);
        cli::emit_output(arg, index, result, &mut stdout, args.print_max_elements)?;
    }
    Ok(())
}

fn single_function(input: &std::path::Path) -> Result<String> {
    let session = Session::new();
    let module = super::import::parse_model(&session, input)?;
    let names: Vec<String> = crate::ir::util::body_ops(module.as_operation())
        .into_iter()
        .filter(|op| crate::ir::util::op_name(op) == "func.func")
        .filter(|op| {
            melior::ir::operation::OperationLike::attribute(op, "sym_visibility")
                .ok()
                .and_then(crate::ir::util::string_value)
                .as_deref()
                != Some("private")
        })
        .filter_map(|op| {
            melior::ir::operation::OperationLike::attribute(&op, "sym_name")
                .ok()
                .and_then(crate::ir::util::string_value)
        })
        .collect();
    match names.as_slice() {
        [only] => Ok(only.clone()),
        _ => bail!(
            "{} has {} functions; choose one with --function ({})",
            input.display(),
            names.len(),
            names.join(", ")
        ),
    }
}

fn run_opencl(
    args: &RunArgs,
    tensors: &[HostTensor],
    sources: &[String],
) -> Result<(String, Vec<HostTensor>)> {
    let runtime = Runtime::new(DeviceSelector::from_flag_or_env(args.device.as_deref()))?;
    // A known target (`config/targets.rs`); `auto` takes the device's
    // family, and on a CPU this machine's (`host`).
    let name = if args.target == "auto" {
        match target_for(runtime.device()) {
            Target::PoclCpu => "host".to_string(),
            family => family.name().to_string(),
        }
    } else {
        args.target.clone()
    };
    let desc = crate::config::targets::known(&name)
        .map_err(|e| anyhow::anyhow!("--target: {e}, or `reference` or `auto`"))?;
    let target = crate::config::targets::family(&desc).map_err(anyhow::Error::msg)?;
    let session = Session::new();
    let choice = crate::phases::GemmChoice {
        target_name: Some(name),
        ..Default::default()
    };
    let spec = super::import::InputSpec {
        shapes: args
            .input_shapes
            .iter()
            .map(|s| super::import::parse_input_shape(s))
            .collect::<Result<_>>()?,
        values: args.input_values.clone(),
        ..Default::default()
    };
    let module = super::import::parse_model_dims(&session, &args.input, &spec)?;
    let compiled = super::pipeline::compile_module_to_kernels(&session, module, target, &choice)?;
    let module_name = args
        .input
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("model");
    let directory = tempfile::tempdir().context("cannot create a temporary directory")?;
    let library = directory.path().join(format!("{module_name}.so"));
    compiled.link(module_name, &library)?;
    let model = Model::load(&library)?;
    let function = cli::resolve_function(&model, args.function.as_deref())?;
    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
    model.function(&function)?.check_inputs(tensors, &sources)?;
    let mut run_session = runtime.session(&model)?;
    let results = run_session.run_with_sources(&function, tensors, &sources)?;
    Ok((function, results))
}
