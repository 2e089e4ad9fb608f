//! Snapshots of emitted code for a few small models: the OpenCL C program
//! and the host LLVM IR. A change in code generation shows up as a snapshot
//! diff to review (`cargo insta review`), never silently.

use std::path::Path;
use std::process::Command;

fn emit(model: &str, kind: &str) -> String {
    emit_for(model, kind, "generic")
}

fn emit_for(model: &str, kind: &str, target: &str) -> String {
    // Run in the models' directory with a relative path, so that locations
    // (and the lengths of strings embedding them) do not depend on where
    // the checkout is.
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/models");
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .current_dir(&directory)
        .args([
            "compile",
            &format!("--target={target}"),
            &format!("--emit={kind}"),
            model,
        ])
        .output()
        .expect("run tcc");
    assert!(
        output.status.success(),
        "tcc compile {model} --emit={kind}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stable(&String::from_utf8(output.stdout).expect("utf-8"))
}

/// The artifact's metadata names the git commit tcc was built from
/// (`tcc 0.1.0 (git 0123456789ab)`): replaced by a fixed 12-character
/// stand-in, with the length of the string constant holding it adjusted,
/// so that snapshots do not change with every commit.
fn stable(text: &str) -> String {
    const STAND_IN: &str = "GITHASH00000";
    text.lines()
        .map(|line| {
            // The checksummed description embeds the metadata, so its
            // bytes (and digest) change with the commit too; its contents
            // are tested in compiler/tests/reliability.rs.
            if line.starts_with("@tcc_description_v1 = ") {
                return "@tcc_description_v1 = [...] (the checksummed description)".to_string();
            }
            let Some(at) = line.find("(git ") else {
                return line.to_string();
            };
            let start = at + "(git ".len();
            let Some(len) = line[start..].find(')') else {
                return line.to_string();
            };
            let mut out = format!("{}{STAND_IN}{}", &line[..start], &line[start + len..]);
            // `[N x i8]`: the constant's length moves with the hash's.
            if let (Some(open), Some(x)) = (out.find('['), out.find(" x i8]")) {
                if let Ok(n) = out[open + 1..x].parse::<usize>() {
                    out = format!(
                        "{}{}{}",
                        &out[..open + 1],
                        n + STAND_IN.len() - len,
                        &out[x..]
                    );
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
        + if text.ends_with('\n') { "\n" } else { "" }
}

#[test]
fn opencl_c_mlp_head() {
    insta::assert_snapshot!(emit("mlp_head.mlir", "opencl-c"));
}

#[test]
fn opencl_c_dense_gemm() {
    insta::assert_snapshot!(emit("dense_gemm.mlir", "opencl-c"));
}

#[test]
fn opencl_c_elementwise_reduce() {
    insta::assert_snapshot!(emit("elementwise_reduce.mlir", "opencl-c"));
}

#[test]
fn host_llvm_ir_mlp_head() {
    insta::assert_snapshot!(emit("mlp_head.mlir", "llvm-ir"));
}

#[test]
fn host_llvm_ir_elementwise_reduce() {
    insta::assert_snapshot!(emit("elementwise_reduce.mlir", "llvm-ir"));
}

#[test]
fn opencl_c_depthwise_pool() {
    // pocl-cpu takes the window template for every window op; the GPU
    // targets only for large stride-1 layers, which this model is not.
    insta::assert_snapshot!(emit_for("depthwise_pool.mlir", "opencl-c", "pocl-cpu"));
}

#[test]
fn opencl_c_attention() {
    // The flash-attention template as the nvidia target blocks it.
    insta::assert_snapshot!(emit_for("attention.mlir", "opencl-c", "nvidia"));
}
