//! The imported module around the recorded function: the function's
//! signature with named arguments and results, its `func.return`, the
//! model's name as the module's location, and the constants' resource
//! section; [`Module::print`] writes it as MLIR text.

use std::fmt::Write as _;

use super::super::IoInfo;
use super::super::dtype::TType;
use super::super::emit::ir::Op;
use super::super::emit::{Val, print, string_literal};
use super::super::proto::ModelProto;

/// The names of the attributes of the function's arguments and results.
pub const NAME: &str = "tcc.name";
pub const UNSIGNED: &str = "tcc.unsigned";
pub const MINIFLOAT: &str = "tcc.minifloat";
pub const DIM_NAMES: &str = "tcc.dim_names";

/// The value of an argument's or result's attribute: a string (`tcc.name
/// = "x"`), a unit attribute (`tcc.unsigned`) or an array of strings
/// (`tcc.dim_names = ["batch", ""]`).
#[derive(Clone, Debug, PartialEq)]
pub enum ArgAttr {
    Str(String),
    Unit,
    Strs(Vec<String>),
}

/// A function argument: its type, its attributes (`tcc.name`, ...) and
/// its name (its location).
#[derive(Clone, Debug, PartialEq)]
pub struct Argument {
    pub ty: TType,
    pub attrs: Vec<(&'static str, ArgAttr)>,
    pub name: String,
}

/// The imported module, recorded (not yet written).
#[derive(Clone, Debug)]
pub struct Module {
    /// The comment naming the model and its producer.
    pub header: String,
    /// The model's graph name (the module's location).
    pub graph: String,
    pub function: String,
    pub arguments: Vec<Argument>,
    /// The returned values, and the outputs naming them.
    pub results: Vec<Val>,
    pub outputs: Vec<IoInfo>,
    pub ops: Vec<Op>,
    pub resources: Vec<(String, Vec<u8>)>,
}

/// The comment line naming the model (its IR version, opset, producer).
pub(super) fn header(model: &ModelProto, opset: i64) -> String {
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
    format!(
        "// Imported by tcc from ONNX (IR version {}, opset {opset}){producer}.",
        model.ir_version
    )
}

impl Module {
    /// The attributes of result `index`: its output's name, and whether it
    /// holds unsigned integers or minifloats.
    pub fn result_attrs(&self, index: usize) -> Vec<(&'static str, ArgAttr)> {
        let mut attrs = vec![(NAME, ArgAttr::Str(self.outputs[index].name.clone()))];
        attrs.extend(super::inputs::unsigned_mark(self.results[index].ty.dtype));
        attrs
    }

    /// The module as MLIR text.
    pub fn print(&self) -> String {
        let result_types: Vec<String> = self
            .results
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{} {{{}}}", v.ty.mlir(), attrs_text(&self.result_attrs(i))))
            .collect();
        let arguments: Vec<String> = self
            .arguments
            .iter()
            .enumerate()
            .map(|(i, a)| {
                format!(
                    "%arg{i}: {} {{{}}} loc({})",
                    a.ty.mlir(),
                    attrs_text(&a.attrs),
                    string_literal(&a.name)
                )
            })
            .collect();
        let graph_loc = format!(
            "loc({})",
            string_literal(if self.graph.is_empty() {
                "graph"
            } else {
                &self.graph
            })
        );
        let mut text = String::new();
        let _ = writeln!(text, "{}", self.header);
        let _ = writeln!(text, "module {{");
        let _ = writeln!(
            text,
            "  func.func @{}({}) -> ({}) {{",
            self.function,
            arguments.join(", "),
            result_types.join(", ")
        );
        text.push_str(&print::body(&self.ops));
        let names: Vec<String> = self.results.iter().map(|v| print::name(v.id())).collect();
        let types: Vec<String> = self.results.iter().map(|v| v.ty.mlir()).collect();
        let _ = writeln!(
            text,
            "    func.return {} : {} loc(\"graph outputs\")",
            names.join(", "),
            types.join(", ")
        );
        let _ = writeln!(text, "  }} {graph_loc}\n}} {graph_loc}");
        text.push_str(&print::resource_section(&self.resources));
        text
    }
}

fn attrs_text(attrs: &[(&str, ArgAttr)]) -> String {
    let entries: Vec<String> = attrs
        .iter()
        .map(|(name, a)| match a {
            ArgAttr::Str(s) => format!("{name} = {}", string_literal(s)),
            ArgAttr::Unit => name.to_string(),
            ArgAttr::Strs(v) => {
                let quoted: Vec<String> = v.iter().map(|s| string_literal(s)).collect();
                format!("{name} = [{}]", quoted.join(", "))
            }
        })
        .collect();
    entries.join(", ")
}
