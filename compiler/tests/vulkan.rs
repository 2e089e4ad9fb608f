//! The Vulkan target and driver from the outside (docs/vulkan.md):
//! `tcc compile --target=vulkan` artifacts run through `tcc-run` (which
//! picks Vulkan for Shader SPIR-V) and agree with the OpenCL build of the
//! same model; the driver's errors name the driver and what it refused
//! (no loader, no device, an OpenCL C artifact, Vulkan SPIR-V on OpenCL);
//! and `--target=opencl-spirv` artifacts are refused by OpenCL devices that
//! report no IL, from their `CL_DEVICE_IL_VERSION`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tcc_runtime::{DeviceSelector, HostTensor, Model, Runtime, VulkanRuntime};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn model(name: &str) -> PathBuf {
    repo().join("test/models").join(name)
}

/// target/debug, where tcc-run is.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn compile(input: &Path, out: &Path, extra: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("run tcc");
    assert!(o.status.success(), "{}", text(&o));
}

fn tcc_run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(bin_dir().join("tcc-run"));
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command
        .output()
        .expect("tcc-run (cargo build -p tcc-runtime --bins)")
}

/// A clean failure: exit 1, `error:` and the message, no panic.
fn fails_with(o: &Output, message: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(message), "expected `{message}` in:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn inputs(m: &Model, function: &str) -> Vec<HostTensor> {
    let f = m.function(function).unwrap();
    f.inputs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let n: usize = d.shape.iter().product();
            let values: Vec<f32> = (0..n)
                .map(|j| ((j * 7 + i * 3) % 23) as f32 / 11.0 - 1.0)
                .collect();
            HostTensor::from_f32(d.shape.clone(), &values).unwrap()
        })
        .collect()
}

#[test]
fn vulkan_artifacts_agree_with_opencl() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["mlp", "cnn", "softmax_reduce"] {
        let source = model(&format!("{name}.mlir"));
        if !source.exists() {
            continue;
        }
        let vulkan = dir.path().join(format!("{name}.vulkan.so"));
        let opencl = dir.path().join(format!("{name}.so"));
        compile(&source, &vulkan, &["--target=vulkan"]);
        compile(&source, &opencl, &[]);
        let vulkan = Model::load(&vulkan).unwrap();
        let opencl = Model::load(&opencl).unwrap();
        let mut vk_session = VulkanRuntime::new()
            .expect("a Vulkan device (make deps installs lavapipe)")
            .session(&vulkan)
            .unwrap();
        let rt = Runtime::new(DeviceSelector::from_flag_or_env(None)).unwrap();
        let mut cl_session = rt.session(&opencl).unwrap();
        for f in vulkan.functions().to_vec() {
            let x = inputs(&vulkan, &f.name);
            let got = vk_session.run(&f.name, &x).unwrap();
            let want = cl_session.run(&f.name, &x).unwrap();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                let (g, w) = (g.to_f32().unwrap(), w.to_f32().unwrap());
                assert_eq!(g.len(), w.len());
                for (i, (a, b)) in g.iter().zip(&w).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-4 + 1e-4 * b.abs(),
                        "{name} @{} element {i}: Vulkan {a}, OpenCL {b}",
                        f.name
                    );
                }
            }
            // A second call on the same session (constants uploaded, arena
            // and buffers reused) gives the same outputs.
            let again = vk_session.run(&f.name, &x).unwrap();
            assert_eq!(again, got, "{name} @{}: second call differs", f.name);
        }
    }
}

#[test]
fn tcc_run_picks_vulkan_for_shader_spirv() {
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("mlp.so");
    compile(&model("mlp.mlir"), &so, &["--target=vulkan"]);
    let so = so.to_str().unwrap();
    let o = tcc_run(&[so, "--input=1x4x16xf32=0.5"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("using the Vulkan backend: the artifact's kernels are Shader SPIR-V"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1x4x10xf32"),
        "{}",
        text(&o)
    );
    // tcc-benchmark times the dispatches with Vulkan timestamps.
    let o = Command::new(bin_dir().join("tcc-benchmark"))
        .args([so, "--input=1x4x16xf32=0.5", "--iterations=3", "--warmup=1"])
        .output()
        .expect("tcc-benchmark");
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("SPIR-V entry points on Vulkan device"),
        "{out}"
    );
    let timed = out
        .lines()
        .find(|l| l.trim_start().starts_with("batch_matmul_add_min_max_0"))
        .unwrap_or_else(|| panic!("no kernel row in:\n{out}"));
    assert!(timed.split_whitespace().nth(1) == Some("3"), "{timed}");
    // The same artifact on OpenCL: refused, pointing at Vulkan.
    let o = tcc_run(&[so, "--backend=opencl", "--input=1x4x16xf32=0.5"], &[]);
    fails_with(&o, "SPIR-V for Vulkan (Shader capability)");
    fails_with(&o, "--backend=vulkan");
}

#[test]
fn vulkan_errors_name_the_driver_and_what_it_refused() {
    let dir = tempfile::tempdir().unwrap();
    let opencl = dir.path().join("mlp.so");
    let vulkan = dir.path().join("mlp.vulkan.so");
    compile(&model("mlp.mlir"), &opencl, &[]);
    compile(&model("mlp.mlir"), &vulkan, &["--target=vulkan"]);
    let (opencl, vulkan) = (opencl.to_str().unwrap(), vulkan.to_str().unwrap());
    let input = "--input=1x4x16xf32=0.5";
    // An OpenCL C artifact.
    let o = tcc_run(&[opencl, "--backend=vulkan", input], &[]);
    fails_with(&o, "Vulkan: ");
    fails_with(&o, "holds OpenCL C kernels");
    fails_with(&o, "--target=vulkan");
    // No loader.
    let o = tcc_run(
        &[vulkan, "--backend=vulkan", input],
        &[("TCC_VULKAN_LOADER", "/nonexistent/libvulkan.so.1")],
    );
    fails_with(&o, "the Vulkan backend needs a Vulkan driver and device");
    fails_with(
        &o,
        "cannot open the Vulkan loader (/nonexistent/libvulkan.so.1)",
    );
    // A loader with no driver.
    let o = tcc_run(
        &[vulkan, "--backend=vulkan", input],
        &[
            ("VK_ICD_FILENAMES", "/nonexistent/icd.json"),
            ("VK_DRIVER_FILES", "/nonexistent/icd.json"),
        ],
    );
    fails_with(&o, "the Vulkan backend needs a Vulkan driver and device");
    // A device index that does not exist.
    let o = tcc_run(
        &[vulkan, "--backend=vulkan", input],
        &[("TCC_VULKAN_DEVICE", "99")],
    );
    fails_with(&o, "Vulkan device 99 does not exist");
    // OpenCL options are refused on Vulkan.
    let o = tcc_run(
        &[vulkan, "--backend=vulkan", "--check-numerics", input],
        &[],
    );
    fails_with(&o, "--check-numerics is an OpenCL option");
}

#[test]
fn opencl_spirv_is_chosen_from_the_device_il_report() {
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("mlp.spirv.so");
    compile(&model("mlp.mlir"), &so, &["--target=opencl-spirv"]);
    let so_path = so.to_str().unwrap();
    let rt = Runtime::new(DeviceSelector::from_flag_or_env(None)).unwrap();
    let device = rt.device().clone();
    let m = Model::load(&so).unwrap();
    match device
        .il_version
        .as_deref()
        .filter(|v| !v.trim().is_empty())
    {
        // A device that reports IL (none here today): the artifact runs.
        Some(_) => {
            let mut session = rt.session(&m).unwrap();
            let x = inputs(&m, "mlp");
            assert_eq!(session.run("mlp", &x).unwrap().len(), 1);
        }
        // PoCL 3.1 and NVIDIA's OpenCL report none: a clear refusal.
        None => {
            let o = tcc_run(&[so_path, "--input=1x4x16xf32=0.5"], &[]);
            fails_with(
                &o,
                &format!(
                    "{} accepts no SPIR-V 1.0 intermediate language",
                    device.name
                ),
            );
            fails_with(&o, "CL_DEVICE_IL_VERSION is empty");
        }
    }
    // Kernel SPIR-V is refused by the Vulkan driver.
    let o = tcc_run(
        &[so_path, "--backend=vulkan", "--input=1x4x16xf32=0.5"],
        &[],
    );
    fails_with(&o, "for OpenCL (Kernel capability, no Shader)");
}
