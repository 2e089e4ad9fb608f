//! The issue-14 flags of `tcc-run` and `tcc-benchmark` on the C test
//! artifact: `--in-flight`, `--concurrency`, `--own-queues`,
//! `--cpu-partition`, `--device=all|LIST` and `--split`, with two PoCL
//! devices where a test needs them (`POCL_DEVICES="pthread pthread"` in
//! the tool's environment), and their failures.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::process::Output;

use common::*;
use tcc_runtime::HostTensor;
use tcc_runtime::npy::{read_npy, write_npy};

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "stderr: {}", stderr(o));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

fn two_devices(name: &str, cache: &std::path::Path, args: &[&str]) -> Output {
    tool_command(name, cache, args)
        .env("POCL_DEVICES", "pthread pthread")
        .output()
        .expect("run the binary")
}

#[test]
fn benchmark_reports_throughput_next_to_latency() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let sync = tool(
        "tcc-benchmark",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=5",
        ],
    );
    assert!(sync.status.success(), "{}", stderr(&sync));
    let text = String::from_utf8_lossy(&sync.stdout);
    assert!(
        text.contains("throughput: ") && text.contains("calls/s"),
        "{text}"
    );

    let other = format!("--with-model={so}@addk");
    for flags in [
        &["--in-flight=3"][..],
        &["--in-flight=3", "--fresh-outputs"],
        &["--concurrency=2", "--cpu-partition=2", other.as_str()],
        &["--concurrency=2"],
        &["--concurrency=2", "--own-queues"],
        &["--concurrency=2", "--cpu-partition=2"],
        &["--in-flight=3", "--compute-queues=3"],
    ] {
        let mut args = vec![
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--iterations=7",
            "--warmup=1",
            "--json",
        ];
        args.extend_from_slice(flags);
        let r = json(&tool("tcc-benchmark", cache.path(), &args));
        let threads = r["concurrency"].as_u64().unwrap();
        assert_eq!(r["calls"].as_u64().unwrap(), 7 * threads, "{flags:?}: {r}");
        assert!(r["throughput_calls_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["latency_ms"]["median"].as_f64().unwrap() > 0.0, "{r}");
        let per_device: Vec<u64> = r["calls_per_device"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(per_device.iter().sum::<u64>(), 7 * threads, "{r}");
        let models = r["per_model"].as_array().unwrap();
        assert_eq!(
            models.len(),
            if flags.contains(&other.as_str()) {
                2
            } else {
                1
            },
            "{r}"
        );
        let per_model: u64 = models.iter().map(|m| m["calls"].as_u64().unwrap()).sum();
        assert_eq!(per_model, 7 * threads, "{r}");
        if flags.contains(&"--cpu-partition=2") {
            // Each thread has a part of its own.
            assert_eq!(per_device, vec![7, 7], "{r}");
        }
        // The compute queues per session, and the host-side timings.
        let queues = r["compute_queues_per_session"].as_u64().unwrap();
        let want = match flags {
            f if f.contains(&"--compute-queues=3") => 3,
            f if f.contains(&"--own-queues") => 1,
            // `auto` on the CPU device: its queue.
            _ => 0,
        };
        assert_eq!(queues, want, "{flags:?}: {r}");
        assert!(r["submit_ms_mean"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["wait_ms_mean"].as_f64().is_some(), "{r}");
        // The warm-up made every slot's buffers: none during the timing.
        let timed = &r["timed_allocations"];
        assert_eq!(timed["staging_buffers"].as_u64(), Some(0), "{flags:?}: {r}");
    }
}

#[test]
fn a_batch_splits_across_two_devices_from_the_command_line() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let x: Vec<f32> = ramp(3000);
    let xp = dir.path().join("x.npy");
    write_npy(&xp, &HostTensor::from_f32(vec![3000], &x).unwrap()).unwrap();
    let yp = dir.path().join("y.npy");
    let input = format!("--input=@{}", xp.display());
    let output = format!("--output=@{}", yp.display());
    let o = two_devices(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=axpb",
            &input,
            &output,
            "--device=all",
            "--verbose",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("3 part(s) over 2 device(s)"),
        "{}",
        stderr(&o)
    );
    let y = read_npy(&yp).unwrap().to_f32().unwrap();
    let want: Vec<f32> = x.chunks(1000).flat_map(axpb_expected).collect();
    assert_eq!(y, want);

    let r = json(&two_devices(
        "tcc-benchmark",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=4000xf32=0.5",
            "--device=0,1",
            "--split",
            "--iterations=3",
            "--warmup=1",
            "--json",
        ],
    ));
    assert_eq!(r["devices"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["calls"].as_u64().unwrap(), 3, "{r}");
    // When each of the 4 parts' submission began and ended in its call:
    // each device (parts 0 and 2, 1 and 3) submits its own in turn.
    let parts = r["split_part_submissions_ms"].as_array().unwrap();
    assert_eq!(parts.len(), 4, "{r}");
    let at = |j: usize, k: usize| parts[j][k].as_f64().unwrap();
    assert!((0..4).all(|j| at(j, 0) <= at(j, 1)), "{r}");
    assert!((2..4).all(|j| at(j - 2, 1) <= at(j, 0) + 1e-6), "{r}");
    // Whole calls go to the less busy device: both get some.
    let r = json(&two_devices(
        "tcc-benchmark",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=0.5",
            "--device=all",
            "--in-flight=2",
            "--iterations=6",
            "--warmup=1",
            "--json",
        ],
    ));
    let per_device: Vec<u64> = r["calls_per_device"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(
        per_device.len() == 2 && per_device.iter().all(|&n| n > 0),
        "{r}"
    );
    assert_eq!(per_device.iter().sum::<u64>(), 6, "{r}");
}

#[test]
fn bad_issue_14_flags_fail_cleanly() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let so = so.to_str().unwrap();
    let base = [
        so,
        "--function=axpb",
        "--input=1000xf32=1",
        "--iterations=2",
    ];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        tool("tcc-benchmark", cache.path(), &args)
    };
    assert_fails_with(&run(&["--concurrency=0"]), "must be at least 1");
    assert_fails_with(&run(&["--in-flight=0"]), "must be at least 1");
    assert_fails_with(&run(&["--cpu-partition=0"]), "must be at least 1");
    assert_fails_with(
        &run(&["--compute-queues=some"]),
        "compute queues must be auto, shared or a count of at least 1",
    );
    assert_fails_with(&run(&["--cpu-partition=1000"]), "compute units");
    assert_fails_with(&run(&["--device=0,0"]), "named twice");
    assert_fails_with(&run(&["--device=0,,1"]), "an empty entry");
    assert_fails_with(&run(&["--device=0,9"]), "no OpenCL device matches index 9");
    assert_fails_with(
        &run(&["--split", "--in-flight=2"]),
        "use --in-flight=1 with --split",
    );
    let o = tool(
        "tcc-benchmark",
        cache.path(),
        &[so, "--function=axpb", "--input=1500xf32=1", "--split"],
    );
    assert_fails_with(&o, "axis 0 a multiple of 1000");
    let o = tool(
        "tcc-run",
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1500xf32=1",
            "--cpu-partition=2",
        ],
    );
    assert_fails_with(&o, "axis 0 a multiple of 1000");
}
