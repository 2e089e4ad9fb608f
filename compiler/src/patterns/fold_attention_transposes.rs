//! Attention operands read through their transposes, used by
//! `tcc-fold-attention-transposes`.
//!
//! Exporters write multi-head attention as projections into
//! `[batch, tokens, heads, head_dim]`, a transpose of each of Q, K and V
//! into `[batch, heads, tokens, head_dim]`, the attention, and a transpose
//! of its output back. After bufferization each of those transposes is a
//! copy kernel of its own (four per layer: BERT-base at batch 32 spent
//! 0.67 ms of 7.9 in them on an H200). The flash-attention kernel reads
//! its operands through strides, so a transposed copy is not needed: the
//! operand becomes a `memref.transpose` view of the transpose's source,
//! and the output a view of the transpose's destination, and the copies
//! and their buffers go away.

use melior::Context;
use melior::ir::attribute::{Attribute, DenseI64ArrayAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::{BlockLike, Identifier, Type, Value, ValueLike};

use crate::ir::dispatch;
use crate::ir::error::PassError;
use crate::ir::memref::{MemRefLayout, VIEW_OPS};
use crate::ir::util::{defining_op, erase_op, op_name, same_op, users};

/// The op of the function body that runs `op`: its kernel's
/// `tcc.dispatch`, or `op` itself where it is in none.
pub(super) fn unit<'c>(op: OperationRef<'c, 'c>) -> OperationRef<'c, 'c> {
    dispatch::enclosing(op).unwrap_or(op)
}

/// Folds the transposes feeding `attention`'s query, key and value and the
/// one reading its output, where that is safe. Returns how many it folded.
pub fn fold_attention_transposes<'c>(
    context: &'c Context,
    attention: OperationRef<'c, 'c>,
) -> Result<usize, PassError<'c>> {
    if op_name(&attention) != "tcc.flash_attention" || attention.result_count() != 0 {
        return Ok(0);
    }
    let mut folded = 0;
    for index in 0..3 {
        if fold_input(context, attention, index)? {
            folded += 1;
        }
    }
    if fold_output(context, attention)? {
        folded += 1;
    }
    Ok(folded)
}

/// The buffer a value views (through view ops).
pub(super) fn root_of<'c>(value: Value<'c, 'c>) -> Value<'c, 'c> {
    let mut current = value;
    while let Some(op) = defining_op(current)
        && VIEW_OPS.contains(&op_name(&op).as_str())
        && let Ok(source) = op.operand(0)
    {
        current = source;
    }
    current
}

/// `linalg.transpose`'s permutation: output dimension `k` is input
/// dimension `p[k]`.
fn permutation(op: OperationRef) -> Option<Vec<usize>> {
    let array = DenseI64ArrayAttribute::try_from(op.attribute("permutation").ok()?).ok()?;
    (0..array.len())
        .map(|i| array.element(i).ok().and_then(|v| usize::try_from(v).ok()))
        .collect()
}

/// Whether the buffer `value` views can lose the contents `first` and
/// `last` (the transpose and the attention, in either order) give it: it
/// is an allocation (not an argument: the caller reads those), and every
/// other op touching it comes before both or after both, the first one
/// after being an op that overwrites all of it (CSE lets one buffer serve
/// the same transpose of every layer in turn).
pub(super) fn droppable<'c>(
    value: Value<'c, 'c>,
    first: OperationRef<'c, 'c>,
    last: OperationRef<'c, 'c>,
) -> bool {
    let root = root_of(value);
    let Some(alloc) = defining_op(root) else {
        return false;
    };
    if op_name(&alloc) != "memref.alloc" || alloc.operand_count() != 0 {
        return false;
    }
    let Some(block) = first.block() else {
        return false;
    };
    let Some(elements) = MemRefLayout::of(root.r#type())
        .filter(MemRefLayout::is_static)
        .map(|l| l.shape.iter().product::<i64>())
    else {
        return false;
    };
    #[derive(PartialEq)]
    enum Where {
        Before,
        Inside,
        After,
    }
    let mut place = Where::Before;
    let mut next = block.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        let op = unsafe { OperationRef::from_raw(op.to_raw()) };
        if same_op(&op, &first) || same_op(&op, &last) {
            place = if place == Where::Before {
                Where::Inside
            } else {
                Where::After
            };
            continue;
        }
        if op_name(&op) == "memref.dealloc" || !touches(op, root, false) {
            continue;
        }
        match place {
            Where::Before => {}
            Where::Inside => return false,
            Where::After => {
                // A kernel's first op touching the buffer.
                let first = if dispatch::is_dispatch(&op) {
                    dispatch::members(op)
                        .into_iter()
                        .find(|member| touches(*member, root, false))
                } else {
                    Some(op)
                };
                return first.is_some_and(|first| overwrites(first, root, elements));
            }
        }
    }
    place == Where::After
}

/// Whether `op` writes every element of `root` without reading it: a
/// copy, fill or transpose, or an elementwise `linalg.generic` that never
/// reads its output (a widening cast of the next layer), whose
/// destination (its last operand, the only one viewing `root`) has as
/// many elements as `root`.
fn overwrites(op: OperationRef, root: Value, elements: i64) -> bool {
    let name = op_name(&op);
    let count = op.operand_count();
    let copying = matches!(
        name.as_str(),
        "linalg.transpose" | "linalg.fill" | "linalg.copy" | "memref.copy"
    ) && op.region_count() <= 1;
    if !(copying || writes_without_reading(op)) || count == 0 {
        return false;
    }
    let Ok(destination) = op.operand(count - 1) else {
        return false;
    };
    root_of(destination) == root
        && (0..count - 1).all(|i| op.operand(i).is_ok_and(|v| root_of(v) != root))
        && MemRefLayout::of(destination.r#type())
            .filter(MemRefLayout::is_static)
            .is_some_and(|l| l.shape.iter().product::<i64>() == elements)
}

/// Whether `op` is an elementwise `linalg.generic` (parallel iterators,
/// identity output map) whose body never reads its output's block
/// argument: it writes every element of its output from its inputs alone.
fn writes_without_reading(op: OperationRef) -> bool {
    use crate::ir::affine::{IteratorType, indexing_maps, iterator_types};
    use melior::ir::RegionLike;
    if op_name(&op) != "linalg.generic" || op.operand_count() == 0 {
        return false;
    }
    let (Some(maps), Some(iterators)) = (indexing_maps(op), iterator_types(op)) else {
        return false;
    };
    let Some(block) = op.region(0).ok().and_then(|r| r.first_block()) else {
        return false;
    };
    let outputs = op.operand_count() - 1;
    iterators.iter().all(|t| *t == IteratorType::Parallel)
        && maps.last().is_some_and(|m| m.is_identity())
        && block
            .argument(outputs)
            .is_ok_and(|arg| crate::ir::util::use_count(arg.into()) == 0)
}

/// The op `unit` (an op of the function body) runs as a kernel by itself:
/// its dispatch's only member, or `unit` where it is in no dispatch.
pub(super) fn lone_op<'c>(unit: OperationRef<'c, 'c>) -> Option<OperationRef<'c, 'c>> {
    if !dispatch::is_dispatch(&unit) {
        return Some(unit);
    }
    let members = dispatch::members(unit);
    (members.len() == 1).then(|| members[0])
}

/// The plain `linalg.transpose` of rank 4 that `unit` (an op of the
/// function body) runs as a kernel by itself, if it does.
fn lone_transpose<'c>(unit: OperationRef<'c, 'c>) -> Option<OperationRef<'c, 'c>> {
    let transpose = lone_op(unit)?;
    (op_name(&transpose) == "linalg.transpose"
        && transpose.operand_count() == 2
        && permutation(transpose).is_some_and(|p| p.len() == 4))
    .then_some(transpose)
}

/// The ops strictly between `first` and `last` (same block, `first`
/// before `last`); `None` if they are not so placed.
pub(super) fn between<'c>(
    first: OperationRef<'c, 'c>,
    last: OperationRef<'c, 'c>,
) -> Option<Vec<OperationRef<'c, 'c>>> {
    let block = first.block()?;
    if last.block().is_none_or(|b| b != block) {
        return None;
    }
    let mut ops = Vec::new();
    let mut next = first.next_in_block();
    while let Some(op) = next {
        if same_op(&op, &last) {
            return Some(ops);
        }
        ops.push(unsafe { OperationRef::from_raw(op.to_raw()) });
        next = op.next_in_block();
    }
    None
}

/// Whether an op (or one nested in it) uses a view of `root`, other than
/// view ops and transposes that only read it (`reads_allowed`).
pub(super) fn touches(op: OperationRef, root: Value, reads_allowed: bool) -> bool {
    let mut found = false;
    op.walk(melior::ir::operation::WalkOrder::PreOrder, |nested| {
        let nested = unsafe { OperationRef::from_raw(nested.to_raw()) };
        let name = op_name(&nested);
        if VIEW_OPS.contains(&name.as_str()) {
            return melior::ir::operation::WalkResult::Advance;
        }
        for index in 0..nested.operand_count() {
            let Ok(operand) = nested.operand(index) else {
                continue;
            };
            if root_of(operand) == root {
                let read = reads_allowed && name == "linalg.transpose" && index == 0;
                if !read {
                    found = true;
                }
            }
        }
        if found {
            melior::ir::operation::WalkResult::Interrupt
        } else {
            melior::ir::operation::WalkResult::Advance
        }
    });
    found
}

/// The last op of `anchor`'s block before it that touches `root`.
pub(super) fn last_access_before<'c>(
    anchor: OperationRef<'c, 'c>,
    root: Value<'c, 'c>,
) -> Option<OperationRef<'c, 'c>> {
    let block = anchor.block()?;
    let mut found = None;
    let mut next = block.first_operation();
    while let Some(op) = next {
        if same_op(&op, &anchor) {
            return found;
        }
        next = op.next_in_block();
        let op = unsafe { OperationRef::from_raw(op.to_raw()) };
        if touches(op, root, false) {
            found = Some(op);
        }
    }
    None
}

/// The first op of `anchor`'s block after it that touches `root`.
fn first_access_after<'c>(
    anchor: OperationRef<'c, 'c>,
    root: Value<'c, 'c>,
) -> Option<OperationRef<'c, 'c>> {
    let mut next = anchor.next_in_block();
    while let Some(op) = next {
        next = op.next_in_block();
        let op = unsafe { OperationRef::from_raw(op.to_raw()) };
        if touches(op, root, false) {
            return Some(op);
        }
    }
    None
}

/// `memref.transpose` of `source` by `perm` (result dimension `k` is
/// source dimension `perm[k]`), inserted before `anchor`; `None` (nothing
/// built) unless its shape is that of `replaced`, the buffer it stands for.
fn transpose_view<'c>(
    context: &'c Context,
    anchor: OperationRef<'c, 'c>,
    source: Value<'c, 'c>,
    perm: &[usize],
    replaced: Type<'c>,
) -> Option<Value<'c, 'c>> {
    let layout = MemRefLayout::of(source.r#type())?;
    let (strides, offset) = layout.static_strides()?;
    if !layout.is_static() || layout.rank() != perm.len() {
        return None;
    }
    let permuted: Vec<i64> = perm.iter().map(|&p| layout.shape[p]).collect();
    if MemRefLayout::of(replaced).map(|l| l.shape) != Some(permuted) {
        return None;
    }
    let shape: Vec<String> = perm.iter().map(|&p| layout.shape[p].to_string()).collect();
    let strides: Vec<String> = perm.iter().map(|&p| strides[p].to_string()).collect();
    let text = format!(
        "memref<{}x{}, strided<[{}], offset: {}>>",
        shape.join("x"),
        layout.element,
        strides.join(", "),
        offset
    );
    let ty = Type::parse(context, &text)?;
    let dims: Vec<String> = (0..perm.len()).map(|d| format!("d{d}")).collect();
    let results: Vec<String> = perm.iter().map(|&p| format!("d{p}")).collect();
    let map = Attribute::parse(
        context,
        &format!(
            "affine_map<({}) -> ({})>",
            dims.join(", "),
            results.join(", ")
        ),
    )?;
    let view = OperationBuilder::new("memref.transpose", anchor.location())
        .add_operands(&[source])
        .add_results(&[ty])
        .add_attributes(&[(Identifier::new(context, "permutation"), map)])
        .build()
        .ok()?;
    let block = anchor.block()?;
    let view = block.insert_operation_before(anchor, view);
    view.result(0).ok().map(Into::into)
}

/// Erases the view chain and the allocation behind `value` as far as
/// nothing but deallocations uses them any more.
pub(super) fn erase_allocation(value: Value) {
    let Some(op) = defining_op(value) else {
        return;
    };
    let name = op_name(&op);
    let uses = users(value);
    if VIEW_OPS.contains(&name.as_str()) {
        if uses.is_empty() {
            let source = op.operand(0);
            erase_op(op);
            if let Ok(source) = source {
                erase_allocation(source);
            }
        }
    } else if name == "memref.alloc" && uses.iter().all(|u| op_name(u) == "memref.dealloc") {
        for user in uses {
            erase_op(user);
        }
        erase_op(op);
    }
}

/// How many of `op`'s operands are `value`.
pub(super) fn operand_uses(op: OperationRef, value: Value) -> usize {
    (0..op.operand_count())
        .filter(|&i| op.operand(i).ok() == Some(value))
        .count()
}

pub(super) fn set_operand(op: OperationRef, index: usize, value: Value) {
    unsafe { mlir_sys::mlirOperationSetOperand(op.to_raw(), index as isize, value.to_raw()) };
}

/// Query, key or value `index`: `transpose(%source) -> %copy` then
/// `attention(%copy)` becomes `attention(memref.transpose(%source))`.
fn fold_input<'c>(
    context: &'c Context,
    attention: OperationRef<'c, 'c>,
    index: usize,
) -> Result<bool, PassError<'c>> {
    let Ok(copy) = attention.operand(index) else {
        return Ok(false);
    };
    let attention_unit = unit(attention);
    // The last op before the attention touching the buffer: the copy.
    let Some(transpose_unit) = last_access_before(attention_unit, root_of(copy)) else {
        return Ok(false);
    };
    let Some(transpose) = lone_transpose(transpose_unit) else {
        return Ok(false);
    };
    if transpose.operand(1).ok() != Some(copy)
        || !droppable(copy, transpose_unit, attention_unit)
        || operand_uses(attention, copy) != 1
    {
        return Ok(false);
    }
    let (Ok(source), Some(perm)) = (transpose.operand(0), permutation(transpose)) else {
        return Ok(false);
    };
    // Nothing between the copy and the attention may write the source.
    let root = root_of(source);
    let Some(ops) = between(transpose_unit, attention_unit) else {
        return Ok(false);
    };
    if ops.iter().any(|op| touches(*op, root, true)) {
        return Ok(false);
    }
    let Some(view) = transpose_view(context, attention_unit, source, &perm, copy.r#type()) else {
        return Ok(false);
    };
    set_operand(attention, index, view);
    erase_op(transpose_unit);
    erase_allocation(copy);
    Ok(true)
}

/// The output: `attention -> %result` then `transpose(%result) ->
/// %destination` becomes `attention -> memref.transpose(%destination)` by
/// the inverse permutation.
fn fold_output<'c>(
    context: &'c Context,
    attention: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let last = attention.operand_count().saturating_sub(1);
    let Ok(result) = attention.operand(last) else {
        return Ok(false);
    };
    let attention_unit = unit(attention);
    // The first op after the attention touching its output: the copy.
    let Some(transpose_unit) = first_access_after(attention_unit, root_of(result)) else {
        return Ok(false);
    };
    let Some(transpose) = lone_transpose(transpose_unit) else {
        return Ok(false);
    };
    if transpose.operand(0).ok() != Some(result)
        || !droppable(result, attention_unit, transpose_unit)
        || operand_uses(attention, result) != 1
    {
        return Ok(false);
    }
    let (Ok(destination), Some(perm)) = (transpose.operand(1), permutation(transpose)) else {
        return Ok(false);
    };
    // The destination must exist before the attention: a function
    // argument, or a buffer (through views) defined earlier in the block;
    // an allocation without operands after it moves up.
    let Some(block) = attention_unit.block() else {
        return Ok(false);
    };
    let root = root_of(destination);
    let mut chain = Vec::new();
    let mut current = destination;
    while current != root {
        let Some(op) = defining_op(current) else {
            break;
        };
        chain.push(op);
        let Ok(source) = op.operand(0) else { break };
        current = source;
    }
    let before = |op: OperationRef<'c, 'c>| -> bool {
        let mut next = op.next_in_block();
        while let Some(candidate) = next {
            if same_op(&candidate, &attention_unit) {
                return true;
            }
            next = candidate.next_in_block();
        }
        false
    };
    let in_block = |op: &OperationRef<'c, 'c>| op.block().is_some_and(|b| b == block);
    if chain.iter().any(|op| !in_block(op) || !before(*op)) {
        return Ok(false);
    }
    let root_op = defining_op(root);
    let move_root = match root_op {
        None => false,
        Some(op) if !in_block(&op) => false,
        Some(op) if before(op) => false,
        Some(op)
            if op_name(&op) == "memref.alloc" && op.operand_count() == 0 && chain.is_empty() =>
        {
            true
        }
        Some(_) => return Ok(false),
    };
    // Nothing between the attention and the copy may use the destination.
    let Some(ops) = between(attention_unit, transpose_unit) else {
        return Ok(false);
    };
    if ops.iter().any(|op| touches(*op, root, false)) {
        return Ok(false);
    }
    if move_root && let Some(alloc) = root_op {
        if ops.iter().any(|op| same_op(op, &alloc)) {
            // Between the two: moved right before the attention.
            let mut detached =
                unsafe { melior::ir::operation::OperationRefMut::from_raw(alloc.to_raw()) };
            melior::ir::operation::OperationMutLike::remove_from_parent(&mut detached);
            let owned = unsafe { melior::ir::operation::Operation::from_raw(alloc.to_raw()) };
            block.insert_operation_before(attention_unit, owned);
        } else {
            return Ok(false);
        }
    }
    let mut inverse = vec![0usize; perm.len()];
    for (k, &p) in perm.iter().enumerate() {
        inverse[p] = k;
    }
    let Some(view) = transpose_view(
        context,
        attention_unit,
        destination,
        &inverse,
        result.r#type(),
    ) else {
        return Ok(false);
    };
    set_operand(attention, last, view);
    erase_op(transpose_unit);
    erase_allocation(result);
    Ok(true)
}
