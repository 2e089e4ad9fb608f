//! The C API (include/tcc_runtime.h, src/capi.rs) from C: the examples in
//! examples/c/ are built with `cc` against libtcc_runtime.so (and .a) and
//! run on the test fixture's artifact (tests/fixtures/test_model.c) on the
//! machine's OpenCL device. `bad_input.c` drives the bad input of issue 11
//! (truncated and foreign artifacts in memory, wrong buffers, NULLs, calls
//! after free, several threads) and is also built with
//! `-fsanitize=address,undefined`. Also the Rust API's loading from memory.

#[path = "../../test/support/mod.rs"]
mod support;

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use tcc_runtime::{HostTensor, Model};

/// target/debug (or the profile's directory), where cargo puts
/// libtcc_runtime.so and .a: the test binary is in its deps/.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    assert!(
        dir.join("libtcc_runtime.so").exists() && dir.join("libtcc_runtime.a").exists(),
        "libtcc_runtime.so/.a not in {}",
        dir.display()
    );
    dir
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Builds examples/c/<name>.c (or `name` itself, a path from the
/// repository's root, when it holds a `/`) into `dir`, linked against the
/// shared library (or the static one), with extra flags.
fn build_example(name: &str, dir: &Path, out: &str, static_lib: bool, flags: &[&str]) -> PathBuf {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let lib = library_dir();
    let output = dir.join(out);
    let mut cmd = Command::new(&cc);
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .args(flags)
        .arg("-I")
        .arg(repo().join("runtime/include"))
        .arg(if name.contains('/') {
            repo().join(name)
        } else {
            repo().join(format!("examples/c/{name}.c"))
        })
        .arg("-o")
        .arg(&output);
    if static_lib {
        cmd.arg(lib.join("libtcc_runtime.a"))
            .args(["-lpthread", "-ldl", "-lm"]);
    } else {
        cmd.arg("-L")
            .arg(&lib)
            .args(["-ltcc_runtime", "-lpthread"])
            .arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    let res = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cc}`: {e}"));
    assert!(
        res.status.success(),
        "building {name}.c failed:\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    output
}

fn run(exe: &Path, args: &[&Path], extra: &[&str], cache: &Path) -> (bool, String) {
    let out = Command::new(exe)
        .args(args)
        .args(extra)
        .env("TCC_CACHE_DIR", cache)
        // Its own PoCL kernel cache: these tests run at once (see
        // common::tool_command).
        .env("POCL_CACHE_DIR", cache.join("pocl"))
        .env_remove("TCC_DEVICE")
        // PoCL's own allocations are not freed at exit; only errors matter.
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .expect("run the example");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_c_api_runs_on_the_cuda_driver() {
    // The fake driver (device memory is host memory, kernels run on the
    // host) and the test artifact with its PTX.
    let dir = tempfile::tempdir().unwrap();
    let (driver, so) = fake_cuda_build(dir.path(), &[]);
    let exe = build_example(
        "runtime/tests/fixtures/capi_cuda.c",
        dir.path(),
        "capi_cuda",
        false,
        &[],
    );
    let out = Command::new(&exe)
        .arg(&so)
        .env("TCC_LIBCUDA", &driver)
        .env("FAKE_CUDA_DEVICES", "2")
        .output()
        .expect("run capi_cuda");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("ordinal 5: there is no CUDA device 5"),
        "{text}"
    );
    assert!(
        text.contains(
            "device: CUDA device 0: tcc fake CUDA device (sm_90, driver CUDA 12.8) (CUDA)"
        ),
        "{text}"
    );
    assert!(
        text.contains("compute queues: compute queues are OpenCL's"),
        "{text}"
    );
    assert!(
        text.contains("placement: placement axpb_arena=2: there are 2 devices"),
        "{text}"
    );
    assert!(text.contains("pipeline: ok"), "{text}");
    assert!(text.ends_with("ok\n"), "{text}");
    // Without the driver: a clean TCC_ERROR_DEVICE naming it.
    let out = Command::new(&exe)
        .arg(&so)
        .env("TCC_LIBCUDA", "/nonexistent/libcuda.so.1")
        .output()
        .expect("run capi_cuda");
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(
        text.contains("TCC_ERROR_DEVICE") && text.contains("libcuda"),
        "{text}"
    );
}

#[test]
fn the_c_api_runs_on_the_vulkan_driver() {
    // lavapipe here; the test artifact with Shader SPIR-V kernels.
    let dir = tempfile::tempdir().unwrap();
    let so = vulkan_model_build(dir.path());
    let exe = build_example(
        "runtime/tests/fixtures/capi_cuda.c",
        dir.path(),
        "capi_vulkan",
        false,
        &[],
    );
    let out = Command::new(&exe)
        .arg(&so)
        .arg("vulkan")
        .output()
        .expect("run capi_vulkan");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("ordinal 5: the Vulkan backend needs a Vulkan driver and device: Vulkan device 5 does not exist"), "{text}");
    assert!(text.contains("device: Vulkan device 0: "), "{text}");
    assert!(
        text.contains("compute queues: compute queues are OpenCL's; a Vulkan session's"),
        "{text}"
    );
    assert!(text.contains("pipeline: ok"), "{text}");
    assert!(text.ends_with("ok\n"), "{text}");
    // Without a loader: a clean TCC_ERROR_DEVICE naming it.
    let out = Command::new(&exe)
        .arg(&so)
        .arg("vulkan")
        .env("TCC_VULKAN_LOADER", "/nonexistent/libvulkan.so.1")
        .output()
        .expect("run capi_vulkan");
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(
        text.contains("TCC_ERROR_DEVICE") && text.contains("Vulkan loader"),
        "{text}"
    );
}

#[test]
fn c_example_runs_a_model_from_a_file_and_from_memory() {
    let (dir, so) = test_model(&[]);
    let exe = build_example("run_model", dir.path(), "run_model", false, &[]);
    let (ok, text) = run(&exe, &[&so], &["axpb"], &dir.path().join("cache"));
    assert!(ok, "{text}");
    assert!(
        text.contains("@axpb(x: 1000xf32) -> (y: 1000xf32)"),
        "{text}"
    );
    assert!(
        text.contains("@dup(x: 2x3xf32) -> (a: 2x3xf32, b: 2x3xf32)"),
        "{text}"
    );
    // y = 2x + i/2 on x = (i % 13 - 6) / 8.
    assert!(
        text.contains("result[0]: -1.5 -0.75 0 0.75 1.5 2.25 3 3.75 ..."),
        "{text}"
    );
    assert!(
        text.contains("ok: @axpb from a file and from memory agree"),
        "{text}"
    );
    assert!(text.starts_with("tcc 0.1.0 (git "), "{text}");
    // Usage errors: exit 2.
    let out = Command::new(&exe).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // An unknown function: exit 1 with the API's message.
    let (ok, text) = run(&exe, &[&so], &["nope"], &dir.path().join("cache"));
    assert!(
        !ok && text.contains("error: tcc_model_find_function")
            && text.contains("available functions: @axpb"),
        "{text}"
    );
}

#[test]
fn c_example_links_the_static_library() {
    let (dir, so) = test_model(&[]);
    let exe = build_example("run_model", dir.path(), "run_model_static", true, &[]);
    let (ok, text) = run(&exe, &[&so], &["dup"], &dir.path().join("cache"));
    assert!(ok, "{text}");
    assert!(
        text.contains("ok: @dup from a file and from memory agree"),
        "{text}"
    );
}

#[test]
fn c_api_refuses_bad_input_cleanly() {
    let (dir, so) = test_model(&[]);
    let exe = build_example("bad_input", dir.path(), "bad_input", false, &[]);
    let (ok, text) = run(&exe, &[&so], &["axpb"], &dir.path().join("cache"));
    assert!(ok, "{text}");
    assert!(text.ends_with("0 failures\n"), "{text}");
    assert!(!text.contains("FAIL"), "{text}");
}

#[test]
fn c_api_bad_input_under_address_and_undefined_behaviour_sanitizers() {
    let (dir, so) = test_model(&[]);
    let flags = [
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=undefined",
        "-fno-omit-frame-pointer",
    ];
    let exe = build_example("bad_input", dir.path(), "bad_input_asan", false, &flags);
    let (ok, text) = run(&exe, &[&so], &["axpb"], &dir.path().join("cache"));
    assert!(ok, "{text}");
    assert!(text.ends_with("0 failures\n"), "{text}");
    assert!(
        !text.contains("AddressSanitizer") && !text.contains("runtime error:"),
        "{text}"
    );
    let exe = build_example("run_model", dir.path(), "run_model_asan", false, &flags);
    let (ok, text) = run(&exe, &[&so], &["axpb"], &dir.path().join("cache"));
    assert!(ok && !text.contains("AddressSanitizer"), "{text}");
}

#[test]
fn c_header_compiles_as_cxx_and_pedantic_c() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("h.c");
    std::fs::write(
        &src,
        "#include \"tcc_runtime.h\"\nint main(void) { return tcc_api_version() == 0; }\n",
    )
    .unwrap();
    for (compiler, lang) in [("cc", "c"), ("c++", "c++")] {
        let out = Command::new(compiler)
            .args([
                "-x",
                lang,
                "-fsyntax-only",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
            ])
            .arg("-I")
            .arg(repo().join("runtime/include"))
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{compiler}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn rust_api_loads_a_model_from_memory_and_refuses_bad_bytes() {
    let (dir, so) = test_model(&[]);
    let bytes = std::fs::read(&so).unwrap();
    let model = Model::load_bytes(&bytes, "axpb model").unwrap();
    assert_eq!(model.functions()[0].name, "axpb");
    let rt = runtime(&dir.path().join("cache"), false);
    let mut session = rt.session(&model).unwrap();
    let x = ramp(1000);
    let y = session
        .run("axpb", &[HostTensor::from_f32(vec![1000], &x).unwrap()])
        .unwrap();
    assert_eq!(y[0].to_f32().unwrap(), axpb_expected(&x));

    let e = Model::load_bytes(&bytes[..bytes.len() / 2], "half")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot load artifact half: truncated or damaged"),
        "{e}"
    );
    let e = Model::load_bytes(b"PK\x03\x04 a zip file", "zip")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not an ELF file"), "{e}");
    // A truncated file on disk is refused the same way.
    let cut = dir.path().join("cut.so");
    std::fs::write(&cut, &bytes[..bytes.len() * 3 / 4]).unwrap();
    let e = Model::load(&cut).unwrap_err().to_string();
    assert!(e.contains("truncated or damaged"), "{e}");
    // An ELF object that is not a shared library.
    let e = Model::load(std::env::current_exe().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot load artifact"), "{e}");
}

#[test]
fn models_loaded_from_memory_one_after_another_stay_distinct() {
    // The loader knows an in-memory model by /proc/self/fd/N: a second
    // model must not get the first one back through a reused N.
    let (_dir, one) = test_model(&[]);
    let (_dir2, two) = test_model(&["TCC_TEST_ARENA"]);
    let a = Model::load_bytes(&std::fs::read(&one).unwrap(), "one").unwrap();
    let b = Model::load_bytes(&std::fs::read(&two).unwrap(), "two").unwrap();
    assert_eq!(a.functions().len() + 4, b.functions().len());
    drop(a);
    let c = Model::load_bytes(&std::fs::read(&two).unwrap(), "three").unwrap();
    assert!(c.function("axpb_arena").is_ok());
    assert!(b.function("axpb_arena").is_ok());
}

#[test]
fn c_api_refuses_an_abi_version_1_artifact_with_a_rebuild_message() {
    // Artifacts from before launch records (ABI 1 and 2) do not load;
    // from C too, the message says to rebuild.
    let (dir, so) = test_model(&["TCC_TEST_ABI_V1"]);
    let exe = build_example("run_model", dir.path(), "run_model", false, &[]);
    let (ok, text) = run(&exe, &[&so], &["axpb"], &dir.path().join("cache"));
    assert!(!ok, "{text}");
    assert!(text.contains("rebuild the model with this tcc"), "{text}");
}

/// Runs fixtures/capi_device.c (device tensors) built against the shared
/// library, with `args` after the model and `env`; its output, and whether
/// every check held.
fn run_device_program(
    dir: &Path,
    so: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    flags: &[&str],
) -> String {
    let exe = build_example(
        "runtime/tests/fixtures/capi_device.c",
        dir,
        "capi_device",
        false,
        flags,
    );
    let cache = dir.join("cache");
    let mut cmd = Command::new(&exe);
    cmd.arg(so)
        .args(args)
        .env("TCC_CACHE_DIR", &cache)
        .env("POCL_CACHE_DIR", cache.join("pocl"))
        .env_remove("TCC_DEVICE")
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run capi_device");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.ends_with("0 failures\n"), "{text}");
    assert!(!text.contains("FAIL"), "{text}");
    text
}

#[test]
fn the_c_api_runs_device_tensors_on_opencl() {
    // Two calls chained on device tensors equal the host round trip; the
    // bad input and the freed-order cases (fixtures/capi_device.c); also
    // built with -fsanitize=address,undefined.
    let (dir, so) = test_model(&[]);
    let text = run_device_program(dir.path(), &so, &[], &[], &[]);
    assert!(
        text.contains("ok   device chain equals the host round trip"),
        "{text}"
    );
    assert!(
        text.contains("ok   another session's tensor: TCC_ERROR_INVALID_ARGUMENT"),
        "{text}"
    );
    let flags = [
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=undefined",
        "-fno-omit-frame-pointer",
    ];
    let text = run_device_program(dir.path(), &so, &[], &[], &flags);
    assert!(
        !text.contains("AddressSanitizer") && !text.contains("runtime error:"),
        "{text}"
    );
}

#[test]
fn the_c_api_runs_device_tensors_on_cuda_without_host_copies() {
    // The fake driver counts cuMemcpyHtoD/DtoH: a host call copies, the
    // chain of two device calls copies nothing.
    let dir = tempfile::tempdir().unwrap();
    let (driver, so) = fake_cuda_build(dir.path(), &[]);
    let text = run_device_program(dir.path(), &so, &["cuda"], &[("TCC_LIBCUDA", &driver)], &[]);
    assert!(
        text.contains("ok   device chain equals the host round trip"),
        "{text}"
    );
    assert!(
        text.contains("host copies during a host call: 2\n"),
        "{text}"
    );
    assert!(
        text.contains("host copies during the device calls: 0\n"),
        "{text}"
    );
}

#[test]
fn the_c_api_refuses_device_tensors_on_vulkan() {
    let dir = tempfile::tempdir().unwrap();
    let so = vulkan_model_build(dir.path());
    let text = run_device_program(dir.path(), &so, &["vulkan"], &[], &[]);
    assert!(
        text.contains(
            "ok   vulkan upload: TCC_ERROR_INVALID_ARGUMENT: device tensors are OpenCL's and CUDA's"
        ),
        "{text}"
    );
}

/// Device tensors through the C entry points in this process (so that the
/// AddressSanitizer build, `make test-asan-ci`, covers them): a chain of
/// two calls on device tensors, then the session freed before its
/// tensors, which still read back and free.
#[test]
fn device_tensors_chain_calls_and_outlive_their_session() {
    use std::ffi::{CStr, CString, c_void};
    use tcc_runtime::capi::*;
    let (_dir, so) = test_model(&[]);
    let last_error = || {
        // SAFETY: tcc_last_error returns a NUL-terminated string.
        unsafe { CStr::from_ptr(tcc_last_error()) }
            .to_string_lossy()
            .into_owned()
    };
    let null = std::ptr::null_mut::<c_void>;
    let file = CString::new(so.display().to_string()).unwrap();
    let (mut model, mut runtime, mut session) = (null(), null(), null());
    assert_eq!(tcc_model_load_file(file.as_ptr(), &mut model), TCC_OK);
    assert_eq!(
        tcc_runtime_create(std::ptr::null(), &mut runtime),
        TCC_OK,
        "{}",
        last_error()
    );
    assert_eq!(
        tcc_session_create(runtime, model, &mut session),
        TCC_OK,
        "{}",
        last_error()
    );
    let x = ramp(1000);
    let shape = [1000i64];
    let input = TccTensor {
        data: x.as_ptr() as *mut c_void,
        bytes: 4000,
        dtype: tcc_abi::DTYPE_F32,
        rank: 1,
        shape: shape.as_ptr(),
    };
    let mut dx = null();
    assert_eq!(tcc_device_tensor_upload(session, &input, &mut dx), TCC_OK);
    let (mut dh, mut dy) = (null(), null());
    let axpb = c"axpb".as_ptr();
    assert_eq!(
        tcc_session_run_device(session, axpb, &dx, 1, &mut dh, 1),
        TCC_OK,
        "{}",
        last_error()
    );
    assert_eq!(
        tcc_session_run_device(session, axpb, &dh, 1, &mut dy, 1),
        TCC_OK,
        "{}",
        last_error()
    );
    assert_eq!(tcc_session_free(session), TCC_OK);
    assert_eq!(tcc_model_free(model), TCC_OK);
    assert_eq!(tcc_runtime_free(runtime), TCC_OK);
    let mut y = vec![0f32; 1000];
    assert_eq!(
        tcc_device_tensor_download(dy, y.as_mut_ptr() as *mut c_void, 4000),
        TCC_OK,
        "{}",
        last_error()
    );
    let twice = axpb_expected(&axpb_expected(&x));
    assert_eq!(y, twice);
    let mut small = [0f32; 10];
    assert_eq!(
        tcc_device_tensor_download(dh, small.as_mut_ptr() as *mut c_void, 40),
        TCC_ERROR_INVALID_ARGUMENT
    );
    assert!(
        last_error().contains("is 4000 bytes, but the buffer is 40 bytes"),
        "{}",
        last_error()
    );
    for t in [dx, dh, dy] {
        assert_eq!(tcc_device_tensor_free(t), TCC_OK);
    }
    assert_eq!(tcc_device_tensor_free(dy), TCC_ERROR_INVALID_HANDLE);
}
