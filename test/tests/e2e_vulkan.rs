//! End-to-end tests through Vulkan: every test/models/*.mlir compiled with
//! `--target=vulkan` (Shader SPIR-V of the portable loop-nest kernels), run
//! on the Vulkan device (lavapipe on a machine without a GPU) and compared
//! with the upstream-MLIR reference within the model's `// TOLERANCE:`, as
//! the OpenCL suite (e2e.rs) does. One case per model in the tally.
//!
//! A model that fails for a known reason is listed in
//! test/vulkan-expectations.txt (`model: reason`): it counts as a skip
//! while it fails and as a failure once it passes (remove it then). There
//! is no skipping otherwise: without a Vulkan driver every model fails.
//! TCC_E2E_VULKAN_MODELS=a,b limits the run to those models.

#[path = "../support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, Result, anyhow};
use support::{CaseResult, Tally};
use tcc_e2e::{ModelSpec, compare_outputs, list_models, parse_expected_failures};
use tcc_runtime::{Model, VulkanRuntime};

fn expectations() -> Result<BTreeMap<String, String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("vulkan-expectations.txt");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    parse_expected_failures(&text).with_context(|| path.display().to_string())
}

/// Compiles `name` for Vulkan, runs every function and compares it with
/// the reference; `Err` is the failure report.
fn run_model(name: &str, runtime: &VulkanRuntime) -> Result<()> {
    let spec = ModelSpec::by_name(name)?;
    let directory = tempfile::tempdir().context("cannot create a temporary directory")?;
    let library = directory.path().join(format!("{name}.so"));
    tcc_compiler::driver::compile::compile_file_for(&spec.path, "vulkan", &library)
        .map_err(|e| anyhow!("tcc compile --target=vulkan failed: {e:#}"))?;
    let model = Model::load(&library).map_err(|e| anyhow!("cannot load the model: {e}"))?;
    let mut session = runtime
        .session(&model)
        .map_err(|e| anyhow!("cannot open a Vulkan session: {e}"))?;
    let mut failures = Vec::new();
    for function in model.functions().to_vec() {
        let fname = &function.name;
        let inputs = spec.inputs(fname, &function.inputs)?;
        let got = session
            .run(fname, &inputs)
            .map_err(|e| anyhow!("running @{fname} failed: {e}"))?;
        let want = tcc_compiler::reference::run(&spec.path, fname, &inputs)
            .map_err(|e| anyhow!("the reference run of @{fname} failed: {e:#}"))?;
        compare_outputs(fname, &got, &want, spec.tolerance, &mut failures);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow!("wrong results: {}", failures.join("; ")))
    }
}

#[test]
fn vulkan_models() {
    let expected = expectations().unwrap_or_else(|e| panic!("{e:#}"));
    let models: Vec<String> = list_models()
        .unwrap()
        .iter()
        .filter_map(|p| p.file_stem()?.to_str().map(str::to_string))
        .collect();
    for listed in expected.keys() {
        assert!(
            models.contains(listed),
            "test/vulkan-expectations.txt lists {listed}, which is not in test/models"
        );
    }
    let only: Option<Vec<String>> = std::env::var("TCC_E2E_VULKAN_MODELS")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let names: Vec<&String> = models
        .iter()
        .filter(|name| only.as_ref().is_none_or(|o| o.contains(*name)))
        .collect();
    // The models one after another took two minutes on one core of the
    // two: each worker takes the next model, with a Vulkan instance of its
    // own.
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let outcomes: std::sync::Mutex<BTreeMap<String, Result<()>>> = Default::default();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let runtime = VulkanRuntime::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(name) = names.get(i) else { break };
                    let outcome = match &runtime {
                        Err(e) => Err(anyhow!("no Vulkan device: {e}")),
                        Ok(runtime) => {
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                run_model(name, runtime)
                            }))
                            .unwrap_or_else(|_| Err(anyhow!("panicked")))
                        }
                    };
                    outcomes
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(name.to_string(), outcome);
                }
            });
        }
    });
    let outcomes = outcomes
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut tally = Tally::new("vulkan_models");
    for (name, outcome) in outcomes {
        let name = &name;
        let result = match (outcome, expected.get(name)) {
            (Ok(()), None) => CaseResult::Passed,
            (Ok(()), Some(reason)) => CaseResult::Failed(format!(
                "now passes but test/vulkan-expectations.txt lists it ({reason}): remove it"
            )),
            (Err(e), Some(reason)) => {
                eprintln!("{name}: expected failure ({reason}): {e:#}");
                CaseResult::Skipped(reason.clone())
            }
            (Err(e), None) => {
                eprintln!("{name}: {e:#}");
                CaseResult::Failed(format!("{e:#}").replace('\n', " "))
            }
        };
        tally.add(name, result);
    }
    tally.report();
    let (passed, failed, skipped) = tally.counts();
    assert_eq!(
        failed, 0,
        "{failed} models failed through Vulkan ({passed} passed, {skipped} expected failures)"
    );
}
