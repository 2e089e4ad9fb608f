//! Packing a convolution's constant filter into panels of output channels
//! (`ir::filter_panels`): the rewrite `tcc-pack-weight-panels` applies.
//!
//! The register-blocked GEMM (CPUs) walks K once per block of C and loads
//! the block's columns of B at every k. Read as stored (HWCF: `K x N`,
//! rows of N), each k step starts a new row N floats on, so a long K walks
//! thousands of rows with a power-of-two stride: the cache sets and the
//! prefetcher suffer. In panels (`[N/P][K][P]`) a block's columns follow
//! each other in k, and the loop reads B in order. The filter is a
//! constant, so the packing is done once, here, at compile time.
//!
//! A `linalg.matmul` or `linalg.batch_matmul` (batch 1) with a constant B
//! (a transformer's or classifier's weights: `K x N`, N = 768..3072 floats
//! a row) is packed the same way ([`pack_matmul`]): it becomes a
//! `linalg.generic` reading `[1 x] N/P x K x P` through
//! `ir::filter_panels::matmul_panel_maps_text`. Read as stored, a block of
//! 16 columns with K = 768 touches 768 rows 3 to 12 KiB apart, about 2,300
//! pages for ViT's and GPT-2's 768 x 3072 and 3072 x 768 weights, more
//! than the TLB holds.

use melior::Context;
use melior::ir::attribute::ArrayAttribute;
use melior::ir::attribute::DenseI32ArrayAttribute;
use melior::ir::operation::OperationBuilder;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Region, RegionLike, Type, TypeLike, Value, ValueLike,
};

use crate::ir::constant::ConstTensor;
use crate::ir::element_type::ElementType;
use crate::ir::error::PassError;
use crate::ir::filter_panels::{
    HWCF_MAP_TEXT, matmul_panel_maps_text, operand_map_text, panel_map_text,
};
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, erase_op, op_name, use_count};

/// Gives a named `linalg.conv_2d_nhwc_hwcf` with a constant filter the
/// `tcc.conv` form of `tcc-fold-conv-inputs` (loads reading its input as
/// it is), keeping its kernel attributes, so that its filter can take the
/// panel layout. Returns the `tcc.conv`, or `op` itself when it
/// is not such a convolution.
fn as_conv_op<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<OperationRef<'c, 'c>, PassError<'c>> {
    let Some(plan) = crate::patterns::fold_conv_inputs::plain_conv_plan(op) else {
        return Ok(op);
    };
    let filter_ok = op.operand(1).is_ok_and(|filter| {
        ConstTensor::is_constant(filter)
            && StaticTensor::of(filter.r#type()).is_some_and(|t| t.shape.len() == 4)
    });
    if !filter_ok {
        return Ok(op);
    }
    let error = |message: String| PassError::at(op.location(), message);
    let replacement = crate::patterns::fold_conv_inputs::rewrite(context, &plan)?;
    let conv = defining_op(replacement).ok_or_else(|| error("the rewrite made no op".into()))?;
    let mut conv_mut = unsafe { OperationRefMut::from_raw(conv.to_raw()) };
    // The kernel's name, kind and strategy (tcc-form-dispatches,
    // tcc-configure-kernels); the rewrite set the op's own.
    for (name, value) in crate::ir::util::discardable_attributes(op, "tcc.") {
        if conv.attribute(&name).is_err() {
            conv_mut.set_discardable_attribute(&name, value);
        }
    }
    let old: Value = op.result(0).map_err(|e| error(e.to_string()))?.into();
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), replacement.to_raw()) };
    erase_op(op);
    Ok(conv)
}

/// Whether `op` is a 2-D convolution `tcc.conv` (`tcc-fold-conv-inputs`)
/// reading a constant f32 HWCF filter through the plain map.
pub fn packable(op: OperationRef, panel: i64) -> bool {
    if op_name(&op) != crate::ir::conv::OP
        || crate::ir::contraction::window_layout(op).0 != "conv_2d_nhwc_hwcf"
        || panel <= 0
    {
        return false;
    }
    let Ok(filter) = op.operand(0) else {
        return false;
    };
    let plain_map = operand_map_text(op, 0).is_some_and(|map| map == HWCF_MAP_TEXT);
    let Some(tensor) = StaticTensor::of(filter.r#type()) else {
        return false;
    };
    plain_map && tensor.rank() == 4 && ConstTensor::is_constant(filter)
}

/// Filters already packed in one pass run, by the old constant and the
/// panel width: convolutions sharing a weight share its packed form.
/// The old constants stay until [`PackedFilters::erase_unused`].
#[derive(Default)]
pub struct PackedFilters<'c> {
    packed: std::collections::HashMap<(usize, i64), Value<'c, 'c>>,
    old: Vec<Value<'c, 'c>>,
}

impl<'c> PackedFilters<'c> {
    /// Erases the old filter constants nothing reads any more.
    pub fn erase_unused(self) {
        for value in self.old {
            if use_count(value) == 0
                && let Some(op) = defining_op(value)
            {
                erase_op(op);
            }
        }
    }
}

/// Packs `op`'s filter into panels of `panel` output channels (see the
/// module comment): a constant `ceil(F/P) x KH x KW x C x P` (channels
/// past F zero) beside the old one, shared by every convolution of the
/// run that reads the same filter in the same panels, read through the
/// panel map. Returns whether it rewrote (`false`: not [`packable`]).
pub fn pack_filter<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    panel: i64,
    done: &mut PackedFilters<'c>,
) -> Result<bool, PassError<'c>> {
    if matches!(
        op_name(&op).as_str(),
        "linalg.matmul" | "linalg.batch_matmul"
    ) {
        return pack_matmul(context, op, panel, done);
    }
    let op = as_conv_op(context, op)?;
    if !packable(op, panel) {
        return Ok(false);
    }
    let error = |message: String| PassError::at(op.location(), message);
    let filter: Value = op.operand(0).map_err(|e| error(e.to_string()))?;
    let key = (filter.to_raw().ptr as usize, panel);
    if let Some(&constant) = done.packed.get(&key) {
        return read_through_panels(context, op, constant, panel).map(|_| true);
    }
    let Some(weights) = ConstTensor::of_value(filter) else {
        return Ok(false);
    };
    let Some(old_constant) = defining_op(filter) else {
        return Ok(false);
    };
    if weights.element != ElementType::F32 {
        return Ok(false);
    }
    let [kh, kw, c, f] = weights.shape[..] else {
        return Ok(false);
    };
    // Output channels rounded up to whole panels, the extra ones zero: a
    // block reaching past F loads its last panel whole.
    let panels = (f + panel - 1) / panel;
    let padded = if f % panel == 0 {
        weights
    } else {
        let extra = panels * panel - f;
        let zeros = ConstTensor::from_f32s(
            vec![kh, kw, c, extra],
            &vec![0.0; (kh * kw * c * extra) as usize],
        );
        ConstTensor::concat(&[weights, zeros], 3).map_err(error)?
    };
    let packed = padded
        .reshape(&[kh, kw, c, panels, panel])
        .and_then(|t| t.transpose(&[3, 0, 1, 2, 4]))
        .map_err(error)?;
    let element = StaticTensor::of(filter.r#type())
        .ok_or_else(|| error("expected a static filter tensor".into()))?
        .element;
    let ty = StaticTensor {
        shape: packed.shape.clone(),
        element,
    }
    .to_type();
    let attribute = packed.to_attribute(ty).map_err(error)?;
    // Beside the old constant, which dominates every reader of it.
    let builder = TosaBuilder::before(context, old_constant)?;
    let constant = builder.insert("arith.constant", &[], ty, &[("value", attribute)])?;
    done.packed.insert(key, constant);
    done.old.push(filter);
    read_through_panels(context, op, constant, panel).map(|_| true)
}

/// Makes `op` read `constant` (a filter in panels of `panel`) through
/// the panel map.
fn read_through_panels<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    constant: Value<'c, 'c>,
    panel: i64,
) -> Result<(), PassError<'c>> {
    let error = |message: String| PassError::at(op.location(), message);
    let maps = ArrayAttribute::try_from(
        op.attribute("indexing_maps")
            .map_err(|e| error(e.to_string()))?,
    )
    .map_err(|e| error(e.to_string()))?;
    let panel_map = Attribute::parse(context, &panel_map_text(panel))
        .ok_or_else(|| error("cannot build the panel map".into()))?;
    let mut new_maps = vec![panel_map];
    for index in 1..maps.len() {
        new_maps.push(maps.element(index).map_err(|e| error(e.to_string()))?);
    }
    let mut op_mut = unsafe { OperationRefMut::from_raw(op.to_raw()) };
    op_mut.set_operand(0, constant);
    op_mut.set_attribute(
        "indexing_maps",
        ArrayAttribute::new(context, &new_maps).into(),
    );
    Ok(())
}

/// Packs the constant B of a `linalg.matmul` or `linalg.batch_matmul`
/// (batch 1, f32, default indexing) into panels of `panel` columns and
/// replaces the op by the equivalent `linalg.generic` reading them (see
/// the module comment), keeping its kernel attributes. B's columns past N
/// are zero, computed by the edge block and never stored. Returns whether
/// it rewrote.
pub fn pack_matmul<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    panel: i64,
    done: &mut PackedFilters<'c>,
) -> Result<bool, PassError<'c>> {
    let batched = op_name(&op) == "linalg.batch_matmul";
    if crate::ir::contraction::gemm_shape(op).is_none() || op.operand_count() != 3 || panel <= 0 {
        return Ok(false);
    }
    let location = op.location();
    let error = |message: String| PassError::at(location, message);
    let (a, b, init) = (
        op.operand(0).map_err(|e| error(e.to_string()))?,
        op.operand(1).map_err(|e| error(e.to_string()))?,
        op.operand(2).map_err(|e| error(e.to_string()))?,
    );
    let Some(b_type) = StaticTensor::of(b.r#type()) else {
        return Ok(false);
    };
    let (k, n) = match (batched, &b_type.shape[..]) {
        (true, [1, k, n]) | (false, [k, n]) => (*k, *n),
        _ => return Ok(false),
    };
    let f32_operands = [a, b, init]
        .iter()
        .all(|v| StaticTensor::of(v.r#type()).is_some_and(|t| t.element.is_f32()));
    if !f32_operands || !ConstTensor::is_constant(b) {
        return Ok(false);
    }
    let key = (b.to_raw().ptr as usize, panel);
    let constant = match done.packed.get(&key) {
        Some(&constant) => constant,
        None => {
            let Some(weights) = ConstTensor::of_value(b) else {
                return Ok(false);
            };
            let Some(old_constant) = defining_op(b) else {
                return Ok(false);
            };
            if weights.element != ElementType::F32 {
                return Ok(false);
            }
            let panels = (n + panel - 1) / panel;
            let plain = weights.reshape(&[k, n]).map_err(error)?;
            let padded = if n % panel == 0 {
                plain
            } else {
                let extra = panels * panel - n;
                let zeros =
                    ConstTensor::from_f32s(vec![k, extra], &vec![0.0; (k * extra) as usize]);
                ConstTensor::concat(&[plain, zeros], 1).map_err(error)?
            };
            let mut packed = padded
                .reshape(&[k, panels, panel])
                .and_then(|t| t.transpose(&[1, 0, 2]))
                .map_err(error)?;
            if batched {
                packed = packed.reshape(&[1, panels, k, panel]).map_err(error)?;
            }
            let ty = StaticTensor {
                shape: packed.shape.clone(),
                element: b_type.element,
            }
            .to_type();
            let attribute = packed.to_attribute(ty).map_err(error)?;
            let builder = TosaBuilder::before(context, old_constant)?;
            let constant = builder.insert("arith.constant", &[], ty, &[("value", attribute)])?;
            done.packed.insert(key, constant);
            done.old.push(b);
            constant
        }
    };
    // The generic: acc + a * b over (b,) i, j, k.
    let f32_type = Type::float32(context);
    let region = Region::new();
    let block = region.append_block(Block::new(&[
        (f32_type, location),
        (f32_type, location),
        (f32_type, location),
    ]));
    let arguments: Vec<Value> = (0..3)
        .map(|i| block.argument(i).map(Value::from))
        .collect::<Result<_, _>>()
        .map_err(|e| error(e.to_string()))?;
    let product = block.append_operation(
        OperationBuilder::new("arith.mulf", location)
            .add_operands(&[arguments[0], arguments[1]])
            .add_results(&[f32_type])
            .build()
            .map_err(|e| error(format!("cannot build arith.mulf: {e}")))?,
    );
    let product: Value = product.result(0).map_err(|e| error(e.to_string()))?.into();
    let sum = block.append_operation(
        OperationBuilder::new("arith.addf", location)
            .add_operands(&[arguments[2], product])
            .add_results(&[f32_type])
            .build()
            .map_err(|e| error(format!("cannot build arith.addf: {e}")))?,
    );
    let sum: Value = sum.result(0).map_err(|e| error(e.to_string()))?.into();
    block.append_operation(
        OperationBuilder::new("linalg.yield", location)
            .add_operands(&[sum])
            .build()
            .map_err(|e| error(format!("cannot build linalg.yield: {e}")))?,
    );
    let maps: Vec<Attribute> = matmul_panel_maps_text(batched, panel)
        .iter()
        .map(|text| {
            Attribute::parse(context, text)
                .ok_or_else(|| error(format!("cannot parse the indexing map {text}")))
        })
        .collect::<Result<_, _>>()?;
    let parallel = if batched { 3 } else { 2 };
    let iterators: Vec<Attribute> = (0..=parallel)
        .map(|i| {
            let kind = if i < parallel {
                "parallel"
            } else {
                "reduction"
            };
            Attribute::parse(context, &format!("#linalg.iterator_type<{kind}>"))
                .ok_or_else(|| error("cannot build the iterator types".into()))
        })
        .collect::<Result<_, _>>()?;
    let mut attributes = vec![
        (
            Identifier::new(context, "indexing_maps"),
            ArrayAttribute::new(context, &maps).into(),
        ),
        (
            Identifier::new(context, "iterator_types"),
            ArrayAttribute::new(context, &iterators).into(),
        ),
        (
            Identifier::new(context, "operandSegmentSizes"),
            DenseI32ArrayAttribute::new(context, &[2, 1]).into(),
        ),
    ];
    for (name, value) in crate::ir::util::discardable_attributes(op, "tcc.") {
        attributes.push((Identifier::new(context, &name), value));
    }
    let result = op.result(0).map_err(|e| error(e.to_string()))?;
    let generic = OperationBuilder::new("linalg.generic", location)
        .add_operands(&[a, constant, init])
        .add_results(&[result.r#type()])
        .add_attributes(&attributes)
        .add_regions([region])
        .build()
        .map_err(|e| error(format!("cannot build linalg.generic: {e}")))?;
    let parent = op
        .block()
        .ok_or_else(|| error("matmul outside a block".into()))?;
    let generic = parent.insert_operation_before(op, generic);
    let new: Value = generic.result(0).map_err(|e| error(e.to_string()))?.into();
    let old: Value = result.into();
    unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), new.to_raw()) };
    erase_op(op);
    Ok(true)
}
