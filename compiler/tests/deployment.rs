//! Deployment (issue 11): models linked into a C program (`--emit=staticlib
//! --name`), host code for another machine (`--host-triple`), `-` for
//! standard input and output, the metadata `tcc inspect` reads, and the
//! compiler's introspection flags (`--mlir-timing`,
//! `--mlir-print-ir-after-all`, `--dump-phases-to`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn model(name: &str) -> PathBuf {
    repo().join("test/models").join(name)
}

fn tcc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(args)
        .output()
        .expect("run tcc")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", text(&o));
    o
}

/// A clean failure: exit 1, `error:` and the message, no panic.
fn fails_with(o: &Output, message: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(message), "expected `{message}` in:\n{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// target/debug, where cargo puts libtcc_runtime.so.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn compile(input: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![input.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut all = vec!["compile"];
    all.extend(args);
    ok(tcc(&all));
}

#[test]
fn two_models_link_into_one_c_program() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["mlp", "cnn"] {
        let source = model(&format!("{name}.mlir"));
        compile(
            &source,
            &d.join(format!("lib{name}.a")),
            &["--emit=staticlib", &format!("--name={name}")],
        );
        compile(&source, &d.join(format!("{name}.so")), &[]);
    }
    let lib = library_dir();
    assert!(lib.join("libtcc_runtime.so").exists(), "{}", lib.display());
    let exe = d.join("two_models");
    let build = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-Wall", "-Werror"])
        .arg(repo().join("examples/c/two_models.c"))
        .arg("-I")
        .arg(repo().join("runtime/include"))
        .arg(d.join("libmlp.a"))
        .arg(d.join("libcnn.a"))
        .arg("-L")
        .arg(&lib)
        .arg("-ltcc_runtime")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build));
    let run = Command::new(&exe)
        .arg(d.join("mlp.so"))
        .arg(d.join("cnn.so"))
        .env_remove("TCC_DEVICE")
        .output()
        .unwrap();
    let out = text(&run);
    assert!(run.status.success(), "{out}");
    // The program's own lines (stdout): the OpenCL driver may add build
    // warnings on stderr (PoCL on CPUs without AVX-512 warns about float16
    // arguments).
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("@mlp: ") && stdout.contains("@cnn: ") && stdout.ends_with("ok\n"),
        "{out}"
    );
    assert!(out.contains("linked model 0 made by tcc 0.1.0"), "{out}");
}

#[test]
fn name_prefixes_every_exported_symbol_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("mlp.o");
    compile(&model("mlp.mlir"), &obj, &["--emit=obj", "--name=my_mlp"]);
    let bytes = std::fs::read(&obj).unwrap();
    let has = |s: &str| {
        bytes
            .windows(s.len() + 2)
            .any(|w| w[0] == 0 && &w[1..=s.len()] == s.as_bytes() && w[s.len() + 1] == 0)
    };
    for symbol in ["tcc_artifact_v1", "tcc_kernel_ptx_v1", "tcc_metadata_v1"] {
        assert!(has(&format!("my_mlp_{symbol}")), "no my_mlp_{symbol}");
        assert!(!has(symbol), "unprefixed {symbol} left");
    }
    let ll = ok(tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "--emit=llvm-ir",
        "--name=m2",
    ]));
    let ll = String::from_utf8_lossy(&ll.stdout);
    assert!(ll.contains("@m2_tcc_artifact_v1()"), "{ll}");
    let o = tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "--emit=staticlib",
        "--name=2bad",
        "-o",
        "/dev/null",
    ]);
    fails_with(&o, "--name=2bad: the name prefixes C symbols");
    let o = tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "--name=mlp",
        "-o",
        "x.so",
    ]);
    fails_with(&o, "use it with --emit=staticlib, obj or llvm-ir");
    let o = tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "--emit=staticlib",
    ]);
    fails_with(&o, "give -o libNAME.a");
}

#[test]
fn host_triple_aarch64_gives_an_aarch64_shared_library() {
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("mlp-arm64.so");
    compile(
        &model("mlp.mlir"),
        &so,
        &["--host-triple=aarch64-unknown-linux-gnu"],
    );
    let bytes = std::fs::read(&so).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    assert_eq!(bytes[4], 2, "ELFCLASS64");
    assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 3, "ET_DYN");
    assert_eq!(
        u16::from_le_bytes([bytes[18], bytes[19]]),
        183,
        "EM_AARCH64"
    );
    // The runtime here refuses it by name instead of failing in dlopen.
    let e = tcc_runtime::Model::load(&so).unwrap_err().to_string();
    assert!(
        e.contains("built for AArch64, this machine is x86-64"),
        "{e}"
    );
    // An object for aarch64 too.
    let obj = dir.path().join("mlp-arm64.o");
    compile(
        &model("mlp.mlir"),
        &obj,
        &["--host-triple=aarch64-unknown-linux-gnu", "--emit=obj"],
    );
    let bytes = std::fs::read(&obj).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 183);
    let o = tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "--host-triple=riscv64-unknown-linux-gnu",
        "-o",
        "/dev/null",
    ]);
    fails_with(&o, "x86-64 and AArch64 back ends");
}

#[test]
fn dash_reads_standard_input_and_writes_standard_output() {
    let source = std::fs::read(model("mlp.mlir")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(["compile", "-", "--compile-to=graph"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&source).unwrap();
    let o = ok(child.wait_with_output().unwrap());
    assert!(String::from_utf8_lossy(&o.stdout).contains("func.func @mlp"));

    // The artifact to standard output: a loadable shared library, and no
    // file called `-`.
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(["compile", model("mlp.mlir").to_str().unwrap(), "-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(!dir.path().join("-").exists());
    assert_eq!(&o.stdout[..4], b"\x7fELF");
    let model = tcc_runtime::Model::load_bytes(&o.stdout, "stdout").unwrap();
    assert_eq!(
        model.functions()[0].signature(),
        "@mlp(1x4x16xf32) -> (1x4x10xf32)"
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(["compile", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    fails_with(
        &child.wait_with_output().unwrap(),
        "standard input is empty",
    );
}

#[test]
fn artifacts_carry_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("mlp.so");
    compile(&model("mlp.mlir"), &so, &["--target=pocl-cpu"]);
    let m = tcc_runtime::Model::load(&so).unwrap();
    let json: serde_json::Value = serde_json::from_str(m.metadata().expect("metadata")).unwrap();
    assert_eq!(json["target"], "pocl-cpu");
    assert!(
        json["producer"]
            .as_str()
            .unwrap()
            .starts_with("tcc 0.1.0 (git "),
        "{json}"
    );
    let kernels = json["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), m.kernel_names().len());
    assert_eq!(kernels[0]["kind"], "matmul");
    assert_eq!(kernels[0]["flops"], m.kernel_flops()[0]);
    assert!(kernels[0]["flops"].as_u64().unwrap() > 0);
    assert_eq!(json["functions"][0]["name"], "mlp");
}

/// A CPU artifact names its instruction-set level (issue 37, bad input):
/// loading a `pocl-cpu-avx512` build on a CPU without AVX-512 is a clear
/// error naming the missing features and the target to use, never an
/// illegal instruction. This machine's real features decide the real
/// load; a faked AVX2 CPU (every feature but AVX-512's) is checked
/// against the same artifact's metadata.
#[test]
fn a_cpu_artifact_is_refused_where_its_instructions_are_missing() {
    use tcc_runtime::cpu_features::{host_has, unsupported};
    let dir = tempfile::tempdir().unwrap();
    let avx2_cpu = |feature: &str| !feature.starts_with("avx512");
    for (target, arch) in [
        ("pocl-cpu-avx512", "x86-64-v4"),
        ("pocl-cpu-avx2", "x86-64-v3"),
    ] {
        let so = dir.path().join(format!("{target}.so"));
        compile(&model("mlp.mlir"), &so, &[&format!("--target={target}")]);
        let loaded = tcc_runtime::Model::load(&so);
        let fits = unsupported(&format!(r#"{{"cpu_arch":"{arch}"}}"#), host_has).is_none();
        let metadata = match loaded {
            Ok(m) => {
                assert!(fits, "{target} loaded on a CPU without {arch}");
                m.metadata().expect("metadata").to_string()
            }
            Err(e) => {
                assert!(!fits, "{target}: {e}");
                let message = e.to_string();
                assert!(message.contains("but this CPU lacks"), "{message}");
                continue;
            }
        };
        let json: serde_json::Value = serde_json::from_str(&metadata).unwrap();
        assert_eq!(json["target_name"], target);
        assert_eq!(json["cpu_arch"], arch);
        match unsupported(&metadata, avx2_cpu) {
            Some(why) => {
                assert_eq!(target, "pocl-cpu-avx512");
                assert!(
                    why.contains("compiled for pocl-cpu-avx512 (x86-64-v4), but this CPU lacks avx512f, avx512bw, avx512cd, avx512dq, avx512vl: compile it again with --target=pocl-cpu-avx2 (or --target=host)"),
                    "{why}"
                );
            }
            None => assert_eq!(target, "pocl-cpu-avx2"),
        }
    }
    // A GPU artifact names no CPU level.
    let so = dir.path().join("generic.so");
    compile(&model("mlp.mlir"), &so, &[]);
    let m = tcc_runtime::Model::load(&so).unwrap();
    let json: serde_json::Value = serde_json::from_str(m.metadata().unwrap()).unwrap();
    assert!(json.get("cpu_arch").is_none(), "{json}");
}

#[test]
fn introspection_flags_time_print_and_dump_the_phases() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("phases");
    let o = ok(tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "-o",
        dir.path().join("mlp.so").to_str().unwrap(),
        "--mlir-timing",
        "--dump-phases-to",
        dump.to_str().unwrap(),
    ]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Execution time report") && err.contains("Total Execution Time"),
        "{err}"
    );
    let mut files: Vec<String> = std::fs::read_dir(&dump)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "01-input.mlir",
            "02-graph.mlir",
            "03-linalg.mlir",
            "04-dispatch.mlir",
            "05-tile.mlir",
            "06-buffer.mlir",
            "07-gpu.mlir",
            "host.ll",
            "opencl-c.cl"
        ]
    );
    let linalg = std::fs::read_to_string(dump.join("03-linalg.mlir")).unwrap();
    assert!(
        linalg.contains("linalg.") && !linalg.contains("tosa.matmul"),
        "{linalg}"
    );
    assert!(
        std::fs::read_to_string(dump.join("07-gpu.mlir"))
            .unwrap()
            .contains("gpu.module")
    );
    assert!(
        std::fs::read_to_string(dump.join("host.ll"))
            .unwrap()
            .contains("tcc_artifact_v1")
    );

    let o = ok(tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "--compile-to=graph",
        "--mlir-print-ir-after-all",
    ]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("// -----// IR Dump After"), "{err}");
}

#[test]
fn progress_is_drawn_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let so = dir.path().join("mlp.so");
    let command = format!(
        "{} compile {} -o {}",
        env!("CARGO_BIN_EXE_tcc"),
        model("mlp.mlir").display(),
        so.display()
    );
    // `script` gives the command a pseudo-terminal (util-linux, in every Debian).
    let o = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("TCC_PROGRESS")
        .output()
        .expect("run script(1)");
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{shown}");
    assert!(
        shown.contains("tcc compile: ") && shown.contains("phase linalg (3/7)"),
        "{shown}"
    );
    assert!(tcc_runtime::Model::load(&so).is_ok());
    // Not on a terminal (a pipe, as here): nothing but the tool's own output.
    let o = ok(tcc(&[
        "compile",
        model("mlp.mlir").to_str().unwrap(),
        "-o",
        so.to_str().unwrap(),
    ]));
    assert!(o.stderr.is_empty(), "{}", text(&o));
}

/// `--target=auto` builds for the default OpenCL device's kind (PoCL's CPU
/// here: `host`, pocl-cpu with this CPU's vector width), as `--target=host`
/// does; without `--target` a script gets
/// generic and no probe; tcc-run warns once when an artifact's target does
/// not suit the device, naming what to rebuild with, and still runs it.
#[test]
fn the_right_target() {
    let dir = tempfile::tempdir().unwrap();
    let mlp = model("mlp.mlir");
    let mlp = mlp.to_str().unwrap();
    let built = |name: &str, extra: &[&str]| {
        let so = dir.path().join(name);
        let o = ok(tcc(
            &[&["compile", mlp, "-o", so.to_str().unwrap()], extra].concat()
        ));
        let info = ok(tcc(&["inspect", so.to_str().unwrap(), "--json"]));
        let json: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        (
            so,
            json["target"].as_str().unwrap().to_string(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (auto, target, err) = built("auto.so", &["--target=auto"]);
    assert_eq!(target, "pocl-cpu", "{err}");
    // On a CPU, auto is `host`: this CPU's vector width (a pocl-cpu artifact).
    assert!(err.contains("--target=auto: host for "), "{err}");
    let (_, target, _) = built("host.so", &["--target=host"]);
    assert_eq!(target, "pocl-cpu");
    // Not a terminal: no device probe, no note.
    let (generic, target, err) = built("generic.so", &[]);
    assert_eq!(target, "generic");
    assert!(!err.contains("note"), "{err}");
    fails_with(
        &tcc(&["compile", mlp, "--target=tpu", "-o", "/dev/null"]),
        "unknown target 'tpu' (targets: opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, host, generic, nvidia, pocl-cpu, vulkan, opencl-spirv, auto)",
    );

    let run = |so: &Path| {
        let o = Command::new(library_dir().join("tcc-run"))
            .arg(so)
            .arg("--input=1x4x16xf32=0.5")
            .env("TCC_CACHE_DIR", dir.path().join("cache"))
            .output()
            .expect("tcc-run (cargo build -p tcc-runtime --bins)");
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = run(&generic);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.contains("generic.so was built for --target=generic, but ")
            && err.contains("(CPU) runs --target=pocl-cpu builds faster: rebuild with `tcc compile --target=pocl-cpu`"),
        "{err}"
    );
    // tcc-run's own warnings start `warning:`; PoCL's compiler may print
    // its diagnostics count ("14 warnings generated.", PoCL 3.1 on an AMD
    // EPYC's first build) on the same stream, which is not tcc-run's.
    assert!(!run(&auto).contains("warning:"));
}

/// `tcc compile --prepare` (issue 35 item 3, issue 37): the driver's binary
/// for this machine's device lands next to the artifact, and a first run on
/// empty tcc and PoCL caches loads it instead of compiling the kernels; the
/// flag is refused where there is no artifact file to prepare.
#[test]
fn prepare_moves_the_kernel_build_to_build_time() {
    let dir = tempfile::tempdir().unwrap();
    let mlp = model("mlp.mlir");
    let so = dir.path().join("mlp.so");
    let o = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(["compile", mlp.to_str().unwrap(), "--target=pocl-cpu"])
        .arg("-o")
        .arg(&so)
        .arg("--prepare")
        .env("POCL_CACHE_DIR", dir.path().join("pocl-build"))
        .output()
        .unwrap();
    let err = text(&ok(o));
    assert!(err.contains("tcc compile: --prepare: wrote "), "{err}");
    let prepared = dir.path().join("mlp.so.prepared");
    let entries: Vec<PathBuf> = std::fs::read_dir(&prepared)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0].extension().is_some_and(|x| x == "bin"));

    let run = |tag: &str| {
        let o = Command::new(library_dir().join("tcc-run"))
            .arg(&so)
            .args(["--input=1x4x16xf32=0.5", "--verbose"])
            .env("TCC_CACHE_DIR", dir.path().join(format!("cache-{tag}")))
            .env("POCL_CACHE_DIR", dir.path().join(format!("pocl-{tag}")))
            .output()
            .expect("tcc-run (cargo build -p tcc-runtime --bins)");
        assert!(o.status.success(), "{}", text(&o));
        o
    };
    let first = run("a");
    let err = String::from_utf8_lossy(&first.stderr);
    assert!(
        err.contains("loaded from the artifact's prepared binary"),
        "{err}"
    );
    assert!(
        !err.contains("in the background"),
        "nothing to write: {err}"
    );

    // A damaged entry is refused, and the kernels are built from source
    // with the same results.
    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&entries[0], &bytes).unwrap();
    let second = run("b");
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("warning: not using the prepared program: ")
            && err.contains("payload hash mismatch"),
        "{err}"
    );
    assert!(err.contains("built from source"), "{err}");
    assert_eq!(first.stdout, second.stdout);

    for extra in [&["--emit=mlir"][..], &["--compile-to=linalg"]] {
        let o = tcc(&[
            &["compile", mlp.to_str().unwrap(), "--prepare", "-o"],
            &[dir.path().join("x").to_str().unwrap()][..],
            extra,
        ]
        .concat());
        fails_with(&o, "--prepare builds an artifact's kernels for a device");
    }
    fails_with(
        &tcc(&["compile", mlp.to_str().unwrap(), "--prepare", "-o", "-"]),
        "--prepare builds an artifact's kernels for a device",
    );
    // No such device: tcc-run's own error, then tcc compile's, exit 1.
    let o = tcc(&[
        "compile",
        mlp.to_str().unwrap(),
        "--prepare=no-such-device",
        "-o",
        dir.path().join("y.so").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no OpenCL device matches \"no-such-device\"")
            && err.contains("error: --prepare: `tcc-run --prepare ")
            && err.contains("the artifact is written, unprepared"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(!dir.path().join("y.so.prepared").exists());
}
