//! One session's asynchronous calls on several compute queues of its own
//! (`Session::set_compute_queues`, issue 14) on the machine's OpenCL
//! device (PoCL here): outputs bit-identical to `Session::run` in every
//! host-tensor mode, arenas and writable all-zero constants (split-K's
//! counters) private to each queue, device tensors and synchronous calls
//! ordered against the queues, failures mid-call, handles outliving the
//! session, and no leaked buffers or handles.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use common::*;
use tcc_runtime::{ComputeQueues, HostIo, HostTensor, Model, RuntimeOptions, Session};

/// The ways host tensors reach the device (as in `async_calls.rs`).
fn modes() -> Vec<(&'static str, RuntimeOptions)> {
    let copy = |pinned, limit| RuntimeOptions {
        host_io: Some(HostIo::Copy),
        pinned_staging: Some(pinned),
        staging_limit: limit,
        ..Default::default()
    };
    vec![
        ("in place", RuntimeOptions::default()),
        ("pinned staging", copy(true, None)),
        ("tensors over the staging limit", copy(true, Some(0))),
        ("plain copies", copy(false, None)),
    ]
}

fn input(seed: usize) -> HostTensor {
    let x: Vec<f32> = ramp(1000)
        .iter()
        .map(|v| v * (seed as f32 + 1.5) - seed as f32 * 0.375)
        .collect();
    HostTensor::from_f32(vec![1000], &x).unwrap()
}

/// The functions the tests call in turn: a pool temporary and a constant,
/// an arena view, and the writable scratch constant.
const FUNCTIONS: [&str; 3] = ["axpb", "axpb_arena", "twice_via_scratch"];

fn model() -> (tempfile::TempDir, Model) {
    let (dir, so) = test_model(&["TCC_TEST_ARENA", "TCC_TEST_SCRATCH"]);
    let model = Model::load(&so).unwrap();
    (dir, model)
}

/// What `Session::run` returns for call `i` of the tests.
fn expected(session: &mut Session, n: usize) -> Vec<Vec<HostTensor>> {
    (0..n)
        .map(|i| session.run(FUNCTIONS[i % 3], &[input(i)]).unwrap())
        .collect()
}

#[test]
fn the_setting_resolves_per_device() {
    let (_dir, model) = model();
    for (mode, options) in modes() {
        let cache = tempfile::tempdir().unwrap();
        let rt = runtime_with(cache.path(), options);
        let mut s = rt.session(&model).unwrap();
        assert_eq!(s.compute_queues(), ComputeQueues::Auto);
        // Auto: one per call in flight where tensors are copied (a GPU),
        // the runtime's queue where the device's memory is the host's.
        let copies = rt.host_io() == HostIo::Copy;
        assert_eq!(
            s.compute_queue_count(),
            if copies { 4 } else { 0 },
            "{mode}"
        );
        s.set_max_in_flight(2);
        assert_eq!(
            s.compute_queue_count(),
            if copies { 2 } else { 0 },
            "{mode}"
        );
        s.set_compute_queues(ComputeQueues::Own(3)).unwrap();
        assert_eq!((s.compute_queue_count(), s.has_own_queue()), (3, true));
        s.set_compute_queues(ComputeQueues::Shared).unwrap();
        assert_eq!((s.compute_queue_count(), s.has_own_queue()), (0, false));
        s.set_own_queue(true).unwrap();
        assert_eq!(s.compute_queues(), ComputeQueues::Own(1));
        assert_eq!(s.compute_queues_created(), 0, "created on use only");
    }
    let parse = |t| ComputeQueues::parse(t).map_err(|e| e.to_string());
    assert_eq!(parse("auto"), Ok(ComputeQueues::Auto));
    assert_eq!(parse("shared"), Ok(ComputeQueues::Shared));
    assert_eq!(parse("4"), Ok(ComputeQueues::Own(4)));
    assert_eq!(
        parse("-1"),
        Err("compute queues must be auto, shared or a count of at least 1, got `-1`".into())
    );
}

/// Runs `body` once per mode with a fresh runtime and session, then
/// checks that nothing leaked: no handle, pool buffer or staging buffer.
fn in_every_mode(mut body: impl FnMut(&str, &tcc_runtime::Runtime, Session)) {
    let (_dir, model) = model();
    for (mode, options) in modes() {
        let cache = tempfile::tempdir().unwrap();
        let rt = runtime_with(cache.path(), options);
        let before = rt.pool_stats();
        body(mode, &rt, rt.session(&model).unwrap());
        assert_eq!(rt.live_call_handles(), 0, "{mode}");
        assert_eq!(rt.pool_stats().in_use_bytes, before.in_use_bytes, "{mode}");
        assert_eq!(rt.staging_stats().in_use, 0, "{mode}");
    }
}

#[test]
fn several_queues_match_run_bit_for_bit_in_every_mode() {
    in_every_mode(|mode, _rt, mut session| {
        let want = expected(&mut session, 24);
        for queues in [1, 2, 4] {
            session.set_max_in_flight(4);
            session
                .set_compute_queues(ComputeQueues::Own(queues))
                .unwrap();
            // Everything submitted before any wait, the three functions in
            // turn; a synchronous call and a device-tensor chain between.
            let mut handles = Vec::new();
            for (i, w) in want.iter().enumerate() {
                let f = FUNCTIONS[i % 3];
                let h = if i % 2 == 0 {
                    session.submit(f, vec![input(i)]).unwrap()
                } else {
                    session.submit_ref(f, &[input(i)]).unwrap()
                };
                handles.push((h, w));
                if i == 10 {
                    assert_eq!(
                        &session.run("twice_via_scratch", &[input(2)]).unwrap(),
                        &want[2]
                    );
                    let d = session.upload(&input(1)).unwrap();
                    let y = session.run_device("axpb_arena", &[&d]).unwrap();
                    assert_eq!(session.download(&y[0]).unwrap(), want[1][0]);
                }
            }
            for (i, (h, w)) in handles.iter_mut().enumerate() {
                let got = h.wait().unwrap();
                assert_eq!(
                    &got, *w,
                    "{mode}, {queues} queues, call {i}: not bit-identical"
                );
            }
            let made = session.compute_queues_created();
            assert!((1..=4).contains(&made), "{mode}: {made} queues");
        }
    });
}

#[test]
fn each_queue_has_its_own_scratch_and_arena() {
    // Many calls through the writable scratch at once, each with other
    // inputs: sharing the scratch (or the arena) between queues whose
    // kernels overlap would mix them.
    let (_dir, model) = model();
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let mut session = rt.session(&model).unwrap();
    session.set_max_in_flight(8);
    session.set_compute_queues(ComputeQueues::Own(8)).unwrap();
    for round in 0..4 {
        let mut handles: Vec<_> = (0..32)
            .map(|i| {
                let f = if i % 2 == 0 {
                    "twice_via_scratch"
                } else {
                    "axpb_arena"
                };
                (i, f, session.submit(f, vec![input(i + round)]).unwrap())
            })
            .collect();
        for (i, f, h) in &mut handles {
            let x = input(*i + round).to_f32().unwrap();
            let want: Vec<f32> = if *f == "twice_via_scratch" {
                x.iter().map(|v| 2.0 * v).collect()
            } else {
                axpb_expected(&x)
            };
            assert_eq!(
                h.wait().unwrap()[0].to_f32().unwrap(),
                want,
                "round {round}, call {i}"
            );
        }
    }
    // The scratch each queue used is back at zero for synchronous calls.
    let x = input(5);
    let y = session
        .run("twice_via_scratch", std::slice::from_ref(&x))
        .unwrap();
    let doubled: Vec<f32> = x.to_f32().unwrap().iter().map(|v| 2.0 * v).collect();
    assert_eq!(y[0].to_f32().unwrap(), doubled);
}

#[test]
fn failures_and_late_handles_on_several_queues_leak_nothing() {
    in_every_mode(|mode, rt, mut session| {
        let want = expected(&mut session, 6);
        session.set_compute_queues(ComputeQueues::Own(3)).unwrap();
        let mut first: Vec<_> = (0..3)
            .map(|i| session.submit(FUNCTIONS[i], vec![input(i)]).unwrap())
            .collect();
        // A launch fails half-way through a call on one of the queues: that
        // call errs, the calls around it do not.
        rt.inject_fault(tcc_runtime::Fault::Launch, 1);
        let e = session.submit("axpb_arena", vec![input(1)]).unwrap_err();
        assert!(e.to_string().contains("injected fault"), "{mode}: {e}");
        rt.inject_fault(tcc_runtime::Fault::Alloc, 1);
        assert!(session.submit("axpb", vec![input(0)]).is_err(), "{mode}");
        let mut next: Vec<_> = (3..6)
            .map(|i| session.submit(FUNCTIONS[i % 3], vec![input(i)]).unwrap())
            .collect();
        for (i, h) in first.iter_mut().enumerate() {
            assert_eq!(h.wait().unwrap(), want[i], "{mode}, call {i}");
        }
        // Waited twice; dropped unwaited; waited after the session is gone.
        assert!(first[0].wait().is_err());
        drop(session.submit("twice_via_scratch", vec![input(4)]).unwrap());
        drop(session);
        for (i, h) in next.iter_mut().enumerate() {
            assert_eq!(h.wait().unwrap(), want[i + 3], "{mode}, late call {i}");
        }
        drop((first, next));
    });
}
