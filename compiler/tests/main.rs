//! The compiler's integration tests, one module per file of tests/ and
//! one test binary for all of them (`cargo test -p tcc-compiler --test
//! integration [MODULE::]`): every test binary links MLIR and LLVM
//! statically, so a binary per file cost CI a full link each.
//! The test support module (`test/support`, which also points the process's
//! caches at a directory of its own before `main`) is shared by all.
//! `every_test_file_is_a_module` keeps a file from being left out (with
//! `autotests = false`, cargo no longer finds them by itself).

#[path = "../../test/support/mod.rs"]
mod support;

mod cpu_transformer;
mod deployment;
mod doc_examples;
mod docs;
mod dynamic_shapes;
mod features;
mod layers;
mod light_models;
mod lit;
mod memory;
mod onnx_import;
mod onnx_node_suite;
mod onnx_scoreboard;
mod profile;
mod python;
mod quantize;
mod quantize_graph;
mod reliability;
mod robustness;
mod rust_example;
mod snapshots;
mod spirv;
mod storage;
mod summary;
mod tune;
mod vulkan;
mod window_kernels;

/// Every `tests/*.rs` file is declared above: a file that is not would
/// silently never run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("tests/main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/") {
        let path = entry.expect("entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs")
            && stem != "main"
            && !main.lines().any(|line| line == format!("mod {stem};"))
        {
            missing.push(stem.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/{{{}}}.rs: not declared in tests/main.rs (add `mod NAME;`)",
        missing.join(",")
    );
}
