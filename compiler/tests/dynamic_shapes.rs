//! Dynamic shapes (issue 33), as far as they reach today: `--dim
//! NAME=MIN..MAX` keeps an ONNX model's `dim_param` symbolic through the
//! import (`?` in every type that depends on it, the ranges on the module
//! as `#tcc.dims`, each input's dimensions named by `tcc.dim_names`), and
//! every step that cannot compile a symbolic dimension yet refuses it with
//! the op and the dimension named. The models are written at test time by
//! `test/onnx/dynamic/models.py` (the onnx package).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The test models, written once per test into a temporary directory.
fn models() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new("python3")
        .arg(repo().join("test/onnx/dynamic/models.py"))
        .arg(dir.path())
        .output()
        .expect("python3");
    assert!(
        output.status.success(),
        "models.py failed (is the onnx package installed? `make deps`): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    dir
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

fn ok(o: Output) -> String {
    assert!(o.status.success(), "tcc failed: {}", text(&o));
    text(&o)
}

fn fails(o: Output) -> String {
    assert_eq!(o.status.code(), Some(1), "expected exit 1: {}", text(&o));
    let t = text(&o);
    assert!(!t.contains("panicked"), "{t}");
    t
}

fn path(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

#[test]
fn a_declared_batch_stays_symbolic_through_the_import() {
    let dir = models();
    let mlp = ok(tcc(&[
        "import",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
    ]));
    assert!(
        mlp.contains("tcc.dims = #tcc.dims<names = [\"batch\"], min = [1], max = [64]>"),
        "{mlp}"
    );
    assert!(
        mlp.contains(
            "%arg0: tensor<?x32xf32> {tcc.dim_names = [\"batch\", \"\"], tcc.name = \"x\"}"
        ),
        "{mlp}"
    );
    assert!(
        mlp.contains("-> (tensor<?x10xf32> {tcc.name = \"y\"})"),
        "{mlp}"
    );
    // The MatMul's rows (batch) and the reshapes around it: the batch is
    // the reshapes' inferred extent.
    assert!(mlp.contains("-> tensor<1x?x64xf32>"), "{mlp}");
    assert!(mlp.contains("dense<[-1, 64]> : tensor<2xindex>"), "{mlp}");
    assert!(mlp.contains("tcc.softmax"), "{mlp}");
    assert!(!mlp.contains("1009") && !mlp.contains("1013"), "{mlp}");

    let cnn = ok(tcc(&[
        "import",
        &path(&dir, "cnn.onnx"),
        "--dim",
        "batch=1..64",
    ]));
    for expected in [
        "%arg0: tensor<?x3x16x16xf32>",
        "tosa.conv2d",
        "-> tensor<?x16x16x8xf32>",
        "tosa.max_pool2d",
        "-> tensor<?x8x8x8xf32>",
        "-> (tensor<?x10xf32> {tcc.name = \"y\"})",
    ] {
        assert!(cnn.contains(expected), "{expected} in {cnn}");
    }

    // The same name ties two inputs together.
    let two = ok(tcc(&[
        "import",
        &path(&dir, "two_inputs.onnx"),
        "--dim",
        "batch=2..8",
    ]));
    assert_eq!(
        two.matches("tensor<?x16xf32> {tcc.dim_names = [\"batch\", \"\"]")
            .count(),
        2,
        "{two}"
    );
    assert!(
        two.contains(
            "tosa.add %arg0, %arg1 : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>"
        ),
        "{two}"
    );
}

#[test]
fn input_shape_still_specializes_a_declared_dimension() {
    let dir = models();
    let mlp = ok(tcc(&[
        "import",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--input-shape",
        "x=5x32",
    ]));
    assert!(mlp.contains("%arg0: tensor<5x32xf32>"), "{mlp}");
    assert!(
        !mlp.contains("tcc.dim_names") && !mlp.contains('?'),
        "{mlp}"
    );
    let out = dir.path().join("mlp5.so");
    ok(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--input-shape",
        "x=5x32",
        "-o",
        &out.display().to_string(),
    ]));
    assert!(out.is_file());
}

#[test]
fn what_cannot_compile_a_symbolic_dimension_yet_says_so() {
    let dir = models();
    // The phases after the input: the first op computing on the batch is
    // named, with the dimension and its range; nothing is written.
    let out = dir.path().join("mlp.so");
    let error = fails(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "-o",
        &out.display().to_string(),
    ]));
    assert!(
        error.contains("'tosa.reshape' (node 'fc1') computes on the dynamically shaped type 'tensor<1x?x32xf32>' (dynamic dimension 'batch' (1..64)): dynamic dimension not supported yet"),
        "{error}"
    );
    assert!(!out.exists());
    // A value computed from the dimension (Shape) cannot stay symbolic in
    // the importer.
    let error = fails(tcc(&[
        "import",
        &path(&dir, "shape_of.onnx"),
        "--dim",
        "batch=1..8",
    ]));
    assert!(
        error.contains("a value computed from the dimension's extent: dynamic dimension 'batch' not supported yet by the ONNX importer"),
        "{error}"
    );
}

#[test]
fn bad_dimension_declarations_are_clear_errors() {
    let dir = models();
    let mlp = path(&dir, "mlp.onnx");
    let error = fails(tcc(&["compile", &mlp, "-o", "/dev/null"]));
    assert!(
        error.contains("graph input 'x' has the dynamic dimension 'batch' (shape batchx32): give its range with --dim batch=MIN..MAX"),
        "{error}"
    );
    let two = path(&dir, "two_inputs.onnx");
    let error = fails(tcc(&[
        "import",
        &two,
        "--dim",
        "batch=1..8",
        "--input-shape",
        "a=4x16",
    ]));
    assert!(
        error.contains("--input-shape gives 'a' a static shape, which fixes its dimension 'batch', but other inputs keep 'batch' symbolic"),
        "{error}"
    );
    let both = ok(tcc(&[
        "import",
        &two,
        "--dim",
        "batch=1..8",
        "--input-shape",
        "a=4x16",
        "--input-shape",
        "b=4x16",
    ]));
    assert!(
        both.contains("tensor<4x16xf32>") && !both.contains('?'),
        "{both}"
    );
    let error = fails(tcc(&["import", &mlp, "--dim", "seq=1..8"]));
    assert!(
        error.contains("--dim names 'seq', which no graph input of the model declares (its inputs' dynamic dimensions are: batch)"),
        "{error}"
    );
    let error = fails(tcc(&[
        "import",
        &mlp,
        "--dim",
        "batch=1..8",
        "--dim",
        "batch=1..4",
    ]));
    assert!(error.contains("--dim declares 'batch' twice"), "{error}");
    for (bad, expected) in [
        ("batch=0..8", "1 <= MIN <= MAX"),
        ("batch=9..8", "1 <= MIN <= MAX"),
        ("batch", "expected NAME=MIN..MAX"),
        ("batch=1..x", "expected NAME=MIN..MAX"),
    ] {
        let o = tcc(&["import", &mlp, "--dim", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains(expected), "{bad}: {}", text(&o));
    }
}
