//! The node walk: each live node, in dependency order, imported by its
//! op's importer (`ops::import_node`) with the values of its inputs; its
//! outputs join the value table under their ONNX names.

use std::collections::HashSet;
use std::path::Path;

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::node::{Node, Value};
use super::super::ops;
use super::super::proto::{GraphProto, NodeProto};
use super::{Importer, Values, half, unsigned};

/// Imports the nodes of `order` (`(index in the graph, node)`, as
/// `live_nodes` orders them) into `values`. Each node's ops are located at
/// the node's name, or with `name_by_outputs` at its first output's
/// (`ImportOptions::name_by_outputs`).
pub(super) fn import_nodes(
    imp: &mut Importer,
    graph: &GraphProto,
    order: &[(usize, &NodeProto)],
    (opset, name_by_outputs): (i64, bool),
    base_dir: Option<&Path>,
    values: &mut Values,
) -> Result<()> {
    let used: HashSet<&str> = order
        .iter()
        .flat_map(|(_, n)| n.input.iter().map(String::as_str))
        .chain(graph.output.iter().map(|o| o.name.as_str()))
        .collect();
    let total = order.len();
    for (position, &(index, proto)) in order.iter().enumerate() {
        let where_ = || describe(proto, index, opset, (position, total));
        let output_name = proto
            .output
            .first()
            .filter(|o| name_by_outputs && !o.is_empty());
        let location = if let Some(output) = output_name {
            output.clone()
        } else if proto.name.is_empty() {
            format!("{}_{index}", proto.op_type)
        } else {
            proto.name.clone()
        };
        imp.e.set_location(&location);
        imp.node.clone_from(&location);
        let mut node_inputs = Vec::new();
        for name in &proto.input {
            if name.is_empty() {
                node_inputs.push(None);
            } else {
                match values.get(name) {
                    Some(v) => node_inputs.push(Some(v.clone())),
                    None => bail!("{}: input '{name}' is not defined", where_()),
                }
            }
        }
        let outputs = import_in_compute_type(imp, proto, opset, node_inputs, base_dir)
            .map_err(|e| e.context(where_()))?;
        for (i, name) in proto.output.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            match outputs.get(i) {
                Some(Value::Const(c)) if c.dtype == DType::F64 && imp.demote_f64 => {
                    let value = Value::constant(c.cast(DType::F32));
                    imp.name(&value, name);
                    values.insert(name.clone(), value);
                }
                Some(value) => {
                    imp.name(value, name);
                    values.insert(name.clone(), value.clone());
                }
                None if used.contains(name.as_str()) => {
                    bail!(
                        "{}: output #{i} ('{name}') is used but the importer does not produce it",
                        where_()
                    );
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// Imports one node; a node computing on f16/bf16 tensors computes in f32
/// between casts (see `half`), one on unsigned tensors in int64 (see
/// `unsigned`).
fn import_in_compute_type(
    imp: &mut Importer,
    proto: &NodeProto,
    opset: i64,
    inputs: Vec<Option<Value>>,
    base_dir: Option<&Path>,
) -> Result<Vec<Value>> {
    let node = Node {
        proto,
        opset,
        inputs,
    };
    if let Some(unsigned) = unsigned::unsigned_compute_type(&node)? {
        let inputs = node
            .inputs
            .iter()
            .map(|input| input.as_ref().map(|v| unsigned::widen(imp, v)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let wide = Node {
            proto,
            opset,
            inputs,
        };
        return ops::import_node(imp, &wide, base_dir)?
            .into_iter()
            .enumerate()
            .map(|(index, output)| unsigned::narrow(imp, node.op(), index, output, unsigned))
            .collect();
    }
    let Some(half) = half::half_compute_type(&node) else {
        return ops::import_node(imp, &node, base_dir);
    };
    let inputs = node
        .inputs
        .iter()
        .map(|input| input.as_ref().map(|v| half::widen(imp, v)).transpose())
        .collect::<Result<Vec<_>>>()?;
    let wide = Node {
        proto,
        opset,
        inputs,
    };
    ops::import_node(imp, &wide, base_dir)?
        .into_iter()
        .map(|output| half::narrow(imp, output, half))
        .collect()
}

/// The node for error messages: its name, op, domain and opset, and where
/// it stands (`position` of `total` in import order, `index` in the graph).
fn describe(
    proto: &NodeProto,
    index: usize,
    opset: i64,
    (position, total): (usize, usize),
) -> String {
    let name = if proto.name.is_empty() {
        String::new()
    } else {
        format!("'{}' ", proto.name)
    };
    let domain = if proto.domain.is_empty() {
        String::new()
    } else {
        format!("domain {}, ", proto.domain)
    };
    format!(
        "node {name}({}, {domain}opset {opset}; node {} of {total}, #{index} in the graph)",
        proto.op_type,
        position + 1
    )
}
