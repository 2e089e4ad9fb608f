//! `tcc compile`: runs the phases over a model and writes the IR at a
//! `--compile-to` stop, an intermediate (`--emit`), or the artifact.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::{Args, ValueEnum};
use melior::ir::Module;

use super::session::Session;
use super::stats::StatsFormat;
use super::write_atomically;
use crate::back::{host_llvm, opencl_c, ptx};
use crate::config::Target;
use crate::phases::{GemmChoice, Phase};

/// What `--emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The artifact: a shared library with host code, kernels and weights (default).
    Artifact,
    /// The MLIR after the gpu phase (kernels and host function).
    Mlir,
    /// The host program as LLVM IR.
    LlvmIr,
    /// The host program as a native object file.
    Obj,
    /// The kernels as OpenCL C: one .cl file per kernel into the -o directory, or the whole program to stdout.
    OpenclC,
    /// The kernels as SPIR-V (one .spv per kernel into the -o directory; portable loop-nest kernels).
    Spirv,
    /// The kernels as PTX for NVIDIA (`--gpu-arch`), the form the artifact ships beside the OpenCL C.
    Ptx,
}

/// `--precision`: the arithmetic of GEMMs and convolutions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// IEEE fp32 (the default).
    Fp32,
    /// TF32 tensor cores with fp32 accumulation (PyTorch's allow_tf32): PTX for NVIDIA only.
    Tf32,
}

/// `--ptx`: whether the artifact carries PTX beside the OpenCL C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PtxSwitch {
    /// Compile the kernels to PTX too (needs clang 22 and libclc).
    On,
    /// OpenCL C only: NVIDIA's driver compiles it on the first run.
    Off,
}

#[derive(Args, Debug)]
pub struct CompileArgs {
    /// The model: MLIR (TOSA/linalg level) text, or an ONNX model (.onnx), imported first.
    pub input: PathBuf,
    /// Where to write the result (stdout for text when omitted).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Stop after this phase and print the IR (input, graph, linalg, dispatch, tile, buffer, gpu, codegen).
    #[arg(long = "compile-to", value_parser = parse_phase)]
    pub compile_to: Option<Phase>,
    /// Which intermediate to write instead of the artifact.
    #[arg(long, value_enum, default_value = "artifact")]
    pub emit: Emit,
    /// The device family to tune kernels for (generic, nvidia, pocl-cpu).
    #[arg(long, default_value = "generic", value_parser = parse_target)]
    pub target: Target,
    /// Print statistics (kernels with kind and work-group size, arena size and liveness lower bound) to stderr: --stats or --stats=text for people, --stats=json for scripts.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "text", value_name = "FORMAT")]
    pub stats: Option<StatsFormat>,
    /// A shape for an ONNX graph input: fills its dynamic dimensions and may change its batch (first dimension), e.g. data=32x3x224x224 (repeat).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Ship the kernels as PTX for NVIDIA beside the OpenCL C (default: on for --target=nvidia, off otherwise); the runtime loads the PTX on NVIDIA drivers and falls back to the OpenCL C elsewhere.
    #[arg(long, value_enum)]
    pub ptx: Option<PtxSwitch>,
    /// The NVIDIA architecture the PTX is for (sm_XY; it also runs on newer GPUs).
    #[arg(long = "gpu-arch", default_value = ptx::DEFAULT_ARCH, value_name = "SM")]
    pub gpu_arch: String,
    /// Arithmetic of GEMMs and convolutions: fp32 (exact, default) or tf32 (tensor cores, inputs rounded to 10 mantissa bits, fp32 accumulation; needs --target=nvidia and PTX, sm_80 or newer; the OpenCL C fallback stays fp32).
    #[arg(long, value_enum, default_value = "fp32")]
    pub precision: PrecisionArg,
    /// A tuning record written by `tcc tune` for the device the model will run on: its measured GEMM and convolution configurations replace the target's table for the shapes it names (its target must match --target).
    #[arg(long, value_name = "FILE")]
    pub tuning: Option<PathBuf>,
    /// The most operations one fused elementwise kernel body may hold, instead of the target's cap (0: no cap). Longer chains are cut into several kernels, whose first driver builds add up linearly where one long kernel's do not.
    #[arg(long, value_name = "N")]
    pub max_fused_ops: Option<i64>,
}

impl CompileArgs {
    /// The PTX to generate, if any: `--ptx`, else on for `--target=nvidia`.
    fn ptx_options(&self) -> Result<Option<ptx::PtxOptions>> {
        let wanted = match self.ptx {
            Some(PtxSwitch::On) => true,
            Some(PtxSwitch::Off) => false,
            None => self.target == Target::Nvidia || self.emit == Emit::Ptx,
        };
        if self.emit == Emit::Ptx && !wanted {
            bail!("--emit=ptx contradicts --ptx=off");
        }
        if self.precision == PrecisionArg::Tf32 {
            if self.target != Target::Nvidia {
                bail!(
                    "--precision=tf32 runs GEMMs on NVIDIA tensor cores: it needs --target=nvidia (got --target={})",
                    self.target.name()
                );
            }
            if !wanted {
                bail!("--precision=tf32 reaches tensor cores only through PTX: drop --ptx=off");
            }
        }
        if !wanted {
            return Ok(None);
        }
        let options = ptx::PtxOptions::with_arch(&self.gpu_arch).map_err(anyhow::Error::msg)?;
        if self.precision == PrecisionArg::Tf32 && options.compute_capability() < 80 {
            bail!(
                "--precision=tf32 needs TF32 tensor cores (sm_80 or newer), not --gpu-arch={}",
                self.gpu_arch
            );
        }
        Ok(Some(options))
    }
}

fn parse_phase(text: &str) -> Result<Phase, String> {
    text.parse()
}

fn parse_target(text: &str) -> Result<Target, String> {
    text.parse()
}

fn write_text(output: Option<&Path>, text: &str) -> Result<()> {
    match output {
        Some(path) => write_atomically(path, text.as_bytes()),
        None => super::write_stdout(text),
    }
}

/// A compiled model in every form the driver can write.
pub struct Compiled<'c> {
    pub module: Module<'c>,
    pub program: opencl_c::Program,
    /// The program as PTX, when asked for (see [`Compiled::add_ptx`]).
    pub ptx: Option<String>,
}

impl Compiled<'_> {
    /// The host side (with the kernels, and the PTX when there is some).
    pub fn host(&self, module_name: &str) -> Result<host_llvm::HostOutput> {
        Ok(host_llvm::emit(
            &self.module,
            &self.program,
            self.ptx.as_deref(),
            module_name,
        )?)
    }

    /// Compiles the OpenCL C program to PTX for `options.arch`.
    pub fn add_ptx(&mut self, options: &ptx::PtxOptions) -> Result<()> {
        let toolchain = ptx::Toolchain::find()?;
        self.ptx = Some(ptx::write_ptx(&self.program, options, &toolchain)?);
        Ok(())
    }
}

/// Runs every phase up to the gpu phase and translates the kernels.
pub fn compile_to_kernels<'c>(
    session: &'c Session,
    input: &Path,
    target: Target,
) -> Result<Compiled<'c>> {
    compile_to_kernels_with(session, input, target, &[])
}

/// As [`compile_to_kernels`], with `--input-shape` overrides.
pub fn compile_to_kernels_with<'c>(
    session: &'c Session,
    input: &Path,
    target: Target,
    input_shapes: &[(String, Vec<i64>)],
) -> Result<Compiled<'c>> {
    compile_to_kernels_in(
        session,
        input,
        target,
        input_shapes,
        opencl_c::Precision::Fp32,
        &GemmChoice::default(),
    )
}

/// As [`compile_to_kernels_with`], with the GEMMs' precision and how
/// their configurations are chosen.
pub fn compile_to_kernels_in<'c>(
    session: &'c Session,
    input: &Path,
    target: Target,
    input_shapes: &[(String, Vec<i64>)],
    precision: opencl_c::Precision,
    choice: &GemmChoice,
) -> Result<Compiled<'c>> {
    choice.check().map_err(anyhow::Error::msg)?;
    if let Some(path) = &choice.tuning {
        let record = crate::config::tuning::TuningRecord::load(path).map_err(anyhow::Error::msg)?;
        if record.target != target.name() {
            bail!(
                "{} is a tuning record for --target={} (measured on {}), not --target={target}",
                path.display(),
                record.target,
                record.device
            );
        }
    }
    let mut module = super::import::parse_model_with(session, input, input_shapes)?;
    session.run_pipeline(
        &mut module,
        &crate::phases::pipeline_to_choosing(Phase::Gpu, target, true, choice),
    )?;
    let program = opencl_c::write_program_with(&module, precision)?;
    Ok(Compiled {
        module,
        program,
        ptx: None,
    })
}

/// Compiles the model at `input` into the artifact `output` (a shared
/// library) for `target`: the library entry point behind `tcc compile -o`.
/// For `--target=nvidia` the artifact carries PTX too, as with the command.
pub fn compile_file(input: &Path, target: Target, output: &Path) -> Result<()> {
    let session = Session::new();
    let mut compiled = compile_to_kernels(&session, input, target)?;
    if target == Target::Nvidia {
        compiled.add_ptx(&ptx::PtxOptions::default())?;
    }
    let module_name = input
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("model");
    let host = compiled.host(module_name)?;
    host_llvm::link_shared(&host.object, output)?;
    Ok(())
}

pub fn run(args: &CompileArgs) -> Result<()> {
    let session = Session::new();
    let input_shapes: Vec<(String, Vec<i64>)> = args
        .input_shapes
        .iter()
        .map(|s| super::import::parse_input_shape(s))
        .collect::<Result<_>>()?;
    let stop = args.compile_to.unwrap_or(Phase::Codegen);
    if args.max_fused_ops.is_some_and(|n| n < 0) {
        bail!("--max-fused-ops must be a count of operations (0: no cap)");
    }
    let choice = GemmChoice {
        tuning: args.tuning.clone(),
        candidate: None,
        max_fused_ops: args.max_fused_ops,
    };
    choice.check().map_err(anyhow::Error::msg)?;
    if stop < Phase::Codegen {
        if args.emit != Emit::Artifact {
            bail!(
                "--emit={:?} needs the whole pipeline; drop --compile-to={stop}",
                args.emit
            );
        }
        let mut module = super::import::parse_model_with(&session, &args.input, &input_shapes)?;
        session.run_pipeline(
            &mut module,
            &crate::phases::pipeline_to_choosing(stop, args.target, true, &choice),
        )?;
        if let Some(format) = args.stats {
            eprint!(
                "{}",
                crate::driver::stats::collect(&module).render_as(format)
            );
        }
        return write_text(
            args.output.as_deref(),
            &format!("{}\n", module.as_operation()),
        );
    }

    if args.emit == Emit::Spirv {
        let Some(directory) = args.output.as_deref() else {
            bail!("--emit=spirv writes one .spv per kernel: give -o DIRECTORY")
        };
        let mut module = super::import::parse_model_with(&session, &args.input, &input_shapes)?;
        session.run_pipeline(
            &mut module,
            &crate::phases::pipeline_to_with(Phase::Gpu, args.target, false),
        )?;
        let kernels = crate::back::spirv::write_kernels(&session, &module)?;
        std::fs::create_dir_all(directory)
            .with_context(|| format!("cannot create {}", directory.display()))?;
        for kernel in kernels {
            write_atomically(
                &directory.join(format!("{}.spv", kernel.name)),
                &kernel.binary,
            )?;
        }
        return Ok(());
    }
    let ptx_options = args.ptx_options()?;
    let precision = match args.precision {
        PrecisionArg::Fp32 => opencl_c::Precision::Fp32,
        PrecisionArg::Tf32 => opencl_c::Precision::Tf32,
    };
    let mut compiled = compile_to_kernels_in(
        &session,
        &args.input,
        args.target,
        &input_shapes,
        precision,
        &choice,
    )?;
    if let Some(options) = &ptx_options {
        compiled.add_ptx(options)?;
    }
    if let Some(format) = args.stats {
        eprint!(
            "{}",
            crate::driver::stats::collect(&compiled.module).render_as(format)
        );
    }
    let output = args.output.as_deref();
    let module_name = args
        .input
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("model");
    match (args.emit, args.compile_to) {
        (Emit::Mlir, _) => write_text(output, &format!("{}\n", compiled.module.as_operation())),
        (Emit::OpenclC, _) | (Emit::Artifact, Some(Phase::Codegen)) if output.is_none() => {
            write_text(None, &compiled.program.source)
        }
        (Emit::OpenclC, _) => {
            let directory = output.expect("checked above");
            std::fs::create_dir_all(directory)
                .with_context(|| format!("cannot create {}", directory.display()))?;
            for (name, source) in &compiled.program.kernel_sources {
                write_atomically(&directory.join(format!("{name}.cl")), source.as_bytes())?;
            }
            Ok(())
        }
        (Emit::Spirv, _) => unreachable!("handled before the OpenCL C pipeline"),
        (Emit::Ptx, _) => write_text(output, compiled.ptx.as_deref().unwrap_or_default()),
        (Emit::LlvmIr, _) => {
            let host = compiled.host(module_name)?;
            write_text(output, &host.llvm_ir)
        }
        (Emit::Obj, _) => {
            let Some(path) = output else {
                bail!("--emit=obj writes a binary file: give -o FILE")
            };
            let host = compiled.host(module_name)?;
            write_atomically(path, &host.object)
        }
        (Emit::Artifact, _) => {
            let Some(path) = output else {
                bail!(
                    "the artifact is a shared library: give -o model.so (or --emit=mlir|llvm-ir|opencl-c to print text)"
                )
            };
            let host = compiled.host(module_name)?;
            host_llvm::link_shared(&host.object, path)?;
            Ok(())
        }
    }
}
