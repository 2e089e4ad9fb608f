//! Pad (constant, edge and reflect modes) and the DepthToSpace/SpaceToDepth
//! rearrangements (reshape, transpose, reshape).

use super::super::dtype::{MAX_ELEMENTS, checked_numel};
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::one;
use super::shape::{reshape_value, transpose_value};

pub fn pad(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let rank = x.rank();
    let (pads, value, axes) = if node.opset < 11 {
        let pads = match node.ints("pads")? {
            Some(p) => p,
            None => node
                .ints("paddings")?
                .ok_or_else(|| ImportError::new("Pad needs pads"))?,
        };
        (pads, node.float("value", 0.0)? as f64, None)
    } else {
        let pads = node
            .const_ints(1, "the pads")?
            .ok_or_else(|| ImportError::new("Pad needs pads"))?;
        let value = match node.const_input(2, "the constant value")? {
            Some(c) if c.numel() == 1 => c.f64_at(0),
            Some(_) => bail!("Pad's constant value must have one element"),
            None => 0.0,
        };
        (
            pads,
            value,
            if node.opset >= 18 {
                node.const_ints(3, "the axes")?
            } else {
                None
            },
        )
    };
    let axes: Vec<usize> = match axes {
        Some(a) => {
            let mut out = Vec::new();
            for v in a {
                out.push(node.axis(v, rank, "Pad axis")?);
            }
            out
        }
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        bail!("Pad has {} pads for {} axes", pads.len(), axes.len());
    }
    if pads.iter().any(|p| p.unsigned_abs() > MAX_ELEMENTS as u64) {
        bail!("Pad with pads {pads:?} out of range");
    }
    let mut per_axis = vec![(0i64, 0i64); rank];
    for (i, &a) in axes.iter().enumerate() {
        per_axis[a] = (pads[i], pads[i + axes.len()]);
    }
    let mode = node.string("mode", "constant")?;
    let mut t = imp.val(x)?;
    // Negative pads crop.
    let shape = t.shape().to_vec();
    let start: Vec<i64> = per_axis.iter().map(|&(b, _)| (-b).max(0)).collect();
    let mut size = shape.clone();
    for a in 0..rank {
        size[a] = shape[a] - start[a] - (-per_axis[a].1).max(0);
        if size[a] <= 0 {
            bail!("Pad crops dimension {a} of {shape:?} away");
        }
    }
    t = imp.e.slice(&t, &start, &size);
    let positive: Vec<(i64, i64)> = per_axis
        .iter()
        .map(|&(b, e)| (b.max(0), e.max(0)))
        .collect();
    if checked_numel(
        &t.shape()
            .iter()
            .zip(&positive)
            .map(|(d, (b, e))| d.saturating_add(*b).saturating_add(*e))
            .collect::<Vec<_>>(),
    )
    .is_none()
    {
        bail!("Pad to a too large shape");
    }
    let y = match mode.as_str() {
        "constant" => imp.e.pad(&t, &positive, value),
        "reflect" | "edge" | "wrap" => {
            let mut y = t;
            for (a, &(b, e)) in positive.iter().enumerate() {
                if b == 0 && e == 0 {
                    continue;
                }
                let n = y.shape()[a];
                let mut parts = Vec::new();
                match mode.as_str() {
                    "reflect" => {
                        if b >= n || e >= n {
                            bail!(
                                "reflect padding of {b}, {e} needs a dimension larger than {}, not {n}",
                                b.max(e)
                            );
                        }
                        for i in (1..=b).rev() {
                            parts.push(imp.e.slice_axis(&y, a, i, i + 1));
                        }
                        parts.push(y.clone());
                        for i in 1..=e {
                            parts.push(imp.e.slice_axis(&y, a, n - 1 - i, n - i));
                        }
                    }
                    "edge" => {
                        let mut multiples = vec![1; y.rank()];
                        if b > 0 {
                            let first = imp.e.slice_axis(&y, a, 0, 1);
                            multiples[a] = b;
                            parts.push(imp.e.tile(&first, &multiples));
                        }
                        parts.push(y.clone());
                        if e > 0 {
                            let last = imp.e.slice_axis(&y, a, n - 1, n);
                            multiples[a] = e;
                            parts.push(imp.e.tile(&last, &multiples));
                        }
                    }
                    _ => {
                        if b > n || e > n {
                            bail!("wrap padding larger than the dimension");
                        }
                        if b > 0 {
                            parts.push(imp.e.slice_axis(&y, a, n - b, n));
                        }
                        parts.push(y.clone());
                        if e > 0 {
                            parts.push(imp.e.slice_axis(&y, a, 0, e));
                        }
                    }
                }
                y = imp.e.concat(&parts, a);
            }
            y
        }
        other => bail!("Pad mode '{other}' is not supported"),
    };
    one(Value::Tensor(y))
}

/// Whether DepthToSpace / SpaceToDepth orders the block's elements
/// column-row-depth (`mode = "CRD"`; SpaceToDepth has `mode` from opset 28).
fn crd_mode(node: &Node) -> Result<bool> {
    if node.op() == "SpaceToDepth" && node.opset < 28 {
        return Ok(false);
    }
    match node.string("mode", "DCR")?.as_str() {
        "DCR" => Ok(false),
        "CRD" => Ok(true),
        other => bail!("{} mode '{other}' is not one of DCR, CRD", node.op()),
    }
}

pub fn depth_space(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    let shape = x.shape();
    if shape.len() != 4 {
        bail!("{} needs a 4-D input", node.op());
    }
    let b = node
        .int_opt("blocksize")?
        .ok_or_else(|| ImportError::new("blocksize is required"))?;
    if b <= 0 {
        bail!("blocksize {b}");
    }
    let (n, c, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    let y = if node.op() == "DepthToSpace" {
        if b.checked_mul(b).is_none_or(|bb| c % bb != 0) {
            bail!("DepthToSpace: {c} channels are not a multiple of {b} x {b}");
        }
        let cc = c / (b * b);
        let (split, perm): (Vec<i64>, [usize; 6]) = if crd_mode(node)? {
            (vec![n, cc, b, b, h, w], [0, 1, 4, 2, 5, 3])
        } else {
            (vec![n, b, b, cc, h, w], [0, 3, 4, 1, 5, 2])
        };
        let r = reshape_value(imp, x, &split)?;
        let t = transpose_value(imp, &r, &perm)?;
        reshape_value(imp, &t, &[n, cc, h * b, w * b])?
    } else {
        if h % b != 0 || w % b != 0 {
            bail!("SpaceToDepth: {h}x{w} is not a multiple of {b}");
        }
        // Output channels ordered (row in block, column in block, channel)
        // for DCR, (channel, row, column) for CRD (opset 28's `mode`).
        let perm = if crd_mode(node)? {
            [0, 1, 3, 5, 2, 4]
        } else {
            [0, 3, 5, 1, 2, 4]
        };
        let r = reshape_value(imp, x, &[n, c, h / b, b, w / b, b])?;
        let t = transpose_value(imp, &r, &perm)?;
        reshape_value(imp, &t, &[n, c * b * b, h / b, w / b])?
    };
    one(y)
}
