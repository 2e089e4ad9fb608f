//! `RoiAlign` (opset 10, 16, 22): for each region `[x1, y1, x2, y2]` (in
//! the input's coordinates times `spatial_scale`), an `output_height x
//! output_width` grid of bins, each the average (`avg`) or maximum (`max`)
//! of `sampling_ratio²` bilinear samples, exactly as onnxruntime (and the
//! ONNX reference, which follows it) computes them: a sample outside
//! `[-1, size]` reads 0, one below 0 is clamped to 0, one at the last row
//! or column reads it alone; `max` takes the largest of a sample's four
//! weighted taps.
//!
//! The regions are run-time values, so the sample positions are computed
//! in the program, per axis: a sample's two taps along an axis become a
//! row of a weight matrix over that axis (`hy` at `y_low`, `ly` at
//! `y_high`, 0 elsewhere and for a sample out of range), `[R, OH·s, H]`
//! for the rows and `[R, OW·s, W]` for the columns. A bin's samples are
//! then two batched matmuls, `Wy · X[batch_index] · Wxᵀ`: for `avg` with
//! both taps of each axis in one matrix (the four weighted taps summed),
//! for `max` once per tap pair (low/high row times low/high column), the
//! four results' maximum taken; then the mean or maximum over each bin's
//! samples. Written in the importer's own ops ([`super::synthetic`]).
//!
//! `sampling_ratio = 0` (adaptive: `ceil(roi_size / output_size)`
//! samples, a number that depends on the regions' values) needs the
//! regions to be constants.

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::shape::reshape_value;
use super::{int_attr, ints_attr, one, synthetic};

fn scalar(v: f64) -> Value {
    Value::constant(Const::from_f64(DType::F32, vec![1, 1], &[v]))
}

fn ints(values: &[i64]) -> Value {
    Value::constant(Const::from_i64(
        DType::I64,
        vec![values.len() as i64],
        values,
    ))
}

/// Column `i` of `rois` (`[R, 4]`) as `[R, 1]`.
fn column(imp: &mut Importer, rois: &Value, i: i64) -> Result<Value> {
    synthetic(
        imp,
        "Slice",
        vec![rois.clone(), ints(&[i]), ints(&[i + 1]), ints(&[1])],
        vec![],
    )
}

fn op(imp: &mut Importer, op_type: &str, inputs: Vec<Value>) -> Result<Value> {
    synthetic(imp, op_type, inputs, vec![])
}

/// The weight matrices of the low and high taps of the samples along one
/// axis of `size` elements: `start` and `bin` (`[R, 1]`) place the
/// regions, `bins` bins of `s` samples each; each matrix is
/// `[R, bins * s, size]`.
fn tap_weights(
    imp: &mut Importer,
    start: &Value,
    bin: &Value,
    (bins, s, size): (i64, i64, i64),
) -> Result<(Value, Value)> {
    let n = bins * s;
    // Sample j sits at start + (j / s + (j % s + 0.5) / s) * bin.
    let offsets: Vec<f64> = (0..n)
        .map(|j| (j / s) as f64 + ((j % s) as f64 + 0.5) / s as f64)
        .collect();
    let offsets = Value::constant(Const::from_f64(DType::F32, vec![1, n], &offsets));
    let scaled = op(imp, "Mul", vec![offsets, bin.clone()])?;
    let c = op(imp, "Add", vec![start.clone(), scaled])?;
    // Samples outside [-1, size] read 0.
    let below = op(imp, "Less", vec![c.clone(), scalar(-1.0)])?;
    let above = op(imp, "Greater", vec![c.clone(), scalar(size as f64)])?;
    let out = op(imp, "Or", vec![below, above])?;
    let valid = synthetic(imp, "Where", vec![out, scalar(0.0), scalar(1.0)], vec![])?;
    let c = op(imp, "Max", vec![c, scalar(0.0)])?;
    let floor = op(imp, "Floor", vec![c.clone()])?;
    // At or past the last element: both taps there, at weight 1 and 0.
    let last = (size - 1) as f64;
    let at_end = op(imp, "GreaterOrEqual", vec![floor.clone(), scalar(last)])?;
    let low = synthetic(
        imp,
        "Where",
        vec![at_end.clone(), scalar(last), floor.clone()],
        vec![],
    )?;
    let high = op(imp, "Add", vec![floor, scalar(1.0)])?;
    let high = synthetic(
        imp,
        "Where",
        vec![at_end.clone(), scalar(last), high],
        vec![],
    )?;
    let c = synthetic(imp, "Where", vec![at_end, low.clone(), c], vec![])?;
    let l = op(imp, "Sub", vec![c, low.clone()])?;
    let h = op(imp, "Sub", vec![scalar(1.0), l.clone()])?;
    let (l, h) = (
        op(imp, "Mul", vec![l, valid.clone()])?,
        op(imp, "Mul", vec![h, valid])?,
    );
    // [R, n, 1] against the positions [1, 1, size].
    let positions: Vec<f64> = (0..size).map(|k| k as f64).collect();
    let positions = Value::constant(Const::from_f64(DType::F32, vec![1, 1, size], &positions));
    let r = start.shape()[0];
    let matrix = |imp: &mut Importer, at: Value, w: Value| -> Result<Value> {
        let at = reshape_value(imp, &at, &[r, n, 1])?;
        let w = reshape_value(imp, &w, &[r, n, 1])?;
        let hit = op(imp, "Equal", vec![at, positions.clone()])?;
        let zero = Value::constant(Const::from_f64(DType::F32, vec![1, 1, 1], &[0.0]));
        synthetic(imp, "Where", vec![hit, w, zero], vec![])
    };
    let w_low = matrix(imp, low, h)?;
    let w_high = matrix(imp, high, l)?;
    Ok((w_low, w_high))
}

pub fn roi_align(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    let rois = node.input(1)?.clone();
    let batch_indices = node.input(2)?.clone();
    require_float(&x, "RoiAlign's input")?;
    if x.dtype() != DType::F32 {
        bail!(
            "RoiAlign on {} tensors is not supported (float32)",
            x.dtype()
        );
    }
    let xs = x.shape();
    if xs.len() != 4 {
        bail!("RoiAlign's input must be [N, C, H, W], not {}", x.ty());
    }
    let rs = rois.shape();
    if rs.len() != 2 || rs[1] != 4 || rois.dtype() != x.dtype() {
        bail!(
            "RoiAlign's rois must be [num_rois, 4] of the input's type, not {}",
            rois.ty()
        );
    }
    let r = rs[0];
    if batch_indices.shape() != [r] || !batch_indices.dtype().is_int() {
        bail!(
            "RoiAlign's batch_indices must be [{r}] integers, not {}",
            batch_indices.ty()
        );
    }
    let (channels, height, width) = (xs[1], xs[2], xs[3]);
    let oh = node.int("output_height", 1)?;
    let ow = node.int("output_width", 1)?;
    let s = node.int("sampling_ratio", 0)?;
    if oh < 1 || ow < 1 {
        bail!("RoiAlign's output size {oh}x{ow} must be positive");
    }
    if s < 0 {
        bail!("RoiAlign's sampling_ratio {s} must not be negative");
    }
    if s == 0 {
        bail!(
            "RoiAlign's sampling_ratio 0 (adaptive: ceil(roi size / output size) samples per bin) depends on the values of the rois, which are computed at run time; tcc needs a positive sampling_ratio"
        );
    }
    if height == 0 || width == 0 || r == 0 {
        bail!("RoiAlign of an empty input or no rois is not supported");
    }
    let mode = node.string("mode", "avg")?;
    let max = match mode.as_str() {
        "avg" => false,
        "max" => true,
        other => bail!("RoiAlign's mode '{other}' is not avg or max"),
    };
    let half_pixel = if node.opset >= 16 {
        match node
            .string("coordinate_transformation_mode", "half_pixel")?
            .as_str()
        {
            "half_pixel" => true,
            "output_half_pixel" => false,
            other => bail!(
                "RoiAlign's coordinate_transformation_mode '{other}' is not half_pixel or output_half_pixel"
            ),
        }
    } else {
        false
    };
    let scale = node.float("spatial_scale", 1.0)? as f64;
    let offset = if half_pixel { 0.5 } else { 0.0 };
    // Region starts and bin sizes, [R, 1] each.
    let corner = |imp: &mut Importer, i: i64| -> Result<Value> {
        let v = column(imp, &rois, i)?;
        let v = op(imp, "Mul", vec![v, scalar(scale)])?;
        op(imp, "Sub", vec![v, scalar(offset)])
    };
    let (x1, y1, x2, y2) = (
        corner(imp, 0)?,
        corner(imp, 1)?,
        corner(imp, 2)?,
        corner(imp, 3)?,
    );
    let extent = |imp: &mut Importer, a: &Value, b: &Value, bins: i64| -> Result<Value> {
        let mut size = op(imp, "Sub", vec![b.clone(), a.clone()])?;
        if !half_pixel {
            // Legacy (output_half_pixel): regions at least 1 wide.
            size = op(imp, "Max", vec![size, scalar(1.0)])?;
        }
        op(imp, "Div", vec![size, scalar(bins as f64)])
    };
    let bin_h = extent(imp, &y1, &y2, oh)?;
    let bin_w = extent(imp, &x1, &x2, ow)?;
    let (wy_low, wy_high) = tap_weights(imp, &y1, &bin_h, (oh, s, height))?;
    let (wx_low, wx_high) = tap_weights(imp, &x1, &bin_w, (ow, s, width))?;
    // Each region's image: [R, C, H, W].
    let indices = synthetic(
        imp,
        "Cast",
        vec![batch_indices],
        vec![int_attr("to", DType::I64.onnx_code() as i64)],
    )?;
    let images = synthetic(imp, "Gather", vec![x, indices], vec![int_attr("axis", 0)])?;
    // Wy [R, 1, OH*s, H] · X [R, C, H, W] · Wxᵀ [R, 1, W, OW*s].
    let sample = |imp: &mut Importer, wy: &Value, wx: &Value| -> Result<Value> {
        let wy = reshape_value(imp, wy, &[r, 1, oh * s, height])?;
        let wx = reshape_value(imp, wx, &[r, 1, ow * s, width])?;
        let wxt = synthetic(
            imp,
            "Transpose",
            vec![wx],
            vec![ints_attr("perm", &[0, 1, 3, 2])],
        )?;
        let rows = op(imp, "MatMul", vec![wy, images.clone()])?;
        op(imp, "MatMul", vec![rows, wxt])
    };
    let samples = if max {
        let mut best: Option<Value> = None;
        for wy in [&wy_low, &wy_high] {
            for wx in [&wx_low, &wx_high] {
                let v = sample(imp, wy, wx)?;
                best = Some(match best {
                    None => v,
                    Some(b) => op(imp, "Max", vec![b, v])?,
                });
            }
        }
        best.expect("four tap pairs")
    } else {
        let wy = op(imp, "Add", vec![wy_low, wy_high])?;
        let wx = op(imp, "Add", vec![wx_low, wx_high])?;
        sample(imp, &wy, &wx)?
    };
    // [R, C, OH, s, OW, s] reduced over the samples of each bin.
    let grouped = reshape_value(imp, &samples, &[r, channels, oh, s, ow, s])?;
    let reduce = if max { "ReduceMax" } else { "ReduceMean" };
    let y = synthetic(
        imp,
        reduce,
        vec![grouped, ints(&[3, 5])],
        vec![int_attr("keepdims", 0)],
    )?;
    one(y)
}
