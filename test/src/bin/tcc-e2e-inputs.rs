//! tcc-e2e-inputs: writes the end-to-end suite's deterministic inputs for a
//! model as .npy files, the same bytes the suite (tests/e2e.rs) feeds it.
//! Used by scripts/bench/build-device-bundle.sh.
//!
//!   tcc-e2e-inputs MODEL.mlir MODEL.so OUT_PREFIX
//!
//! reads the header directives (INPUT-RANGE, TOLERANCE) from MODEL.mlir and
//! the function signatures from the compiled MODEL.so, and for each function
//! writes TAG.inputN.npy, where TAG is OUT_PREFIX for a model with one
//! function and OUT_PREFIX.FUNCTION otherwise, and prints one line
//! `TAG FUNCTION NUM_INPUTS NUM_OUTPUTS ABS REL` for the caller.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use tcc_e2e::ModelSpec;
use tcc_runtime::{Model, npy};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tcc-e2e-inputs: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mlir, library, prefix] = args.as_slice() else {
        bail!("usage: tcc-e2e-inputs MODEL.mlir MODEL.so OUT_PREFIX");
    };
    let spec = ModelSpec::load(mlir.as_ref())?;
    let model = Model::load(library).with_context(|| format!("cannot load {library}"))?;
    let functions = model.functions();
    if functions.is_empty() {
        bail!("{library} has no functions");
    }
    for function in functions {
        let tag = if functions.len() == 1 {
            prefix.clone()
        } else {
            format!("{prefix}.{}", function.name)
        };
        let inputs = spec.inputs(&function.name, &function.inputs)?;
        for (index, tensor) in inputs.iter().enumerate() {
            let path = PathBuf::from(format!("{tag}.input{index}.npy"));
            npy::write_npy(&path, tensor)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        println!(
            "{tag} {} {} {} {} {}",
            function.name,
            function.inputs.len(),
            function.outputs.len(),
            spec.tolerance.abs,
            spec.tolerance.rel
        );
    }
    Ok(())
}
