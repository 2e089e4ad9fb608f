//! The function's results: the graph outputs (and, when asked, the float
//! tensors the nodes compute), each checked against its declared type. A
//! sequence or optional graph output is returned as the tensors it holds
//! (`NAME[i]` for a sequence's elements, `NAME` for an optional's tensor,
//! nothing for an empty optional), as `Structure` describes inputs.

use std::collections::HashSet;

use super::super::dtype::{DType, TType};
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::super::proto::{GraphProto, NodeProto, TypeProto, ValueInfoProto, type_proto};
use super::super::{ImportOptions, IoInfo};
use super::Importer;
use super::graph::tensor_dims;
use super::scope::{Item, Scope};

/// The returned values and the outputs they describe, in order.
pub(super) fn results(
    imp: &mut Importer,
    graph: &GraphProto,
    order: &[(usize, &NodeProto)],
    options: &ImportOptions,
    scope: &Scope,
) -> Result<(Vec<Val>, Vec<IoInfo>)> {
    let values = &scope.values;
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
        for (_, proto) in order {
            for name in proto.output.iter().filter(|n| !n.is_empty()) {
                if matches!(values.get(name), Some(Value::Tensor(v)) if v.dtype() == DType::F32)
                    && seen.insert(name.as_str())
                {
                    returned.push((name.as_str(), None));
                }
            }
        }
    }
    // Each returned tensor: its name, value and declared type.
    let mut tensors: Vec<Returned> = Vec::new();
    for (name, declared) in returned {
        let Some(item) = scope.get(name) else {
            bail!("graph output '{name}' is not defined")
        };
        let ty = declared.and_then(|d| d.r#type.as_ref());
        flatten(name, &item, ty, &mut tensors)?;
    }
    for (name, value, declared) in tensors {
        let name = name.as_str();
        // Computed tensors of a half graph stay f32 under
        // `round_half_at_storage`: those declared half are rounded here.
        let value = match declared
            .as_ref()
            .and_then(|(code, _)| DType::from_onnx(*code))
        {
            Some(half @ (DType::F16 | DType::BF16))
                if imp.round_half_at_storage.is_some() && value.dtype() == DType::F32 =>
            {
                super::half::narrow(imp, value, half)?
            }
            _ => value,
        };
        let ty = value.ty();
        if !ty.dtype.at_interface() {
            bail!(
                "graph output '{name}' has element type {}, which tcc does not support",
                ty.dtype
            );
        }
        if let Some((code, dims)) = declared {
            check_declared(imp, name, &ty, code, &dims)?;
        }
        let mut v = imp.val(&value)?;
        if v.is_argument() {
            v = imp.e.unary("tosa.identity", &v);
        }
        outputs.push(IoInfo {
            name: name.to_string(),
            ty: ty.clone(),
        });
        results.push(v);
    }
    Ok((results, outputs))
}

/// A returned tensor: its name, value, and the element type code and
/// dimensions declared for it (when the model declares them).
type Returned = (String, Value, Option<(i32, Vec<Option<i64>>)>);

/// Appends the tensors that graph output `name` (`item`, declared as
/// `ty`) returns to `out`, each with its declared element type and
/// dimensions where the declaration gives them.
fn flatten(name: &str, item: &Item, ty: Option<&TypeProto>, out: &mut Vec<Returned>) -> Result<()> {
    let inner = |ty: Option<&TypeProto>| -> Option<TypeProto> {
        match ty.and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::SequenceType(s)) => s.elem_type.as_deref().cloned(),
            Some(type_proto::Value::OptionalType(o)) => o.elem_type.as_deref().cloned(),
            _ => None,
        }
    };
    if !matches!(item, Item::Opt(_))
        && let Some(type_proto::Value::OptionalType(_)) = ty.and_then(|t| t.value.as_ref())
    {
        // A value declared optional that the graph always gives.
        let elem = inner(ty);
        return flatten(name, item, elem.as_ref(), out);
    }
    match item {
        Item::Tensor(v) => {
            let declared = match ty.and_then(|t| t.value.as_ref()) {
                Some(type_proto::Value::TensorType(t)) => match &t.shape {
                    Some(_) => tensor_dims(t, name).ok().map(|(c, d, _)| (c, d)),
                    // A sequence element of no declared shape: its type.
                    None => Some((t.elem_type, vec![None; v.rank()])),
                },
                Some(_) => {
                    bail!("graph output '{name}' is a tensor, but the model declares another kind")
                }
                None => None,
            };
            out.push((name.to_string(), v.clone(), declared));
        }
        Item::Seq(seq) => {
            if matches!(
                ty.and_then(|t| t.value.as_ref()),
                Some(type_proto::Value::TensorType(_))
            ) {
                bail!("graph output '{name}' is a sequence, but the model declares a tensor");
            }
            let elem = inner(ty);
            for (i, v) in seq.items.iter().enumerate() {
                flatten(
                    &format!("{name}[{i}]"),
                    &Item::Tensor(v.clone()),
                    elem.as_ref(),
                    out,
                )?;
            }
        }
        Item::Opt(None) => {}
        Item::Opt(Some(held)) => {
            let elem = inner(ty);
            flatten(name, held, elem.as_ref(), out)?;
        }
    }
    Ok(())
}

/// Checks the type the importer inferred for graph output `name` against
/// the model's declaration (element type `code`, dimensions `dims`).
fn check_declared(
    imp: &Importer,
    name: &str,
    ty: &TType,
    code: i32,
    dims: &[Option<i64>],
) -> Result<()> {
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
    Ok(())
}
