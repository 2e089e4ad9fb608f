//! The Python package (runtime/python, pyo3 abi3): the native module built
//! on its own into target/nested (a nested cargo cannot share the outer
//! one's lock; shared with examples/rust's build), laid out as the wheel
//! has it (`tcc/_tcc.abi3.so` beside
//! python/tcc's `__init__.py` and `serve.py`) in a scratch directory on
//! `PYTHONPATH`, and tested with pytest (runtime/python/tests: the module,
//! and `tcc.serve` on a local Ray cluster), against the tcc under test
//! (`TCC`), and the CUDA backend's DLPack path on the fake CUDA driver
//! with the runtime's C test model (`TCC_FAKE_LIBCUDA`,
//! `TCC_FAKE_CUDA_MODEL`). Each pytest case is one case of the summary
//! (docs/testing.md).

use crate::support;

use std::path::Path;
use std::process::Command;

use support::{CaseResult, Tally};

#[test]
fn python_module_passes_its_pytest_suite() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let crate_dir = repo.join("runtime/python");
    let target = repo.join("target/nested");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = Command::new(&cargo)
        .args(["build", "--quiet", "--locked", "--manifest-path"])
        .arg(crate_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        build.status.success(),
        "building the Python module failed:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let scratch = tempfile::tempdir().unwrap();
    let package = scratch.path().join("tcc");
    std::fs::create_dir(&package).unwrap();
    std::fs::copy(
        target.join("debug/lib_tcc.so"),
        package.join("_tcc.abi3.so"),
    )
    .unwrap();
    for entry in std::fs::read_dir(crate_dir.join("python/tcc")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, package.join(path.file_name().unwrap())).unwrap();
    }

    // The CUDA backend's DLPack path runs on the fake driver
    // (runtime/tests/fixtures/fake_libcuda.c) with the runtime's C test
    // model (its PTX flavour): test_cuda_dlpack.py.
    let fixtures = repo.join("runtime/tests/fixtures");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let compile_fixture = |source: &str, out: &str, defines: &[&str]| {
        let output = scratch.path().join(out);
        let res = Command::new(&cc)
            .args([
                "-shared", "-fPIC", "-O1", "-std=c11", "-Wall", "-Werror", "-I",
            ])
            .arg(repo.join("runtime/include"))
            .args(defines.iter().map(|d| format!("-D{d}")))
            .arg(fixtures.join(source))
            .arg("-o")
            .arg(&output)
            .output()
            .unwrap_or_else(|e| panic!("cannot run C compiler `{cc}`: {e}"));
        assert!(
            res.status.success(),
            "compiling {source} failed:\n{}",
            String::from_utf8_lossy(&res.stderr)
        );
        output
    };
    let fake_libcuda = compile_fixture("fake_libcuda.c", "libcuda-fake.so", &[]);
    let cuda_model = compile_fixture(
        "test_model.c",
        "cuda-model.so",
        &["TCC_TEST_PTX", "TCC_TEST_CUDA_PTX", "TCC_TEST_ARENA"],
    );

    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let mut command = Command::new(&python);
    command
        .args(["-m", "pytest", "-v", "-p", "no:cacheprovider", "--rootdir"])
        .arg(scratch.path())
        .arg(crate_dir.join("tests"))
        .current_dir(scratch.path())
        .env("PYTHONPATH", scratch.path())
        .env("TCC", env!("CARGO_BIN_EXE_tcc"))
        .env("TCC_MODELS", repo.join("test/models"))
        .env("TCC_FAKE_LIBCUDA", &fake_libcuda)
        .env("TCC_FAKE_CUDA_MODEL", &cuda_model)
        .env_remove("TCC_LIBCUDA")
        .env_remove("TCC_BACKEND")
        .env_remove("TCC_DEVICE");
    support::isolate_command(&mut command, scratch.path());
    let out = command
        .output()
        .expect("run pytest (make deps installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut tally = Tally::new("python_module_passes_its_pytest_suite");
    for line in stdout.lines() {
        // "…/test_tcc.py::test_name PASSED   [ 10%]"
        let Some((case, rest)) = line.split_once(' ') else {
            continue;
        };
        if !case.contains("::") {
            continue;
        }
        let case = case.rsplit('/').next().unwrap_or(case);
        let verdict = rest.split_whitespace().next().unwrap_or("");
        match verdict {
            "PASSED" => tally.add(case, CaseResult::Passed),
            "FAILED" | "ERROR" => tally.add(case, CaseResult::Failed(verdict.into())),
            "SKIPPED" | "XFAIL" => tally.add(case, CaseResult::Skipped(verdict.into())),
            _ => {}
        }
    }
    tally.report();
    let (passed, failed, skipped) = tally.counts();
    assert!(
        out.status.success() && failed == 0,
        "pytest failed:\n{stdout}\n{stderr}"
    );
    assert!(
        passed >= 10 && skipped == 0,
        "expected the whole suite to pass: {passed} passed, {skipped} skipped\n{stdout}"
    );
}
