//! Calls on device memory (`CudaSession::run_device`), on the fake driver
//! (`fixtures/fake_libcuda.c`: device memory is host memory, kernels run
//! on the host and record their buffer arguments, memcpy calls are
//! counted): the caller's device pointer reaches the kernels as it is,
//! outputs come back as tcc-owned device allocations that chain into a
//! later call and outlive the session, and none of it copies through the
//! host; wrong dtypes, shapes, counts and NULL addresses are refused with
//! the input named. The driver library is set through `TCC_LIBCUDA`
//! before the first use of the backend in this binary, which holds this
//! one test.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use common::*;
use tcc_runtime::cuda::{CudaInput, CudaOptions, CudaRuntime, CudaTensor};
use tcc_runtime::{DType, HostTensor, Model};

/// The fake driver's counters, read through its exported functions (the
/// same library the runtime opened: `dlopen` of one path is one handle).
struct Fake {
    lib: libloading::Library,
}

impl Fake {
    fn copies(&self) -> (u32, u32) {
        let (mut htod, mut dtoh) = (0u32, 0u32);
        // SAFETY: the fixture exports `void fake_cuda_copies(unsigned *,
        // unsigned *)`.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(*mut u32, *mut u32)> =
                self.lib.get(b"fake_cuda_copies").unwrap();
            f(&mut htod, &mut dtoh);
        }
        (htod, dtoh)
    }

    fn live_allocations(&self) -> i32 {
        // SAFETY: the fixture exports `int fake_cuda_live_allocations(void)`.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn() -> i32> =
                self.lib.get(b"fake_cuda_live_allocations").unwrap();
            f()
        }
    }

    fn launched_pointers(&self) -> Vec<u64> {
        let mut out = vec![0u64; 256];
        // SAFETY: the fixture exports `int fake_cuda_launched_pointers(
        // unsigned long long *, int)` writing at most `max` entries.
        let n = unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(*mut u64, i32) -> i32> =
                self.lib.get(b"fake_cuda_launched_pointers").unwrap();
            f(out.as_mut_ptr(), 256)
        };
        out.truncate(n as usize);
        out
    }
}

#[test]
fn device_inputs_and_outputs_stay_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let (driver, so) = fake_cuda_build(dir.path(), &[]);
    // SAFETY: the only test of this binary sets the environment before
    // anything reads it (the driver is opened below).
    unsafe {
        std::env::set_var("TCC_LIBCUDA", &driver);
        std::env::remove_var("FAKE_CUDA_LOG");
    }
    let model = Model::load(&so).unwrap();
    let rt = CudaRuntime::with_options(
        0,
        CudaOptions {
            profiling: false,
            graphs: true,
        },
    )
    .unwrap();
    // SAFETY: the runtime has opened this library already.
    let fake = Fake {
        lib: unsafe { libloading::Library::new(&driver) }.unwrap(),
    };
    let mut session = rt.session(&model).unwrap();
    // A host call first: the constants are uploaded once, and the host
    // path's copies are counted.
    let x: Vec<f32> = ramp(1000);
    session
        .run("axpb", &[HostTensor::from_f32(vec![1000], &x).unwrap()])
        .unwrap();
    let (htod, dtoh) = fake.copies();
    assert!(
        htod >= 1 && dtoh == 1,
        "host path: {htod} uploads, {dtoh} downloads"
    );
    fake.launched_pointers();

    // The caller's tensor, uploaded once before the calls.
    let input = CudaTensor::upload(&rt, &HostTensor::from_f32(vec![1000], &x).unwrap()).unwrap();
    let mut before = fake.copies();
    for function in ["axpb", "axpb_arena"] {
        // Several calls: a function's first call runs the kernels on the
        // caller's memory; its next records the function's graph, and it
        // and the later ones replay it, on the graph's own memory, the
        // input and the output copied device to device (never through the
        // host). @axpb ran once already (the host call above).
        let mut graph_pointers = None;
        for call in 0..3 {
            let replay = function == "axpb" || call > 0;
            // SAFETY: `input` is live device memory of this context.
            let outputs = unsafe { session.run_device(function, &[input.as_input()]) }.unwrap();
            assert_eq!(outputs.len(), 1);
            let y = &outputs[0];
            assert_eq!((y.dtype(), y.shape()), (DType::F32, &[1000usize][..]));
            assert_eq!(y.device_ordinal(), 0);
            let pointers = fake.launched_pointers();
            // scale(x, t) then add(t, b, y).
            assert_eq!(pointers.len(), 5, "@{function} call {call}: {pointers:x?}");
            if !replay {
                // The caller's x and the returned y are the kernels' buffers.
                assert_eq!(pointers[0], input.ptr(), "@{function} call {call}");
                assert_eq!(pointers[4], y.ptr(), "@{function} call {call}");
            } else {
                assert_ne!(
                    pointers[0],
                    input.ptr(),
                    "@{function} call {call}: a replay"
                );
                assert_ne!(pointers[4], y.ptr(), "@{function} call {call}: a replay");
                let graph = (pointers[0], pointers[4]);
                assert_eq!(*graph_pointers.get_or_insert(graph), graph, "one graph");
            }
            assert_eq!(
                fake.copies(),
                before,
                "@{function} call {call}: a host copy"
            );
            let host = y.to_host().unwrap();
            assert_eq!(host.to_f32().unwrap(), axpb_expected(&x));
            // That download is the only copy.
            before.1 += 1;
            assert_eq!(fake.copies(), before);
        }
    }

    // An output chains into the next call without leaving the device (the
    // replayed graph copies it in), and outlives the session and its
    // runtime handle.
    let base = fake.copies();
    // SAFETY: as above.
    let y1 = unsafe { session.run_device("axpb", &[input.as_input()]) }.unwrap();
    // SAFETY: `y1` is live device memory of this context.
    let y2 = unsafe { session.run_device("axpb", &[y1[0].as_input()]) }.unwrap();
    assert_eq!(fake.copies(), base);
    drop(session);
    drop(rt);
    let once = axpb_expected(&x);
    assert_eq!(
        y2[0].to_host().unwrap().to_f32().unwrap(),
        axpb_expected(&once)
    );

    // A loop of calls on device memory, each taking the one before's
    // output and dropping it (a decoder's cache), allocates nothing after
    // its first step: a dropped tensor's memory serves the next tensor of
    // its size, and the runtime frees what it keeps on request.
    let rt = CudaRuntime::new(0, false).unwrap();
    let mut session = rt.session(&model).unwrap();
    let mut y = CudaTensor::upload(&rt, &HostTensor::from_f32(vec![1000], &x).unwrap()).unwrap();
    let mut expected = x.clone();
    let mut live = Vec::new();
    for _ in 0..6 {
        // SAFETY: `y` is live device memory of this context.
        let mut outputs = unsafe { session.run_device("axpb", &[y.as_input()]) }.unwrap();
        y = outputs.remove(0);
        expected = axpb_expected(&expected);
        live.push(fake.live_allocations());
    }
    assert_eq!(y.to_host().unwrap().to_f32().unwrap(), expected);
    assert!(
        live[1..].iter().all(|&n| n == live[1]),
        "live allocations per step: {live:?}"
    );
    let stats = rt.tensor_memory_stats();
    assert_eq!((stats.allocations, stats.reuse_hits), (2, 5), "{stats:?}");
    assert_eq!(stats.in_use_bytes, 4096, "{stats:?}");
    rt.release_cached_memory().unwrap();
    assert_eq!(
        fake.live_allocations(),
        live[5] - 1,
        "the one free block freed"
    );
    assert_eq!(rt.tensor_memory_stats().current_bytes, 4096);
    drop((y, session));

    // Downloads of 64 KiB and more go through the runtime's page-locked
    // block (kept, grown for a larger one): the same bytes, one copy each.
    for n in [20_000usize, 20_000, 300_000] {
        let values: Vec<f32> = ramp(n);
        let t = CudaTensor::upload(&rt, &HostTensor::from_f32(vec![n], &values).unwrap()).unwrap();
        let copies = fake.copies();
        assert_eq!(t.to_host().unwrap().to_f32().unwrap(), values, "{n} floats");
        assert_eq!(fake.copies(), (copies.0, copies.1 + 1), "one download");
    }

    // Bad inputs name the input, what it expects and what it got.
    let rt = CudaRuntime::new(0, false).unwrap();
    let mut session = rt.session(&model).unwrap();
    let bad = |session: &mut tcc_runtime::CudaSession, inputs: &[CudaInput]| {
        // SAFETY: every case is refused before a kernel reads memory.
        unsafe { session.run_device("axpb", inputs) }
            .unwrap_err()
            .to_string()
    };
    let f64_input = CudaInput {
        dtype: DType::F64,
        ..input.as_input()
    };
    assert_eq!(
        bad(&mut session, &[f64_input]),
        "input 0 of @axpb expects 1000xf32, got 1000xf64 from the caller"
    );
    let wrong_shape = CudaInput {
        shape: vec![10, 100],
        ..input.as_input()
    };
    assert!(bad(&mut session, &[wrong_shape]).contains("expects 1000xf32, got 10x100xf32"));
    assert!(bad(&mut session, &[]).contains("@axpb expects 1 input (1000xf32), got 0"));
    let null = CudaInput {
        ptr: 0,
        ..input.as_input()
    };
    assert_eq!(
        bad(&mut session, &[null]),
        "input 0 of @axpb: its device address is NULL"
    );
}
