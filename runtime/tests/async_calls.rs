//! Asynchronous calls (`Session::submit`, issue 14) on the machine's
//! OpenCL device (PoCL in CI): outputs bit-identical to `Session::run` in
//! every host-tensor mode (in place, copies through pinned staging, large
//! tensors straight past the staging, plain copies), the in-flight depth, handles waited twice, dropped unwaited or
//! outliving their session, failures mid-call, and no leaked buffers or
//! handles.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use common::*;
use tcc_runtime::{HostIo, HostTensor, Model, Runtime, RuntimeOptions, Session};

/// The ways host tensors reach the device.
fn modes() -> Vec<(&'static str, RuntimeOptions)> {
    vec![
        ("in place", RuntimeOptions::default()),
        (
            "pinned staging",
            RuntimeOptions {
                host_io: Some(HostIo::Copy),
                pinned_staging: Some(true),
                ..Default::default()
            },
        ),
        (
            // Every tensor over the staging limit: owned inputs uploaded
            // and outputs read straight, borrowed inputs written before
            // `submit_ref` returns; nothing staged.
            "pinned staging, tensors over the limit direct",
            RuntimeOptions {
                host_io: Some(HostIo::Copy),
                pinned_staging: Some(true),
                staging_limit: Some(0),
                ..Default::default()
            },
        ),
        (
            "plain copies",
            RuntimeOptions {
                host_io: Some(HostIo::Copy),
                pinned_staging: Some(false),
                ..Default::default()
            },
        ),
    ]
}

fn input(seed: usize) -> HostTensor {
    let x: Vec<f32> = ramp(1000)
        .iter()
        .map(|v| v * (seed as f32 + 1.0) + seed as f32 * 0.125)
        .collect();
    HostTensor::from_f32(vec![1000], &x).unwrap()
}

/// `n` inputs of @axpb and what `Session::run` returns for each.
fn inputs_and_runs(session: &mut Session, n: usize) -> (Vec<HostTensor>, Vec<Vec<HostTensor>>) {
    let inputs: Vec<HostTensor> = (0..n).map(input).collect();
    let expected = inputs
        .iter()
        .map(|x| session.run("axpb", std::slice::from_ref(x)).unwrap())
        .collect();
    (inputs, expected)
}

#[test]
fn submitted_calls_match_run_bit_for_bit_in_every_mode() {
    let (_dir, so) = test_model(&[]);
    let model = Model::load(&so).unwrap();
    for (mode, options) in modes() {
        let cache = tempfile::tempdir().unwrap();
        let rt = runtime_with(cache.path(), options);
        let mut session = rt.session(&model).unwrap();
        let (inputs, expected) = inputs_and_runs(&mut session, 8);
        session.set_max_in_flight(3);
        // All eight submitted before any wait: the depth makes `submit`
        // wait for device work, never for a handle.
        let mut handles = Vec::new();
        for (i, x) in inputs.iter().enumerate() {
            let h = if i % 2 == 0 {
                session.submit("axpb", vec![x.clone()]).unwrap()
            } else {
                session.submit_ref("axpb", std::slice::from_ref(x)).unwrap()
            };
            handles.push(h);
        }
        assert_eq!(rt.live_call_handles(), 8, "{mode}");
        for (h, want) in handles.iter_mut().zip(&expected) {
            let got = h.wait().unwrap();
            assert_eq!(got[0].bytes, want[0].bytes, "{mode}: not bit-identical");
            assert_eq!(got[0].shape, vec![1000]);
        }
        // Two outputs (device copies) and integer kernels too.
        let x = HostTensor::parse_literal("2x3xf32=1,2,3,4,5,6").unwrap();
        let got = session
            .submit("dup", vec![x.clone()])
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(got, vec![x.clone(), x], "{mode}");
        let k = HostTensor::from_i32(vec![4], &[1, -2, 3, 400]).unwrap();
        let got = session.submit("addk", vec![k]).unwrap().wait().unwrap();
        assert_eq!(got[0].to_i32().unwrap(), vec![11, 8, 13, 410], "{mode}");
        drop(handles);
        assert_eq!(rt.live_call_handles(), 0, "{mode}");
        let t = rt.transfer_stats();
        match mode {
            "in place" => assert_eq!(t.bytes_to_host, 0, "{mode}: {t:?}"),
            "pinned staging" => {
                let s = rt.staging_stats();
                assert!(s.allocations > 0 && s.in_use == 0, "{s:?}");
            }
            "pinned staging, tensors over the limit direct" => {
                // Owned and borrowed inputs and every output went
                // straight: no staging buffer was taken.
                let s = rt.staging_stats();
                assert_eq!(s.allocations + s.reuse_hits, 0, "{s:?}");
                assert!(t.bytes_to_device > 0 && t.bytes_to_host > 0, "{t:?}");
            }
            _ => assert_eq!(rt.staging_stats().allocations, 0),
        }
    }
}

#[test]
fn handles_waited_twice_dropped_unwaited_or_outliving_the_session() {
    let (_dir, so) = test_model(&[]);
    let model = Model::load(&so).unwrap();
    for (mode, options) in modes() {
        let cache = tempfile::tempdir().unwrap();
        let rt = runtime_with(cache.path(), options);
        let before = rt.pool_stats();
        let mut session = rt.session(&model).unwrap();
        let want = session.run("axpb", &[input(1)]).unwrap();

        // Waited twice: the second is an error that says why.
        let mut h = session.submit("axpb", vec![input(1)]).unwrap();
        assert_eq!(h.wait().unwrap(), want);
        assert!(h.is_waited() && !h.is_ready());
        let e = h.wait().unwrap_err().to_string();
        assert_eq!(
            e, "the call of @axpb was already waited for; a handle's outputs are returned once",
            "{mode}"
        );
        drop(h);

        // Dropped unwaited: the drop waits for the device, nothing leaks.
        for i in 0..5 {
            drop(session.submit("axpb", vec![input(i)]).unwrap());
        }
        // Used after the session is gone: the outputs are still there.
        let mut late: Vec<_> = (0..3)
            .map(|_| session.submit("axpb", vec![input(1)]).unwrap())
            .collect();
        drop(session);
        for h in &mut late {
            assert_eq!(h.wait().unwrap(), want, "{mode}");
        }
        drop(late);
        assert_eq!(rt.live_call_handles(), 0, "{mode}");
        let after = rt.pool_stats();
        assert_eq!(after.in_use_bytes, before.in_use_bytes, "{mode}: {after:?}");
        assert_eq!(rt.staging_stats().in_use, 0, "{mode}");
    }
}

#[test]
fn the_depth_bounds_the_calls_in_flight() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();
    assert_eq!(session.max_in_flight(), 4);
    session.set_max_in_flight(0);
    assert_eq!(session.max_in_flight(), 1, "at least one");
    session.set_max_in_flight(2);
    let mut handles = Vec::new();
    for i in 0..6 {
        handles.push(session.submit("axpb", vec![input(i)]).unwrap());
        assert!(session.calls_running() <= 2);
    }
    for (i, h) in handles.iter_mut().enumerate() {
        assert_eq!(
            h.wait().unwrap()[0].to_f32().unwrap(),
            axpb_expected(&input(i).to_f32().unwrap())
        );
    }
    assert_eq!(session.calls_running(), 0);
}

#[test]
fn a_call_failing_mid_way_errors_alone_and_leaks_nothing() {
    let (_dir, so) = test_model(&[]);
    let model = Model::load(&so).unwrap();
    for (mode, options) in modes() {
        let cache = tempfile::tempdir().unwrap();
        let rt = runtime_with(cache.path(), options);
        let before = rt.pool_stats();
        let mut session = rt.session(&model).unwrap();
        let want = session.run("axpb", &[input(2)]).unwrap();
        // Calls in flight on both sides of the failing one.
        let mut first = session.submit("axpb", vec![input(2)]).unwrap();
        // The second launch of the next call fails, after its upload and
        // first kernel were enqueued.
        rt.inject_fault(tcc_runtime::Fault::Launch, 1);
        let e = session
            .submit("axpb", vec![input(2)])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("@axpb failed: runtime call launch() failed")
                && e.contains("injected fault"),
            "{mode}: {e}"
        );
        rt.inject_fault(tcc_runtime::Fault::Alloc, 1);
        let e = session
            .submit("axpb", vec![input(2)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of device memory"), "{mode}: {e}");
        let mut last = session.submit("axpb", vec![input(2)]).unwrap();
        assert_eq!(first.wait().unwrap(), want, "{mode}");
        assert_eq!(last.wait().unwrap(), want, "{mode}");
        // Bad input is refused before anything runs.
        let e = session
            .submit(
                "axpb",
                vec![HostTensor::from_f32(vec![3], &[1., 2., 3.]).unwrap()],
            )
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "input 0 of @axpb expects 1000xf32, got 3xf32 from the caller"
        );
        assert!(session.submit("nope", vec![]).is_err());
        assert!(session.submit("axpb", vec![]).is_err());
        drop((first, last, session));
        assert_eq!(rt.live_call_handles(), 0);
        assert_eq!(rt.pool_stats().in_use_bytes, before.in_use_bytes, "{mode}");
        assert_eq!(rt.staging_stats().in_use, 0, "{mode}");
    }
}

#[test]
fn device_tensors_still_chain_between_async_calls() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime_with(
        cache.path(),
        RuntimeOptions {
            host_io: Some(HostIo::Copy),
            ..Default::default()
        },
    );
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();
    let x = input(3);
    let mut a = session.submit("axpb", vec![x.clone()]).unwrap();
    let dx = session.upload(&x).unwrap();
    let y = session.run_device("axpb", &[&dx]).unwrap();
    drop(dx); // back to the pool while the kernels may still read it
    let mut b = session.submit("axpb", vec![x.clone()]).unwrap();
    let z = session.run_device("axpb", &[&y[0]]).unwrap();
    let z = session.download(&z[0]).unwrap().to_f32().unwrap();
    let once = axpb_expected(&x.to_f32().unwrap());
    assert_eq!(z, axpb_expected(&once));
    assert_eq!(a.wait().unwrap()[0].to_f32().unwrap(), once);
    assert_eq!(b.wait().unwrap()[0].to_f32().unwrap(), once);
}

#[test]
fn threads_with_a_session_each_pipeline_on_one_runtime() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime_with(
        cache.path(),
        RuntimeOptions {
            host_io: Some(HostIo::Copy),
            ..Default::default()
        },
    );
    let model = Model::load(&so).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let rt: Runtime = rt.clone();
            let model = model.clone();
            std::thread::spawn(move || {
                let mut session: Session = rt.session(&model).unwrap();
                let mut handles = std::collections::VecDeque::new();
                for i in 0..12 {
                    handles.push_back((i, session.submit("axpb", vec![input(t + i)]).unwrap()));
                    if handles.len() == 3 {
                        let (j, mut h) = handles.pop_front().unwrap();
                        let got = h.wait().unwrap()[0].to_f32().unwrap();
                        assert_eq!(got, axpb_expected(&input(t + j).to_f32().unwrap()));
                    }
                }
                for (j, mut h) in handles {
                    let got = h.wait().unwrap()[0].to_f32().unwrap();
                    assert_eq!(got, axpb_expected(&input(t + j).to_f32().unwrap()));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(rt.live_call_handles(), 0);
    assert_eq!(rt.pool_stats().in_use_bytes, 0);
}

#[test]
fn sessions_with_their_own_queues_match_run_and_leak_nothing() {
    let (_dir, so) = test_model(&["TCC_TEST_ARENA"]);
    let model = Model::load(&so).unwrap();
    for (mode, options) in modes() {
        let cache = tempfile::tempdir().unwrap();
        let rt = runtime_with(cache.path(), options);
        let before = rt.pool_stats();
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let (rt, model) = (rt.clone(), model.clone());
                std::thread::spawn(move || {
                    let mut session = rt.session(&model).unwrap();
                    let want: Vec<_> = (0..6)
                        .map(|i| session.run("axpb", &[input(t + i)]).unwrap())
                        .collect();
                    session.set_own_queue(true).unwrap();
                    assert!(session.has_own_queue());
                    let mut handles = Vec::new();
                    for i in 0..6 {
                        let f = if i % 2 == 0 { "axpb" } else { "axpb_arena" };
                        handles.push(session.submit(f, vec![input(t + i)]).unwrap());
                        if i == 3 {
                            // Synchronous and device calls in between use
                            // the runtime's queue after the own queue's work.
                            assert_eq!(session.run("axpb_arena", &[input(t)]).unwrap(), want[0]);
                            let d = session.upload(&input(t + 1)).unwrap();
                            let y = session.run_device("axpb", &[&d]).unwrap();
                            assert_eq!(session.download(&y[0]).unwrap(), want[1][0]);
                        }
                    }
                    for (h, w) in handles.iter_mut().zip(&want) {
                        assert_eq!(&h.wait().unwrap(), w, "thread {t}");
                    }
                    session.set_own_queue(false).unwrap();
                    assert_eq!(
                        session
                            .submit("axpb", vec![input(t)])
                            .unwrap()
                            .wait()
                            .unwrap(),
                        want[0]
                    );
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // A failure on an own queue, mid-call.
        let mut session = rt.session(&model).unwrap();
        session.set_own_queue(true).unwrap();
        let mut ok = session.submit("axpb", vec![input(1)]).unwrap();
        rt.inject_fault(tcc_runtime::Fault::Launch, 1);
        assert!(session.submit("axpb", vec![input(1)]).is_err(), "{mode}");
        assert_eq!(
            ok.wait().unwrap()[0].to_f32().unwrap(),
            axpb_expected(&input(1).to_f32().unwrap())
        );
        drop((ok, session));
        assert_eq!(rt.live_call_handles(), 0, "{mode}");
        assert_eq!(rt.pool_stats().in_use_bytes, before.in_use_bytes, "{mode}");
    }
}

#[test]
fn recycled_outputs_and_split_views_match_run_in_every_mode() {
    // Asynchronous calls write into output blocks handed back from earlier
    // calls (`Session::recycle`), and a split call uploads each part from
    // a view of the caller's batch (parts at offsets of 4000 bytes: not
    // aligned for use in place after the first); both bit-identical to
    // `run`, leaking nothing.
    in_every_mode(|mode, rt, model| {
        let before = rt.pool_stats();
        let mut session = rt.session(model).unwrap();
        let (inputs, expected) = inputs_and_runs(&mut session, 4);
        for round in 0..3 {
            let mut handles: Vec<_> = inputs
                .iter()
                .map(|x| session.submit_ref("axpb", std::slice::from_ref(x)).unwrap())
                .collect();
            for (h, want) in handles.iter_mut().zip(&expected) {
                let got = h.wait().unwrap();
                assert_eq!(got, *want, "{mode}, round {round}");
                session.recycle(got);
            }
        }
        drop(session);
        let group = tcc_runtime::DeviceGroup::from_runtimes(vec![rt.clone()]).unwrap();
        let mut gs = group.session(model).unwrap();
        let batch: Vec<f32> = inputs.iter().flat_map(|t| t.to_f32().unwrap()).collect();
        let batch = HostTensor::from_f32(vec![4000], &batch).unwrap();
        let want: Vec<u8> = expected.iter().flat_map(|o| o[0].bytes.to_vec()).collect();
        for round in 0..2 {
            let got = gs.run_split("axpb", std::slice::from_ref(&batch)).unwrap();
            assert_eq!(got[0].shape, vec![4000]);
            assert_eq!(got[0].bytes.to_vec(), want, "{mode}: split, round {round}");
            let parts = gs.last_split_submissions();
            assert_eq!(parts.len(), 4, "{mode}");
            assert!(
                parts.windows(2).all(|w| w[0].1 <= w[1].0),
                "{mode}: {parts:?}"
            );
        }
        drop(gs);
        assert_eq!(rt.live_call_handles(), 0, "{mode}");
        assert_eq!(rt.pool_stats().in_use_bytes, before.in_use_bytes, "{mode}");
        assert_eq!(rt.staging_stats().in_use, 0, "{mode}");
    });
}

/// Runs `body` once per mode ([`modes`]) with a fresh runtime (its own
/// cache) and the test model.
fn in_every_mode(mut body: impl FnMut(&str, &Runtime, &Model)) {
    let (_dir, so) = test_model(&[]);
    let model = Model::load(&so).unwrap();
    for (mode, options) in modes() {
        let cache = tempfile::tempdir().unwrap();
        let rt = runtime_with(cache.path(), options);
        body(mode, &rt, &model);
    }
}
