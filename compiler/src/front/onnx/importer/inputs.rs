//! The function's arguments: initializers become named constants, and the
//! graph inputs that are not initializers become arguments of the
//! declared (or `--input-shape`) static type.

use std::collections::HashMap;
use std::path::Path;

use super::super::dtype::{self, DType, TType, checked_numel};
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::super::proto::{GraphProto, TypeProto, ValueInfoProto, type_proto};
use super::super::tensor::{self, Const};
use super::super::{ImportOptions, InputValue, IoInfo, Structure};
use super::graph::{declared_type, tensor_dims};
use super::module::{ArgAttr, DIM_NAMES, MINIFLOAT, NAME, UNSIGNED};
use super::scope::{Item, Seq};
use super::{Importer, Values};

/// Defines every initializer as a constant value, named by its ONNX name
/// (`#index` when it has none).
pub(super) fn define_initializers(
    imp: &mut Importer,
    graph: &GraphProto,
    base_dir: Option<&Path>,
    values: &mut Values,
) -> Result<()> {
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
    Ok(())
}

/// Defines each graph input given a value at compile time
/// ([`ImportOptions::input_values`]) as a constant, named by the input: it
/// becomes no argument. Its element type must be the declared one, and
/// its shape must fit the declared dimensions (a dynamic one takes any
/// extent).
pub(super) fn define_input_values(
    imp: &mut Importer,
    graph: &GraphProto,
    options: &ImportOptions,
    values: &mut Values,
) -> Result<()> {
    for (i, (name, given)) in options.input_values.iter().enumerate() {
        let flag = format!("--input-value {name}");
        if options.input_values[..i].iter().any(|(n, _)| n == name) {
            bail!("{flag}: a value is given twice for the input '{name}'");
        }
        if values.contains_key(name) {
            bail!("{flag}: '{name}' is an initializer, whose value the model itself gives");
        }
        let Some(info) = graph.input.iter().find(|info| info.name == *name) else {
            let inputs: Vec<&str> = graph
                .input
                .iter()
                .map(|info| info.name.as_str())
                .filter(|n| !values.contains_key(*n))
                .collect();
            bail!(
                "{flag}: the graph has no input '{name}' (its inputs are: {})",
                inputs.join(", ")
            );
        };
        if options.input_shapes.iter().any(|(n, _)| n == name)
            || options.structures.iter().any(|(n, _)| n == name)
        {
            bail!("{flag}: the input's shape or structure is given too; its value fixes both");
        }
        let (code, dims, _) = declared_type(info).map_err(|e| e.context(&flag))?;
        let Some(dtype) = DType::from_onnx(code) else {
            bail!(
                "{flag}: the input's element type {} is not supported",
                DType::onnx_code_name(code)
            );
        };
        let value = match given {
            InputValue::Tensor(proto) => tensor::decode(proto, None, &flag)?,
            InputValue::Literal(texts) => literal(dtype, &dims, texts, &flag)?,
        };
        if value.dtype != dtype {
            bail!(
                "{flag}: the value's element type is {}, the input's {}",
                DType::onnx_code_name(value.dtype.onnx_code()),
                DType::onnx_code_name(code)
            );
        }
        let fits = value.shape.len() == dims.len()
            && value
                .shape
                .iter()
                .zip(&dims)
                .all(|(&extent, dim)| dim.is_none_or(|d| d == extent));
        if !fits {
            let declared: Vec<String> = dims
                .iter()
                .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
                .collect();
            bail!(
                "{flag}: the value has the shape [{}], the input is declared [{}]",
                value
                    .shape
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                declared.join(", ")
            );
        }
        let value = Value::constant(imp.adopt(value));
        imp.name(&value, name);
        values.insert(name.clone(), value);
    }
    Ok(())
}

/// A literal value (`1,-1,3`) of an input of element type `dtype` and
/// declared dimensions `dims`: the declared shape when static, else a
/// scalar for one element of a 0-d input or a vector for a 1-D one.
fn literal(dtype: DType, dims: &[Option<i64>], texts: &[String], flag: &str) -> Result<Const> {
    let count = texts.len() as i64;
    let shape: Vec<i64> = if dims.iter().all(Option::is_some) {
        let shape: Vec<i64> = dims.iter().flatten().copied().collect();
        if checked_numel(&shape) != Some(count) {
            bail!(
                "{flag}: {count} value{} given, the input's declared shape [{}] holds {}",
                if count == 1 { " is" } else { "s are" },
                shape
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                checked_numel(&shape).unwrap_or(0)
            );
        }
        shape
    } else if dims.len() == 1 {
        vec![count]
    } else {
        bail!(
            "{flag}: the input has dynamic dimensions and rank {}: give its value as a tensor (@file.npy)",
            dims.len()
        );
    };
    let bad = |text: &str| {
        ImportError::new(format!(
            "{flag}: '{text}' is not a value of the input's element type {}",
            DType::onnx_code_name(dtype.onnx_code())
        ))
    };
    if dtype.is_float() {
        let values = texts
            .iter()
            .map(|t| t.trim().parse::<f64>().map_err(|_| bad(t)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Const::from_f64(dtype, shape, &values))
    } else if dtype == DType::Bool {
        let values = texts
            .iter()
            .map(|t| match t.trim() {
                "true" | "1" => Ok(1),
                "false" | "0" => Ok(0),
                _ => Err(bad(t)),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Const::from_i64(dtype, shape, &values))
    } else if dtype.is_int() && !dtype.is_narrow() {
        let values = texts
            .iter()
            .map(|t| {
                let v = t.trim().parse::<i128>().map_err(|_| bad(t))?;
                let (lo, hi) = dtype
                    .int_bounds()
                    .unwrap_or((i64::MIN.into(), i64::MAX.into()));
                if v < lo || v > hi {
                    return Err(bad(t));
                }
                Ok(v as i64)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Const::from_i64(dtype, shape, &values))
    } else {
        bail!(
            "{flag}: a literal of element type {} is not supported: give the value as a tensor (@file.npy)",
            DType::onnx_code_name(dtype.onnx_code())
        )
    }
}

/// The function's arguments (their MLIR text, in order) and the inputs
/// they describe: every graph input that is not an initializer, defined in
/// `values` as `%argN`. A sequence or optional graph input becomes one
/// argument per tensor it holds, as `options.structures` says (see
/// [`Structure`]), and is returned as an aggregate to define in the scope.
pub(super) fn define_arguments(
    imp: &mut Importer,
    graph: &GraphProto,
    options: &ImportOptions,
    values: &mut Values,
) -> Result<Arguments> {
    let mut args = Arguments::default();
    let overrides: HashMap<&str, &Vec<i64>> = options
        .input_shapes
        .iter()
        .map(|(n, s)| (n.as_str(), s))
        .collect();
    let structures: HashMap<&str, &Structure> = options
        .structures
        .iter()
        .map(|(n, s)| (n.as_str(), s))
        .collect();
    for info in &graph.input {
        if values.contains_key(&info.name) {
            continue;
        }
        let aggregate = matches!(
            info.r#type.as_ref().and_then(|t| t.value.as_ref()),
            Some(type_proto::Value::SequenceType(_) | type_proto::Value::OptionalType(_))
        );
        if aggregate {
            let ty = info.r#type.as_ref().expect("matched above");
            let structure = match (
                structures.get(info.name.as_str()),
                overrides.get(info.name.as_str()),
            ) {
                (Some(s), _) => (*s).clone(),
                (None, Some(shape)) => {
                    Structure::Optional(Some(Box::new(Structure::Tensor((*shape).clone()))))
                }
                (None, None) => default_structure(ty, &info.name)?,
            };
            let item = aggregate_argument(imp, ty, &structure, &info.name, &mut args)?;
            args.aggregates.push((info.name.clone(), item));
            args.graph_inputs.push(info.name.clone());
            continue;
        }
        if structures.contains_key(info.name.as_str()) {
            bail!(
                "graph input '{}' is a tensor: a sequence or optional structure was given for it (give a tensor's shape with --input-shape)",
                info.name
            );
        }
        let overridden = overrides.get(info.name.as_str()).copied();
        let ty = input_type(imp, info, overridden)?;
        let dim_names = if overridden.is_none() {
            symbolic_names(imp, info)?
        } else {
            None
        };
        let value = args.push(ty, &info.name, dim_names);
        args.graph_inputs.push(info.name.clone());
        values.insert(info.name.clone(), value);
    }
    let given = options
        .input_shapes
        .iter()
        .map(|(n, _)| (n, "--input-shape"));
    let structures = options.structures.iter().map(|(n, _)| (n, "a structure"));
    for (name, what) in given.chain(structures) {
        if !args.graph_inputs.contains(name) {
            let what = if what == "--input-shape" {
                "--input-shape names".to_string()
            } else {
                format!("{what} is given for")
            };
            bail!(
                "{what} '{name}', which is not a graph input (the graph inputs are: {})",
                args.graph_inputs.join(", ")
            );
        }
    }
    Ok(args)
}

/// The function's arguments: their types and attributes, the inputs they describe,
/// and the sequence and optional graph inputs made of them.
#[derive(Default)]
pub(super) struct Arguments {
    pub entries: Vec<super::module::Argument>,
    pub inputs: Vec<IoInfo>,
    pub aggregates: Vec<(String, Item)>,
    /// The graph inputs that became arguments or aggregates, in order.
    graph_inputs: Vec<String>,
}

impl Arguments {
    /// Adds the argument `name` of type `ty` and returns its value.
    fn push(&mut self, ty: TType, name: &str, dim_names: Option<Vec<String>>) -> Value {
        let index = self.entries.len();
        let mut attrs = vec![(NAME, ArgAttr::Str(name.to_string()))];
        attrs.extend(unsigned_mark(ty.dtype));
        if let Some(names) = dim_names {
            attrs.push((DIM_NAMES, ArgAttr::Strs(names)));
        }
        self.entries.push(super::module::Argument {
            ty: ty.clone(),
            attrs,
            name: name.to_string(),
        });
        self.inputs.push(IoInfo {
            name: name.to_string(),
            ty: ty.clone(),
        });
        // An input with no elements has no values to read: its nodes see
        // it as the (empty) constant it is, so that what depends only on
        // it — empty axes, a CastLike's type, shapes — is known at import
        // time; the argument stays in the interface.
        if ty.numel() == 0 {
            Value::constant(tensor::Const {
                dtype: ty.dtype,
                shape: ty.shape.clone(),
                bytes: Default::default(),
                splat: false,
            })
        } else {
            Value::Tensor(Val::argument(index, ty))
        }
    }
}

/// The structure of a sequence or optional input given none: an optional
/// tensor of a static declared shape holds one; anything else must be
/// given, since an ONNX type does not say a sequence's length.
fn default_structure(ty: &TypeProto, name: &str) -> Result<Structure> {
    if let Some(type_proto::Value::OptionalType(opt)) = &ty.value
        && let Some(TypeProto {
            value: Some(type_proto::Value::TensorType(t)),
            ..
        }) = opt.elem_type.as_deref()
        && let Ok((_, dims, _)) = tensor_dims(t, name)
        && dims.iter().all(Option::is_some)
    {
        return Ok(Structure::Optional(Some(Box::new(Structure::Tensor(
            dims.into_iter().flatten().collect(),
        )))));
    }
    let (kind, flag) = match &ty.value {
        Some(type_proto::Value::SequenceType(_)) => {
            ("a sequence", format!("--sequence {name}=SHAPE,SHAPE,..."))
        }
        _ => (
            "an optional",
            format!(
                "--input-shape {name}=DIMS, --sequence {name}=SHAPE,... or --empty-optional {name}"
            ),
        ),
    };
    bail!(
        "graph input '{name}' is {kind}: its type does not say how many tensors it holds nor their shapes, which tcc's compiled functions need (one tensor argument per element); give its structure (tcc import/compile {flag}; tcc onnx-test takes it from the test data)"
    )
}

/// The value of a sequence or optional graph input (type `ty`) holding
/// `structure`, its tensors added as arguments named after `name`.
fn aggregate_argument(
    imp: &mut Importer,
    ty: &TypeProto,
    structure: &Structure,
    name: &str,
    args: &mut Arguments,
) -> Result<Item> {
    let element_type = |elem: Option<&TypeProto>| -> Result<(DType, Option<Vec<Option<i64>>>)> {
        let Some(TypeProto {
            value: Some(type_proto::Value::TensorType(t)),
            ..
        }) = elem
        else {
            bail!(
                "graph input '{name}': sequences of sequences, maps or optionals are not supported"
            )
        };
        let Some(dtype) = DType::from_onnx(t.elem_type) else {
            bail!(
                "graph input '{name}' has element type {}, which tcc does not support",
                DType::onnx_code_name(t.elem_type)
            )
        };
        let dims = match &t.shape {
            Some(_) => Some(tensor_dims(t, name)?.1),
            None => None,
        };
        Ok((imp.graph_dtype(dtype), dims))
    };
    match (&ty.value, structure) {
        (Some(type_proto::Value::SequenceType(seq)), Structure::Sequence(shapes)) => {
            let (dtype, dims) = element_type(seq.elem_type.as_deref())?;
            let mut items = Vec::new();
            for (i, shape) in shapes.iter().enumerate() {
                let element = format!("{name}[{i}]");
                let ty = element_tensor(dtype, dims.as_deref(), shape, &element)?;
                items.push(args.push(ty, &element, None));
            }
            Ok(Item::Seq(Seq { elem: dtype, items }))
        }
        // A sequence given for an optional sequence (`tcc compile
        // --sequence`): the optional holds it.
        (Some(type_proto::Value::OptionalType(_)), Structure::Sequence(_)) => aggregate_argument(
            imp,
            ty,
            &Structure::Optional(Some(Box::new(structure.clone()))),
            name,
            args,
        ),
        (Some(type_proto::Value::OptionalType(_)), Structure::Optional(None)) => {
            Ok(Item::Opt(None))
        }
        (Some(type_proto::Value::OptionalType(opt)), Structure::Optional(Some(inner))) => {
            let Some(elem) = opt.elem_type.as_deref() else {
                bail!("graph input '{name}' is an optional of no type")
            };
            let inner = aggregate_argument(imp, elem, inner, name, args)?;
            Ok(Item::Opt(Some(Box::new(inner))))
        }
        (Some(type_proto::Value::TensorType(_)), Structure::Tensor(shape)) => {
            let (dtype, dims) = element_type(Some(ty))?;
            let ty = element_tensor(dtype, dims.as_deref(), shape, name)?;
            Ok(Item::Tensor(args.push(ty, name, None)))
        }
        (value, _) => {
            let kind = match value {
                Some(type_proto::Value::SequenceType(_)) => "a sequence",
                Some(type_proto::Value::OptionalType(_)) => "an optional",
                Some(type_proto::Value::TensorType(_)) => "a tensor",
                _ => "of a kind tcc does not support",
            };
            let given = match structure {
                Structure::Tensor(_) => "a tensor",
                Structure::Sequence(_) => "a sequence",
                Structure::Optional(_) => "an optional",
            };
            bail!("graph input '{name}' is {kind}, but the structure given for it is {given}")
        }
    }
}

/// The type of one tensor of a sequence or optional input: `shape`, which
/// must agree with the declared `dims` (when declared).
fn element_tensor(
    dtype: DType,
    dims: Option<&[Option<i64>]>,
    shape: &[i64],
    name: &str,
) -> Result<TType> {
    if !dtype.at_interface() {
        bail!("graph input '{name}' has element type {dtype}, which tcc does not support");
    }
    if let Some(dims) = dims
        && (dims.len() != shape.len()
            || dims
                .iter()
                .zip(shape)
                .any(|(d, s)| d.is_some_and(|d| d != *s)))
    {
        let declared: Vec<String> = dims
            .iter()
            .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
            .collect();
        bail!(
            "graph input '{name}' is given the shape {} but the model declares [{}]",
            dtype::shape_text(shape),
            declared.join(", ")
        );
    }
    if shape.iter().any(|&d| d < 0) || checked_numel(shape).is_none() {
        bail!(
            "graph input '{name}' is given the shape {}, which is negative or more than tcc's limit of {} elements",
            dtype::shape_text(shape),
            dtype::MAX_ELEMENTS
        );
    }
    Ok(TType::new(dtype, shape.to_vec()))
}

/// A graph input's static type: its declared element type and shape, or
/// the `--input-shape` given for it (`shape`).
fn input_type(
    imp: &mut Importer,
    info: &ValueInfoProto,
    shape: Option<&Vec<i64>>,
) -> Result<TType> {
    let (code, dims, params) = declared_type(info).map_err(|e| e.context("graph input"))?;
    let Some(dtype) = DType::from_onnx(code) else {
        bail!(
            "graph input '{}' has element type {}, which tcc does not support",
            info.name,
            DType::onnx_code_name(code)
        );
    };
    let dtype = imp.graph_dtype(dtype);
    if !dtype.at_interface() {
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
    let shape: Vec<i64> = match shape {
        Some(shape) => overridden_shape(imp, info, &dims, &params, shape)?,
        None => static_shape(imp, info, &dims, &params)?,
    };
    if checked_numel(&shape).is_none() {
        bail!(
            "graph input '{}' has the shape {}, more than tcc's limit of {} elements",
            info.name,
            dtype::shape_text(&shape),
            dtype::MAX_ELEMENTS
        );
    }
    Ok(TType::new(dtype, shape))
}

/// The declared dimensions as text (`N` for a dynamic one named N).
fn declared_dims(dims: &[Option<i64>], params: &[String]) -> Vec<String> {
    dims.iter()
        .zip(params)
        .map(|(d, p)| d.map_or(p.clone(), |d| d.to_string()))
        .collect()
}

/// `--input-shape`'s `shape` for a graph input declared with `dims`:
/// dynamic dimensions take any value; of the static ones only the batch
/// (the first) may change, and then the same way for every input (the
/// importer remembers it to rebatch reshapes and outputs).
fn overridden_shape(
    imp: &mut Importer,
    info: &ValueInfoProto,
    dims: &[Option<i64>],
    params: &[String],
    shape: &[i64],
) -> Result<Vec<i64>> {
    if shape.len() != dims.len()
        || dims
            .iter()
            .zip(shape.iter())
            .skip(1)
            .any(|(d, s)| d.is_some_and(|d| d != *s))
    {
        let declared = declared_dims(dims, params);
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
            format!("{} ({})", dtype::shape_text(shape), rank(shape.len()))
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
    Ok(shape.to_vec())
}

/// The `tcc.dim_names` entry of a graph input's attributes: which of its
/// dimensions are symbolic (`--dim`) and as which name, `""` for a static
/// one; `None` when none is. Records the names the inputs use.
fn symbolic_names(imp: &mut Importer, info: &ValueInfoProto) -> Result<Option<Vec<String>>> {
    let (_, dims, params) = declared_type(info).map_err(|e| e.context("graph input"))?;
    let names: Vec<&str> = dims
        .iter()
        .zip(&params)
        .map(|(d, p)| {
            if d.is_none() && imp.probes.contains_key(p) && !imp.fixed.contains(p) {
                p.as_str()
            } else {
                ""
            }
        })
        .collect();
    if names.iter().all(|n| n.is_empty()) {
        return Ok(None);
    }
    for name in &names {
        if !name.is_empty() && !imp.probed.iter().any(|p| p == name) {
            imp.probed.push(name.to_string());
        }
    }
    Ok(Some(names.iter().map(|n| n.to_string()).collect()))
}

/// The declared shape of a graph input, which must be static but for the
/// symbolic dimensions (`--dim`), which take their probe's value here.
fn static_shape(
    imp: &Importer,
    info: &ValueInfoProto,
    dims: &[Option<i64>],
    params: &[String],
) -> Result<Vec<i64>> {
    let mut shape = Vec::new();
    for (d, p) in dims.iter().zip(params) {
        match d {
            Some(d) => shape.push(*d),
            None if imp.probes.contains_key(p) => shape.push(imp.probes[p]),
            None => bail!(
                "graph input '{}' has the dynamic dimension '{p}' (shape {}): give its range with --dim {p}=MIN..MAX, or a static shape with --input-shape {}=DIMS",
                info.name,
                declared_dims(dims, params).join("x"),
                info.name
            ),
        }
    }
    Ok(shape)
}

/// The `tcc.unsigned` entry of an argument's or result's attributes when
/// its (signless) tensor holds unsigned integers: the artifact's interface
/// then says uint8/16/32/64 (`tcc-record-interface`); the `tcc.minifloat`
/// entry when its `i8` tensor holds a float8 or float4's bits.
pub(super) fn unsigned_mark(dtype: DType) -> Vec<(&'static str, ArgAttr)> {
    let minifloat = match dtype {
        DType::F8E4M3FN => "f8E4M3FN",
        DType::F8E4M3FNUZ => "f8E4M3FNUZ",
        DType::F8E5M2 => "f8E5M2",
        DType::F8E5M2FNUZ => "f8E5M2FNUZ",
        DType::F4E2M1 => "f4E2M1FN",
        _ if dtype.is_unsigned() => return vec![(UNSIGNED, ArgAttr::Unit)],
        _ => return Vec::new(),
    };
    vec![(MINIFLOAT, ArgAttr::Str(minifloat.to_string()))]
}
