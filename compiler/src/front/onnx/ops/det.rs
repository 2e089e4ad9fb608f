//! `Det`: the determinant of each square matrix of `[..., n, n]`, by
//! Gaussian elimination with partial pivoting (LAPACK's `getrf`, which
//! onnxruntime and numpy use), unrolled over the static `n`: step `k`
//! picks the row of the largest `|a[i][k]|` (`i >= k`, the first on ties),
//! swaps it with row `k` (flipping the sign when they differ), multiplies
//! the pivot into the determinant and eliminates the rows below. A zero
//! pivot (a singular matrix) gives 0. Each step is a handful of
//! elementwise ops, a reduction and an ArgMax on the batch of matrices,
//! built from the importer's own ops ([`super::synthetic`]).

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::shape::reshape_value;
use super::{int_attr, one, synthetic};

/// The rank-`rank` constant `[n, 1]` column (batch dimensions of 1 in
/// front) of `f(i)` for each row `i`.
fn column(dtype: DType, rank: usize, n: i64, f: impl Fn(i64) -> f64) -> Value {
    let mut shape = vec![1; rank - 2];
    shape.extend([n, 1]);
    let values: Vec<f64> = (0..n).map(f).collect();
    Value::constant(Const::from_f64(dtype, shape, &values))
}

fn ints(values: &[i64]) -> Value {
    Value::constant(Const::from_i64(
        DType::I64,
        vec![values.len() as i64],
        values,
    ))
}

fn scalar(dtype: DType, rank: usize, v: f64) -> Value {
    Value::constant(Const::from_f64(dtype, vec![1; rank], &[v]))
}

/// `x[..., start:start+1, ...]` along `axis`.
fn take(imp: &mut Importer, x: &Value, axis: usize, start: i64) -> Result<Value> {
    synthetic(
        imp,
        "Slice",
        vec![
            x.clone(),
            ints(&[start]),
            ints(&[start + 1]),
            ints(&[axis as i64]),
        ],
        vec![],
    )
}

pub fn det(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?;
    require_float(x, "Det's input")?;
    let shape = x.shape();
    let rank = shape.len();
    if rank < 2 || shape[rank - 1] != shape[rank - 2] {
        bail!("Det's input must be [..., n, n] (square matrices), not {shape:?}");
    }
    let n = shape[rank - 1];
    let dtype = x.dtype();
    let batch = shape[..rank - 2].to_vec();
    if n == 0 || batch.contains(&0) {
        // The determinant of a 0x0 matrix is 1 (the empty product).
        let count: i64 = batch.iter().product();
        return one(Value::constant(Const::from_f64(
            dtype,
            batch,
            &vec![1.0; count as usize],
        )));
    }
    let (rows, cols) = (rank - 2, rank - 1);
    let mut a = x.clone();
    let mut det = scalar(dtype, rank, 1.0);
    let iota = Value::constant(Const::from_i64(
        DType::I64,
        [vec![1; rank - 2], vec![n, 1]].concat(),
        &(0..n).collect::<Vec<_>>(),
    ));
    for k in 0..n {
        // The pivot row: the largest |a[i][k]| for i >= k (rows above k
        // masked with -1).
        let col = take(imp, &a, cols, k)?;
        let abs = synthetic(imp, "Abs", vec![col], vec![])?;
        let candidate = Value::constant(Const::from_i64(
            DType::Bool,
            [vec![1; rank - 2], vec![n, 1]].concat(),
            &(0..n).map(|i| (i >= k) as i64).collect::<Vec<_>>(),
        ));
        let masked = synthetic(
            imp,
            "Where",
            vec![candidate, abs, scalar(dtype, rank, -1.0)],
            vec![],
        )?;
        let p = synthetic(
            imp,
            "ArgMax",
            vec![masked],
            vec![int_attr("axis", rows as i64), int_attr("keepdims", 1)],
        )?;
        // Swap rows p and k: a + K (row_p - row_k) - P (row_p - row_k).
        let is_p = synthetic(imp, "Equal", vec![iota.clone(), p.clone()], vec![])?;
        let pick = synthetic(
            imp,
            "Where",
            vec![is_p, scalar(dtype, rank, 1.0), scalar(dtype, rank, 0.0)],
            vec![],
        )?;
        let picked = synthetic(imp, "Mul", vec![pick.clone(), a.clone()], vec![])?;
        let row_p = synthetic(
            imp,
            "ReduceSum",
            vec![picked, ints(&[rows as i64])],
            vec![int_attr("keepdims", 1)],
        )?;
        let row_k = take(imp, &a, rows, k)?;
        let d = synthetic(imp, "Sub", vec![row_p.clone(), row_k], vec![])?;
        let at_k = column(dtype, rank, n, |i| (i == k) as i64 as f64);
        let into_k = synthetic(imp, "Mul", vec![at_k, d.clone()], vec![])?;
        let into_p = synthetic(imp, "Mul", vec![pick, d], vec![])?;
        let delta = synthetic(imp, "Sub", vec![into_k, into_p], vec![])?;
        a = synthetic(imp, "Add", vec![a, delta], vec![])?;
        // The determinant takes the pivot, and a sign flip for a swap.
        let k_const = Value::constant(Const::from_i64(DType::I64, vec![1; rank], &[k]));
        let stays = synthetic(imp, "Equal", vec![p, k_const], vec![])?;
        let sign = synthetic(
            imp,
            "Where",
            vec![stays, scalar(dtype, rank, 1.0), scalar(dtype, rank, -1.0)],
            vec![],
        )?;
        let pivot = take(imp, &row_p, cols, k)?;
        det = synthetic(imp, "Mul", vec![det, pivot.clone()], vec![])?;
        det = synthetic(imp, "Mul", vec![det, sign], vec![])?;
        if k + 1 == n {
            break;
        }
        // Eliminate below the pivot: a -= (a[:, k] / pivot) [rows > k] x row_p.
        let zero = synthetic(
            imp,
            "Equal",
            vec![pivot.clone(), scalar(dtype, rank, 0.0)],
            vec![],
        )?;
        let safe = synthetic(
            imp,
            "Where",
            vec![zero, scalar(dtype, rank, 1.0), pivot],
            vec![],
        )?;
        let col = take(imp, &a, cols, k)?;
        let factor = synthetic(imp, "Div", vec![col, safe], vec![])?;
        let below = column(dtype, rank, n, |i| (i > k) as i64 as f64);
        let factor = synthetic(imp, "Mul", vec![factor, below], vec![])?;
        let update = synthetic(imp, "Mul", vec![factor, row_p], vec![])?;
        a = synthetic(imp, "Sub", vec![a, update], vec![])?;
    }
    one(reshape_value(imp, &det, &batch)?)
}
