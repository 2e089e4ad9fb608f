//! `--backend` of `tcc-run` and `tcc-benchmark` on a machine without
//! NVIDIA's driver: choosing the backend (flag, `TCC_BACKEND`, the
//! artifact's dynamic-local markers), the clean failure when the CUDA
//! driver cannot be opened, OpenCL-only options refused on CUDA, and the
//! OpenCL path's handling of PTX that needs CUDA. The driver library is
//! named through `TCC_LIBCUDA`, so these tests fail the same way on a
//! machine that has the driver. What needs a GPU (the CUDA session
//! itself) is checked by the device bundle (`.device/run-all.sh
//! --backend=cuda`).

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::process::{Command, Output};

use common::*;

const NO_DRIVER: &str = "/nonexistent/libcuda.so.1";
const NEEDS_DRIVER: &str = "the CUDA backend needs NVIDIA's driver (libcuda.so.1)";

/// `tool` with the CUDA driver library set to `libcuda` and `env` added.
fn run_with(
    name: &str,
    cache: &std::path::Path,
    args: &[&str],
    libcuda: &str,
    env: &[(&str, &str)],
) -> Output {
    let mut command: Command = tool_command(name, cache, args);
    command.env("TCC_LIBCUDA", libcuda);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run the binary")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn cuda_without_the_driver_is_a_clean_error() {
    let (_dir, so) = test_model(&["TCC_TEST_PTX"]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let args = [
        so,
        "--function=axpb",
        "--input=1000xf32=1",
        "--backend=cuda",
    ];
    let o = run_with("tcc-run", cache.path(), &args, NO_DRIVER, &[]);
    assert_fails_with(&o, NEEDS_DRIVER);
    assert_fails_with(&o, &format!("cannot open {NO_DRIVER}"));
    assert_eq!(stdout(&o), "", "nothing ran");
    // A library that is not the driver: its missing entry point is named.
    let o = run_with("tcc-run", cache.path(), &args, "libc.so.6", &[]);
    assert_fails_with(&o, NEEDS_DRIVER);
    assert_fails_with(&o, "the driver has no cuInit");
    // tcc-benchmark, synchronous and in turns.
    let o = run_with("tcc-benchmark", cache.path(), &args, NO_DRIVER, &[]);
    assert_fails_with(&o, NEEDS_DRIVER);
    let in_turns = [
        so,
        "--function=axpb",
        "--input=1000xf32=1",
        "--backend=cuda",
        "--in-turns-with",
        so,
    ];
    let o = run_with("tcc-benchmark", cache.path(), &in_turns, NO_DRIVER, &[]);
    assert_fails_with(&o, NEEDS_DRIVER);
    // --list-devices lists CUDA devices with --backend=cuda.
    let o = run_with(
        "tcc-run",
        cache.path(),
        &["--list-devices", "--backend=cuda"],
        NO_DRIVER,
        &[],
    );
    assert_fails_with(&o, NEEDS_DRIVER);
}

#[test]
fn the_flag_wins_over_tcc_backend() {
    let (_dir, so) = test_model(&["TCC_TEST_PTX"]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let args = [so, "--function=axpb", "--input=1000xf32=1"];
    let cuda = [("TCC_BACKEND", "cuda")];
    let o = run_with("tcc-run", cache.path(), &args, NO_DRIVER, &cuda);
    assert_fails_with(&o, NEEDS_DRIVER);
    let mut opencl = args.to_vec();
    opencl.extend(["--backend=opencl", "--print-max-elements=2"]);
    let o = run_with("tcc-run", cache.path(), &opencl, NO_DRIVER, &cuda);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "EXEC @axpb\nresult[0]: 1000xf32=[2 2.5 ...]\n");
    let o = run_with(
        "tcc-run",
        cache.path(),
        &args,
        NO_DRIVER,
        &[("TCC_BACKEND", "metal")],
    );
    assert_fails_with(&o, "TCC_BACKEND: backend `metal`: expected opencl or cuda");
    let mut bad = args.to_vec();
    bad.push("--backend=vulkan");
    let o = run_with("tcc-run", cache.path(), &bad, NO_DRIVER, &[]);
    assert_fails_with(
        &o,
        "--backend=vulkan: backend `vulkan`: expected opencl or cuda",
    );
}

#[test]
fn cuda_needs_ptx() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let args = [
        so.to_str().unwrap(),
        "--function=axpb",
        "--input=1000xf32=1",
        "--backend=cuda",
    ];
    for tool_name in ["tcc-run", "tcc-benchmark"] {
        let o = run_with(tool_name, cache.path(), &args, NO_DRIVER, &[]);
        assert_fails_with(&o, "carries none; compile it with --target=nvidia");
    }
}

#[test]
fn opencl_only_options_are_refused_on_cuda() {
    let (_dir, so) = test_model(&["TCC_TEST_PTX"]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let base = [
        so,
        "--function=axpb",
        "--input=1000xf32=1",
        "--backend=cuda",
    ];
    for (tool_name, extra, message) in [
        (
            "tcc-run",
            "--cpu-partition=2",
            "--cpu-partition is an OpenCL option",
        ),
        (
            "tcc-run",
            "--device=all",
            "--device=all: the CUDA backend takes a CUDA device ordinal",
        ),
        ("tcc-run", "--device=pthread", "takes a CUDA device ordinal"),
        (
            "tcc-run",
            "--kernel-format=opencl-c",
            "use --backend=opencl for its OpenCL C",
        ),
        (
            "tcc-benchmark",
            "--in-flight=2",
            "--in-flight is an OpenCL option",
        ),
        (
            "tcc-benchmark",
            "--concurrency=2",
            "--concurrency is an OpenCL option",
        ),
        ("tcc-benchmark", "--split", "--split is an OpenCL option"),
        (
            "tcc-benchmark",
            "--compute-queues=2",
            "--compute-queues is an OpenCL option",
        ),
    ] {
        let mut args = base.to_vec();
        args.push(extra);
        let o = run_with(tool_name, cache.path(), &args, NO_DRIVER, &[]);
        assert_fails_with(&o, message);
    }
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[so, "--prepare", "--backend=cuda"],
        NO_DRIVER,
        &[],
    );
    assert_fails_with(&o, "--prepare is an OpenCL option");
    // TCC_DEVICE must be an ordinal too.
    let o = run_with(
        "tcc-run",
        cache.path(),
        &base,
        NO_DRIVER,
        &[("TCC_DEVICE", "pthread")],
    );
    assert_fails_with(
        &o,
        "TCC_DEVICE=pthread: the CUDA backend takes a CUDA device ordinal",
    );
}

#[test]
fn ptx_that_needs_cuda_picks_the_cuda_backend() {
    let (_dir, so) = test_model(&["TCC_TEST_PTX", "TCC_TEST_DYNAMIC_LOCAL"]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let args = [so, "--function=axpb", "--input=1000xf32=1", "--verbose"];
    // No backend given: CUDA, said once on stderr.
    for tool_name in ["tcc-run", "tcc-benchmark"] {
        let o = run_with(tool_name, cache.path(), &args[..3], NO_DRIVER, &[]);
        assert_fails_with(&o, NEEDS_DRIVER);
        let err = stderr(&o);
        assert_eq!(
            err.matches(&format!(
                "{tool_name}: using the CUDA backend: {so}'s kernel scale takes 64.0 KiB of CUDA dynamic shared memory"
            ))
            .count(),
            1,
            "{err}"
        );
    }
    // OpenCL asked for: the OpenCL C, with a note saying why.
    let mut opencl = args.to_vec();
    opencl.push("--backend=opencl");
    let o = run_with("tcc-run", cache.path(), &opencl, NO_DRIVER, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "tcc-run: note: the artifact's PTX needs the CUDA backend (kernel scale takes 64.0 KiB of local memory; NVIDIA's OpenCL gives 48 KiB): built its OpenCL C; run with --backend=cuda for the PTX"
        ),
        "{err}"
    );
    assert!(err.contains("kernels: OpenCL C, "), "{err}");
    assert!(!err.contains("using the CUDA backend"), "{err}");
    // PTX forced on OpenCL: refused before any build.
    opencl.push("--kernel-format=ptx");
    let o = run_with("tcc-run", cache.path(), &opencl, NO_DRIVER, &[]);
    assert_fails_with(&o, "the artifact's PTX needs the CUDA backend");
    assert_fails_with(&o, "run with --backend=cuda for the PTX");
}

#[test]
fn help_describes_the_backend() {
    let cache = tempfile::tempdir().unwrap();
    for tool_name in ["tcc-run", "tcc-benchmark"] {
        let o = run_with(tool_name, cache.path(), &["--help"], NO_DRIVER, &[]);
        assert!(o.status.success());
        let help = stdout(&o);
        assert!(help.contains("--backend <opencl|cuda>"), "{help}");
        assert!(help.contains("TCC_BACKEND"), "{help}");
    }
}
