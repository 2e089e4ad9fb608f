//! What the graph walk reads from the model before emitting: the default
//! opset, declared value types, and the nodes that outputs depend on (in
//! dependency order).

use std::collections::{HashMap, HashSet};

use super::super::error::{ImportError, Result, bail};
use super::super::proto::{GraphProto, ModelProto, NodeProto, ValueInfoProto, type_proto};
use super::{MAX_OPSET, MIN_OPSET};

/// The model's default-domain opset.
pub(super) fn default_opset(model: &ModelProto) -> Result<i64> {
    let mut opset = None;
    for import in &model.opset_import {
        if import.domain.is_empty() || import.domain == "ai.onnx" {
            opset = Some(import.version);
        }
    }
    match opset {
        Some(v) if (MIN_OPSET..=MAX_OPSET).contains(&v) => Ok(v),
        Some(v) => bail!(
            "the model imports opset {v} of the default ONNX domain; the importer supports opsets {MIN_OPSET} to {MAX_OPSET}"
        ),
        // IR versions 1 and 2 had no opset imports: their ops are opset 1's.
        None if model.opset_import.is_empty() && model.ir_version < 3 => Ok(1),
        None if model.opset_import.is_empty() => {
            bail!(
                "the model (IR version {}) imports no opset of the default ONNX domain, which IR versions from 3 must",
                model.ir_version
            )
        }
        None => {
            let domains: Vec<&str> = model
                .opset_import
                .iter()
                .map(|i| i.domain.as_str())
                .collect();
            // A model of `ai.onnx.ml` ops alone (a scikit-learn export):
            // the default-domain ops the importer composes them from
            // take the newest opset's semantics.
            if domains.iter().all(|d| *d == "ai.onnx.ml") {
                return Ok(MAX_OPSET);
            }
            if domains.contains(&"ai.onnx.preview.training") {
                bail!(
                    "the model imports the domain ai.onnx.preview.training and not the default ONNX domain: its ops (optimizers, gradients) are training ops, and tcc compiles inference graphs"
                )
            }
            bail!(
                "the model does not import the default ONNX domain (it imports {})",
                domains.join(", ")
            )
        }
    }
}

/// The static type of a graph input/output's `ValueInfoProto`.
pub(super) fn declared_type(info: &ValueInfoProto) -> Result<(i32, Vec<Option<i64>>, Vec<String>)> {
    let Some(ty) = info.r#type.as_ref() else {
        bail!("'{}' has no type", info.name)
    };
    let tensor = match &ty.value {
        Some(type_proto::Value::TensorType(tensor)) => tensor,
        Some(type_proto::Value::SequenceType(_)) => bail!(
            "'{}' is a sequence: tcc's compiled functions take and return tensors only (sequences exist only inside the imported graph, built and consumed by its ops)",
            info.name
        ),
        Some(type_proto::Value::OptionalType(_)) => bail!(
            "'{}' is an optional: tcc's compiled functions take and return tensors only (optionals exist only inside the imported graph)",
            info.name
        ),
        _ => bail!(
            "'{}' is not a tensor (maps and sparse tensors are not supported)",
            info.name
        ),
    };
    tensor_dims(tensor, &info.name)
}

/// A tensor type's element type code, its dimensions (`None` for a
/// dynamic one) and their names (`dim_param`, `?` when unnamed, empty for
/// a static one); `name` is the value's, for messages.
pub(super) fn tensor_dims(
    tensor: &type_proto::Tensor,
    name: &str,
) -> Result<(i32, Vec<Option<i64>>, Vec<String>)> {
    let Some(shape) = &tensor.shape else {
        bail!("'{}' has no shape: tcc needs static shapes", name)
    };
    let mut dims = Vec::new();
    let mut params = Vec::new();
    for (axis, dim) in shape.dim.iter().enumerate() {
        use super::super::proto::tensor_shape_proto::dimension::Value as D;
        match &dim.value {
            Some(D::DimValue(v)) if *v >= 0 => {
                dims.push(Some(*v));
                params.push(String::new());
            }
            // ONNX dimensions are sizes (>= 0) or named (dynamic): a
            // negative one is an invalid model, not a dynamic dimension.
            Some(D::DimValue(v)) => bail!(
                "'{}' has the invalid dimension {v} at axis {axis}: ONNX dimensions are sizes (0 or more) or names (dynamic)",
                name
            ),
            Some(D::DimParam(p)) => {
                dims.push(None);
                params.push(p.clone());
            }
            _ => {
                dims.push(None);
                params.push("?".into());
            }
        }
    }
    Ok((tensor.elem_type, dims, params))
}

/// The names a node reads: its inputs, and the outer-scope values its
/// subgraphs (`If` branches, `Loop`/`Scan`/`SequenceMap` bodies) use, which
/// it depends on like inputs.
pub fn node_uses(node: &NodeProto) -> Vec<String> {
    let mut uses: Vec<String> = node
        .input
        .iter()
        .filter(|i| !i.is_empty())
        .cloned()
        .collect();
    for attr in &node.attribute {
        for g in attr.g.iter().chain(attr.graphs.iter()) {
            for name in free_names(g) {
                if !uses.contains(&name) {
                    uses.push(name);
                }
            }
        }
    }
    uses
}

/// The names a graph uses without defining them (values of the enclosing
/// graphs).
pub(super) fn free_names(graph: &GraphProto) -> Vec<String> {
    let mut defined: HashSet<&str> = graph
        .input
        .iter()
        .map(|i| i.name.as_str())
        .chain(graph.initializer.iter().map(|i| i.name.as_str()))
        .collect();
    for node in &graph.node {
        defined.extend(node.output.iter().map(String::as_str));
    }
    let mut free = Vec::new();
    let push = |name: String, free: &mut Vec<String>| {
        if !name.is_empty() && !defined.contains(name.as_str()) && !free.contains(&name) {
            free.push(name);
        }
    };
    for node in &graph.node {
        for name in node_uses(node) {
            push(name, &mut free);
        }
    }
    for output in &graph.output {
        push(output.name.clone(), &mut free);
    }
    free
}

/// Nodes that some graph output depends on, in a topological order (the
/// model's own order when it is one). `known` are the values defined
/// before the nodes (inputs, initializers, enclosing graphs' values).
pub(super) fn live_nodes<'g>(
    graph: &'g GraphProto,
    known: &HashSet<&str>,
) -> Result<Vec<(usize, &'g NodeProto)>> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (index, node) in graph.node.iter().enumerate() {
        for output in node.output.iter().filter(|o| !o.is_empty()) {
            if producer.insert(output, index).is_some() {
                bail!(
                    "value '{output}' is produced twice (node {index}, '{}')",
                    node.name
                );
            }
        }
    }
    let uses: Vec<Vec<String>> = graph.node.iter().map(node_uses).collect();
    let mut live = vec![false; graph.node.len()];
    let mut stack: Vec<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    let mut seen: HashSet<&str> = HashSet::new();
    while let Some(name) = stack.pop() {
        if !seen.insert(name) {
            continue;
        }
        if let Some(&index) = producer.get(name) {
            if !live[index] {
                live[index] = true;
                stack.extend(uses[index].iter().map(String::as_str));
            }
        } else if !known.contains(name) {
            bail!(
                "value '{name}' is used but neither a graph input, an initializer nor a node output"
            );
        }
    }
    // Kahn's order, preferring the model's order.
    let mut available: HashSet<&str> = known.clone();
    let mut pending: Vec<usize> = (0..graph.node.len()).filter(|&i| live[i]).collect();
    let mut order = Vec::new();
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|&index| {
            let node = &graph.node[index];
            if uses[index].iter().all(|i| available.contains(i.as_str())) {
                available.extend(node.output.iter().map(String::as_str));
                order.push((index, node));
                false
            } else {
                true
            }
        });
        if pending.len() == before {
            let node = &graph.node[pending[0]];
            bail!(
                "the graph has a cycle through node {} ('{}', {})",
                pending[0],
                node.name,
                node.op_type
            );
        }
    }
    Ok(order)
}
