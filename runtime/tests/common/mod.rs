//! Helpers shared by the integration tests: compiling the C fixtures into
//! shared libraries, creating runtimes on the test machine's OpenCL
//! device (PoCL in CI), and running the tools and checking how they fail. A missing device fails the tests, it does not skip
//! them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tcc_runtime::{DeviceSelector, Runtime, RuntimeOptions};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Compiles `tests/fixtures/<source>` with `cc -shared -fPIC` into
/// `<dir>/<out>`, with extra `-D` defines.
pub fn compile_c(source: &str, dir: &Path, out: &str, defines: &[&str]) -> PathBuf {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let output = dir.join(out);
    let mut cmd = Command::new(&cc);
    cmd.args(["-shared", "-fPIC", "-O1", "-std=c11", "-Wall", "-Werror"])
        .arg("-I")
        .arg(&include)
        .args(defines.iter().map(|d| format!("-D{d}")))
        .arg(fixture(source))
        .arg("-o")
        .arg(&output);
    let res = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run C compiler `{cc}`: {e}"));
    assert!(
        res.status.success(),
        "compiling {source} failed:\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    output
}

/// The test model, built into a fresh temporary directory.
pub fn test_model(defines: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let so = compile_c("test_model.c", dir.path(), "model.so", defines);
    (dir, so)
}

/// The fake CUDA driver (`fixtures/fake_libcuda.c`) and the test model
/// with its PTX (the kernels' real parameter lists) and the arena
/// functions, plus `defines`, built into `dir`: (driver, model).
pub fn fake_cuda_build(dir: &Path, defines: &[&str]) -> (PathBuf, PathBuf) {
    let driver = compile_c("fake_libcuda.c", dir, "libcuda-fake.so", &[]);
    let mut all = vec!["TCC_TEST_PTX", "TCC_TEST_CUDA_PTX", "TCC_TEST_ARENA"];
    all.extend_from_slice(defines);
    (driver, compile_c("test_model.c", dir, "model.so", &all))
}

/// A runtime on the default device with the given cache directory.
pub fn runtime(cache_dir: &Path, profiling: bool) -> Runtime {
    let options = RuntimeOptions {
        profiling,
        cache_dir: Some(cache_dir.to_path_buf()),
        disk_cache: true,
        ..Default::default()
    };
    Runtime::with_options(DeviceSelector::Default, options).unwrap_or_else(|e| {
        panic!("these tests need an OpenCL device (apt-get install pocl-opencl-icd ocl-icd-libopencl1): {e}")
    })
}

/// A runtime on the default device with these options and cache directory.
pub fn runtime_with(cache_dir: &Path, options: RuntimeOptions) -> Runtime {
    let options = RuntimeOptions {
        cache_dir: Some(cache_dir.to_path_buf()),
        disk_cache: true,
        ..options
    };
    Runtime::with_options(DeviceSelector::Default, options)
        .unwrap_or_else(|e| panic!("these tests need an OpenCL device: {e}"))
}

/// Expected output of @axpb for input x.
pub fn axpb_expected(x: &[f32]) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, v)| 2.0 * v + 0.5 * i as f32)
        .collect()
}

pub fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i as f32) * 0.25 - 3.0).collect()
}

/// `tcc-run` or `tcc-benchmark` with `args`, on its own program cache and
/// the default device.
pub fn tool_command(name: &str, cache: &Path, args: &[&str]) -> Command {
    let exe = match name {
        "tcc-run" => env!("CARGO_BIN_EXE_tcc-run"),
        _ => env!("CARGO_BIN_EXE_tcc-benchmark"),
    };
    let mut command = Command::new(exe);
    command
        .args(args)
        .env("TCC_CACHE_DIR", cache)
        // PoCL's own kernel cache too: the tests of one binary run at once,
        // and two processes building the same program into one PoCL cache
        // race (PoCL 5 aborts on a half-written binary:
        // `pocl_binary_get_kernels_metadata: Assertion 'len > 0'`).
        .env("POCL_CACHE_DIR", cache.join("pocl"))
        .env_remove("TCC_DEVICE")
        .env_remove("TCC_BACKEND");
    command
}

/// Runs [`tool_command`] to completion.
pub fn tool(name: &str, cache: &Path, args: &[&str]) -> Output {
    tool_command(name, cache, args)
        .output()
        .expect("run the binary")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a clean failure: exit code 1, the message on stderr, no panic.
pub fn assert_fails_with(o: &Output, message: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains(message),
        "expected `{message}` in stderr:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// The test model with its kernels as Shader SPIR-V for the Vulkan driver
/// (`fixtures/test_kernels_vulkan.spvasm`, assembled with `spirv-as` from
/// spirv-tools, which `make deps` installs) and the arena functions,
/// built into `dir`.
pub fn vulkan_model_build(dir: &Path) -> PathBuf {
    let spv = dir.join("kernels.spv");
    let res = Command::new("spirv-as")
        .args(["--target-env", "vulkan1.1"])
        .arg(fixture("test_kernels_vulkan.spvasm"))
        .arg("-o")
        .arg(&spv)
        .output()
        .unwrap_or_else(|e| panic!("cannot run spirv-as (apt-get install spirv-tools): {e}"));
    assert!(
        res.status.success(),
        "spirv-as failed:\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let words = std::fs::read(&spv).unwrap();
    let bytes: Vec<String> = words.iter().map(|b| format!("0x{b:02x}")).collect();
    let header = dir.join("vulkan_kernels.h");
    std::fs::write(
        &header,
        format!(
            "static const unsigned char vulkan_spirv[] __attribute__((aligned(4))) = {{{}}};\n",
            bytes.join(",")
        ),
    )
    .unwrap();
    let define = format!("TCC_TEST_VULKAN=\"{}\"", header.display());
    compile_c(
        "test_model.c",
        dir,
        "model-vulkan.so",
        &["TCC_TEST_ARENA", &define],
    )
}
