//! `tcc-merge-grouped-convs`: merges a grouped convolution, which the ONNX
//! importer gives as one `tosa.conv2d` per group reading a channel slice
//! of one input and a channel `tosa.concat` of their results, into one
//! grouped convolution (`ir::grouped_conv`: a `linalg.generic` over
//! `(n, oh, ow, g, f | kh, kw, c)` reading the input's channels
//! `g * Cg + c` and writing `g * Fg + f`), initialised with the
//! concatenated biases; a `tosa.clamp` (ReLU) that every group has alike
//! (`tcc-fold-batch-norm` moves an activation after the concat into the
//! groups) follows the merged convolution once.
//!
//! A channel shuffle of the same groups after the concat (ShuffleNet's
//! `Reshape [N, G, C/G, H, W]`, `Transpose (0, 2, 1, 3, 4)`, `Reshape`,
//! between the layout's transposes, or the same channels-last; a clamp
//! between the concat and it allowed) becomes the merged convolution's
//! output order (`ir::grouped_conv`'s shuffled form: channel `f * G + g`,
//! the biases permuted alike), so that no copy kernel shuffles.
//!
//! Why: one kernel instead of one per group, and no concat. The tile
//! phase runs it as the GEMM template with the group as the batch
//! (`ir::contraction`), so the CPU's register-blocked form and the GPUs'
//! tiled forms take it; on a target without the templates it is a loop
//! nest like any generic. ShuffleNet v1's grouped 1x1 convolutions were
//! 4 kernels each.
//!
//! What merges: a run of consecutive concat operands (the concat may hold
//! other parts around it: ShuffleNet's downsampling unit concatenates its
//! groups with an average pool), each a float32 `tosa.conv2d` used only
//! there (or through its clamp) with constant `[Fg, KH, KW, Cg]` weights
//! and `[Fg]` bias, zero zero-points, and one geometry, reading channels
//! `[g * Cg, (g + 1) * Cg)` of one NHWC value as a `tosa.slice` (or of one
//! NCHW value as a slice and a transpose to NHWC, as the layout
//! propagation leaves a model input), the run covering all its channels.
//! A convolution's padding becomes a `tosa.pad` of the input (the grouped
//! form reads its input unpadded). Other element types (an int8
//! `tcc-quantize-int8` convolution, half-precision models) keep their
//! per-group form. Runs in the graph phase after `tcc-fold-batch-norm`,
//! which folds a BatchNorm into each group first.

use melior::Context;
use melior::ir::attribute::{ArrayAttribute, DenseI32ArrayAttribute, IntegerAttribute};
use melior::ir::operation::{
    OperationBuilder, OperationLike, OperationMutLike, OperationRef, OperationRefMut,
};
use melior::ir::r#type::IntegerType;
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Region, RegionLike, Type, TypeLike, Value, ValueLike,
};

use super::pass::{NoOptions, PassResult, Root, TccPass};
use crate::ir::affine::{IteratorType, iterator_types_attribute, map_attribute};
use crate::ir::constant::ConstTensor;
use crate::ir::error::PassError;
use crate::ir::grouped_conv::{ATTRIBUTE, GroupedConv};
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, erase_op, is_unused, op_name, ops_named, use_count};
use crate::patterns::fold_constants::shape_operand;

pub struct MergeGroupedConvs;

impl TccPass for MergeGroupedConvs {
    const ARGUMENT: &'static str = "tcc-merge-grouped-convs";
    const SUMMARY: &'static str = "Merge a channel concat of per-group tosa.conv2d (a grouped convolution) into one grouped convolution generic";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa", "linalg", "tensor", "arith"];
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for concat in ops_named(root, "tosa.concat") {
            merge_concat(context, concat)?;
        }
        Ok(())
    }
}

/// Where a group's input comes from.
#[derive(Clone, Copy, PartialEq)]
enum Source<'c> {
    /// Channels of an NHWC value.
    Nhwc(Value<'c, 'c>),
    /// Channels of an NCHW value, transposed to NHWC after the slice.
    Nchw(Value<'c, 'c>),
}

/// One group: its convolution (and clamp), where it reads and what.
struct Part<'c> {
    conv: OperationRef<'c, 'c>,
    clamp: Option<OperationRef<'c, 'c>>,
    source: Source<'c>,
    /// First input channel it reads.
    start: i64,
    /// `[Fg, KH, KW, Cg]`.
    weights: ConstTensor,
    bias: ConstTensor,
    /// pad (top, bottom, left, right), stride, dilation.
    geometry: ([i64; 4], [i64; 2], [i64; 2]),
}

fn i64s(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    let array =
        melior::ir::attribute::DenseI64ArrayAttribute::try_from(op.attribute(name).ok()?).ok()?;
    (0..array.len()).map(|i| array.element(i).ok()).collect()
}

fn is_f32(value: Value) -> bool {
    StaticTensor::of(value.r#type()).is_some_and(|t| t.element.is_f32())
}

impl<'c> Part<'c> {
    fn of(value: Value<'c, 'c>) -> Option<Self> {
        let mut op = defining_op(value)?;
        let mut clamp = None;
        if op_name(&op) == "tosa.clamp" {
            if use_count(value) != 1 {
                return None;
            }
            clamp = Some(op);
            op = defining_op(op.operand(0).ok()?)?;
        }
        let conv = op;
        let result: Value = conv.result(0).ok()?.into();
        if op_name(&conv) != "tosa.conv2d" || use_count(result) != 1 || !is_f32(result) {
            return None;
        }
        let (input, weights, bias) = (
            conv.operand(0).ok()?,
            conv.operand(1).ok()?,
            conv.operand(2).ok()?,
        );
        if !is_f32(input) || !is_f32(weights) || !is_f32(bias) {
            return None;
        }
        for index in [3, 4] {
            let zero_point = ConstTensor::of_value(conv.operand(index).ok()?)?;
            if zero_point.bytes.iter().any(|&byte| byte != 0) {
                return None;
            }
        }
        let weights = ConstTensor::of_value(weights)?;
        let bias = ConstTensor::of_value(bias)?;
        let [fg, _, _, cg] = <[i64; 4]>::try_from(weights.shape.clone()).ok()?;
        if bias.shape != [fg] {
            return None;
        }
        let geometry = (
            i64s(conv, "pad")?.try_into().ok()?,
            i64s(conv, "stride")?.try_into().ok()?,
            i64s(conv, "dilation")?.try_into().ok()?,
        );
        // The input: a slice of channels of an NHWC value, or of an NCHW
        // value transposed to NHWC.
        let producer = defining_op(input)?;
        let (source, start) = match op_name(&producer).as_str() {
            "tosa.slice" => {
                let x = producer.operand(0).ok()?;
                let shape = StaticTensor::of(x.r#type())?.shape;
                let (start, size) = (shape_operand(producer, 1)?, shape_operand(producer, 2)?);
                match (&start[..], &size[..], &shape[..]) {
                    ([0, 0, 0, s], [n, h, w, c], [n2, h2, w2, _])
                        if (n, h, w, *c) == (n2, h2, w2, cg) =>
                    {
                        (Source::Nhwc(x), *s)
                    }
                    _ => return None,
                }
            }
            "tosa.transpose" if i64s_i32(producer, "perms")? == [0, 2, 3, 1] => {
                let slice = defining_op(producer.operand(0).ok()?)?;
                if op_name(&slice) != "tosa.slice" {
                    return None;
                }
                let x = slice.operand(0).ok()?;
                let shape = StaticTensor::of(x.r#type())?.shape;
                let (start, size) = (shape_operand(slice, 1)?, shape_operand(slice, 2)?);
                match (&start[..], &size[..], &shape[..]) {
                    ([0, s, 0, 0], [n, c, h, w], [n2, _, h2, w2])
                        if (n, h, w, *c) == (n2, h2, w2, cg) =>
                    {
                        (Source::Nchw(x), *s)
                    }
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(Part {
            conv,
            clamp,
            source,
            start,
            weights,
            bias,
            geometry,
        })
    }

    /// What every group of one convolution shares.
    fn same_kind(&self, other: &Part<'c>) -> bool {
        let clamps_alike = match (self.clamp, other.clamp) {
            (None, None) => true,
            (Some(a), Some(b)) => ["min_val", "max_val", "nan_mode"]
                .iter()
                .all(|name| a.attribute(name).ok() == b.attribute(name).ok()),
            _ => false,
        };
        self.source == other.source
            && self.geometry == other.geometry
            && self.weights.shape == other.weights.shape
            && clamps_alike
    }
}

fn i64s_i32(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    let array = DenseI32ArrayAttribute::try_from(op.attribute(name).ok()?).ok()?;
    (0..array.len())
        .map(|i| array.element(i).ok().map(i64::from))
        .collect()
}

/// The channels of a source value (its NHWC channels).
fn source_channels(source: Source) -> Option<i64> {
    match source {
        Source::Nhwc(x) => StaticTensor::of(x.r#type())?.shape.get(3).copied(),
        Source::Nchw(x) => StaticTensor::of(x.r#type())?.shape.get(1).copied(),
    }
}

/// Merges every run of groups among `concat`'s operands (a channel
/// concat of rank 4).
fn merge_concat<'c>(
    context: &'c Context,
    concat: OperationRef<'c, 'c>,
) -> Result<(), PassError<'c>> {
    let Some(result) = concat
        .result(0)
        .ok()
        .and_then(|r| StaticTensor::of(r.r#type()))
    else {
        return Ok(());
    };
    let axis = concat
        .attribute("axis")
        .ok()
        .and_then(crate::ir::util::integer_value);
    if result.shape.len() != 4 || axis != Some(3) {
        return Ok(());
    }
    let operands: Vec<Value<'c, 'c>> = concat.operands().collect();
    let mut runs: Vec<(usize, Vec<Part<'c>>)> = Vec::new();
    let mut index = 0;
    while index < operands.len() {
        let Some(first) = Part::of(operands[index]).filter(|p| p.start == 0) else {
            index += 1;
            continue;
        };
        let cg = first.weights.shape[3];
        let mut run = vec![first];
        while let Some(next) = operands.get(index + run.len()).and_then(|v| Part::of(*v)) {
            if !next.same_kind(&run[0]) || next.start != run.len() as i64 * cg {
                break;
            }
            run.push(next);
        }
        let length = run.len();
        if length >= 2 && source_channels(run[0].source) == Some(length as i64 * cg) {
            runs.push((index, run));
        }
        index += length;
    }
    if runs.is_empty() {
        return Ok(());
    }
    // A channel shuffle of the same groups after a concat that is one
    // grouped convolution becomes its output order.
    let shuffle = match &runs[..] {
        [(0, run)] if run.len() == operands.len() => {
            shuffle_chain(concat, run.len() as i64, run[0].weights.shape[0])
        }
        _ => None,
    };
    let mut merged_operands = Vec::new();
    let mut next = 0;
    for (start, run) in &runs {
        merged_operands.extend_from_slice(&operands[next..*start]);
        merged_operands.push(merge_run(context, concat, run, shuffle.is_some())?);
        next = start + run.len();
    }
    merged_operands.extend_from_slice(&operands[next..]);
    let b = TosaBuilder::before(context, concat)?;
    if let Some((clamp, chain)) = &shuffle {
        // The shuffled value's users take the merged convolution (through
        // the clamp between the concat and the shuffle, if one was
        // there); the shuffle's ops go, last first.
        let mut merged = merged_operands[0];
        if let Some(clamp) = clamp {
            let mut clamp_mut = unsafe { OperationRefMut::from_raw(clamp.to_raw()) };
            clamp_mut.set_operand(0, merged);
            merged = clamp.result(0).map_err(|e| b.error(e.to_string()))?.into();
        }
        let last = *chain.last().expect("a shuffle has ops");
        let old: Value = last.result(0).map_err(|e| b.error(e.to_string()))?.into();
        // A shuffle that ends channels-first (its four ops through NCHW
        // without the transpose back: an NCHW model output) takes the
        // merged convolution's transpose to NCHW.
        if chain.len() == 4 {
            merged = TosaBuilder::before(context, last)?.transpose(merged, &[0, 3, 1, 2])?;
        }
        unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), merged.to_raw()) };
        for op in chain.iter().rev() {
            erase_op(*op);
        }
    }
    let old: Value = concat.result(0).map_err(|e| b.error(e.to_string()))?.into();
    let new = if merged_operands.len() == 1 {
        merged_operands[0]
    } else {
        let i32 = IntegerType::new(context, 32).into();
        let axis = IntegerAttribute::new(i32, 3).into();
        b.insert(
            "tosa.concat",
            &merged_operands,
            old.r#type(),
            &[("axis", axis)],
        )?
    };
    if shuffle.is_none() {
        unsafe { mlir_sys::mlirValueReplaceAllUsesOfWith(old.to_raw(), new.to_raw()) };
    }
    erase_op(concat);
    for (_, run) in runs {
        for part in run {
            let input = part.conv.operand(0).ok();
            if let Some(clamp) = part.clamp {
                erase_op(clamp);
            }
            erase_op(part.conv);
            // The slice (and transpose) that fed only this group.
            let mut producer = input.and_then(defining_op);
            while let Some(op) = producer {
                if !matches!(op_name(&op).as_str(), "tosa.slice" | "tosa.transpose")
                    || !is_unused(op)
                {
                    break;
                }
                producer = op.operand(0).ok().and_then(defining_op);
                erase_op(op);
            }
        }
    }
    Ok(())
}

/// The ops of a channel shuffle of `groups` groups of `features` channels
/// that reads `concat`'s NHWC result (or a clamp of it, returned first:
/// an activation commutes with the shuffle), each used once but the last,
/// which gives the shuffled NHWC value: through NCHW, as an ONNX model's
/// `Reshape [N, G, C/G, H, W]`, `Transpose (0, 2, 1, 3, 4)`, `Reshape
/// [N, C, H, W]` reach the graph phase between the layout's transposes
/// (ShuffleNet's; the last transpose back to NHWC may be missing, where
/// the shuffled value is an NCHW model output), or channels-last (`[N, H, W, G, C/G]`, `(0, 1, 2, 4,
/// 3)`, `[N, H, W, C]`).
fn shuffle_chain<'c>(
    concat: OperationRef<'c, 'c>,
    groups: i64,
    features: i64,
) -> Option<(Option<OperationRef<'c, 'c>>, Vec<OperationRef<'c, 'c>>)> {
    let mut y: Value = concat.result(0).ok()?.into();
    let mut clamp = None;
    if let [user] = crate::ir::util::users(y).as_slice()
        && op_name(user) == "tosa.clamp"
    {
        clamp = Some(*user);
        y = user.result(0).ok()?.into();
    }
    let [n, h, w, c] = <[i64; 4]>::try_from(StaticTensor::of(y.r#type())?.shape).ok()?;
    type Step = (&'static str, Option<Vec<i64>>, Vec<i64>);
    let through_nchw: [Step; 5] = [
        ("tosa.transpose", Some(vec![0, 3, 1, 2]), vec![n, c, h, w]),
        ("tosa.reshape", None, vec![n, groups, features, h, w]),
        (
            "tosa.transpose",
            Some(vec![0, 2, 1, 3, 4]),
            vec![n, features, groups, h, w],
        ),
        ("tosa.reshape", None, vec![n, c, h, w]),
        ("tosa.transpose", Some(vec![0, 2, 3, 1]), vec![n, h, w, c]),
    ];
    let channels_last: [Step; 3] = [
        ("tosa.reshape", None, vec![n, h, w, groups, features]),
        (
            "tosa.transpose",
            Some(vec![0, 1, 2, 4, 3]),
            vec![n, h, w, features, groups],
        ),
        ("tosa.reshape", None, vec![n, h, w, c]),
    ];
    let follow = |steps: &[Step]| {
        let mut chain = Vec::new();
        let mut value = y;
        for (name, perms, shape) in steps {
            let users = crate::ir::util::users(value);
            let [op] = users.as_slice() else {
                return None;
            };
            if op_name(op) != *name
                || op.operand(0).ok()? != value
                || perms
                    .as_ref()
                    .is_some_and(|p| i64s_i32(*op, "perms").as_ref() != Some(p))
            {
                return None;
            }
            let result: Value = op.result(0).ok()?.into();
            if StaticTensor::of(result.r#type())?.shape != *shape {
                return None;
            }
            chain.push(*op);
            value = result;
        }
        Some(chain)
    };
    let chain = follow(&through_nchw)
        .or_else(|| follow(&through_nchw[..4]))
        .or_else(|| follow(&channels_last))?;
    Some((clamp, chain))
}

/// Builds the grouped convolution of one run of groups before `concat`
/// and returns its result (after the clamp where the groups have one).
fn merge_run<'c>(
    context: &'c Context,
    concat: OperationRef<'c, 'c>,
    run: &[Part<'c>],
    shuffled: bool,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let b = TosaBuilder::before(context, concat)?;
    let error = |e: String| b.error(e);
    let first = &run[0];
    let groups = run.len() as i64;
    let [fg, kh, kw, cg] = <[i64; 4]>::try_from(first.weights.shape.clone())
        .map_err(|_| b.error("grouped convolution weights are not 4-D"))?;
    let f32 = Type::float32(context);
    // Filter [G, KH, KW, Cg, Fg] and bias [G * Fg].
    let weights: Vec<ConstTensor> = run.iter().map(|p| p.weights.clone()).collect();
    let filter = ConstTensor::concat(&weights, 0)
        .and_then(|t| t.reshape(&[groups, fg, kh, kw, cg]))
        .and_then(|t| t.transpose(&[0, 2, 3, 4, 1]))
        .map_err(error)?;
    let filter_type = StaticTensor {
        shape: filter.shape.clone(),
        element: f32,
    }
    .to_type();
    let filter = b.constant(
        filter.to_attribute(filter_type).map_err(error)?,
        filter_type,
    )?;
    let biases: Vec<ConstTensor> = run.iter().map(|p| p.bias.clone()).collect();
    let mut bias = ConstTensor::concat(&biases, 0).map_err(error)?;
    if shuffled {
        // Output channel f * G + g holds group g's f.
        bias = bias
            .reshape(&[groups, fg])
            .and_then(|t| t.transpose(&[1, 0]))
            .and_then(|t| t.reshape(&[groups * fg]))
            .map_err(error)?;
    }
    let bias_type = StaticTensor {
        shape: bias.shape.clone(),
        element: f32,
    }
    .to_type();
    let bias = b.constant(bias.to_attribute(bias_type).map_err(error)?, bias_type)?;
    // The NHWC input, padded.
    let mut input = match first.source {
        Source::Nhwc(x) => x,
        Source::Nchw(x) => b.transpose(x, &[0, 2, 3, 1])?,
    };
    let (pad, strides, dilations) = first.geometry;
    if pad.iter().any(|&p| p != 0) {
        let shape = b.tensor(input)?.shape;
        let padding = b.const_shape(&[0, 0, pad[0], pad[1], pad[2], pad[3], 0, 0])?;
        let zero = b.scalar(0.0, 1, f32)?;
        let padded = StaticTensor {
            shape: vec![
                shape[0],
                shape[1] + pad[0] + pad[1],
                shape[2] + pad[2] + pad[3],
                shape[3],
            ],
            element: f32,
        };
        input = b.insert("tosa.pad", &[input, padding, zero], padded.to_type(), &[])?;
    }
    let group_output = b.tensor(
        first
            .conv
            .result(0)
            .map_err(|e| b.error(e.to_string()))?
            .into(),
    )?;
    let output = StaticTensor {
        shape: vec![
            group_output.shape[0],
            group_output.shape[1],
            group_output.shape[2],
            groups * fg,
        ],
        element: f32,
    };
    let conv = GroupedConv {
        groups,
        strides,
        dilations,
        filter: [groups, kh, kw, cg, fg],
        output: [
            output.shape[0],
            output.shape[1],
            output.shape[2],
            output.shape[3],
        ],
        shuffled,
    };
    // init: the bias broadcast over the output; then the convolution.
    let empty = b.insert("tensor.empty", &[], output.to_type(), &[])?;
    let location = b.location();
    let parallel = [IteratorType::Parallel; 4];
    let broadcast = insert_generic(
        context,
        concat,
        &[bias],
        empty,
        &[
            crate::ir::affine::projection_map_attribute(context, 4, &[3]),
            crate::ir::affine::identity_map_attribute(context, 4),
        ],
        iterator_types_attribute(context, &parallel),
        &[],
        |block| {
            Ok(block
                .argument(0)
                .map_err(|e| PassError::at(location, e.to_string()))?
                .into())
        },
    )?;
    let maps: Vec<Attribute> = conv.maps(context).into_iter().map(map_attribute).collect();
    let mut merged = insert_generic(
        context,
        concat,
        &[input, filter],
        broadcast,
        &maps,
        iterator_types_attribute(context, &GroupedConv::iterators()),
        &[(ATTRIBUTE, conv.attribute(context))],
        |block| {
            let at = |e: melior::Error| PassError::at(location, e.to_string());
            let (x, w, acc): (Value, Value, Value) = (
                block.argument(0).map_err(at)?.into(),
                block.argument(1).map_err(at)?.into(),
                block.argument(2).map_err(at)?.into(),
            );
            // One f32 arithmetic op of the body on `lhs` and `rhs`.
            let float_op = |name: &str, lhs, rhs| -> Result<Value, PassError> {
                let op = OperationBuilder::new(name, location)
                    .add_operands(&[lhs, rhs])
                    .add_results(&[f32])
                    .build()
                    .map_err(|e| PassError::at(location, format!("cannot build {name}: {e}")))?;
                Ok(block.append_operation(op).result(0).map_err(at)?.into())
            };
            let product = float_op("arith.mulf", x, w)?;
            float_op("arith.addf", acc, product)
        },
    )?;
    if let Some(clamp) = first.clamp {
        let attributes: Vec<(&str, Attribute)> = ["min_val", "max_val", "nan_mode"]
            .into_iter()
            .filter_map(|name| clamp.attribute(name).ok().map(|a| (name, a)))
            .collect();
        merged = b.insert("tosa.clamp", &[merged], output.to_type(), &attributes)?;
    }
    Ok(merged)
}

/// Inserts a `linalg.generic` before `anchor` with one init (its result's
/// type), whose body yields what `body` computes from the block's
/// arguments (one f32 per operand).
#[allow(clippy::too_many_arguments)]
fn insert_generic<'c>(
    context: &'c Context,
    anchor: OperationRef<'c, 'c>,
    inputs: &[Value<'c, 'c>],
    init: Value<'c, 'c>,
    maps: &[Attribute<'c>],
    iterators: Attribute<'c>,
    extra: &[(&str, Attribute<'c>)],
    body: impl FnOnce(&Block<'c>) -> Result<Value<'c, 'c>, PassError<'c>>,
) -> Result<Value<'c, 'c>, PassError<'c>> {
    let location = anchor.location();
    let f32 = Type::float32(context);
    let region = Region::new();
    let arguments: Vec<_> = (0..=inputs.len()).map(|_| (f32, location)).collect();
    let block = Block::new(&arguments);
    let value = body(&block)?;
    block.append_operation(
        OperationBuilder::new("linalg.yield", location)
            .add_operands(&[value])
            .build()
            .map_err(|e| PassError::at(location, format!("cannot build linalg.yield: {e}")))?,
    );
    region.append_block(block);
    let mut attributes = vec![
        (
            Identifier::new(context, "indexing_maps"),
            ArrayAttribute::new(context, maps).into(),
        ),
        (Identifier::new(context, "iterator_types"), iterators),
        (
            Identifier::new(context, "operandSegmentSizes"),
            DenseI32ArrayAttribute::new(context, &[inputs.len() as i32, 1]).into(),
        ),
    ];
    for (name, value) in extra {
        attributes.push((Identifier::new(context, name), *value));
    }
    let mut operands = inputs.to_vec();
    operands.push(init);
    let generic = OperationBuilder::new("linalg.generic", location)
        .add_operands(&operands)
        .add_results(&[init.r#type()])
        .add_attributes(&attributes)
        .add_regions([region])
        .build()
        .map_err(|e| PassError::at(location, format!("cannot build linalg.generic: {e}")))?;
    let parent = anchor
        .block()
        .ok_or_else(|| PassError::at(location, "concat outside a block"))?;
    let generic = parent.insert_operation_before(anchor, generic);
    Ok(generic
        .result(0)
        .map_err(|e| PassError::at(location, e.to_string()))?
        .into())
}
