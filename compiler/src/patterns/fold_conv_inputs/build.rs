//! Building the `tcc.conv` that replaces a window op ([`rewrite`]): the
//! input coordinates from `linalg.index`, bounds checks and clamping for a
//! folded pad, the loads with a folded producer's body inlined, and the
//! combiner.

use melior::Context;
use melior::ir::attribute::{
    ArrayAttribute, DenseI32ArrayAttribute, FloatAttribute, IntegerAttribute,
};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::{IntegerType, RankedTensorType, Type};
use melior::ir::{
    Block, BlockLike, BlockRef, Identifier, Location, Region, RegionLike, TypeLike, Value,
    ValueLike,
};

use super::pool::{inline_pool, pool_parts};
use super::{Combine, Plan, Window, map_results, pair, transpose_permutation};
use crate::ir::affine::{
    IteratorType, identity_map_attribute, iterator_types_attribute, projection_map_attribute,
};
use crate::ir::attr_names;
use crate::ir::constant::ConstTensor;
use crate::ir::conv::{ConvWindow, WindowKind};
use crate::ir::error::PassError;
use crate::ir::operand::operand_at;
use crate::ir::types::StaticTensor;
use crate::ir::util::op_name;

/// Builds ops at the end of one block.
pub(crate) struct Builder<'c> {
    pub context: &'c Context,
    pub location: Location<'c>,
    pub block: BlockRef<'c, 'c>,
}

impl<'c> Builder<'c> {
    pub(crate) fn push(
        &self,
        builder: OperationBuilder<'c>,
        what: &str,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let op = builder
            .build()
            .map_err(|e| PassError::at(self.location, format!("cannot build {what}: {e}")))?;
        let op = self.block.append_operation(op);
        let op = unsafe { OperationRef::from_raw(op.to_raw()) };
        Ok(op
            .result(0)
            .map_err(|e| PassError::at(self.location, e.to_string()))?
            .into())
    }

    pub(crate) fn index_type(&self) -> Type<'c> {
        Type::index(self.context)
    }

    pub(crate) fn constant(&self, value: i64) -> Result<Value<'c, 'c>, PassError<'c>> {
        let attribute = IntegerAttribute::new(self.index_type(), value);
        self.push(
            OperationBuilder::new("arith.constant", self.location)
                .add_attributes(&[(Identifier::new(self.context, "value"), attribute.into())])
                .add_results(&[self.index_type()]),
            "arith.constant",
        )
    }

    pub(crate) fn index(&self, dim: usize) -> Result<Value<'c, 'c>, PassError<'c>> {
        let attribute =
            IntegerAttribute::new(IntegerType::new(self.context, 64).into(), dim as i64);
        self.push(
            OperationBuilder::new("linalg.index", self.location)
                .add_attributes(&[(Identifier::new(self.context, "dim"), attribute.into())])
                .add_results(&[self.index_type()]),
            "linalg.index",
        )
    }

    pub(crate) fn binary(
        &self,
        name: &str,
        lhs: Value<'c, 'c>,
        rhs: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        self.push(
            OperationBuilder::new(name, self.location)
                .add_operands(&[lhs, rhs])
                .add_results(&[lhs.r#type()]),
            name,
        )
    }

    /// `arith.cmpi` with a predicate number (2 = slt, 5 = sge).
    pub(crate) fn cmpi(
        &self,
        predicate: i64,
        lhs: Value<'c, 'c>,
        rhs: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let attribute = IntegerAttribute::new(IntegerType::new(self.context, 64).into(), predicate);
        self.push(
            OperationBuilder::new("arith.cmpi", self.location)
                .add_operands(&[lhs, rhs])
                .add_attributes(&[(Identifier::new(self.context, "predicate"), attribute.into())])
                .add_results(&[IntegerType::new(self.context, 1).into()]),
            "arith.cmpi",
        )
    }

    /// Checks `coordinate` against `0..size`, folds the check into
    /// `in_bounds`, and returns it clamped into bounds (so that no back end
    /// ever reads outside the tensor).
    pub(crate) fn clamp_into(
        &self,
        coordinate: Value<'c, 'c>,
        size: i64,
        in_bounds: &mut Option<Value<'c, 'c>>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let zero = self.constant(0)?;
        let last = self.constant(size - 1)?;
        let limit = self.constant(size)?;
        let above = self.cmpi(5, coordinate, zero)?;
        let below = self.cmpi(2, coordinate, limit)?;
        let both = self.binary("arith.andi", above, below)?;
        *in_bounds = Some(match *in_bounds {
            Some(previous) => self.binary("arith.andi", previous, both)?,
            None => both,
        });
        let clamped = self.binary("arith.maxsi", coordinate, zero)?;
        self.binary("arith.minsi", clamped, last)
    }

    /// `arith.select` of `on_true` where `condition` holds, else `on_false`.
    pub(crate) fn select(
        &self,
        condition: Value<'c, 'c>,
        on_true: Value<'c, 'c>,
        on_false: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        self.push(
            OperationBuilder::new("arith.select", self.location)
                .add_operands(&[condition, on_true, on_false])
                .add_results(&[on_true.r#type()]),
            "arith.select",
        )
    }

    /// An f32 `arith.constant`.
    pub(crate) fn float_constant(&self, value: f64) -> Result<Value<'c, 'c>, PassError<'c>> {
        let f32_type = Type::float32(self.context);
        let attribute = FloatAttribute::new(self.context, f32_type, value);
        self.push(
            OperationBuilder::new("arith.constant", self.location)
                .add_attributes(&[(Identifier::new(self.context, "value"), attribute.into())])
                .add_results(&[f32_type]),
            "arith.constant",
        )
    }

    /// `tensor.extract` of `tensor` at `indices`.
    pub(crate) fn extract(
        &self,
        tensor: Value<'c, 'c>,
        indices: &[Value<'c, 'c>],
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let element = unsafe {
            Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(
                tensor.r#type().to_raw(),
            ))
        };
        let mut operands = vec![tensor];
        operands.extend_from_slice(indices);
        self.push(
            OperationBuilder::new("tensor.extract", self.location)
                .add_operands(&operands)
                .add_results(&[element]),
            "tensor.extract",
        )
    }

    /// `base * scale + offset`, folding the trivial parts.
    pub(crate) fn affine(
        &self,
        base: Value<'c, 'c>,
        scale: i64,
        offset: Value<'c, 'c>,
        offset_scale: i64,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let scaled = |value: Value<'c, 'c>, s: i64| -> Result<Value<'c, 'c>, PassError<'c>> {
            if s == 1 {
                Ok(value)
            } else {
                let s = self.constant(s)?;
                self.binary("arith.muli", value, s)
            }
        };
        let a = scaled(base, scale)?;
        let b = scaled(offset, offset_scale)?;
        self.binary("arith.addi", a, b)
    }
}

/// A window op's geometry, read once: strides, dilations, its filter (or
/// pooling window), init and result type.
struct Geometry<'c> {
    strides: [i64; 2],
    dilations: [i64; 2],
    filter: Value<'c, 'c>,
    init: Value<'c, 'c>,
    result_type: Type<'c>,
}

impl<'c> Geometry<'c> {
    fn of(op: OperationRef<'c, 'c>) -> Result<Self, PassError<'c>> {
        let location = op.location();
        Ok(Self {
            strides: pair(op, "strides").ok_or_else(|| PassError::at(location, "bad strides"))?,
            dilations: pair(op, "dilations")
                .ok_or_else(|| PassError::at(location, "bad dilations"))?,
            filter: operand_at(op, 1)?,
            init: operand_at(op, 2)?,
            result_type: op
                .result(0)
                .map_err(|e| PassError::at(location, e.to_string()))?
                .r#type(),
        })
    }
}

/// The element of `plan`'s input one window position reads: its
/// coordinates in the unpadded source (`window_position(axis)` gives the
/// output coordinate and the tap along H, then W), clamped into it where
/// a pad is folded, the load (or the producer recomputed there) and the
/// pad-value select.
fn input_element<'c>(
    b: &Builder<'c>,
    plan: &Plan<'c>,
    geometry: &Geometry<'c>,
    (n, c): (Value<'c, 'c>, Value<'c, 'c>),
    window_position: &dyn Fn(usize) -> Result<(Value<'c, 'c>, Value<'c, 'c>), PassError<'c>>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = b.location;
    let source = StaticTensor::ranked(plan.source.r#type())
        .ok_or_else(|| PassError::at(location, "dynamically shaped input"))?;
    let (height, width) = (source.shape[1], source.shape[2]);
    let (low, high) = match &plan.pad {
        Some((_, p)) => (p.low, p.high),
        None => ([0, 0], [0, 0]),
    };
    let mut in_bounds: Option<Value> = None;
    let mut spatial = Vec::new();
    for (axis, size) in [height, width].into_iter().enumerate() {
        let (o, k) = window_position(axis)?;
        let mut coordinate = b.affine(o, geometry.strides[axis], k, geometry.dilations[axis])?;
        if low[axis] != 0 {
            let shift = b.constant(low[axis])?;
            coordinate = b.binary("arith.subi", coordinate, shift)?;
        }
        if low[axis] != 0 || high[axis] != 0 {
            coordinate = b.clamp_into(coordinate, size, &mut in_bounds)?;
        }
        spatial.push(coordinate);
    }
    let coordinates = [n, spatial[0], spatial[1], c];
    let extract = |tensor: Value<'c, 'c>, indices: &[Value<'c, 'c>]| b.extract(tensor, indices);
    let element = match &plan.producer {
        None => extract(plan.source, &coordinates)?,
        Some(producer) => inline_producer(b, producer.op, &coordinates, &extract)?,
    };
    Ok(match (&plan.pad, in_bounds) {
        (Some((_, padding)), Some(condition)) => b.select(condition, element, padding.value)?,
        _ => element,
    })
}

/// Builds the replacement `tcc.conv` in front of `plan.op` and returns its
/// result.
pub fn rewrite<'c>(context: &'c Context, plan: &Plan<'c>) -> Result<Value<'c, 'c>, PassError<'c>> {
    let op = plan.op;
    let location = op.location();
    let window = plan.window;
    let geometry = Geometry::of(op)?;
    // f32 throughout, or an int8 convolution: i8 loads and filter, an i32
    // accumulator (the products sign-extended, as the named op does).
    let (region, b) = window_body(context, location, &geometry)?;
    // Coordinates of the input element in the unpadded source.
    let n = b.index(window.n)?;
    let c = b.index(window.c)?;
    let a = input_element(&b, plan, &geometry, (n, c), &|axis| {
        let (out_dim, k_dim) = [(window.oh, window.kh), (window.ow, window.kw)][axis];
        Ok((b.index(out_dim)?, b.index(k_dim)?))
    })?;
    finish_window_op(context, &b, op, window, &geometry, region, a)
}

/// The region of a rewritten window op and a builder at the end of its
/// block (arguments: the filter element, the accumulator).
fn window_body<'c>(
    context: &'c Context,
    location: Location<'c>,
    geometry: &Geometry<'c>,
) -> Result<(Region<'c>, Builder<'c>), PassError<'c>> {
    let element_of = |value: Value<'c, 'c>| {
        StaticTensor::ranked(value.r#type())
            .map(|t| t.element)
            .ok_or_else(|| PassError::at(location, "dynamically shaped operand"))
    };
    let (filter_type, acc_type) = (element_of(geometry.filter)?, element_of(geometry.init)?);
    let region = Region::new();
    let block = region.append_block(Block::new(&[(filter_type, location), (acc_type, location)]));
    let block = unsafe { BlockRef::from_raw(block.to_raw()) };
    Ok((
        region,
        Builder {
            context,
            location,
            block,
        },
    ))
}

/// Combines the input element `a` into the accumulator as `window` does,
/// yields it, and inserts the `tcc.conv` of `region` in front of `op`
/// (with `geometry`'s strides, dilations, filter and init); returns its
/// result.
fn finish_window_op<'c>(
    context: &'c Context,
    b: &Builder<'c>,
    op: OperationRef<'c, 'c>,
    window: &Window,
    geometry: &Geometry<'c>,
    region: Region<'c>,
    a: Value<'c, 'c>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = b.location;
    let err = |e: melior::Error| PassError::at(location, e.to_string());
    let parent = op
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let block = b.block;
    let w: Value = block.argument(0).map_err(err)?.into();
    let acc: Value = block.argument(1).map_err(err)?.into();
    let acc_type = acc.r#type();
    let integer = !StaticTensor::ranked(geometry.init.r#type()).is_some_and(|t| t.element.is_f32());
    let combined = match window.combine {
        Combine::MulAdd if integer => {
            let widen = |value: Value<'c, 'c>| {
                b.push(
                    OperationBuilder::new("arith.extsi", location)
                        .add_operands(&[value])
                        .add_results(&[acc_type]),
                    "arith.extsi",
                )
            };
            let product = b.binary("arith.muli", widen(a)?, widen(w)?)?;
            b.binary("arith.addi", acc, product)?
        }
        Combine::MulAdd => {
            let product = b.binary("arith.mulf", a, w)?;
            b.binary("arith.addf", acc, product)?
        }
        Combine::Add => b.binary("arith.addf", acc, a)?,
        Combine::Max => b.binary("arith.maximumf", acc, a)?,
    };
    block.append_operation(
        OperationBuilder::new("linalg.yield", location)
            .add_operands(&[combined])
            .build()
            .map_err(err)?,
    );

    // Indexing maps: the filter (or window) and the output.
    let rank = window.parallel + window.reduction;
    let output_dims: Vec<usize> = (0..window.parallel).collect();
    let maps = [
        projection_map_attribute(context, rank, window.filter),
        projection_map_attribute(context, rank, &output_dims),
    ];
    let iterators: Vec<IteratorType> = (0..rank)
        .map(|d| {
            if d < window.parallel {
                IteratorType::Parallel
            } else {
                IteratorType::Reduction
            }
        })
        .collect();
    let kind = WindowKind::from_name(window.name)
        .ok_or_else(|| PassError::at(location, format!("unknown window op {}", window.name)))?;
    let ([sh, sw], [dh, dw]) = (geometry.strides, geometry.dilations);
    let window_attribute = ConvWindow {
        kind,
        strides: [sh, sw],
        dilations: [dh, dw],
    }
    .to_attribute(context)
    .ok_or_else(|| {
        PassError::at(
            location,
            format!("invalid strides {sh}x{sw} or dilations {dh}x{dw}"),
        )
    })?;
    let mut attributes = vec![
        (
            Identifier::new(context, crate::ir::conv::WINDOW),
            window_attribute,
        ),
        (
            Identifier::new(context, "indexing_maps"),
            ArrayAttribute::new(context, &maps).into(),
        ),
        (
            Identifier::new(context, "iterator_types"),
            iterator_types_attribute(context, &iterators),
        ),
    ];
    // Keep the discardable attributes (the kernel kind, if already set).
    for name in [attr_names::KIND] {
        if let Ok(value) = op.attribute(name) {
            attributes.push((Identifier::new(context, name), value));
        }
    }
    let conv = OperationBuilder::new(crate::ir::conv::OP, location)
        .add_operands(&[geometry.filter, geometry.init])
        .add_results(&[geometry.result_type])
        .add_attributes(&attributes)
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build tcc.conv: {e}")))?;
    let conv = parent.insert_operation_before(op, conv);
    Ok(conv.result(0).map_err(err)?.into())
}

/// Builds, in front of `plan.op` (a 2-D convolution, see
/// [`super::unfolds`]), its input as an explicit image-to-columns tensor
/// and a 1x1 convolution over it, and returns the convolution's result.
///
/// The columns are `[N, OH, OW, Kp]`: column `k < K = KH x KW x C` of
/// output pixel `(n, oh, ow)` is the input element tap `k / C` of its
/// window reads at channel `k % C` (computed as the folded loads compute
/// it: the pad checked, the producer recomputed), the columns up to `Kp`
/// (`K` rounded up to `k_multiple`) zero. The filter becomes the constant
/// `[1, 1, Kp, F]` (its HWCF rows in the same order, then zero rows). A
/// convolution of few channels (a ViT's patch embedding) is
/// then a product of two plain matrices, which the tensor-core GEMMs
/// read whole (`TargetConfig::conv_unfold_channels` says why); the copy
/// costs one pass over the columns.
pub fn rewrite_as_columns<'c>(
    context: &'c Context,
    plan: &Plan<'c>,
    k_multiple: i64,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let op = plan.op;
    let location = op.location();
    let err = |e: melior::Error| PassError::at(location, e.to_string());
    let fail =
        |what: &str| PassError::at(location, format!("cannot unfold the convolution: {what}"));
    let window = plan.window;
    let geometry = Geometry::of(op)?;
    let weights =
        ConstTensor::of_value(geometry.filter).ok_or_else(|| fail("filter not constant"))?;
    let [kh, kw, c, f] = weights.shape[..] else {
        return Err(fail("filter not HWCF"));
    };
    let output =
        StaticTensor::of(geometry.result_type).ok_or_else(|| fail("dynamically shaped output"))?;
    let [n, oh, ow, _] = output.shape[..] else {
        return Err(fail("output not NHWC"));
    };
    let k = kh * kw * c;
    let padded_k = (k + k_multiple - 1) / k_multiple * k_multiple;
    let f32_type = Type::float32(context);
    let parent = op
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;

    // The columns: an all-parallel generic over [N, OH, OW, Kp].
    let columns_type: Type = RankedTensorType::new(
        &[n as u64, oh as u64, ow as u64, padded_k as u64],
        f32_type,
        None,
    )
    .into();
    let empty = parent.insert_operation_before(
        op,
        OperationBuilder::new("tensor.empty", location)
            .add_results(&[columns_type])
            .build()
            .map_err(err)?,
    );
    let empty: Value = empty.result(0).map_err(err)?.into();
    let region = Region::new();
    let block = region.append_block(Block::new(&[(f32_type, location)]));
    let b = Builder {
        context,
        location,
        block: unsafe { BlockRef::from_raw(block.to_raw()) },
    };
    let pixel = [b.index(0)?, b.index(1)?, b.index(2)?];
    let column = b.index(3)?;
    // Columns past K read tap K - 1 (in bounds) and select zero.
    let last = b.constant(k - 1)?;
    let clamped = b.binary("arith.minsi", column, last)?;
    let channels = b.constant(c)?;
    let channel = b.binary("arith.remsi", clamped, channels)?;
    let tap = b.binary("arith.divsi", clamped, channels)?;
    let row_taps = b.constant(kw)?;
    let tap_y = b.binary("arith.divsi", tap, row_taps)?;
    let tap_x = b.binary("arith.remsi", tap, row_taps)?;
    let mut a = input_element(&b, plan, &geometry, (pixel[0], channel), &|axis| {
        Ok([(pixel[1], tap_y), (pixel[2], tap_x)][axis])
    })?;
    if padded_k > k {
        let limit = b.constant(k)?;
        let inside = b.cmpi(2, column, limit)?;
        let zero = b.float_constant(0.0)?;
        a = b.select(inside, a, zero)?;
    }
    block.append_operation(
        OperationBuilder::new("linalg.yield", location)
            .add_operands(&[a])
            .build()
            .map_err(err)?,
    );
    let columns = parent.insert_operation_before(
        op,
        OperationBuilder::new("linalg.generic", location)
            .add_operands(&[empty])
            .add_results(&[columns_type])
            .add_attributes(&[
                (
                    Identifier::new(context, "indexing_maps"),
                    ArrayAttribute::new(context, &[identity_map_attribute(context, 4)]).into(),
                ),
                (
                    Identifier::new(context, "iterator_types"),
                    iterator_types_attribute(context, &[IteratorType::Parallel; 4]),
                ),
                (
                    Identifier::new(context, "operandSegmentSizes"),
                    DenseI32ArrayAttribute::new(context, &[0, 1]).into(),
                ),
            ])
            .add_regions([region])
            .build()
            .map_err(|e| fail(&format!("cannot build the columns: {e}")))?,
    );
    let columns: Value = columns.result(0).map_err(err)?.into();

    // The filter as [1, 1, Kp, F], beside the old constant.
    let rows = weights.reshape(&[k, f]).map_err(|e| fail(&e))?;
    let rows = if padded_k > k {
        let zeros = ConstTensor::from_f32s(
            vec![padded_k - k, f],
            &vec![0.0; ((padded_k - k) * f) as usize],
        );
        ConstTensor::concat(&[rows, zeros], 0).map_err(|e| fail(&e))?
    } else {
        rows
    };
    let filter_values = rows.reshape(&[1, 1, padded_k, f]).map_err(|e| fail(&e))?;
    let filter_type: Type =
        RankedTensorType::new(&[1, 1, padded_k as u64, f as u64], f32_type, None).into();
    let attribute = filter_values
        .to_attribute(filter_type)
        .map_err(|e| fail(&e))?;
    let filter = parent.insert_operation_before(
        op,
        OperationBuilder::new("arith.constant", location)
            .add_attributes(&[(Identifier::new(context, "value"), attribute)])
            .add_results(&[filter_type])
            .build()
            .map_err(err)?,
    );
    let pointwise = Geometry {
        strides: [1, 1],
        dilations: [1, 1],
        filter: filter.result(0).map_err(err)?.into(),
        init: geometry.init,
        result_type: geometry.result_type,
    };

    // The 1x1 convolution reading the columns as they are (the body of
    // [`rewrite`] for a plan that folds nothing).
    let plain = Plan {
        window,
        op,
        pad: None,
        producer: None,
        source: columns,
        collapse: None,
    };
    let (region, b) = window_body(context, location, &pointwise)?;
    let n_index = b.index(window.n)?;
    let c_index = b.index(window.c)?;
    let a = input_element(&b, &plain, &pointwise, (n_index, c_index), &|axis| {
        let (out_dim, k_dim) = [(window.oh, window.kh), (window.ow, window.kw)][axis];
        Ok((b.index(out_dim)?, b.index(k_dim)?))
    })?;
    finish_window_op(context, &b, op, window, &pointwise, region, a)
}

/// Loads the producer's inputs at the input coordinates and clones its
/// body after them; returns the value it yields.
pub(crate) fn inline_producer<'c>(
    b: &Builder<'c>,
    producer: OperationRef<'c, 'c>,
    coordinates: &[Value<'c, 'c>],
    extract: &dyn Fn(Value<'c, 'c>, &[Value<'c, 'c>]) -> Result<Value<'c, 'c>, PassError<'c>>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = b.location;
    let err = |e: melior::Error| PassError::at(location, e.to_string());
    if let Some(pool) = pool_parts(producer)
        && let Ok(coordinates) = <&[Value<'c, 'c>; 4]>::try_from(coordinates)
    {
        return inline_pool(b, producer, &pool, coordinates);
    }
    if op_name(&producer) == "linalg.transpose" {
        // out[c] = in[c'] with c'[permutation[j]] = c[j].
        let permutation = transpose_permutation(producer)
            .ok_or_else(|| PassError::at(location, "transpose without a permutation"))?;
        let mut indices = coordinates.to_vec();
        for (j, &p) in permutation.iter().enumerate() {
            indices[p] = coordinates[j];
        }
        return extract(operand_at(producer, 0)?, &indices);
    }
    let maps =
        ArrayAttribute::try_from(producer.attribute("indexing_maps").map_err(err)?).map_err(err)?;
    let body = producer
        .region(0)
        .map_err(err)?
        .first_block()
        .ok_or_else(|| PassError::at(location, "producer without a body"))?;
    // (raw value, replacement) pairs.
    let mut mapping: Vec<(mlir_sys::MlirValue, Value<'c, 'c>)> = Vec::new();
    for index in 0..producer.operand_count() - 1 {
        let operand = operand_at(producer, index)?;
        let results = map_results(maps.element(index).map_err(err)?)
            .ok_or_else(|| PassError::at(location, "producer map is not a broadcast"))?;
        let mut indices = Vec::new();
        for result in results {
            indices.push(match result {
                Some(dim) => coordinates[dim],
                None => b.constant(0)?,
            });
        }
        let value = extract(operand, &indices)?;
        let argument: Value = body.argument(index).map_err(err)?.into();
        mapping.push((argument.to_raw(), value));
    }
    let mut next = body.first_operation();
    while let Some(inner) = next {
        next = inner.next_in_block();
        if op_name(&inner) == "linalg.yield" {
            let yielded = operand_at(inner, 0)?;
            return mapping
                .iter()
                .find(|(raw, _)| raw.ptr == yielded.to_raw().ptr)
                .map(|(_, v)| *v)
                .ok_or_else(|| PassError::at(location, "producer yields a value from outside"));
        }
        let clone = clone_remapped(b, inner, &mapping);
        for position in 0..inner.result_count() {
            let old: Value = inner.result(position).map_err(err)?.into();
            let new: Value = clone.result(position).map_err(err)?.into();
            mapping.push((old.to_raw(), unsafe { Value::from_raw(new.to_raw()) }));
        }
    }
    Err(PassError::at(
        location,
        "producer body without linalg.yield",
    ))
}

/// Appends a clone of `op` to the builder's block with its operands
/// replaced through `mapping` (raw value, replacement).
pub(crate) fn clone_remapped<'c>(
    b: &Builder<'c>,
    op: OperationRef<'c, 'c>,
    mapping: &[(mlir_sys::MlirValue, Value<'c, 'c>)],
) -> OperationRef<'c, 'c> {
    let clone = unsafe { mlir_sys::mlirOperationClone(op.to_raw()) };
    for position in 0..unsafe { mlir_sys::mlirOperationGetNumOperands(clone) } {
        let operand = unsafe { mlir_sys::mlirOperationGetOperand(clone, position) };
        if let Some((_, replacement)) = mapping.iter().find(|(raw, _)| raw.ptr == operand.ptr) {
            unsafe { mlir_sys::mlirOperationSetOperand(clone, position, replacement.to_raw()) };
        }
    }
    let clone = b
        .block
        .append_operation(unsafe { melior::ir::operation::Operation::from_raw(clone) });
    unsafe { OperationRef::from_raw(clone.to_raw()) }
}
