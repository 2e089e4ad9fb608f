//! The node walk: each live node, in dependency order, imported by its
//! op's importer (`ops::import_node`; control flow and the sequence and
//! optional ops by `control` and `sequence`, which take subgraphs and
//! non-tensor values) with the values of its inputs; its outputs join the
//! scope under their ONNX names.

use std::collections::HashSet;
use std::path::Path;

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::node::{Node, Value};
use super::super::ops;
use super::super::proto::{GraphProto, NodeProto};
use super::Importer;
use super::control;
use super::flex;
use super::graph::node_uses;
use super::scope::{Item, Scope};
use super::sequence;
use super::{half, unsigned};

/// What a graph walk needs besides the values: the opset, how ops are
/// located, where external data lives.
#[derive(Clone, Copy)]
pub(crate) struct Walk<'a> {
    pub opset: i64,
    pub name_by_outputs: bool,
    pub base_dir: Option<&'a Path>,
}

/// Imports the nodes of `order` (`(index in the graph, node)`, as
/// `live_nodes` orders them) into `scope`. Each node's ops are located at
/// the node's name, or with `name_by_outputs` at its first output's
/// (`ImportOptions::name_by_outputs`), under the importer's prefix (the
/// enclosing nodes and iterations of an unrolled subgraph).
pub(crate) fn import_nodes(
    imp: &mut Importer,
    graph: &GraphProto,
    order: &[(usize, &NodeProto)],
    walk: Walk,
    scope: &mut Scope,
) -> Result<()> {
    let opset = walk.opset;
    let used: HashSet<String> = order
        .iter()
        .flat_map(|(_, n)| node_uses(n))
        .chain(graph.output.iter().map(|o| o.name.clone()))
        .collect();
    let total = order.len();
    for (position, &(index, proto)) in order.iter().enumerate() {
        let node_opset = imp.opset_of(&proto.domain, opset);
        let where_ = || describe(proto, index, node_opset, (position, total));
        let output_name = proto
            .output
            .first()
            .filter(|o| walk.name_by_outputs && !o.is_empty());
        let location = if let Some(output) = output_name {
            output.clone()
        } else if proto.name.is_empty() {
            format!("{}_{index}", proto.op_type)
        } else {
            proto.name.clone()
        };
        let location = format!("{}{location}", imp.prefix);
        imp.e.set_location(&location);
        imp.node.clone_from(&location);
        let mut items = Vec::new();
        for name in &proto.input {
            if name.is_empty() {
                items.push(None);
            } else {
                match scope.get(name) {
                    Some(v) => items.push(Some(v)),
                    None => bail!("{}: input '{name}' is not defined", where_()),
                }
            }
        }
        let outputs = import_one(imp, proto, items, walk, scope, &location)
            .map_err(|e| e.context(where_()))?;
        if let Some((op, ty)) = imp.e.take_empty_operand() {
            bail!(
                "{}: an input is an empty tensor ({ty}), which tcc supports only where the \
                 importer computes the result without a kernel (here {op} would take it)",
                where_()
            );
        }
        for (i, name) in proto.output.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            match outputs.get(i) {
                Some(Item::Tensor(Value::Const(c))) if c.dtype == DType::F64 && imp.demote_f64 => {
                    let value = Value::constant(c.cast(DType::F32));
                    imp.name(&value, name);
                    scope.insert(name.clone(), Item::Tensor(value));
                }
                Some(Item::Tensor(value)) => {
                    imp.name(value, name);
                    scope.insert(name.clone(), Item::Tensor(value.clone()));
                }
                Some(item) => scope.insert(name.clone(), item.clone()),
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

/// Imports one node: control flow and the sequence/optional ops here
/// (they take subgraphs or non-tensor values), every other op by its
/// importer in `ops`.
fn import_one(
    imp: &mut Importer,
    proto: &NodeProto,
    items: Vec<Option<Item>>,
    walk: Walk,
    scope: &Scope,
    location: &str,
) -> Result<Vec<Item>> {
    let default_domain = proto.domain.is_empty() || proto.domain == "ai.onnx";
    if proto.domain == "ai.onnx.preview" && proto.op_type == "FlexAttention" {
        return flex::import(imp, proto, &items, walk, scope, location);
    }
    if default_domain {
        if let Some(outputs) = control::import(imp, proto, &items, walk, scope, location)? {
            return Ok(outputs);
        }
        if let Some(outputs) = sequence::import(imp, proto, &items, walk.opset)? {
            return Ok(outputs);
        }
    }
    let mut node_inputs = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item {
            None => node_inputs.push(None),
            Some(Item::Tensor(v)) => node_inputs.push(Some(v)),
            Some(other) => bail!(
                "input #{i} ('{}') is {}; {} takes tensors",
                proto.input[i],
                other.kind(),
                proto.op_type
            ),
        }
    }
    let outputs = import_in_compute_type(imp, proto, walk.opset, node_inputs, walk.base_dir)?;
    Ok(outputs.into_iter().map(Item::Tensor).collect())
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
    if let Some(narrow) = node
        .inputs
        .iter()
        .flatten()
        .map(Value::dtype)
        .find(|d| d.is_narrow())
        && !half::MOVES_ELEMENTS.contains(&node.op())
        && !matches!(node.op(), "QuantizeLinear" | "DequantizeLinear")
    {
        bail!(
            "{} on {narrow} tensors is not supported: tcc takes the narrow types (float8, float4, int4, int2) \
             in Cast, CastLike, QuantizeLinear, DequantizeLinear and data movement",
            node.op()
        );
    }
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
    if let Some(half) = imp.round_half_at_storage
        && half::defers_rounding(&node, half)
    {
        return Ok(vec![node.input(0)?.clone()]);
    }
    if imp.round_half_at_storage.is_some()
        && let Some(inputs) = half::moved_inputs(imp, &node)?
    {
        let moved = Node {
            proto,
            opset,
            inputs,
        };
        return ops::import_node(imp, &moved, base_dir);
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
    let outputs = ops::import_node(imp, &wide, base_dir)?;
    if imp.round_half_at_storage.is_some() {
        return Ok(outputs);
    }
    outputs
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
