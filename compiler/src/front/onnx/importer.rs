//! The graph walk: model → one `func.func` whose arguments are the graph
//! inputs (initializers are constants, also when listed as inputs) and
//! whose results are the graph outputs, both named with `tcc.name`.
//!
//! [`Importer`] holds the walk's state (the emitter, constants already
//! written, the node being imported); [`import_model`] runs the steps, one
//! module each: `inputs` (initializers and arguments), `graph` (opset,
//! declared types, live nodes in order), `nodes` (the node walk, in a
//! nested `scope`; `control` inlines and unrolls subgraphs through it and
//! `sequence` evaluates the sequence/optional ops), `outputs` (results
//! checked against their declarations) and `module` (the recorded module
//! around the function, which `front::build` makes MLIR ops of once the
//! walk, or `symbolic`'s merge of two walks, is done).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use super::dtype::DType;
use super::emit::{ConstStyle, Emitter, Val};
use super::error::{ImportError, Result, bail};
use super::node::Value;
use super::proto::{GraphProto, ModelProto};
use super::tensor::Const;
use super::{ImportOptions, Imported};

mod control;
mod flex;
mod graph;
pub use graph::node_uses;
mod half;
mod inputs;
pub mod module;
mod nodes;
mod outputs;
mod scope;
mod sequence;
pub mod symbolic;
mod unsigned;

use graph::{default_opset, live_nodes};

/// The default-domain opsets the importer implements: every one the onnx
/// package defines, each op's versions by their own semantics (before
/// opset 6 the differences are attributes that later became inputs or
/// changed type: Reshape's `shape`, Pad's `paddings`, Cast's `to` as a
/// name, Tile's `tiles` and `axis`, Split's sizes as an input, LpPool's
/// float `p`, Concat's default axis; `consumed_inputs`, which described
/// in-place buffers, is ignored).
pub const MIN_OPSET: i64 = 1;
pub const MAX_OPSET: i64 = 28;

pub struct Importer {
    pub e: Emitter,
    cache: HashMap<usize, (Rc<Const>, Val)>,
    /// ONNX names of constants (resource blob names).
    names: HashMap<usize, String>,
    /// The node being imported (names its unnamed constants).
    node: String,
    pub demote_f64: bool,
    /// Prefixed to node locations: the enclosing nodes and iterations of
    /// an unrolled or inlined subgraph (`loop/3/`), empty in the main graph.
    pub prefix: String,
    /// Subgraph bodies imported so far (unrolled loops, inlined branches),
    /// bounded so that nested loops cannot blow up the import.
    pub bodies: usize,
    /// `(declared, new)` batch when `--input-shape` overrides the static
    /// leading dimension of a graph input.
    pub batch: Option<(i64, i64)>,
    /// The value each symbolic `dim_param` takes in this import (a probe:
    /// see [`symbolic`]); empty when every shape is static.
    pub probes: HashMap<String, i64>,
    /// The `dim_param`s among `probes` that are fixed (`--fix-dim`, a
    /// `--specialize` bucket), not symbolic: static in the function.
    pub fixed: Vec<String>,
    /// The symbolic dimensions the graph inputs used, in first use.
    pub probed: Vec<String>,
    /// The opsets the model imports of domains other than the default
    /// one (`ai.onnx.ml`, ...): their nodes' versions.
    pub domain_opsets: HashMap<String, i64>,
    /// [`crate::front::onnx::ImportOptions::round_half_at_storage`].
    pub round_half_at_storage: Option<DType>,
}

impl Importer {
    pub fn new(style: ConstStyle, demote_f64: bool) -> Self {
        Self {
            e: Emitter::new(style),
            cache: HashMap::new(),
            names: HashMap::new(),
            node: String::new(),
            demote_f64,
            prefix: String::new(),
            bodies: 0,
            batch: None,
            round_half_at_storage: None,
            probes: HashMap::new(),
            fixed: Vec::new(),
            probed: Vec::new(),
            domain_opsets: HashMap::new(),
        }
    }

    /// The opset of a node's domain: the default domain's `default`, else
    /// the version the model imports of the node's domain (0 when it
    /// imports none).
    pub fn opset_of(&self, domain: &str, default: i64) -> i64 {
        if domain.is_empty() || domain == "ai.onnx" {
            default
        } else {
            self.domain_opsets.get(domain).copied().unwrap_or(0)
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

/// The graph's values by ONNX name, as the walk defines them.
type Values = HashMap<String, Value>;

/// Imports `model` (external data relative to `base_dir`): the graph's
/// initializers and inputs, then its live nodes in dependency order, then
/// its outputs, written as one function.
pub fn import_model(
    model: &ModelProto,
    base_dir: Option<&Path>,
    options: &ImportOptions,
) -> Result<Imported> {
    if !options.fixed_dims.is_empty() {
        symbolic::check_fixed(model, options)?;
    }
    let recorded = if options.symbolic_dims.is_empty() {
        let values = options.fixed_dims.iter().cloned().collect();
        import_with(model, base_dir, options, values)?.0
    } else {
        symbolic::import(model, options, |probes| {
            import_with(model, base_dir, options, probes)
        })?
    };
    Ok(recorded.finish())
}

/// One import's module, recorded, and what [`Imported`] tells besides.
pub struct Recorded {
    pub module: module::Module,
    pub blobs: Vec<super::Blob>,
    pub inputs: Vec<super::IoInfo>,
    pub opset: i64,
}

impl Recorded {
    /// The imported model.
    fn finish(self) -> Imported {
        Imported {
            blobs: self.blobs,
            function: self.module.function.clone(),
            inputs: self.inputs,
            outputs: self.module.outputs.clone(),
            module: self.module,
            opset: self.opset,
            mapped: false,
        }
    }
}

/// One import of `model`, the symbolic dimensions taking the values of
/// `probes`; also returns the symbolic dimensions the inputs used.
fn import_with(
    model: &ModelProto,
    base_dir: Option<&Path>,
    options: &ImportOptions,
    probes: HashMap<String, i64>,
) -> Result<(Recorded, Vec<String>)> {
    let (graph, opset) = checked_graph(model)?;
    let mut imp = Importer::new(options.const_style, options.demote_f64);
    imp.round_half_at_storage = options.round_half_at_storage;
    imp.probes = probes;
    imp.fixed = options.fixed_dims.iter().map(|(n, _)| n.clone()).collect();
    imp.domain_opsets = model
        .opset_import
        .iter()
        .filter(|i| !i.domain.is_empty() && i.domain != "ai.onnx")
        .map(|i| (i.domain.clone(), i.version))
        .collect();
    let mut values: Values = HashMap::new();
    inputs::define_initializers(&mut imp, graph, base_dir, &mut values)?;
    inputs::define_input_values(&mut imp, graph, options, &mut values)?;
    let graph_inputs: HashSet<&str> = graph
        .input
        .iter()
        .map(|i| i.name.as_str())
        .filter(|name| !values.contains_key(*name))
        .collect();
    let args = inputs::define_arguments(&mut imp, graph, options, &mut values)?;
    let order = {
        let known: HashSet<&str> = values
            .keys()
            .chain(args.aggregates.iter().map(|(n, _)| n))
            .map(String::as_str)
            .collect();
        live_nodes(graph, &known)?
    };
    let (arguments, inputs) = (args.entries, args.inputs);
    let mut scope = scope::Scope::new(values);
    for (name, item) in args.aggregates {
        scope.insert(name, item);
    }
    let walk = nodes::Walk {
        opset,
        name_by_outputs: options.name_by_outputs,
        base_dir,
    };
    nodes::import_nodes(&mut imp, graph, &order, walk, &mut scope).map_err(|mut e| {
        // The value a node needed at import time is a graph input: say
        // how to give it.
        if let Some(name) = e.needs_value.as_deref()
            && graph_inputs.contains(name)
        {
            e.message.push_str(&format!(
                " ('{name}' is a graph input: give its value at compile time with --input-value {name}=...)"
            ));
        }
        e
    })?;
    let (results, outputs) = outputs::results(&mut imp, graph, &order, options, &scope)?;
    let ops = imp.e.take_function();
    let module = module::Module {
        graph: graph.name.clone(),
        function: options.function_name.clone(),
        arguments,
        results,
        outputs,
        output_dims: Vec::new(),
        ops,
    };
    let recorded = Recorded {
        module,
        blobs: imp.e.take_blobs(),
        inputs,
        opset,
    };
    Ok((recorded, imp.probed))
}

/// The model's graph and default-domain opset, refusing what is not an
/// ONNX model tcc can import.
fn checked_graph(model: &ModelProto) -> Result<(&GraphProto, i64)> {
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
    Ok((graph, opset))
}
