//! Several devices (issue 14): two PoCL CPU devices (`POCL_DEVICES="pthread
//! pthread"`, set before OpenCL is first touched in this test process) and
//! CPU fission (`clCreateSubDevices`). Round-robin serving, a batch split
//! across devices (bit-identical to the parts run one by one on one
//! device), a failure on one device failing only the call that was on it,
//! and the device-list and split rules.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::sync::Once;

use common::*;
use tcc_runtime::{
    DType, DeviceGroup, DeviceInfo, DeviceList, DeviceSelector, Fault, HostTensor, Model,
    RuntimeOptions, SplitPlan, list_devices, partition_device,
};

/// Two PoCL devices in this process (PoCL reads `POCL_DEVICES` when the
/// platform is first initialised).
fn two_devices() -> Vec<DeviceInfo> {
    static SET: Once = Once::new();
    SET.call_once(|| {
        if std::env::var_os("POCL_DEVICES").is_none() {
            // SAFETY: done once, before any thread of this test process
            // touches OpenCL or the environment.
            unsafe { std::env::set_var("POCL_DEVICES", "pthread pthread") };
        }
    });
    let devices = list_devices().expect("an OpenCL platform");
    assert!(
        devices.len() >= 2,
        "these tests need two OpenCL devices (PoCL with POCL_DEVICES=\"pthread pthread\"): {}",
        devices
            .iter()
            .map(DeviceInfo::summary)
            .collect::<Vec<_>>()
            .join("; ")
    );
    devices
}

fn options(cache: &std::path::Path) -> RuntimeOptions {
    RuntimeOptions {
        cache_dir: Some(cache.to_path_buf()),
        ..Default::default()
    }
}

fn batch(parts: usize) -> (HostTensor, Vec<Vec<f32>>) {
    let chunks: Vec<Vec<f32>> = (0..parts)
        .map(|j| ramp(1000).iter().map(|v| v * (j as f32 + 1.5)).collect())
        .collect();
    let all: Vec<f32> = chunks.concat();
    (
        HostTensor::from_f32(vec![1000 * parts], &all).unwrap(),
        chunks,
    )
}

#[test]
fn device_lists_parse_and_resolve() {
    let devices = two_devices();
    assert_eq!(DeviceList::parse("all").unwrap(), DeviceList::All);
    assert_eq!(
        DeviceList::parse("0, 1").unwrap(),
        DeviceList::Several(vec![DeviceSelector::Index(0), DeviceSelector::Index(1)])
    );
    assert_eq!(
        DeviceList::parse("pthread").unwrap(),
        DeviceList::One(DeviceSelector::Name("pthread".into()))
    );
    let e = DeviceList::parse("0,,1").unwrap_err().to_string();
    assert!(e.contains("an empty entry"), "{e}");
    assert_eq!(
        DeviceList::All.resolve(&devices).unwrap().len(),
        devices.len()
    );
    let e = DeviceList::parse("1,1")
        .unwrap()
        .resolve(&devices)
        .unwrap_err()
        .to_string();
    assert!(e.contains("named twice"), "{e}");
    let e = DeviceList::parse("0,7")
        .unwrap()
        .resolve(&devices)
        .unwrap_err()
        .to_string();
    assert!(e.contains("index 7"), "{e}");
}

#[test]
fn calls_go_round_robin_and_a_batch_splits_across_two_devices() {
    two_devices();
    let (_dir, so) = test_model(&[]);
    let cache = tempfile::tempdir().unwrap();
    let group =
        DeviceGroup::open(&DeviceList::parse("0,1").unwrap(), 1, options(cache.path())).unwrap();
    assert_eq!(group.len(), 2);
    let model = Model::load(&so).unwrap();
    let before: Vec<_> = group.runtimes().iter().map(|r| r.pool_stats()).collect();
    let mut gs = group.session(&model).unwrap();
    // The second device loaded the first one's cache entry.
    assert_eq!(
        gs.sessions()[1].program_origin(),
        Some(tcc_runtime::ProgramOrigin::DiskHit)
    );

    // Round robin: whole calls alternate when each device is equally busy.
    let (x, chunks) = batch(6);
    let parts: Vec<HostTensor> = chunks
        .iter()
        .map(|c| HostTensor::from_f32(vec![1000], c).unwrap())
        .collect();
    let mut handles: Vec<_> = parts
        .iter()
        .map(|p| gs.submit("axpb", vec![p.clone()]).unwrap())
        .collect();
    let used: Vec<usize> = handles.iter().map(|h| h.device().index).collect();
    assert!(used.contains(&0) && used.contains(&1), "{used:?}");
    for (h, c) in handles.iter_mut().zip(&chunks) {
        assert_eq!(h.wait().unwrap()[0].to_f32().unwrap(), axpb_expected(c));
    }
    drop(handles);

    // Data parallel: 6 parts of the batch-1000 signature over 2 devices,
    // bit-identical to the parts run one after another on one device.
    let split = gs.run_split("axpb", std::slice::from_ref(&x)).unwrap();
    assert_eq!(split[0].shape, vec![6000]);
    let mut one = group.runtimes()[0].session(&model).unwrap();
    let sequential: Vec<u8> = parts
        .iter()
        .flat_map(|p| {
            one.run("axpb", std::slice::from_ref(p)).unwrap()[0]
                .bytes
                .to_vec()
        })
        .collect();
    assert_eq!(split[0].bytes.to_vec(), sequential);
    drop(one);
    // Inputs of exactly the signature make one plain call.
    let whole = gs
        .run_split("axpb", std::slice::from_ref(&parts[0]))
        .unwrap();
    assert_eq!(whole[0].to_f32().unwrap(), axpb_expected(&chunks[0]));

    // A failure on device 1 fails the split call (which had a part there)
    // and nothing else; the next calls run on both devices again.
    group.runtimes()[1].inject_fault(Fault::Launch, 1);
    let e = gs
        .run_split("axpb", std::slice::from_ref(&x))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("injected fault") && e.contains(&group.runtimes()[1].device().summary()),
        "{e}"
    );
    assert_eq!(
        gs.run_split("axpb", std::slice::from_ref(&x)).unwrap(),
        split
    );
    // Round robin with one failing call: only that call errors.
    group.runtimes()[0].inject_fault(Fault::Launch, 1);
    let results: Vec<_> = parts
        .iter()
        .map(|p| {
            gs.submit("axpb", vec![p.clone()])
                .and_then(|mut h| h.wait())
        })
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
    for (r, c) in results.iter().zip(&chunks) {
        if let Ok(out) = r {
            assert_eq!(out[0].to_f32().unwrap(), axpb_expected(c));
        }
    }
    drop(gs);
    for (rt, b) in group.runtimes().iter().zip(&before) {
        assert_eq!(rt.live_call_handles(), 0);
        assert_eq!(rt.pool_stats().in_use_bytes, b.in_use_bytes);
    }
}

#[test]
fn split_rules_are_checked_before_anything_runs() {
    two_devices();
    let (_dir, so) = test_model(&[]);
    let model = Model::load(&so).unwrap();
    let axpb = model.function("axpb").unwrap();
    let plan = |shape: &[usize], dtype| SplitPlan::new(axpb, [(dtype, shape)]);
    assert_eq!(plan(&[1000], DType::F32).unwrap().parts, 1);
    assert_eq!(plan(&[4000], DType::F32).unwrap().parts, 4);
    let e = plan(&[1500], DType::F32).unwrap_err().to_string();
    assert_eq!(
        e,
        "input 0 of @axpb is 1500xf32; the function takes 1000xf32 per device: give it whole, or with axis 0 a multiple of 1000 to split it across devices"
    );
    assert!(plan(&[0], DType::F32).is_err());
    assert!(plan(&[2000], DType::I32).is_err());
    assert!(SplitPlan::new(axpb, []).is_err());
    let dup = model.function("dup").unwrap();
    assert_eq!(
        SplitPlan::new(dup, [(DType::F32, &[6usize, 3][..])])
            .unwrap()
            .parts,
        3
    );
    assert!(SplitPlan::new(dup, [(DType::F32, &[2usize, 4][..])]).is_err());
    // Through a group: same error, nothing run.
    let cache = tempfile::tempdir().unwrap();
    let group = DeviceGroup::open(&DeviceList::All, 1, options(cache.path())).unwrap();
    let mut gs = group.session(&model).unwrap();
    let bad = HostTensor::zeros(DType::F32, vec![1500]).unwrap();
    assert!(gs.run_split("axpb", &[bad]).is_err());
    // `dup` split into 2 parts concatenates both outputs.
    let x = HostTensor::parse_literal("4x3xf32=1,2,3,4,5,6,7,8,9,10,11,12").unwrap();
    let out = gs.run_split("dup", std::slice::from_ref(&x)).unwrap();
    assert_eq!(out, vec![x.clone(), x]);
}

#[test]
fn a_cpu_device_splits_into_parts_that_each_run_the_model() {
    let devices = two_devices();
    let cpu = devices
        .iter()
        .find(|d| d.kind == tcc_runtime::DeviceKind::Cpu)
        .expect("a CPU device")
        .clone();
    assert!(partition_device(&cpu, 0).is_err());
    let e = partition_device(&cpu, cpu.compute_units as usize + 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("compute units"), "{e}");
    assert_eq!(partition_device(&cpu, 1).unwrap().len(), 1);
    if cpu.compute_units < 2 {
        eprintln!("one compute unit: fission into 2 parts not possible here");
        return;
    }
    let parts = partition_device(&cpu, 2).unwrap();
    assert_eq!(parts.len(), 2);
    for p in &parts {
        assert!(p.is_sub_device());
        assert_eq!(p.compute_units, cpu.compute_units / 2);
        assert!(p.summary().contains("part"), "{}", p.summary());
    }
    let (_dir, so) = test_model(&[]);
    let model = Model::load(&so).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let group = DeviceGroup::new(parts, options(cache.path())).unwrap();
    let mut gs = group.session(&model).unwrap();
    let (x, chunks) = batch(4);
    let out = gs.run_split("axpb", std::slice::from_ref(&x)).unwrap();
    assert_eq!(
        out[0].to_f32().unwrap(),
        chunks
            .iter()
            .flat_map(|c| axpb_expected(c))
            .collect::<Vec<_>>()
    );
    // --cpu-partition through DeviceGroup::open.
    drop(gs);
    drop(group);
    let group = DeviceGroup::open(
        &DeviceList::One(DeviceSelector::Index(cpu.index)),
        2,
        options(cache.path()),
    )
    .unwrap();
    assert_eq!(group.len(), 2);
    let mut gs = group.session(&model).unwrap();
    assert_eq!(gs.run_split("axpb", std::slice::from_ref(&x)).unwrap(), out);
    assert!(
        DeviceGroup::open(&DeviceList::All, 0, options(cache.path())).is_err(),
        "0 parts"
    );
}
