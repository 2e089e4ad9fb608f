//! iree-run-module's conventions in tcc-run and tcc-benchmark (issue 11):
//! `--module=`, typed raw inputs (`--input=1000xf32=@x.bin`), raw and
//! appended outputs (`@y.bin`, `+y.npy`), `--expected_output` with
//! tolerances, and Google Benchmark's `--benchmark_repetitions`,
//! `--benchmark_format=json` and `--benchmark_out`, with the kernel table
//! sorted by time. On the test fixture's artifact (tests/fixtures/test_model.c).

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use common::*;
use tcc_runtime::{HostTensor, npy};

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn raw_inputs_appended_outputs_and_expected_outputs() {
    let (dir, so) = test_model(&[]);
    let d = dir.path();
    let cache = d.join("cache");
    let so = so.to_str().unwrap();
    let x = ramp(1000);
    std::fs::write(d.join("x.bin"), f32_bytes(&x)).unwrap();
    let module = format!("--module={so}");
    let input = format!("--input=1000xf32=@{}", d.join("x.bin").display());
    let y_npy = d.join("y.npy");
    let y_bin = d.join("y.bin");
    let all = d.join("all.npy");
    for output in [
        format!("--output=@{}", y_npy.display()),
        format!("--output=@{}", y_bin.display()),
    ] {
        let o = tool(
            "tcc-run",
            &cache,
            &[&module, "--function=axpb", &input, &output],
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    for _ in 0..2 {
        let o = tool(
            "tcc-run",
            &cache,
            &[
                so,
                "--function=axpb",
                &input,
                &format!("--output=+{}", all.display()),
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let expected = axpb_expected(&x);
    assert_eq!(npy::read_npy(&y_npy).unwrap().to_f32().unwrap(), expected);
    assert_eq!(std::fs::read(&y_bin).unwrap(), f32_bytes(&expected));
    let one = npy::npy_bytes(&HostTensor::from_f32(vec![1000], &expected).unwrap()).unwrap();
    assert_eq!(
        std::fs::read(&all).unwrap(),
        [one.clone(), one].concat(),
        "two appended arrays"
    );

    // The expected output: a match, a mismatch, and a tolerance wide enough.
    let want = format!("--expected_output=@{}", y_npy.display());
    let o = tool("tcc-run", &cache, &[so, "--function=axpb", &input, &want]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("[SUCCESS] all results match"));
    let o = tool(
        "tcc-run",
        &cache,
        &[so, "--function=axpb", "--input=1000xf32=0", &want],
    );
    assert_fails_with(&o, "results do not match the expected outputs");
    let out = String::from_utf8_lossy(&o.stdout);
    // The verdict and the first five mismatches, not the 1,000 values.
    assert!(
        out.contains("[FAILED] result[0] (1000xf32) differs from ")
            && out.contains("the first 5:\n  at (0): got 0, expected -6 (|difference| 6.000e0)\n  at (1): got 0.5, expected -5 (|difference| 5.500e0)"),
        "{out}"
    );
    let more = out
        .lines()
        .find(|l| l.starts_with("  ... and "))
        .unwrap_or_else(|| panic!("{out}"));
    let failed: usize = out
        .split(" in ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(more, format!("  ... and {} more", failed - 5), "{out}");
    assert!(
        !out.contains("result[0]: 1000xf32"),
        "results are not printed: {out}"
    );
    assert!(out.lines().count() <= 8, "{out}");
    // An --output still prints (or writes) a checked result.
    let o = tool(
        "tcc-run",
        &cache,
        &[
            so,
            "--function=axpb",
            &input,
            &want,
            "--output=-",
            "--print_max_element_count=2",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("result[0]: 1000xf32=[-6 -5 ...]"),
        "{out}{}",
        stderr(&o)
    );
    let o = tool(
        "tcc-run",
        &cache,
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=0",
            &want,
            "--expected_f32_threshold=1000",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // A relative tolerance: the expected values off by 0.1 %.
    let scaled: Vec<f32> = expected.iter().map(|v| v * 1.001).collect();
    let near = d.join("near.npy");
    npy::write_npy(&near, &HostTensor::from_f32(vec![1000], &scaled).unwrap()).unwrap();
    let near = format!("--expected_output=@{}", near.display());
    let o = tool(
        "tcc-run",
        &cache,
        &[
            so,
            "--function=axpb",
            &input,
            &near,
            "--expected_f32_threshold=0",
            "--expected_rtol=1e-2",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tool(
        "tcc-run",
        &cache,
        &[
            so,
            "--function=axpb",
            &input,
            &near,
            "--expected_f32_threshold=0",
            "--expected_rtol=1e-4",
        ],
    );
    assert_fails_with(&o, "do not match");
    // `-` skips a result; a literal expected output; too many.
    let o = tool(
        "tcc-run",
        &cache,
        &[
            so,
            "--function=dup",
            "--input=2x3xf32=1,2,3,4,5,6",
            "--expected_output=-",
            "--expected_output=2x3xf32=1,2,3,4,5,6",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tool(
        "tcc-run",
        &cache,
        &[so, "--function=axpb", &input, &want, &want],
    );
    assert_fails_with(&o, "1 output(s) but 2 --expected_output flags");

    // A raw file of the wrong size, and a missing model.
    std::fs::write(d.join("short.bin"), [0u8; 12]).unwrap();
    let o = tool(
        "tcc-run",
        &cache,
        &[
            so,
            "--function=axpb",
            &format!("--input=1000xf32=@{}", d.join("short.bin").display()),
        ],
    );
    assert_fails_with(&o, "short.bin has 12 bytes, 1000xf32 needs 4000");
    let o = tool("tcc-run", &cache, &["--function=axpb"]);
    assert_fails_with(&o, "or --module=model.so");
    let o = tool("tcc-run", &cache, &[so, &module]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a model twice is a usage error: {}",
        stderr(&o)
    );
}

#[test]
fn benchmark_repetitions_json_and_sorted_kernels() {
    let (dir, so) = test_model(&[]);
    let d = dir.path();
    let cache = d.join("cache");
    let out_file = d.join("bench.json");
    let args = [
        &format!("--module={}", so.display()),
        "--function=axpb",
        "--input=1000xf32=1",
        "--iterations=5",
        "--warmup=1",
        "--benchmark_repetitions=3",
        &format!("--benchmark_out={}", out_file.display()),
    ];
    let o = tool("tcc-benchmark", &cache, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("iterations: 5 (after 1 warm-up), 3 repetitions"),
        "{text}"
    );
    assert!(
        text.contains("  repetition 3: mean ") && text.contains("across repetitions: mean"),
        "{text}"
    );
    // The kernel table: most device time first.
    let table: Vec<f64> = text
        .lines()
        .skip_while(|l| !l.starts_with("kernels (device time"))
        .skip(2)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(table.len(), 2, "{text}");
    assert!(
        table.windows(2).all(|w| w[0] >= w[1]),
        "not sorted by time: {table:?}"
    );

    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let benchmarks = file["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benchmarks
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "@axpb/real_time",
            "@axpb/real_time",
            "@axpb/real_time",
            "@axpb/real_time_mean",
            "@axpb/real_time_median",
            "@axpb/real_time_stddev",
            "@axpb/real_time_cv"
        ]
    );
    assert_eq!(benchmarks[2]["repetition_index"], 2);
    assert_eq!(benchmarks[0]["iterations"], 5);
    assert_eq!(benchmarks[0]["time_unit"], "ms");
    assert!(benchmarks[3]["real_time"].as_f64().unwrap() > 0.0);
    assert!(
        file["context"]["tcc_version"]
            .as_str()
            .unwrap()
            .starts_with("tcc 0.1.0")
    );

    let o = tool(
        "tcc-benchmark",
        &cache,
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=2",
            "--benchmark_format=json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["benchmarks"].as_array().unwrap().len(), 1);
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[so.to_str().unwrap(), "--benchmark_format=xml"],
    );
    assert_eq!(o.status.code(), Some(2));
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[
            so.to_str().unwrap(),
            "--function=axpb",
            "--input=1000xf32=1",
            "--benchmark_repetitions=0",
        ],
    );
    assert_fails_with(&o, "--benchmark_repetitions must be at least 1");
}

/// Every flag of tcc-run and tcc-benchmark takes both spellings, `-` and
/// `_` (IREE's tools use `_`); an unknown flag stays a usage error.
#[test]
fn flags_take_both_spellings() {
    let (dir, so) = test_model(&[]);
    let cache = dir.path().join("cache");
    let so = so.to_str().unwrap();
    for (flag, count) in [
        ("--print-max-elements=3", 3),
        ("--print_max_elements=2", 2),
        ("--print_max_element_count=4", 4),
        ("--print-max-element-count=1", 1),
    ] {
        let o = tool(
            "tcc-run",
            &cache,
            &[so, "--function=axpb", "--input=1000xf32=1", flag],
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{flag}: {}", stderr(&o));
        let shown = out
            .split("=[")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .filter(|v| *v != "...]")
            .count();
        assert_eq!(shown, count, "{flag}: {out}");
    }
    let o = tool(
        "tcc-run",
        &cache,
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=0",
            "--expected-output=-",
            "--expected-f32-threshold=0",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("[SUCCESS]"));
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=2",
            "--benchmark-repetitions=2",
            "--kernel_format=opencl-c",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 repetitions"));
    let o = tool("tcc-run", &cache, &[so, "--print_max_elementz=3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `.npy` files tcc writes are byte for byte what numpy's `np.save`
/// (np.lib.format) writes for the same array: `(1, 1000, 1, 1)` without a
/// trailing ", ", `(5,)`, `()`, the growth-axis spaces and the alignment.
#[test]
fn npy_files_match_numpy_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, HostTensor)> = vec![
        (
            "nchw",
            HostTensor::from_f32(vec![1, 1000, 1, 1], &ramp(1000)).unwrap(),
        ),
        (
            "vector",
            HostTensor::from_f32(vec![5], &[1.0, 2.0, 3.0, 4.0, 5.5]).unwrap(),
        ),
        ("scalar", HostTensor::from_f32(vec![], &[7.0]).unwrap()),
        (
            "matrix",
            HostTensor::from_i32(vec![2, 3], &[1, -2, 3, 4, 5, 6]).unwrap(),
        ),
        ("empty", HostTensor::from_f32(vec![0, 4], &[]).unwrap()),
        (
            "wide",
            HostTensor::zeros(tcc_runtime::DType::I64, vec![123456789012, 0]).unwrap(),
        ),
        (
            "flags",
            HostTensor::zeros(tcc_runtime::DType::Bool, vec![3]).unwrap(),
        ),
        (
            "half",
            HostTensor::zeros(tcc_runtime::DType::F16, vec![2, 2, 2]).unwrap(),
        ),
    ];
    for (name, t) in &cases {
        npy::write_npy(&dir.path().join(format!("{name}.npy")), t).unwrap();
    }
    let script = r#"
import io, sys, numpy as np
bad = []
for path in sys.argv[1:]:
    ours = open(path, 'rb').read()
    b = io.BytesIO()
    np.save(b, np.load(path))
    if b.getvalue() != ours:
        bad.append(f"{path}: ours {ours[:140]!r} numpy {b.getvalue()[:140]!r}")
print("\n".join(bad) or f"{len(sys.argv) - 1} identical")
"#;
    let files: Vec<String> = cases
        .iter()
        .map(|(n, _)| dir.path().join(format!("{n}.npy")).display().to_string())
        .collect();
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(&files)
        .output()
        .expect("python3 with numpy (make deps)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out.trim(), format!("{} identical", cases.len()));
    let header = std::fs::read(&files[0]).unwrap();
    assert!(
        header.windows(18).any(|w| w == b"(1, 1000, 1, 1), }"),
        "{:?}",
        String::from_utf8_lossy(&header[..128])
    );
}

/// `tcc-benchmark --duration` times calls for that long; with no --input
/// it runs on zeros (or seeded random values), and says so.
#[test]
fn benchmark_duration_and_default_inputs() {
    let (dir, so) = test_model(&[]);
    let cache = dir.path().join("cache");
    let so = so.to_str().unwrap();
    let started = std::time::Instant::now();
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[
            so,
            "--function=axpb",
            "--duration=1.5",
            "--warmup=1",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(started.elapsed().as_secs_f64() >= 1.5);
    assert!(
        stderr(&o).contains("no --input given: zeros for 1000xf32"),
        "{}",
        stderr(&o)
    );
    // A measurement over 0.7 s says so (not a terminal: a line when it
    // starts and one when it ends).
    let err = stderr(&o);
    assert!(
        err.contains("tcc-benchmark: measuring for 1.5 s\n")
            && err.contains("tcc-benchmark: measured after "),
        "{err}"
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let calls = report["iterations"].as_u64().unwrap();
    let mean_ms = report["latency_ms"]["mean"].as_f64().unwrap();
    assert_eq!(report["duration_s"], 1.5);
    // Calls until 1.5 s have passed: their time adds up to about that
    // (the last call may end after it; one takes well under 50 ms).
    let busy_ms = calls as f64 * mean_ms;
    assert!(
        (1350.0..1550.0).contains(&busy_ms),
        "{busy_ms} ms: {report}"
    );
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[so, "--function=axpb", "--random-inputs=7", "--iterations=1"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("random values (seed 7) for 1000xf32"),
        "{}",
        stderr(&o)
    );
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--random-inputs",
        ],
    );
    assert_fails_with(&o, "give one or the other");
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[so, "--function=axpb", "--duration=0"],
    );
    assert_fails_with(&o, "--duration must be a positive number");
    let o = tool(
        "tcc-benchmark",
        &cache,
        &[so, "--function=axpb", "--duration=1", "--iterations=3"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // The values: the same seed the same, floats in [0, 1), integers 0/1.
    let model = tcc_runtime::Model::load(so).unwrap();
    let f = model.function("axpb").unwrap();
    let (a, what) = tcc_runtime::cli::default_inputs(f, Some(7)).unwrap();
    let (b, _) = tcc_runtime::cli::default_inputs(f, Some(7)).unwrap();
    let (c, _) = tcc_runtime::cli::default_inputs(f, Some(8)).unwrap();
    let (z, zero) = tcc_runtime::cli::default_inputs(f, None).unwrap();
    assert_eq!(what, ["random values (seed 7)"]);
    assert_eq!(zero, ["zeros"]);
    let v = a[0].to_f32().unwrap();
    assert_eq!(v, b[0].to_f32().unwrap());
    assert_ne!(v, c[0].to_f32().unwrap());
    assert!(v.iter().all(|x| (0.0..1.0).contains(x)), "{v:?}");
    let mean = v.iter().sum::<f32>() / v.len() as f32;
    assert!((0.4..0.6).contains(&mean), "uniform in [0, 1): mean {mean}");
    assert!(z[0].to_f32().unwrap().iter().all(|x| *x == 0.0));
}
