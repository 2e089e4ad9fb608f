//! Arithmetic on constants at import time: elementwise binary and unary
//! ops and reductions, on f64 (floats) or i64 (integers, booleans).

use super::super::dtype::{DType, checked_numel};
use super::super::emit::broadcast_shapes;
use super::super::error::{ImportError, Result, bail};
use super::super::tensor::Const;
use super::{FOLD_LIMIT, broadcast_indices, strides};

fn binary_float(op: &str, a: f64, b: f64) -> Option<f64> {
    Some(match op {
        "Add" | "Sum" => a + b,
        "Sub" => a - b,
        "Mul" => a * b,
        "Div" => a / b,
        "Pow" => a.powf(b),
        "Max" => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }
        "Min" => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }
        "Mod" => a - b * (a / b).floor(),
        _ => return None,
    })
}

fn binary_int(op: &str, a: i64, b: i64) -> Result<Option<i64>> {
    Ok(Some(match op {
        "Add" | "Sum" => a.wrapping_add(b),
        "Sub" => a.wrapping_sub(b),
        "Mul" => a.wrapping_mul(b),
        "Div" => {
            if b == 0 {
                bail!("integer division by zero in a constant");
            }
            a.wrapping_div(b)
        }
        "Mod" => {
            if b == 0 {
                bail!("integer modulo by zero in a constant");
            }
            // Python's remainder (Mod with fmod = 0): the divisor's sign.
            let r = a.wrapping_rem(b);
            if r != 0 && (r < 0) != (b < 0) {
                r + b
            } else {
                r
            }
        }
        "Max" => a.max(b),
        "Min" => a.min(b),
        "And" => ((a != 0) && (b != 0)) as i64,
        "Or" => ((a != 0) || (b != 0)) as i64,
        "Xor" => ((a != 0) ^ (b != 0)) as i64,
        "Pow" => {
            if !(0..64).contains(&b) {
                return Ok(None);
            }
            a.wrapping_pow(b as u32)
        }
        _ => return Ok(None),
    }))
}

fn compare(op: &str, ordering: Option<std::cmp::Ordering>) -> Option<bool> {
    use std::cmp::Ordering::*;
    Some(match op {
        "Equal" => ordering == Some(Equal),
        "Less" => ordering == Some(Less),
        "Greater" => ordering == Some(Greater),
        "LessOrEqual" => matches!(ordering, Some(Less | Equal)),
        "GreaterOrEqual" => matches!(ordering, Some(Greater | Equal)),
        _ => return None,
    })
}

/// An elementwise binary op on constants (numpy broadcasting).
pub fn binary(op: &str, a: &Const, b: &Const) -> Result<Option<Const>> {
    let Some(shape) = broadcast_shapes(&a.shape, &b.shape) else {
        bail!("shapes {:?} and {:?} do not broadcast", a.shape, b.shape);
    };
    if checked_numel(&shape).is_none_or(|n| n > FOLD_LIMIT) {
        return Ok(None);
    }
    let ia = broadcast_indices(&a.shape, &shape);
    let ib = broadcast_indices(&b.shape, &shape);
    let is_compare = compare(op, None).is_some();
    if a.dtype.is_float() || b.dtype.is_float() {
        let (va, vb) = (a.f64s(), b.f64s());
        if is_compare {
            let out: Vec<i64> = ia
                .iter()
                .zip(&ib)
                .map(|(&i, &j)| compare(op, va[i].partial_cmp(&vb[j])).unwrap() as i64)
                .collect();
            return Ok(Some(Const::from_i64(DType::Bool, shape, &out)));
        }
        let mut out = Vec::with_capacity(ia.len());
        for (&i, &j) in ia.iter().zip(&ib) {
            let Some(v) = binary_float(op, va[i], vb[j]) else {
                return Ok(None);
            };
            out.push(v);
        }
        Ok(Some(Const::from_f64(a.dtype, shape, &out)))
    } else {
        let (va, vb) = (a.i64s(), b.i64s());
        if is_compare {
            let out: Vec<i64> = ia
                .iter()
                .zip(&ib)
                .map(|(&i, &j)| compare(op, Some(va[i].cmp(&vb[j]))).unwrap() as i64)
                .collect();
            return Ok(Some(Const::from_i64(DType::Bool, shape, &out)));
        }
        let mut out = Vec::with_capacity(ia.len());
        for (&i, &j) in ia.iter().zip(&ib) {
            let Some(v) = binary_int(op, va[i], vb[j])? else {
                return Ok(None);
            };
            out.push(v);
        }
        Ok(Some(Const::from_i64(a.dtype, shape, &out)))
    }
}

pub(super) fn unary(op: &str, c: &Const) -> Option<Const> {
    if c.dtype.is_float() {
        let f: fn(f64) -> f64 = match op {
            "Neg" => |x| -x,
            "Abs" => f64::abs,
            "Sqrt" => f64::sqrt,
            "Exp" => f64::exp,
            "Log" => f64::ln,
            "Reciprocal" => |x| 1.0 / x,
            "Floor" => f64::floor,
            "Ceil" => f64::ceil,
            "Round" => f64::round_ties_even,
            "Relu" => |x| if x < 0.0 { 0.0 } else { x },
            "Sign" => |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            },
            _ => return None,
        };
        let values: Vec<f64> = c.f64s().into_iter().map(f).collect();
        Some(Const::from_f64(c.dtype, c.shape.clone(), &values))
    } else {
        let f: fn(i64) -> i64 = match op {
            "Neg" => i64::wrapping_neg,
            "Abs" => i64::wrapping_abs,
            "Not" => |x| (x == 0) as i64,
            "Relu" => |x| x.max(0),
            "Sign" => i64::signum,
            "Floor" | "Ceil" | "Round" => |x| x,
            _ => return None,
        };
        let values: Vec<i64> = c.i64s().into_iter().map(f).collect();
        Some(Const::from_i64(c.dtype, c.shape.clone(), &values))
    }
}

/// Reduces `axes` of `c` (numeric reductions of shape computations).
pub(super) fn reduce(op: &str, c: &Const, axes: &[usize], keepdims: bool) -> Option<Const> {
    let rank = c.shape.len();
    let mut out_shape: Vec<i64> = c.shape.clone();
    for &a in axes {
        out_shape[a] = 1;
    }
    let out_count = out_shape.iter().product::<i64>() as usize;
    let out_strides = strides(&out_shape);
    let float = c.dtype.is_float();
    let unsigned = c.dtype.is_unsigned();
    // The identity of an empty reduction: an integer type's (or bool's)
    // extreme value for max and min, as ONNX defines it.
    let bounds = c.dtype.int_bounds().map(|(lo, hi)| (lo as f64, hi as f64));
    let (init, f): (f64, fn(f64, f64) -> f64) = match op {
        "ReduceSum" => (0.0, |a, b| a + b),
        "ReduceProd" => (1.0, |a, b| a * b),
        "ReduceMax" => (bounds.map_or(f64::NEG_INFINITY, |b| b.0), f64::max),
        "ReduceMin" => (bounds.map_or(f64::INFINITY, |b| b.1), f64::min),
        _ => return None,
    };
    let mut acc = vec![init; out_count];
    let values = c.f64s();
    let mut index = vec![0i64; rank];
    for v in values {
        let flat: usize = (0..rank)
            .map(|a| {
                if axes.contains(&a) {
                    0
                } else {
                    index[a] as usize * out_strides[a]
                }
            })
            .sum();
        acc[flat] = f(acc[flat], v);
        for axis in (0..rank).rev() {
            index[axis] += 1;
            if index[axis] < c.shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    let shape = if keepdims {
        out_shape
    } else {
        c.shape
            .iter()
            .enumerate()
            .filter(|(a, _)| !axes.contains(a))
            .map(|(_, &d)| d)
            .collect()
    };
    Some(if float {
        Const::from_f64(c.dtype, shape, &acc)
    } else {
        Const::from_i64(
            c.dtype,
            shape,
            // An unsigned 64-bit value past i64::MAX keeps its bits.
            &acc.iter()
                .map(|&v| if unsigned { v as u64 as i64 } else { v as i64 })
                .collect::<Vec<_>>(),
        )
    })
}
