//! The graph walk: model → one `func.func` whose arguments are the graph
//! inputs (initializers are constants, also when listed as inputs) and
//! whose results are the graph outputs, both named with `tcc.name`.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::rc::Rc;

use super::dtype::{DType, TType, checked_numel};
use super::emit::{ConstStyle, Emitter, Val, string_literal};
use super::error::{ImportError, Result, bail};
use super::node::{Node, Value};
use super::proto::{ModelProto, ValueInfoProto};
use super::tensor::{self, Const};
use super::{ImportOptions, Imported, IoInfo, ops};

mod graph;

use graph::{declared_type, default_opset, live_nodes};

/// The default-domain opsets the importer implements.
pub const MIN_OPSET: i64 = 6;
pub const MAX_OPSET: i64 = 21;

pub struct Importer {
    pub e: Emitter,
    cache: HashMap<usize, (Rc<Const>, Val)>,
    /// ONNX names of constants (resource blob names).
    names: HashMap<usize, String>,
    /// The node being imported (names its unnamed constants).
    node: String,
    pub demote_f64: bool,
    /// `(declared, new)` batch when `--input-shape` overrides the static
    /// leading dimension of a graph input.
    pub batch: Option<(i64, i64)>,
}

impl Importer {
    pub fn new(style: ConstStyle, demote_f64: bool) -> Self {
        Self {
            e: Emitter::new(style),
            cache: HashMap::new(),
            names: HashMap::new(),
            node: String::new(),
            demote_f64,
            batch: None,
        }
    }

    /// A Reshape target for `x` under a batch override: a target that
    /// bakes in the declared batch as its leading dimension, applied to a
    /// computed tensor (not a weight) that now carries the new batch,
    /// keeps the new batch. Exporters write `[1, 2048]` or `[1, 4, 28, 56,
    /// 56]` for batch-preserving reshapes; without this they would fold
    /// the batch into the other dimensions or fail.
    pub fn rebatched(&self, x: &Value, mut target: Vec<i64>) -> Vec<i64> {
        if let Some((declared, new)) = self.batch
            && declared != new
            && matches!(x, Value::Tensor(_))
            && target.first() == Some(&declared)
            && x.shape().first() == Some(&new)
        {
            target[0] = new;
        }
        target
    }

    /// The SSA value of a graph value (writing a `tosa.const` the first
    /// time a constant is used as a tensor).
    pub fn val(&mut self, value: &Value) -> Result<Val> {
        match value {
            Value::Tensor(v) => Ok(v.clone()),
            Value::Const(c) => {
                let key = Rc::as_ptr(c) as usize;
                if let Some((_, v)) = self.cache.get(&key) {
                    return Ok(v.clone());
                }
                let fallback = format!("{}_cst", self.node);
                let hint = self
                    .names
                    .get(&key)
                    .map_or(fallback.as_str(), String::as_str);
                let v = self.e.constant(c, hint)?;
                self.cache.insert(key, (c.clone(), v.clone()));
                Ok(v)
            }
        }
    }

    /// Remembers the ONNX name of a constant value.
    fn name(&mut self, value: &Value, name: &str) {
        if let Value::Const(c) = value {
            self.names
                .entry(Rc::as_ptr(c) as usize)
                .or_insert_with(|| name.to_string());
        }
    }

    /// The element type a model's type becomes in the imported function.
    pub fn graph_dtype(&self, dtype: DType) -> DType {
        if dtype == DType::F64 && self.demote_f64 {
            DType::F32
        } else {
            dtype
        }
    }

    /// A constant as the importer keeps it (float64 demoted when asked).
    pub fn adopt(&self, c: Const) -> Const {
        if c.dtype == DType::F64 && self.demote_f64 {
            c.cast(DType::F32)
        } else {
            c
        }
    }
}

pub fn import_model(
    model: &ModelProto,
    base_dir: Option<&Path>,
    options: &ImportOptions,
) -> Result<Imported> {
    let Some(graph) = model.graph.as_ref() else {
        bail!("not an ONNX model: it has no graph")
    };
    if model.ir_version <= 0 {
        bail!("not an ONNX model: no IR version");
    }
    let opset = default_opset(model)?;
    if graph.output.is_empty() {
        bail!("the graph has no outputs");
    }
    if !graph.sparse_initializer.is_empty() {
        bail!("sparse initializers are not supported");
    }
    let mut imp = Importer::new(options.const_style, options.demote_f64);
    let mut values: HashMap<String, Value> = HashMap::new();

    for (index, init) in graph.initializer.iter().enumerate() {
        let what = format!("initializer '{}'", init.name);
        let c = tensor::decode(init, base_dir, &what)?;
        let name = if init.name.is_empty() {
            format!("#{index}")
        } else {
            init.name.clone()
        };
        let value = Value::constant(imp.adopt(c));
        imp.name(&value, &name);
        values.insert(name, value);
    }

    // Graph inputs that are not initializers become arguments.
    let mut arguments = Vec::new();
    let mut inputs = Vec::new();
    let overrides: HashMap<&str, &Vec<i64>> = options
        .input_shapes
        .iter()
        .map(|(n, s)| (n.as_str(), s))
        .collect();
    for info in &graph.input {
        if values.contains_key(&info.name) {
            continue;
        }
        let (code, dims, params) = declared_type(info).map_err(|e| e.context("graph input"))?;
        let Some(dtype) = DType::from_onnx(code) else {
            bail!(
                "graph input '{}' has element type {}, which tcc does not support",
                info.name,
                DType::onnx_code_name(code)
            );
        };
        let dtype = imp.graph_dtype(dtype);
        if !dtype.in_graph() {
            let hint = if dtype == DType::F64 {
                " (import with --demote-f64 to compute in float32)"
            } else {
                ""
            };
            bail!(
                "graph input '{}' has element type {dtype}, which tcc does not support{hint}",
                info.name
            );
        }
        let shape: Vec<i64> = if let Some(shape) = overrides.get(info.name.as_str()) {
            // Dynamic dimensions take any value; of the static ones only
            // the batch (the first) may change.
            if shape.len() != dims.len()
                || dims
                    .iter()
                    .zip(shape.iter())
                    .skip(1)
                    .any(|(d, s)| d.is_some_and(|d| d != *s))
            {
                let declared: Vec<String> = dims
                    .iter()
                    .zip(&params)
                    .map(|(d, p)| d.map_or(p.clone(), |d| d.to_string()))
                    .collect();
                let rank = |r: usize| {
                    if r == 1 {
                        "rank 1".to_string()
                    } else {
                        format!("rank {r}")
                    }
                };
                let given = if shape.is_empty() {
                    "a scalar (rank 0)".to_string()
                } else {
                    format!(
                        "{} ({})",
                        super::dtype::shape_text(shape),
                        rank(shape.len())
                    )
                };
                let declared = if declared.is_empty() {
                    "a scalar (rank 0)".to_string()
                } else {
                    format!("{} ({})", declared.join("x"), rank(dims.len()))
                };
                bail!(
                    "--input-shape for '{}' is {given} but the model declares {declared}; only the batch (the first dimension) and dynamic dimensions can be overridden",
                    info.name
                );
            }
            if let (Some(Some(declared)), Some(&new)) = (dims.first(), shape.first())
                && *declared != new
            {
                match imp.batch {
                    Some((d, n)) if (d, n) != (*declared, new) => bail!(
                        "--input-shape for '{}' changes the batch from {declared} to {new}, but another input changes it from {d} to {n}",
                        info.name
                    ),
                    _ => imp.batch = Some((*declared, new)),
                }
            }
            (*shape).clone()
        } else {
            let mut shape = Vec::new();
            for (d, p) in dims.iter().zip(&params) {
                match d {
                    Some(d) => shape.push(*d),
                    None => bail!(
                        "graph input '{}' has the dynamic dimension '{p}' (shape {}): tcc needs static shapes; give one with --input-shape {}=DIMS",
                        info.name,
                        dims.iter()
                            .zip(&params)
                            .map(|(d, p)| d.map_or(p.clone(), |d| d.to_string()))
                            .collect::<Vec<_>>()
                            .join("x"),
                        info.name
                    ),
                }
            }
            shape
        };
        if checked_numel(&shape).is_none() {
            bail!(
                "graph input '{}' has the shape {}, more than tcc's limit of {} elements",
                info.name,
                super::dtype::shape_text(&shape),
                super::dtype::MAX_ELEMENTS
            );
        }
        let ty = TType::new(dtype, shape);
        let ssa = format!("%arg{}", arguments.len());
        arguments.push(format!(
            "{ssa}: {} {{tcc.name = {}}} loc({})",
            ty.mlir(),
            string_literal(&info.name),
            string_literal(&info.name)
        ));
        inputs.push(IoInfo {
            name: info.name.clone(),
            ty: ty.clone(),
        });
        values.insert(info.name.clone(), Value::Tensor(Val { ssa, ty }));
    }
    for (name, _) in &options.input_shapes {
        if !inputs.iter().any(|i| &i.name == name) {
            let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
            bail!(
                "--input-shape names '{name}', which is not a graph input (the graph inputs are: {})",
                names.join(", ")
            );
        }
    }

    let known: HashSet<&str> = values.keys().map(String::as_str).collect();
    let order = live_nodes(graph, &known)?;
    let used: HashSet<&str> = order
        .iter()
        .flat_map(|(_, n)| n.input.iter().map(String::as_str))
        .chain(graph.output.iter().map(|o| o.name.as_str()))
        .collect();
    let total = order.len();
    for (position, (index, proto)) in order.iter().enumerate() {
        let where_ = || {
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
        };
        let output_name = proto
            .output
            .first()
            .filter(|o| options.name_by_outputs && !o.is_empty());
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
        let node = Node {
            proto,
            opset,
            inputs: node_inputs,
        };
        let outputs =
            ops::import_node(&mut imp, &node, base_dir).map_err(|e| e.context(where_()))?;
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

    // Results.
    imp.e.set_location("graph outputs");
    let mut results = Vec::new();
    let mut outputs = Vec::new();
    // The graph outputs, then (when asked) the float tensors the nodes
    // compute, which have no declared types.
    let mut returned: Vec<(&str, Option<&ValueInfoProto>)> = graph
        .output
        .iter()
        .map(|info| (info.name.as_str(), Some(info)))
        .collect();
    if options.expose_intermediates {
        let mut seen: HashSet<&str> = returned.iter().map(|(name, _)| *name).collect();
        for (_, proto) in &order {
            for name in proto.output.iter().filter(|n| !n.is_empty()) {
                if matches!(values.get(name), Some(Value::Tensor(v)) if v.dtype() == DType::F32)
                    && seen.insert(name.as_str())
                {
                    returned.push((name.as_str(), None));
                }
            }
        }
    }
    for (name, declared) in returned {
        let Some(value) = values.get(name).cloned() else {
            bail!("graph output '{name}' is not defined")
        };
        let ty = value.ty();
        if !ty.dtype.in_graph() {
            bail!(
                "graph output '{name}' has element type {}, which tcc does not support",
                ty.dtype
            );
        }
        if let Some(Ok((code, dims, _))) = declared.map(declared_type) {
            if let Some(declared) = DType::from_onnx(code).map(|d| imp.graph_dtype(d))
                && declared != ty.dtype
            {
                bail!(
                    "graph output '{}': the importer inferred {ty} but the model declares element type {declared}",
                    name
                );
            }
            // Under a batch override a declared leading batch follows it.
            let rebatched = |axis: usize, d: i64, s: i64| {
                axis == 0 && imp.batch.is_some_and(|(old, new)| d == old && s == new)
            };
            let mismatch = dims.len() != ty.rank()
                || dims
                    .iter()
                    .zip(&ty.shape)
                    .enumerate()
                    .any(|(axis, (d, s))| d.is_some_and(|d| d != *s && !rebatched(axis, d, *s)));
            if mismatch {
                let declared: Vec<String> = dims
                    .iter()
                    .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
                    .collect();
                bail!(
                    "graph output '{}': the importer inferred {ty} but the model declares shape [{}]",
                    name,
                    declared.join(", ")
                );
            }
        }
        let mut v = imp.val(&value)?;
        if v.ssa.starts_with("%arg") {
            v = imp.e.unary("tosa.identity", &v);
        }
        outputs.push(IoInfo {
            name: name.to_string(),
            ty: ty.clone(),
        });
        results.push(v);
    }

    let function = options.function_name.clone();
    let result_types: Vec<String> = results
        .iter()
        .zip(&outputs)
        .map(|(v, o)| format!("{} {{tcc.name = {}}}", v.ty.mlir(), string_literal(&o.name)))
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
        string_literal(if graph.name.is_empty() {
            "graph"
        } else {
            &graph.name
        })
    );
    let _ = writeln!(text, "module {{");
    let _ = writeln!(
        text,
        "  func.func @{function}({}) -> ({}) {{",
        arguments.join(", "),
        result_types.join(", ")
    );
    text.push_str(imp.e.body());
    let names: Vec<&str> = results.iter().map(|v| v.ssa.as_str()).collect();
    let types: Vec<String> = results.iter().map(|v| v.ty.mlir()).collect();
    let _ = writeln!(
        text,
        "    func.return {} : {} loc(\"graph outputs\")",
        names.join(", "),
        types.join(", ")
    );
    let _ = writeln!(text, "  }} {graph_loc}\n}} {graph_loc}");
    text.push_str(&imp.e.resource_section());
    Ok(Imported {
        mlir: text,
        function,
        inputs,
        outputs,
        opset,
    })
}
