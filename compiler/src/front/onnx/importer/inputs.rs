//! The function's arguments: initializers become named constants, and the
//! graph inputs that are not initializers become arguments of the
//! declared (or `--input-shape`) static type.

use std::collections::HashMap;
use std::path::Path;

use super::super::dtype::{self, DType, TType, checked_numel};
use super::super::emit::{Val, string_literal};
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::super::proto::{GraphProto, ValueInfoProto};
use super::super::tensor;
use super::super::{ImportOptions, IoInfo};
use super::graph::declared_type;
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

/// The function's arguments (their MLIR text, in order) and the inputs
/// they describe: every graph input that is not an initializer, defined in
/// `values` as `%argN`.
pub(super) fn define_arguments(
    imp: &mut Importer,
    graph: &GraphProto,
    options: &ImportOptions,
    values: &mut Values,
) -> Result<(Vec<String>, Vec<IoInfo>)> {
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
        let overridden = overrides.get(info.name.as_str()).copied();
        let ty = input_type(imp, info, overridden)?;
        let dim_names = if overridden.is_none() {
            symbolic_names(imp, info)?
        } else {
            String::new()
        };
        let ssa = format!("%arg{}", arguments.len());
        arguments.push(format!(
            "{ssa}: {} {{tcc.name = {}{}{dim_names}}} loc({})",
            ty.mlir(),
            string_literal(&info.name),
            unsigned_mark(ty.dtype),
            string_literal(&info.name)
        ));
        inputs.push(IoInfo {
            name: info.name.clone(),
            ty: ty.clone(),
        });
        // An input with no elements has no values to read: its nodes see
        // it as the (empty) constant it is, so that what depends only on
        // it — empty axes, a CastLike's type, shapes — is known at import
        // time; the argument stays in the interface.
        let value = if ty.numel() == 0 {
            Value::constant(tensor::Const {
                dtype: ty.dtype,
                shape: ty.shape.clone(),
                bytes: Default::default(),
                splat: false,
            })
        } else {
            Value::Tensor(Val { ssa, ty })
        };
        values.insert(info.name.clone(), value);
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
    Ok((arguments, inputs))
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
/// one; empty text when none is. Records the names the inputs use.
fn symbolic_names(imp: &mut Importer, info: &ValueInfoProto) -> Result<String> {
    let (_, dims, params) = declared_type(info).map_err(|e| e.context("graph input"))?;
    let names: Vec<&str> = dims
        .iter()
        .zip(&params)
        .map(|(d, p)| {
            if d.is_none() && imp.probes.contains_key(p) {
                p.as_str()
            } else {
                ""
            }
        })
        .collect();
    if names.iter().all(|n| n.is_empty()) {
        return Ok(String::new());
    }
    for name in &names {
        if !name.is_empty() && !imp.probed.iter().any(|p| p == name) {
            imp.probed.push(name.to_string());
        }
    }
    let quoted: Vec<String> = names.iter().map(|n| string_literal(n)).collect();
    Ok(format!(", tcc.dim_names = [{}]", quoted.join(", ")))
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
pub(super) fn unsigned_mark(dtype: DType) -> String {
    let minifloat = match dtype {
        DType::F8E4M3FN => "f8E4M3FN",
        DType::F8E4M3FNUZ => "f8E4M3FNUZ",
        DType::F8E5M2 => "f8E5M2",
        DType::F8E5M2FNUZ => "f8E5M2FNUZ",
        DType::F4E2M1 => "f4E2M1FN",
        _ if dtype.is_unsigned() => return ", tcc.unsigned".into(),
        _ => return String::new(),
    };
    format!(", tcc.minifloat = \"{minifloat}\"")
}
