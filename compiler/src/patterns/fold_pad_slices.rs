//! Folding shifted windows of a padded tensor into elementwise consumers.
//!
//! A stencil along one axis written in primitive ops pads a tensor and
//! adds up slices of the padded tensor at successive offsets: ONNX's LRN
//! (`x * (k + a/n * sum of the squares of n neighbouring channels)^-b`) is
//! imported this way. After elementwise fusion the slices are inputs of
//! one elementwise `linalg.generic`, but the pad still becomes a fill and a
//! copy kernel and the squares a kernel of their own. [`rewrite`] replaces
//! each such input by a read in the generic's body: the element at
//! `index + offset - low` of the unpadded source, read at clamped
//! coordinates (so no back end reads out of bounds) and replaced by the
//! pad value outside the source; a cheap elementwise producer of the
//! source (the squares) is recomputed per read, as
//! `tcc-fold-conv-inputs` does for convolutions.
//!
//! Taken only when every user of the pad is such a slice and every slice's
//! only user is the generic, so that the pad, the slices and the producer
//! all die; the generic's other inputs and its outputs are kept.

use melior::Context;
use melior::ir::attribute::{
    ArrayAttribute, AttributeLike, DenseI32ArrayAttribute, DenseI64ArrayAttribute,
};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::{
    Attribute, Block, BlockLike, BlockRef, Identifier, Region, RegionLike, Type, TypeLike, Value,
    ValueLike,
};

use super::fold_conv_inputs::{Builder, clone_remapped, fusible_producer, inline_producer};
use crate::ir::affine::{IteratorType, iterator_types};
use crate::ir::attr_names;
use crate::ir::error::PassError;
use crate::ir::operand::init_operands;
use crate::ir::operand::operand_at;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, integer_value, op_name, same_op, use_count, users};

/// One input of the generic read through a slice of a pad.
struct ShiftedRead<'c> {
    /// The input's operand position in the generic.
    operand: usize,
    /// The unpadded tensor (the producer's output where there is one).
    source: Value<'c, 'c>,
    /// Per dimension, `slice offset - pad low`: input element `i` is
    /// source element `i + shift`.
    shift: Vec<i64>,
    /// The generic's extent per dimension (the slice's shape).
    extent: Vec<i64>,
    pad_value: Value<'c, 'c>,
    producer: Option<OperationRef<'c, 'c>>,
}

/// What [`plan`] found in front of an elementwise generic.
pub struct Plan<'c> {
    /// The generic rewritten.
    pub op: OperationRef<'c, 'c>,
    reads: Vec<ShiftedRead<'c>>,
    /// The pads and slices folded away (dead after the rewrite).
    pub dead: Vec<OperationRef<'c, 'c>>,
}

impl<'c> Plan<'c> {
    /// The producers recomputed in the reads (dead after the pads).
    pub fn producers(&self) -> Vec<OperationRef<'c, 'c>> {
        let mut producers: Vec<OperationRef<'c, 'c>> = Vec::new();
        for read in &self.reads {
            if let Some(p) = read.producer
                && !producers.iter().any(|q| same_op(q, &p))
            {
                producers.push(p);
            }
        }
        producers
    }
}

/// A dense i64 array attribute's values.
fn dense_i64(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    let attribute = DenseI64ArrayAttribute::try_from(op.attribute(name).ok()?).ok()?;
    (0..attribute.len())
        .map(|i| attribute.element(i).ok())
        .collect()
}

/// The static value of each entry of a mixed static/dynamic list
/// (`tensor.pad`'s low and high): dynamic entries take the next operand
/// from `operands`, which must be an `arith.constant`.
fn resolve<'c>(
    statics: Vec<i64>,
    operands: &mut impl Iterator<Item = Value<'c, 'c>>,
) -> Option<Vec<i64>> {
    statics
        .into_iter()
        .map(|v| {
            if v != i64::MIN {
                return Some(v);
            }
            let operand = operands.next()?;
            let constant = defining_op(operand)?;
            if op_name(&constant) != "arith.constant" {
                return None;
            }
            integer_value(constant.attribute("value").ok()?)
        })
        .collect()
}

/// A `tensor.pad`'s low amounts and its pad value, when the amounts are
/// constants and the value a constant defined outside it.
fn pad_parts<'c>(pad: OperationRef<'c, 'c>) -> Option<(Vec<i64>, Value<'c, 'c>)> {
    if op_name(&pad) != "tensor.pad" {
        return None;
    }
    let low = dense_i64(pad, "static_low")?;
    let high = dense_i64(pad, "static_high")?;
    let mut dynamic = pad.operands().skip(1);
    let low = resolve(low, &mut dynamic)?;
    let high = resolve(high, &mut dynamic)?;
    if dynamic.next().is_some() || low.iter().chain(&high).any(|v| *v < 0) {
        return None;
    }
    let block = pad.region(0).ok()?.first_block()?;
    let value = block.terminator()?.operand(0).ok()?;
    let constant = defining_op(value)?;
    if op_name(&constant) != "arith.constant" || constant.block().is_some_and(|b| b == block) {
        return None;
    }
    Some((low, value))
}

/// Whether an indexing map attribute is the identity of `rank` dims.
fn is_identity(map: Attribute, rank: usize) -> bool {
    if !unsafe { mlir_sys::mlirAttributeIsAAffineMap(map.to_raw()) } {
        return false;
    }
    let map = unsafe { mlir_sys::mlirAffineMapAttrGetValue(map.to_raw()) };
    let dims = unsafe { mlir_sys::mlirAffineMapGetNumDims(map) };
    let identity = unsafe { mlir_sys::mlirAffineMapIsIdentity(map) };
    identity && dims as usize == rank
}

/// Input `operand` of `generic` as a shifted read, if it is a unit-stride
/// static slice, used only here, of a constant pad whose every user is
/// such a slice of this generic.
fn shifted_read<'c>(
    generic: OperationRef<'c, 'c>,
    operand: usize,
    map: Attribute,
) -> Option<(ShiftedRead<'c>, OperationRef<'c, 'c>, OperationRef<'c, 'c>)> {
    let value = generic.operand(operand).ok()?;
    let slice = defining_op(value)?;
    if op_name(&slice) != "tensor.extract_slice" || slice.operand_count() != 1 {
        return None; // dynamic offsets, sizes or strides
    }
    let tensor = StaticTensor::of(value.r#type())?;
    if !is_identity(map, tensor.rank()) || use_count(value) != 1 {
        return None;
    }
    let offsets = dense_i64(slice, "static_offsets")?;
    let strides = dense_i64(slice, "static_strides")?;
    if offsets.len() != tensor.rank() || strides.iter().any(|s| *s != 1) {
        return None; // a rank-reducing or strided slice
    }
    let pad = defining_op(slice.operand(0).ok()?)?;
    let (low, pad_value) = pad_parts(pad)?;
    let padded: Value = pad.result(0).ok()?.into();
    let all_slices_here = users(padded).iter().all(|user| {
        op_name(user) == "tensor.extract_slice"
            && user.result(0).is_ok_and(|r| {
                let r: Value = r.into();
                use_count(r) == 1 && users(r).iter().all(|u| same_op(u, &generic))
            })
    });
    if !all_slices_here || low.len() != tensor.rank() {
        return None;
    }
    let source = pad.operand(0).ok()?;
    if StaticTensor::of(source.r#type())?.element != tensor.element {
        return None;
    }
    let producer = defining_op(source)
        .filter(|p| use_count(source) == 1 && tensor.element.is_f32() && fusible_producer(*p));
    let shift = offsets.iter().zip(&low).map(|(o, l)| o - l).collect();
    Some((
        ShiftedRead {
            operand,
            source,
            shift,
            extent: tensor.shape.clone(),
            pad_value,
            producer,
        },
        pad,
        slice,
    ))
}

/// What can be folded into `op`'s inputs, if anything.
pub fn plan<'c>(op: OperationRef<'c, 'c>) -> Option<Plan<'c>> {
    if op_name(&op) != "linalg.generic" {
        return None;
    }
    if iterator_types(op)?.contains(&IteratorType::Reduction) {
        return None;
    }
    let maps = ArrayAttribute::try_from(op.attribute("indexing_maps").ok()?).ok()?;
    let inputs = op.operand_count() - init_operands(op).len();
    let mut reads = Vec::new();
    let mut dead: Vec<OperationRef<'c, 'c>> = Vec::new();
    for operand in 0..inputs {
        if let Some((read, pad, slice)) = shifted_read(op, operand, maps.element(operand).ok()?) {
            reads.push(read);
            dead.push(slice);
            if !dead.iter().any(|d| same_op(d, &pad)) {
                dead.push(pad);
            }
        }
    }
    if reads.is_empty() {
        return None;
    }
    Some(Plan { op, reads, dead })
}

/// Builds the replacement generic in front of `plan.op` and returns its
/// results.
pub fn rewrite<'c>(
    context: &'c Context,
    plan: &Plan<'c>,
) -> Result<Vec<Value<'c, 'c>>, PassError<'c>> {
    let op = plan.op;
    let location = op.location();
    let err = |e: melior::Error| PassError::at(location, e.to_string());
    let parent = op
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let maps = ArrayAttribute::try_from(op.attribute("indexing_maps").map_err(err)?)
        .map_err(|_| PassError::at(location, "malformed indexing_maps"))?;
    let outputs = init_operands(op).len();
    let inputs = op.operand_count() - outputs;
    let folded = |index: usize| plan.reads.iter().find(|r| r.operand == index);
    let old_body = op
        .region(0)
        .map_err(err)?
        .first_block()
        .ok_or_else(|| PassError::at(location, "generic without a body"))?;

    // The kept operands, their maps and block arguments.
    let mut operands = Vec::new();
    let mut kept_maps = Vec::new();
    let mut argument_types = Vec::new();
    for index in 0..op.operand_count() {
        if folded(index).is_some() {
            continue;
        }
        operands.push(operand_at(op, index)?);
        kept_maps.push(maps.element(index).map_err(err)?);
        let argument: Value = old_body.argument(index).map_err(err)?.into();
        argument_types.push((argument.r#type(), location));
    }
    let region = Region::new();
    let block = region.append_block(Block::new(&argument_types));
    let block = unsafe { BlockRef::from_raw(block.to_raw()) };
    let b = Builder {
        context,
        location,
        block,
    };
    // (old block argument, its replacement).
    let mut mapping: Vec<(mlir_sys::MlirValue, Value<'c, 'c>)> = Vec::new();
    let mut next_argument = 0;
    for index in 0..op.operand_count() {
        let old: Value = old_body.argument(index).map_err(err)?.into();
        let replacement = match folded(index) {
            Some(read) => read_element(&b, read)?,
            None => {
                let argument: Value = block.argument(next_argument).map_err(err)?.into();
                next_argument += 1;
                argument
            }
        };
        mapping.push((old.to_raw(), replacement));
    }
    // The old body after the reads.
    let mut next = old_body.first_operation();
    while let Some(inner) = next {
        next = inner.next_in_block();
        let clone = clone_remapped(&b, inner, &mapping);
        for position in 0..inner.result_count() {
            let old: Value = inner.result(position).map_err(err)?.into();
            let new: Value = clone.result(position).map_err(err)?.into();
            mapping.push((old.to_raw(), unsafe { Value::from_raw(new.to_raw()) }));
        }
    }

    let mut attributes = vec![
        (
            Identifier::new(context, "indexing_maps"),
            ArrayAttribute::new(context, &kept_maps).into(),
        ),
        (
            Identifier::new(context, "iterator_types"),
            op.attribute("iterator_types").map_err(err)?,
        ),
        (
            Identifier::new(context, "operandSegmentSizes"),
            DenseI32ArrayAttribute::new(
                context,
                &[(inputs - plan.reads.len()) as i32, outputs as i32],
            )
            .into(),
        ),
    ];
    for name in [attr_names::KIND] {
        if let Ok(value) = op.attribute(name) {
            attributes.push((Identifier::new(context, name), value));
        }
    }
    let result_types: Vec<Type> = op.results().map(|r| r.r#type()).collect();
    let generic = OperationBuilder::new("linalg.generic", location)
        .add_operands(&operands)
        .add_results(&result_types)
        .add_attributes(&attributes)
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build linalg.generic: {e}")))?;
    let generic = parent.insert_operation_before(op, generic);
    generic
        .results()
        .map(|r| Ok(r.into()))
        .collect::<Result<Vec<_>, _>>()
}

/// The body ops reading one shifted element: coordinates `index + shift`,
/// clamped into the source where they can leave it, the load (or the
/// producer recomputed there) and the pad-value select.
fn read_element<'c>(
    b: &Builder<'c>,
    read: &ShiftedRead<'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = b.location;
    let source = StaticTensor::of(read.source.r#type())
        .ok_or_else(|| PassError::at(location, "dynamically shaped pad source"))?;
    let mut in_bounds: Option<Value> = None;
    let mut coordinates = Vec::new();
    for (dim, &shift) in read.shift.iter().enumerate() {
        let mut coordinate = b.index(dim)?;
        if shift != 0 {
            let amount = b.constant(shift.abs())?;
            coordinate = b.binary(
                if shift > 0 {
                    "arith.addi"
                } else {
                    "arith.subi"
                },
                coordinate,
                amount,
            )?;
        }
        if shift >= 0 && shift + read.extent[dim] <= source.shape[dim] {
            coordinates.push(coordinate); // never leaves the source
            continue;
        }
        coordinates.push(b.clamp_into(coordinate, source.shape[dim], &mut in_bounds)?);
    }
    let extract = |tensor: Value<'c, 'c>, indices: &[Value<'c, 'c>]| b.extract(tensor, indices);
    let element = match read.producer {
        Some(producer) => inline_producer(b, producer, &coordinates, &extract)?,
        None => extract(read.source, &coordinates)?,
    };
    match in_bounds {
        Some(condition) => b.push(
            OperationBuilder::new("arith.select", location)
                .add_operands(&[condition, element, read.pad_value])
                .add_results(&[element.r#type()]),
            "arith.select",
        ),
        None => Ok(element),
    }
}
