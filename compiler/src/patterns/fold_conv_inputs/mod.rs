//! Folding a convolution's or pooling's input preparation into its loads.
//!
//! `tensor.pad` in front of a window op materializes a padded copy (a fill
//! kernel and a copy kernel at run time); an elementwise producer of the
//! input (BatchNorm + ReLU before a convolution) is a kernel of its own, and
//! so is a transpose (an ONNX model's NCHW input before its first
//! convolution: the loads read it at permuted coordinates instead).
//! [`rewrite`] replaces the window op by a `tcc.conv` (an op of the tcc
//! dialect in the form of a `linalg.generic`, with the window op's kind,
//! strides and dilations as its `#tcc.conv` window) over the same
//! iteration space whose input is not an operand: the body computes the
//! input coordinates from `linalg.index`, reads the *unpadded* source with
//! `tensor.extract` at coordinates clamped into bounds (so no back end ever
//! reads out of bounds), applies the producer's body to the element, and
//! selects the pad value where the coordinates fall in the padding (the pad
//! is of the producer's output, so padded positions get the pad value, not
//! the producer of it). The op implements linalg's structured-op interface
//! and bufferizes like a generic (upstream's gather lowering has the same
//! shape), and every back end that translates loop nests runs it
//! correctly; the OpenCL C writer also reads its window for the window
//! and implicit-GEMM templates.
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
//! An int8 convolution (i8 input and filter, i32 accumulator: what
//! `tcc-quantize-int8` makes) folds its constant pad the same way, the
//! products sign-extended to i32; nothing else is folded into it.
//!
//! The body of a rewritten op is always
//! `(coordinates, bounds check, loads, producer ops, select) ; combine(acc,
//! a[, w]) ; yield`, with the filter (or pooling window) as the only input.
//!
//! [`plan`] (here) finds what can be folded; [`build`] writes the
//! replacement `tcc.conv`; [`pool`] reads and unrolls a folded pooling.

mod build;
mod pool;

pub(crate) use build::{Builder, clone_remapped, inline_producer};
pub use build::{rewrite, rewrite_as_columns};

use melior::ir::attribute::{ArrayAttribute, AttributeLike, DenseI64ArrayAttribute};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, BlockLike, RegionLike, TypeLike, Value, ValueLike};

use crate::config::PoolFolding;
use crate::ir::affine::{IteratorType, iterator_types};
pub use crate::ir::contraction::window_layout;
use crate::ir::dense::int_elements;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, dialect_of, op_name, reassociation, use_count};
pub(crate) use pool::window_strides;
use pool::{fusible_pool, pool_feeding_pointwise_conv};

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
    // (n, oh, ow, c, kh, kw): a pooling's layout, the filter per channel.
    Window {
        filter: &[4, 5, 3],
        ..pooling("depthwise_conv_2d_nhwc_hwc", Combine::MulAdd)
    },
    pooling("pooling_nhwc_max", Combine::Max),
    pooling("pooling_nhwc_sum", Combine::Add),
];

/// A pooling window op: (n, oh, ow, c, kh, kw), the window's extent as its
/// filter operand.
const fn pooling(name: &'static str, combine: Combine) -> Window {
    Window {
        name,
        parallel: 4,
        reduction: 2,
        n: 0,
        oh: 1,
        ow: 2,
        c: 3,
        kh: 4,
        kw: 5,
        filter: &[4, 5],
        combine,
    }
}

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
    /// A `tensor.collapse_shape` merging the channel dimensions of a
    /// padded channel-split tensor back into the window op's rank-4 input
    /// (elementwise fusion's reshape propagation moves a channel shuffle's
    /// reshape below the pad): the loads then read the same merge of the
    /// unpadded tensor, which [`Plan::collapse_source`] asks the caller
    /// to build (`source` is the unpadded, unmerged tensor until then).
    collapse: Option<OperationRef<'c, 'c>>,
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

    /// The `tensor.collapse_shape` between the pad and the window op, if
    /// any (erased once unused), and the unpadded tensor of more than
    /// four dimensions that the same collapse must merge into the loads'
    /// source (see [`Plan::set_source`]).
    pub fn collapse_source(&self) -> Option<(OperationRef<'c, 'c>, Value<'c, 'c>)> {
        self.collapse.map(|op| (op, self.source))
    }

    /// The rank-4 tensor the loads read, in place of `collapse_source`'s.
    pub fn set_source(&mut self, source: Value<'c, 'c>) {
        self.source = source;
    }
}

/// `collapse`'s source and padding if it is a `tensor.collapse_shape`
/// of a padded tensor of rank 5 or more into rank 4 that merges only
/// dimensions 3 and up (the channels), where the pad pads only H and W.
fn collapsed_padding<'c>(
    collapse: OperationRef<'c, 'c>,
) -> Option<(OperationRef<'c, 'c>, Padding<'c>)> {
    if op_name(&collapse) != "tensor.collapse_shape" {
        return None;
    }
    let pad = defining_op(collapse.operand(0).ok()?)?;
    // Static only: the channel merge (passes/fold_conv_inputs.rs) builds static types.
    let rank = StaticTensor::of(pad.result(0).ok()?.r#type())?.rank();
    let groups = reassociation(collapse)?;
    let channels: Vec<i64> = (3..rank as i64).collect();
    if rank < 5 || groups != [vec![0], vec![1], vec![2], channels] {
        return None;
    }
    Some((pad, padding(pad, rank)?))
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

/// A window op's dilations: a named op's `dilations` (absent: 1); a
/// `tcc.conv` has them in its maps and reads as 1.
pub(crate) fn window_dilations(op: OperationRef) -> Option<[i64; 2]> {
    pair(op, "dilations")
}

fn dense_i64(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    let attribute = DenseI64ArrayAttribute::try_from(op.attribute(name).ok()?).ok()?;
    Some(
        (0..attribute.len())
            .filter_map(|i| attribute.element(i).ok())
            .collect(),
    )
}

/// The padding of `pad` if it is static, only on H and W (dimensions 1
/// and 2) of a rank-4 tensor (or, with `rank` 5 or more, of the
/// channel-split tensor a `tensor.collapse_shape` then merges back to
/// rank 4), with a pad value that is a constant of the tensor's element
/// type defined outside it (f32, or i8 before an int8 convolution).
fn padding<'c>(pad: OperationRef<'c, 'c>, rank: usize) -> Option<Padding<'c>> {
    if op_name(&pad) != "tensor.pad" || pad.operand_count() != 1 {
        return None; // dynamic low/high operands
    }
    let low = dense_i64(pad, "static_low")?;
    let high = dense_i64(pad, "static_high")?;
    let only_h_w = |p: &[i64]| {
        p.iter()
            .enumerate()
            .all(|(d, &v)| v == 0 || d == 1 || d == 2)
    };
    if low.len() != rank || high.len() != rank || !only_h_w(&low) || !only_h_w(&high) {
        return None;
    }
    if low.iter().chain(high.iter()).any(|p| *p < 0) {
        return None;
    }
    let block = pad.region(0).ok()?.first_block()?;
    let terminator = block.terminator()?;
    let value = terminator.operand(0).ok()?;
    let constant = defining_op(value)?;
    let element = StaticTensor::ranked(pad.operand(0).ok()?.r#type())?.element;
    if op_name(&constant) != "arith.constant"
        || constant.block().is_some_and(|b| b == block)
        || value.r#type() != element
        || !(element.is_f32() || is_int8(element))
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
    let Some(tensor) = StaticTensor::ranked(result.r#type()) else {
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
            .is_ok_and(|v| StaticTensor::ranked(v.r#type()).is_some())
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
            && crate::ir::conv::is_linalg_or_conv(&op_name(&definer))
            && crate::patterns::form_dispatches::kind_of(definer)
                != crate::config::KernelKind::Elementwise
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

/// Whether `op` is a `linalg.transpose` of a rank-4 f32 tensor used only
/// by the window op: its loads read the transpose's input at permuted
/// coordinates instead (a model's NCHW input before its first
/// convolution), which is free.
fn fusible_transpose(op: OperationRef) -> bool {
    op.result_count() == 1
        && op.result(0).ok().is_some_and(|result| {
            use_count(result.into()) == 1
                && StaticTensor::ranked(result.r#type())
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

/// What a target folds into window ops' loads (`tcc-fold-conv-inputs`'s
/// options, from `TargetConfig`).
#[derive(Clone, Copy, Debug)]
pub struct Folding {
    /// Which poolings feeding only a 1x1 convolution are unrolled into it.
    pub pools: PoolFolding,
    /// Whether a 2-D convolution takes an arithmetic producer (a
    /// transpose always folds: its loads only permute coordinates).
    pub conv_producers: bool,
    /// A 2-D convolution whose input has at least this many channels
    /// keeps its padding as a padded copy (`None`: every pad folds).
    pub conv_pad_channels: Option<i64>,
    /// A 2-D convolution of more than one tap whose input has fewer
    /// channels than this reads an explicit image-to-columns copy through
    /// a 1x1 convolution ([`rewrite_as_columns`]; `None`: never).
    pub conv_unfold_channels: Option<i64>,
}

impl Default for Folding {
    fn default() -> Self {
        Self {
            pools: PoolFolding::All,
            conv_producers: true,
            conv_pad_channels: None,
            conv_unfold_channels: None,
        }
    }
}

/// What can be folded into `op`'s loads, if anything: a constant pad of
/// its input and/or a cheap elementwise producer used only by it (through
/// the pad, when the pad too has no other user), or a pooling feeding only
/// this 1x1 convolution, as `folding` allows.
pub fn plan<'c>(op: OperationRef<'c, 'c>, folding: &Folding) -> Option<Plan<'c>> {
    let (pools, conv_producers) = (folding.pools, folding.conv_producers);
    let name = short_name(&op);
    let window = WINDOWS.iter().find(|w| w.name == name)?;
    if op_name(&op).as_str() != format!("linalg.{name}") || op.result_count() != 1 {
        return None;
    }
    let output = StaticTensor::ranked(op.result(0).ok()?.r#type())?;
    // An int8 convolution (`tcc-quantize-int8`: i8 x i8 -> i32) folds
    // only its pad; its quantized input is its producer's epilogue.
    let int8 = is_int8_conv(op, window, &output);
    if !output.element.is_f32() && !int8 {
        return None;
    }
    pair(op, "strides")?;
    pair(op, "dilations")?;
    let input = op.operand(0).ok()?;
    let mut source = input;
    let mut pad = None;
    let mut collapse = None;
    // Wide enough 2-D convolutions keep their pad as a copy, as the
    // target asks.
    let keeps_pad = window.name == "conv_2d_nhwc_hwcf"
        && folding.conv_pad_channels.is_some_and(|fewest| {
            StaticTensor::ranked(input.r#type())
                .is_some_and(|t| t.shape.last().is_some_and(|&c| c >= fewest))
        });
    if !keeps_pad
        && let Some(pad_op) = defining_op(input)
        && let Some(padding) = padding(pad_op, 4)
    {
        source = pad_op.operand(0).ok()?;
        pad = Some((pad_op, padding));
    } else if !keeps_pad
        && let Some(collapse_op) = defining_op(input)
        && let Some((pad_op, padding)) = collapsed_padding(collapse_op)
        && use_count(input) == 1
        && use_count(pad_op.result(0).ok()?.into()) == 1
    {
        source = pad_op.operand(0).ok()?;
        pad = Some((pad_op, padding));
        collapse = Some(collapse_op);
    }
    let only_user = match &pad {
        Some((pad_op, _)) => use_count(pad_op.result(0).ok()?.into()) == 1,
        None => use_count(input) == 1,
    };
    let mut producer = None;
    if only_user
        && collapse.is_none()
        && !int8
        && let Some(candidate) = defining_op(source)
        && ((fusible_producer(candidate)
            && (conv_producers
                || window.name != "conv_2d_nhwc_hwcf"
                || op_name(&candidate) == "linalg.transpose"))
            || fusible_pool(candidate, op, pools))
    {
        producer = Some(Producer { op: candidate });
    }
    if pad.is_none() && (int8 || producer.is_none() && !pool_feeding_pointwise_conv(op, pools)) {
        return None;
    }
    let source_type = StaticTensor::ranked(source.r#type())?;
    let element_ok = if int8 {
        is_int8(source_type.element)
    } else {
        source_type.element.is_f32()
    };
    let rank_ok = match collapse {
        Some(_) => source_type.rank() >= 5,
        None => source_type.rank() == 4,
    };
    if !element_ok || !rank_ok {
        return None;
    }
    Some(Plan {
        window,
        op,
        pad,
        producer,
        source,
        collapse,
    })
}

/// What the columns of [`rewrite_as_columns`] are rounded up to: rows of
/// 16 bytes in half precision (the tensor memory accelerator's stride
/// alignment), 32 in f32.
pub const COLUMN_MULTIPLE: i64 = 8;

/// Whether `op` is a named f32 `linalg.conv_2d_nhwc_hwcf` that `folding`
/// unfolds into columns: static shapes (a symbolic batch keeps the folded
/// form), windows of more than one tap that do not overlap (strides at
/// least the window: a ViT's or ConvNeXt's patches), a constant HWCF
/// filter, and fewer input channels than `conv_unfold_channels`.
/// Overlapping windows keep the folded form: their columns repeat each
/// input element (ResNet-50's 7x7 stride-2 stem about 12 times), and on
/// the H200 at fp16 the copy cost what the product saved (batch 32: the
/// stem 313 us folded against 215 + 72 unfolded; MobileNetV2's 3x3
/// stride-2 stem 89 against 55 + 48, ResNet-50's at batch 1 20 against
/// 11 + 14).
pub fn unfolds(op: OperationRef, folding: &Folding) -> bool {
    let Some(fewest) = folding.conv_unfold_channels else {
        return false;
    };
    if op_name(&op) != "linalg.conv_2d_nhwc_hwcf" || op.result_count() != 1 {
        return false;
    }
    let f32_tensor = |value: Value| {
        StaticTensor::of(value.r#type())
            .filter(|t| t.element.is_f32() && t.rank() == 4)
            .map(|t| t.shape)
    };
    let (Some(input), Some(filter), Some(_)) = (
        op.operand(0).ok().and_then(f32_tensor),
        op.operand(1).ok().and_then(f32_tensor),
        op.result(0).ok().and_then(|r| f32_tensor(r.into())),
    ) else {
        return false;
    };
    // Windows that do not overlap (patches: stride at least the window):
    // the columns then hold each input element at most once.
    let patches = pair(op, "strides")
        .is_some_and(|strides| strides[0] >= filter[0] && strides[1] >= filter[1]);
    input[3] < fewest
        && patches
        && filter[0] * filter[1] > 1
        && op
            .operand(1)
            .is_ok_and(crate::ir::constant::ConstTensor::is_constant)
}

/// A plan that folds nothing: a named f32 `linalg.conv_2d_nhwc_hwcf`
/// whose loads read its input as it is, so that [`rewrite`] gives it the
/// `tcc.conv` form (`tcc-pack-weight-panels` then gives its filter another
/// layout, which the named op cannot take).
pub fn plain_conv_plan<'c>(op: OperationRef<'c, 'c>) -> Option<Plan<'c>> {
    let window = WINDOWS.iter().find(|w| w.name == "conv_2d_nhwc_hwcf")?;
    if op_name(&op) != "linalg.conv_2d_nhwc_hwcf" || op.result_count() != 1 {
        return None;
    }
    pair(op, "strides")?;
    pair(op, "dilations")?;
    let source = op.operand(0).ok()?;
    let f32_rank4 = |value: Value| {
        StaticTensor::ranked(value.r#type()).is_some_and(|t| t.element.is_f32() && t.rank() == 4)
    };
    (f32_rank4(source) && f32_rank4(op.result(0).ok()?.into())).then_some(Plan {
        window,
        op,
        pad: None,
        producer: None,
        source,
        collapse: None,
    })
}

fn is_int8(element: melior::ir::Type) -> bool {
    melior::ir::r#type::IntegerType::try_from(element).is_ok_and(|t| t.width() == 8)
}

/// Whether `op` is a convolution of int8 input and filter accumulating
/// in i32 (TOSA's quantized form with zero points 0, after
/// `tcc-quantize-int8`): its zero pad is an int8 zero.
fn is_int8_conv(op: OperationRef, window: &Window, output: &StaticTensor) -> bool {
    let int8_operand = |i: usize| {
        op.operand(i)
            .ok()
            .and_then(|v| StaticTensor::ranked(v.r#type()))
            .is_some_and(|t| is_int8(t.element))
    };
    window.combine == Combine::MulAdd
        && melior::ir::r#type::IntegerType::try_from(output.element).is_ok_and(|t| t.width() == 32)
        && int8_operand(0)
        && int8_operand(1)
}
