//! CUDA graphs of the CUDA backend, on the fake driver
//! (`fixtures/fake_libcuda.c`: device memory is host memory, kernels run
//! on the host, stream capture records launches, copies and memsets and
//! `cuGraphLaunch` replays them): a function's first call runs directly,
//! its second is recorded and replayed, later calls replay the graph on
//! new inputs; the arena, constants, temporaries and copies survive the
//! replay; graphs off, profiling on, or a driver that refuses capture run
//! every call directly, with the reason kept. The driver library is set
//! through `TCC_LIBCUDA` before the first use of the backend in this
//! test binary, which holds this one test.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use common::*;
use tcc_runtime::cuda::{CudaOptions, CudaRuntime};
use tcc_runtime::{HostTensor, Model};

const SCALE: &str = "scale grid 16 1 1 block 64 1 1 shared 0\n";
const ADD: &str = "add grid 16 1 1 block 64 1 1 shared 0\n";

fn input(call: usize) -> (Vec<f32>, HostTensor) {
    let x: Vec<f32> = ramp(1000).iter().map(|v| v + call as f32).collect();
    let t = HostTensor::from_f32(vec![1000], &x).unwrap();
    (x, t)
}

/// Runs `function` `calls` times on new inputs, checking each result.
fn calls(session: &mut tcc_runtime::cuda::CudaSession, function: &str, calls: usize) {
    for call in 0..calls {
        let (x, t) = input(call);
        let out = session.run(function, &[t]).unwrap();
        assert_eq!(
            out[0].to_f32().unwrap(),
            axpb_expected(&x),
            "@{function}, call {call}"
        );
    }
}

fn take_log(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let _ = std::fs::remove_file(path);
    text
}

#[test]
fn calls_replay_a_recorded_graph() {
    let dir = tempfile::tempdir().unwrap();
    let (driver, so) = fake_cuda_build(dir.path(), &[]);
    let log = dir.path().join("launches.log");
    // SAFETY: the only test of this binary sets the environment before
    // anything reads it (the driver is opened below).
    unsafe {
        std::env::set_var("TCC_LIBCUDA", &driver);
        std::env::set_var("FAKE_CUDA_LOG", &log);
        std::env::remove_var("FAKE_CUDA_REFUSE_CAPTURE");
    }
    let model = Model::load(&so).unwrap();
    let options = |profiling, graphs| CudaOptions { profiling, graphs };

    // Graphs on: call 1 direct, call 2 recorded and replayed, calls 3 and
    // 4 replayed; on new inputs each time, with a temporary and a
    // constant (axpb) or an arena view (axpb_arena).
    let rt = CudaRuntime::with_options(0, options(false, true)).unwrap();
    assert!(rt.graphs());
    let mut session = rt.session(&model).unwrap();
    let replay = format!("graph launch 2 ops\n{SCALE}{ADD}");
    for function in ["axpb", "axpb_arena"] {
        calls(&mut session, function, 4);
        assert_eq!(
            take_log(&log),
            format!(
                "{SCALE}{ADD}capture begin\ncapture end 2 ops\n{}",
                replay.repeat(3)
            ),
            "@{function}"
        );
    }
    // Copies are recorded too.
    let x = HostTensor::from_f32(vec![2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    for _ in 0..3 {
        let out = session.run("dup", std::slice::from_ref(&x)).unwrap();
        assert_eq!(out.len(), 2);
        for o in out {
            assert_eq!(o.to_f32().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        }
    }
    assert_eq!(
        take_log(&log),
        "capture begin\ncapture end 3 ops\ngraph launch 3 ops\ngraph launch 3 ops\n"
    );
    assert_eq!(session.graphs_recorded(), ["axpb", "axpb_arena", "dup"]);
    assert!(session.graph_notes().is_empty());
    drop(session);

    // Graphs off, and profiling on (its events cannot be read from a
    // replayed graph): every call launches its kernels directly.
    for (profiling, graphs) in [(false, false), (true, true)] {
        let rt = CudaRuntime::with_options(0, options(profiling, graphs)).unwrap();
        assert!(!rt.graphs());
        let mut session = rt.session(&model).unwrap();
        calls(&mut session, "axpb", 3);
        assert_eq!(take_log(&log), format!("{SCALE}{ADD}").repeat(3));
        assert!(session.graphs_recorded().is_empty());
    }

    // A driver that refuses the capture: the call runs directly, and so
    // do the later ones, with the reason kept.
    // SAFETY: as above; no other thread uses the environment.
    unsafe { std::env::set_var("FAKE_CUDA_REFUSE_CAPTURE", "1") };
    let rt = CudaRuntime::with_options(0, options(false, true)).unwrap();
    let mut session = rt.session(&model).unwrap();
    calls(&mut session, "axpb", 4);
    assert_eq!(take_log(&log), format!("{SCALE}{ADD}").repeat(4));
    let notes = session.graph_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].0, "axpb");
    assert!(notes[0].1.contains("cuStreamBeginCapture"), "{notes:?}");
}
