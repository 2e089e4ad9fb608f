//! Compile memory proportional to the model (issue 38): `tcc compile`
//! runs as a child and its peak RSS (from `wait4`'s `ru_maxrss`, the child
//! and the linker it runs) is compared between a model with a large
//! constant and the same model with a tiny one. The difference must stay
//! within twice the large constant's bytes: the weights may be held once
//! in memory and once in flight to the artifact, not hex-encoded, printed
//! as LLVM IR or copied through LLVM's constant arrays (which took 7× a
//! constant's size before).
//!
//! A memory bound, not a time bound: it holds on a loaded machine.

use std::path::Path;
use std::process::Command;

use prost::Message as _;
use tcc_compiler::front::onnx::proto;

/// The peak resident bytes of `tcc ARGS` (the process and the children it
/// waited for), failing the test on a non-zero exit.
// The child is reaped by `wait4` (which gives its rusage), not `wait`.
#[allow(clippy::zombie_processes)]
fn peak_rss(args: &[&str]) -> u64 {
    let child = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run tcc");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `child` is this process's own child and not yet reaped.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "tcc {args:?} failed (status {status}): {stderr}"
    );
    usage.ru_maxrss as u64 * 1024
}

/// An ONNX model `y = x + w` with a float32 initializer `w` of `elements`
/// elements (a non-uniform pattern, so that nothing folds it to a splat).
fn add_model(path: &Path, elements: usize) {
    let dims = vec![elements as i64];
    let tensor_type = |name: &str| proto::ValueInfoProto {
        name: name.into(),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: 1,
                    shape: Some(proto::TensorShapeProto {
                        dim: vec![proto::tensor_shape_proto::Dimension {
                            value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(
                                elements as i64,
                            )),
                            ..Default::default()
                        }],
                    }),
                },
            )),
            ..Default::default()
        }),
        ..Default::default()
    };
    let weights: Vec<u8> = (0..elements)
        .flat_map(|i| ((i % 1021) as f32 * 0.001).to_le_bytes())
        .collect();
    let model = proto::ModelProto {
        ir_version: 8,
        opset_import: vec![proto::OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(proto::GraphProto {
            name: "add".into(),
            node: vec![proto::NodeProto {
                name: "add".into(),
                op_type: "Add".into(),
                input: vec!["x".into(), "w".into()],
                output: vec!["y".into()],
                ..Default::default()
            }],
            initializer: vec![proto::TensorProto {
                name: "w".into(),
                dims,
                data_type: 1,
                raw_data: weights.into(),
                ..Default::default()
            }],
            input: vec![tensor_type("x")],
            output: vec![tensor_type("y")],
            ..Default::default()
        }),
        ..Default::default()
    };
    std::fs::write(path, model.encode_to_vec()).expect("write the model");
}

/// Returns `x + c` and `c`, a splat `tosa.const` of `elements` float32s
/// (returned, so that the artifact must hold all its bytes).
fn splat_model(path: &Path, elements: usize) {
    let ty = format!("tensor<{elements}xf32>");
    std::fs::write(
        path,
        format!(
            "func.func @main(%x: {ty}) -> ({ty}, {ty}) {{\n  \
               %c = \"tosa.const\"() <{{values = dense<1.5> : {ty}}}> : () -> {ty}\n  \
               %y = tosa.add %x, %c : ({ty}, {ty}) -> {ty}\n  \
               return %y, %c : {ty}, {ty}\n}}\n"
        ),
    )
    .expect("write the model");
}

const LARGE: usize = 16 << 20; // float32 elements: 64 MiB
const SMALL: usize = 256;

/// Checks that compiling the large model costs at most twice its
/// constant's bytes more than compiling the small one.
fn check(large: &Path, small: &Path, what: &str, target: &str) {
    let directory = large.parent().unwrap();
    let out = directory.join("out.so");
    let compile = |model: &Path| {
        peak_rss(&[
            "compile",
            model.to_str().unwrap(),
            &format!("--target={target}"),
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let base = compile(small);
    let peak = compile(large);
    let bytes = (LARGE * 4) as u64;
    let extra = peak.saturating_sub(base);
    eprintln!(
        "{what} ({target}): peak RSS {} MB with a {} MB constant, {} MB with a tiny one: {:.2}x the constant",
        peak >> 20,
        bytes >> 20,
        base >> 20,
        extra as f64 / bytes as f64
    );
    assert!(
        extra <= 2 * bytes,
        "{what}: compiling a {} MB constant took {} MB more than a tiny one (bound: 2x the constant)",
        bytes >> 20,
        extra >> 20
    );
}

#[test]
fn onnx_weights_cost_at_most_twice_their_bytes() {
    let directory = tempfile::tempdir().unwrap();
    let large = directory.path().join("large.onnx");
    let small = directory.path().join("small.onnx");
    add_model(&large, LARGE);
    add_model(&small, SMALL);
    check(&large, &small, "an ONNX initializer", "nvidia");
}

#[test]
fn splat_constants_cost_at_most_twice_their_bytes() {
    let directory = tempfile::tempdir().unwrap();
    let large = directory.path().join("large.mlir");
    let small = directory.path().join("small.mlir");
    splat_model(&large, LARGE);
    splat_model(&small, SMALL);
    check(&large, &small, "a splat constant", "pocl-cpu");
}
