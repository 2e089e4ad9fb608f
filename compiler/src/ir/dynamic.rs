//! Symbolic (dynamic) dimensions after the input phase (issue 33, the first
//! slice: a dynamic leading batch). What a pass that compiles a leading `?`
//! reads ([`leading_dynamic`]), and the one refusal that a pass which
//! cannot compile one yet returns ([`refuse_dynamic`]): the first op
//! computing on a dynamically shaped value, its ONNX node, the declared
//! dimensions with their ranges and the pass's name, so that a `?` never
//! reaches code that would read it as a huge static extent.

use std::collections::HashMap;

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Type, TypeLike, ValueLike};

use tcc_dialects::dims::Dims;

use super::error::PassError;
use super::types::ranked_shape;
use super::util::{collect_ops, op_name};

/// On a static variant of a dynamic function (`tcc compile --specialize`,
/// `driver::specialize`): the generic function's name.
pub const SPECIALIZATION_OF: &str = "tcc.specialization_of";
/// On a variant: the symbolic dimensions it fixes, by name.
pub const SPECIALIZED_DIMS: &str = "tcc.specialized_dims";
/// On a variant: their values, in the same order.
pub const SPECIALIZED_VALUES: &str = "tcc.specialized_values";

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

/// The extent the tile phase chooses strategies for in place of a `?`:
/// the largest declared maximum (issue 33: tiles, work-groups and loop
/// sizes fit every extent in range; the kernels keep their bounds guards
/// where the extent is dynamic). `None` when nothing is declared.
pub fn strategy_extent(dims: &Dims) -> Option<i64> {
    dims.0.iter().map(|d| d.max).max()
}

/// An upper bound of `value`'s extent along `axis` at every call in the
/// declared ranges, each function argument's `?` taken as `max` (the
/// largest declared maximum): its static extent, or what the ops that
/// size it give when every symbolic dimension is at its maximum. A `?`
/// need not be the dimension itself: a reshape that folds static axes
/// into it (a matmul's `1 x (batch*tokens) x K` rows) multiplies it, which
/// this follows through `tensor.empty`/`memref.alloc` sizes,
/// `expand_shape`'s output sizes, `collapse_shape` groups, views, slices, casts,
/// destination-style results (their init's extent) and the index
/// arithmetic of those sizes (`arith` constants, `dim`s, products, sums,
/// quotients by constants). `None` where the bound is not known: callers
/// that size memory by it must not guess.
pub fn max_extent(value: melior::ir::Value, axis: usize, max: i64) -> Option<i64> {
    max_extent_with(value, axis, max, &mut Bounds::new())
}

/// [`max_extent`] sharing what earlier calls found (`memo`): for callers
/// that bound many values of one function.
pub fn max_extent_with(
    value: melior::ir::Value,
    axis: usize,
    max: i64,
    memo: &mut Bounds,
) -> Option<i64> {
    max_extent_at(value, axis, max, 0, memo)
}

/// What [`max_extent`] found for each (value, axis; `usize::MAX` for an
/// index value) it visited: broadcasting sizes are `max(dim a, dim b)`
/// chains, whose shared parts would otherwise be walked again on every path.
pub type Bounds = HashMap<(usize, usize), Option<i64>>;

/// `memo`'s entry for `key`, computed by `compute` the first time.
fn remembered(
    memo: &mut Bounds,
    key: (usize, usize),
    compute: impl FnOnce(&mut Bounds) -> Option<i64>,
) -> Option<i64> {
    if let Some(known) = memo.get(&key) {
        return *known;
    }
    let bound = compute(memo);
    memo.insert(key, bound);
    bound
}

/// The deepest chain of ops [`max_extent`] follows (a deep model's last
/// product sizes its rows through every layer before it).
const BOUND_DEPTH: usize = 2048;

fn max_extent_at(
    value: melior::ir::Value,
    axis: usize,
    max: i64,
    depth: usize,
    memo: &mut Bounds,
) -> Option<i64> {
    remembered(memo, (value.to_raw().ptr as usize, axis), |memo| {
        max_extent_uncached(value, axis, max, depth, memo)
    })
}

fn max_extent_uncached(
    value: melior::ir::Value,
    axis: usize,
    max: i64,
    depth: usize,
    memo: &mut Bounds,
) -> Option<i64> {
    let shape = ranked_shape(value.r#type())?;
    match shape.get(axis)? {
        Some(extent) => return Some(*extent),
        None if depth > BOUND_DEPTH => return None,
        None => {}
    }
    let Some(op) = super::util::defining_op(value) else {
        // A function's argument (a block argument of its entry block).
        let block = unsafe { mlir_sys::mlirBlockArgumentGetOwner(value.to_raw()) };
        let parent = unsafe { mlir_sys::mlirBlockGetParentOperation(block) };
        let parent = unsafe { OperationRef::from_option_raw(parent) }?;
        if op_name(&parent) != "func.func" {
            return None;
        }
        // The argument's own dimension's maximum where it names it (with
        // several declared, a batch's and a sequence's differ).
        let index = unsafe { mlir_sys::mlirBlockArgumentGetArgNumber(value.to_raw()) };
        let named = usize::try_from(index)
            .ok()
            .and_then(|index| argument_dim_names(&parent, index))
            .and_then(|names| {
                let dims = module_dims(parent);
                dims.get(names.get(axis)?).map(|d| d.max)
            });
        return Some(named.map_or(max, |m| m.min(max)));
    };
    // The position of `axis` among the result's dynamic axes.
    let dynamic_position = shape[..axis].iter().filter(|d| d.is_none()).count();
    let mut recurse = |v: melior::ir::Value, a: usize| max_extent_at(v, a, max, depth + 1, memo);
    let name = op_name(&op);
    match name.as_str() {
        "tensor.empty" | "memref.alloc" | "memref.alloca" => {
            index_bound(op.operand(dynamic_position).ok()?, max, depth + 1, memo)
        }
        "tensor.expand_shape" | "memref.expand_shape" => {
            index_bound(op.operand(1 + dynamic_position).ok()?, max, depth + 1, memo)
        }
        "memref.view" => index_bound(op.operand(2 + dynamic_position).ok()?, max, depth + 1, memo),
        // A slice (a split's parts): its size there, static or an operand
        // after the dynamic offsets (rank-preserving slices only).
        "tensor.extract_slice" | "memref.subview" => {
            let source = op.operand(0).ok()?;
            (ranked_shape(source.r#type())?.len() == shape.len()).then_some(())?;
            let array = |name: &str| {
                melior::ir::attribute::DenseI64ArrayAttribute::try_from(op.attribute(name).ok()?)
                    .ok()
                    .map(|a| {
                        (0..a.len())
                            .filter_map(|i| a.element(i).ok())
                            .collect::<Vec<i64>>()
                    })
            };
            let (offsets, sizes) = (array("static_offsets")?, array("static_sizes")?);
            let dynamic = |v: &i64| *v == i64::MIN;
            if !dynamic(sizes.get(axis)?) {
                return Some(sizes[axis]);
            }
            let position = 1
                + offsets.iter().filter(|v| dynamic(v)).count()
                + sizes[..axis].iter().filter(|v| dynamic(v)).count();
            index_bound(op.operand(position).ok()?, max, depth + 1, memo)
        }
        "tensor.collapse_shape" | "memref.collapse_shape" => {
            let groups = op.attribute("reassociation").ok()?;
            let groups = melior::ir::attribute::ArrayAttribute::try_from(groups).ok()?;
            let group =
                melior::ir::attribute::ArrayAttribute::try_from(groups.element(axis).ok()?).ok()?;
            let source = op.operand(0).ok()?;
            let mut product: i64 = 1;
            for i in 0..group.len() {
                let source_axis = super::util::integer_value(group.element(i).ok()?)?;
                product =
                    product.checked_mul(recurse(source, usize::try_from(source_axis).ok()?)?)?;
            }
            Some(product)
        }
        "tensor.cast"
        | "memref.cast"
        | "bufferization.to_tensor"
        | "bufferization.to_buffer"
        | "bufferization.to_memref" => {
            let source = op.operand(0).ok()?;
            (ranked_shape(source.r#type())?.len() == shape.len()).then_some(())?;
            recurse(source, axis)
        }
        // A kernel boundary: result `i` is what its body yields as `i`.
        "tcc.dispatch" => {
            let position = (0..op.result_count()).find(|&i| {
                op.result(i)
                    .is_ok_and(|r| melior::ir::Value::from(r) == value)
            })?;
            use melior::ir::{BlockLike, RegionLike};
            let block = op.region(0).ok()?.first_block()?;
            let yielded = block.terminator()?.operand(position).ok()?;
            // SAFETY: the yield lives in `op`'s region, as long as `op`.
            let yielded: melior::ir::Value =
                unsafe { melior::ir::Value::from_raw(yielded.to_raw()) };
            recurse(yielded, axis)
        }
        // Destination-style ops (linalg, tcc's kernels' ops): result `i`
        // is its init, the operand `i` places before the end.
        _ if name.starts_with("linalg.")
            || name.starts_with("tcc.")
            || name == "tensor.insert_slice" =>
        {
            let results = op.result_count();
            let position = (0..results).find(|&i| {
                op.result(i)
                    .is_ok_and(|r| melior::ir::Value::from(r) == value)
            })?;
            let init = op
                .operand(op.operand_count().checked_sub(results)? + position)
                .ok()?;
            (ranked_shape(init.r#type())?.len() == shape.len()).then_some(())?;
            recurse(init, axis)
        }
        _ => None,
    }
}

/// An upper bound of an `index` (or integer) value that sizes a tensor
/// or buffer: see [`max_extent`].
fn index_bound(value: melior::ir::Value, max: i64, depth: usize, memo: &mut Bounds) -> Option<i64> {
    if depth > BOUND_DEPTH {
        return None;
    }
    remembered(memo, (value.to_raw().ptr as usize, usize::MAX), |memo| {
        index_bound_uncached(value, max, depth, memo)
    })
}

fn index_bound_uncached(
    value: melior::ir::Value,
    max: i64,
    depth: usize,
    memo: &mut Bounds,
) -> Option<i64> {
    let op = super::util::defining_op(value)?;
    let operand = |i: usize| op.operand(i).ok();
    let mut bound = |i: usize| index_bound(operand(i)?, max, depth + 1, memo);
    let constant = |i: usize| {
        let op = super::util::defining_op(operand(i)?)?;
        (op_name(&op) == "arith.constant")
            .then(|| {
                op.attribute("value")
                    .ok()
                    .and_then(super::util::integer_value)
            })
            .flatten()
    };
    match op_name(&op).as_str() {
        "arith.constant" => op
            .attribute("value")
            .ok()
            .and_then(super::util::integer_value),
        "arith.index_cast" | "arith.index_castui" | "arith.extsi" | "arith.extui" => bound(0),
        "arith.muli" => bound(0)?.checked_mul(bound(1)?),
        "arith.addi" => bound(0)?.checked_add(bound(1)?),
        "arith.divui" | "arith.divsi" | "arith.floordivsi" => {
            let divisor = constant(1).filter(|d| *d > 0)?;
            Some(bound(0)? / divisor)
        }
        "arith.ceildivui" | "arith.ceildivsi" => {
            let divisor = constant(1).filter(|d| *d > 0)?;
            Some((bound(0)? + divisor - 1) / divisor)
        }
        "arith.minui" | "arith.minsi" => match (bound(0), bound(1)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        },
        "arith.maxui" | "arith.maxsi" => Some(bound(0)?.max(bound(1)?)),
        "tensor.dim" | "memref.dim" => {
            let axis = usize::try_from(constant(1)?).ok()?;
            max_extent_at(operand(0)?, axis, max, depth + 1, memo)
        }
        _ => None,
    }
}

/// The smallest declared minimum: the extent of every `?` in the smallest
/// shape in range (exact with one declared dimension). `None` when
/// nothing is declared.
pub fn smallest_extent(dims: &Dims) -> Option<i64> {
    dims.0.iter().map(|d| d.min).min()
}

/// `ty`'s shape with every `?` taken as `extent` (see
/// [`strategy_extent`]); `None` for a type that is not a ranked shaped
/// type, or that has a `?` and no `extent`. Never multiplies a `?`'s raw
/// size (`i64::MIN`).
pub fn shape_at(ty: Type, extent: Option<i64>) -> Option<Vec<i64>> {
    ranked_shape(ty)?
        .into_iter()
        .map(|d| d.or(extent))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{first_op, parse, parse_type};

    #[test]
    fn a_leading_dynamic_dimension_is_found_after_unit_dimensions() {
        let context = tcc_dialects::new_context();
        let leading = |text: &str| leading_dynamic(parse_type(&context, text));
        assert_eq!(leading("tensor<4x32xf32>"), Ok(None));
        assert_eq!(leading("f32"), Ok(None));
        assert_eq!(leading("tensor<?x32xf32>"), Ok(Some(0)));
        assert_eq!(leading("tensor<1x?x64xf32>"), Ok(Some(1)));
        assert_eq!(leading("memref<?x3x16x16xf32>"), Ok(Some(0)));
        assert_eq!(leading("tensor<4x?xf32>"), Err(()));
        assert_eq!(leading("tensor<?x?xf32>"), Err(()));
        assert_eq!(leading("tensor<*xf32>"), Err(()));
        assert!(is_dynamic(parse_type(&context, "tensor<*xf32>")));
        assert!(!is_dynamic(parse_type(&context, "tensor<2x3xf32>")));
    }

    #[test]
    fn strategies_take_a_dynamic_dimension_at_the_largest_declared_maximum() {
        let context = tcc_dialects::new_context();
        let dims = Dims(vec![
            tcc_dialects::dims::DimRange {
                name: "batch".into(),
                min: 1,
                max: 64,
            },
            tcc_dialects::dims::DimRange {
                name: "seq".into(),
                min: 2,
                max: 512,
            },
        ]);
        assert_eq!(strategy_extent(&dims), Some(512));
        assert_eq!(smallest_extent(&dims), Some(1));
        assert_eq!(smallest_extent(&Dims::default()), None);
        assert_eq!(strategy_extent(&Dims::default()), None);
        let ty = parse_type(&context, "memref<1x?x64xf32>");
        assert_eq!(shape_at(ty, Some(64)), Some(vec![1, 64, 64]));
        assert_eq!(shape_at(ty, None), None);
        let fixed = parse_type(&context, "tensor<2x3xf32>");
        assert_eq!(shape_at(fixed, None), Some(vec![2, 3]));
        assert_eq!(shape_at(parse_type(&context, "f32"), Some(4)), None);
    }

    #[test]
    fn the_refusal_names_the_computing_op_its_node_the_dimension_and_the_pass() {
        let context = tcc_dialects::new_context();
        let module = parse(
            &context,
            r#"
            module attributes {tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [64]>} {
              func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
                %c0 = arith.constant 0 : index
                %n = tensor.dim %x, %c0 : tensor<?x4xf32>
                %e = tensor.empty(%n) : tensor<?x4xf32>
                %y = linalg.copy ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32> loc("copy_node")
                return %y : tensor<?x4xf32>
              }
            }
            "#,
        );
        let root = unsafe { OperationRef::from_raw(module.as_operation().to_raw()) };
        let error = refuse_dynamic(root, "tcc-example").unwrap_err();
        assert_eq!(
            error.message,
            "'linalg.copy' (node 'copy_node') computes on the dynamically shaped type 'tensor<?x4xf32>' (dynamic dimension 'batch' (1..64)): dynamic dimension not supported yet by tcc-example; compile one shape with --input-shape"
        );
        let copy = first_op(&module, "linalg.copy");
        assert_eq!(describe_dims(&module_dims(copy)), "'batch' (1..64)");

        let static_module = parse(
            &context,
            "func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> { return %x : tensor<2x4xf32> }",
        );
        let root = unsafe { OperationRef::from_raw(static_module.as_operation().to_raw()) };
        assert!(refuse_dynamic(root, "tcc-example").is_ok());
    }
}

/// The `tcc.dim_names` of argument `index` of the function `op`, if it has
/// them (`None` also when they are not an array of strings).
pub fn argument_dim_names<'c: 'a, 'a>(
    op: &impl OperationLike<'c, 'a>,
    index: usize,
) -> Option<Vec<String>> {
    use melior::ir::attribute::AttributeLike;
    let attrs = op.attribute("arg_attrs").ok()?;
    let raw = attrs.to_raw();
    unsafe {
        if !mlir_sys::mlirAttributeIsAArray(raw)
            || index as isize >= mlir_sys::mlirArrayAttrGetNumElements(raw)
        {
            return None;
        }
        let dictionary = mlir_sys::mlirArrayAttrGetElement(raw, index as isize);
        if !mlir_sys::mlirAttributeIsADictionary(dictionary) {
            return None;
        }
        let name = mlir_sys::MlirStringRef {
            data: tcc_dialects::dims::DIM_NAMES.as_ptr() as *const _,
            length: tcc_dialects::dims::DIM_NAMES.len(),
        };
        let names = mlir_sys::mlirDictionaryAttrGetElementByName(dictionary, name);
        if names.ptr.is_null() {
            return None;
        }
        tcc_dialects::dims::string_array(melior::ir::Attribute::from_raw(names))
    }
}
