//! Small helpers over melior/mlir-sys used by several passes.

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef, WalkOrder, WalkResult};
use melior::ir::{Attribute, RegionLike, Value, ValueLike};

/// The op's name as a Rust string (`"tosa.add"`).
pub fn op_name<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> String {
    let name = op.name();
    name.as_string_ref()
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The dialect prefix of an op name (`"tosa"` for `"tosa.add"`).
pub fn dialect_of(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Every op nested in `root` (root included), pre-order, as `'c`-lived refs.
pub fn collect_ops<'c>(root: OperationRef<'c, 'c>) -> Vec<OperationRef<'c, 'c>> {
    let mut ops = Vec::new();
    root.walk(WalkOrder::PreOrder, |op| {
        ops.push(unsafe { OperationRef::from_raw(op.to_raw()) });
        WalkResult::Advance
    });
    ops
}

/// Every op named `name` nested in `root` (and `root` itself), in pre-order.
pub fn ops_named<'c>(root: OperationRef<'c, 'c>, name: &str) -> Vec<OperationRef<'c, 'c>> {
    collect_ops(root)
        .into_iter()
        .filter(|op| op_name(op) == name)
        .collect()
}

/// The ops named `name` directly inside the first block of `op`'s first region.
pub fn body_ops_named<'c>(op: OperationRef<'c, 'c>, name: &str) -> Vec<OperationRef<'c, 'c>> {
    body_ops(op)
        .into_iter()
        .filter(|child| op_name(child) == name)
        .collect()
}

/// The ops directly inside the first block of the first region of `op`.
pub fn body_ops<'c>(op: OperationRef<'c, 'c>) -> Vec<OperationRef<'c, 'c>> {
    let mut ops = Vec::new();
    let Ok(region) = op.region(0) else { return ops };
    let Some(block) = region.first_block() else {
        return ops;
    };
    let mut next = melior::ir::BlockLike::first_operation(&block);
    while let Some(current) = next {
        next = current.next_in_block();
        ops.push(unsafe { OperationRef::from_raw(current.to_raw()) });
    }
    ops
}

/// The op defining `value`, if it is an op result.
pub fn defining_op<'c>(value: Value<'c, 'c>) -> Option<OperationRef<'c, 'c>> {
    if !value.is_operation_result() {
        return None;
    }
    let raw = unsafe { mlir_sys::mlirOpResultGetOwner(value.to_raw()) };
    Some(unsafe { OperationRef::from_raw(raw) })
}

/// The value of an integer (or index) `arith.constant`, if `value` is one.
pub fn constant_int(value: Value) -> Option<i64> {
    let op = defining_op(unsafe { Value::from_raw(value.to_raw()) })?;
    (op_name(&op) == "arith.constant")
        .then(|| op.attribute("value").ok().and_then(integer_value))
        .flatten()
}

/// The value of a scalar float `arith.constant`, if `value` is one.
pub fn constant_float(value: Value) -> Option<f64> {
    let op = defining_op(unsafe { Value::from_raw(value.to_raw()) })?;
    if op_name(&op) != "arith.constant" {
        return None;
    }
    let raw = op.attribute("value").ok()?.to_raw();
    unsafe { mlir_sys::mlirAttributeIsAFloat(raw) }
        .then(|| unsafe { mlir_sys::mlirFloatAttrGetValueDouble(raw) })
}

/// Number of uses of a value.
pub fn use_count(value: Value) -> usize {
    let mut count = 0;
    let mut use_ = unsafe { mlir_sys::mlirValueGetFirstUse(value.to_raw()) };
    while !use_.ptr.is_null() {
        count += 1;
        use_ = unsafe { mlir_sys::mlirOpOperandGetNextUse(use_) };
    }
    count
}

/// The ops using a value (one entry per use).
pub fn users<'c>(value: Value<'c, 'c>) -> Vec<OperationRef<'c, 'c>> {
    let mut result = Vec::new();
    let mut use_ = unsafe { mlir_sys::mlirValueGetFirstUse(value.to_raw()) };
    while !use_.ptr.is_null() {
        result.push(unsafe { OperationRef::from_raw(mlir_sys::mlirOpOperandGetOwner(use_)) });
        use_ = unsafe { mlir_sys::mlirOpOperandGetNextUse(use_) };
    }
    result
}

/// A string attribute's value, if `attribute` is one.
pub fn string_value(attribute: Attribute) -> Option<String> {
    if !unsafe { mlir_sys::mlirAttributeIsAString(attribute.to_raw()) } {
        return None;
    }
    // Read through mlir-sys: an empty string attribute has a null data
    // pointer, which melior's accessor does not allow.
    let value = unsafe { mlir_sys::mlirStringAttrGetValue(attribute.to_raw()) };
    if value.data.is_null() || value.length == 0 {
        return Some(String::new());
    }
    let bytes = unsafe { std::slice::from_raw_parts(value.data as *const u8, value.length) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

/// An integer attribute's value, if `attribute` is one.
pub fn integer_value(attribute: Attribute) -> Option<i64> {
    melior::ir::attribute::IntegerAttribute::try_from(attribute)
        .ok()
        .map(|i| i.value())
}

/// Same op (by identity).
/// The root and leaf names of a symbol reference (`@kernels::@k` gives
/// `("kernels", "k")`, `@f` gives `("f", "f")`); `None` for any other
/// attribute.
pub fn symbol_names(attribute: Attribute) -> Option<(String, String)> {
    let raw = attribute.to_raw();
    if !unsafe { mlir_sys::mlirAttributeIsASymbolRef(raw) } {
        return None;
    }
    let text = |s: mlir_sys::MlirStringRef| {
        let bytes = unsafe { std::slice::from_raw_parts(s.data as *const u8, s.length) };
        String::from_utf8_lossy(bytes).into_owned()
    };
    let root = text(unsafe { mlir_sys::mlirSymbolRefAttrGetRootReference(raw) });
    let leaf = text(unsafe { mlir_sys::mlirSymbolRefAttrGetLeafReference(raw) });
    Some((root, leaf))
}

pub fn same_op<'c: 'a, 'a>(a: &impl OperationLike<'c, 'a>, b: &impl OperationLike<'c, 'a>) -> bool {
    a.to_raw().ptr == b.to_raw().ptr
}

/// Prints an op's location as `file:line:col` when it has one.
pub fn location_text<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> String {
    crate::diagnostics::location_string(op.location().to_raw())
        .unwrap_or_else(|| "<unknown location>".into())
}

/// Whether no result of `op` has a use left.
pub fn is_unused(op: OperationRef) -> bool {
    op.results().all(|r| use_count(r.into()) == 0)
}

/// Sets the discardable attribute `name` of `op` to `value` (any op found
/// in a pass's IR; melior only offers this on `OperationRefMut`).
pub fn set_discardable_attribute<'c>(op: OperationRef<'c, 'c>, name: &str, value: Attribute<'c>) {
    let mut op = unsafe { melior::ir::operation::OperationRefMut::from_raw(op.to_raw()) };
    melior::ir::operation::OperationMutLike::set_discardable_attribute(&mut op, name, value);
}

/// `op`'s discardable attributes whose names start with `prefix`, as
/// (name, value) pairs in order.
pub fn discardable_attributes<'c>(
    op: OperationRef<'c, 'c>,
    prefix: &str,
) -> Vec<(String, Attribute<'c>)> {
    let count = unsafe { mlir_sys::mlirOperationGetNumDiscardableAttributes(op.to_raw()) };
    (0..count)
        .filter_map(|i| {
            let named = unsafe { mlir_sys::mlirOperationGetDiscardableAttribute(op.to_raw(), i) };
            let name = unsafe { melior::ir::Identifier::from_raw(named.name) }
                .as_string_ref()
                .as_str()
                .ok()?
                .to_string();
            let value = unsafe { Attribute::from_raw(named.attribute) };
            name.starts_with(prefix).then_some((name, value))
        })
        .collect()
}

/// Detaches `op` from its block and destroys it (its results must have no
/// uses left).
pub fn erase_op(op: OperationRef) {
    let mut doomed = unsafe { melior::ir::operation::OperationRefMut::from_raw(op.to_raw()) };
    melior::ir::operation::OperationMutLike::remove_from_parent(&mut doomed);
    unsafe { mlir_sys::mlirOperationDestroy(op.to_raw()) };
}

/// Replaces every use of `old` (a result of `op`) by `new`, then erases
/// `op`.
pub fn replace_and_erase<'c>(op: OperationRef<'c, 'c>, old: Value<'c, 'c>, new: Value<'c, 'c>) {
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), new.to_raw()) };
    erase_op(op);
}

/// A reshape's `reassociation` attribute as index groups.
pub fn reassociation(op: OperationRef) -> Option<Vec<Vec<i64>>> {
    let groups =
        melior::ir::attribute::ArrayAttribute::try_from(op.attribute("reassociation").ok()?)
            .ok()?;
    (0..groups.len())
        .map(|g| {
            let group =
                melior::ir::attribute::ArrayAttribute::try_from(groups.element(g).ok()?).ok()?;
            (0..group.len())
                .map(|i| {
                    let index = group.element(i).ok()?;
                    melior::ir::attribute::IntegerAttribute::try_from(index)
                        .ok()
                        .map(|a| a.value())
                })
                .collect()
        })
        .collect()
}

/// The elements of `op`'s `DenseI64ArrayAttribute` named `name`
/// (`static_strides`, `static_sizes`, ...), if it has one.
pub fn dense_i64_array(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    let attribute = op.attribute(name).ok()?;
    let raw = attribute.to_raw();
    if !unsafe { mlir_sys::mlirAttributeIsADenseI64Array(raw) } {
        return None;
    }
    let count = unsafe { mlir_sys::mlirDenseArrayGetNumElements(raw) };
    Some(
        (0..count)
            .map(|i| unsafe { mlir_sys::mlirDenseI64ArrayGetElement(raw, i) })
            .collect(),
    )
}

/// Adds `name = value` to argument `index`'s attribute dictionary of a
/// function-like op (its `arg_attrs`), keeping the other entries.
pub fn set_argument_attribute<'c>(
    context: &'c melior::Context,
    function: OperationRef<'c, 'c>,
    index: usize,
    name: &str,
    value: melior::ir::Attribute<'c>,
) {
    use melior::ir::BlockLike as _;
    use melior::ir::operation::OperationMutLike as _;
    let count = function
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .map_or(0, |b| b.argument_count());
    let existing = function.attribute("arg_attrs").ok();
    let mut dictionaries = Vec::with_capacity(count);
    for i in 0..count {
        let old = existing.and_then(|array| unsafe {
            let raw = array.to_raw();
            (mlir_sys::mlirAttributeIsAArray(raw)
                && (i as isize) < mlir_sys::mlirArrayAttrGetNumElements(raw))
            .then(|| mlir_sys::mlirArrayAttrGetElement(raw, i as isize))
        });
        let mut entries: Vec<mlir_sys::MlirNamedAttribute> = Vec::new();
        if let Some(old) = old
            && unsafe { mlir_sys::mlirAttributeIsADictionary(old) }
        {
            for e in 0..unsafe { mlir_sys::mlirDictionaryAttrGetNumElements(old) } {
                let entry = unsafe { mlir_sys::mlirDictionaryAttrGetElement(old, e) };
                if i != index
                    || unsafe { melior::ir::Identifier::from_raw(entry.name) }
                        .as_string_ref()
                        .as_str()
                        != Ok(name)
                {
                    entries.push(entry);
                }
            }
        }
        if i == index {
            entries.push(mlir_sys::MlirNamedAttribute {
                name: melior::ir::Identifier::new(context, name).to_raw(),
                attribute: value.to_raw(),
            });
        }
        dictionaries.push(unsafe {
            mlir_sys::mlirDictionaryAttrGet(
                context.to_raw(),
                entries.len() as isize,
                entries.as_ptr(),
            )
        });
    }
    let array = unsafe {
        melior::ir::Attribute::from_raw(mlir_sys::mlirArrayAttrGet(
            context.to_raw(),
            dictionaries.len() as isize,
            dictionaries.as_ptr(),
        ))
    };
    // `arg_attrs` is an inherent attribute of function-like ops.
    unsafe { melior::ir::operation::OperationRefMut::from_raw(function.to_raw()) }
        .set_attribute("arg_attrs", array);
}
