//! The imported module's text around the emitted body: a comment naming
//! the model, the function's signature with named arguments and results,
//! its `func.return`, and the constants' resource section.

use std::fmt::Write as _;

use super::super::IoInfo;
use super::super::emit::{Emitter, Val, string_literal};
use super::super::proto::ModelProto;

/// The function's argument list and results (with `outputs` naming them).
pub(super) struct Signature<'a> {
    pub(super) name: &'a str,
    pub(super) arguments: &'a [String],
    pub(super) results: &'a [Val],
    pub(super) outputs: &'a [IoInfo],
}

/// The whole module: `emitter`'s body inside function `signature`.
pub(super) fn module_text(
    model: &ModelProto,
    opset: i64,
    signature: &Signature,
    emitter: &Emitter,
) -> String {
    let Signature {
        name: function,
        arguments,
        results,
        outputs,
    } = signature;
    let graph_name = model.graph.as_ref().map_or("", |g| g.name.as_str());
    let result_types: Vec<String> = results
        .iter()
        .zip(outputs.iter())
        .map(|(v, o)| {
            format!(
                "{} {{tcc.name = {}{}}}",
                v.ty.mlir(),
                string_literal(&o.name),
                super::inputs::unsigned_mark(v.ty.dtype)
            )
        })
        .collect();
    let mut text = String::new();
    let producer = if model.producer_name.is_empty() {
        String::new()
    } else {
        // On one comment line: a control character (a newline) in the
        // model's strings would end the comment and leave invalid MLIR.
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect()
        };
        format!(
            " from {} {}",
            clean(&model.producer_name),
            clean(&model.producer_version)
        )
    };
    let _ = writeln!(
        text,
        "// Imported by tcc from ONNX (IR version {}, opset {opset}){producer}.",
        model.ir_version
    );
    let graph_loc = format!(
        "loc({})",
        string_literal(if graph_name.is_empty() {
            "graph"
        } else {
            graph_name
        })
    );
    let _ = writeln!(text, "module {{");
    let _ = writeln!(
        text,
        "  func.func @{function}({}) -> ({}) {{",
        arguments.join(", "),
        result_types.join(", ")
    );
    text.push_str(emitter.body());
    let names: Vec<&str> = results.iter().map(|v| v.ssa()).collect();
    let types: Vec<String> = results.iter().map(|v| v.ty.mlir()).collect();
    let _ = writeln!(
        text,
        "    func.return {} : {} loc(\"graph outputs\")",
        names.join(", "),
        types.join(", ")
    );
    let _ = writeln!(text, "  }} {graph_loc}\n}} {graph_loc}");
    text.push_str(&emitter.resource_section());
    text
}
