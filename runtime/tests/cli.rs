//! The `tcc-run` and `tcc-benchmark` binaries on the C test artifact, on
//! the machine's OpenCL device (PoCL in CI).

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::process::{Command, Output};

use common::*;
use tcc_runtime::npy::{read_npy, write_npy};
use tcc_runtime::{DType, HostTensor};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn npy_in_npy_out() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let x = ramp(1000);
    let xp = dir.path().join("x.npy");
    write_npy(&xp, &HostTensor::from_f32(vec![1000], &x).unwrap()).unwrap();
    let yp = dir.path().join("y.npy");
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            &format!("--input=@{}", xp.display()),
            &format!("--output=@{}", yp.display()),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "EXEC @axpb\n");
    assert_eq!(read_npy(&yp).unwrap().to_f32().unwrap(), axpb_expected(&x));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        3,
        "no temporary files left behind: {leftovers:?}"
    );
}

#[test]
fn literals_splats_and_printing() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=dup", "--input=2x3xf32=1,2,3,4,5,6"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "EXEC @dup\nresult[0]: 2x3xf32=[[1 2 3][4 5 6]]\nresult[1]: 2x3xf32=[[1 2 3][4 5 6]]\n"
    );

    // Splat input; first output to a file, second printed.
    let ap = dir.path().join("a.npy");
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=dup",
            "--input=2x3xf32=-1.5",
            &format!("--output=@{}", ap.display()),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "EXEC @dup\nresult[1]: 2x3xf32=[[-1.5 -1.5 -1.5][-1.5 -1.5 -1.5]]\n"
    );
    assert_eq!(read_npy(&ap).unwrap().to_f32().unwrap(), vec![-1.5; 6]);

    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=addk", "--input=4xi32=[1 2][3 4]"],
    );
    assert_eq!(stdout(&o), "EXEC @addk\nresult[0]: 4xi32=[11 12 13 14]\n");
}

#[test]
fn input_mismatches_name_their_source() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let xp = dir.path().join("x.npy");
    write_npy(&xp, &HostTensor::zeros(DType::F32, vec![10, 100]).unwrap()).unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=axpb", &format!("--input=@{}", xp.display())],
    );
    assert_fails_with(
        &o,
        &format!(
            "error: input 0 of @axpb expects 1000xf32, got 10x100xf32 from {}\n",
            xp.display()
        ),
    );

    write_npy(&xp, &HostTensor::zeros(DType::I64, vec![1000]).unwrap()).unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=axpb", &format!("--input=@{}", xp.display())],
    );
    assert_fails_with(&o, "input 0 of @axpb expects 1000xf32, got 1000xi64 from ");

    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=addk", "--input=4xf32=1"],
    );
    assert_fails_with(
        &o,
        "input 0 of @addk expects 4xi32, got 4xf32 from the command line",
    );

    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=addk", "--input=4xi32=1", "--input=4xi32=1"],
    );
    assert_fails_with(&o, "@addk expects 1 input (4xi32), got 2");

    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=addk", "--input=4xi32=1,2"],
    );
    assert_fails_with(
        &o,
        "tensor literal 4xi32 needs 4 values (or 1 to splat), got 2",
    );
}

#[test]
fn unreadable_inputs_and_bad_flags_fail_cleanly() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let bad = dir.path().join("bad.npy");
    std::fs::write(&bad, b"\x93NUMPY garbage").unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=axpb",
            &format!("--input=@{}", bad.display()),
        ],
    );
    assert_fails_with(&o, &format!("{}: not a readable .npy file", bad.display()));

    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=axpb", "--input=@/nonexistent/x.npy"],
    );
    assert_fails_with(&o, "/nonexistent/x.npy: cannot open");

    let o = tool("tcc-run", cache.path(), &[so, "--function=mlp"]);
    assert_fails_with(&o, "no function @mlp in ");
    assert_fails_with(
        &o,
        "available functions: @axpb, @dup, @addk, @bad_kernel_index, @bad_release",
    );

    let o = tool("tcc-run", cache.path(), &[so]);
    assert_fails_with(&o, "has 5 functions; choose one with --function");

    let o = tool(
        "tcc-run",
        cache.path(),
        &[so, "--function=addk", "--input=4xi32=1", "--output=y.npy"],
    );
    assert_fails_with(&o, "--output=y.npy: expected @FILE.npy");

    // A usage error: exit 2 (1 is for failures).
    let o = tool("tcc-run", cache.path(), &[so, "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error: unexpected argument '--no-such-flag'"));

    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=addk",
            "--input=4xi32=1",
            "--device=no-such-device",
        ],
    );
    assert_fails_with(
        &o,
        "no OpenCL device matches \"no-such-device\"; available devices:",
    );

    let o = tool("tcc-run", cache.path(), &["/nonexistent/model.so"]);
    assert_fails_with(&o, "cannot load artifact /nonexistent/model.so");

    let (_d2, v4) = test_model(&["TCC_TEST_ABI_VERSION=5"]);
    let o = tool(
        "tcc-run",
        cache.path(),
        &[v4.to_str().unwrap(), "--function=addk", "--input=4xi32=1"],
    );
    assert_fails_with(
        &o,
        "uses tcc ABI version 5, this runtime supports versions 3..=4: rebuild the model with this tcc",
    );

    let (_d3, broken) = test_model(&["TCC_TEST_BAD_KERNEL"]);
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            broken.to_str().unwrap(),
            "--function=addk",
            "--input=4xi32=1",
        ],
    );
    assert_fails_with(&o, "kernel program failed to build");
    assert_fails_with(&o, "undefined_symbol_in_kernel");
}

#[test]
fn no_platform_says_how_to_install_pocl() {
    let cache = tempfile::tempdir().unwrap();
    let empty_vendors = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tcc-run"))
        .arg("--list-devices")
        .env("TCC_CACHE_DIR", cache.path())
        .env("OCL_ICD_VENDORS", empty_vendors.path())
        .output()
        .unwrap();
    assert_fails_with(&o, "no OpenCL platform found");
    assert_fails_with(&o, "apt-get install pocl-opencl-icd ocl-icd-libopencl1");
}

#[test]
fn list_devices_shows_capabilities() {
    let cache = tempfile::tempdir().unwrap();
    let o = tool("tcc-run", cache.path(), &["--list-devices"]);
    assert!(
        o.status.success(),
        "an OpenCL device is required: {}",
        stderr(&o)
    );
    let out = stdout(&o);
    assert!(out.starts_with("platform 0: "), "{out}");
    for field in [
        "device 0: ",
        "(default)",
        "OpenCL C:",
        "IL (SPIR-V):",
        "fp16:",
        "compute units:",
        "local memory:",
        "max work-group:",
    ] {
        assert!(out.contains(field), "missing {field}:\n{out}");
    }
}

#[test]
fn benchmark_reports_and_shows_the_cache_hit_on_a_second_run() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=21"]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let args = [
        so,
        "--function=axpb",
        "--input=1000xf32=1",
        "--warmup=1",
        "--iterations=5",
        "--flops=2000",
        "--json",
    ];

    let first = tool("tcc-benchmark", cache.path(), &args);
    assert!(first.status.success(), "{}", stderr(&first));
    let j: serde_json::Value = serde_json::from_str(&stdout(&first)).expect("one JSON object");
    assert_eq!(j["program_cache"]["source_builds"], 1);
    assert_eq!(j["program_origin"], "SourceBuild");
    assert_eq!(j["iterations"], 5);
    let lat = &j["latency_ms"];
    assert!(lat["min"].as_f64().unwrap() <= lat["median"].as_f64().unwrap());
    assert!(lat["median"].as_f64().unwrap() <= lat["p90"].as_f64().unwrap());
    let kernels = j["kernels"].as_array().unwrap();
    // The table is sorted by time, and these two tiny kernels take about
    // the same: their order is the machine's noise, not the test's subject.
    let mut names: Vec<&str> = kernels
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "scale"]);
    assert!(kernels.iter().all(|k| k["calls"] == 5));
    assert!(j["gflops"]["end_to_end"].as_f64().unwrap() > 0.0);
    assert!(j["buffer_pool"]["reuse_hits"].as_u64().unwrap() > 0);

    let second = tool("tcc-benchmark", cache.path(), &args);
    let j: serde_json::Value = serde_json::from_str(&stdout(&second)).expect("one JSON object");
    assert_eq!(
        j["program_cache"]["source_builds"], 0,
        "no driver compile on the second run"
    );
    assert_eq!(j["program_cache"]["disk_hits"], 1);
    assert_eq!(j["program_origin"], "DiskHit");

    let human = tool("tcc-benchmark", cache.path(), &args[..args.len() - 1]);
    assert!(human.status.success(), "{}", stderr(&human));
    let out = stdout(&human);
    for line in [
        "latency end-to-end: min ",
        "GFLOP/s: ",
        "kernels (device time",
        "program cache: loaded from the disk cache",
        "buffer pool: ",
    ] {
        assert!(out.contains(line), "missing {line}:\n{out}");
    }

    let o = tool(
        "tcc-benchmark",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=0",
        ],
    );
    assert_fails_with(&o, "--iterations must be at least 1");
}

/// `--resident`: the inputs go to the device once and no call copies an
/// output back, where the default loop moves both every call.
#[test]
fn benchmark_resident_calls_keep_their_tensors_on_the_device() {
    let (_dir, so) = test_model(&["TCC_TEST_SALT=22"]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--warmup=2",
            "--iterations=5",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = tool("tcc-benchmark", cache.path(), &args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<serde_json::Value>(&stdout(&o)).expect("one JSON object")
    };
    let copied = run(&[]);
    let resident = run(&["--resident"]);
    assert_eq!(copied["resident"], false);
    assert_eq!(resident["resident"], true);
    let moved = |j: &serde_json::Value, what: &str| j["transfers"][what].as_u64().unwrap();
    // By default each of the 7 calls takes its host input (in place on a
    // host-memory device such as PoCL's, else copied) and gives back a
    // host output.
    let inputs_taken = moved(&copied, "inputs_in_place") + moved(&copied, "bytes_to_device") / 4000;
    let outputs_given = moved(&copied, "outputs_in_place") + moved(&copied, "bytes_to_host") / 4000;
    assert!(inputs_taken >= 7 && outputs_given >= 7, "{copied}");
    // Resident calls touch no host tensor: the input was uploaded once
    // (beside the model's 1000-float constant, once per session).
    assert_eq!(moved(&resident, "bytes_to_host"), 0, "{resident}");
    assert_eq!(moved(&resident, "inputs_in_place"), 0, "{resident}");
    assert_eq!(moved(&resident, "outputs_in_place"), 0, "{resident}");
    assert!(
        moved(&resident, "bytes_to_device") <= 2 * 4000,
        "{resident}"
    );
    // Every resident call ran the kernels.
    let kernels = resident["kernels"].as_array().unwrap();
    assert!(
        !kernels.is_empty() && kernels.iter().all(|k| k["calls"] == 5),
        "{resident}"
    );

    let text = tool(
        "tcc-benchmark",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=2",
            "--resident",
        ],
    );
    assert!(text.status.success(), "{}", stderr(&text));
    assert!(
        stdout(&text).contains("latency, inputs and outputs resident on the device: min "),
        "{}",
        stdout(&text)
    );
    let o = tool(
        "tcc-benchmark",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--resident",
            "--in-flight=2",
        ],
    );
    assert_fails_with(&o, "--resident times the synchronous measurement");
    let o = tool(
        "tcc-benchmark",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--resident",
            "--fresh-outputs",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn ptx_artifacts_fall_back_to_opencl_c_off_nvidia_and_say_so() {
    let (dir, so) = test_model(&["TCC_TEST_PTX"]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--verbose",
            "--print-max-elements=4",
        ];
        args.extend_from_slice(extra);
        tool("tcc-run", cache.path(), &args)
    };
    // Automatic: the test device is not NVIDIA's OpenCL, so the OpenCL C is
    // built, with one note saying why the PTX was not.
    let o = run(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("result[0]: 1000xf32=[2 2.5 3 3.5 ...]"),
        "{}",
        stdout(&o)
    );
    let err = stderr(&o);
    assert_eq!(
        err.matches("tcc-run: note: the artifact's PTX is for NVIDIA's OpenCL")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("kernels: OpenCL C, "), "{err}");
    // Forced OpenCL C: no note.
    let o = run(&["--kernel-format=opencl-c"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
    // Forced PTX on a device that does not take it: a clean error.
    let o = run(&["--kernel-format=ptx"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let o = run(&["--kernel-format=sass"]);
    assert_fails_with(&o, "kernel format `sass`: expected auto, ptx or opencl-c");
    // An artifact without PTX: asking for PTX names the fix.
    let (_plain_dir, plain) = test_model(&[]);
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            plain.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
            "--kernel-format=ptx",
        ],
    );
    assert_fails_with(
        &o,
        "carries none; compile it with --target=nvidia or --ptx=on",
    );
    // The environment variable does what the flag does.
    let o = Command::new(env!("CARGO_BIN_EXE_tcc-run"))
        .args([so, "--function=axpb", "--input=1000xf32=1"])
        .env("TCC_CACHE_DIR", cache.path())
        .env("TCC_KERNEL_FORMAT", "bogus")
        .env_remove("TCC_DEVICE")
        .output()
        .unwrap();
    assert_fails_with(&o, "TCC_KERNEL_FORMAT: kernel format `bogus`");
    drop(dir);
}

#[test]
fn prepare_builds_and_caches_so_the_next_process_builds_nothing() {
    let (_dir, so) = test_model(&[]);
    let so = so.to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &["--prepare", so, "--function=axpb", "--device=pthread"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with(&format!("prepared {so} for ")), "{out}");
    assert!(
        out.contains("kernel program: 3 kernels, OpenCL C, built from source in"),
        "{out}"
    );
    assert!(out.contains("first call of @axpb on zeros: "), "{out}");
    assert!(out.contains("(1 written, 0 loaded)"), "{out}");
    assert!(out.contains("  total "), "{out}");
    assert!(
        !out.contains("EXEC"),
        "--prepare runs nothing for the user: {out}"
    );

    // A fresh process: the program comes from the cache, nothing is built.
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--device=pthread",
            "--verbose",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("loaded from the disk cache"), "{err}");
    assert!(!err.contains("building"), "{err}");
    // And --prepare again only loads.
    let o = tool(
        "tcc-run",
        cache.path(),
        &["--prepare", so, "--function=axpb"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("loaded from the disk cache"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("(0 written, 1 loaded)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn prepare_fails_clearly() {
    let cache = tempfile::tempdir().unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &["--prepare", "/nonexistent/model.so"],
    );
    assert_fails_with(&o, "/nonexistent/model.so");
    let o = tool("tcc-run", cache.path(), &["--prepare"]);
    assert_fails_with(&o, "missing the model");
    let (_d, so) = test_model(&[]);
    let so = so.to_str().unwrap();
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            "--prepare",
            so,
            "--function=axpb",
            "--device=no-such-device",
        ],
    );
    assert_fails_with(&o, "no-such-device");
    let (_d2, broken) = test_model(&["TCC_TEST_BAD_KERNEL"]);
    let o = tool(
        "tcc-run",
        cache.path(),
        &["--prepare", broken.to_str().unwrap(), "--function=axpb"],
    );
    assert_fails_with(&o, "build log");
    // A function that fails on zeros fails the preparation, naming it.
    let o = tool("tcc-run", cache.path(), &["--prepare", so]);
    assert_fails_with(&o, "preparing @");
    // --prepare takes no inputs.
    let o = tool(
        "tcc-run",
        cache.path(),
        &["--prepare", so, "--input=1000xf32=1"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
