//! Driver features that no other test exercises: the importer's options
//! (`--demote-f64`, `--raw`, `--constants=hex`), `tcc run --target=reference`
//! beside the OpenCL run, the `--emit` forms (`mlir`, `obj`, `opencl-c -o
//! DIR`), `--compile-to=codegen`, and the element types tcc does (i8) and
//! does not (f16) compute in. Each test checks what the feature produces,
//! not only that the command succeeds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn tcc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(args)
        .output()
        .expect("run tcc")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed:\n{}", stderr(&o));
    stdout(&o)
}

/// `tcc-opt FILE` (parse, verify, print).
fn tcc_opt(path: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_tcc-opt"))
        .arg(path)
        .output()
        .expect("run tcc-opt");
    ok(o, &format!("tcc-opt {}", path.display()))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a temporary file");
    path
}

#[test]
fn import_demote_f64_computes_in_f32() {
    let model = repo("test/onnx/extra/float64_add.onnx");
    let model = model.to_str().unwrap();
    // By default float64 stays float64 and computes in double: 1e-3 is
    // not float32's 0.001 (which would print 4.0010000000000003).
    let plain = ok(tcc(&["import", model]), "import");
    assert!(plain.contains("tensor<4xf64>"), "{plain}");
    let out = ok(
        tcc(&["run", model, "--input", "4xf64=1,2,3,4"]),
        "tcc run (f64)",
    );
    assert!(out.contains("result[0]: 4xf64=[1.5 3.25 1 4.001]"), "{out}");
    let mlir = ok(
        tcc(&["import", "--demote-f64", model]),
        "import --demote-f64",
    );
    assert!(
        mlir.contains("tensor<4xf32>") && !mlir.contains("f64"),
        "{mlir}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "f32.mlir", &mlir);
    let path = path.to_str().unwrap();
    // x + [0.5, 1.25, -2, 1e-3], exactly as float32 adds it.
    let want = "result[0]: 4xf32=[1.5 3.25 1 4.001]";
    for target in ["reference", "auto"] {
        let out = ok(
            tcc(&["run", path, "--target", target, "--input", "4xf32=1,2,3,4"]),
            &format!("tcc run --target={target}"),
        );
        assert!(out.contains(want), "--target={target}: {out}");
    }
}

#[test]
fn import_raw_is_generic_syntax_for_the_same_module() {
    let model = repo("test/onnx/models/where_compare/model.onnx");
    let model = model.to_str().unwrap();
    let pretty = ok(tcc(&["import", model]), "import");
    let raw = ok(tcc(&["import", "--raw", model]), "import --raw");
    assert!(raw.contains("\"tosa.greater\"("), "{raw}");
    assert!(!pretty.contains("\"tosa.greater\"("), "{pretty}");
    let dir = tempfile::tempdir().unwrap();
    let a = tcc_opt(&write(dir.path(), "pretty.mlir", &pretty));
    let b = tcc_opt(&write(dir.path(), "raw.mlir", &raw));
    assert_eq!(a, b, "--raw and the default import differ after parsing");
}

#[test]
fn import_constants_hex_writes_hex_literals_with_the_same_values() {
    let model = repo("test/onnx/models/windows/model.onnx");
    let model = model.to_str().unwrap();
    let resource = ok(tcc(&["import", model]), "import");
    let hex = ok(
        tcc(&["import", "--constants=hex", model]),
        "import --constants=hex",
    );
    assert!(resource.contains("dense_resource<"), "{resource}");
    assert!(
        hex.contains("dense<\"0x") && !hex.contains("dense_resource<"),
        "{hex}"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for (name, text) in [("resource.mlir", &resource), ("hex.mlir", &hex)] {
        let path = write(dir.path(), name, text);
        results.push(ok(
            tcc(&[
                "run",
                path.to_str().unwrap(),
                "--target=reference",
                "--input",
                "1x3x7x8xf32=0.25",
            ]),
            name,
        ));
    }
    assert!(results[0].contains("result[3]"), "{}", results[0]);
    assert_eq!(results[0], results[1]);
}

/// A small model whose results are exact in f32, run on the reference and
/// on OpenCL.
const EXACT_MODEL: &str = r#"
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>) {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %br = tosa.const_shape {values = dense<[1, 3]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %b2 = tosa.reshape %b, %br : (tensor<3xf32>, !tosa.shape<2>) -> tensor<1x3xf32>
  %p = tosa.mul %a, %b2, %shift : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1xi8>) -> tensor<2x3xf32>
  %m = tosa.reduce_max %p {axis = 1 : i32} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %p, %m : tensor<2x3xf32>, tensor<2x1xf32>
}
"#;

#[test]
fn run_target_reference_matches_known_values_and_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "exact.mlir", EXACT_MODEL);
    let path = path.to_str().unwrap();
    let want = "result[0]: 2x3xf32=[[1 -4 1.5][-2 0.5 6]]";
    let want_max = "result[1]: 2x1xf32=[[1.5][6]]";
    for target in ["reference", "pocl-cpu", "nvidia", "generic"] {
        let out = ok(
            tcc(&[
                "run",
                path,
                &format!("--target={target}"),
                "--input",
                "2x3xf32=1,2,3,-2,-0.25,12",
                "--input",
                "3xf32=1,-2,0.5",
            ]),
            &format!("tcc run --target={target}"),
        );
        assert!(
            out.contains(want) && out.contains(want_max),
            "--target={target}:\n{out}"
        );
    }
    // An unknown target is an error that names it and the choices.
    let bad = tcc(&["run", path, "--target=cpu"]);
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("unknown target 'cpu'") && stderr(&bad).contains("`reference`"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn emit_mlir_is_the_gpu_phase_and_parses() {
    let mlp = repo("lit/phases/Inputs/mlp.mlir");
    let text = ok(
        tcc(&["compile", mlp.to_str().unwrap(), "--emit=mlir"]),
        "--emit=mlir",
    );
    assert!(text.contains("gpu.container_module"), "{text}");
    assert_eq!(text.matches("gpu.func @").count(), 2, "{text}");
    assert_eq!(text.matches("gpu.launch_func").count(), 2, "{text}");
    assert!(text.contains("func.func @mlp"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let reparsed = tcc_opt(&write(dir.path(), "gpu.mlir", &text));
    assert!(reparsed.contains("gpu.module"), "{reparsed}");
}

#[test]
fn emit_obj_is_a_relocatable_object_with_the_entry_points() {
    let mlp = repo("lit/phases/Inputs/mlp.mlir");
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("mlp.o");
    ok(
        tcc(&[
            "compile",
            mlp.to_str().unwrap(),
            "--emit=obj",
            "-o",
            obj.to_str().unwrap(),
        ]),
        "--emit=obj",
    );
    let bytes = std::fs::read(&obj).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF", "not an ELF file");
    // e_type 1: ET_REL (relocatable), little-endian.
    assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 1, "not ET_REL");
    let nm = Command::new("/usr/lib/llvm-22/bin/llvm-nm")
        .arg(&obj)
        .output()
        .expect("llvm-nm (make deps)");
    let symbols = ok(nm, "llvm-nm");
    assert!(symbols.contains("T tcc_artifact_v1"), "{symbols}");
    assert!(symbols.contains("tcc_entry_mlp"), "{symbols}");
    // The weights come from the weights object (merged in by the linker),
    // defined in read-only data, not LLVM's private globals.
    assert!(symbols.contains(" R tcc.constant.0\n"), "{symbols}");
    assert!(!symbols.contains(" U tcc.constant."), "{symbols}");
}

#[test]
fn emit_opencl_c_into_a_directory_writes_one_file_per_kernel() {
    let mlp = repo("lit/phases/Inputs/mlp.mlir");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kernels");
    ok(
        tcc(&[
            "compile",
            mlp.to_str().unwrap(),
            "--emit=opencl-c",
            "-o",
            out.to_str().unwrap(),
        ]),
        "--emit=opencl-c -o DIR",
    );
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["batch_matmul_add_min_max_0.cl", "softmax_1.cl"],
        "{files:?}"
    );
    for file in &files {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        let kernel = file.trim_end_matches(".cl");
        assert_eq!(text.matches("__kernel").count(), 1, "{file}: {text}");
        assert!(text.contains(&format!("void {kernel}(")), "{file}: {text}");
        assert!(
            text.contains("inline float tcc_maximumf"),
            "{file}: no prelude"
        );
    }
}

#[test]
fn compile_to_codegen_prints_the_kernels() {
    let mlp = repo("lit/phases/Inputs/mlp.mlir");
    let text = ok(
        tcc(&["compile", mlp.to_str().unwrap(), "--compile-to=codegen"]),
        "--compile-to=codegen",
    );
    assert!(
        text.starts_with("/* Generated by tcc. OpenCL C 1.2. */"),
        "{text}"
    );
    assert_eq!(text.matches("__kernel").count(), 2, "{text}");
    let bad = tcc(&["compile", mlp.to_str().unwrap(), "--compile-to=assembly"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

#[test]
fn i8_tensors_wrap_like_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "i8.mlir",
        "func.func @f(%a: tensor<4xi8>, %b: tensor<4xi8>) -> tensor<4xi8> {\n  \
         %0 = tosa.add %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>\n  \
         return %0 : tensor<4xi8>\n}\n",
    );
    let path = path.to_str().unwrap();
    for target in ["reference", "auto"] {
        let out = ok(
            tcc(&[
                "run",
                path,
                &format!("--target={target}"),
                "--input",
                "4xi8=1,2,100,-128",
                "--input",
                "4xi8=1,2,100,-1",
            ]),
            target,
        );
        // 100 + 100 and -128 - 1 wrap in 8 bits.
        assert!(
            out.contains("result[0]: 4xi8=[2 4 -56 127]"),
            "--target={target}: {out}"
        );
    }
}

#[test]
fn half_tensors_compute_in_f32_registers() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "half.mlir",
        "func.func @f(%a: tensor<4xf16>, %b: tensor<4xbf16>) -> (tensor<4xf16>, tensor<4xbf16>) {\n  \
         %0 = tosa.add %a, %a : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>\n  \
         %1 = tosa.cast %b : (tensor<4xbf16>) -> tensor<4xf32>\n  \
         %2 = tosa.exp %1 : (tensor<4xf32>) -> tensor<4xf32>\n  \
         %3 = tosa.cast %2 : (tensor<4xf32>) -> tensor<4xbf16>\n  \
         return %0, %3 : tensor<4xf16>, tensor<4xbf16>\n}\n",
    );
    let out = ok(
        tcc(&[
            "run",
            path.to_str().unwrap(),
            "--input",
            "4xf16=1,2.5,-3,65504",
            "--input",
            "4xbf16=0,1,2,-1",
        ]),
        "tcc run (f16, bf16)",
    );
    // 65504 + 65504 overflows half; e^1 = 2.71828 rounds to bf16's
    // 2.71875, e^2 = 7.389 to 7.375, e^-1 = 0.36788 to 0.3671875.
    assert!(out.contains("result[0]: 4xf16=[2 5 -6 inf]"), "{out}");
    assert!(
        out.contains("result[1]: 4xbf16=[1 2.71875 7.375 0.3671875]"),
        "{out}"
    );
}

#[test]
fn float8_tensors_are_rejected_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "f8.mlir",
        "func.func @f(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {\n  \
         return %a : tensor<4xf8E4M3FN>\n}\n",
    );
    let o = tcc(&["compile", path.to_str().unwrap(), "-o", "/dev/null"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("argument 0 of @f has the type 'tensor<4xf8E4M3FN>': tcc's kernels do not handle f8E4M3FN elements")
            && !err.contains("panicked"),
        "{err}"
    );
}

/// ONNX `Attention` (opset 23) with a runtime mask and grouped K/V heads
/// imports as one `tcc.attention` (the mask its operand, the K/V heads not
/// repeated); with a softcap it stays the composite that
/// `tcc-raise-attention` looks at (a `tcc.softmax` between two matmuls).
#[test]
fn onnx_attention_imports_as_one_attention_op() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import sys, onnx
from onnx import helper, TensorProto as T
def model(path, **attrs):
    node = helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"], **attrs)
    graph = helper.make_graph([node], "g",
        [helper.make_tensor_value_info("q", T.FLOAT, [2, 4, 8, 16]),
         helper.make_tensor_value_info("k", T.FLOAT, [2, 2, 8, 16]),
         helper.make_tensor_value_info("v", T.FLOAT, [2, 2, 8, 16]),
         helper.make_tensor_value_info("mask", T.FLOAT, [2, 1, 8, 8])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 4, 8, 16])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)]), path)
model(sys.argv[1] + "/plain.onnx")
model(sys.argv[1] + "/softcap.onnx", softcap=30.0)
"#;
    let status = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir.path())
        .status()
        .expect("python3 (make deps installs the onnx package)");
    assert!(status.success(), "writing the models failed");
    let plain = ok(
        tcc(&["import", dir.path().join("plain.onnx").to_str().unwrap()]),
        "tcc import plain.onnx",
    );
    assert_eq!(plain.matches("tcc.attention").count(), 1, "{plain}");
    assert!(
        plain.contains("tcc.attention %arg0, %arg1, %arg2 mask %arg3 : tensor<2x1x8x8xf32>"),
        "{plain}"
    );
    for absent in ["tcc.softmax", "tosa.matmul", "tosa.tile"] {
        assert!(!plain.contains(absent), "{absent} in:\n{plain}");
    }
    let capped = ok(
        tcc(&["import", dir.path().join("softcap.onnx").to_str().unwrap()]),
        "tcc import softcap.onnx",
    );
    assert!(!capped.contains("tcc.attention"), "{capped}");
    assert!(
        capped.contains("tcc.softmax") && capped.contains("tosa.tanh"),
        "{capped}"
    );
}
