//! One scoreboard case: its ONNX model imported and compiled, its data
//! sets loaded, run on the runtime and compared (`run_case`), or prepared
//! for another machine (`prepare_cases`).

use super::*;
use crate::driver::import::runtime_dtype;

fn decode_tensor(proto: &TensorProto, path: &Path) -> Result<onnx::tensor::Const> {
    tensor::decode(proto, path.parent(), &path.display().to_string()).map_err(|e| anyhow!("{e}"))
}

/// What a graph input or output is, from its declared type: the test
/// data stores a tensor as a `TensorProto`, a sequence as a
/// `SequenceProto`, an optional as an `OptionalProto`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Tensor,
    Sequence,
    Optional,
}

fn kind_of(info: &onnx::proto::ValueInfoProto) -> Kind {
    use onnx::proto::type_proto::Value;
    match info.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(Value::SequenceType(_)) => Kind::Sequence,
        Some(Value::OptionalType(_)) => Kind::Optional,
        _ => Kind::Tensor,
    }
}

/// Whether a tensor graph input declares a dynamic (named or unknown)
/// dimension.
fn dynamic(info: &onnx::proto::ValueInfoProto) -> bool {
    use onnx::proto::tensor_shape_proto::dimension::Value as D;
    use onnx::proto::type_proto::Value;
    match info.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(Value::TensorType(t)) => t.shape.as_ref().is_some_and(|s| {
            s.dim
                .iter()
                .any(|d| !matches!(d.value, Some(D::DimValue(_))))
        }),
        _ => false,
    }
}

fn decode_sequence(proto: &SequenceProto, path: &Path) -> Result<(Structure, Vec<Const>)> {
    if !proto.sequence_values.is_empty()
        || !proto.map_values.is_empty()
        || !proto.optional_values.is_empty()
        || !proto.sparse_tensor_values.is_empty()
    {
        bail!(
            "{}: a sequence of sequences, maps, optionals or sparse tensors",
            path.display()
        );
    }
    let tensors = proto
        .tensor_values
        .iter()
        .map(|t| decode_tensor(t, path))
        .collect::<Result<Vec<_>>>()?;
    let shapes = tensors.iter().map(|t| t.shape.clone()).collect();
    Ok((Structure::Sequence(shapes), tensors))
}

/// A test data file holding a value of `kind`: its structure and the
/// tensors it holds, in the order the imported function takes or returns
/// them (see `onnx::Structure`).
fn load_value(path: &Path, kind: Kind) -> Result<(Structure, Vec<Const>)> {
    use prost::Message as _;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    match kind {
        Kind::Tensor => {
            let proto = TensorProto::decode(bytes.as_slice())
                .with_context(|| format!("{}: not a TensorProto", path.display()))?;
            let c = decode_tensor(&proto, path)?;
            Ok((Structure::Tensor(c.shape.clone()), vec![c]))
        }
        Kind::Sequence => {
            let proto = SequenceProto::decode(bytes.as_slice())
                .with_context(|| format!("{}: not a SequenceProto", path.display()))?;
            decode_sequence(&proto, path)
        }
        Kind::Optional => {
            let proto = OptionalProto::decode(bytes.as_slice())
                .with_context(|| format!("{}: not an OptionalProto", path.display()))?;
            let (inner, tensors) = if let Some(t) = &proto.tensor_value {
                let c = decode_tensor(t, path)?;
                (Some(Structure::Tensor(c.shape.clone())), vec![c])
            } else if let Some(seq) = &proto.sequence_value {
                let (s, tensors) = decode_sequence(seq, path)?;
                (Some(s), tensors)
            } else if proto.optional_value.is_some()
                || proto.map_value.is_some()
                || proto.sparse_tensor_value.is_some()
            {
                bail!(
                    "{}: an optional of an optional, a map or a sparse tensor",
                    path.display()
                );
            } else {
                (None, Vec::new())
            };
            Ok((Structure::Optional(inner.map(Box::new)), tensors))
        }
    }
}

fn to_host(c: &onnx::tensor::Const, want: DType) -> Result<HostTensor> {
    let c = c.cast(want);
    let dtype = runtime_dtype(c.dtype).ok_or_else(|| anyhow!("no runtime type for {}", c.dtype))?;
    HostTensor::new(
        dtype,
        c.shape.iter().map(|&d| d as usize).collect(),
        c.full_bytes(),
    )
    .map_err(|e| anyhow!("{e}"))
}

/// Element `i` of a host tensor as f64.
fn host_value(t: &HostTensor, i: usize) -> f64 {
    let size = t.dtype.size();
    t.dtype.value_f64(&t.bytes[size * i..size * (i + 1)])
}

/// Compares one output (dtype, shape, every element); `None` when it
/// matches. Integer and boolean outputs, and every output of an exact case,
/// must be equal (NaN matches NaN; -0 and +0 are told apart in exact cases).
fn compare(
    name: &str,
    got: &HostTensor,
    want: &onnx::tensor::Const,
    tolerance: &CaseTolerance,
    own: Option<OwnTolerance>,
) -> Option<String> {
    let want_dtype = runtime_dtype(want.dtype);
    if want_dtype != Some(got.dtype) {
        return Some(format!(
            "output '{name}' has element type {:?}, expected {}",
            got.dtype, want.dtype
        ));
    }
    let want_shape: Vec<usize> = want.shape.iter().map(|&d| d as usize).collect();
    if got.shape != want_shape {
        return Some(format!(
            "output '{name}' has shape {:?}, expected {:?}",
            got.shape, want_shape
        ));
    }
    let float = got.dtype.is_float();
    let scale = (0..want.numel())
        .map(|i| want.f64_at(i).abs())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (atol, rtol) = if float {
        tolerance.bounds_for(scale, got.dtype)
    } else {
        (0.0, 0.0)
    };
    // The minifloats come from conversions, which are exact.
    let bitwise = !float || tolerance.exact || got.dtype.minifloat().is_some();
    let mut worst: Option<(usize, f64, f64)> = None;
    let mut bad = 0usize;
    // Whether every element is within the case's own bounds (its
    // data.json), said in the message of a case that fails the
    // scoreboard's.
    let mut within_own = own.is_some() && float;
    for i in 0..want.numel() {
        let (g, w) = (host_value(got, i), want.f64_at(i));
        let ok = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if bitwise {
            g == w && g.is_sign_negative() == w.is_sign_negative()
        } else {
            g == w || (g - w).abs() <= atol + rtol * w.abs()
        };
        if !ok {
            if let Some(own) = own {
                within_own &= !(w.is_nan() || g.is_nan())
                    && (g == w || (g - w).abs() <= own.atol + own.rtol * w.abs());
            }
            bad += 1;
            if worst.is_none_or(|(_, wg, ww)| (g - w).abs() > (wg - ww).abs() || wg.is_nan()) {
                worst = Some((i, g, w));
            }
        }
    }
    worst.map(|(i, g, w)| {
        let note = match own {
            Some(own) if within_own => format!(
                "; all within the case's own rtol {}, atol {} (its expected values are coarser than float32)",
                own.rtol, own.atol
            ),
            _ => String::new(),
        };
        format!(
            "output '{name}': {bad} of {} elements differ ({}), worst at {i}: {g} vs {w}{note}",
            want.numel(),
            if bitwise {
                "bit for bit".to_string()
            } else {
                format!("atol {atol:.3e}, rtol {rtol}")
            }
        )
    })
}

/// The bounds a test case states for itself (`data.json`'s `rtol` and
/// `atol`, as the onnx package's model cases and `test/onnx/node_suite.py`
/// write them). The scoreboard does not pass a case by them — its own
/// bounds are tighter, see tolerance.rs — but names them in the message of
/// a case that fails its bounds and not the case's own, so that an
/// expectation can say why.
#[derive(Clone, Copy, Debug)]
pub(super) struct OwnTolerance {
    rtol: f64,
    atol: f64,
}

fn own_tolerance(case: &Path) -> Option<OwnTolerance> {
    let text = std::fs::read_to_string(case.join("data.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let rtol = json.get("rtol")?.as_f64()?;
    let atol = json.get("atol")?.as_f64()?;
    (rtol.is_finite() && atol.is_finite() && rtol >= 0.0 && atol >= 0.0)
        .then_some(OwnTolerance { rtol, atol })
}

/// The `output_N.pb` files of a test data set, in order; `N` must run
/// from 0 without gaps.
fn output_files(set: &Path) -> Result<Vec<PathBuf>> {
    let mut count = 0;
    while set.join(format!("output_{count}.pb")).is_file() {
        count += 1;
    }
    let stray = std::fs::read_dir(set)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("output_") && n.ends_with(".pb"))
        .count();
    if stray != count {
        bail!(
            "{}: the output_N.pb files are not numbered 0..{count}",
            set.display()
        );
    }
    Ok((0..count)
        .map(|i| set.join(format!("output_{i}.pb")))
        .collect())
}

/// A case after import: what running it here and preparing it for
/// another machine both need.
struct ImportedCase {
    imported: onnx::Imported,
    tolerance: CaseTolerance,
    /// The kinds of the graph inputs that are not initializers, and of the
    /// graph outputs, in order (one test data file each).
    input_kinds: Vec<Kind>,
    output_kinds: Vec<Kind>,
    /// Its `test_data_set_*` directories, in order.
    sets: Vec<PathBuf>,
    own: Option<OwnTolerance>,
    /// The `dim_param`s whose extent differs between the data sets, kept
    /// symbolic (from 1 to the largest extent a set gives): one artifact
    /// runs every set.
    dims: Vec<tcc_dialects::dims::DimRange>,
    /// The inputs given their values at compile time (position among
    /// `input_kinds`, name): constants of the compiled function, not
    /// arguments.
    given: Vec<(usize, String)>,
}

impl ImportedCase {
    /// The imported model's ops, built in `session`.
    fn build<'c>(&self, session: &'c Session) -> Result<melior::ir::Module<'c>> {
        let module =
            crate::driver::import::build_imported(session, "model.onnx", self.imported.clone())?;
        crate::driver::import::attach_dims(session, &module, &self.dims)?;
        Ok(module)
    }
}

/// The structures of the graph inputs named (with their positions and
/// kinds) in `aggregates` that the data sets give, which must be one for
/// all sets: the compiled function has static shapes and takes one tensor
/// per element of a sequence.
fn input_structures(
    sets: &[PathBuf],
    aggregates: &[(usize, String, Kind)],
) -> Result<Vec<(String, Structure)>> {
    let mut structures: Vec<(String, Structure)> = Vec::new();
    for (i, name, kind) in aggregates {
        let mut first: Option<Structure> = None;
        for set in sets {
            let (structure, _) = load_value(&set.join(format!("input_{i}.pb")), *kind)?;
            match &first {
                None => first = Some(structure),
                Some(s) if *s != structure => bail!(
                    "{}: input '{name}' holds {structure:?}, another data set {s:?}: the compiled function takes one tensor per element, so the structure must be one",
                    set_name(set)
                ),
                Some(_) => {}
            }
        }
        if let Some(s) = first {
            structures.push((name.clone(), s));
        }
    }
    Ok(structures)
}

/// The `dim_param` of each dimension of a tensor graph input (empty for
/// a static or unnamed one).
fn dim_params(info: &onnx::proto::ValueInfoProto) -> Vec<String> {
    use onnx::proto::tensor_shape_proto::dimension::Value as D;
    use onnx::proto::type_proto::Value;
    match info.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(Value::TensorType(t)) => t.shape.as_ref().map_or(Vec::new(), |s| {
            s.dim
                .iter()
                .map(|d| match &d.value {
                    Some(D::DimParam(p)) => p.clone(),
                    _ => String::new(),
                })
                .collect()
        }),
        _ => Vec::new(),
    }
}

/// How a case's dynamic tensor inputs are compiled, from the shapes its
/// data sets give them: a `dim_param` whose extent differs between sets
/// stays symbolic (from 1 to the largest extent given) and every other
/// one takes its one extent, so that one artifact runs every set; an
/// input without a varying dimension gets its static shape.
struct DynamicInputs {
    shapes: Vec<(String, Vec<i64>)>,
    dims: Vec<tcc_dialects::dims::DimRange>,
    fixed: Vec<(String, i64)>,
}

fn dynamic_inputs(
    sets: &[PathBuf],
    tensors: &[(usize, String, Vec<String>)],
) -> Result<DynamicInputs> {
    // Each input's shape in each set.
    let mut shapes: Vec<Vec<Vec<i64>>> = Vec::new();
    for (i, _, _) in tensors {
        let mut per_set = Vec::new();
        for set in sets {
            let (structure, _) = load_value(&set.join(format!("input_{i}.pb")), Kind::Tensor)?;
            let Structure::Tensor(shape) = structure else {
                bail!("{}: input {i} is not a tensor", set_name(set));
            };
            per_set.push(shape);
        }
        shapes.push(per_set);
    }
    // Each named dimension's extents over the sets.
    let mut extents: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for ((_, name, params), per_set) in tensors.iter().zip(&shapes) {
        for shape in per_set {
            if shape.len() != params.len() {
                bail!(
                    "input '{name}' has rank {} in the model, {} in a data set",
                    params.len(),
                    shape.len()
                );
            }
            for (param, &extent) in params.iter().zip(shape) {
                if !param.is_empty() {
                    extents.entry(param.clone()).or_default().push(extent);
                }
            }
        }
    }
    let varies = |p: &String| extents.get(p).is_some_and(|e| e.iter().any(|&x| x != e[0]));
    let mut out = DynamicInputs {
        shapes: Vec::new(),
        dims: Vec::new(),
        fixed: Vec::new(),
    };
    for ((_, name, params), per_set) in tensors.iter().zip(&shapes) {
        if !params.iter().any(&varies) {
            if per_set.iter().any(|s| *s != per_set[0]) {
                bail!(
                    "input '{name}' has an unnamed dynamic dimension whose extent differs between the data sets"
                );
            }
            out.shapes.push((name.clone(), per_set[0].clone()));
        }
    }
    for (param, values) in &extents {
        if varies(param) {
            let max = values.iter().copied().max().unwrap_or(1);
            out.dims.push(tcc_dialects::dims::DimRange {
                name: param.clone(),
                min: 1,
                max,
            });
        } else {
            out.fixed.push((param.clone(), values[0]));
        }
    }
    // A fixed dimension that only inputs given a static shape name is
    // fixed by those shapes.
    out.fixed.retain(|(param, _)| {
        tensors.iter().any(|(_, name, params)| {
            params.contains(param) && !out.shapes.iter().any(|(n, _)| n == name)
        })
    });
    Ok(out)
}

/// A case's input and output kinds, the shapes and structures its data
/// sets give its inputs, and its data sets.
type Layout = (
    Vec<Kind>,
    Vec<Kind>,
    Vec<(String, Structure)>,
    Vec<PathBuf>,
    DynamicInputs,
);

/// Imports `case`: `Err(outcome)` when the importer refuses it (an
/// unsupported op or attribute) or the case is malformed.
fn import_case(case: &Path) -> std::result::Result<ImportedCase, Outcome> {
    let model = case.join("model.onnx");
    // The model's graph inputs and outputs, and the case's data sets,
    // which give the structure of sequence and optional inputs.
    let layout = (|| -> Result<Layout> {
        let proto = onnx::parse_model(&std::fs::read(&model)?).map_err(|e| anyhow!("{e}"))?;
        let Some(graph) = proto.graph.as_ref() else {
            bail!("not an ONNX model: it has no graph");
        };
        let initializers: std::collections::HashSet<&str> =
            graph.initializer.iter().map(|i| i.name.as_str()).collect();
        let inputs: Vec<&onnx::proto::ValueInfoProto> = graph
            .input
            .iter()
            .filter(|i| !initializers.contains(i.name.as_str()))
            .collect();
        let input_kinds: Vec<Kind> = inputs.iter().map(|i| kind_of(i)).collect();
        let output_kinds = graph.output.iter().map(kind_of).collect();
        let mut sets: Vec<PathBuf> = std::fs::read_dir(case)?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("test_data_set_"))
            })
            .collect();
        sets.sort();
        if sets.is_empty() {
            bail!("no test_data_set_* directories");
        }
        // Sequences and optionals: the data sets give their structure.
        let given: Vec<(usize, String, Kind)> = inputs
            .iter()
            .zip(&input_kinds)
            .enumerate()
            .filter(|(_, (_, k))| **k != Kind::Tensor)
            .map(|(i, (info, k))| (i, info.name.clone(), *k))
            .collect();
        let structures = input_structures(&sets, &given)?;
        // Tensors declared with dynamic dimensions: the data sets give
        // their shapes, or which dimensions vary.
        let tensors: Vec<(usize, String, Vec<String>)> = inputs
            .iter()
            .zip(&input_kinds)
            .enumerate()
            .filter(|(_, (info, k))| **k == Kind::Tensor && dynamic(info))
            .map(|(i, (info, _))| (i, info.name.clone(), dim_params(info)))
            .collect();
        let dynamic = dynamic_inputs(&sets, &tensors)?;
        Ok((input_kinds, output_kinds, structures, sets, dynamic))
    })();
    let (input_kinds, output_kinds, given, sets, dynamic) = layout.map_err(failure)?;
    let mut options = ImportOptions {
        input_shapes: dynamic.shapes,
        symbolic_dims: crate::driver::import::symbolic_dims(&dynamic.dims),
        fixed_dims: dynamic.fixed,
        ..ImportOptions::default()
    };
    for (name, structure) in given {
        match structure {
            Structure::Tensor(shape) => options.input_shapes.push((name, shape)),
            other => options.structures.push((name, other)),
        }
    }
    // An input holding what the import needs to know (a shape, axes,
    // pads, Range bounds) is given the value every data set gives it, as
    // `--input-value` would, and the case is imported again.
    let mut given: Vec<(usize, String)> = Vec::new();
    let shapes_as_given = options.input_shapes.clone();
    // The model's graph, read once for the walks below (only a case that
    // needs a value reads it).
    let mut proto: Option<onnx::proto::ModelProto> = None;
    let mut imported = loop {
        let error = match onnx::import_file(&model, &options) {
            Ok(imported) => break imported,
            Err(error) => error,
        };
        let unsupported =
            || Outcome::Unsupported(error.message.replace(&format!("{}: ", model.display()), ""));
        let Some(needed) = error.needs_value.as_deref() else {
            return Err(unsupported());
        };
        if proto.is_none() {
            let bytes = std::fs::read(&model).map_err(|e| failure(e.into()))?;
            proto = Some(onnx::parse_model(&bytes).map_err(|e| failure(anyhow!("{e}")))?);
        }
        let Some(graph) = proto.as_ref().and_then(|p| p.graph.as_ref()) else {
            return Err(unsupported());
        };
        let values = values_to_give(graph, needed, &sets, &input_kinds, &given).map_err(failure)?;
        if values.is_empty() {
            return Err(unsupported());
        }
        for (index, name, proto) in values {
            options.input_shapes.retain(|(n, _)| *n != name);
            options
                .input_values
                .push((name.clone(), onnx::InputValue::Tensor(Box::new(proto))));
            given.push((index, name));
        }
    };
    // The walk from a needed value to the inputs it is computed from may
    // take more than it needs (everything a subgraph reads): an input
    // without which the import still succeeds is passed at run time.
    for position in (0..given.len()).rev() {
        if given.len() == 1 {
            break;
        }
        let name = given[position].1.clone();
        let mut fewer = options.clone();
        fewer.input_values.retain(|(n, _)| *n != name);
        fewer
            .input_shapes
            .extend(shapes_as_given.iter().filter(|(n, _)| *n == name).cloned());
        if let Ok(with_fewer) = onnx::import_file(&model, &fewer) {
            imported = with_fewer;
            options = fewer;
            given.remove(position);
        }
    }
    let tolerance = (|| -> Result<CaseTolerance> {
        let proto = onnx::parse_model(&std::fs::read(&model)?).map_err(|e| anyhow!("{e}"))?;
        let context = tcc_dialects::new_context();
        let module = crate::front::build::build_module(&context, imported.clone())?;
        Ok(case_tolerance(&proto, &module))
    })()
    .map_err(failure)?;
    Ok(ImportedCase {
        imported,
        tolerance,
        input_kinds,
        output_kinds,
        sets,
        own: own_tolerance(case),
        dims: dynamic.dims,
        given,
    })
}

/// The most elements an input given its value at compile time may hold
/// (shapes, axes, pads and bounds are short; a data tensor is not given).
const MAX_GIVEN_ELEMENTS: usize = 64;

/// The graph inputs (position among the inputs that are not initializers,
/// name, the value every data set gives) from which the value `needed` is
/// computed, found through the graph's nodes (a `Shape` or `Size` node
/// reads only its input's shape, so the walk stops there): the inputs to
/// give at compile time. None when they are not all short tensors that
/// every data set gives the same value, or not yet given.
fn values_to_give(
    graph: &onnx::proto::GraphProto,
    needed: &str,
    sets: &[PathBuf],
    input_kinds: &[Kind],
    given: &[(usize, String)],
) -> Result<Vec<(usize, String, TensorProto)>> {
    use prost::Message as _;
    let initializers: std::collections::HashSet<&str> =
        graph.initializer.iter().map(|i| i.name.as_str()).collect();
    let inputs: Vec<&str> = graph
        .input
        .iter()
        .map(|i| i.name.as_str())
        .filter(|n| !initializers.contains(n))
        .collect();
    let producers: BTreeMap<&str, &onnx::proto::NodeProto> = graph
        .node
        .iter()
        .flat_map(|node| node.output.iter().map(move |o| (o.as_str(), node)))
        .collect();
    let mut sources = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![needed.to_string()];
    while let Some(name) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(index) = inputs.iter().position(|n| *n == name) {
            sources.push(index);
        } else if let Some(node) = producers.get(name.as_str()) {
            // What the node reads the values of: not the input whose
            // shape (`Shape`, `Size`) or type (`CastLike`'s second) it
            // reads.
            let mut uses = onnx::importer::node_uses(node);
            match node.op_type.as_str() {
                "Shape" | "Size" => uses.clear(),
                "CastLike" => uses.retain(|u| node.input.first() == Some(u)),
                _ => {}
            }
            stack.extend(uses);
        }
    }
    sources.sort_unstable();
    let mut out = Vec::new();
    for index in sources {
        if given.iter().any(|(i, _)| *i == index) || input_kinds.get(index) != Some(&Kind::Tensor) {
            return Ok(Vec::new());
        }
        let mut value: Option<(TensorProto, Const)> = None;
        for set in sets {
            let path = set.join(format!("input_{index}.pb"));
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let proto = TensorProto::decode(bytes.as_slice())
                .with_context(|| format!("{}: not a TensorProto", path.display()))?;
            let decoded = decode_tensor(&proto, &path)?;
            if decoded.numel() > MAX_GIVEN_ELEMENTS {
                return Ok(Vec::new());
            }
            match &value {
                None => value = Some((proto, decoded)),
                Some((_, first))
                    if first.shape != decoded.shape
                        || first.full_bytes() != decoded.full_bytes() =>
                {
                    return Ok(Vec::new());
                }
                Some(_) => {}
            }
        }
        let Some((proto, _)) = value else {
            return Ok(Vec::new());
        };
        out.push((index, inputs[index].to_string(), proto));
    }
    Ok(out)
}

/// A failed case's outcome: the first line of the error chain.
fn failure(error: anyhow::Error) -> Outcome {
    Outcome::Fail(
        format!("{error:#}")
            .lines()
            .next()
            .unwrap_or("")
            .to_string(),
    )
}

impl ImportedCase {
    /// One test data set's inputs, in the function's input types (a
    /// sequence or optional input as the tensors it holds).
    fn inputs(&self, set: &Path) -> Result<Vec<HostTensor>> {
        let mut tensors = Vec::new();
        for (i, kind) in self.input_kinds.iter().enumerate() {
            if self.given.iter().any(|(g, _)| *g == i) {
                continue;
            }
            tensors.extend(load_value(&set.join(format!("input_{i}.pb")), *kind)?.1);
        }
        if tensors.len() != self.imported.inputs.len() {
            bail!(
                "{}: the data set holds {} input tensors, the imported function takes {}",
                set_name(set),
                tensors.len(),
                self.imported.inputs.len()
            );
        }
        self.imported
            .inputs
            .iter()
            .zip(&tensors)
            .map(|(info, c)| to_host(c, info.ty.dtype))
            .collect()
    }

    /// One test data set's expected outputs (a sequence or optional
    /// output as the tensors it holds, as the function returns them).
    fn expected(&self, set: &Path) -> Result<Vec<onnx::tensor::Const>> {
        let files = output_files(set)?;
        if files.len() != self.output_kinds.len() {
            bail!(
                "{}: the graph has {} outputs, the test data {}",
                set_name(set),
                self.output_kinds.len(),
                files.len()
            );
        }
        let mut tensors = Vec::new();
        for (file, kind) in files.iter().zip(&self.output_kinds) {
            tensors.extend(load_value(file, *kind)?.1);
        }
        if tensors.len() != self.imported.outputs.len() {
            bail!(
                "{}: the test data holds {} output tensors, the imported function returns {}",
                set_name(set),
                tensors.len(),
                self.imported.outputs.len()
            );
        }
        Ok(tensors)
    }
}

/// A case's name: its directory's.
pub(super) fn case_name(case: &Path) -> String {
    case.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("?")
        .to_string()
}

fn set_name(set: &Path) -> String {
    set.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Runs one case on `runtime`.
pub fn run_case(case: &Path, runtime: &Runtime) -> Outcome {
    let case = match import_case(case) {
        Ok(case) => case,
        Err(outcome) => return outcome,
    };
    let result = (|| -> Result<Option<String>> {
        let session = Session::new();
        let directory = tempfile::tempdir()?;
        let module = case.build(&session)?;
        let target = target_for(runtime.device());
        let compiled = compile_module_to_kernels(&session, module, target, &Default::default())?;
        let library = directory.path().join("model.so");
        compiled.link("model", &library)?;
        let loaded = Model::load(&library)?;
        let mut run_session = runtime.session(&loaded)?;
        for set in &case.sets {
            let inputs = case.inputs(set)?;
            let outputs = run_session.run(&case.imported.function, &inputs)?;
            let expected = case.expected(set)?;
            if outputs.len() != expected.len() {
                bail!(
                    "{}: the test data holds {} output tensors, the run gave {}",
                    set_name(set),
                    expected.len(),
                    outputs.len()
                );
            }
            for ((info, want), got) in case.imported.outputs.iter().zip(&expected).zip(&outputs) {
                if let Some(difference) = compare(&info.name, got, want, &case.tolerance, case.own)
                {
                    return Ok(Some(format!("{}: {difference}", set_name(set))));
                }
            }
        }
        Ok(None)
    })();
    match result {
        Ok(None) if case.given.is_empty() => Outcome::Pass,
        Ok(None) => Outcome::PassWithValues(case.given.iter().map(|(_, n)| n.clone()).collect()),
        Ok(Some(difference)) => Outcome::Fail(difference),
        Err(error) => failure(error),
    }
}

/// `--prepare=DIR`: compiles `case` for `target` into `DIR/NAME/model.so`
/// and writes each test data set's inputs and expected outputs as .npy
/// (`DIR/NAME/SET.inputI.npy`, `SET.expectedI.npy`), so that a machine
/// with an OpenCL driver but no compiler can run the scoreboard with
/// tcc-run and tcc-compare. Returns the MANIFEST lines: `NAME SET
/// FUNCTION NUM_INPUTS TOLERANCE...`, one tolerance per output (`exact`,
/// or `ABS:REL` for an inexact float output, computed from the expected
/// output as the scoreboard does here).
fn prepare_case(
    case: &ImportedCase,
    name: &str,
    target: Target,
    out: &Path,
) -> Result<Vec<String>> {
    let directory = out.join(name);
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("cannot create {}", directory.display()))?;
    let session = Session::new();
    let module = case.build(&session)?;
    crate::driver::pipeline::compile_module(
        &session,
        module,
        "model",
        target,
        &directory.join("model.so"),
    )?;
    let mut lines = Vec::new();
    for set in &case.sets {
        let set_tag = set_name(set);
        let inputs = case.inputs(set)?;
        for (i, input) in inputs.iter().enumerate() {
            tcc_runtime::npy::write_npy(&directory.join(format!("{set_tag}.input{i}.npy")), input)?;
        }
        let mut tolerances = Vec::new();
        for (i, (info, want)) in case
            .imported
            .outputs
            .iter()
            .zip(case.expected(set)?)
            .enumerate()
        {
            let host =
                to_host(&want, want.dtype).with_context(|| format!("output '{}'", info.name))?;
            tcc_runtime::npy::write_npy(
                &directory.join(format!("{set_tag}.expected{i}.npy")),
                &host,
            )?;
            let float = host.dtype.is_float();
            tolerances.push(if !float || case.tolerance.exact {
                "exact".to_string()
            } else {
                let scale = (0..want.numel())
                    .map(|i| want.f64_at(i).abs())
                    .filter(|v| v.is_finite())
                    .fold(0.0f64, f64::max);
                let (atol, rtol) = case.tolerance.bounds_for(scale, host.dtype);
                format!("{atol:e}:{rtol:e}")
            });
        }
        lines.push(format!(
            "{name} {set_tag} {} {} {}",
            case.imported.function,
            inputs.len(),
            tolerances.join(" ")
        ));
    }
    Ok(lines)
}

/// `--prepare=DIR` over every case: DIR/MANIFEST lists the prepared test
/// data sets, DIR/OUTCOMES the cases that end before running (in the
/// expectation-list format: the importer's refusals, compile failures).
pub fn prepare_cases(
    cases: &[PathBuf],
    target: Target,
    out: &Path,
    verbose: bool,
) -> Result<BTreeMap<String, Outcome>> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut manifest = String::new();
    let mut ended = BTreeMap::new();
    for case in cases {
        let name = case_name(case);
        let start = Instant::now();
        let outcome = match import_case(case) {
            Err(outcome) => Some(outcome),
            Ok(imported) => match prepare_case(&imported, &name, target, out) {
                Ok(lines) => {
                    for line in lines {
                        manifest.push_str(&line);
                        manifest.push('\n');
                    }
                    None
                }
                Err(error) => {
                    let _ = std::fs::remove_dir_all(out.join(&name));
                    Some(failure(error))
                }
            },
        };
        if verbose || outcome.is_some() {
            eprintln!(
                "{name}: {} ({:.1}s)",
                outcome
                    .as_ref()
                    .map_or("prepared".to_string(), Outcome::render),
                start.elapsed().as_secs_f64()
            );
        }
        if let Some(outcome) = outcome {
            ended.insert(name, outcome);
        }
    }
    crate::driver::write_atomically(&out.join("MANIFEST"), manifest.as_bytes())?;
    crate::driver::write_atomically(
        &out.join("OUTCOMES"),
        render_expectations(&ended).as_bytes(),
    )?;
    Ok(ended)
}
