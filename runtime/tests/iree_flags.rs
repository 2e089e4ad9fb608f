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
    assert!(
        out.contains("[FAILED] result[0] (1000xf32) differs from ")
            && out.contains("first at (0): got 0, expected -6"),
        "{out}"
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
