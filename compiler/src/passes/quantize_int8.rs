//! `tcc-quantize-int8{profile=FILE calibration=max|percentile
//! percentile=P}`: post-training int8 quantization driven by a `tcc
//! profile` calibration profile (Glow's and TensorRT's profile-guided
//! quantization), on the graph's TOSA ops.
//!
//! Each `tosa.conv2d`, `tosa.depthwise_conv2d` and `tosa.matmul` whose
//! weights are f32 constants and whose activation input has a usable range
//! in the profile becomes an int8 x int8 product accumulated in int32:
//!
//! ```text
//! xq  = cast<i8>(x * (1 / s_in))            per-tensor symmetric, saturating
//! acc = conv2d/matmul(xq, Wq) : i32         Wq per-output-channel symmetric
//! y   = cast<f32>(acc) * (s_in * s_w[c]) + bias
//! ```
//!
//! `s_in = bound / 127` with the bound from the profile (`Calibration`),
//! `s_w[c] = max |W[c]| / 127`, the weights rounded at compile time. The
//! quantize step is elementwise and fuses into the producer's kernel, the
//! dequantize step into the convolution's epilogue, so between two
//! quantized convolutions the epilogue of the first ends in the second's
//! quantize: requantization, in one kernel. Every other op stays f32.
//!
//! Activations are found in the profile by name: the ONNX importer (under
//! `tcc compile --quantize`) gives each node's ops the location of the
//! node's first output tensor, as `tcc profile` names tensors; a graph
//! input's name is its argument's location. The input of a contraction is
//! looked up on the value itself, or through the transposes, reshapes and
//! slices the importer put in front of it (which keep the bound). An op
//! whose input has no range, a zero or non-finite range, or NaNs in the
//! profile stays f32; the module records how many ops were quantized
//! (`tcc.quantized_ops`) and why the others were not
//! (`tcc.quantize_f32`). A profile that names no tensor of the module, or
//! names one with another element count, is from another model: an error.
//!
//! Runs in the graph phase after constant folding (weights are constants)
//! and before BatchNorm folding (the profile's tensor of a convolution
//! must still be its own output).

use std::path::PathBuf;

use melior::Context;
use melior::ir::attribute::{
    ArrayAttribute, DenseElementsAttribute, IntegerAttribute, StringAttribute, TypeAttribute,
};
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::r#type::IntegerType;
use melior::ir::{Attribute, BlockLike, Location, RegionLike, Type, TypeLike, Value, ValueLike};

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use super::quantize_calibration::TensorRange;
use super::quantize_calibration::{Calibration, Ranges};
use crate::ir::constant::ConstTensor;
use crate::ir::element_type::ElementType;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{
    body_ops, defining_op, op_name, ops_named, replace_and_erase, set_discardable_attribute,
};

/// On the module: `"int8"` once the pass ran.
pub const QUANTIZATION_ATTR: &str = "tcc.quantization";
/// On the module: how many convolutions and matmuls became int8.
pub const QUANTIZED_OPS_ATTR: &str = "tcc.quantized_ops";
/// On the module: one string per contraction left f32, saying why.
pub const F32_FALLBACKS_ATTR: &str = "tcc.quantize_f32";

/// How many of a profile's tensors must be missing from the module (and
/// more than half) before the profile counts as another model's; fewer
/// only leave the ops reading them f32.
const FOREIGN_MISSING: usize = 8;

/// The largest magnitude of a symmetric int8 value.
const QMAX: f32 = 127.0;

pub struct QuantizeInt8;

#[derive(Debug)]
pub struct QuantizeOptions {
    pub profile: Option<PathBuf>,
    pub calibration: String,
    pub percentile: f64,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        Self {
            profile: None,
            calibration: "max".into(),
            percentile: 99.99,
        }
    }
}

impl PassOptions for QuantizeOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[
        PassOptionInfo {
            name: "profile",
            kind: PassOptionKind::String,
            default: "",
            description: "The calibration profile (tcc profile's JSON) naming the activation tensors",
        },
        PassOptionInfo {
            name: "calibration",
            kind: PassOptionKind::String,
            default: "max",
            description: "How an activation's bound is chosen: max (largest magnitude) or percentile (from the histogram)",
        },
        PassOptionInfo {
            name: "percentile",
            kind: PassOptionKind::String,
            default: "99.99",
            description: "The share of values (percent) inside the bound, for calibration=percentile",
        },
    ];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "profile" if value.is_empty() => Ok(()),
            "profile" => {
                self.profile = Some(PathBuf::from(value.trim_matches('"')));
                Ok(())
            }
            "calibration" => {
                Calibration::parse(value, self.percentile)?;
                self.calibration = value.into();
                Ok(())
            }
            "percentile" => {
                self.percentile = value
                    .parse()
                    .map_err(|_| format!("percentile must be a number, not '{value}'"))?;
                Calibration::parse("percentile", self.percentile).map(|_| ())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

impl TccPass for QuantizeInt8 {
    const ARGUMENT: &'static str = "tcc-quantize-int8";
    const SUMMARY: &'static str = "Quantize convolutions and matmuls to int8 x int8 -> int32 with per-channel weights and per-tensor activation scales from a calibration profile";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa"];
    type Options = QuantizeOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        root: Root<'c>,
        options: &QuantizeOptions,
    ) -> PassResult<'c> {
        let at = |message: String| PassError::at(root.location(), message);
        let calibration =
            Calibration::parse(&options.calibration, options.percentile).map_err(at)?;
        let Some(path) = &options.profile else {
            return Err(at(
                "tcc-quantize-int8 needs profile=FILE (tcc profile's output)".into(),
            ));
        };
        let ranges = Ranges::load(path, calibration).map_err(at)?;
        check_profile_matches(root, &ranges)?;

        let mut quantized = 0i64;
        let mut fallbacks = Vec::new();
        for function in ops_named(root, "func.func") {
            for op in body_ops(function) {
                let result = match op_name(&op).as_str() {
                    "tosa.conv2d" => quantize(context, op, &ranges, Contraction::Conv2d),
                    "tosa.depthwise_conv2d" => {
                        quantize(context, op, &ranges, Contraction::Depthwise)
                    }
                    "tosa.matmul" => quantize(context, op, &ranges, Contraction::Matmul),
                    _ => continue,
                };
                match result {
                    Ok(()) => quantized += 1,
                    Err(reason) => fallbacks.push(format!(
                        "{} '{}' stays f32: {reason}",
                        op_name(&op),
                        location_name(op.location()).unwrap_or_default()
                    )),
                }
            }
        }
        let i64_type = IntegerType::new(context, 64).into();
        set_discardable_attribute(
            root,
            QUANTIZATION_ATTR,
            StringAttribute::new(context, "int8").into(),
        );
        set_discardable_attribute(
            root,
            QUANTIZED_OPS_ATTR,
            IntegerAttribute::new(i64_type, quantized).into(),
        );
        let reasons: Vec<Attribute> = fallbacks
            .iter()
            .map(|r| StringAttribute::new(context, r).into())
            .collect();
        set_discardable_attribute(
            root,
            F32_FALLBACKS_ATTR,
            ArrayAttribute::new(context, &reasons).into(),
        );
        Ok(())
    }
}

/// The name a location gives a value: a `loc("name")`, not looking into
/// fused locations (whose names would be ambiguous).
fn location_name(location: Location) -> Option<String> {
    let raw = location.to_raw();
    if !unsafe { mlir_sys::mlirLocationIsAName(raw) } {
        return None;
    }
    let name = unsafe { mlir_sys::mlirIdentifierStr(mlir_sys::mlirLocationNameGetName(raw)) };
    if name.data.is_null() {
        return None;
    }
    let bytes = unsafe { std::slice::from_raw_parts(name.data as *const u8, name.length) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

fn value_name(value: Value) -> Option<String> {
    location_name(unsafe { Location::from_raw(mlir_sys::mlirValueGetLocation(value.to_raw())) })
}

/// Whether a profile's tensor can be `value`: the same element count (the
/// graph phase made the model's NCHW tensors NHWC, and may have merged a
/// flatten into its producer).
fn same_shape(range: &TensorRange, value: Value) -> bool {
    StaticTensor::of(value.r#type()).is_some_and(|tensor| {
        Some(tensor.num_elements()) == range.shape.iter().try_fold(1i64, |n, &d| n.checked_mul(d))
    })
}

/// Every named value of the module: function arguments (marked `true`)
/// and op results.
fn named_values<'c>(root: Root<'c>) -> Vec<(String, Value<'c, 'c>, bool)> {
    let mut named = Vec::new();
    for function in ops_named(root, "func.func") {
        if let Ok(region) = function.region(0)
            && let Some(block) = region.first_block()
        {
            for i in 0..block.argument_count() {
                if let Ok(argument) = block.argument(i) {
                    let value: Value = argument.into();
                    if let Some(name) = value_name(value) {
                        named.push((name, value, true));
                    }
                }
            }
        }
        for op in body_ops(function) {
            for result in op.results() {
                let value: Value = result.into();
                if let Some(name) = value_name(value) {
                    named.push((name, value, false));
                }
            }
        }
    }
    named
}

/// A profile from another model is an error: one that names none of the
/// module's values, or of whose tensors more than half (and at least
/// [`FOREIGN_MISSING`]) are not values of the module (graph rewrites
/// before the pass remove a few, such as flattens merged into their
/// producers), or that gives a graph input another element count.
fn check_profile_matches<'c>(root: Root<'c>, ranges: &Ranges) -> PassResult<'c> {
    let error = |message: String| {
        Err(PassError::at(
            root.location(),
            format!(
                "{message}: is the profile (of model '{}') from another model?",
                ranges.model
            ),
        ))
    };
    let named = named_values(root);
    let mut found = std::collections::BTreeSet::<&str>::new();
    for (name, value, argument) in &named {
        if let Some(range) = ranges.get(name) {
            found.insert(range.name.as_str());
            if *argument && !same_shape(range, *value) {
                return error(format!(
                    "the profile's input '{name}' has the shape {:?}, the model's {}",
                    range.shape,
                    value.r#type()
                ));
            }
        }
    }
    let missing: Vec<&str> = ranges.names().filter(|n| !found.contains(n)).collect();
    if found.is_empty() || (missing.len() * 2 > ranges.len() && missing.len() >= FOREIGN_MISSING) {
        let shown: Vec<&str> = missing.iter().copied().take(5).collect();
        return error(format!(
            "{} of the profile's {} tensors are not tensors of this model ({}{})",
            missing.len(),
            ranges.len(),
            shown.join(", "),
            if missing.len() > shown.len() {
                ", ..."
            } else {
                ""
            }
        ));
    }
    Ok(())
}

/// The profile's tensor that `value` holds: its own name, or that of the
/// value behind the transposes, reshapes and slices in front of it. Names of the
/// consumer's own node are skipped (the importer's transposes around a
/// convolution carry the convolution's name, not their input's).
fn input_range<'a>(value: Value, consumer: &str, ranges: &'a Ranges) -> Option<&'a TensorRange> {
    let mut value = value;
    for _ in 0..16 {
        if let Some(name) = value_name(value)
            && name != consumer
            && let Some(range) = ranges.get(&name)
            && same_shape(range, value)
        {
            return Some(range);
        }
        let op = defining_op(value)?;
        // Each keeps the values (or a subset): the bound still holds.
        if !matches!(
            op_name(&op).as_str(),
            "tosa.transpose" | "tosa.reshape" | "tosa.slice"
        ) {
            return None;
        }
        value = op.operand(0).ok()?;
    }
    None
}

#[derive(Clone, Copy, PartialEq)]
enum Contraction {
    /// NHWC input, OHWI weights: output channel = weight dimension 0.
    Conv2d,
    /// NHWC input, HWCM weights: output channel `c * M + m` = the weight's
    /// index modulo `C * M` (a channel's multipliers are its own scales).
    Depthwise,
    /// `[B, M, K] x [B, K, N]`: output channel = weight dimension 2.
    Matmul,
}

/// Symmetric int8 weights per output channel: the int8 bytes and each
/// channel's scale (`max |w| / 127`, 1 for an all-zero channel).
fn quantize_weights(
    values: &[f32],
    channels: usize,
    channel_of: impl Fn(usize) -> usize,
) -> (Vec<u8>, Vec<f32>) {
    let mut max_abs = vec![0f32; channels];
    for (i, v) in values.iter().enumerate() {
        let c = channel_of(i);
        max_abs[c] = max_abs[c].max(v.abs());
    }
    let scales: Vec<f32> = max_abs
        .iter()
        .map(|&m| if m > 0.0 { m / QMAX } else { 1.0 })
        .collect();
    let bytes = values
        .iter()
        .enumerate()
        .map(|(i, v)| ((v / scales[channel_of(i)]).round().clamp(-QMAX, QMAX) as i8) as u8)
        .collect();
    (bytes, scales)
}

/// Whether every element of a constant operand is zero (a zero point).
fn is_zero_constant(value: Value) -> bool {
    ConstTensor::of_value(value).is_some_and(|c| c.bytes.iter().all(|&b| b == 0))
}

/// Rewrites one contraction to int8, or says why it stays f32.
fn quantize<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
    ranges: &Ranges,
    kind: Contraction,
) -> Result<(), String> {
    let operand = |i: usize| op.operand(i).map_err(|e| e.to_string());
    let (input, weight) = (operand(0)?, operand(1)?);
    let result: Value = op.result(0).map_err(|e| e.to_string())?.into();
    let input_type = StaticTensor::of(input.r#type()).ok_or("its input has no static shape")?;
    let result_type = StaticTensor::of(result.r#type()).ok_or("its result has no static shape")?;
    if !input_type.element.is_f32() || !result_type.element.is_f32() {
        return Err("it is not an f32 op".into());
    }
    let zero_points = match kind {
        Contraction::Conv2d | Contraction::Depthwise => [3, 4],
        Contraction::Matmul => [2, 3],
    };
    if !zero_points
        .iter()
        .all(|&i| operand(i).is_ok_and(is_zero_constant))
    {
        return Err("its zero points are not constant zeros".into());
    }
    let consumer = location_name(op.location()).unwrap_or_default();
    let range =
        input_range(input, &consumer, ranges).ok_or("the profile has no range for its input")?;
    let bound = ranges
        .bound(range)
        .map_err(|reason| format!("its input '{}' {reason} in the profile", range.name))?;
    let weights = ConstTensor::of_value(weight).ok_or("its weights are not a constant")?;
    let values = weights.f32s().ok_or("its weights are not f32")?;
    if values.iter().any(|v| !v.is_finite()) {
        return Err("its weights are not finite".into());
    }
    let shape = weights.shape.clone();
    let (channels, channel_of): (usize, Box<dyn Fn(usize) -> usize>) = match kind {
        Contraction::Conv2d => {
            let channels = shape[0].max(1) as usize;
            let per_channel = values.len() / channels;
            (channels, Box::new(move |i| i / per_channel.max(1)))
        }
        Contraction::Depthwise => {
            let channels = (shape.get(2).copied().unwrap_or(1) * shape.get(3).copied().unwrap_or(1))
                .max(1) as usize;
            (channels, Box::new(move |i| i % channels))
        }
        Contraction::Matmul => {
            let channels = *shape.last().unwrap_or(&1) as usize;
            (channels, Box::new(move |i| i % channels.max(1)))
        }
    };
    let bias = match kind {
        Contraction::Conv2d | Contraction::Depthwise => {
            let bias = ConstTensor::of_value(operand(2)?)
                .and_then(|b| b.f32s())
                .ok_or("its bias is not an f32 constant")?;
            match bias.len() {
                1 => vec![bias[0]; channels],
                n if n == channels => bias,
                _ => return Err("its bias is neither per channel nor one value".into()),
            }
        }
        Contraction::Matmul => vec![0.0; channels],
    };
    let (weight_bytes, weight_scales) = quantize_weights(&values, channels, channel_of);
    let input_scale = bound / QMAX;

    let error = |e: PassError| e.message;
    let b = TosaBuilder::before(context, op).map_err(error)?;
    let i8_type: Type = IntegerType::new(context, 8).into();
    let i32_type: Type = IntegerType::new(context, 32).into();
    let f32_type = Type::float32(context);
    let typed = |shape: &[i64], element: Type<'c>| {
        StaticTensor {
            shape: shape.to_vec(),
            element,
        }
        .to_type()
    };
    let constant = |tensor: ConstTensor, element: Type<'c>| -> Result<Value<'c, 'c>, String> {
        let ty = typed(&tensor.shape, element);
        let attribute = tensor.to_attribute(ty)?;
        b.constant(attribute, ty).map_err(error)
    };
    let rank = input_type.rank();

    // xq = cast<i8>(x / s_in)
    let inverse = b
        .scalar(f64::from(1.0 / input_scale), rank, f32_type)
        .map_err(error)?;
    let scaled = b.mul(input, inverse).map_err(error)?;
    let quantized_input = b
        .insert(
            "tosa.cast",
            &[scaled],
            typed(&input_type.shape, i8_type),
            &[],
        )
        .map_err(error)?;
    let weight_q = constant(
        ConstTensor {
            shape: shape.clone(),
            element: ElementType::I8,
            bytes: weight_bytes,
        },
        i8_type,
    )?;
    let zero_type = typed(&[1], i8_type);
    let zero = b
        .constant(
            DenseElementsAttribute::i8_splat(zero_type, 0).into(),
            zero_type,
        )
        .map_err(error)?;
    let accumulator_type = typed(&result_type.shape, i32_type);
    let accumulator = match kind {
        Contraction::Conv2d | Contraction::Depthwise => {
            let bias_type = typed(&[channels as i64], i32_type);
            let zero_bias = b
                .constant(
                    DenseElementsAttribute::i32_splat(bias_type, 0).into(),
                    bias_type,
                )
                .map_err(error)?;
            let mut attributes = copied_attributes(op);
            attributes.retain(|(name, _)| name != "acc_type");
            attributes.push(("acc_type".into(), TypeAttribute::new(i32_type).into()));
            let attributes: Vec<(&str, Attribute)> =
                attributes.iter().map(|(n, a)| (n.as_str(), *a)).collect();
            b.insert(
                &op_name(&op),
                &[quantized_input, weight_q, zero_bias, zero, zero],
                accumulator_type,
                &attributes,
            )
            .map_err(error)?
        }
        Contraction::Matmul => b
            .insert(
                "tosa.matmul",
                &[quantized_input, weight_q, zero, zero],
                accumulator_type,
                &[],
            )
            .map_err(error)?,
    };
    // y = cast<f32>(acc) * (s_in * s_w[c]) + bias
    let dequantized = b
        .insert("tosa.cast", &[accumulator], result.r#type(), &[])
        .map_err(error)?;
    let mut channel_shape = vec![1i64; result_type.rank()];
    if let Some(last) = channel_shape.last_mut() {
        *last = channels as i64;
    }
    let scales: Vec<f32> = weight_scales.iter().map(|s| s * input_scale).collect();
    let scale = constant(
        ConstTensor::from_f32s(channel_shape.clone(), &scales),
        f32_type,
    )?;
    let mut output = b.mul(dequantized, scale).map_err(error)?;
    if bias.iter().any(|&v| v != 0.0) {
        let bias = constant(ConstTensor::from_f32s(channel_shape, &bias), f32_type)?;
        output = b.binary("tosa.add", output, bias).map_err(error)?;
    }
    replace_and_erase(op, result, output);
    Ok(())
}

/// An op's attributes, by name.
fn copied_attributes<'c>(op: OperationRef<'c, 'c>) -> Vec<(String, Attribute<'c>)> {
    let count = unsafe { mlir_sys::mlirOperationGetNumAttributes(op.to_raw()) };
    (0..count)
        .map(|i| {
            let named = unsafe { mlir_sys::mlirOperationGetAttribute(op.to_raw(), i) };
            let name = unsafe { mlir_sys::mlirIdentifierStr(named.name) };
            let bytes = unsafe { std::slice::from_raw_parts(name.data as *const u8, name.length) };
            (String::from_utf8_lossy(bytes).into_owned(), unsafe {
                Attribute::from_raw(named.attribute)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::quantize_weights;

    #[test]
    fn weights_are_symmetric_per_channel() {
        // Two channels, interleaved (channel = index % 2).
        let (bytes, scales) = quantize_weights(&[1.0, 0.5, -2.0, 0.25, 0.0, 0.0], 2, |i| i % 2);
        assert_eq!(scales, [2.0 / 127.0, 0.5 / 127.0]);
        let q: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
        assert_eq!(q, [64, 127, -127, 64, 0, 0]);
        let (_, zero) = quantize_weights(&[0.0, 0.0], 1, |_| 0);
        assert_eq!(zero, [1.0]);
    }
}
