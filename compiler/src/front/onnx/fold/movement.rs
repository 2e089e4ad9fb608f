//! Data movement on constants at import time: broadcast, transpose,
//! strided slices, concatenation and gathers, on raw element bytes (any
//! element type).

use super::super::tensor::Const;

pub fn strides(shape: &[i64]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as usize;
    }
    strides
}

/// The elements of `c` at flat `indices`, as a tensor of `shape`.
pub fn pick(c: &Const, shape: Vec<i64>, indices: impl Iterator<Item = usize>) -> Const {
    if c.splat {
        return Const {
            dtype: c.dtype,
            shape,
            bytes: c.bytes.clone(),
            splat: true,
        };
    }
    let size = c.dtype.size();
    let mut bytes = Vec::new();
    for i in indices {
        bytes.extend_from_slice(&c.bytes[i * size..(i + 1) * size]);
    }
    Const {
        dtype: c.dtype,
        shape,
        bytes: bytes.into(),
        splat: false,
    }
}

/// For each element of `out_shape`, the flat index of the element of a
/// tensor of `in_shape` that numpy broadcasting maps onto it.
pub(super) fn broadcast_indices(in_shape: &[i64], out_shape: &[i64]) -> Vec<usize> {
    let count = out_shape.iter().product::<i64>() as usize;
    let in_strides = strides(in_shape);
    let offset = out_shape.len() - in_shape.len();
    let mut out = Vec::with_capacity(count);
    let mut index = vec![0i64; out_shape.len()];
    for _ in 0..count {
        let mut flat = 0;
        for (j, &d) in in_shape.iter().enumerate() {
            if d != 1 {
                flat += index[j + offset] as usize * in_strides[j];
            }
        }
        out.push(flat);
        for axis in (0..out_shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < out_shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

pub fn broadcast(c: &Const, shape: &[i64]) -> Const {
    if c.splat {
        return c.reshaped(shape.to_vec());
    }
    pick(
        c,
        shape.to_vec(),
        broadcast_indices(&c.shape, shape).into_iter(),
    )
}

pub fn transpose(c: &Const, perm: &[usize]) -> Const {
    let shape: Vec<i64> = perm.iter().map(|&p| c.shape[p]).collect();
    if c.splat {
        return c.reshaped(shape);
    }
    let in_strides = strides(&c.shape);
    let count = c.numel();
    let mut index = vec![0i64; shape.len()];
    let mut indices = Vec::with_capacity(count);
    for _ in 0..count {
        indices.push(
            perm.iter()
                .enumerate()
                .map(|(j, &p)| index[j] as usize * in_strides[p])
                .sum(),
        );
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    pick(c, shape, indices.into_iter())
}

/// Elements `starts[a] + k * steps[a]` for `k < sizes[a]` along every axis.
pub fn strided_slice(c: &Const, starts: &[i64], steps: &[i64], sizes: &[i64]) -> Const {
    if c.splat {
        return c.reshaped(sizes.to_vec());
    }
    let in_strides = strides(&c.shape);
    let count = sizes.iter().product::<i64>() as usize;
    let mut index = vec![0i64; sizes.len()];
    let mut indices = Vec::with_capacity(count);
    for _ in 0..count {
        indices.push(
            (0..sizes.len())
                .map(|a| (starts[a] + index[a] * steps[a]) as usize * in_strides[a])
                .sum(),
        );
        for axis in (0..sizes.len()).rev() {
            index[axis] += 1;
            if index[axis] < sizes[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    pick(c, sizes.to_vec(), indices.into_iter())
}

pub fn concat(parts: &[&Const], axis: usize) -> Const {
    let mut shape = parts[0].shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    let outer: i64 = shape[..axis].iter().product();
    let size = parts[0].dtype.size();
    let mut bytes = Vec::new();
    for o in 0..outer as usize {
        for part in parts {
            let block = (part.shape[axis..].iter().product::<i64>()) as usize;
            let full = part.full_bytes();
            bytes.extend_from_slice(&full[o * block * size..(o + 1) * block * size]);
        }
    }
    Const {
        dtype: parts[0].dtype,
        shape,
        bytes: bytes.into(),
        splat: false,
    }
}

/// ONNX Gather along `axis` with already normalized (non-negative) indices.
pub fn gather(c: &Const, axis: usize, indices: &[i64], indices_shape: &[i64]) -> Const {
    let mut shape = c.shape[..axis].to_vec();
    shape.extend_from_slice(indices_shape);
    shape.extend_from_slice(&c.shape[axis + 1..]);
    if c.splat {
        return c.reshaped(shape);
    }
    let outer: i64 = c.shape[..axis].iter().product();
    let inner: i64 = c.shape[axis + 1..].iter().product();
    let k = c.shape[axis];
    let mut out = Vec::new();
    for o in 0..outer {
        for &i in indices {
            for n in 0..inner {
                out.push(((o * k + i) * inner + n) as usize);
            }
        }
    }
    pick(c, shape, out.into_iter())
}
