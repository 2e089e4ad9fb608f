//! Folding a convolution's or pooling's input preparation into its loads.
//!
//! `tensor.pad` in front of a window op materializes a padded copy (a fill
//! kernel and a copy kernel at run time); an elementwise producer of the
//! input (BatchNorm + ReLU before a convolution) is a kernel of its own, and
//! so is a transpose (an ONNX model's NCHW input before its first
//! convolution: the loads read it at permuted coordinates instead).
//! [`rewrite`] replaces the window op by a `linalg.generic` over the same
//! iteration space whose input is not an operand: the body computes the
//! input coordinates from `linalg.index`, reads the *unpadded* source with
//! `tensor.extract` at coordinates clamped into bounds (so no back end ever
//! reads out of bounds), applies the producer's body to the element, and
//! selects the pad value where the coordinates fall in the padding (the pad
//! is of the producer's output, so padded positions get the pad value, not
//! the producer of it). The generic verifies and bufferizes like any other
//! (upstream's gather lowering has the same shape), and every back end that
//! translates loop nests runs it correctly; the OpenCL C writer also
//! recognizes the 2-D convolution form (`tcc.conv` attribute) for the
//! implicit-GEMM template.
//!
//! A max or sum pooling whose only user is a 1x1 convolution (Inception's
//! pool projections, SqueezeNet's squeeze convolutions after each max
//! pool) is folded the same way: the convolution's loads compute the
//! pooled element themselves, the pooling window unrolled (at most
//! [`MAX_UNROLLED_WINDOW`] cells), so the pooled tensor is never written.
//! A 1x1 convolution reads each input element once per output-channel
//! tile, so the window is recomputed only that often, against a kernel
//! launch and a round trip of the pooled tensor through memory.
//!
//! The body of a rewritten op is always
//! `(coordinates, bounds check, loads, producer ops, select) ; combine(acc,
//! a[, w]) ; yield`, with the filter (or pooling window) as the only input.

use melior::Context;
use melior::ir::attribute::AttributeLike;
use melior::ir::attribute::{
    ArrayAttribute, DenseI32ArrayAttribute, DenseI64ArrayAttribute, IntegerAttribute,
    StringAttribute,
};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::{IntegerType, Type};
use melior::ir::{
    Attribute, Block, BlockLike, BlockRef, Identifier, Location, Region, RegionLike, TypeLike,
    Value, ValueLike,
};

use crate::config::PoolFolding;
use crate::ir::affine::{
    IteratorType, iterator_types, iterator_types_attribute, projection_map_attribute,
};
use crate::ir::dense::int_elements;
use crate::ir::operand::operand_at;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, dialect_of, op_name, use_count, users};
use crate::passes::PassError;

/// The attribute naming the window op a rewritten generic computes
/// (`"conv_2d_nhwc_hwcf"`, `"depthwise_conv_2d_nhwc_hwc"`, ...).
pub const CONV_ATTR: &str = "tcc.conv";

/// The most producer body ops (arith only) recomputed per input load: a
/// 3x3 stride-1 window reads each input element about 9 times, so a cheap
/// producer (a per-channel affine + ReLU is 3-4 ops) costs less than the
/// kernel launch and the round trip of its output through memory.
pub const MAX_PRODUCER_OPS: usize = 8;

/// The most pooling-window cells unrolled into a consumer's loads (3x3).
pub const MAX_UNROLLED_WINDOW: i64 = 9;

/// How the combiner folds an input element into the accumulator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Combine {
    /// `acc + a * w` (convolutions).
    MulAdd,
    /// `acc + a` (sum pooling).
    Add,
    /// `max(acc, a)` (max pooling).
    Max,
}

/// The window ops this rewrite knows, by their dimension layout.
struct Window {
    name: &'static str,
    /// Iteration dims; parallel ones first.
    parallel: usize,
    reduction: usize,
    /// Positions of n, oh, ow, c, kh, kw in the iteration space.
    n: usize,
    oh: usize,
    ow: usize,
    c: usize,
    kh: usize,
    kw: usize,
    /// The filter/window operand's map results (dim positions).
    filter: &'static [usize],
    combine: Combine,
}

const WINDOWS: &[Window] = &[
    // (n, oh, ow, f, kh, kw, c)
    Window {
        name: "conv_2d_nhwc_hwcf",
        parallel: 4,
        reduction: 3,
        n: 0,
        oh: 1,
        ow: 2,
        c: 6,
        kh: 4,
        kw: 5,
        filter: &[4, 5, 6, 3],
        combine: Combine::MulAdd,
    },
    // (n, oh, ow, c, m, kh, kw)
    Window {
        name: "depthwise_conv_2d_nhwc_hwcm",
        parallel: 5,
        reduction: 2,
        n: 0,
        oh: 1,
        ow: 2,
        c: 3,
        kh: 5,
        kw: 6,
        filter: &[5, 6, 3, 4],
        combine: Combine::MulAdd,
    },
    // (n, oh, ow, c, kh, kw)
    Window {
        name: "depthwise_conv_2d_nhwc_hwc",
        parallel: 4,
        reduction: 2,
        n: 0,
        oh: 1,
        ow: 2,
        c: 3,
        kh: 4,
        kw: 5,
        filter: &[4, 5, 3],
        combine: Combine::MulAdd,
    },
    Window {
        name: "pooling_nhwc_max",
        parallel: 4,
        reduction: 2,
        n: 0,
        oh: 1,
        ow: 2,
        c: 3,
        kh: 4,
        kw: 5,
        filter: &[4, 5],
        combine: Combine::Max,
    },
    Window {
        name: "pooling_nhwc_sum",
        parallel: 4,
        reduction: 2,
        n: 0,
        oh: 1,
        ow: 2,
        c: 3,
        kh: 4,
        kw: 5,
        filter: &[4, 5],
        combine: Combine::Add,
    },
];

/// The constant padding of a `tensor.pad` on the two spatial dims of an
/// NHWC tensor: `[top, left]`, `[bottom, right]` and the pad value.
struct Padding<'c> {
    low: [i64; 2],
    high: [i64; 2],
    value: Value<'c, 'c>,
}

/// A fusible elementwise producer of the (unpadded) input.
struct Producer<'c> {
    op: OperationRef<'c, 'c>,
}

/// What [`plan`] found in front of a window op.
pub struct Plan<'c> {
    window: &'static Window,
    /// The window op rewritten.
    pub op: OperationRef<'c, 'c>,
    pad: Option<(OperationRef<'c, 'c>, Padding<'c>)>,
    producer: Option<Producer<'c>>,
    /// The unpadded tensor the loads read (the producer's inputs are read
    /// instead where there is a producer).
    source: Value<'c, 'c>,
}

impl<'c> Plan<'c> {
    /// The `tensor.pad` folded away, if any (erased once unused).
    pub fn pad_op(&self) -> Option<OperationRef<'c, 'c>> {
        self.pad.as_ref().map(|(op, _)| *op)
    }

    /// The producer folded away, if any (erased once unused).
    pub fn producer_op(&self) -> Option<OperationRef<'c, 'c>> {
        self.producer.as_ref().map(|p| p.op)
    }
}

fn short_name(op: &OperationRef) -> String {
    let name = op_name(op);
    name.strip_prefix("linalg.").unwrap_or(&name).to_string()
}

/// Reads a named window op's `strides`/`dilations` (`dense<2>` or
/// `dense<[2, 1]>`, tensor or vector typed); absent means 1.
fn pair(op: OperationRef, name: &str) -> Option<[i64; 2]> {
    let Ok(attribute) = op.attribute(name) else {
        return Some([1, 1]);
    };
    match int_elements(attribute)?.as_slice() {
        [v] => Some([*v, *v]),
        [a, b] => Some([*a, *b]),
        _ => None,
    }
}

fn dense_i64(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    let attribute = DenseI64ArrayAttribute::try_from(op.attribute(name).ok()?).ok()?;
    Some(
        (0..attribute.len())
            .filter_map(|i| attribute.element(i).ok())
            .collect(),
    )
}

/// The padding of `pad` if it is static, only on H and W of a rank-4
/// tensor, with a pad value that is a float constant defined outside it.
fn padding<'c>(pad: OperationRef<'c, 'c>) -> Option<Padding<'c>> {
    if op_name(&pad) != "tensor.pad" || pad.operand_count() != 1 {
        return None; // dynamic low/high operands
    }
    let low = dense_i64(pad, "static_low")?;
    let high = dense_i64(pad, "static_high")?;
    if low.len() != 4
        || high.len() != 4
        || low[0] != 0
        || low[3] != 0
        || high[0] != 0
        || high[3] != 0
    {
        return None;
    }
    if low.iter().chain(high.iter()).any(|p| *p < 0) {
        return None;
    }
    let block = pad.region(0).ok()?.first_block()?;
    let terminator = block.terminator()?;
    let value = terminator.operand(0).ok()?;
    let constant = defining_op(value)?;
    if op_name(&constant) != "arith.constant"
        || constant.block().is_some_and(|b| b == block)
        || !value.r#type().is_f32()
    {
        return None;
    }
    Some(Padding {
        low: [low[1], low[2]],
        high: [high[1], high[2]],
        value,
    })
}

/// Whether `op` is an elementwise generic cheap enough to recompute in the
/// window op's loads: all-parallel, one identity-mapped f32 output whose
/// value is used once, inputs indexed by dims or broadcast (constant 0),
/// at most [`MAX_PRODUCER_OPS`] arith ops and no `linalg.index`, and not
/// the epilogue of a matmul, convolution or reduction.
pub(crate) fn fusible_producer(op: OperationRef) -> bool {
    if op_name(&op) == "linalg.transpose" {
        return fusible_transpose(op);
    }
    if op_name(&op) != "linalg.generic" || op.result_count() != 1 {
        return false;
    }
    let Some(iterators) = iterator_types(op) else {
        return false;
    };
    if iterators.contains(&IteratorType::Reduction) {
        return false;
    }
    let Some(result) = op.result(0).ok() else {
        return false;
    };
    let Some(tensor) = StaticTensor::of(result.r#type()) else {
        return false;
    };
    if !tensor.element.is_f32() || tensor.rank() != 4 || use_count(result.into()) != 1 {
        return false;
    }
    let Some(maps) = op
        .attribute("indexing_maps")
        .ok()
        .and_then(|a| ArrayAttribute::try_from(a).ok())
    else {
        return false;
    };
    let count = op.operand_count();
    for index in 0..count {
        let Ok(map) = maps.element(index) else {
            return false;
        };
        let Some(results) = map_results(map) else {
            return false;
        };
        if index == count - 1 {
            if results != [Some(0), Some(1), Some(2), Some(3)] {
                return false;
            }
        } else if !op
            .operand(index)
            .is_ok_and(|v| StaticTensor::of(v.r#type()).is_some())
        {
            return false;
        }
    }
    let Some(block) = op.region(0).ok().and_then(|r| r.first_block()) else {
        return false;
    };
    // The output's block argument must not be read.
    if block
        .argument(count - 1)
        .is_ok_and(|a| use_count(a.into()) > 0)
    {
        return false;
    }
    // The only user of a matmul's, convolution's or reduction's result is
    // that kernel's epilogue (computed once per element there): leave it.
    for index in 0..count - 1 {
        if let Ok(operand) = op.operand(index)
            && use_count(operand) == 1
            && let Some(definer) = defining_op(operand)
            && dialect_of(&op_name(&definer)) == "linalg"
            && crate::passes::kind_of(definer) != crate::config::KernelKind::Elementwise
        {
            return false;
        }
    }
    let mut ops = 0;
    let mut next = block.first_operation();
    while let Some(inner) = next {
        next = inner.next_in_block();
        let name = op_name(&inner);
        if name == "linalg.yield" {
            continue;
        }
        if dialect_of(&name) != "arith" || inner.region_count() > 0 {
            return false;
        }
        ops += 1;
    }
    ops <= MAX_PRODUCER_OPS
}

/// The attribute recording a rewritten window op's strides (the generic
/// has them only in its body's coordinates).
pub const STRIDES_ATTR: &str = "tcc.strides";

/// A window op's strides: a named op's `strides`, a rewritten generic's
/// [`STRIDES_ATTR`].
fn window_strides(op: OperationRef) -> Option<[i64; 2]> {
    if op_name(&op) == "linalg.generic" {
        let values = dense_i64(op, STRIDES_ATTR)?;
        return <[i64; 2]>::try_from(values).ok();
    }
    pair(op, "strides")
}

/// Whether `consumer` is a `linalg.conv_2d_nhwc_hwcf` with a 1x1 filter.
fn is_pointwise_conv(consumer: OperationRef) -> bool {
    op_name(&consumer) == "linalg.conv_2d_nhwc_hwcf"
        && consumer
            .operand(1)
            .ok()
            .and_then(|f| StaticTensor::of(f.r#type()))
            .is_some_and(|f| f.rank() == 4 && f.shape[0] == 1 && f.shape[1] == 1)
}

/// The pieces of a pooling generic (`tcc.conv = "pooling_nhwc_max"` or
/// `"pooling_nhwc_sum"`, after its own padding was folded) that unrolling
/// its window into a consumer's loads needs.
struct PoolParts<'c> {
    window: &'static Window,
    /// Window height and width.
    size: [i64; 2],
    /// The accumulator's start (the scalar of the fill initialising it).
    init: Value<'c, 'c>,
    /// The body's final `combine(acc, a)`.
    combine: OperationRef<'c, 'c>,
    /// `a`: the window element combined.
    element: Value<'c, 'c>,
}

/// Reads a pooling generic apart; `None` unless its window has at most
/// [`MAX_UNROLLED_WINDOW`] cells, its init is a fill of a scalar, its body
/// holds only arith ops, `linalg.index` and `tensor.extract` before a
/// final `max`/`add` of the accumulator, and it reads neither the window
/// operand nor the accumulator elsewhere.
fn pool_parts<'c>(op: OperationRef<'c, 'c>) -> Option<PoolParts<'c>> {
    if op_name(&op) != "linalg.generic" || op.operand_count() != 2 || op.result_count() != 1 {
        return None;
    }
    let name = op
        .attribute(CONV_ATTR)
        .ok()
        .and_then(crate::ir::util::string_value)?;
    let window = WINDOWS
        .iter()
        .find(|w| w.name == name && w.combine != Combine::MulAdd)?;
    let size = StaticTensor::of(op.operand(0).ok()?.r#type())?;
    if size.rank() != 2 || size.shape.iter().product::<i64>() > MAX_UNROLLED_WINDOW {
        return None;
    }
    let fill = defining_op(op.operand(1).ok()?)?;
    if op_name(&fill) != "linalg.fill" {
        return None;
    }
    let init = fill.operand(0).ok()?;
    if !init.r#type().is_f32() {
        return None;
    }
    let body = op.region(0).ok()?.first_block()?;
    let window_element: Value = body.argument(0).ok()?.into();
    let acc: Value = body.argument(1).ok()?.into();
    if use_count(window_element) != 0 || use_count(acc) != 1 {
        return None;
    }
    let terminator = body.terminator()?;
    let combine = defining_op(terminator.operand(0).ok()?)?;
    if !matches!(
        op_name(&combine).as_str(),
        "arith.maximumf" | "arith.maxnumf" | "arith.addf"
    ) || combine.operand_count() != 2
    {
        return None;
    }
    let operands: Vec<Value> = combine.operands().collect();
    let element = match operands.as_slice() {
        [a, b] if *a == acc => *b,
        [a, b] if *b == acc => *a,
        _ => return None,
    };
    let mut next = body.first_operation();
    while let Some(inner) = next {
        next = inner.next_in_block();
        let inner_name = op_name(&inner);
        if inner.region_count() > 0
            || !(dialect_of(&inner_name) == "arith"
                || matches!(
                    inner_name.as_str(),
                    "linalg.index" | "tensor.extract" | "linalg.yield"
                ))
        {
            return None;
        }
    }
    Some(PoolParts {
        window,
        size: [size.shape[0], size.shape[1]],
        init,
        combine,
        element: unsafe { Value::from_raw(element.to_raw()) },
    })
}

/// Whether `op`, a pooling (named, or a generic after its padding was
/// folded), can be unrolled into `consumer`'s loads: it feeds only a 1x1
/// convolution and its result is rank-4 f32.
fn fusible_pool(op: OperationRef, consumer: OperationRef, pools: PoolFolding) -> bool {
    is_pointwise_conv(consumer)
        && window_strides(op).is_some_and(|s| pools.takes(s))
        && op.result(0).is_ok_and(|r| {
            use_count(r.into()) == 1
                && StaticTensor::of(r.r#type()).is_some_and(|t| t.element.is_f32() && t.rank() == 4)
        })
        && pool_parts(op).is_some()
}

/// Whether `op` is a named max or sum pooling whose only user is a 1x1
/// convolution: rewriting it into a generic (with nothing to fold) lets
/// the convolution's plan unroll it.
fn pool_feeding_pointwise_conv(op: OperationRef, pools: PoolFolding) -> bool {
    pair(op, "strides").is_some_and(|s| pools.takes(s))
        && matches!(
            op_name(&op).as_str(),
            "linalg.pooling_nhwc_max" | "linalg.pooling_nhwc_sum"
        )
        && op.result(0).is_ok_and(|r| {
            let r: Value = r.into();
            use_count(r) == 1 && users(r).into_iter().all(is_pointwise_conv)
        })
}

/// Whether `op` is a `linalg.transpose` of a rank-4 f32 tensor used only
/// by the window op: its loads read the transpose's input at permuted
/// coordinates instead (a model's NCHW input before its first
/// convolution), which is free.
fn fusible_transpose(op: OperationRef) -> bool {
    op.result_count() == 1
        && op.result(0).ok().is_some_and(|result| {
            use_count(result.into()) == 1
                && StaticTensor::of(result.r#type())
                    .is_some_and(|t| t.element.is_f32() && t.rank() == 4)
        })
        && transpose_permutation(op).is_some_and(|p| p.len() == 4)
}

/// `linalg.transpose`'s `permutation`: output dim `j` is input dim `p[j]`.
fn transpose_permutation(op: OperationRef) -> Option<Vec<usize>> {
    let attribute = op.attribute("permutation").ok()?;
    let array = melior::ir::attribute::DenseI64ArrayAttribute::try_from(attribute).ok()?;
    (0..array.len())
        .map(|i| array.element(i).ok().and_then(|v| usize::try_from(v).ok()))
        .collect()
}

/// The results of an affine map attribute that are dims (`Some(position)`)
/// or the constant 0 (`None`); `None` overall for anything else.
fn map_results(map: Attribute) -> Option<Vec<Option<usize>>> {
    if !unsafe { mlir_sys::mlirAttributeIsAAffineMap(map.to_raw()) } {
        return None;
    }
    let map = unsafe { mlir_sys::mlirAffineMapAttrGetValue(map.to_raw()) };
    let count = unsafe { mlir_sys::mlirAffineMapGetNumResults(map) };
    (0..count)
        .map(|i| unsafe {
            let expr = mlir_sys::mlirAffineMapGetResult(map, i);
            if mlir_sys::mlirAffineExprIsADim(expr) {
                Some(Some(mlir_sys::mlirAffineDimExprGetPosition(expr) as usize))
            } else if mlir_sys::mlirAffineExprIsAConstant(expr)
                && mlir_sys::mlirAffineConstantExprGetValue(expr) == 0
            {
                Some(None)
            } else {
                None
            }
        })
        .collect()
}

/// What can be folded into `op`'s loads, if anything: a constant pad of
/// its input and/or a cheap elementwise producer used only by it (through
/// the pad, when the pad too has no other user), or with `pools` a pooling
/// feeding only this 1x1 convolution.
pub fn plan<'c>(op: OperationRef<'c, 'c>, pools: PoolFolding) -> Option<Plan<'c>> {
    let name = short_name(&op);
    let window = WINDOWS.iter().find(|w| w.name == name)?;
    if op_name(&op).as_str() != format!("linalg.{name}") || op.result_count() != 1 {
        return None;
    }
    let output = StaticTensor::of(op.result(0).ok()?.r#type())?;
    if !output.element.is_f32() {
        return None;
    }
    pair(op, "strides")?;
    pair(op, "dilations")?;
    let input = op.operand(0).ok()?;
    let mut source = input;
    let mut pad = None;
    if let Some(pad_op) = defining_op(input)
        && let Some(padding) = padding(pad_op)
    {
        source = pad_op.operand(0).ok()?;
        pad = Some((pad_op, padding));
    }
    let only_user = match &pad {
        Some((pad_op, _)) => use_count(pad_op.result(0).ok()?.into()) == 1,
        None => use_count(input) == 1,
    };
    let mut producer = None;
    if only_user
        && let Some(candidate) = defining_op(source)
        && (fusible_producer(candidate) || fusible_pool(candidate, op, pools))
    {
        producer = Some(Producer { op: candidate });
    }
    if pad.is_none() && producer.is_none() && !pool_feeding_pointwise_conv(op, pools) {
        return None;
    }
    let source_type = StaticTensor::of(source.r#type())?;
    if !source_type.element.is_f32() || source_type.rank() != 4 {
        return None;
    }
    Some(Plan {
        window,
        op,
        pad,
        producer,
        source,
    })
}

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

/// Builds the replacement generic in front of `plan.op` and returns its
/// result.
pub fn rewrite<'c>(context: &'c Context, plan: &Plan<'c>) -> Result<Value<'c, 'c>, PassError<'c>> {
    let op = plan.op;
    let location = op.location();
    let window = plan.window;
    let err = |e: melior::Error| PassError::at(location, e.to_string());
    let parent = op
        .block()
        .ok_or_else(|| PassError::at(location, "op outside a block"))?;
    let [sh, sw] = pair(op, "strides").ok_or_else(|| PassError::at(location, "bad strides"))?;
    let [dh, dw] = pair(op, "dilations").ok_or_else(|| PassError::at(location, "bad dilations"))?;
    let filter = operand_at(op, 1)?;
    let init = operand_at(op, 2)?;
    let result_type = op.result(0).map_err(err)?.r#type();
    let source = StaticTensor::of(plan.source.r#type())
        .ok_or_else(|| PassError::at(location, "dynamically shaped input"))?;
    let (height, width) = (source.shape[1], source.shape[2]);

    let f32_type = Type::float32(context);
    let region = Region::new();
    let block = region.append_block(Block::new(&[(f32_type, location), (f32_type, location)]));
    let block = unsafe { BlockRef::from_raw(block.to_raw()) };
    let b = Builder {
        context,
        location,
        block,
    };
    // Coordinates of the input element in the unpadded source.
    let n = b.index(window.n)?;
    let c = b.index(window.c)?;
    let (low, high) = match &plan.pad {
        Some((_, p)) => (p.low, p.high),
        None => ([0, 0], [0, 0]),
    };
    let mut in_bounds: Option<Value> = None;
    let mut spatial = Vec::new();
    for (axis, (out_dim, k_dim, stride, dilation, size)) in [
        (window.oh, window.kh, sh, dh, height),
        (window.ow, window.kw, sw, dw, width),
    ]
    .into_iter()
    .enumerate()
    {
        let o = b.index(out_dim)?;
        let k = b.index(k_dim)?;
        let mut coordinate = b.affine(o, stride, k, dilation)?;
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
        Some(producer) => inline_producer(&b, producer.op, &coordinates, &extract)?,
    };
    let a = match (&plan.pad, in_bounds) {
        (Some((_, padding)), Some(condition)) => b.push(
            OperationBuilder::new("arith.select", location)
                .add_operands(&[condition, element, padding.value])
                .add_results(&[f32_type]),
            "arith.select",
        )?,
        _ => element,
    };
    let w: Value = block.argument(0).map_err(err)?.into();
    let acc: Value = block.argument(1).map_err(err)?.into();
    let combined = match window.combine {
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
    let mut attributes = vec![
        (
            Identifier::new(context, "indexing_maps"),
            ArrayAttribute::new(context, &maps).into(),
        ),
        (
            Identifier::new(context, "iterator_types"),
            iterator_types_attribute(context, &iterators),
        ),
        (
            Identifier::new(context, "operandSegmentSizes"),
            DenseI32ArrayAttribute::new(context, &[1, 1]).into(),
        ),
        (
            Identifier::new(context, CONV_ATTR),
            StringAttribute::new(context, window.name).into(),
        ),
        (
            Identifier::new(context, STRIDES_ATTR),
            DenseI64ArrayAttribute::new(context, &[sh, sw]).into(),
        ),
    ];
    // Keep the discardable attributes (kernel names, if already formed).
    for name in [crate::passes::KERNEL_ATTR, crate::passes::KIND_ATTR] {
        if let Ok(value) = op.attribute(name) {
            attributes.push((Identifier::new(context, name), value));
        }
    }
    let generic = OperationBuilder::new("linalg.generic", location)
        .add_operands(&[filter, init])
        .add_results(&[result_type])
        .add_attributes(&attributes)
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build linalg.generic: {e}")))?;
    let generic = parent.insert_operation_before(op, generic);
    Ok(generic.result(0).map_err(err)?.into())
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

/// Computes the pooled element at `coordinates` (of the pooling's output)
/// by cloning the pooling body once per window cell, with its
/// `linalg.index` ops bound to the coordinates and the cell, and chaining
/// the cells' elements through its combiner from the fill value.
fn inline_pool<'c>(
    b: &Builder<'c>,
    pool: OperationRef<'c, 'c>,
    parts: &PoolParts<'c>,
    coordinates: &[Value<'c, 'c>; 4],
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = b.location;
    let err = |e: melior::Error| PassError::at(location, e.to_string());
    let body = pool
        .region(0)
        .map_err(err)?
        .first_block()
        .ok_or_else(|| PassError::at(location, "pooling without a body"))?;
    let window = parts.window;
    let mut acc = parts.init;
    for kh in 0..parts.size[0] {
        for kw in 0..parts.size[1] {
            let mut mapping: Vec<(mlir_sys::MlirValue, Value<'c, 'c>)> = Vec::new();
            let mut next = body.first_operation();
            while let Some(inner) = next {
                next = inner.next_in_block();
                if inner.to_raw().ptr == parts.combine.to_raw().ptr
                    || op_name(&inner) == "linalg.yield"
                {
                    continue;
                }
                let result: Value = inner.result(0).map_err(err)?.into();
                if op_name(&inner) == "linalg.index" {
                    let dim = inner
                        .attribute("dim")
                        .ok()
                        .and_then(crate::ir::util::integer_value)
                        .and_then(|d| usize::try_from(d).ok())
                        .ok_or_else(|| PassError::at(location, "linalg.index without a dim"))?;
                    let value = match dim {
                        d if d == window.n => coordinates[0],
                        d if d == window.oh => coordinates[1],
                        d if d == window.ow => coordinates[2],
                        d if d == window.c => coordinates[3],
                        d if d == window.kh => b.constant(kh)?,
                        d if d == window.kw => b.constant(kw)?,
                        _ => return Err(PassError::at(location, "pooling index out of range")),
                    };
                    mapping.push((result.to_raw(), value));
                    continue;
                }
                let clone = clone_remapped(b, inner, &mapping);
                for position in 0..inner.result_count() {
                    let old: Value = inner.result(position).map_err(err)?.into();
                    let new: Value = clone.result(position).map_err(err)?.into();
                    mapping.push((old.to_raw(), unsafe { Value::from_raw(new.to_raw()) }));
                }
            }
            let element = mapping
                .iter()
                .find(|(raw, _)| raw.ptr == parts.element.to_raw().ptr)
                .map(|(_, v)| *v)
                .unwrap_or(parts.element);
            acc = b.binary(&op_name(&parts.combine), acc, element)?;
        }
    }
    Ok(acc)
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

/// For a window op, named or rewritten: the name of the op it computes
/// (without `linalg.`) and the operand positions of its filter (or
/// window) and output. Named ops take the input first; rewritten generics
/// have no input operand.
pub fn window_layout(op: OperationRef) -> (String, usize, usize) {
    if op_name(&op) == "linalg.generic"
        && let Some(conv) = op
            .attribute(CONV_ATTR)
            .ok()
            .and_then(crate::ir::util::string_value)
    {
        return (conv, 0, 1);
    }
    (short_name(&op), 1, 2)
}
