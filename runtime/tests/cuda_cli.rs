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
    assert_fails_with(
        &o,
        "TCC_BACKEND: backend `metal`: expected opencl, cuda or vulkan",
    );
    let mut bad = args.to_vec();
    bad.push("--backend=webgpu");
    let o = run_with("tcc-run", cache.path(), &bad, NO_DRIVER, &[]);
    assert_fails_with(
        &o,
        "--backend=webgpu: backend `webgpu`: expected opencl, cuda or vulkan",
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
        // `all` is every CUDA device (the batch split across them, as
        // tcc-benchmark's): without the driver, that it is missing.
        (
            "tcc-run",
            "--device=all",
            "the CUDA backend needs NVIDIA's driver (libcuda.so.1)",
        ),
        ("tcc-run", "--device=pthread", "takes a CUDA device ordinal"),
        (
            "tcc-run",
            "--kernel-format=opencl-c",
            "use --backend=opencl for its OpenCL C",
        ),
        (
            "tcc-benchmark",
            "--concurrency=2",
            "--concurrency is an OpenCL option",
        ),
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
    // No backend given and no CUDA driver: OpenCL runs the OpenCL C,
    // said once on stderr, and the call succeeds.
    for tool_name in ["tcc-run", "tcc-benchmark"] {
        let o = run_with(tool_name, cache.path(), &args[..3], NO_DRIVER, &[]);
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        assert_eq!(
            err.matches(&format!(
                "{tool_name}: {so}'s kernel scale takes 64.0 KiB of CUDA dynamic shared memory, but the CUDA backend is unavailable (the CUDA backend needs NVIDIA's driver"
            ))
            .count(),
            1,
            "{err}"
        );
        assert!(!err.contains("using the CUDA backend"), "{err}");
    }
    // Asked for, CUDA without a driver is an error.
    let mut cuda = args[..3].to_vec();
    cuda.push("--backend=cuda");
    let o = run_with("tcc-run", cache.path(), &cuda, NO_DRIVER, &[]);
    assert_fails_with(&o, NEEDS_DRIVER);
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

/// The fake driver (`fixtures/fake_libcuda.c`, kernels run on the host)
/// and a model whose PTX lists the kernels' real parameters.
fn fake_cuda(defines: &[&str]) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (driver, model) = fake_cuda_build(dir.path(), defines);
    let (driver, model) = (driver.display().to_string(), model.display().to_string());
    (dir, driver, model)
}

#[test]
fn a_cuda_session_runs_the_artifact_on_a_fake_driver() {
    let (dir, driver, so) = fake_cuda(&["TCC_TEST_DYNAMIC_LOCAL"]);
    let cache = tempfile::tempdir().unwrap();
    let log = dir.path().join("launches.log");
    let log_env = [("FAKE_CUDA_LOG", log.to_str().unwrap())];
    let x = ramp(1000);
    let xp = dir.path().join("x.npy");
    let yp = dir.path().join("y.npy");
    tcc_runtime::npy::write_npy(
        &xp,
        &tcc_runtime::HostTensor::from_f32(vec![1000], &x).unwrap(),
    )
    .unwrap();
    for function in ["axpb", "axpb_arena"] {
        let o = run_with(
            "tcc-run",
            cache.path(),
            &[
                &so,
                &format!("--function={function}"),
                &format!("--input=@{}", xp.display()),
                &format!("--output=@{}", yp.display()),
                "--verbose",
            ],
            &driver,
            &log_env,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), format!("EXEC @{function}\n"));
        let y = tcc_runtime::npy::read_npy(&yp).unwrap().to_f32().unwrap();
        assert_eq!(y, axpb_expected(&x), "@{function}");
        let err = stderr(&o);
        assert!(err.contains("using the CUDA backend"), "{err}");
        assert!(
            err.contains("CUDA device 0: tcc fake CUDA device (sm_90, driver CUDA 12.8) (CUDA backend); kernels: PTX, loaded by the CUDA driver in ")
                && err.contains("; dynamic shared memory: scale 64.0 KiB"),
            "{err}"
        );
    }
    // Each launch: grid = global / local, scale with its dynamic memory.
    let launches = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        launches,
        "scale grid 16 1 1 block 64 1 1 shared 65536\nadd grid 16 1 1 block 64 1 1 shared 0\n"
            .repeat(2)
    );
    // Copies, and a launch without a local size (the runtime's block: 4).
    std::fs::remove_file(&log).unwrap();
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[
            &so,
            "--function=dup",
            "--input=2x3xf32=1,2,3,4,5,6",
            "--backend=cuda",
        ],
        &driver,
        &log_env,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "EXEC @dup\nresult[0]: 2x3xf32=[[1 2 3][4 5 6]]\nresult[1]: 2x3xf32=[[1 2 3][4 5 6]]\n"
    );
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[
            &so,
            "--function=addk",
            "--input=4xi32=1,2,3,4",
            "--backend=cuda",
        ],
        &driver,
        &log_env,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "EXEC @addk\nresult[0]: 4xi32=[11 12 13 14]\n");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "add_i64 grid 1 1 1 block 4 1 1 shared 0\n"
    );
    // The artifact's mistakes are refused as on OpenCL.
    for (function, message) in [
        (
            "bad_kernel_index",
            "kernel index 42 out of range (the artifact has 3 kernels)",
        ),
        (
            "bad_release",
            "is input 0; only buffers from alloc() may be released",
        ),
        (
            "bad_view",
            "view of 8192 bytes at offset 4096 is outside @bad_view's 8192-byte arena",
        ),
        (
            "release_view",
            "is a view of the arena; only buffers from alloc() may be released",
        ),
    ] {
        let o = run_with(
            "tcc-run",
            cache.path(),
            &[
                &so,
                &format!("--function={function}"),
                "--input=4xi32=1",
                "--backend=cuda",
            ],
            &driver,
            &[],
        );
        assert_fails_with(&o, &format!("@{function} failed: runtime call"));
        assert_fails_with(&o, message);
    }
    // tcc-benchmark: per-kernel times from the (fake) events, 0.25 ms each.
    // tcc-benchmark --json of @axpb, 3 calls after 1, with `env` added.
    let bench_json = |env: &[(&str, &str)]| -> serde_json::Value {
        let args = [
            so.as_str(),
            "--function=axpb",
            "--input=1000xf32=1",
            "--warmup=1",
            "--iterations=3",
            "--json",
        ];
        let o = run_with("tcc-benchmark", cache.path(), &args, &driver, env);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let report = bench_json(&[]);
    assert_eq!(report["backend"], "cuda");
    assert_eq!(report["device"], "tcc fake CUDA device");
    let kernels = report["kernels"].as_array().unwrap();
    let names: Vec<&str> = kernels
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{report}");
    assert!(
        names.contains(&"scale") && names.contains(&"add"),
        "{report}"
    );
    for k in kernels {
        assert_eq!(k["calls"], 3, "{report}");
        assert!(
            (k["mean_us"].as_f64().unwrap() - 250.0).abs() < 1e-6,
            "{report}"
        );
    }
    assert!((report["device_ms_per_call"].as_f64().unwrap() - 0.5).abs() < 1e-6);
    // The latencies come from CUDA graph replays (the kernel table above
    // from a profiled session); TCC_CUDA_GRAPHS=0 launches every kernel.
    assert_eq!(report["cuda_graphs"]["enabled"], true, "{report}");
    assert_eq!(
        report["cuda_graphs"]["recorded"],
        serde_json::json!(["axpb"])
    );
    let report = bench_json(&[("TCC_CUDA_GRAPHS", "0")]);
    assert_eq!(report["cuda_graphs"]["enabled"], false, "{report}");
    assert_eq!(report["cuda_graphs"]["recorded"], serde_json::json!([]));
    assert!((report["device_ms_per_call"].as_f64().unwrap() - 0.5).abs() < 1e-6);
    let o = run_with(
        "tcc-benchmark",
        cache.path(),
        &[
            &so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=2",
        ],
        &driver,
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(
        table.starts_with("@axpb on tcc fake CUDA device [GPU] (CUDA driver 12.8)\n"),
        "{table}"
    );
    assert!(
        table.contains("  scale: 64.0 KiB of CUDA dynamic shared memory\n"),
        "{table}"
    );
    assert!(table.contains("CUDA graphs: @axpb replayed"), "{table}");
    let o = run_with(
        "tcc-benchmark",
        cache.path(),
        &[
            &so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=2",
            "--in-turns-with",
            &so,
        ],
        &driver,
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("build 2"), "{}", stdout(&o));
    let o = run_with(
        "tcc-run",
        cache.path(),
        &["--list-devices", "--backend=cuda"],
        &driver,
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("CUDA device 0: tcc fake CUDA device (default)\n"),
        "{}",
        stdout(&o)
    );
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[&so, "--function=axpb", "--input=1000xf32=1", "--device=1"],
        &driver,
        &[],
    );
    assert_fails_with(
        &o,
        "there is no CUDA device 1; CUDA devices:\n  CUDA device 0: tcc fake CUDA device",
    );
}

#[test]
fn ptx_the_driver_rejects_reports_ptxas_log() {
    let (_dir, driver, so) = fake_cuda(&["TCC_TEST_BAD_PTX"]);
    let cache = tempfile::tempdir().unwrap();
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[
            &so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--backend=cuda",
        ],
        &driver,
        &[],
    );
    assert_fails_with(
        &o,
        "kernel program failed to build for tcc fake CUDA device: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX\nbuild log:\nptxas fatal   : fake parse error near INVALID",
    );
}

#[test]
fn ptx_runs_through_cuda_by_default_where_the_driver_is() {
    // PTX with no kernel that needs CUDA: the driver being there is enough.
    let (_dir, driver, so) = fake_cuda(&[]);
    let cache = tempfile::tempdir().unwrap();
    let args = [
        so.as_str(),
        "--function=axpb",
        "--input=1000xf32=1",
        "--verbose",
    ];
    let o = run_with("tcc-run", cache.path(), &args, &driver, &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        err.matches(&format!(
            "tcc-run: using the CUDA backend: {so} carries PTX and NVIDIA's driver is here (--backend=opencl runs it through OpenCL instead)"
        ))
        .count(),
        1,
        "{err}"
    );
    assert!(err.contains("(CUDA backend); kernels: PTX"), "{err}");
    // --backend=opencl still chooses OpenCL, and says nothing of CUDA.
    let mut opencl = args.to_vec();
    opencl.push("--backend=opencl");
    let o = run_with("tcc-run", cache.path(), &opencl, &driver, &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("CUDA backend"), "{err}");
    // Without the driver: OpenCL, silently (nothing needs CUDA).
    let o = run_with("tcc-run", cache.path(), &args, NO_DRIVER, &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("CUDA"), "{err}");
}

#[test]
fn cuda_benchmark_keeps_calls_in_flight_and_splits_across_devices() {
    let (_dir, driver, so) = fake_cuda(&[]);
    let cache = tempfile::tempdir().unwrap();
    let two = [("FAKE_CUDA_DEVICES", "2")];
    let json = |args: &[&str]| -> serde_json::Value {
        let mut all = vec![so.as_str(), "--backend=cuda", "--json", "--iterations=8"];
        all.extend_from_slice(args);
        let o = run_with("tcc-benchmark", cache.path(), &all, &driver, &two);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // Four calls in flight on one device: four sessions, one module load.
    let r = json(&["--function=axpb", "--input=1000xf32=1", "--in-flight=4"]);
    assert_eq!(r["in_flight"], 4);
    assert_eq!(r["iterations"], 8);
    assert_eq!(r["devices"].as_array().unwrap().len(), 1);
    assert_eq!(r["module_cache"][0]["loads"], 1);
    assert_eq!(r["module_cache"][0]["hits"], 3);
    assert!(r["throughput_calls_per_s"].as_f64().unwrap() > 0.0);
    // Two devices, the batch of 2000 split into two parts of 1000.
    let r = json(&[
        "--function=axpb_arena",
        "--input=2000xf32=1",
        "--device=0,1",
        "--split",
    ]);
    assert_eq!(r["devices"].as_array().unwrap().len(), 2);
    assert_eq!(r["batch"], 2000);
    assert_eq!(r["split"], true);
    // A device named twice, or one that does not exist, is refused.
    let mut args = vec![
        so.as_str(),
        "--backend=cuda",
        "--function=axpb",
        "--input=1000xf32=1",
        "--device=1,1",
    ];
    let o = run_with("tcc-benchmark", cache.path(), &args, &driver, &two);
    assert_fails_with(&o, "CUDA device 1 is named twice");
    args[4] = "--device=0,5";
    let o = run_with("tcc-benchmark", cache.path(), &args, &driver, &two);
    assert_fails_with(&o, "there is no CUDA device 5");
}

#[test]
fn cuda_run_splits_a_batch_across_devices() {
    let (_dir, driver, so) = fake_cuda(&[]);
    let cache = tempfile::tempdir().unwrap();
    let two = [("FAKE_CUDA_DEVICES", "2")];
    // A batch of 2000: two parts of 1000, one per device (hal::Group), the
    // outputs concatenated: y = 2x + b, b[i] = i/2 within each part.
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[
            so.as_str(),
            "--backend=cuda",
            "--function=axpb",
            "--input=2000xf32=1",
            "--device=0,1",
            "--verbose",
            "--print-max-elements=4000",
        ],
        &driver,
        &two,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the batch runs as 2 part(s) over 2 CUDA device(s)"),
        "{}",
        stderr(&o)
    );
    let out = stdout(&o);
    let values: Vec<f32> = out
        .split_once("2000xf32=[")
        .unwrap_or_else(|| panic!("{out}"))
        .1
        .trim_end()
        .trim_end_matches(']')
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let want: Vec<f32> = (0..2000).map(|i| 2.0 + 0.5 * (i % 1000) as f32).collect();
    assert_eq!(values, want);
    // All devices of the driver, and a device named twice.
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[
            so.as_str(),
            "--backend=cuda",
            "--function=axpb",
            "--input=2000xf32=1",
            "--device=all",
        ],
        &driver,
        &two,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_with(
        "tcc-run",
        cache.path(),
        &[
            so.as_str(),
            "--backend=cuda",
            "--function=axpb",
            "--input=2000xf32=1",
            "--device=1,1",
        ],
        &driver,
        &two,
    );
    assert_fails_with(&o, "CUDA device 1 is named twice");
}

#[test]
fn cuda_run_places_a_pipeline_on_two_devices() {
    let (_dir, driver, so) = fake_cuda(&[]);
    let cache = tempfile::tempdir().unwrap();
    let args = [
        so.as_str(),
        "--backend=cuda",
        "--function=axpb,axpb_arena",
        "--input=1000xf32=1",
        "--device=0,1",
        "--placement=axpb=0,axpb_arena=1",
        "--verbose",
        "--print-max-elements=1000",
    ];
    // y1 = 2x + i/2 on device 0, copied to device 1; y = 2 y1 + i/2 there.
    let want: Vec<f32> = (0..1000).map(|i| 4.0 + 1.5 * i as f32).collect();
    for (env, peer) in [
        (vec![("FAKE_CUDA_DEVICES", "2")], "1 over peer access"),
        (
            vec![("FAKE_CUDA_DEVICES", "2"), ("FAKE_CUDA_NO_PEER", "1")],
            "0 over peer access",
        ),
    ] {
        let o = run_with("tcc-run", cache.path(), &args, &driver, &env);
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("@axpb on device 0") && err.contains("@axpb_arena on device 1"),
            "{err}"
        );
        assert!(
            err.contains(&format!("1 value(s) copied device to device ({peer})")),
            "{err}"
        );
        let out = stdout(&o);
        assert!(out.starts_with("EXEC @axpb_arena"), "{out}");
        let values: Vec<f32> = out
            .split_once("1000xf32=[")
            .unwrap_or_else(|| panic!("{out}"))
            .1
            .trim_end()
            .trim_end_matches(']')
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(values, want);
    }
    // A device the list does not have, a pipeline whose types do not
    // chain, a malformed placement: clean errors.
    let two = [("FAKE_CUDA_DEVICES", "2")];
    let mut bad = args;
    bad[5] = "--placement=axpb=0,axpb_arena=2";
    assert_fails_with(
        &run_with("tcc-run", cache.path(), &bad, &driver, &two),
        "axpb_arena=2: there are 2 devices",
    );
    bad[5] = "--placement=axpb=0,axpb_arena=1";
    bad[2] = "--function=axpb,addk";
    assert_fails_with(
        &run_with("tcc-run", cache.path(), &bad, &driver, &two),
        "input 0 of @addk is 4xi32",
    );
    bad[2] = "--function=axpb";
    bad[5] = "--placement=axpb";
    assert_fails_with(
        &run_with("tcc-run", cache.path(), &bad, &driver, &two),
        "expected FUNCTION=DEVICE",
    );
}
