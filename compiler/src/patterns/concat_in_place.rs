//! Concatenations without copies, used by `tcc-concat-in-place`.
//!
//! TOSA's concat lowers to a chain of `tensor.insert_slice`s into a
//! `tensor.empty`; bufferized, every part is copied into the result by its
//! own kernel. DenseNet makes this quadratic: layer `k` of a dense block
//! concatenates *all* earlier outputs again, so a block of `n` layers copies
//! `n²/2` feature maps. Two rewrites remove the copies:
//!
//! - **One buffer per concat family.** Concats whose parts are a prefix of
//!   a larger concat's parts (same values at the same offsets) become views
//!   (`tensor.extract_slice`) of one chain of inserts into the largest one's
//!   buffer, each part inserted once, right after it is computed.
//! - **Producers write in place.** A part computed by a destination-style op
//!   whose output starts from a `tensor.empty` gets, instead of that empty,
//!   the slice of the concat buffer it belongs in, so one-shot
//!   bufferization writes it there and the insert copies nothing.
//!
//! Bufferization still decides: where a rewrite would make a write visible
//! to a later read, it allocates and copies, so the result is always
//! correct and at worst as slow as before.

use std::collections::HashMap;

use melior::Context;
use melior::ir::attribute::{DenseI32ArrayAttribute, DenseI64ArrayAttribute};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::{BlockLike, Identifier, Type, TypeLike, Value, ValueLike};

use crate::ir::error::PassError;
use crate::ir::types::StaticTensor;
use crate::ir::util::{body_ops, defining_op, op_name, use_count, users};

/// One `tensor.insert_slice` of a concat: what goes where.
#[derive(Clone)]
struct Part<'c> {
    op: OperationRef<'c, 'c>,
    source: Value<'c, 'c>,
    offsets: Vec<i64>,
    sizes: Vec<i64>,
}

/// A concat: a `tensor.empty` filled completely by a chain of inserts.
struct Concat<'c> {
    empty: OperationRef<'c, 'c>,
    parts: Vec<Part<'c>>,
    result: Value<'c, 'c>,
    shape: Vec<i64>,
}

fn part_of<'c>(op: OperationRef<'c, 'c>) -> Option<Part<'c>> {
    if op_name(&op) != "tensor.insert_slice" || op.operand_count() != 2 {
        return None; // dynamic offsets or sizes
    }
    let offsets = crate::ir::util::dense_i64_array(op, "static_offsets")?;
    let sizes = crate::ir::util::dense_i64_array(op, "static_sizes")?;
    let strides = crate::ir::util::dense_i64_array(op, "static_strides")?;
    if strides.iter().any(|&s| s != 1) || offsets.iter().chain(&sizes).any(|&v| v < 0) {
        return None;
    }
    Some(Part {
        op,
        source: op.operand(0).ok()?,
        offsets,
        sizes,
    })
}

/// The concat whose first insert is `first`: an insert into a
/// `tensor.empty` (which CSE may share between several concats), then a
/// chain of inserts each using the previous one alone, covering the whole
/// tensor.
fn concat_at<'c>(first: OperationRef<'c, 'c>) -> Option<Concat<'c>> {
    let head = part_of(first)?;
    let dest: Value = first.operand(1).ok()?;
    let empty = defining_op(dest)?;
    if op_name(&empty) != "tensor.empty" || empty.operand_count() != 0 {
        return None;
    }
    let shape = StaticTensor::of(dest.r#type())?.shape;
    let mut parts = vec![head];
    let mut value: Value = first.result(0).ok()?.into();
    loop {
        let consumers = users(value);
        let [next] = consumers.as_slice() else { break };
        let Some(part) = part_of(*next) else { break };
        if next.operand(1).ok()? != value {
            break;
        }
        value = next.result(0).ok()?.into();
        parts.push(part);
    }
    if parts.len() < 2 {
        return None;
    }
    let covered: i64 = parts.iter().map(|p| p.sizes.iter().product::<i64>()).sum();
    (covered == shape.iter().product::<i64>()).then_some(Concat {
        empty,
        parts,
        result: value,
        shape,
    })
}

fn same_part(a: &Part, b: &Part) -> bool {
    a.source == b.source && a.offsets == b.offsets && a.sizes == b.sizes
}

/// Whether `small`'s parts are the first parts of `large` (and its shape
/// fits inside `large`'s).
fn is_prefix(small: &Concat, large: &Concat) -> bool {
    small.parts.len() <= large.parts.len()
        && small.shape.len() == large.shape.len()
        && small.shape.iter().zip(&large.shape).all(|(s, l)| s <= l)
        && small
            .parts
            .iter()
            .zip(&large.parts)
            .all(|(a, b)| same_part(a, b))
}

fn build_extract<'c>(
    context: &'c Context,
    source: Value<'c, 'c>,
    offsets: &[i64],
    sizes: &[i64],
    element: Type<'c>,
    location: melior::ir::Location<'c>,
) -> Result<melior::ir::operation::Operation<'c>, PassError<'c>> {
    let result = StaticTensor {
        shape: sizes.to_vec(),
        element,
    }
    .to_type();
    let strides = vec![1; sizes.len()];
    OperationBuilder::new("tensor.extract_slice", location)
        .add_operands(&[source])
        .add_results(&[result])
        .add_attributes(&[
            (
                Identifier::new(context, "static_offsets"),
                DenseI64ArrayAttribute::new(context, offsets).into(),
            ),
            (
                Identifier::new(context, "static_sizes"),
                DenseI64ArrayAttribute::new(context, sizes).into(),
            ),
            (
                Identifier::new(context, "static_strides"),
                DenseI64ArrayAttribute::new(context, &strides).into(),
            ),
            (
                Identifier::new(context, "operandSegmentSizes"),
                DenseI32ArrayAttribute::new(context, &[1, 0, 0, 0]).into(),
            ),
        ])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build tensor.extract_slice: {e}")))
}

/// The `tensor.empty` a destination-style op's output starts from, through
/// initialising ops (a fill, a bias broadcast) that each have one use, and
/// the op that uses it.
fn init_root<'c>(op: OperationRef<'c, 'c>) -> Option<(OperationRef<'c, 'c>, OperationRef<'c, 'c>)> {
    let mut current = op;
    for _ in 0..4 {
        let inits = crate::ir::operand::init_operands(current);
        let [init] = inits.as_slice() else {
            return None;
        };
        let producer = defining_op(*init)?;
        // A `tensor.empty` holds no data (CSE may share one between
        // several ops: only this use is replaced); an initialising op must
        // feed this op alone.
        if op_name(&producer) == "tensor.empty" {
            return Some((producer, current));
        }
        if use_count(*init) != 1 {
            return None;
        }
        if crate::ir::util::dialect_of(&op_name(&producer)) != "linalg" {
            return None;
        }
        current = producer;
    }
    None
}

/// Rewrites the concats of one function; returns how many parts now have
/// their producer writing in place.
pub fn concat_in_place<'c>(
    context: &'c Context,
    function: OperationRef<'c, 'c>,
) -> Result<usize, PassError<'c>> {
    let ops = body_ops(function);
    let position: HashMap<usize, usize> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| (op.to_raw().ptr as usize, i))
        .collect();
    let pos = |op: OperationRef| position.get(&(op.to_raw().ptr as usize)).copied();
    let mut concats: Vec<Concat> = ops.iter().filter_map(|op| concat_at(*op)).collect();
    if concats.is_empty() {
        return Ok(0);
    }
    // Largest first; each concat joins the first larger one it prefixes.
    concats.sort_by_key(|c| std::cmp::Reverse(c.parts.len()));
    let mut family_of: Vec<usize> = (0..concats.len()).collect();
    for i in 0..concats.len() {
        if let Some(j) = (0..i).find(|&j| family_of[j] == j && is_prefix(&concats[i], &concats[j]))
        {
            family_of[i] = j;
        }
    }
    let Some(first) = ops.first().copied() else {
        return Ok(0);
    };
    let block = first
        .block()
        .ok_or_else(|| PassError::at(first.location(), "op outside a block"))?;
    // A concat that is a part of another concat (nested, as edge and
    // reflect pads build them) is left alone, with everything it touches:
    // rewriting one would leave the other's parts dangling.
    let results: Vec<Value> = concats.iter().map(|c| c.result).collect();
    let nested: Vec<bool> = concats
        .iter()
        .map(|c| c.parts.iter().any(|p| results.contains(&p.source)))
        .collect();
    let mut skipped_families: Vec<usize> = Vec::new();
    for (i, c) in concats.iter().enumerate() {
        let feeds_another = concats
            .iter()
            .any(|other| other.parts.iter().any(|p| p.source == c.result));
        if nested[i] || feeds_another {
            skipped_families.push(family_of[i]);
        }
    }
    let mut in_place = 0;
    for root_index in 0..concats.len() {
        if family_of[root_index] != root_index || skipped_families.contains(&root_index) {
            continue;
        }
        let root = &concats[root_index];
        let members: Vec<usize> = (0..concats.len())
            .filter(|&i| family_of[i] == root_index)
            .collect();
        let family_inserts: Vec<usize> = members
            .iter()
            .flat_map(|&m| concats[m].parts.iter().map(|p| p.op.to_raw().ptr as usize))
            .collect();
        let location = root.empty.location();
        let element = StaticTensor::of(root.result.r#type())
            .expect("static concat")
            .element;
        // The family's buffer, a fresh empty at the start of the function.
        let head = block
            .first_operation()
            .ok_or_else(|| PassError::at(location, "empty function body"))?;
        let empty = block.insert_operation_before(head, unsafe {
            melior::ir::operation::Operation::from_raw(mlir_sys::mlirOperationClone(
                root.empty.to_raw(),
            ))
        });
        // The chain: part j inserted right after it (and part j-1) exists.
        let mut chain: Vec<Value> = Vec::with_capacity(root.parts.len());
        let mut previous: Value = empty
            .result(0)
            .map_err(|e| PassError::at(location, e.to_string()))?
            .into();
        let mut anchor: OperationRef = empty;
        let mut anchor_pos: isize = -1;
        for part in &root.parts {
            let source_pos = defining_op(part.source)
                .and_then(pos)
                .map_or(-1, |p| p as isize);
            // Where the previous link of the chain sits (it dominates every
            // op after that position).
            let previous_pos = anchor_pos;
            let after = if source_pos > anchor_pos {
                anchor_pos = source_pos;
                defining_op(part.source).expect("positioned")
            } else {
                anchor
            };
            // Let the producer write into its slot of the buffer.
            // (Its only users are the family's old inserts, erased below.)
            if let Some(producer) = defining_op(part.source)
                && users(part.source)
                    .iter()
                    .all(|u| family_inserts.contains(&(u.to_raw().ptr as usize)))
                && crate::ir::util::dialect_of(&op_name(&producer)) == "linalg"
                && let Some((init_empty, first_user)) = init_root(producer)
                && pos(first_user).is_some_and(|p| p as isize > previous_pos)
            {
                let slot = build_extract(
                    context,
                    previous,
                    &part.offsets,
                    &part.sizes,
                    element,
                    location,
                )?;
                let slot = block.insert_operation_before(first_user, slot);
                let slot_value: Value = slot
                    .result(0)
                    .map_err(|e| PassError::at(location, e.to_string()))?
                    .into();
                let empty_value: Value = init_empty
                    .result(0)
                    .map_err(|e| PassError::at(location, e.to_string()))?
                    .into();
                let mut user = unsafe { OperationRefMut::from_raw(first_user.to_raw()) };
                user.replace_uses_of_with(empty_value, slot_value);
                in_place += 1;
            }
            let insert = unsafe {
                melior::ir::operation::Operation::from_raw(mlir_sys::mlirOperationClone(
                    part.op.to_raw(),
                ))
            };
            let insert = block.insert_operation_after(after, insert);
            let mut insert_mut = unsafe { OperationRefMut::from_raw(insert.to_raw()) };
            insert_mut.set_operand(1, previous);
            let value: Value = insert
                .result(0)
                .map_err(|e| PassError::at(location, e.to_string()))?
                .into();
            unsafe { mlir_sys::mlirValueSetType(value.to_raw(), root.result.r#type().to_raw()) };
            previous = value;
            anchor = insert;
            chain.push(value);
        }
        // The buffer's live range starts at its first use, not at the top
        // (the memory plan allocates it there).
        sink_to_first_user(empty);
        // Every member is a view of the chain after its last part.
        for &m in &members {
            let member = &concats[m];
            let last = chain[member.parts.len() - 1];
            let replacement = if member.shape == root.shape {
                last
            } else {
                let anchor_op = defining_op(last).expect("an insert");
                let zeros = vec![0; member.shape.len()];
                let view = build_extract(context, last, &zeros, &member.shape, element, location)?;
                block
                    .insert_operation_after(anchor_op, view)
                    .result(0)
                    .map_err(|e| PassError::at(location, e.to_string()))?
                    .into()
            };
            unsafe {
                mlir_sys::mlirValueReplaceAllUsesOfWith(
                    member.result.to_raw(),
                    replacement.to_raw(),
                )
            };
        }
        // The old chains are dead now: erase them, last insert first.
        for &m in &members {
            let member = &concats[m];
            for part in member.parts.iter().rev() {
                crate::ir::util::erase_op(part.op);
            }
        }
        // Empties CSE shared with concats of other families stay.
        let mut erased: Vec<usize> = Vec::new();
        for &m in &members {
            let empty = concats[m].empty;
            let key = empty.to_raw().ptr as usize;
            if !erased.contains(&key) && empty.result(0).is_ok_and(|r| use_count(r.into()) == 0) {
                erased.push(key);
                crate::ir::util::erase_op(empty);
            }
        }
    }
    Ok(in_place)
}

/// Moves `op` right before the first op of its block that uses its result.
fn sink_to_first_user(op: OperationRef) {
    let Ok(result) = op.result(0) else { return };
    let result: Value = result.into();
    let mut next = op.next_in_block();
    while let Some(current) = next {
        let uses =
            (0..current.operand_count()).any(|i| current.operand(i).is_ok_and(|v| v == result));
        if uses {
            if op
                .next_in_block()
                .is_some_and(|n| n.to_raw().ptr == current.to_raw().ptr)
            {
                return;
            }
            let Some(block) = op.block() else { return };
            let mut detached = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            detached.remove_from_parent();
            block.insert_operation_before(current, unsafe {
                melior::ir::operation::Operation::from_raw(op.to_raw())
            });
            return;
        }
        next = current.next_in_block();
    }
}
