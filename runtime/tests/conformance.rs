//! The conformance suite of the runtime's drivers (as IREE's `hal/cts`):
//! the same tests, written once against the driver-neutral core
//! (`tcc_runtime::hal`: [`Device`], [`Lanes`], [`Group`]), run for every
//! driver present on this machine.
//!
//! Drivers:
//! - `opencl`: the OpenCL platform's devices (PoCL here, with two CPU
//!   devices through `POCL_DEVICES="pthread pthread"`; NVIDIA's OpenCL on
//!   the GPU machine);
//! - `cuda`: NVIDIA's driver (`libcuda.so.1`) where it opens and has a
//!   device. Where it does not, the CUDA driver's code runs on the fake
//!   driver (`fixtures/fake_libcuda.c`, two devices: device memory is host
//!   memory and kernels run on the host) as `cuda (fake driver)`, and the
//!   real one is reported as not present: each test prints which drivers
//!   it ran on and which are not present, and counts only those it ran;
//! - `vulkan`: the Vulkan loader's devices (lavapipe here, NVIDIA's on the
//!   GPU machine), on the same test model with its kernels as Shader
//!   SPIR-V (`fixtures/test_kernels_vulkan.spvasm`). With one device, the
//!   tests of several devices open it twice (two runtimes, each with an
//!   instance and queue of its own), said in the driver's name.
//!
//! The driver library is chosen through `TCC_LIBCUDA` once, before any
//! test of this binary touches a driver.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::*;
use tcc_runtime::cuda::{CudaOptions, CudaRuntime};
use tcc_runtime::hal::{AnyDevice, Device, Group, Lanes, Placement, PlacementCopies};
use tcc_runtime::{
    Backend, Calls, DType, DeviceSelector, HostTensor, Model, Runtime, RuntimeOptions,
    VulkanRuntime,
};

/// The machine's drivers, found once.
struct Drivers {
    /// Where the fake CUDA driver and the test model were built.
    _dir: tempfile::TempDir,
    cache: tempfile::TempDir,
    model: PathBuf,
    /// The fake CUDA driver library (opened by the runtime only when
    /// `cuda_fake`).
    fake: PathBuf,
    /// The test model with Shader SPIR-V kernels, and how many Vulkan
    /// devices there are (0: not present).
    vulkan_model: PathBuf,
    vulkan_devices: usize,
    /// Whether CUDA runs on the fake driver (NVIDIA's is not present).
    cuda_fake: bool,
    /// Drivers not present, with the reason.
    absent: Vec<String>,
}

/// Whether NVIDIA's driver opens here and has a device (asked through its
/// own entry points, so the runtime's copy of the library is not yet
/// opened).
fn nvidia_driver() -> Result<(), String> {
    // SAFETY: loading NVIDIA's driver library runs its initialisers only.
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }
        .map_err(|e| format!("cannot open libcuda.so.1: {e}"))?;
    // SAFETY: cuInit(unsigned) and cuDeviceGetCount(int *) of cuda.h.
    unsafe {
        let init: libloading::Symbol<unsafe extern "C" fn(u32) -> i32> =
            lib.get(b"cuInit").map_err(|e| e.to_string())?;
        let count: libloading::Symbol<unsafe extern "C" fn(*mut i32) -> i32> =
            lib.get(b"cuDeviceGetCount").map_err(|e| e.to_string())?;
        if init(0) != 0 {
            return Err("cuInit failed".into());
        }
        let mut n = 0;
        if count(&mut n) != 0 || n < 1 {
            return Err("no CUDA device".into());
        }
    }
    Ok(())
}

fn drivers() -> &'static Drivers {
    static DRIVERS: OnceLock<Drivers> = OnceLock::new();
    DRIVERS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (fake, model) = fake_cuda_build(dir.path(), &[]);
        let mut absent = Vec::new();
        let cuda_fake = match nvidia_driver() {
            Ok(()) => false,
            Err(why) => {
                absent.push(format!("cuda (NVIDIA's driver: {why})"));
                // SAFETY: set once, inside this initialiser that every test
                // waits for before it touches a driver or the environment.
                unsafe {
                    std::env::set_var("TCC_LIBCUDA", &fake);
                    std::env::set_var("FAKE_CUDA_DEVICES", "2");
                    std::env::remove_var("FAKE_CUDA_LOG");
                    std::env::remove_var("FAKE_CUDA_REFUSE_CAPTURE");
                }
                true
            }
        };
        if std::env::var_os("POCL_DEVICES").is_none() {
            // SAFETY: as above, before OpenCL is first touched.
            unsafe { std::env::set_var("POCL_DEVICES", "pthread pthread") };
        }
        if let Err(e) = tcc_runtime::list_devices() {
            absent.push(format!("opencl ({e})"));
        }
        let vulkan_model = vulkan_model_build(dir.path());
        let vulkan_devices = match tcc_runtime::drivers::vulkan::device_count() {
            Ok(0) => {
                absent.push("vulkan (the loader reports no device)".into());
                0
            }
            Ok(n) => n,
            Err(e) => {
                absent.push(format!("vulkan ({e})"));
                0
            }
        };
        Drivers {
            _dir: dir,
            cache: tempfile::tempdir().unwrap(),
            model,
            fake: fake.clone(),
            vulkan_model,
            vulkan_devices,
            cuda_fake,
            absent,
        }
    })
}

/// Up to two devices of each present driver: its name and the devices
/// (with profiling as asked).
fn present(profiling: bool) -> Vec<(String, Vec<AnyDevice>)> {
    let d = drivers();
    let mut out = Vec::new();
    if let Ok(list) = tcc_runtime::list_devices() {
        let devices = (0..list.len().min(2))
            .map(|i| {
                let options = RuntimeOptions {
                    profiling,
                    cache_dir: Some(d.cache.path().to_path_buf()),
                    ..Default::default()
                };
                AnyDevice::OpenCl(Runtime::with_options(DeviceSelector::Index(i), options).unwrap())
            })
            .collect();
        out.push(("opencl".to_string(), devices));
    }
    let count = tcc_runtime::cuda::list_cuda_devices().map_or(0, |l| l.len());
    if count > 0 {
        let devices = (0..count.min(2))
            .map(|i| {
                let options = CudaOptions {
                    profiling,
                    graphs: true,
                };
                AnyDevice::Cuda(CudaRuntime::with_options(i, options).unwrap())
            })
            .collect();
        let name = if d.cuda_fake {
            "cuda (fake driver)"
        } else {
            "cuda"
        };
        out.push((name.to_string(), devices));
    }
    if d.vulkan_devices > 0 {
        // Two devices where there are; else the one, opened twice.
        let indices = if d.vulkan_devices >= 2 {
            [0, 1]
        } else {
            [0, 0]
        };
        let devices = indices
            .iter()
            .map(|&i| {
                AnyDevice::Vulkan(
                    VulkanRuntime::with_device(i)
                        .unwrap()
                        .with_profiling(profiling),
                )
            })
            .collect();
        let name = if d.vulkan_devices >= 2 {
            "vulkan"
        } else {
            "vulkan (one device, opened twice)"
        };
        out.push((name.to_string(), devices));
    }
    out
}

/// Runs `test` on every present driver's devices, saying on stderr which
/// drivers it ran on and which are not present.
fn for_each_driver(test: &str, profiling: bool, run: impl Fn(&str, &[AnyDevice])) {
    let drivers = present(profiling);
    assert!(!drivers.is_empty(), "no driver is present");
    for (name, devices) in &drivers {
        run(name, devices);
    }
    let ran: Vec<&str> = drivers.iter().map(|(n, _)| n.as_str()).collect();
    eprintln!(
        "conformance {test}: ran on {}; not present: {}",
        ran.join(", "),
        if drivers_absent().is_empty() {
            "none".to_string()
        } else {
            drivers_absent().join(", ")
        }
    );
}

fn drivers_absent() -> &'static [String] {
    &drivers().absent
}

/// The test model as `driver` runs it: OpenCL C and PTX, or (Vulkan)
/// Shader SPIR-V.
fn model(driver: &str) -> Model {
    let d = drivers();
    if driver.starts_with("vulkan") {
        Model::load(&d.vulkan_model).unwrap()
    } else {
        Model::load(&d.model).unwrap()
    }
}

fn axpb_input(scale: f32) -> HostTensor {
    let x: Vec<f32> = ramp(1000).iter().map(|v| v * scale).collect();
    HostTensor::from_f32(vec![1000], &x).unwrap()
}

fn assert_axpb(driver: &str, x: &HostTensor, y: &[HostTensor]) {
    assert_eq!(y.len(), 1, "{driver}");
    assert_eq!(y[0].shape, [1000], "{driver}");
    assert_eq!(
        y[0].to_f32().unwrap(),
        axpb_expected(&x.to_f32().unwrap()),
        "{driver}"
    );
}

#[test]
fn every_driver_runs_the_model_functions() {
    for_each_driver("functions", false, |driver, devices| {
        let device = &devices[0];
        let backend = match driver.split(' ').next() {
            Some("opencl") => Backend::OpenCl,
            Some("cuda") => Backend::Cuda,
            _ => Backend::Vulkan,
        };
        assert_eq!(device.driver(), backend, "{driver}");
        let mut s = device.open(&model(driver)).unwrap();
        // Several calls: constants uploaded once, temporaries reused.
        for (k, function) in ["axpb", "axpb_arena", "axpb", "axpb_arena"]
            .iter()
            .enumerate()
        {
            let x = axpb_input(k as f32 + 1.0);
            let y = s
                .run_with_sources(function, std::slice::from_ref(&x), &[])
                .unwrap();
            assert_axpb(driver, &x, &y);
            s.recycle(y);
        }
        let x = HostTensor::from_f32(vec![2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let out = s.run_with_sources("dup", &[x], &[]).unwrap();
        assert_eq!(out.len(), 2, "{driver}");
        for o in &out {
            assert_eq!(o.shape, [2, 3]);
            assert_eq!(
                o.to_f32().unwrap(),
                [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                "{driver}"
            );
        }
        let x = HostTensor::from_i32(vec![4], &[1, -2, 3, 100]).unwrap();
        let y = s.run_with_sources("addk", &[x], &[]).unwrap();
        assert_eq!(y[0].dtype, DType::I32);
        assert_eq!(y[0].to_i32().unwrap(), [11, 8, 13, 110], "{driver}");
    });
}

#[test]
fn every_driver_refuses_bad_calls_and_goes_on() {
    for_each_driver("bad calls", false, |driver, devices| {
        let mut s = devices[0].open(&model(driver)).unwrap();
        let wrong = HostTensor::from_f32(vec![999], &vec![0.0; 999]).unwrap();
        let e = s
            .run_with_sources("axpb", &[wrong], &["x.npy"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.npy") && e.contains("1000xf32"),
            "{driver}: {e}"
        );
        let e = s
            .run_with_sources("nope", &[], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope"), "{driver}: {e}");
        let i4 = HostTensor::from_i32(vec![4], &[1, 2, 3, 4]).unwrap();
        for (function, message) in [
            ("bad_kernel_index", "42"),
            ("bad_release", "release"),
            ("bad_view", "outside @bad_view's 8192-byte arena"),
            ("release_view", "release"),
        ] {
            let e = s
                .run_with_sources(function, std::slice::from_ref(&i4), &[])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(function) && e.contains(message),
                "{driver} @{function}: {e}"
            );
        }
        // The session still runs after each refusal.
        let x = axpb_input(0.5);
        let y = s
            .run_with_sources("axpb", std::slice::from_ref(&x), &[])
            .unwrap();
        assert_axpb(driver, &x, &y);
    });
}

/// Device memory exhausted on one device (an `alloc` of 2^50 bytes on the
/// last device): a clear error from that call, naming the function and
/// the memory; every device's session goes on, that one's included.
#[test]
fn every_driver_reports_exhausted_memory_and_goes_on() {
    for_each_driver("memory exhausted", false, |driver, devices| {
        let model = model(driver);
        let mut sessions: Vec<_> = devices
            .iter()
            .map(|d| {
                let session = d.open(&model).unwrap();
                d.settle();
                session
            })
            .collect();
        let i4 = HostTensor::from_i32(vec![4], &[1, 2, 3, 4]).unwrap();
        let last = sessions.len() - 1;
        let e = sessions[last]
            .run_with_sources("huge_alloc", &[i4], &[])
            .unwrap_err()
            .to_string();
        eprintln!("{driver}: {e}");
        assert!(
            e.contains("huge_alloc") && e.contains("memory"),
            "{driver}: {e}"
        );
        for s in &mut sessions {
            let x = axpb_input(3.0);
            let y = s
                .run_with_sources("axpb", std::slice::from_ref(&x), &[])
                .unwrap();
            assert_axpb(driver, &x, &y);
        }
    });
}

#[test]
fn every_driver_runs_calls_in_flight() {
    for_each_driver("calls in flight", false, |driver, devices| {
        let mut lanes = Lanes::new(&devices[0], &model(driver), 4).unwrap();
        assert_eq!(lanes.len(), 4);
        let inputs: Vec<HostTensor> = (0..12).map(|k| axpb_input(k as f32 - 5.0)).collect();
        let pending: Vec<_> = inputs
            .iter()
            .map(|x| lanes.submit("axpb_arena", vec![x.clone()]).unwrap())
            .collect();
        for (x, p) in inputs.iter().zip(pending) {
            assert_axpb(driver, x, &p.wait().unwrap());
        }
        assert_eq!(lanes.calls_running(), 0, "{driver}");
        // A bad input fails at submission; the lanes go on.
        let e = lanes.submit("axpb", vec![]).unwrap_err().to_string();
        assert!(e.contains("expects 1 input"), "{driver}: {e}");
        // A call that fails on a lane fails its handle only.
        let i4 = HostTensor::from_i32(vec![4], &[1, 2, 3, 4]).unwrap();
        let bad = lanes.submit("bad_kernel_index", vec![i4]).unwrap();
        let good = lanes.submit("axpb", vec![inputs[3].clone()]).unwrap();
        let e = bad.wait().unwrap_err().to_string();
        assert!(e.contains("on device") && e.contains("42"), "{driver}: {e}");
        assert_axpb(driver, &inputs[3], &good.wait().unwrap());
        let e = Lanes::new(&devices[0], &model(driver), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("at least 1"), "{driver}: {e}");
    });
}

#[test]
fn every_driver_runs_on_several_devices() {
    for_each_driver("several devices", false, |driver, devices| {
        assert!(devices.len() >= 2, "{driver}: this test needs two devices");
        let mut group = Group::new(devices, &model(driver), 1).unwrap();
        assert_eq!(group.len(), 2);
        // Round robin: equally busy devices take calls in turn.
        let inputs: Vec<HostTensor> = (0..4).map(|k| axpb_input(k as f32)).collect();
        let pending: Vec<_> = inputs
            .iter()
            .map(|x| group.submit("axpb", vec![x.clone()]).unwrap())
            .collect();
        let placed: Vec<usize> = pending.iter().map(|p| p.device()).collect();
        // The second call finds device 0 busy or both idle: device 1 either
        // way. Later choices depend on which calls have finished.
        assert_eq!(placed[..2], [0, 1], "{driver}");
        for (x, p) in inputs.iter().zip(pending) {
            assert_axpb(driver, x, &p.wait().unwrap());
        }
        // The data-parallel split: a batch of 4 parts, two per device,
        // equals the parts run one by one; the second call, on other
        // values, cuts its parts into the first call's input memory.
        for round in 0..2 {
            let parts: Vec<Vec<f32>> = (0..4)
                .map(|j| {
                    ramp(1000)
                        .iter()
                        .map(|v| v * (j as f32 + 1.5) - round as f32)
                        .collect()
                })
                .collect();
            let batch = HostTensor::from_f32(vec![4000], &parts.concat()).unwrap();
            let out = group
                .run_split("axpb_arena", std::slice::from_ref(&batch))
                .unwrap();
            assert_eq!(out[0].shape, [4000], "{driver}");
            let want: Vec<f32> = parts.iter().flat_map(|p| axpb_expected(p)).collect();
            assert_eq!(out[0].to_f32().unwrap(), want, "{driver} round {round}");
        }
        // A batch that does not divide into parts is refused, naming it.
        let odd = HostTensor::from_f32(vec![1500], &vec![0.0; 1500]).unwrap();
        let e = group.run_split("axpb", &[odd]).unwrap_err().to_string();
        assert!(e.contains("multiple of 1000"), "{driver}: {e}");
    });
}

#[test]
fn every_driver_profiles_kernels() {
    for_each_driver("profiling", true, |driver, devices| {
        let mut s = devices[0].open(&model(driver)).unwrap();
        for _ in 0..3 {
            s.run_with_sources("axpb", &[axpb_input(1.0)], &[]).unwrap();
        }
        let profile = s.kernel_profile().unwrap();
        for kernel in ["scale", "add"] {
            let k = profile.iter().find(|k| k.name == kernel).unwrap();
            assert_eq!(k.calls, 3, "{driver} {kernel}");
            assert!(k.total_ns > 0, "{driver} {kernel}");
        }
        s.reset_profile().unwrap();
        assert!(
            s.kernel_profile().unwrap().iter().all(|k| k.calls == 0),
            "{driver}"
        );
        // The same through lanes: each lane's profile, summed.
        let mut lanes = Lanes::new(&devices[0], &model(driver), 2).unwrap();
        let pending: Vec<_> = (0..4)
            .map(|_| lanes.submit("axpb", vec![axpb_input(2.0)]).unwrap())
            .collect();
        for p in pending {
            p.wait().unwrap();
        }
        let profile = lanes.kernel_profile(true).unwrap();
        let scale = profile.iter().find(|k| k.name == "scale").unwrap();
        assert_eq!(scale.calls, 4, "{driver}");
    });
}

#[test]
fn a_second_cuda_session_takes_the_module_from_the_cache() {
    // CUDA's own: the driver's compiled module is cached per runtime.
    for_each_driver("module cache", false, |driver, devices| {
        let AnyDevice::Cuda(rt) = &devices[1] else {
            return;
        };
        let before = rt.module_cache_stats();
        let _a = rt.session(&model(driver)).unwrap();
        let _b = rt.session(&model(driver)).unwrap();
        let after = rt.module_cache_stats();
        assert_eq!(
            after.loads - before.loads,
            u64::from(before.loads == 0),
            "{driver}"
        );
        assert!(after.hits - before.hits >= 1, "{driver}");
    });
}

/// A counter the fake CUDA driver exports (`unsigned NAME(void)` or
/// `int NAME(void)`), read through the library the runtime opened.
fn fake_counter(name: &str) -> u64 {
    // SAFETY: the runtime opened this path already (one handle); the
    // fixture exports `name` as a function of no arguments returning a
    // 32-bit count.
    unsafe {
        let lib = libloading::Library::new(&drivers().fake).unwrap();
        let f: libloading::Symbol<unsafe extern "C" fn() -> u32> =
            lib.get(name.as_bytes()).unwrap();
        u64::from(f())
    }
}

#[test]
fn every_driver_stages_split_parts_once_and_reuses_them() {
    for_each_driver("staging", false, |driver, devices| {
        let mut group = Group::new(devices, &model(driver), 1).unwrap();
        let fake = driver == "cuda (fake driver)";
        let counters = || {
            fake.then(|| {
                (
                    fake_counter("fake_cuda_pinned_uploads"),
                    fake_counter("fake_cuda_live_pinned"),
                )
            })
        };
        // A device's second part finds the first's staging back when that
        // part has finished already: one or two sets per device.
        let bounded = |spares: &[usize]| spares.iter().all(|&n| (1..=2).contains(&n));
        let mut most_live = 0;
        for round in 0..3 {
            let before = counters();
            let batch: Vec<f32> = (0..4000).map(|i| i as f32 * 0.5 - round as f32).collect();
            let batch = HostTensor::from_f32(vec![4000], &batch).unwrap();
            let out = group
                .run_split("axpb_arena", std::slice::from_ref(&batch))
                .unwrap();
            let want: Vec<f32> = batch
                .to_f32()
                .unwrap()
                .chunks(1000)
                .flat_map(axpb_expected)
                .collect();
            assert_eq!(out[0].to_f32().unwrap(), want, "{driver} round {round}");
            // Each device keeps its parts' staging for the next call.
            let spares: Vec<usize> = group.devices().iter().map(|l| l.spare_inputs()).collect();
            assert!(bounded(&spares), "{driver} round {round}: {spares:?}");
            if let (Some((uploads, _)), Some((uploads_after, live))) = (before, counters()) {
                // Every part is uploaded from page-locked memory ...
                assert_eq!(uploads_after - uploads, 4, "{driver} round {round}");
                // ... of which no more is allocated than the parts at once.
                assert!((2..=4).contains(&live), "{driver} round {round}: {live}");
                most_live = most_live.max(live);
            }
        }
        // Whole calls placed round robin are staged the same way: a part
        // had the same type (1000xf32), so its staging serves.
        let before = counters();
        let x = axpb_input(3.0);
        for _ in 0..4 {
            assert_axpb(
                driver,
                &x,
                &group.run("axpb", std::slice::from_ref(&x)).unwrap(),
            );
        }
        let spares: Vec<usize> = group.devices().iter().map(|l| l.spare_inputs()).collect();
        assert!(bounded(&spares), "{driver}: {spares:?}");
        if let (Some((uploads, _)), Some((uploads_after, live_after))) = (before, counters()) {
            assert_eq!(uploads_after - uploads, 4, "{driver}");
            assert!(live_after <= most_live.max(4), "{driver}: {live_after}");
        }
    });
}

#[test]
fn every_driver_places_functions_on_two_devices() {
    for_each_driver("placement", false, |driver, devices| {
        let m = model(driver);
        let fake = driver == "cuda (fake driver)";
        let peer_copies = || fake.then(|| fake_counter("fake_cuda_peer_copies"));
        let places = [("axpb".to_string(), 0), ("@axpb_arena".to_string(), 1)];
        let mut p = Placement::new(devices, &m, &places).unwrap();
        assert_eq!(p.device_of("axpb_arena").unwrap(), 1, "{driver}");
        assert_eq!(p.device_of("addk").unwrap(), 0, "{driver}");
        // A pipeline over both devices: device 0, 1, then 0 again; the
        // values between the stages stay in device memory.
        let before = peer_copies();
        let x = axpb_input(0.75);
        let y = p
            .run_pipeline(&["axpb", "axpb_arena", "axpb"], std::slice::from_ref(&x))
            .unwrap();
        let want = axpb_expected(&axpb_expected(&axpb_expected(&x.to_f32().unwrap())));
        assert_eq!(y[0].to_f32().unwrap(), want, "{driver}");
        let copies = p.copies();
        let hops = match driver.split(' ').next() {
            // CUDA: device to device, over peer access (the fake driver's
            // devices reach each other).
            Some("cuda") => PlacementCopies {
                device_to_device: 2,
                peer: 2,
                through_host: 0,
                bytes: 8000,
            },
            // OpenCL: each device a context of its own: through the host.
            Some("opencl") => PlacementCopies {
                device_to_device: 0,
                peer: 0,
                through_host: 2,
                bytes: 8000,
            },
            // Vulkan: the values between calls are host tensors already.
            _ => PlacementCopies::default(),
        };
        assert_eq!(copies, hops, "{driver}");
        if let (Some(b), Some(a)) = (before, peer_copies()) {
            assert_eq!(a - b, 2, "{driver}: cuMemcpyPeerAsync calls");
        }
        // Two functions on one device: nothing copied between devices.
        let y = p
            .run_pipeline(&["axpb", "axpb"], std::slice::from_ref(&x))
            .unwrap();
        assert_eq!(
            y[0].to_f32().unwrap(),
            axpb_expected(&axpb_expected(&x.to_f32().unwrap())),
            "{driver}"
        );
        assert_eq!(p.copies(), hops, "{driver}");
        // A whole call on its device.
        assert_axpb(
            driver,
            &x,
            &p.run("axpb_arena", std::slice::from_ref(&x)).unwrap(),
        );
        // Bad placements and pipelines are refused before anything runs.
        let e = Placement::new(devices, &m, &[("axpb".into(), 2)])
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("axpb=2") && e.contains("2 devices"),
            "{driver}: {e}"
        );
        let e = Placement::new(devices, &m, &[("nope".into(), 0)])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("nope"), "{driver}: {e}");
        let e = Placement::new(devices, &m, &[("axpb".into(), 0), ("axpb".into(), 1)])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("placed twice"), "{driver}: {e}");
        let e = p
            .run_pipeline(&["axpb", "addk"], std::slice::from_ref(&x))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("@addk") && e.contains("4xi32") && e.contains("1000xf32"),
            "{driver}: {e}"
        );
        // A stage that fails on device 1 names the device and the function;
        // the placement goes on.
        let mut p = Placement::new(devices, &m, &[("bad_kernel_index".into(), 1)]).unwrap();
        let i4 = HostTensor::from_i32(vec![4], &[1, 2, 3, 4]).unwrap();
        let e = p
            .run_pipeline(&["addk", "bad_kernel_index"], std::slice::from_ref(&i4))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad_kernel_index") && e.contains("on device") && e.contains("42"),
            "{driver}: {e}"
        );
        let y = p
            .run_pipeline(&["addk", "addk"], std::slice::from_ref(&i4))
            .unwrap();
        assert_eq!(y[0].to_i32().unwrap(), [21, 22, 23, 24], "{driver}");
    });
}
