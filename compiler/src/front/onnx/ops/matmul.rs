//! Contractions: MatMul (numpy broadcasting, 1-D promotion) and Gemm, as
//! TOSA batched matmuls.

use super::super::emit::{Val, broadcast_shapes};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::shape::{reshape_value, transpose_value};
use super::tensor;

pub fn matmul(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    require_float(a, "MatMul's A")?;
    if a.dtype() != b.dtype() {
        bail!("MatMul of {} and {}", a.dtype(), b.dtype());
    }
    if a.rank() == 0 || b.rank() == 0 {
        bail!("MatMul of a scalar");
    }
    let a = imp.val(a)?;
    let b = imp.val(b)?;
    tensor(matmul_vals(imp, &a, &b)?)
}

/// numpy `matmul` (1-D promotion, broadcast batch dimensions).
pub fn matmul_vals(imp: &mut Importer, a: &Val, b: &Val) -> Result<Val> {
    let (a_vec, b_vec) = (a.rank() == 1, b.rank() == 1);
    let a = if a_vec {
        imp.e.reshape(a, &[1, a.shape()[0]])
    } else {
        a.clone()
    };
    let b = if b_vec {
        imp.e.reshape(b, &[b.shape()[0], 1])
    } else {
        b.clone()
    };
    let (ra, rb) = (a.rank(), b.rank());
    let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
    if k != k2 {
        bail!(
            "MatMul of {:?} and {:?}: inner dimensions differ",
            a.shape(),
            b.shape()
        );
    }
    let (batch_a, batch_b) = (&a.shape()[..ra - 2], &b.shape()[..rb - 2]);
    let Some(batch) = broadcast_shapes(batch_a, batch_b) else {
        bail!("MatMul batch dimensions {batch_a:?} and {batch_b:?} do not broadcast");
    };
    let count: i64 = batch.iter().product();
    let y = if batch_b.iter().product::<i64>() == 1 && batch_a == batch.as_slice() {
        // B is one matrix: fold A's batch into its rows.
        let a3 = imp.e.reshape(&a, &[1, count * m, k]);
        let b3 = imp.e.reshape(&b, &[1, k, n]);
        let y = imp.e.matmul3(&a3, &b3);
        let mut shape = batch.clone();
        shape.extend([m, n]);
        imp.e.reshape(&y, &shape)
    } else {
        let mut sa = batch.clone();
        sa.extend([m, k]);
        let mut sb = batch.clone();
        sb.extend([k, n]);
        let a_full = imp.e.broadcast_to(&a, &sa)?;
        let b_full = imp.e.broadcast_to(&b, &sb)?;
        let a3 = imp.e.reshape(&a_full, &[count, m, k]);
        let b3 = imp.e.reshape(&b_full, &[count, k, n]);
        let y = imp.e.matmul3(&a3, &b3);
        let mut shape = batch.clone();
        shape.extend([m, n]);
        imp.e.reshape(&y, &shape)
    };
    let mut shape = y.shape().to_vec();
    if b_vec {
        shape.pop();
    }
    if a_vec {
        shape.remove(shape.len() - if b_vec { 1 } else { 2 });
    }
    Ok(imp.e.reshape(&y, &shape))
}

pub fn gemm(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let (a, b) = (node.input(0)?, node.input(1)?);
    require_float(a, "Gemm's A")?;
    if a.dtype() != b.dtype() {
        bail!("Gemm of {} and {}", a.dtype(), b.dtype());
    }
    if a.rank() != 2 || b.rank() != 2 {
        bail!(
            "Gemm needs 2-D A and B, not {:?} and {:?}",
            a.shape(),
            b.shape()
        );
    }
    let alpha = node.float("alpha", 1.0)? as f64;
    let beta = node.float("beta", 1.0)? as f64;
    let a = if node.int("transA", 0)? != 0 {
        transpose_value(imp, a, &[1, 0])?
    } else {
        a.clone()
    };
    let b = if node.int("transB", 0)? != 0 {
        transpose_value(imp, b, &[1, 0])?
    } else {
        b.clone()
    };
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    if b.shape()[0] != k {
        bail!(
            "Gemm of {:?} and {:?}: inner dimensions differ",
            a.shape(),
            b.shape()
        );
    }
    let a3 = reshape_value(imp, &a, &[1, m, k])?;
    let b3 = reshape_value(imp, &b, &[1, k, n])?;
    let (a3, b3) = (imp.val(&a3)?, imp.val(&b3)?);
    let y = imp.e.matmul3(&a3, &b3);
    let y = imp.e.reshape(&y, &[m, n]);
    let mut y = imp.e.scale(&y, alpha)?;
    if let Some(c) = node.opt(2)
        && beta != 0.0
    {
        if broadcast_shapes(&c.shape(), &[m, n]).as_deref() != Some(&[m, n][..]) {
            bail!(
                "Gemm's C {:?} does not broadcast to {:?}",
                c.shape(),
                [m, n]
            );
        }
        let c = match c {
            Value::Const(k) if beta != 1.0 && k.numel() as i64 <= fold::FOLD_LIMIT => {
                let scaled: Vec<f64> = k.f64s().iter().map(|v| v * beta).collect();
                imp.e.constant(
                    &Const::from_f64(k.dtype, k.shape.clone(), &scaled),
                    "gemm_c",
                )?
            }
            _ => {
                let c = imp.val(c)?;
                imp.e.scale(&c, beta)?
            }
        };
        y = imp.e.add(&y, &c)?;
    }
    tensor(y)
}
