//! Ops whose output shape depends on their input values: Compress,
//! NonZero and Unique. tcc compiles static shapes, so they are evaluated
//! at import time when their inputs are constants; on a value computed at
//! run time they are an error that says so.

use std::cmp::Ordering;

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::node::{Node, Value};
use super::super::tensor::Const;

/// Input `index` as a constant, or the error for a run-time value.
fn known<'a>(node: &'a Node, index: usize, what: &str) -> Result<&'a Const> {
    match node.input(index)? {
        Value::Const(c) if c.numel() as i64 <= fold::FOLD_LIMIT => Ok(c),
        Value::Const(c) => bail!(
            "{} of a constant {what} of {} elements is too large to evaluate at import time",
            node.op(),
            c.numel()
        ),
        Value::Tensor(_) => bail!(
            "{}'s output shape depends on the values of its {what} (input #{index} '{}'), which are computed at run time; tcc needs static shapes (dynamic shapes are not supported yet)",
            node.op(),
            node.proto
                .input
                .get(index)
                .map(String::as_str)
                .unwrap_or("")
        ),
    }
}

pub fn non_zero(node: &Node) -> Result<Vec<Value>> {
    let x = known(node, 0, "input")?;
    let rank = x.shape.len();
    let strides = fold::strides(&x.shape);
    let hits: Vec<usize> = (0..x.numel()).filter(|&i| x.f64_at(i) != 0.0).collect();
    let mut out = vec![0i64; rank.max(1) * hits.len()];
    if rank == 0 {
        // A scalar: one row of zeros per nonzero (as numpy's nonzero of a
        // 0-d array promoted to 1-d).
        let shape = vec![1, hits.len() as i64];
        return Ok(vec![Value::constant(Const::from_i64(
            DType::I64,
            shape,
            &out,
        ))]);
    }
    for (column, &flat) in hits.iter().enumerate() {
        for axis in 0..rank {
            out[axis * hits.len() + column] =
                ((flat / strides[axis]) % x.shape[axis] as usize) as i64;
        }
    }
    Ok(vec![Value::constant(Const::from_i64(
        DType::I64,
        vec![rank as i64, hits.len() as i64],
        &out,
    ))])
}

pub fn compress(node: &Node) -> Result<Vec<Value>> {
    let x = known(node, 0, "input")?;
    let condition = known(node, 1, "condition")?;
    if condition.shape.len() != 1 {
        bail!(
            "Compress's condition must be 1-D, not {:?}",
            condition.shape
        );
    }
    let (data, axis) = match node.int_opt("axis")? {
        Some(a) => {
            let axis = node.axis(a, x.shape.len(), "Compress axis")?;
            (x.clone(), axis)
        }
        None => (x.reshaped(vec![x.numel() as i64]), 0),
    };
    let length = data.shape[axis] as usize;
    if condition.numel() > length {
        bail!(
            "Compress's condition has {} elements for an axis of {length}",
            condition.numel()
        );
    }
    let picked: Vec<i64> = (0..condition.numel())
        .filter(|&i| condition.f64_at(i) != 0.0)
        .map(|i| i as i64)
        .collect();
    Ok(vec![Value::constant(fold::gather(
        &data,
        axis,
        &picked,
        &[picked.len() as i64],
    ))])
}

/// Total order of elements for sorting (numpy's: NaN last).
fn compare(a: &[f64], b: &[f64]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

pub fn unique(node: &Node) -> Result<Vec<Value>> {
    let x = known(node, 0, "input")?;
    let sorted = node.int("sorted", 1)? != 0;
    let (data, axis) = match node.int_opt("axis")? {
        Some(a) => {
            let axis = node.axis(a, x.shape.len(), "Unique axis")?;
            (x.clone(), axis)
        }
        None => (x.reshaped(vec![x.numel() as i64]), 0),
    };
    let length = data.shape[axis] as usize;
    // Each slice along the axis as its elements (integers exactly as f64
    // where they fit; larger ones compared by their i64 value).
    let slices: Vec<Vec<i64>> = (0..length)
        .map(|i| {
            let s = fold::gather(&data, axis, &[i as i64], &[1]);
            if data.dtype.is_float() {
                s.f64s().iter().map(|v| v.to_bits() as i64).collect()
            } else {
                s.i64s()
            }
        })
        .collect();
    let values = |i: usize| -> Vec<f64> {
        if data.dtype.is_float() {
            slices[i]
                .iter()
                .map(|&b| f64::from_bits(b as u64))
                .collect()
        } else {
            slices[i].iter().map(|&v| v as f64).collect()
        }
    };
    // Equal slices have equal keys: floats by their bits with -0 as +0
    // and every NaN as one NaN (numpy's unique counts NaNs as equal).
    let key = |i: usize| -> Vec<i64> {
        if data.dtype.is_float() {
            values(i)
                .iter()
                .map(|&v| {
                    let v = if v == 0.0 {
                        0.0
                    } else if v.is_nan() {
                        f64::NAN
                    } else {
                        v
                    };
                    v.to_bits() as i64
                })
                .collect()
        } else {
            slices[i].clone()
        }
    };
    // First occurrences in input order, then (sorted) in value order.
    let mut firsts: Vec<usize> = Vec::new();
    let mut seen: std::collections::HashMap<Vec<i64>, usize> = std::collections::HashMap::new();
    let inverse_first: Vec<usize> = (0..length)
        .map(|i| {
            *seen.entry(key(i)).or_insert_with(|| {
                firsts.push(i);
                firsts.len() - 1
            })
        })
        .collect();
    let mut order: Vec<usize> = (0..firsts.len()).collect();
    if sorted {
        order.sort_by(|&a, &b| {
            let (i, j) = (firsts[a], firsts[b]);
            if data.dtype.is_float() {
                compare(&values(i), &values(j))
            } else {
                slices[i].cmp(&slices[j])
            }
        });
    }
    let mut rank_of = vec![0usize; firsts.len()];
    for (r, &o) in order.iter().enumerate() {
        rank_of[o] = r;
    }
    let indices: Vec<i64> = order.iter().map(|&o| firsts[o] as i64).collect();
    let inverse: Vec<i64> = inverse_first.iter().map(|&p| rank_of[p] as i64).collect();
    let mut counts = vec![0i64; firsts.len()];
    for &p in &inverse {
        counts[p as usize] += 1;
    }
    let n = indices.len() as i64;
    let y = fold::gather(&data, axis, &indices, &[n]);
    let vector = |v: &[i64]| Const::from_i64(DType::I64, vec![v.len() as i64], v);
    let outputs = [y, vector(&indices), vector(&inverse), vector(&counts)];
    if node.proto.output.len() > outputs.len() {
        return Err(ImportError::new("Unique has at most four outputs"));
    }
    Ok(outputs
        .into_iter()
        .take(node.proto.output.len().max(1))
        .map(Value::constant)
        .collect())
}

/// Whether boxes `a` and `b` (4 coordinates each: corners `[y1, x1, y2,
/// x2]` in any order, or `[x_center, y_center, width, height]`) overlap
/// with an intersection over union above `threshold`, as ONNX's reference
/// and onnxruntime decide it.
fn suppresses(a: [f64; 4], b: [f64; 4], center_point: bool, threshold: f64) -> bool {
    // Per axis (y then x for corners, x then y for centers): min and max.
    let span = |lo: f64, hi: f64| (lo.min(hi), lo.max(hi));
    let extents = |box_: [f64; 4]| {
        if center_point {
            let (hw, hh) = (box_[2] / 2.0, box_[3] / 2.0);
            [(box_[0] - hw, box_[0] + hw), (box_[1] - hh, box_[1] + hh)]
        } else {
            [span(box_[0], box_[2]), span(box_[1], box_[3])]
        }
    };
    let (ea, eb) = (extents(a), extents(b));
    let mut intersection = 1.0;
    for axis in 0..2 {
        let low = ea[axis].0.max(eb[axis].0);
        let high = ea[axis].1.min(eb[axis].1);
        if high <= low {
            return false;
        }
        intersection *= high - low;
    }
    let area = |e: [(f64, f64); 2]| (e[0].1 - e[0].0) * (e[1].1 - e[1].0);
    let (area_a, area_b) = (area(ea), area(eb));
    let union = area_a + area_b - intersection;
    if intersection <= 0.0 || area_a <= 0.0 || area_b <= 0.0 || union <= 0.0 {
        return false;
    }
    intersection / union > threshold
}

/// `NonMaxSuppression(boxes, scores, max_output_boxes_per_class?,
/// iou_threshold?, score_threshold?)`: the number of selected boxes (the
/// output's first dimension) depends on the values, so it is evaluated
/// here on constants (per batch and class: boxes above the score
/// threshold by descending score, ties by lower index, each kept unless it
/// overlaps a kept one above the IoU threshold, at most
/// `max_output_boxes_per_class`), and an error on run-time boxes or scores.
pub fn non_max_suppression(node: &Node) -> Result<Vec<Value>> {
    let boxes = known(node, 0, "boxes")?;
    let scores = known(node, 1, "scores")?;
    let op = node.op();
    let scalar = |index: usize, what: &str| -> Result<Option<&Const>> {
        match node.opt(index) {
            None => Ok(None),
            Some(Value::Const(c)) if c.numel() == 0 => Ok(None),
            Some(Value::Const(c)) => Ok(Some(c)),
            Some(Value::Tensor(_)) => bail!(
                "{op}'s {what} (input #{index}) is computed at run time; with constant boxes and \
                 scores tcc evaluates the op at import time and needs it to be a constant too"
            ),
        }
    };
    let max_out = scalar(2, "max_output_boxes_per_class")?.map_or(0, |c| c.i64_at(0).max(0));
    let iou = scalar(3, "iou_threshold")?.map_or(0.0, |c| c.f64_at(0));
    let score_threshold = scalar(4, "score_threshold")?.map(|c| c.f64_at(0));
    let center_point = node.int("center_point_box", 0)? != 0;
    let (bs, ss) = (&boxes.shape, &scores.shape);
    if bs.len() != 3 || bs[2] != 4 || ss.len() != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
        bail!(
            "{op}: boxes of shape {bs:?} and scores of shape {ss:?} are not [batches, boxes, 4] \
             and [batches, classes, boxes]"
        );
    }
    let (batches, classes, count) = (bs[0] as usize, ss[1] as usize, bs[1] as usize);
    let mut selected: Vec<i64> = Vec::new();
    for batch in 0..batches {
        let box_at = |i: usize| {
            let at = (batch * count + i) * 4;
            [0, 1, 2, 3].map(|k| boxes.f64_at(at + k))
        };
        for class in 0..classes {
            let score = |i: usize| scores.f64_at((batch * classes + class) * count + i);
            let mut candidates: Vec<usize> = (0..count)
                .filter(|&i| score_threshold.is_none_or(|t| score(i) > t))
                .collect();
            // Descending score, ties by lower index (a stable sort).
            candidates.sort_by(|&a, &b| score(b).partial_cmp(&score(a)).unwrap_or(Ordering::Equal));
            let mut kept: Vec<usize> = Vec::new();
            for i in candidates {
                if kept.len() as i64 >= max_out {
                    break;
                }
                if kept
                    .iter()
                    .all(|&k| !suppresses(box_at(i), box_at(k), center_point, iou))
                {
                    kept.push(i);
                    selected.extend([batch as i64, class as i64, i as i64]);
                }
            }
        }
    }
    let rows = selected.len() as i64 / 3;
    Ok(vec![Value::constant(Const::from_i64(
        DType::I64,
        vec![rows, 3],
        &selected,
    ))])
}

#[cfg(test)]
mod tests {
    use super::suppresses;

    #[test]
    fn overlap_is_intersection_over_union_strictly_above_the_threshold() {
        // Two unit squares overlapping by half: IoU = 0.5 / 1.5 = 1/3.
        let a = [0.0, 0.0, 1.0, 1.0];
        let b = [0.0, 0.5, 1.0, 1.5];
        assert!(suppresses(a, b, false, 0.3));
        assert!(!suppresses(a, b, false, 0.4));
        // Corners in either order give the same box.
        assert!(suppresses(a, [1.0, 1.5, 0.0, 0.5], false, 0.3));
        // The same boxes as centers and sizes.
        let (ca, cb) = ([0.5, 0.5, 1.0, 1.0], [1.0, 0.5, 1.0, 1.0]);
        assert!(suppresses(ca, cb, true, 0.3));
        assert!(!suppresses(ca, cb, true, 0.4));
        // Touching edges do not overlap; identical boxes overlap fully.
        assert!(!suppresses(a, [0.0, 1.0, 1.0, 2.0], false, 0.0));
        assert!(suppresses(a, a, false, 0.99));
    }
}
