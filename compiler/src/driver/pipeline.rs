//! Compiling a model as a library does it, without the command line: the
//! phases over a module ([`run_phases`], from an optional start to a stop),
//! the kernels translated ([`compile_to_kernels`]), the host side and the
//! artifact ([`Compiled`], [`compile_file`]), and the metadata an artifact
//! carries. `tcc compile` (`compile.rs`), `tcc run`, `tcc tune` and the
//! scoreboard build on it.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use melior::ir::Module;

use super::session::Session;
use super::write_atomically;
use crate::back::{host_llvm, opencl_c, ptx};
use crate::config::Target;
use crate::phases::{GemmChoice, Phase};

/// The JSON description an artifact carries (`tcc_metadata_v1`, shown by
/// `tcc inspect`): what the compiler knows that the ABI tables do not.
pub fn metadata_json(
    compiled: &Compiled,
    target: Target,
    host_triple: Option<&str>,
    tuning: Option<&crate::config::tuning::TuningRecord>,
) -> String {
    let stats = crate::driver::stats::collect(&compiled.module);
    // Each kernel's entry: its launch record (what the artifact's table
    // holds: flops, written buffers, dynamic local memory) with the kind
    // and strategy work-group size the statistics give it.
    let records =
        host_llvm::launch_records(&compiled.program, compiled.ptx.as_deref()).unwrap_or_default();
    let kernels: Vec<serde_json::Value> = stats
        .kernels
        .iter()
        .map(|(name, kind, size)| {
            let record = records.iter().find(|k| &k.name == name);
            let mut kernel = serde_json::json!({
                "name": name,
                "kind": kind,
                "workgroup_size": size,
                "flops": record.map_or(0, |k| k.flops),
            });
            // The float buffers the kernel writes, with their stored
            // type (`tcc-run --check-numerics` scans them).
            if let Some(record) = record {
                let writes: Vec<serde_json::Value> = record
                    .args
                    .iter()
                    .enumerate()
                    .filter(|(_, arg)| arg.written)
                    .filter_map(|(index, arg)| {
                        let stored = match arg.dtype {
                            tcc_abi::DTYPE_F16 => "f16",
                            tcc_abi::DTYPE_BF16 => "bf16",
                            tcc_abi::DTYPE_F32 => "f32",
                            tcc_abi::DTYPE_F64 => "f64",
                            _ => return None,
                        };
                        Some(serde_json::json!([index, stored]))
                    })
                    .collect();
                kernel["writes"] = serde_json::json!(writes);
                if record.dynamic_local_bytes > 0 {
                    kernel["dynamic_local_bytes"] = serde_json::json!(record.dynamic_local_bytes);
                }
            }
            kernel
        })
        .collect();
    let functions: Vec<serde_json::Value> = stats
        .plans
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.function,
                "arena_bytes": p.arena_bytes,
                "live_bytes_bound": p.live_bytes_bound,
            })
        })
        .collect();
    let mut metadata = serde_json::json!({
        "producer": tcc_runtime::version_string(),
        "target": target.name(),
        "host_triple": host_triple.map(str::to_owned).unwrap_or_else(|| {
            inkwell::targets::TargetMachine::get_default_triple()
                .as_str()
                .to_string_lossy()
                .into_owned()
        }),
        "ptx": compiled.ptx.is_some(),
        "kernels": kernels,
        "functions": functions,
    });
    // A CPU target's instruction-set level (`x86-64-v3` for AVX2,
    // `x86-64-v4` for AVX-512): the runtime refuses the artifact on a CPU
    // without those instructions (tcc_runtime::cpu_features).
    if let Some(desc) = crate::config::targets::of_module(compiled.module.as_operation())
        && desc.family == Target::PoclCpu.name()
    {
        metadata["target_name"] = serde_json::json!(desc.name);
        metadata["cpu_arch"] = serde_json::json!(desc.arch);
    }
    // Weights and intermediates held as half (`--storage=fp16`,
    // `--precision=fp16|bf16`; absent when everything is stored as the
    // model says).
    if let Some(half) = crate::passes::half_storage(compiled.module.as_operation()) {
        metadata["storage"] = serde_json::json!(half.name());
    }
    // Graph inputs given their values at compile time (`--input-value`;
    // absent without): the functions no longer take them.
    let given = super::import::given_inputs(&compiled.module);
    if !given.is_empty() {
        metadata["given_inputs"] = serde_json::json!(given);
    }
    // Post-training int8 quantization (`--quantize=int8`; absent without).
    if let Some((int8, f32)) = super::quantize::summary(&compiled.module) {
        metadata["quantization"] =
            serde_json::json!({"type": "int8", "int8_ops": int8, "f32_ops": f32.len()});
    }
    // The device and driver a tuning record was measured with (absent
    // without one).
    if let Some(record) = tuning {
        metadata["tuning"] = serde_json::json!({"device": record.device, "driver": record.driver});
    }
    metadata.to_string()
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

    /// The host side with a symbol prefix, metadata and a target triple.
    pub fn host_with(
        &self,
        module_name: &str,
        options: &host_llvm::HostOptions,
    ) -> Result<host_llvm::HostOutput> {
        Ok(host_llvm::emit_with(
            &self.module,
            &self.program,
            self.ptx.as_deref(),
            module_name,
            options,
        )?)
    }

    /// The host side as objects, the weights in an object of their own
    /// (see [`host_llvm::HostObjects`]): what every binary output is made of.
    pub fn host_objects(
        &self,
        module_name: &str,
        options: &host_llvm::HostOptions,
    ) -> Result<host_llvm::HostObjects> {
        Ok(host_llvm::emit_objects(
            &self.module,
            &self.program,
            self.ptx.as_deref(),
            module_name,
            options,
        )?)
    }

    /// Links the model into the shared library `output` (host object and
    /// weights object), as `tcc compile` does but without metadata: the
    /// library `tcc run`, `tcc tune`, `tcc profile` and the scoreboard
    /// load in process.
    pub fn link(&self, module_name: &str, output: &Path) -> Result<()> {
        self.host_objects(module_name, &host_llvm::HostOptions::default())?
            .link(output)?;
        Ok(())
    }

    /// Compiles the OpenCL C program to PTX for `options.arch`, which
    /// must have the tensor cores of the module's precision.
    pub fn add_ptx(&mut self, options: &ptx::PtxOptions) -> Result<()> {
        if let Some(target) = crate::config::targets::of_module(self.module.as_operation()) {
            options
                .check_precision(target.precision)
                .map_err(anyhow::Error::msg)?;
        }
        let toolchain = ptx::Toolchain::find(&super::environment::ptx_toolchain())?;
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
    compile_to_kernels_in(session, input, target, input_shapes, &GemmChoice::default())
}

/// As [`compile_to_kernels_with`], with how the GEMMs' configurations
/// and precision are chosen.
pub fn compile_to_kernels_in<'c>(
    session: &'c Session,
    input: &Path,
    target: Target,
    input_shapes: &[(String, Vec<i64>)],
    choice: &GemmChoice,
) -> Result<Compiled<'c>> {
    let module = super::import::parse_model_with(session, input, input_shapes)?;
    compile_module_to_kernels(session, module, target, choice)
}

/// Runs every phase up to the gpu phase over `module` (an imported or
/// parsed model) and translates the kernels.
pub fn compile_module_to_kernels<'c>(
    session: &'c Session,
    mut module: Module<'c>,
    target: Target,
    choice: &GemmChoice,
) -> Result<Compiled<'c>> {
    let mut choice = choice.clone();
    super::compile::apply_deprecated_env(&mut choice)?;
    check_tuning_target(&choice, target)?;
    run_phases(
        session,
        &mut module,
        None,
        Phase::Gpu,
        target,
        true,
        &choice,
        None,
    )?;
    let program = opencl_c::write_program(&module)?;
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
    let module = super::import::parse_model(&session, input)?;
    let module_name = input
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("model");
    compile_module(&session, module, module_name, target, output)
}

/// As [`compile_file`], for a module already in `session` (an imported
/// ONNX model), its symbols named after `module_name`.
pub fn compile_module(
    session: &Session,
    module: Module<'_>,
    module_name: &str,
    target: Target,
    output: &Path,
) -> Result<()> {
    let mut compiled = compile_module_to_kernels(session, module, target, &GemmChoice::default())?;
    if target == Target::Nvidia {
        compiled.add_ptx(&ptx::PtxOptions::default())?;
    }
    let options = host_llvm::HostOptions {
        metadata: Some(metadata_json(&compiled, target, None, None)),
        ..Default::default()
    };
    compiled.host_objects(module_name, &options)?.link(output)?;
    Ok(())
}

/// Runs the phases after `from` (all when `None`: `--compile-from`) up to
/// `last` over `module`. With `dump` it runs them one at a time and writes
/// the IR after each into `NN-PHASE.mlir` there (`--dump-phases-to`), as
/// iree-compile's `--dump-compilation-phases-to`.
#[allow(clippy::too_many_arguments)]
pub fn run_phases(
    session: &Session,
    module: &mut Module,
    from: Option<Phase>,
    last: Phase,
    target: Target,
    templates: bool,
    choice: &GemmChoice,
    dump: Option<&Path>,
) -> Result<()> {
    // The tuning record's choices go onto the kernels between the
    // dispatch and tile phases, in code: its path is no part of a pipeline.
    let tuning = match &choice.tuning {
        Some(path) if Phase::range(from, last).contains(&Phase::Tile) => {
            Some(crate::config::tuning::TuningRecord::load(path).map_err(anyhow::Error::msg)?)
        }
        _ => None,
    };
    let apply_tuning = |module: &mut Module| -> Result<()> {
        if let Some(record) = &tuning {
            crate::passes::apply_tuning(&session.context, module.as_operation(), record)
                .map_err(anyhow::Error::msg)?;
        }
        Ok(())
    };
    // On a terminal the phases run one at a time under a spinner naming
    // each; elsewhere (logs, tests) as one pipeline (two around a tuning
    // record) unless dumped.
    let progress = super::progress::Progress::spinner("tcc compile");
    if dump.is_none() && !progress.is_drawn() {
        if tuning.is_none() {
            return session.run_passes(
                module,
                &crate::phases::pipeline_between(from, last, target, templates, choice),
            );
        }
        if from.is_none_or(|from| from < Phase::Dispatch) {
            session.run_passes(
                module,
                &crate::phases::pipeline_between(from, Phase::Dispatch, target, templates, choice),
            )?;
        }
        apply_tuning(module)?;
        return session.run_passes(
            module,
            &crate::phases::pipeline_between(
                Some(Phase::Dispatch),
                last,
                target,
                templates,
                choice,
            ),
        );
    }
    if let Some(directory) = dump {
        std::fs::create_dir_all(directory)
            .with_context(|| format!("cannot create {}", directory.display()))?;
    }
    let phases = Phase::range(from, last);
    if from.is_some() && !phases.is_empty() {
        let mut resume = crate::phases::Pipeline::new();
        resume.add(crate::phases::resume_target(choice));
        session.run_passes(module, &resume)?;
    }
    for (index, phase) in phases.iter().copied().enumerate() {
        progress.message(format!(
            "phase {} ({}/{})",
            phase.name(),
            index + 1,
            phases.len()
        ));
        if phase == Phase::Tile {
            apply_tuning(module)?;
        }
        session.run_passes(module, &phase.passes_choosing(target, templates, choice))?;
        let Some(directory) = dump else { continue };
        if phase == Phase::Codegen {
            continue;
        }
        write_atomically(
            &directory.join(format!("{:02}-{}.mlir", phase as usize + 1, phase.name())),
            format!("{}\n", module.as_operation()).as_bytes(),
        )?;
    }
    Ok(())
}

/// A tuning record must be for the target it is applied to.
pub(super) fn check_tuning_target(choice: &GemmChoice, target: Target) -> Result<()> {
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
    Ok(())
}
