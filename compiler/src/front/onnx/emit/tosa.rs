//! The TOSA op emitters: data movement (reshape, transpose, slice, pad,
//! concat, tile, broadcast), elementwise arithmetic with numpy broadcasting,
//! reductions and `tosa.matmul`.

use super::super::dtype::{DType, TType};
use super::super::error::{ImportError, Result, bail};
use super::ir::{ResultType, Use};
use super::{Attr, Emitter, Val, broadcast_shapes};

impl Emitter {
    /// A data movement op on `x`, shape operands and an optional last
    /// tensor operand (a pad value).
    fn op_shaped(
        &mut self,
        name: &str,
        x: &Val,
        shapes: Vec<Use>,
        last: Option<&Val>,
        ty: TType,
    ) -> Val {
        let mut operands = vec![x.operand()];
        operands.extend(shapes);
        operands.extend(last.map(Val::operand));
        let id = self.op_uses(name, operands, &[], ResultType::Tensor(ty.clone()));
        Val { id, ty }
    }

    // ---- data movement ---------------------------------------------------

    pub fn reshape(&mut self, x: &Val, shape: &[i64]) -> Val {
        if x.shape() == shape {
            return x.clone();
        }
        let s = self.shape_operand(shape);
        self.op_shaped(
            "tosa.reshape",
            x,
            vec![s],
            None,
            x.ty.with_shape(shape.to_vec()),
        )
    }

    /// Reshapes to `rank` dims by adding leading 1s.
    pub fn to_rank(&mut self, x: &Val, rank: usize) -> Val {
        if x.rank() >= rank {
            return x.clone();
        }
        let mut shape = vec![1; rank - x.rank()];
        shape.extend_from_slice(x.shape());
        self.reshape(x, &shape)
    }

    pub fn transpose(&mut self, x: &Val, perms: &[usize]) -> Val {
        if perms.iter().enumerate().all(|(i, &p)| i == p) {
            return x.clone();
        }
        let shape: Vec<i64> = perms.iter().map(|&p| x.shape()[p]).collect();
        let perms = perms.iter().map(|&p| p as i64).collect();
        self.op(
            "tosa.transpose",
            &[x],
            &[("perms", Attr::I32s(perms))],
            x.ty.with_shape(shape),
        )
    }

    pub fn slice(&mut self, x: &Val, start: &[i64], size: &[i64]) -> Val {
        if start.iter().all(|&s| s == 0) && size == x.shape() {
            return x.clone();
        }
        let a = self.shape_operand(start);
        let b = self.shape_operand(size);
        self.op_shaped(
            "tosa.slice",
            x,
            vec![a, b],
            None,
            x.ty.with_shape(size.to_vec()),
        )
    }

    /// Slice of `[begin, end)` along one axis.
    pub fn slice_axis(&mut self, x: &Val, axis: usize, begin: i64, end: i64) -> Val {
        let mut start = vec![0; x.rank()];
        let mut size = x.shape().to_vec();
        start[axis] = begin;
        size[axis] = end - begin;
        self.slice(x, &start, &size)
    }

    /// `tosa.pad` with `pads` as (before, after) per axis and a constant value.
    pub fn pad(&mut self, x: &Val, pads: &[(i64, i64)], value: f64) -> Val {
        if pads.iter().all(|&(a, b)| a == 0 && b == 0) {
            return x.clone();
        }
        let flat: Vec<i64> = pads.iter().flat_map(|&(a, b)| [a, b]).collect();
        let p = self.shape_operand(&flat);
        let pad_value = self.splat(x.dtype(), vec![1], value);
        let shape: Vec<i64> = x
            .shape()
            .iter()
            .zip(pads)
            .map(|(d, (a, b))| d + a + b)
            .collect();
        self.op_shaped(
            "tosa.pad",
            x,
            vec![p],
            Some(&pad_value),
            x.ty.with_shape(shape),
        )
    }

    pub fn concat(&mut self, parts: &[Val], axis: usize) -> Val {
        let parts: Vec<&Val> = parts.iter().filter(|p| p.shape()[axis] != 0).collect();
        if parts.len() == 1 {
            return parts[0].clone();
        }
        let mut shape = parts[0].shape().to_vec();
        shape[axis] = parts.iter().map(|p| p.shape()[axis]).sum();
        let ty = parts[0].ty.with_shape(shape);
        self.op("tosa.concat", &parts, &[("axis", Attr::i32(axis))], ty)
    }

    pub fn tile(&mut self, x: &Val, multiples: &[i64]) -> Val {
        if multiples.iter().all(|&m| m == 1) {
            return x.clone();
        }
        let m = self.shape_operand(multiples);
        let shape: Vec<i64> = x
            .shape()
            .iter()
            .zip(multiples)
            .map(|(d, m)| d * m)
            .collect();
        self.op_shaped("tosa.tile", x, vec![m], None, x.ty.with_shape(shape))
    }

    /// numpy-broadcasts `x` to `shape` (tile after a rank-matching reshape).
    pub fn broadcast_to(&mut self, x: &Val, shape: &[i64]) -> Result<Val> {
        if broadcast_shapes(x.shape(), shape).as_deref() != Some(shape) {
            bail!("cannot broadcast {} to {shape:?}", x.ty);
        }
        let x = self.to_rank(x, shape.len());
        let multiples: Vec<i64> = x
            .shape()
            .iter()
            .zip(shape)
            .map(|(&d, &s)| if d == s { 1 } else { s })
            .collect();
        Ok(self.tile(&x, &multiples))
    }

    pub fn cast(&mut self, x: &Val, dtype: DType) -> Val {
        if x.dtype() == dtype {
            return x.clone();
        }
        if x.dtype().mlir() == dtype.mlir() {
            // Signed to unsigned of one width: the same bits, relabeled.
            return x.relabeled(dtype);
        }
        self.op("tosa.cast", &[x], &[], x.ty.with_dtype(dtype))
    }

    // ---- elementwise -----------------------------------------------------

    pub fn unary(&mut self, name: &str, x: &Val) -> Val {
        self.op(name, &[x], &[], x.ty.clone())
    }

    pub fn negate(&mut self, x: &Val) -> Val {
        let zp = self.zero_point(x.dtype());
        self.op("tosa.negate", &[x, &zp, &zp], &[], x.ty.clone())
    }

    /// Reshapes two operands to one rank and returns the broadcast shape.
    pub fn broadcast_pair(&mut self, a: &Val, b: &Val) -> Result<(Val, Val, Vec<i64>)> {
        let Some(shape) = broadcast_shapes(a.shape(), b.shape()) else {
            bail!(
                "shapes {:?} and {:?} do not broadcast",
                a.shape(),
                b.shape()
            );
        };
        let rank = shape.len();
        Ok((self.to_rank(a, rank), self.to_rank(b, rank), shape))
    }

    /// TOSA's elementwise binary ops take operands of one element type; a
    /// model that mixes them (an int8 BatchNormalization scale with a float
    /// input) is an error here, not invalid TOSA later.
    fn same_element_type(name: &str, a: &Val, b: &Val) -> Result<()> {
        if a.dtype() != b.dtype() {
            bail!(
                "{name}: operands of different element types ({} and {})",
                a.dtype(),
                b.dtype()
            );
        }
        Ok(())
    }

    /// A broadcasting binary TOSA op whose result has `dtype`.
    pub fn binary_to(&mut self, name: &str, a: &Val, b: &Val, dtype: DType) -> Result<Val> {
        Self::same_element_type(name, a, b)?;
        let (a, b, shape) = self.broadcast_pair(a, b)?;
        Ok(self.op(name, &[&a, &b], &[], TType::new(dtype, shape)))
    }

    pub fn binary(&mut self, name: &str, a: &Val, b: &Val) -> Result<Val> {
        self.binary_to(name, a, b, a.dtype())
    }

    pub fn add(&mut self, a: &Val, b: &Val) -> Result<Val> {
        self.binary("tosa.add", a, b)
    }

    pub fn sub(&mut self, a: &Val, b: &Val) -> Result<Val> {
        self.binary("tosa.sub", a, b)
    }

    pub fn mul(&mut self, a: &Val, b: &Val) -> Result<Val> {
        Self::same_element_type("tosa.mul", a, b)?;
        let (a, b, shape) = self.broadcast_pair(a, b)?;
        let shift = self.splat(DType::I8, vec![1], 0.0);
        Ok(self.op("tosa.mul", &[&a, &b, &shift], &[], a.ty.with_shape(shape)))
    }

    /// `x * value` for a float scalar.
    pub fn scale(&mut self, x: &Val, value: f64) -> Result<Val> {
        if value == 1.0 {
            return Ok(x.clone());
        }
        let s = self.scalar(x.dtype(), x.rank(), value);
        self.mul(x, &s)
    }

    /// `x + value` for a scalar.
    pub fn offset(&mut self, x: &Val, value: f64) -> Result<Val> {
        if value == 0.0 {
            return Ok(x.clone());
        }
        let s = self.scalar(x.dtype(), x.rank(), value);
        self.add(x, &s)
    }

    /// Float division as `a * reciprocal(b)`.
    pub fn div(&mut self, a: &Val, b: &Val) -> Result<Val> {
        let r = self.unary("tosa.reciprocal", b);
        self.mul(a, &r)
    }

    pub fn select(&mut self, cond: &Val, a: &Val, b: &Val) -> Result<Val> {
        let Some(ab) = broadcast_shapes(a.shape(), b.shape()) else {
            bail!(
                "shapes {:?} and {:?} do not broadcast",
                a.shape(),
                b.shape()
            );
        };
        let Some(shape) = broadcast_shapes(cond.shape(), &ab) else {
            bail!(
                "condition shape {:?} does not broadcast with {ab:?}",
                cond.shape()
            );
        };
        let rank = shape.len();
        let (c, a, b) = (
            self.to_rank(cond, rank),
            self.to_rank(a, rank),
            self.to_rank(b, rank),
        );
        Ok(self.op("tosa.select", &[&c, &a, &b], &[], a.ty.with_shape(shape)))
    }

    /// `tosa.clamp` (float bounds for float tensors, integer bounds otherwise).
    pub fn clamp(&mut self, x: &Val, min: f64, max: f64) -> Val {
        let d = x.dtype();
        let (lo, hi) = if d.is_float() {
            let (lo, hi) = match d {
                DType::F16 => (min.max(-65504.0), max.min(65504.0)),
                _ => (min.max(f32::MIN as f64), max.min(f32::MAX as f64)),
            };
            (Attr::Float(lo, d), Attr::Float(hi, d))
        } else {
            let (tmin, tmax) = match d {
                DType::I8 => (i8::MIN as f64, i8::MAX as f64),
                DType::I16 => (i16::MIN as f64, i16::MAX as f64),
                DType::I32 => (i32::MIN as f64, i32::MAX as f64),
                _ => (i64::MIN as f64, i64::MAX as f64),
            };
            (
                Attr::Int(min.max(tmin) as i64, d),
                Attr::Int(max.min(tmax) as i64, d),
            )
        };
        self.op(
            "tosa.clamp",
            &[x],
            &[("max_val", hi), ("min_val", lo)],
            x.ty.clone(),
        )
    }

    // ---- reductions, contractions ----------------------------------------

    /// A TOSA reduction over one axis (kept with size 1).
    pub fn reduce(&mut self, name: &str, x: &Val, axis: usize) -> Val {
        let mut shape = x.shape().to_vec();
        shape[axis] = 1;
        self.op(
            name,
            &[x],
            &[("axis", Attr::i32(axis))],
            x.ty.with_shape(shape),
        )
    }

    /// Reduces several axes (kept with size 1).
    pub fn reduce_axes(&mut self, name: &str, x: &Val, axes: &[usize]) -> Val {
        let mut value = x.clone();
        for &axis in axes {
            if value.shape()[axis] != 1 {
                value = self.reduce(name, &value, axis);
            }
        }
        value
    }

    /// `tosa.matmul` of [N, M, K] x [N, K, P].
    pub fn matmul3(&mut self, a: &Val, b: &Val) -> Val {
        let zp = self.zero_point(a.dtype());
        let shape = vec![a.shape()[0], a.shape()[1], b.shape()[2]];
        self.op(
            "tosa.matmul",
            &[a, b, &zp, &zp],
            &[],
            a.ty.with_shape(shape),
        )
    }
}
