//! The runtime's Rust API on a hand-written C artifact (tests/fixtures/
//! test_model.c), on the machine's OpenCL device (PoCL in CI).

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use common::*;
use tcc_runtime::host_bytes::HOST_ALIGN;
use tcc_runtime::{
    DType, DeviceKind, Error, HostIo, HostTensor, Model, ProgramOrigin, RuntimeOptions,
    TransferStats, abi,
};

#[test]
fn abi_layout_matches_the_c_header() {
    let dir = tempfile::tempdir().unwrap();
    let so = compile_c("layout_probe.c", dir.path(), "probe.so", &[]);
    let rust = abi::layout_table();
    // SAFETY: the probe exports exactly this function.
    let c: Vec<u64> = unsafe {
        let lib = libloading::Library::new(&so).unwrap();
        let probe: libloading::Symbol<unsafe extern "C" fn(*mut u32) -> *const u64> =
            lib.get(b"tcc_layout_probe").unwrap();
        let mut n = 0u32;
        let p = probe(&mut n);
        std::slice::from_raw_parts(p, n as usize).to_vec()
    };
    assert_eq!(
        c.len(),
        rust.len(),
        "field count differs between C and Rust"
    );
    for ((ty, field, off), c_off) in rust.iter().zip(&c) {
        assert_eq!(*off as u64, *c_off, "{ty}.{field}: Rust {off}, C {c_off}");
    }
}

#[test]
fn axpb_computes_and_the_pool_reuses_buffers() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    // Copies, as on a GPU: every input and output goes through the pool.
    let rt = runtime_with(
        cache.path(),
        RuntimeOptions {
            host_io: Some(HostIo::Copy),
            ..Default::default()
        },
    );
    let model = Model::load(&so).unwrap();
    assert_eq!(model.producer(), "tcc-runtime test fixture");
    assert_eq!(model.kernel_names(), ["scale", "add", "add_i64"]);
    let f = model.function("axpb").unwrap();
    assert_eq!(f.signature(), "@axpb(x: 1000xf32) -> (y: 1000xf32)");

    let mut session = rt.session(&model).unwrap();
    let x = ramp(1000);
    let out = session
        .run("axpb", &[HostTensor::from_f32(vec![1000], &x).unwrap()])
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].shape, vec![1000]);
    assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));

    // input + output + temporary + constant, all 4000 B → the 4096 B class.
    let first = rt.pool_stats();
    assert_eq!(first.allocations, 4, "{first:?}");
    assert_eq!(
        first.in_use_bytes, 4096,
        "only the constant stays in use: {first:?}"
    );
    for _ in 0..3 {
        let out = session
            .run("axpb", &[HostTensor::from_f32(vec![1000], &x).unwrap()])
            .unwrap();
        assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
    }
    let later = rt.pool_stats();
    assert_eq!(
        later.allocations, 4,
        "no new driver allocations on later calls: {later:?}"
    );
    assert_eq!(later.reuse_hits, first.reuse_hits + 9, "{later:?}");
    assert_eq!(later.peak_in_use_bytes, 4 * 4096);
    drop(session);
    assert_eq!(
        rt.pool_stats().in_use_bytes,
        0,
        "the session returns its constant"
    );
}

/// A host tensor whose bytes the runtime allocated (aligned), holding `x`.
fn aligned_f32(x: &[f32]) -> HostTensor {
    let mut t = HostTensor::zeros(DType::F32, vec![x.len()]).unwrap();
    for (dst, v) in t.bytes.chunks_exact_mut(4).zip(x) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    t
}

#[test]
fn on_pocl_the_cache_entry_is_written_after_the_first_calls() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let entries = |rt: &tcc_runtime::Runtime| {
        rt.cache_entries_dir()
            .and_then(|d| std::fs::read_dir(d).ok())
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "bin"))
                    .count()
            })
            .unwrap_or(0)
    };
    let mut session = rt.session(&model).unwrap();
    // Deferred: the first call does not wait for the entry's compile.
    assert_eq!(rt.pending_cache_writes(), 1);
    assert_eq!(entries(&rt), 0);
    let x = ramp(1000);
    let out = session.run("axpb", &[aligned_f32(&x)]).unwrap();
    assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
    rt.wait_for_cache_writes();
    assert_eq!(rt.pending_cache_writes(), 0);
    assert_eq!(entries(&rt), 1);
    assert_eq!(rt.cache_stats().disk_writes, 1);
    // A second runtime loads it.
    let again = runtime(cache.path(), false);
    let reloaded = again.session(&model).unwrap();
    assert_eq!(reloaded.program_origin(), Some(ProgramOrigin::DiskHit));
    assert_eq!(again.pending_cache_writes(), 0);
}

#[test]
fn recycled_outputs_are_written_again_by_later_calls() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();
    let x = ramp(1000);
    let input = aligned_f32(&x);
    let first = session.run("axpb", std::slice::from_ref(&input)).unwrap();
    assert_eq!(first[0].to_f32().unwrap(), axpb_expected(&x));
    let block = first[0].bytes.as_ptr();
    session.recycle(first);
    // The next call writes its result into the handed-back block, fully:
    // different inputs give the right outputs, not stale ones.
    let y: Vec<f32> = x.iter().map(|v| v * -3.0 + 1.0).collect();
    let second = session.run("axpb", &[aligned_f32(&y)]).unwrap();
    assert_eq!(
        second[0].bytes.as_ptr(),
        block,
        "the recycled block is reused"
    );
    assert_eq!(second[0].to_f32().unwrap(), axpb_expected(&y));
    // Without recycling, a call gets memory of its own.
    let third = session.run("axpb", std::slice::from_ref(&input)).unwrap();
    assert_ne!(third[0].bytes.as_ptr(), second[0].bytes.as_ptr());
    assert_eq!(third[0].to_f32().unwrap(), axpb_expected(&x));
}

#[test]
fn a_cpu_device_uses_host_tensors_in_place_and_copies_nothing() {
    // Even a page-aligned constant is copied: constants may be written.
    let (_dir, so) = test_model(&["TCC_TEST_ALIGNED_CONSTANT"]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    assert_eq!(rt.device().kind, DeviceKind::Cpu, "the tests run on PoCL");
    assert_eq!(rt.host_io(), HostIo::InPlace);
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();
    let x = ramp(1000);
    let input = aligned_f32(&x);
    let kept = input.clone();
    for call in 1..=3u64 {
        let out = session.run("axpb", std::slice::from_ref(&input)).unwrap();
        assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
        assert!(out[0].bytes.is_aligned_to(HOST_ALIGN));
        let t = rt.transfer_stats();
        assert_eq!(
            t,
            TransferStats {
                // The constant, copied once (constants may be written).
                bytes_to_device: 4000,
                bytes_to_host: 0,
                inputs_in_place: call,
                outputs_in_place: call,
            },
            "after call {call}"
        );
    }
    assert_eq!(input, kept, "the input is read in place, never written");
    // An output fed back as the next input stays in place too.
    let y = session.run("axpb", std::slice::from_ref(&input)).unwrap();
    let z = session.run("axpb", &y).unwrap();
    assert_eq!(z[0].to_f32().unwrap(), axpb_expected(&axpb_expected(&x)));
    assert_eq!(rt.transfer_stats().bytes_to_device, 4000);
    // Device tensors still work beside it (upload and download copy).
    let dx = session.upload(&input).unwrap();
    let dy = session.run_device("axpb", &[&dx]).unwrap();
    assert_eq!(
        session.download(&dy[0]).unwrap().to_f32().unwrap(),
        axpb_expected(&x)
    );
    let t = rt.transfer_stats();
    assert_eq!((t.bytes_to_device, t.bytes_to_host), (8000, 4000), "{t:?}");
    drop((dx, dy));
    drop(session);
    assert_eq!(rt.pool_stats().in_use_bytes, 0, "{:?}", rt.pool_stats());
}

#[test]
fn the_copy_path_copies_inputs_outputs_and_constants() {
    let (_dir, so) = test_model(&["TCC_TEST_ALIGNED_CONSTANT"]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime_with(
        cache.path(),
        RuntimeOptions {
            host_io: Some(HostIo::Copy),
            ..Default::default()
        },
    );
    assert_eq!(rt.host_io(), HostIo::Copy);
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();
    let x = ramp(1000);
    let input = aligned_f32(&x);
    for _ in 0..2 {
        let out = session.run("axpb", std::slice::from_ref(&input)).unwrap();
        assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
    }
    let t = rt.transfer_stats();
    assert_eq!(
        t,
        TransferStats {
            // Two inputs and the constant once.
            bytes_to_device: 3 * 4000,
            bytes_to_host: 2 * 4000,
            inputs_in_place: 0,
            outputs_in_place: 0,
        }
    );
}

#[test]
fn copies_i64_scalars_and_driver_chosen_local_size() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();

    let x = HostTensor::parse_literal("2x3xf32=1,2,3,4,5,6").unwrap();
    let out = session.run("dup", std::slice::from_ref(&x)).unwrap();
    assert_eq!(out, vec![x.clone(), x]);

    let k = HostTensor::from_i32(vec![4], &[1, -2, 3, 400]).unwrap();
    let out = session.run("@addk", &[k]).unwrap();
    assert_eq!(out[0].to_i32().unwrap(), vec![11, 8, 13, 410]);
}

#[test]
fn device_tensors_run_without_host_round_trips() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();
    let x = ramp(1000);
    let dx = session
        .upload(&HostTensor::from_f32(vec![1000], &x).unwrap())
        .unwrap();
    assert_eq!(dx.type_string(), "1000xf32");
    let y = session.run_device("axpb", &[&dx]).unwrap();
    // Chain: feed the device output back in without touching the host.
    let z = session.run_device("axpb", &[&y[0]]).unwrap();
    let z = session.download(&z[0]).unwrap().to_f32().unwrap();
    assert_eq!(z, axpb_expected(&axpb_expected(&x)));

    let wrong = session.alloc(DType::F32, vec![10]).unwrap();
    let e = session
        .run_device("axpb", &[&wrong])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "input 0 of @axpb expects 1000xf32, got 10xf32 from the caller"
    );
}

#[test]
fn oversized_allocations_are_a_clear_error() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let session = rt.session(&Model::load(&so).unwrap()).unwrap();
    let too_big = rt.device().max_alloc_bytes as usize / 4 + 1;
    let e = session.alloc(DType::F32, vec![too_big]).unwrap_err();
    assert!(matches!(e, Error::OutOfDeviceMemory(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("exceeds the device's largest allocation"),
        "{e}"
    );
    assert_eq!(rt.pool_stats().allocations, 0);
}

#[test]
fn input_errors_are_precise() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let mut s = rt.session(&model).unwrap();

    let short = HostTensor::from_f32(vec![500], &[0.0; 500]).unwrap();
    let e = s
        .run_with_sources("axpb", &[short], &["x.npy"])
        .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
    assert_eq!(
        e.to_string(),
        "input 0 of @axpb expects 1000xf32, got 500xf32 from x.npy"
    );

    let ints = HostTensor::zeros(DType::I32, vec![1000]).unwrap();
    let e = s.run("axpb", &[ints]).unwrap_err().to_string();
    assert_eq!(
        e,
        "input 0 of @axpb expects 1000xf32, got 1000xi32 from the caller"
    );

    let e = s.run("axpb", &[]).unwrap_err().to_string();
    assert_eq!(e, "@axpb expects 1 input (1000xf32), got 0");

    let e = s.run("mlp", &[]).unwrap_err().to_string();
    assert!(e.starts_with("no function @mlp in "), "{e}");
    assert!(
        e.ends_with("available functions: @axpb, @dup, @addk, @bad_kernel_index, @bad_release"),
        "{e}"
    );
}

#[test]
fn misbehaving_host_code_is_reported_and_the_session_survives() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let mut s = rt.session(&model).unwrap();
    let k = HostTensor::from_i32(vec![4], &[1, 2, 3, 4]).unwrap();

    let e = s
        .run("bad_kernel_index", std::slice::from_ref(&k))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "@bad_kernel_index failed: runtime call launch() failed: kernel index 42 out of range (the artifact has 3 kernels)"
    );
    let e = s
        .run("bad_release", std::slice::from_ref(&k))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("@bad_release failed: runtime call release() failed: buffer 0x"),
        "{e}"
    );
    assert!(
        e.ends_with("is input 0; only buffers from alloc() may be released"),
        "{e}"
    );

    let out = s.run("addk", &[k]).unwrap();
    assert_eq!(out[0].to_i32().unwrap(), vec![11, 12, 13, 14]);
    assert_eq!(
        rt.pool_stats().in_use_bytes,
        0,
        "failed calls give their buffers back"
    );
}

#[test]
fn profiling_records_every_kernel_launch() {
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), true);
    let model = Model::load(&so).unwrap();
    let mut s = rt.session(&model).unwrap();
    let x = HostTensor::from_f32(vec![1000], &ramp(1000)).unwrap();
    for _ in 0..3 {
        s.run("axpb", std::slice::from_ref(&x)).unwrap();
    }
    let p = s.kernel_profile().unwrap();
    let names: Vec<(&str, u64)> = p.iter().map(|k| (k.name.as_str(), k.calls)).collect();
    assert_eq!(names, [("scale", 3), ("add", 3)]);
    assert!(p.iter().all(|k| k.total_ns > 0), "{p:?}");
    s.reset_profile().unwrap();
    assert!(s.kernel_profile().unwrap().is_empty());
}

#[test]
fn artifacts_that_cannot_load_say_why() {
    let e = Model::load("/nonexistent/model.so")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cannot load artifact /nonexistent/model.so: "),
        "{e}"
    );

    // 2: an artifact from before launch records; 5: from a newer tcc.
    for version in [0, 2, 5] {
        let (_dir, so) = test_model(&[&format!("TCC_TEST_ABI_VERSION={version}")]);
        let e = Model::load(&so).unwrap_err();
        assert!(
            matches!(e, Error::AbiVersion { found, expected: 4, .. } if found == version),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(&format!(
                "uses tcc ABI version {version}, this runtime supports versions 3..=4: \
                 rebuild the model with this tcc"
            )),
            "{msg}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let not_tcc = compile_c("layout_probe.c", dir.path(), "probe.so", &[]);
    let e = Model::load(&not_tcc).unwrap_err().to_string();
    assert!(
        e.contains("no `tcc_artifact_v1` symbol, not a tcc artifact"),
        "{e}"
    );
}

#[test]
fn a_kernel_build_failure_carries_the_build_log() {
    let (_dir, so) = test_model(&["TCC_TEST_BAD_KERNEL"]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    let e = rt.session(&model).err().expect("the build must fail");
    assert!(matches!(e, Error::Build { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("kernel program failed to build for "),
        "{msg}"
    );
    assert!(
        msg.contains("build log:") && msg.contains("undefined_symbol_in_kernel"),
        "{msg}"
    );
    assert_eq!(
        rt.cache_stats().disk_writes,
        0,
        "failed builds are not cached"
    );
}

#[test]
fn the_arena_is_allocated_once_per_session_and_reused() {
    let (_dir, so) = test_model(&["TCC_TEST_ARENA"]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    let model = Model::load(&so).unwrap();
    assert_eq!(model.function("axpb_arena").unwrap().arena_bytes, 8192);
    assert_eq!(model.function("axpb").unwrap().arena_bytes, 0);
    let mut session = rt.session(&model).unwrap();
    let stats = session.arena_stats();
    assert_eq!(stats.plan_bytes, 8192);
    assert_eq!(stats.arena_bytes, 8192, "an exact allocation: {stats:?}");
    assert!(stats.sub_buffers, "4096-aligned views are sub-buffers");
    let x = ramp(1000);
    let input = HostTensor::from_f32(vec![1000], &x).unwrap();
    let out = session
        .run("axpb_arena", std::slice::from_ref(&input))
        .unwrap();
    assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
    let first = rt.pool_stats();
    for _ in 0..3 {
        let out = session
            .run("axpb_arena", std::slice::from_ref(&input))
            .unwrap();
        assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
    }
    let later = rt.pool_stats();
    assert_eq!(later.allocations, first.allocations, "{later:?}");
    assert_eq!(session.arena_stats().views, 1, "the view is kept");
    // The plain pool path still works next to the arena.
    let out = session.run("axpb", std::slice::from_ref(&input)).unwrap();
    assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));

    let k = HostTensor::from_i32(vec![4], &[1, 2, 3, 4]).unwrap();
    let e = session
        .run("bad_view", std::slice::from_ref(&k))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "@bad_view failed: runtime call view() failed: view of 8192 bytes at offset 4096 is outside @bad_view's 8192-byte arena"
    );
    let e = session
        .run("release_view", std::slice::from_ref(&k))
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("is a view of the arena; only buffers from alloc() may be released"),
        "{e}"
    );
    let out = session.run("axpb_arena", &[input]).unwrap();
    assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
    drop(session);
    assert_eq!(
        rt.pool_stats().in_use_bytes,
        0,
        "the session returns its arena"
    );
}

#[test]
fn views_fall_back_to_buffers_when_the_device_needs_more_alignment() {
    // Offsets aligned to 1 byte only: no device takes those as sub-buffers.
    let (_dir, so) = test_model(&["TCC_TEST_ARENA", "TCC_TEST_ARENA_ALIGN=1"]);
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime(cache.path(), false);
    assert!(rt.device().base_align_bytes > 1);
    let model = Model::load(&so).unwrap();
    let mut session = rt.session(&model).unwrap();
    assert!(!session.arena_stats().sub_buffers);
    assert_eq!(session.arena_stats().arena_bytes, 0);
    let x = ramp(1000);
    let input = HostTensor::from_f32(vec![1000], &x).unwrap();
    for _ in 0..2 {
        let out = session
            .run("axpb_arena", std::slice::from_ref(&input))
            .unwrap();
        assert_eq!(out[0].to_f32().unwrap(), axpb_expected(&x));
    }
    assert_eq!(session.arena_stats().views, 1);
}

#[test]
fn abi_version_1_artifacts_are_refused_with_a_rebuild_message() {
    // Version 1 (no arenas, no launch records) is older than the oldest
    // version this runtime loads: the error says to rebuild.
    let (_dir, so) = test_model(&["TCC_TEST_ABI_V1"]);
    let e = Model::load(&so).unwrap_err();
    assert!(matches!(e, Error::AbiVersion { found: 1, .. }), "{e:?}");
    assert!(
        e.to_string().contains("rebuild the model with this tcc"),
        "{e}"
    );
}

#[test]
fn launch_records_are_read_from_the_table() {
    let (_dir, so) = test_model(&[]);
    let model = Model::load(&so).unwrap();
    let kernels = model.kernels();
    assert_eq!(kernels.len(), 3);
    let scale = &kernels[0];
    assert_eq!(scale.name, "scale");
    assert_eq!(scale.workgroup_size, [64, 1, 1]);
    assert_eq!(scale.flops, 1000);
    assert_eq!(scale.dynamic_local_bytes, 0);
    let kinds: Vec<u32> = scale.args.iter().map(|a| a.kind).collect();
    assert_eq!(
        kinds,
        [
            tcc_abi::ARG_BUFFER,
            tcc_abi::ARG_BUFFER,
            tcc_abi::ARG_F32,
            tcc_abi::ARG_I32
        ]
    );
    assert!(!scale.args[0].written && scale.args[1].written);
    assert_eq!(scale.args[1].elements, 1000);
    assert_eq!(model.kernel_flops(), [1000, 1000, 0]);
    assert_eq!(kernels[2].args[2].dtype, tcc_abi::DTYPE_I64);

    let (_dir, so) = test_model(&["TCC_TEST_PTX", "TCC_TEST_DYNAMIC_LOCAL"]);
    let model = Model::load(&so).unwrap();
    assert_eq!(model.kernels()[0].dynamic_local_bytes, 65536);
}

/// The SPIR-V loading path: an artifact whose kernels are SPIR-V loads,
/// and its session goes through clCreateProgramWithIL. A device without an intermediate language (PoCL's
/// CPU device in CI) refuses it with a message naming the problem and the
/// way out; one with IL support rejects this kernel-less module in the
/// driver. Either way the error is clean, never a crash or a fallback.
#[test]
fn spirv_artifacts_go_through_the_il_path() {
    let (_dir, so) = test_model(&["TCC_TEST_SPIRV"]);
    let cache = tempfile::tempdir().unwrap();
    let runtime = runtime(cache.path(), false);
    let model = Model::load(&so).expect("the artifact reader accepts SPIR-V kernels");
    let error = match runtime.session(&model) {
        Ok(_) => panic!("a session of a kernel-less SPIR-V module cannot be created"),
        Err(e) => e.to_string(),
    };
    match &runtime.device().il_version {
        None => assert!(
            error.contains("the artifact's kernels are SPIR-V")
                && error.contains("intermediate language (CL_DEVICE_IL_VERSION is empty)")
                && error.contains("compile the model to OpenCL C"),
            "{error}"
        ),
        Some(il) => assert!(
            error.contains("clCreateProgramWithIL") || error.contains("build"),
            "device IL {il}: {error}"
        ),
    }
}
