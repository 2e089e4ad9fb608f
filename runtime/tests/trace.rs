//! `tcc-benchmark --trace=FILE.json` on both backends (OpenCL on the
//! default device, CUDA on the fake driver of `fixtures/fake_libcuda.c`):
//! the file is a Chrome/Perfetto trace whose events are sorted, have
//! non-negative durations, name a host track and a queue/stream track,
//! hold every kernel of every call in launch order, and give each upload,
//! download and copy its byte count; and `--trace` is refused where it
//! records nothing.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use common::*;
use serde_json::Value;

/// Bytes of @axpb's input, output and constant (1000 floats each).
const AXPB_BYTES: u64 = 4000;

fn benchmark(cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = tool_command("tcc-benchmark", cache, args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run tcc-benchmark")
}

/// The trace's timed events, after checking the structure every trace
/// has: the two named tracks, events sorted by start, durations
/// non-negative, each on the host (tid 1) or the device track (tid 2).
fn timed_events(trace: &Value, queue: &str) -> Vec<Value> {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let thread = |tid: u64| {
        events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == tid)
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
    };
    assert_eq!(thread(1).as_deref(), Some("host"));
    assert!(
        thread(2).is_some_and(|n| n.starts_with(queue)),
        "{:?}",
        thread(2)
    );
    let timed: Vec<Value> = events.iter().filter(|e| e["ph"] == "X").cloned().collect();
    assert!(!timed.is_empty());
    let mut last = f64::NEG_INFINITY;
    for e in &timed {
        let ts = e["ts"].as_f64().expect("ts");
        let dur = e["dur"].as_f64().expect("dur");
        assert!(ts >= last, "events out of order at {e}");
        assert!(dur >= 0.0, "negative duration: {e}");
        assert!(e["tid"] == 1 || e["tid"] == 2, "{e}");
        assert!(e["args"]["call"].is_u64(), "no call index: {e}");
        last = ts;
    }
    timed
}

/// A device command as the tests compare it: category, name, bytes.
type Moved = (String, String, Option<u64>);
/// A call's host span (start, end) and its device commands.
type CallEvents = ((f64, f64), Vec<Moved>);

/// Per call index: its host span (start, end) and its device events
/// (category, name, bytes) in start order; checks that each call's
/// device events start inside its span and do not overlap (one in-order
/// queue or stream).
fn by_call(timed: &[Value]) -> BTreeMap<u64, CallEvents> {
    let mut calls = BTreeMap::new();
    for e in timed.iter().filter(|e| e["cat"] == "call") {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        let previous = calls.insert(
            e["args"]["call"].as_u64().unwrap(),
            ((ts, ts + dur), Vec::new()),
        );
        assert!(previous.is_none(), "call listed twice: {e}");
    }
    let mut device_end: BTreeMap<u64, f64> = BTreeMap::new();
    for e in timed.iter().filter(|e| e["tid"] == 2) {
        let call = e["args"]["call"].as_u64().unwrap();
        let ((start, _), commands) = calls.get_mut(&call).expect("the call of a device event");
        let ts = e["ts"].as_f64().unwrap();
        assert!(ts >= *start, "{e} starts before its call at {start}");
        let end = device_end.entry(call).or_insert(f64::NEG_INFINITY);
        // Microsecond floats: allow rounding.
        assert!(ts >= *end - 1e-3, "{e} overlaps the previous command");
        *end = ts + e["dur"].as_f64().unwrap();
        commands.push((
            e["cat"].as_str().unwrap().to_string(),
            e["name"].as_str().unwrap().to_string(),
            e["args"]["bytes"].as_u64(),
        ));
    }
    // Host gaps lie inside their call.
    for e in timed.iter().filter(|e| e["cat"] == "host") {
        let ((start, end), _) = &calls[&e["args"]["call"].as_u64().unwrap()];
        let ts = e["ts"].as_f64().unwrap();
        assert!(
            ts >= start - 1e-3 && ts + e["dur"].as_f64().unwrap() <= end + 1e-3,
            "{e}"
        );
    }
    calls
}

/// The kernels of a call's commands, in order.
fn kernels(commands: &[Moved]) -> Vec<&str> {
    commands
        .iter()
        .filter(|(cat, _, _)| cat == "kernel")
        .map(|(_, name, _)| name.as_str())
        .collect()
}

/// The (name, bytes) of a call's commands of category `cat`.
fn moved<'a>(
    commands: &'a [(String, String, Option<u64>)],
    cat: &str,
) -> Vec<(&'a str, Option<u64>)> {
    commands
        .iter()
        .filter(|(c, _, _)| c == cat)
        .map(|(_, name, bytes)| (name.as_str(), *bytes))
        .collect()
}

fn read_trace(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the trace file"))
        .expect("the trace is JSON")
}

#[test]
fn opencl_trace_has_every_kernel_and_copy_of_every_call() {
    let (dir, so) = test_model(&[]);
    let so = so.to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let path = dir.path().join("axpb.json");
    let trace_flag = format!("--trace={}", path.display());
    // Copies forced on a host-memory device too, so that inputs and
    // outputs move.
    let o = benchmark(
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--warmup=2",
            "--iterations=3",
            &trace_flag,
        ],
        &[("TCC_ZERO_COPY", "0")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("trace of 5 calls -> {}", path.display())),
        "{}",
        stderr(&o)
    );
    let trace = read_trace(&path);
    let timed = timed_events(&trace, "OpenCL queue");
    let calls = by_call(&timed);
    assert_eq!(calls.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    for (index, (_, commands)) in &calls {
        assert_eq!(kernels(commands), ["scale", "add"], "call {index}");
        assert_eq!(
            moved(commands, "upload")[0],
            ("upload", Some(AXPB_BYTES)),
            "call {index}"
        );
        assert_eq!(
            moved(commands, "download"),
            [("download", Some(AXPB_BYTES))],
            "call {index}"
        );
    }
    // The constant is uploaded by the first call only.
    assert_eq!(
        moved(&calls[&0].1, "upload"),
        [
            ("upload", Some(AXPB_BYTES)),
            ("upload constant 0", Some(AXPB_BYTES))
        ]
    );
    assert_eq!(moved(&calls[&1].1, "upload").len(), 1);
    // The first two are the warm-up, and say so.
    let call_names: Vec<&str> = timed
        .iter()
        .filter(|e| e["cat"] == "call")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        call_names,
        [
            "@axpb call 0 (warm-up)",
            "@axpb call 1 (warm-up)",
            "@axpb call 2",
            "@axpb call 3",
            "@axpb call 4"
        ]
    );
    assert_eq!(trace["otherData"]["warmup_calls"], 2);
    assert_eq!(trace["otherData"]["calls_recorded"], 5);

    // Device-to-device copies (@dup copies its input in three pieces),
    // and --trace-calls: only the first calls are recorded.
    let o = benchmark(
        cache.path(),
        &[
            so,
            "--function=dup",
            "--input=2x3xf32=1",
            "--warmup=1",
            "--iterations=4",
            "--trace-calls=2",
            &trace_flag,
        ],
        &[("TCC_ZERO_COPY", "0")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("trace of 2 calls (3 later calls not recorded"),
        "{}",
        stderr(&o)
    );
    let trace = read_trace(&path);
    let calls = by_call(&timed_events(&trace, "OpenCL queue"));
    assert_eq!(calls.len(), 2);
    for (_, commands) in calls.values() {
        assert_eq!(
            moved(commands, "copy"),
            [("copy", Some(12)), ("copy", Some(12)), ("copy", Some(24))]
        );
        assert_eq!(
            moved(commands, "download"),
            [("download", Some(24)), ("download", Some(24))]
        );
    }
}

#[test]
fn cuda_trace_from_the_fake_driver() {
    let dir = tempfile::tempdir().unwrap();
    let (driver, so) = fake_cuda_build(dir.path(), &[]);
    let cache = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    let trace_flag = format!("--trace={}", path.display());
    let driver_env = ("TCC_LIBCUDA", driver.to_str().unwrap());
    for graphs in ["1", "0"] {
        // With graphs on, the latencies come from graph replays and the
        // trace from the profiled session (one warm-up call at least).
        let o = benchmark(
            cache.path(),
            &[
                so.to_str().unwrap(),
                "--backend=cuda",
                "--function=axpb_arena",
                "--input=1000xf32=1",
                "--warmup=1",
                "--iterations=2",
                &trace_flag,
            ],
            &[driver_env, ("TCC_CUDA_GRAPHS", graphs)],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let trace = read_trace(&path);
        let timed = timed_events(&trace, "CUDA stream");
        let calls = by_call(&timed);
        assert_eq!(calls.len(), 3, "graphs {graphs}");
        for (index, ((start, end), commands)) in &calls {
            assert_eq!(kernels(commands), ["scale", "add"], "call {index}");
            assert_eq!(
                moved(commands, "download"),
                [("download", Some(AXPB_BYTES))]
            );
            // The fake stream runs each kernel for 0.25 ms, and the call
            // waits for them.
            for e in timed
                .iter()
                .filter(|e| e["cat"] == "kernel" && e["args"]["call"] == *index)
            {
                assert!((e["dur"].as_f64().unwrap() - 250.0).abs() < 1.0, "{e}");
            }
            assert!(end - start >= 500.0, "call {index}: {start}..{end}");
        }
        assert_eq!(
            moved(&calls[&0].1, "upload"),
            [
                ("upload", Some(AXPB_BYTES)),
                ("upload constant 0", Some(AXPB_BYTES))
            ]
        );
    }
    // Copies on the stream, timed by event pairs.
    let o = benchmark(
        cache.path(),
        &[
            so.to_str().unwrap(),
            "--backend=cuda",
            "--function=dup",
            "--input=2x3xf32=1",
            "--warmup=0",
            "--iterations=1",
            &trace_flag,
        ],
        &[driver_env, ("TCC_CUDA_GRAPHS", "0")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = by_call(&timed_events(&read_trace(&path), "CUDA stream"));
    assert_eq!(
        moved(&calls[&0].1, "copy"),
        [("copy", Some(12)), ("copy", Some(12)), ("copy", Some(24))]
    );
}

#[test]
fn trace_is_refused_where_it_records_nothing() {
    let (dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let trace_flag = format!("--trace={}", dir.path().join("t.json").display());
    let so = so.to_str().unwrap();
    let o = benchmark(
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--in-flight=2",
            &trace_flag,
        ],
        &[],
    );
    assert_fails_with(&o, "--trace records the synchronous measurement");
    let o = benchmark(
        cache.path(),
        &[
            so,
            "--function=axpb",
            "--input=1000xf32=1",
            "--trace-calls=0",
            &trace_flag,
        ],
        &[],
    );
    assert_fails_with(&o, "--trace-calls must be at least 1");
    assert!(!dir.path().join("t.json").exists());
}
