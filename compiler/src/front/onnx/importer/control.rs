//! Control flow, imported at compile time: `If` with a condition known at
//! import time imports the taken branch inline; `Loop` with a known trip
//! count or a condition that folds is unrolled (loop-carried values and
//! scan outputs included); `Scan` (opset 8's batched form and 9+'s) is
//! unrolled over its static sequence length; `SequenceMap` imports its body
//! once per element. Subgraphs are walked by the same node walk in a scope
//! nested in the node's ([`Scope::child`]), so they see outer values.
//!
//! tcc's compiled programs are straight-line, so control flow whose
//! outcome depends on run-time values is an error that says why.

use std::collections::HashSet;

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::super::ops::movement::concat_values;
use super::super::ops::shape::{reshape_value, strided_slice_value};
use super::super::proto::{GraphProto, NodeProto, type_proto};
use super::super::tensor::Const;
use super::Importer;
use super::graph::live_nodes;
use super::inputs::define_initializers;
use super::nodes::{Walk, import_nodes};
use super::scope::{Item, Scope, Seq};

/// The most iterations a `Loop` or `Scan` is unrolled to (each iteration
/// is a copy of the body in the compiled program).
pub const MAX_UNROLL: i64 = 1 << 14;

/// The most subgraph bodies one import copies in all (nested loops
/// multiply their trip counts).
pub const MAX_BODIES: usize = 1 << 16;

/// Imports `proto` when it is a control-flow op.
pub(super) fn import(
    imp: &mut Importer,
    proto: &NodeProto,
    items: &[Option<Item>],
    walk: Walk,
    scope: &Scope,
    location: &str,
) -> Result<Option<Vec<Item>>> {
    let cx = Cx {
        proto,
        walk,
        scope,
        location,
    };
    Ok(Some(match proto.op_type.as_str() {
        "If" => if_(imp, &cx, items)?,
        "Loop" => loop_(imp, &cx, items)?,
        "Scan" if walk.opset < 9 => scan8(imp, &cx, items)?,
        "Scan" => scan(imp, &cx, items)?,
        "SequenceMap" => sequence_map(imp, &cx, items)?,
        _ => return Ok(None),
    }))
}

/// The node being imported and where.
struct Cx<'a, 'p> {
    proto: &'a NodeProto,
    walk: Walk<'a>,
    scope: &'a Scope<'p>,
    location: &'a str,
}

impl Cx<'_, '_> {
    fn graph(&self, name: &str) -> Result<&GraphProto> {
        match self.proto.attribute.iter().find(|a| a.name == name) {
            Some(a) => match &a.g {
                Some(g) => Ok(g),
                None => bail!("attribute '{name}' must be a graph"),
            },
            None => bail!("{} needs the graph attribute '{name}'", self.proto.op_type),
        }
    }

    fn int(&self, name: &str, default: i64) -> i64 {
        self.proto
            .attribute
            .iter()
            .find(|a| a.name == name)
            .map_or(default, |a| a.i)
    }

    fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.proto
            .attribute
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.ints.clone())
    }
}

/// A subgraph with its nodes in dependency order (computed once for every
/// iteration: the names it sees do not change between them).
pub(super) struct Body<'g> {
    graph: &'g GraphProto,
    order: Vec<(usize, &'g super::super::proto::NodeProto)>,
}

impl<'g> Body<'g> {
    pub(super) fn new(graph: &'g GraphProto, parent: &Scope) -> Result<Self> {
        let mut visible = parent.visible();
        visible.extend(graph.input.iter().map(|i| i.name.clone()));
        visible.extend(graph.initializer.iter().map(|i| i.name.clone()));
        let known: HashSet<&str> = visible.iter().map(String::as_str).collect();
        let order = live_nodes(graph, &known)?;
        Ok(Self { graph, order })
    }

    /// Imports the body with its inputs bound to `bindings` (in order) and
    /// returns its outputs; node locations get `prefix`.
    pub(super) fn run(
        &self,
        imp: &mut Importer,
        walk: Walk,
        parent: &Scope,
        bindings: Vec<Item>,
        prefix: String,
    ) -> Result<Vec<Item>> {
        if bindings.len() != self.graph.input.len() {
            bail!(
                "the subgraph '{}' has {} inputs, the op gives it {}",
                self.graph.name,
                self.graph.input.len(),
                bindings.len()
            );
        }
        imp.bodies += 1;
        if imp.bodies > MAX_BODIES {
            bail!(
                "the model's control flow unrolls to more than {MAX_BODIES} copies of subgraphs: too many to import"
            );
        }
        let mut child = Scope::child(parent);
        define_initializers(imp, self.graph, walk.base_dir, &mut child.values)?;
        for (input, item) in self.graph.input.iter().zip(bindings) {
            // A value bound to an input declared optional is that optional
            // holding it (a Loop carries an optional whose body returns
            // the bare sequence or tensor).
            let declared_optional = matches!(
                input.r#type.as_ref().and_then(|t| t.value.as_ref()),
                Some(type_proto::Value::OptionalType(_))
            );
            let item = match item {
                Item::Opt(_) => item,
                other if declared_optional => Item::Opt(Some(Box::new(other))),
                other => other,
            };
            child.insert(input.name.clone(), item);
        }
        let saved = std::mem::replace(&mut imp.prefix, prefix);
        let walked = import_nodes(imp, self.graph, &self.order, walk, &mut child);
        imp.prefix = saved;
        walked?;
        self.graph
            .output
            .iter()
            .map(|o| {
                child.get(&o.name).ok_or_else(|| {
                    ImportError::new(format!("subgraph output '{}' is not defined", o.name))
                })
            })
            .collect()
    }
}

/// The value of a boolean (or numeric) scalar known at import time.
fn known_flag(item: &Item, what: &str) -> Result<Option<bool>> {
    match item.tensor(what)? {
        Value::Const(c) if c.numel() == 1 => Ok(Some(c.f64_at(0) != 0.0)),
        Value::Const(c) => bail!("{what} has {} elements, not one", c.numel()),
        Value::Tensor(_) => Ok(None),
    }
}

/// An error from inside `cx`'s subgraph, said to be there (`what`): a
/// value the body needed at import time is named as the node's first
/// output, which is computed from everything the body reads.
fn in_body(error: ImportError, cx: &Cx, what: String) -> ImportError {
    let mut error = error.context(what);
    if error.needs_value.is_some() {
        error.needs_value = cx.proto.output.first().cloned();
    }
    error
}

/// `If`: the branch its (import-time) condition takes, inline.
fn if_(imp: &mut Importer, cx: &Cx, items: &[Option<Item>]) -> Result<Vec<Item>> {
    let Some(Some(cond)) = items.first() else {
        bail!("If needs a condition")
    };
    let Some(taken) = known_flag(cond, "If's condition")? else {
        return Err(ImportError::needs_value(
            format!(
                "If's condition ('{}') is computed at run time: tcc imports If only when its condition is known at import time (it imports the taken branch inline; its compiled programs have no branches)",
                cx.proto.input[0]
            ),
            &cx.proto.input[0],
        ));
    };
    let name = if taken { "then_branch" } else { "else_branch" };
    let body = Body::new(cx.graph(name)?, cx.scope)?;
    let prefix = format!("{}/{name}/", cx.location);
    let outs = body
        .run(imp, cx.walk, cx.scope, Vec::new(), prefix)
        .map_err(|e| in_body(e, cx, format!("in If's {name}")))?;
    if outs.len() < cx.proto.output.len() {
        bail!(
            "If's {name} has {} outputs, the node {}",
            outs.len(),
            cx.proto.output.len()
        );
    }
    Ok(outs)
}

/// Stacks values along a new axis `axis` (an empty list gives `empty`).
fn stack(imp: &mut Importer, parts: &[Value], axis: usize) -> Result<Value> {
    let mut expanded = Vec::new();
    for p in parts {
        let mut shape = p.shape();
        if axis > shape.len() {
            bail!(
                "stacking axis {axis} is out of range for rank {}",
                shape.len()
            );
        }
        shape.insert(axis, 1);
        expanded.push(reshape_value(imp, p, &shape)?);
    }
    let refs: Vec<&Value> = expanded.iter().collect();
    concat_values(imp, &refs, axis)
}

/// An empty stacked output of a loop that ran no iteration: its shape
/// comes from the body output's declared type, which must be static.
fn empty_stack(graph: &GraphProto, index: usize) -> Result<Value> {
    let info = &graph.output[index];
    let declared = info.r#type.as_ref().and_then(|t| match &t.value {
        Some(type_proto::Value::TensorType(tt)) => Some(tt),
        _ => None,
    });
    let Some(tt) = declared else {
        bail!(
            "the loop runs no iteration and its scan output '{}' has no declared tensor type",
            info.name
        )
    };
    let Some(dtype) = DType::from_onnx(tt.elem_type) else {
        bail!(
            "scan output '{}' has an unsupported element type",
            info.name
        )
    };
    let mut shape = vec![0];
    for dim in tt.shape.iter().flat_map(|s| s.dim.iter()) {
        use super::super::proto::tensor_shape_proto::dimension::Value as D;
        match dim.value {
            Some(D::DimValue(v)) if v >= 0 => shape.push(v),
            _ => bail!(
                "the loop runs no iteration and its scan output '{}' has no static declared shape",
                info.name
            ),
        }
    }
    Ok(Value::constant(Const::from_f64(dtype, shape, &[])))
}

/// `Loop`, unrolled: `M` (trip count) and `cond` must be known at import
/// time, and so must the condition each iteration computes.
fn loop_(imp: &mut Importer, cx: &Cx, items: &[Option<Item>]) -> Result<Vec<Item>> {
    let trip = match items.first() {
        Some(Some(m)) => match m.tensor("Loop's trip count M")? {
            Value::Const(c) if c.numel() == 1 => Some(c.i64_at(0)),
            Value::Const(_) => bail!("Loop's trip count M must have one element"),
            Value::Tensor(_) => {
                return Err(ImportError::needs_value(
                    format!(
                        "Loop's trip count M ('{}') is computed at run time: tcc unrolls a Loop only when its trip count or its condition is known at import time",
                        cx.proto.input[0]
                    ),
                    &cx.proto.input[0],
                ));
            }
        },
        _ => None,
    };
    let mut cond = match items.get(1) {
        Some(Some(c)) => match known_flag(c, "Loop's condition")? {
            Some(flag) => flag,
            None => {
                return Err(ImportError::needs_value(
                    format!(
                        "Loop's initial condition ('{}') is computed at run time: tcc unrolls a Loop only when its condition is known at import time",
                        cx.proto.input[1]
                    ),
                    &cx.proto.input[1],
                ));
            }
        },
        _ => true,
    };
    let has_cond = matches!(items.get(1), Some(Some(_)));
    if trip.is_none() && !has_cond {
        bail!("Loop has neither a trip count nor a condition: it would never end");
    }
    let mut carried: Vec<Item> = Vec::new();
    for (i, item) in items.iter().enumerate().skip(2) {
        match item {
            Some(item) => carried.push(item.clone()),
            None => bail!("Loop's loop-carried input #{i} is missing"),
        }
    }
    let graph = cx.graph("body")?;
    let n = carried.len();
    if graph.output.len() < 1 + n {
        bail!(
            "Loop's body has {} outputs; it needs the condition and {n} loop-carried values",
            graph.output.len()
        );
    }
    let k = graph.output.len() - 1 - n;
    let body = Body::new(graph, cx.scope)?;
    let mut scans: Vec<Vec<Value>> = vec![Vec::new(); k];
    let mut i: i64 = 0;
    while cond && trip.is_none_or(|m| i < m) {
        if i >= MAX_UNROLL {
            bail!(
                "Loop runs more than {MAX_UNROLL} iterations: too many to unroll (tcc unrolls loops at import time)"
            );
        }
        let mut bindings = vec![
            Item::Tensor(Value::constant(Const::from_i64(DType::I64, vec![], &[i]))),
            Item::Tensor(Value::constant(Const::from_i64(
                DType::Bool,
                vec![],
                &[cond as i64],
            ))),
        ];
        bindings.extend(carried.iter().cloned());
        let prefix = format!("{}/{i}/", cx.location);
        let outs = body
            .run(imp, cx.walk, cx.scope, bindings, prefix)
            .map_err(|e| in_body(e, cx, format!("in Loop's body, iteration {i}")))?;
        cond = match known_flag(&outs[0], "the condition Loop's body computes")? {
            Some(flag) => flag,
            None => bail!(
                "the condition that Loop's body computes ('{}') is not known at import time in iteration {i}: tcc unrolls a Loop only when its condition folds to a constant",
                graph.output[0].name
            ),
        };
        carried = outs[1..1 + n].to_vec();
        for (j, out) in outs[1 + n..].iter().enumerate() {
            scans[j].push(out.tensor("a Loop scan output")?.clone());
        }
        i += 1;
    }
    let mut outputs = carried;
    for (j, parts) in scans.iter().enumerate() {
        let stacked = if parts.is_empty() {
            empty_stack(graph, 1 + n + j)?
        } else {
            stack(imp, parts, 0)?
        };
        outputs.push(Item::Tensor(stacked));
    }
    Ok(outputs)
}

/// Element `index` of `v` along `axis`, that axis removed.
fn take(imp: &mut Importer, v: &Value, axis: usize, index: i64) -> Result<Value> {
    let shape = v.shape();
    let rank = shape.len();
    let mut starts = vec![0; rank];
    starts[axis] = index;
    let mut sizes = shape.clone();
    sizes[axis] = 1;
    let part = strided_slice_value(imp, v, &starts, &vec![1; rank], &sizes)?;
    let mut out = shape;
    out.remove(axis);
    reshape_value(imp, &part, &out)
}

/// A per-input attribute list (`default` for each when absent).
fn per_input(cx: &Cx, name: &str, count: usize, default: i64) -> Result<Vec<i64>> {
    match cx.ints(name) {
        None => Ok(vec![default; count]),
        Some(v) if v.len() == count => Ok(v),
        Some(v) => bail!("Scan's {name} has {} entries for {count} values", v.len()),
    }
}

/// Normalizes `axis` for `rank` (negative counts from the end).
fn norm_axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        bail!("{what} {axis} is out of range for rank {rank}");
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// The unrolled Scan of opset 9 and later on `states` and `inputs`:
/// returns the final states and the stacked scan outputs.
fn scan_core(
    imp: &mut Importer,
    cx: &Cx,
    states: Vec<Item>,
    inputs: Vec<Value>,
    (in_axes, in_dirs, out_axes, out_dirs): (&[i64], &[i64], &[i64], &[i64]),
    prefix: &str,
) -> Result<Vec<Item>> {
    let graph = cx.graph("body")?;
    let n = states.len();
    if graph.output.len() < n {
        bail!(
            "Scan's body has {} outputs for {n} state variables",
            graph.output.len()
        );
    }
    let k = graph.output.len() - n;
    let mut axes = Vec::new();
    let mut length = None;
    for (j, x) in inputs.iter().enumerate() {
        let axis = norm_axis(in_axes[j], x.rank(), "Scan's scan_input_axes entry")?;
        let len = x.shape()[axis];
        if length.is_some_and(|l| l != len) {
            bail!("Scan's scan inputs have different sequence lengths");
        }
        length = Some(len);
        axes.push(axis);
    }
    let Some(length) = length else {
        bail!("Scan needs at least one scan input")
    };
    if length > MAX_UNROLL {
        bail!("Scan's sequence has {length} steps: too many to unroll (at most {MAX_UNROLL})");
    }
    let body = Body::new(graph, cx.scope)?;
    let mut states = states;
    let mut scans: Vec<Vec<Value>> = vec![Vec::new(); k];
    for t in 0..length {
        let mut bindings = states.clone();
        for (j, x) in inputs.iter().enumerate() {
            let index = if in_dirs[j] != 0 { length - 1 - t } else { t };
            bindings.push(Item::Tensor(take(imp, x, axes[j], index)?));
        }
        let outs = body
            .run(imp, cx.walk, cx.scope, bindings, format!("{prefix}{t}/"))
            .map_err(|e| in_body(e, cx, format!("in Scan's body, step {t}")))?;
        states = outs[..n].to_vec();
        for (j, out) in outs[n..].iter().enumerate() {
            scans[j].push(out.tensor("a Scan output")?.clone());
        }
    }
    let mut outputs = states;
    for (j, mut parts) in scans.into_iter().enumerate() {
        if out_dirs[j] != 0 {
            parts.reverse();
        }
        let stacked = if parts.is_empty() {
            empty_stack(graph, n + j)?
        } else {
            let rank = parts[0].rank();
            let axis = norm_axis(out_axes[j], rank + 1, "Scan's scan_output_axes entry")?;
            stack(imp, &parts, axis)?
        };
        outputs.push(Item::Tensor(stacked));
    }
    Ok(outputs)
}

/// `Scan` (opset 9 and later): `num_scan_inputs` scan inputs after the
/// state variables, each scanned along its axis and direction.
fn scan(imp: &mut Importer, cx: &Cx, items: &[Option<Item>]) -> Result<Vec<Item>> {
    let m = cx.int("num_scan_inputs", -1);
    if m < 1 || m as usize > items.len() {
        bail!("Scan's num_scan_inputs ({m}) must be between 1 and its input count");
    }
    let m = m as usize;
    let n = items.len() - m;
    let mut states = Vec::new();
    let mut inputs = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(item) = item else {
            bail!("Scan's input #{i} is missing")
        };
        if i < n {
            states.push(item.clone());
        } else {
            inputs.push(item.tensor("a Scan input")?.clone());
        }
    }
    let k = cx.graph("body")?.output.len().saturating_sub(n);
    let in_axes = per_input(cx, "scan_input_axes", m, 0)?;
    let in_dirs = per_input(cx, "scan_input_directions", m, 0)?;
    let out_axes = per_input(cx, "scan_output_axes", k, 0)?;
    let out_dirs = per_input(cx, "scan_output_directions", k, 0)?;
    let prefix = format!("{}/", cx.location);
    scan_core(
        imp,
        cx,
        states,
        inputs,
        (&in_axes, &in_dirs, &out_axes, &out_dirs),
        &prefix,
    )
}

/// `Scan` of opset 8: every input has a batch axis 0 and scan inputs their
/// sequence on axis 1 (`directions` per scan input); the batch is unrolled
/// too. `sequence_lens` must be absent or the full length for every batch
/// entry.
fn scan8(imp: &mut Importer, cx: &Cx, items: &[Option<Item>]) -> Result<Vec<Item>> {
    let m = cx.int("num_scan_inputs", -1);
    if m < 1 || m as usize >= items.len() {
        bail!("Scan's num_scan_inputs ({m}) must be between 1 and its input count less one");
    }
    let m = m as usize;
    let n = items.len() - 1 - m;
    let mut values = Vec::new();
    for (i, item) in items.iter().enumerate().skip(1) {
        let Some(item) = item else {
            bail!("Scan's input #{i} is missing")
        };
        values.push(item.tensor("a Scan-8 input")?.clone());
    }
    let Some(first) = values.get(n) else {
        bail!("Scan needs a scan input")
    };
    if first.rank() < 2 {
        bail!("Scan-8's scan inputs need a batch and a sequence axis");
    }
    let (batch, length) = (first.shape()[0], first.shape()[1]);
    if let Some(Some(lens)) = items.first() {
        match lens.tensor("Scan's sequence_lens")? {
            Value::Const(c) if c.i64s().iter().all(|&l| l == length) => {}
            Value::Const(_) => bail!(
                "Scan-8 with sequence_lens shorter than the sequence ({length}) is not supported"
            ),
            Value::Tensor(_) => {
                bail!("Scan's sequence_lens is computed at run time: tcc needs it to be a constant")
            }
        }
    }
    for v in &values {
        if v.rank() == 0 || v.shape()[0] != batch {
            bail!("Scan-8's inputs must share the batch size {batch}");
        }
    }
    let k = cx.graph("body")?.output.len().saturating_sub(n);
    let dirs = per_input(cx, "directions", m, 0)?;
    let zeros_m = vec![0; m];
    let zeros_k = vec![0; k];
    let mut per_batch: Vec<Vec<Item>> = Vec::new();
    for b in 0..batch {
        let mut states = Vec::new();
        let mut inputs = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let part = take(imp, v, 0, b)?;
            if i < n {
                states.push(Item::Tensor(part));
            } else {
                inputs.push(part);
            }
        }
        let prefix = format!("{}/{b}/", cx.location);
        per_batch.push(scan_core(
            imp,
            cx,
            states,
            inputs,
            (&zeros_m, &dirs, &zeros_k, &zeros_k),
            &prefix,
        )?);
    }
    let mut outputs = Vec::new();
    for j in 0..n + k {
        let parts: Vec<Value> = per_batch
            .iter()
            .map(|outs| outs[j].tensor("a Scan output").cloned())
            .collect::<Result<_>>()?;
        outputs.push(Item::Tensor(stack(imp, &parts, 0)?));
    }
    Ok(outputs)
}

/// `SequenceMap`: the body once per element of the input sequence (and
/// of the additional inputs that are sequences; tensors are passed whole),
/// each body output collected into a sequence.
fn sequence_map(imp: &mut Importer, cx: &Cx, items: &[Option<Item>]) -> Result<Vec<Item>> {
    let Some(Some(input)) = items.first() else {
        bail!("SequenceMap needs an input sequence")
    };
    let count = input.seq("SequenceMap's input_sequence")?.items.len();
    for item in items.iter().skip(1).flatten() {
        if let Item::Seq(s) = item
            && s.items.len() != count
        {
            bail!(
                "SequenceMap's additional sequence has {} elements, the input sequence {count}",
                s.items.len()
            );
        }
    }
    let graph = cx.graph("body")?;
    let body = Body::new(graph, cx.scope)?;
    let mut collected: Vec<Vec<Value>> = vec![Vec::new(); graph.output.len()];
    for i in 0..count {
        let mut bindings = Vec::new();
        for item in items {
            match item {
                Some(Item::Seq(s)) => bindings.push(Item::Tensor(s.items[i].clone())),
                Some(other) => bindings.push(other.clone()),
                None => bail!("SequenceMap's inputs cannot be omitted"),
            }
        }
        let outs = body
            .run(
                imp,
                cx.walk,
                cx.scope,
                bindings,
                format!("{}/{i}/", cx.location),
            )
            .map_err(|e| in_body(e, cx, format!("in SequenceMap's body, element {i}")))?;
        for (j, out) in outs.iter().enumerate() {
            collected[j].push(out.tensor("a SequenceMap body output")?.clone());
        }
    }
    let mut outputs = Vec::new();
    for (j, parts) in collected.into_iter().enumerate() {
        let elem = match parts.first() {
            Some(p) => p.dtype(),
            None => declared_elem(&graph.output[j])?,
        };
        outputs.push(Item::Seq(Seq { elem, items: parts }));
    }
    Ok(outputs)
}

/// The element type a body output declares (for an empty result).
fn declared_elem(info: &super::super::proto::ValueInfoProto) -> Result<DType> {
    let code = info.r#type.as_ref().and_then(|t| match &t.value {
        Some(type_proto::Value::TensorType(tt)) => Some(tt.elem_type),
        _ => None,
    });
    code.and_then(DType::from_onnx).ok_or_else(|| {
        ImportError::new(format!(
            "'{}' has no declared tensor element type tcc supports",
            info.name
        ))
    })
}
