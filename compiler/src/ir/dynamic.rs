//! Symbolic (dynamic) dimensions after the input phase (issue 33, the first
//! slice: a dynamic leading batch). What a pass that compiles a leading `?`
//! reads ([`leading_dynamic`]), and the one refusal that a pass which
//! cannot compile one yet returns ([`refuse_dynamic`]): the first op
//! computing on a dynamically shaped value, its ONNX node, the declared
//! dimensions with their ranges and the pass's name, so that a `?` never
//! reaches code that would read it as a huge static extent.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Type, TypeLike, ValueLike};

use tcc_dialects::dims::Dims;

use super::error::PassError;
use super::types::ranked_shape;
use super::util::{collect_ops, op_name};

/// Where a shaped type's one dynamic dimension is, when it has the slice's
/// form: at most one `?`, preceded only by unit dimensions (`?x32`,
/// `1x?x64`, `?x3x16x16`). `Ok(None)`: static (or not shaped); `Err(())`:
/// a dynamic dimension elsewhere, several, or an unranked type.
#[allow(clippy::result_unit_err)]
pub fn leading_dynamic(ty: Type) -> Result<Option<usize>, ()> {
    let raw = ty.to_raw();
    if !unsafe { mlir_sys::mlirTypeIsAShaped(raw) } {
        return Ok(None);
    }
    let shape = ranked_shape(ty).ok_or(())?;
    let dynamic: Vec<usize> = (0..shape.len()).filter(|&i| shape[i].is_none()).collect();
    match dynamic.as_slice() {
        [] => Ok(None),
        [i] if shape[..*i].iter().all(|d| *d == Some(1)) => Ok(Some(*i)),
        _ => Err(()),
    }
}

/// Whether a shaped type has a dynamic dimension.
pub fn is_dynamic(ty: Type) -> bool {
    ranked_shape(ty).is_some_and(|s| s.iter().any(Option::is_none))
        || (unsafe { mlir_sys::mlirTypeIsAShaped(ty.to_raw()) }
            && !unsafe { mlir_sys::mlirShapedTypeHasRank(ty.to_raw()) })
}

/// The module's declared dimensions (`tcc.dims`), looked up from `op`
/// through its parents; empty when none are declared.
pub fn module_dims(op: OperationRef) -> Dims {
    let mut current = Some(op);
    while let Some(op) = current {
        if let Ok(attribute) = op.attribute(tcc_dialects::dims::DIMS)
            && let Some(dims) = Dims::from_attribute(attribute)
        {
            return dims;
        }
        current = op.parent_operation();
    }
    Dims::default()
}

/// The declared dimensions as `'batch' (1..64)`, for messages.
pub fn describe_dims(dims: &Dims) -> String {
    if dims.0.is_empty() {
        return "undeclared".to_string();
    }
    dims.0
        .iter()
        .map(|d| format!("'{}' ({}..{})", d.name, d.min, d.max))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The ONNX node an op came from, when its location is a name.
pub fn node_name<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> Option<String> {
    let text = op.location().to_string();
    // A name location prints as `loc("fc1")`; a file location as
    // `loc("file.mlir":3:8)`, which names no node.
    let name = text.strip_prefix("loc(\"")?.strip_suffix("\")")?;
    (!name.contains('"')).then(|| name.to_string())
}

/// The first op under `root` (in pre-order) with a dynamically shaped
/// operand or result, and that type: a computing op (linalg, TOSA, tcc)
/// where there is one, else any (shape bookkeeping such as `tensor.dim`).
pub fn first_dynamic<'c>(root: OperationRef<'c, 'c>) -> Option<(OperationRef<'c, 'c>, Type<'c>)> {
    let ops = collect_ops(root);
    let dynamic_type = |op: &OperationRef<'c, 'c>| {
        op.results()
            .map(|r| r.r#type())
            .chain(op.operands().map(|v| v.r#type()))
            .find(|&ty| is_dynamic(ty))
    };
    let skipped = |name: &str| {
        matches!(
            name,
            "builtin.module" | "func.func" | "func.return" | "gpu.module" | "gpu.func"
        )
    };
    let computing = |name: &str| {
        ["linalg.", "tosa.", "tcc.", "gpu.launch_func"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
    };
    let mut any = None;
    for op in ops {
        let name = op_name(&op);
        if skipped(&name) {
            continue;
        }
        if let Some(ty) = dynamic_type(&op) {
            if computing(&name) {
                return Some((op, ty));
            }
            any.get_or_insert((op, ty));
        }
    }
    any
}

/// `Err` naming `pass` and the first op computing on a dynamic dimension,
/// for a pass that cannot compile one yet; `Ok` when `root` is static.
pub fn refuse_dynamic<'c>(root: OperationRef<'c, 'c>, pass: &str) -> Result<(), PassError<'c>> {
    let Some((op, ty)) = first_dynamic(root) else {
        return Ok(());
    };
    let name = op_name(&op);
    Err(PassError::at(
        op.location(),
        format!(
            "'{name}'{} computes on the dynamically shaped type '{}' (dynamic dimension {}): dynamic dimension not supported yet by {pass}; compile one shape with --input-shape",
            node_name(&op).map_or(String::new(), |n| format!(" (node '{n}')")),
            crate::diagnostics::truncate_for_message(&ty.to_string()),
            describe_dims(&module_dims(op)),
        ),
    ))
}
