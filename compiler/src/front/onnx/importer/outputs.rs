//! The function's results: the graph outputs (and, when asked, the float
//! tensors the nodes compute), each checked against its declared type.

use std::collections::HashSet;

use super::super::dtype::{DType, TType};
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::super::proto::{GraphProto, NodeProto, ValueInfoProto};
use super::super::{ImportOptions, IoInfo};
use super::graph::declared_type;
use super::{Importer, Values};

/// The returned values and the outputs they describe, in order.
pub(super) fn results(
    imp: &mut Importer,
    graph: &GraphProto,
    order: &[(usize, &NodeProto)],
    options: &ImportOptions,
    values: &Values,
) -> Result<(Vec<Val>, Vec<IoInfo>)> {
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
    for (name, declared) in returned {
        let Some(value) = values.get(name).cloned() else {
            bail!("graph output '{name}' is not defined")
        };
        let ty = value.ty();
        if !ty.dtype.at_interface() {
            bail!(
                "graph output '{name}' has element type {}, which tcc does not support",
                ty.dtype
            );
        }
        if let Some(Ok((code, dims, _))) = declared.map(declared_type) {
            check_declared(imp, name, &ty, code, &dims)?;
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
    Ok((results, outputs))
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
