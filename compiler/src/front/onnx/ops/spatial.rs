//! Spatial ops built from gathers, pads and slices with import-time
//! geometry: MaxPool's Indices output, CenterCropPad and Col2Im.

use super::super::dtype::{DType, checked_numel};
use super::super::emit::{Attr, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::Const;
use super::pool::{Window, per_axis};
use super::{one, tensor};

/// Row-major multi-indices of `shape`.
fn for_each_index(shape: &[i64], f: &mut dyn FnMut(&[i64])) {
    let total: i64 = shape.iter().product();
    let mut idx = vec![0i64; shape.len()];
    for _ in 0..total {
        f(&idx);
        for a in (0..shape.len()).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

/// MaxPool's Indices: the flat NC... index (row-major, or column-major
/// over the spatial axes for `storage_order = 1`) of each window's first
/// maximum. Every window tap is gathered with constant indices (padding
/// points at an appended -inf row), `tosa.argmax` picks the tap, and a
/// second gather maps (output, tap) to the input index.
/// What a maximum starts from and pads with: -inf, or an integer type's
/// least value (MaxPool of int8/uint8; tcc widens unsigned types, whose
/// values are then never negative).
pub fn lowest(dtype: DType) -> f64 {
    match dtype {
        DType::I8 => i8::MIN as f64,
        DType::I16 => i16::MIN as f64,
        DType::I32 => i32::MIN as f64,
        dtype if dtype.is_int() => i64::MIN as f64,
        _ => f64::NEG_INFINITY,
    }
}

pub fn max_pool_indices(
    imp: &mut Importer,
    node: &Node,
    x: &Val,
    windows: &[Window],
) -> Result<Val> {
    let storage_order = node.int("storage_order", 0)?;
    if !(storage_order == 0 || storage_order == 1) {
        bail!("MaxPool storage_order {storage_order} (0 or 1)");
    }
    let shape = x.shape().to_vec();
    let (n, c) = (shape[0], shape[1]);
    let inputs: Vec<i64> = windows.iter().map(|w| w.input).collect();
    let outputs: Vec<i64> = windows.iter().map(|w| w.output).collect();
    let kernels: Vec<i64> = windows.iter().map(|w| w.kernel).collect();
    let (Some(s), Some(o), Some(k)) = (
        checked_numel(&inputs),
        checked_numel(&outputs),
        checked_numel(&kernels),
    ) else {
        bail!("MaxPool indices of {} are too large", x.ty);
    };
    let nc = n * c;
    if (nc as i128) * (s as i128) >= i32::MAX as i128 || (o as i128) * (k as i128) > 1 << 24 {
        bail!("MaxPool indices of {} are too large", x.ty);
    }
    let row_strides: Vec<i64> = (0..inputs.len())
        .map(|a| inputs[a + 1..].iter().product())
        .collect();
    let col_strides: Vec<i64> = (0..inputs.len())
        .map(|a| inputs[..a].iter().product())
        .collect();
    let mut gather_index = Vec::with_capacity((o * k) as usize);
    let mut reported = Vec::with_capacity((o * k) as usize);
    for_each_index(&outputs, &mut |out| {
        for_each_index(&kernels, &mut |tap| {
            let mut flat_row = 0;
            let mut flat_col = 0;
            let mut inside = true;
            for (a, w) in windows.iter().enumerate() {
                let p = out[a] * w.stride - w.pad_begin + tap[a] * w.dilation;
                if p < 0 || p >= w.input {
                    inside = false;
                }
                flat_row += p * row_strides[a];
                flat_col += p * col_strides[a];
            }
            gather_index.push(if inside { flat_row } else { s });
            reported.push(if !inside {
                0
            } else if storage_order == 0 {
                flat_row
            } else {
                flat_col
            });
        });
    });
    // [1, S + 1, NC] with the -inf row last.
    let flat = imp.e.reshape(x, &[nc, s]);
    let t = imp.e.transpose(&flat, &[1, 0]);
    let rows = imp.e.reshape(&t, &[1, s, nc]);
    let ninf = imp.e.splat(x.dtype(), vec![1, 1, nc], lowest(x.dtype()));
    let values = imp.e.concat(&[rows, ninf], 1);
    let idx = imp.e.constant(
        &Const::from_i64(DType::I32, vec![1, o * k], &gather_index),
        "pool_taps",
    )?;
    let taps = imp.e.op(
        "tosa.gather",
        &[&values, &idx],
        &[],
        values.ty.with_shape(vec![1, o * k, nc]),
    );
    let taps = imp.e.reshape(&taps, &[o, k, nc]);
    let best = imp.e.op(
        "tosa.argmax",
        &[&taps],
        &[("axis", Attr::i32(1))],
        taps.ty.with_shape(vec![o, nc]).with_dtype(DType::I32),
    );
    // (o, tap) -> o * K + tap -> the reported input index.
    let base: Vec<i64> = (0..o).map(|i| i * k).collect();
    let base = imp
        .e
        .constant(&Const::from_i64(DType::I32, vec![o, 1], &base), "pool_rows")?;
    let pos = imp.e.add(&best, &base)?;
    let pos = imp.e.reshape(&pos, &[1, o * nc]);
    let table = imp.e.constant(
        &Const::from_i64(DType::I32, vec![1, o * k, 1], &reported),
        "pool_index",
    )?;
    let found = imp.e.op(
        "tosa.gather",
        &[&table, &pos],
        &[],
        table.ty.with_shape(vec![1, o * nc, 1]),
    );
    let found = imp.e.reshape(&found, &[o, nc]);
    let found = imp.e.transpose(&found, &[1, 0]);
    let offsets: Vec<i64> = (0..nc).map(|i| i * s).collect();
    let offsets = imp.e.constant(
        &Const::from_i64(DType::I32, vec![nc, 1], &offsets),
        "pool_offsets",
    )?;
    let flat = imp.e.add(&found, &offsets)?;
    let flat = imp.e.cast(&flat, DType::I64);
    let mut out_shape = vec![n, c];
    out_shape.extend_from_slice(&outputs);
    Ok(imp.e.reshape(&flat, &out_shape))
}

pub fn center_crop_pad(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let rank = x.rank();
    let shape = node
        .const_ints(1, "the shape")?
        .ok_or_else(|| ImportError::new("CenterCropPad needs a shape"))?;
    let axes: Vec<usize> = match node.ints("axes")? {
        Some(a) => {
            let mut out = Vec::new();
            for &v in &a {
                let v = node.axis(v, rank, "CenterCropPad axis")?;
                if out.contains(&v) {
                    bail!("CenterCropPad axis {v} appears twice");
                }
                out.push(v);
            }
            out
        }
        None => (0..rank).collect(),
    };
    if shape.len() != axes.len() {
        bail!(
            "CenterCropPad has {} sizes for {} axes",
            shape.len(),
            axes.len()
        );
    }
    let dims = x.shape();
    let mut start = vec![0; rank];
    let mut size = dims.clone();
    let mut pads = vec![(0, 0); rank];
    for (&a, &target) in axes.iter().zip(&shape) {
        if target <= 0 {
            bail!("CenterCropPad size {target} must be positive");
        }
        let d = dims[a];
        if target < d {
            start[a] = (d - target) / 2;
            size[a] = target;
        } else if target > d {
            let extra = target - d;
            pads[a] = (extra / 2, extra - extra / 2);
        }
    }
    let mut out = size.clone();
    for (a, &(b, e)) in pads.iter().enumerate() {
        out[a] += b + e;
    }
    if checked_numel(&out).is_none_or(|n| n > i32::MAX as i64) {
        bail!("CenterCropPad to {out:?} is too large");
    }
    let v = imp.val(x)?;
    let cropped = imp.e.slice(&v, &start, &size);
    tensor(imp.e.pad(&cropped, &pads, 0.0))
}

/// Col2Im: every kernel tap's column block is spread over the padded image
/// with the strides (interleaved with zeros by pad + reshape), shifted by
/// its dilated offset, and the taps are summed; the padding is cropped.
pub fn col2im(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    if !input.dtype().is_float() {
        bail!("Col2Im of {} tensors is not supported", input.dtype());
    }
    let image = node
        .const_ints(1, "image_shape")?
        .ok_or_else(|| ImportError::new("Col2Im needs image_shape"))?;
    let block = node
        .const_ints(2, "block_shape")?
        .ok_or_else(|| ImportError::new("Col2Im needs block_shape"))?;
    let d = image.len();
    if d == 0 || block.len() != d || input.rank() != 3 {
        bail!("Col2Im needs a [N, C * prod(block), L] input and image/block shapes of one length");
    }
    if image.iter().chain(&block).any(|&v| v <= 0) {
        bail!("Col2Im image and block shapes must be positive");
    }
    let dilations = per_axis(node, "dilations", d, 1)?;
    let strides = per_axis(node, "strides", d, 1)?;
    let pads = node.ints("pads")?.unwrap_or_else(|| vec![0; 2 * d]);
    if pads.len() != 2 * d || pads.iter().any(|&p| p < 0) {
        bail!("Col2Im pads {pads:?} for {d} axes");
    }
    if dilations.iter().chain(&strides).any(|&v| v <= 0) {
        bail!("Col2Im strides and dilations must be positive");
    }
    let s = input.shape();
    let (n, ck, l) = (s[0], s[1], s[2]);
    let Some(k) = checked_numel(&block).filter(|&k| k <= 1 << 16) else {
        bail!("Col2Im block {block:?} is too large");
    };
    if ck % k != 0 {
        bail!("Col2Im: {ck} rows are not a multiple of the block's {k} elements");
    }
    let c = ck / k;
    let limit = 1i128 << 31;
    let padded: Vec<i128> = (0..d)
        .map(|a| image[a] as i128 + pads[a] as i128 + pads[d + a] as i128)
        .collect();
    let blocks: Vec<i128> = (0..d)
        .map(|a| {
            (padded[a] - (dilations[a] as i128 * (block[a] as i128 - 1) + 1))
                .div_euclid(strides[a] as i128)
                + 1
        })
        .collect();
    if padded.iter().chain(&blocks).any(|&v| v > limit)
        || blocks.iter().any(|&b| b <= 0)
        || blocks.iter().product::<i128>() != l as i128
        || (k as i128) * (l as i128) > limit
    {
        bail!("Col2Im: {l} blocks do not match the image {image:?} with block {block:?}");
    }
    let padded: Vec<i64> = padded.iter().map(|&v| v as i64).collect();
    let blocks: Vec<i64> = blocks.iter().map(|&v| v as i64).collect();
    let x = imp.val(input)?;
    // [N, C, K, L].
    let x = imp.e.reshape(&x, &[n, c, k, l]);
    let mut sum: Option<Val> = None;
    let mut taps = Vec::new();
    for_each_index(&block, &mut |tap| taps.push(tap.to_vec()));
    for (tap_index, tap) in (0i64..).zip(taps) {
        let part = imp.e.slice_axis(&x, 2, tap_index, tap_index + 1);
        // [N, C, b0, 1, b1, 1, ...] padded to strides, then flattened.
        let mut split = vec![n, c];
        for &b in &blocks {
            split.extend([b, 1]);
        }
        let r = imp.e.reshape(&part, &split);
        let mut spread = vec![(0, 0), (0, 0)];
        for &st in &strides {
            spread.extend([(0, 0), (0, st - 1)]);
        }
        let r = imp.e.pad(&r, &spread, 0.0);
        let mut flat = vec![n, c];
        flat.extend((0..d).map(|a| blocks[a] * strides[a]));
        let r = imp.e.reshape(&r, &flat);
        // Shift by the tap's offset within the padded image.
        let mut shift = vec![(0, 0), (0, 0)];
        let mut keep = vec![n, c];
        for a in 0..d {
            let before = tap[a] * dilations[a];
            // Elements past the padded image are the stride's zeros.
            let len = (blocks[a] * strides[a]).min(padded[a] - before);
            keep.push(len);
            shift.push((before, padded[a] - before - len));
        }
        let r = imp.e.slice(&r, &vec![0; d + 2], &keep);
        let r = imp.e.pad(&r, &shift, 0.0);
        sum = Some(match sum {
            Some(acc) => imp.e.add(&acc, &r)?,
            None => r,
        });
    }
    let y = sum.unwrap();
    let mut start = vec![0, 0];
    start.extend_from_slice(&pads[..d]);
    let mut size = vec![n, c];
    size.extend_from_slice(&image);
    one(Value::Tensor(imp.e.slice(&y, &start, &size)))
}
