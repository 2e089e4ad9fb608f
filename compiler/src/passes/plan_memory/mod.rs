//! `tcc-plan-memory`: the static memory plan. Every intermediate buffer of a
//! host function (a `memref.alloc` with a static shape) gets a byte offset
//! in one arena per function, so that the runtime allocates that arena once
//! per session and reuses it on every call instead of drawing each
//! temporary from a pool at run time.
//!
//! Runs on the host functions after the gpu phase, where a function is a
//! straight-line sequence of allocations, constants, kernel launches and
//! copies. The live range of a buffer runs from the first to the last
//! top-level op that uses it (a use nested in a region counts at its
//! top-level ancestor); two buffers may share bytes only when their ranges
//! are disjoint. Offsets come from the greedy-by-size planner (TensorFlow
//! Lite's `GreedyMemoryPlanner`, IREE's allocation packing): the largest
//! buffer first, each into the smallest gap of the arena that no buffer
//! alive at the same time occupies, else at the end. A first-fit pass in
//! program order, longest lifetime first and largest size x lifetime first
//! are tried as well and the smallest arena kept.
//!
//! In-place reuse is decided where the op semantics are known, by
//! one-shot-bufferize on tensors: an elementwise op that writes into its
//! dead operand's buffer reaches this pass as a single buffer with one live
//! range. This pass never overlaps two distinct buffers that are alive at
//! the same launch: kernel parameters are `restrict` pointers in the OpenCL
//! C back end, so aliasing two arguments would be undefined behaviour.
//!
//! Each planned `memref.alloc` becomes `memref.view %arena[%offset][]` of
//! one `memref.alloc() {tcc.arena} : memref<Nxi8>` at the top of the
//! function; deallocations of planned buffers are erased. The function is
//! annotated with the arena size (`tcc.arena_bytes`), the plan's offset
//! alignment (`tcc.arena_alignment`) and the liveness lower bound
//! (`tcc.live_bytes_bound`: the most bytes alive at any op), which
//! `tcc compile --stats` prints. Buffers that escape (returned, or used by
//! an op that yields a memref and so could alias them) are left alone, and
//! so are non-identity-layout allocations. A buffer sized by a symbolic
//! dimension (issue 33: `memref.alloc(%n)`) is planned at the largest
//! declared maximum, and its view takes the call's sizes
//! (`memref.view %arena[%offset][%n]`): every offset holds for every
//! extent in range. Such a function also records the arena and the
//! liveness bound a plan at the declared minimum would take
//! (`tcc.arena_bytes_at_min`, `tcc.live_bytes_bound_at_min`), which
//! `--stats` prints beside the plan's.

use std::collections::HashMap;

use melior::Context;
use melior::ir::attribute::{DenseI32ArrayAttribute, IntegerAttribute};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::r#type::{IntegerType, MemRefType};
use melior::ir::{Attribute, BlockLike, Identifier, RegionLike, Type, TypeLike, Value, ValueLike};

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use crate::ir::attr_names;
use crate::ir::util::{body_ops, body_ops_named, op_name, users};
use planner::{Interval, plan};

mod planner;

pub struct PlanMemory;

/// Offsets are multiples of this by default: a page, and a multiple of
/// every device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN` we know of (NVIDIA 512 B,
/// PoCL 128 B), so that every planned buffer can be an OpenCL sub-buffer.
pub const DEFAULT_ALIGNMENT: u64 = 4096;

#[derive(Clone, Copy, Debug)]
pub struct PlanOptions {
    /// Byte alignment of every offset (a power of two).
    pub alignment: u64,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            alignment: DEFAULT_ALIGNMENT,
        }
    }
}

impl PassOptions for PlanOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[PassOptionInfo {
        name: "alignment",
        kind: PassOptionKind::Int,
        default: "4096",
        description: "Byte alignment of every arena offset (a power of two up to 1048576)",
    }];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "alignment" => {
                let alignment: u64 = value
                    .parse()
                    .ok()
                    .filter(|a: &u64| a.is_power_of_two() && *a <= 1 << 20)
                    .ok_or_else(|| {
                        format!("alignment must be a power of two up to 1048576, got '{value}'")
                    })?;
                self.alignment = alignment;
                Ok(())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

/// Bytes of one element in device memory (`i1` takes a byte).
fn element_bytes(ty: Type) -> Option<u64> {
    let raw = ty.to_raw();
    let bits = unsafe {
        if mlir_sys::mlirTypeIsAInteger(raw) {
            mlir_sys::mlirIntegerTypeGetWidth(raw)
        } else if mlir_sys::mlirTypeIsAFloat(raw) {
            mlir_sys::mlirFloatTypeGetWidth(raw)
        } else if mlir_sys::mlirTypeIsAIndex(raw) {
            64
        } else {
            return None;
        }
    };
    Some(u64::from(bits).div_ceil(8).max(1))
}

/// Byte size of an identity-layout memref in the default memory space,
/// each dynamic dimension (a symbolic one, issue 33) taken as `extent`
/// (the declared maximum: the slot then holds the buffer at every extent
/// in range); `None` for anything else, and for a dynamic shape without
/// `extent`.
fn plannable_bytes(ty: Type, extent: Option<i64>) -> Option<u64> {
    plannable_bytes_with(ty, |_| extent)
}

/// [`plannable_bytes`] of `value`'s buffer, each dynamic dimension at its
/// bound (`ir::dynamic::max_extent`: a `?` folded from the batch and
/// static axes is that multiple of the maximum); `None` where a bound is
/// not known, so that such a buffer is allocated at its call's size
/// instead of planned.
fn bounded_bytes(value: Value, extent: Option<i64>) -> Option<u64> {
    plannable_bytes_with(value.r#type(), |axis| {
        crate::ir::dynamic::max_extent(value, axis, extent?)
    })
}

fn plannable_bytes_with(ty: Type, extent_at: impl Fn(usize) -> Option<i64>) -> Option<u64> {
    if !ty.is_mem_ref() {
        return None;
    }
    let raw = ty.to_raw();
    unsafe {
        if !mlir_sys::mlirMemRefTypeGetMemorySpace(raw).ptr.is_null()
            || !mlir_sys::mlirAffineMapIsIdentity(mlir_sys::mlirMemRefTypeGetAffineMap(raw))
        {
            return None;
        }
        let shape: Vec<i64> = crate::ir::types::ranked_shape(ty)?
            .into_iter()
            .enumerate()
            .map(|(axis, d)| d.or_else(|| extent_at(axis)))
            .collect::<Option<_>>()?;
        let mut bytes = element_bytes(Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(raw)))?;
        for extent in shape {
            bytes = bytes.checked_mul(u64::try_from(extent).ok()?)?;
        }
        Some(bytes)
    }
}

/// Bytes of one element of a memref type.
fn memref_element_bytes(ty: Type) -> Option<u64> {
    ty.is_mem_ref().then_some(())?;
    element_bytes(unsafe { Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty.to_raw())) })
}

fn key(raw: *const std::ffi::c_void) -> usize {
    raw as usize
}

/// Whether a use by `user` keeps the buffer's bytes private to the ops
/// that name it: the user yields no memref (no alias) and does not hand
/// the buffer out of the function.
fn contained_use(user: OperationRef) -> bool {
    let name = op_name(&user);
    if matches!(
        name.as_str(),
        "func.return" | "func.call" | "func.call_indirect"
    ) {
        return false;
    }
    (0..user.result_count()).all(|i| {
        user.result(i)
            .map(|r| !r.r#type().is_mem_ref())
            .unwrap_or(false)
    })
}

/// Plans one function; returns without change when it has no body.
fn plan_function<'c>(
    context: &'c melior::Context,
    function: OperationRef<'c, 'c>,
    alignment: u64,
    (extent, smallest): (Option<i64>, Option<i64>),
) -> Result<(), PassError<'c>> {
    let location = function.location();
    let Ok(region) = function.region(0) else {
        return Ok(());
    };
    let Some(block) = region.first_block() else {
        return Ok(());
    };
    let ops = body_ops(function);
    let position: HashMap<usize, usize> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| (key(op.to_raw().ptr), i))
        .collect();
    // The top-level op of `function` that `op` is (or is nested in).
    let top_level = |op: OperationRef| -> Option<usize> {
        let mut current = op.to_raw();
        loop {
            if let Some(&p) = position.get(&key(current.ptr)) {
                return Some(p);
            }
            current = unsafe { mlir_sys::mlirOperationGetParentOperation(current) };
            if current.ptr.is_null() || current.ptr == function.to_raw().ptr {
                return None;
            }
        }
    };

    let mut planned: Vec<(OperationRef<'c, 'c>, Interval)> = Vec::new();
    // The same buffers' bytes at the smallest extent (symbolic dimensions).
    let mut at_min: Vec<Interval> = Vec::new();
    let mut deallocs: Vec<OperationRef<'c, 'c>> = Vec::new();
    let mut dead: Vec<OperationRef<'c, 'c>> = Vec::new();
    for (index, op) in ops.iter().enumerate() {
        // An allocation's operands are its dynamic sizes (a symbolic
        // dimension's extent, planned at `extent`).
        if op_name(op) != "memref.alloc"
            || op.result_count() != 1
            || (op.operand_count() != 0 && extent.is_none())
        {
            continue;
        }
        if op.attribute(attr_names::ARENA).is_ok() {
            return Err(PassError::at(
                op.location(),
                "this function already has a memory plan",
            ));
        }
        let result: Value = op
            .result(0)
            .map_err(|e| PassError::at(op.location(), e.to_string()))?
            .into();
        let Some(mut bytes) = bounded_bytes(result, extent) else {
            continue;
        };
        let mut min_bytes = plannable_bytes(result.r#type(), smallest).unwrap_or(bytes);
        // A buffer stored narrower (`tcc-narrow-storage`) takes fewer bytes.
        if let (Some(storage), Some(element)) =
            (super::op_storage(op), memref_element_bytes(result.r#type()))
            && let Some(stored) = element_bytes(storage)
        {
            bytes = bytes / element * stored;
            min_bytes = min_bytes / element * stored;
        }
        let uses = users(result);
        if uses.is_empty() {
            dead.push(*op);
            continue;
        }
        if !uses.iter().all(|u| contained_use(*u)) {
            continue;
        }
        let mut interval = Interval {
            bytes: bytes.max(1),
            first: usize::MAX,
            last: index,
        };
        let mut own_deallocs = Vec::new();
        let mut outside = false;
        for user in uses {
            if op_name(&user) == "memref.dealloc" {
                own_deallocs.push(user);
                continue;
            }
            let Some(p) = top_level(user) else {
                outside = true;
                break;
            };
            interval.first = interval.first.min(p);
            interval.last = interval.last.max(p);
        }
        if outside {
            continue;
        }
        if interval.first == usize::MAX {
            // Only deallocated: dead.
            deallocs.extend(own_deallocs);
            dead.push(*op);
            continue;
        }
        deallocs.extend(own_deallocs);
        at_min.push(Interval {
            bytes: min_bytes.max(1),
            ..interval
        });
        planned.push((*op, interval));
    }

    let intervals: Vec<Interval> = planned.iter().map(|(_, i)| *i).collect();
    let result = plan(&intervals, alignment)
        .ok_or_else(|| PassError::at(location, "the memory plan's size overflows 64 bits"))?;

    for op in deallocs.into_iter().chain(dead) {
        crate::ir::util::erase_op(op);
    }

    let i64_type: Type = IntegerType::new(context, 64).into();
    let int_attr = |value: u64| -> Result<Attribute<'c>, PassError<'c>> {
        let value = i64::try_from(value)
            .map_err(|_| PassError::at(location, format!("{value} does not fit in i64")))?;
        Ok(IntegerAttribute::new(i64_type, value).into())
    };
    let mut function_mut = unsafe { OperationRefMut::from_raw(function.to_raw()) };
    function_mut.set_discardable_attribute(attr_names::ARENA_BYTES, int_attr(result.arena_bytes)?);
    function_mut.set_discardable_attribute(attr_names::ARENA_ALIGNMENT, int_attr(alignment)?);
    function_mut
        .set_discardable_attribute(attr_names::LIVE_BYTES_BOUND, int_attr(result.lower_bound)?);
    if smallest.is_some() {
        let minimum = plan(&at_min, alignment)
            .ok_or_else(|| PassError::at(location, "the memory plan's size overflows 64 bits"))?;
        function_mut.set_discardable_attribute(
            attr_names::ARENA_BYTES_AT_MIN,
            int_attr(minimum.arena_bytes)?,
        );
        function_mut.set_discardable_attribute(
            attr_names::LIVE_BYTES_BOUND_AT_MIN,
            int_attr(minimum.lower_bound)?,
        );
    }
    if planned.is_empty() {
        return Ok(());
    }

    // The arena: one i8 buffer at the top of the function.
    let arena_type: Type = MemRefType::new(
        IntegerType::new(context, 8).into(),
        &[i64::try_from(result.arena_bytes).map_err(|_| {
            PassError::at(location, "the arena does not fit in a memref dimension")
        })?],
        None,
        None,
    )
    .into();
    let unit = Attribute::unit(context);
    let arena = OperationBuilder::new("memref.alloc", location)
        .add_attributes(&[
            (Identifier::new(context, attr_names::ARENA), unit),
            (Identifier::new(context, "alignment"), int_attr(alignment)?),
            (
                Identifier::new(context, "operandSegmentSizes"),
                DenseI32ArrayAttribute::new(context, &[0, 0]).into(),
            ),
        ])
        .add_results(&[arena_type])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build the arena: {e}")))?;
    let arena = match block.first_operation() {
        Some(first) => block.insert_operation_before(first, arena),
        None => block.append_operation(arena),
    };
    let arena: Value = arena
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into();
    let index_type = Type::index(context);

    for ((alloc, _), offset) in planned.iter().zip(&result.offsets) {
        let at = alloc.location();
        let parent = alloc
            .block()
            .ok_or_else(|| PassError::at(at, "allocation outside a block"))?;
        let offset = i64::try_from(*offset)
            .map_err(|_| PassError::at(at, format!("offset {offset} does not fit in i64")))?;
        let constant = OperationBuilder::new("arith.constant", at)
            .add_attributes(&[(
                Identifier::new(context, "value"),
                IntegerAttribute::new(index_type, offset).into(),
            )])
            .add_results(&[index_type])
            .build()
            .map_err(|e| PassError::at(at, format!("cannot build arith.constant: {e}")))?;
        let constant = parent.insert_operation_before(*alloc, constant);
        let shift: Value = constant
            .result(0)
            .map_err(|e| PassError::at(at, e.to_string()))?
            .into();
        let old: Value = alloc
            .result(0)
            .map_err(|e| PassError::at(at, e.to_string()))?
            .into();
        // A dynamically shaped buffer's view takes its sizes (the
        // allocation's operands), within the slot planned at the maximum.
        let sizes: Vec<Value> = alloc.operands().collect();
        let mut view = OperationBuilder::new("memref.view", at)
            .add_operands(&[arena, shift])
            .add_operands(&sizes)
            .add_results(&[old.r#type()]);
        // The host sizes the view by the buffer's storage.
        if let Ok(storage) = alloc.attribute(super::STORAGE_ATTR) {
            view = view.add_attributes(&[(Identifier::new(context, super::STORAGE_ATTR), storage)]);
        }
        let view = view
            .build()
            .map_err(|e| PassError::at(at, format!("cannot build memref.view: {e}")))?;
        let view = parent.insert_operation_before(*alloc, view);
        let new: Value = view
            .result(0)
            .map_err(|e| PassError::at(at, e.to_string()))?
            .into();
        crate::ir::util::replace_and_erase(*alloc, old, new);
    }
    Ok(())
}

impl TccPass for PlanMemory {
    const ARGUMENT: &'static str = "tcc-plan-memory";
    const SUMMARY: &'static str =
        "Give every intermediate buffer of a host function an offset in one arena, by liveness";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["memref", "arith"];
    type Options = PlanOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        module: Root<'c>,
        options: &PlanOptions,
    ) -> PassResult<'c> {
        // A symbolic dimension (issue 33): every buffer it sizes gets the
        // slot of its declared maximum.
        let dims = crate::ir::dynamic::module_dims(module);
        let extents = (
            crate::ir::dynamic::strategy_extent(&dims),
            crate::ir::dynamic::smallest_extent(&dims),
        );
        for function in body_ops_named(module, "func.func") {
            plan_function(context, function, options.alignment, extents)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_option_is_checked() {
        let mut options = PlanOptions::default();
        assert!(options.set("alignment", "512").is_ok());
        assert_eq!(options.alignment, 512);
        assert!(options.set("alignment", "300").is_err());
        assert!(options.set("alignment", "0").is_err());
        assert!(options.set("size", "1").is_err());
    }
}
