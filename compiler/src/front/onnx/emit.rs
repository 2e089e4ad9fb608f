//! Writes the imported function as MLIR text: TOSA ops in the generic op
//! syntax (`%v = "tosa.add"(%a, %b) : (...) -> ...`), a few linalg/tensor
//! ops in their custom syntax where TOSA has no match, constants inline
//! (`dense<[...]>`, `dense<"0x...">`) or as `dense_resource` blobs.
//!
//! Every helper returns the new value with its static type; broadcasting
//! helpers reshape operands to a common rank first, as TOSA requires.

use std::fmt::Write as _;

use super::dtype::{DType, TType};
use super::error::{ImportError, Result, bail};
use super::tensor::Const;

/// An SSA value of the function being written.
#[derive(Clone, Debug)]
pub struct Val {
    pub ssa: String,
    pub ty: TType,
}

impl Val {
    pub fn shape(&self) -> &[i64] {
        &self.ty.shape
    }
    pub fn rank(&self) -> usize {
        self.ty.shape.len()
    }
    pub fn dtype(&self) -> DType {
        self.ty.dtype
    }
}

/// How constants with many elements are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstStyle {
    /// `dense<"0x...">`: a hex literal of the raw elements (a
    /// DenseElementsAttr, which every tcc back end reads).
    Hex,
    /// `dense_resource<name>` with the bytes in the file's
    /// `dialect_resources` section.
    Resource,
}

/// Constants with at most this many elements are written as element lists.
pub const INLINE_ELEMENTS: usize = 64;

pub struct Emitter {
    body: String,
    next: usize,
    loc: String,
    style: ConstStyle,
    resources: Vec<(String, String)>,
}

/// Formats an f32 as an MLIR float literal (always with a '.' in the
/// mantissa), or its bit pattern for non-finite values.
pub fn float_literal(value: f64, dtype: DType) -> String {
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 => {
            let v = value as f32;
            if !v.is_finite() {
                return match dtype {
                    DType::F16 => format!("0x{:04X}", super::dtype::f32_to_f16(v)),
                    DType::BF16 => format!("0x{:04X}", v.to_bits() >> 16),
                    _ => format!("0x{:08X}", v.to_bits()),
                };
            }
            mantissa_with_point(format!("{v:e}"))
        }
        _ => {
            if !value.is_finite() {
                return format!("0x{:016X}", value.to_bits());
            }
            mantissa_with_point(format!("{value:e}"))
        }
    }
}

fn mantissa_with_point(text: String) -> String {
    match text.find('e') {
        Some(at) if !text[..at].contains('.') => format!("{}.0{}", &text[..at], &text[at..]),
        _ => text,
    }
}

/// One element of `c` as an MLIR literal.
fn element_literal(c: &Const, index: usize) -> String {
    match c.dtype {
        DType::Bool => if c.i64_at(index) != 0 {
            "true"
        } else {
            "false"
        }
        .to_string(),
        d if d.is_float() => float_literal(c.f64_at(index), d),
        _ => c.i64_at(index).to_string(),
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(text, "{b:02X}");
    }
    text
}

/// `[[1, 2], [3, 4]]` for a shape and a flat element writer.
fn nested(shape: &[i64], at: &mut usize, element: &dyn Fn(usize) -> String, out: &mut String) {
    match shape.split_first() {
        None => {
            out.push_str(&element(*at));
            *at += 1;
        }
        Some((&n, rest)) => {
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                nested(rest, at, element, out);
            }
            out.push(']');
        }
    }
}

/// MLIR identifier-safe version of a name.
pub fn sanitize(name: &str) -> String {
    let mut text: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_digit()) {
        text.insert(0, '_');
    }
    text
}

/// A string attribute literal with MLIR escapes.
pub fn string_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\22"),
            '\\' => out.push_str("\\5C"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// numpy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

fn i64_list(values: &[i64]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `array<i64: 1, 2>`.
pub fn array_i64(values: &[i64]) -> String {
    if values.is_empty() {
        "array<i64>".into()
    } else {
        format!("array<i64: {}>", i64_list(values))
    }
}

impl Emitter {
    pub fn new(style: ConstStyle) -> Self {
        Self {
            body: String::new(),
            next: 0,
            loc: "loc(unknown)".into(),
            style,
            resources: Vec::new(),
        }
    }

    /// Ops emitted from now on carry the location `loc("name")`.
    pub fn set_location(&mut self, name: &str) {
        self.loc = format!("loc({})", string_literal(name));
    }

    pub fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }

    /// The function body written so far.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The `{-# dialect_resources ... #-}` section (empty without blobs).
    pub fn resource_section(&self) -> String {
        if self.resources.is_empty() {
            return String::new();
        }
        let mut text = String::from("\n{-#\n  dialect_resources: {\n    builtin: {\n");
        for (index, (key, blob)) in self.resources.iter().enumerate() {
            let comma = if index + 1 < self.resources.len() {
                ","
            } else {
                ""
            };
            let _ = writeln!(text, "      {key}: \"0x{blob}\"{comma}");
        }
        text.push_str("    }\n  }\n#-}\n");
        text
    }

    /// Writes a line of custom-syntax IR (with the current location).
    pub fn line(&mut self, text: &str) {
        let _ = writeln!(self.body, "    {text} {}", self.loc);
    }

    /// A generic-syntax op with one result.
    pub fn op_typed(
        &mut self,
        name: &str,
        operands: &[(&str, String)],
        props: &str,
        result: &str,
    ) -> String {
        let ssa = self.fresh();
        let names: Vec<&str> = operands.iter().map(|(n, _)| *n).collect();
        let types: Vec<&str> = operands.iter().map(|(_, t)| t.as_str()).collect();
        let props = if props.is_empty() {
            String::new()
        } else {
            format!(" <{{{props}}}>")
        };
        let _ = writeln!(
            self.body,
            "    {ssa} = \"{name}\"({}){props} : ({}) -> {result} {}",
            names.join(", "),
            types.join(", "),
            self.loc
        );
        ssa
    }

    /// A generic-syntax op on values with one result of type `ty`.
    pub fn op(&mut self, name: &str, operands: &[&Val], props: &str, ty: TType) -> Val {
        let operands: Vec<(&str, String)> = operands
            .iter()
            .map(|v| (v.ssa.as_str(), v.ty.mlir()))
            .collect();
        let ssa = self.op_typed(name, &operands, props, &ty.mlir());
        Val { ssa, ty }
    }

    // ---- constants -------------------------------------------------------

    /// The attribute literal of a constant: `dense<...> : tensor<...>`.
    pub fn dense_literal(&mut self, c: &Const, hint: &str) -> String {
        let ty = c.ty().mlir();
        let count = c.numel();
        if count == 0 {
            return format!("dense<> : {ty}");
        }
        if c.uniform() {
            return format!("dense<{}> : {ty}", element_literal(c, 0));
        }
        if count <= INLINE_ELEMENTS || c.dtype == DType::Bool {
            let mut text = String::new();
            nested(&c.shape, &mut 0, &|i| element_literal(c, i), &mut text);
            return format!("dense<{text}> : {ty}");
        }
        // Blobs of the element types tcc's host writer reads back.
        let resource_type = matches!(c.dtype, DType::F32 | DType::I64 | DType::I32 | DType::I8);
        match self.style {
            ConstStyle::Resource if resource_type => {
                let key = format!("{}_{}", sanitize(hint), self.resources.len());
                let alignment = (c.dtype.size() as u32).max(1).to_le_bytes();
                self.resources
                    .push((key.clone(), format!("{}{}", hex(&alignment), hex(&c.bytes))));
                format!("dense_resource<{key}> : {ty}")
            }
            _ => format!("dense<\"0x{}\"> : {ty}", hex(&c.bytes)),
        }
    }

    /// A `tosa.const` of `c` (which must have a type tcc compiles).
    pub fn constant(&mut self, c: &Const, hint: &str) -> Result<Val> {
        if !c.dtype.in_graph() {
            bail!(
                "constant {hint} has element type {}, which tcc does not support",
                c.dtype
            );
        }
        let literal = self.dense_literal(c, hint);
        let ty = c.ty();
        let ssa = self.op_typed(
            "tosa.const",
            &[],
            &format!("values = {literal}"),
            &ty.mlir(),
        );
        Ok(Val { ssa, ty })
    }

    /// A constant of `shape` with every element `value`.
    pub fn splat(&mut self, dtype: DType, shape: Vec<i64>, value: f64) -> Val {
        let c = if dtype.is_float() {
            Const::splat_f64(dtype, shape, value)
        } else {
            Const::splat_i64(dtype, shape, value as i64)
        };
        self.constant(&c, "splat").expect("splat of a graph type")
    }

    /// A scalar broadcastable against a rank-`rank` tensor (shape 1x...x1).
    pub fn scalar(&mut self, dtype: DType, rank: usize, value: f64) -> Val {
        self.splat(dtype, vec![1; rank], value)
    }

    /// A `tensor<1xT>` zero (TOSA zero points, pad values).
    pub fn zero_point(&mut self, dtype: DType) -> Val {
        self.splat(dtype, vec![1], 0.0)
    }

    /// `tosa.const_shape` for reshape/slice/pad/tile operands.
    pub fn shape_operand(&mut self, values: &[i64]) -> (String, String) {
        let ty = format!("!tosa.shape<{}>", values.len());
        let literal = if values.is_empty() {
            "dense<> : tensor<0xindex>".to_string()
        } else {
            format!(
                "dense<[{}]> : tensor<{}xindex>",
                i64_list(values),
                values.len()
            )
        };
        let ssa = self.op_typed("tosa.const_shape", &[], &format!("values = {literal}"), &ty);
        (ssa, ty)
    }

    // ---- data movement ---------------------------------------------------

    pub fn reshape(&mut self, x: &Val, shape: &[i64]) -> Val {
        if x.shape() == shape {
            return x.clone();
        }
        let (s, st) = self.shape_operand(shape);
        let ty = x.ty.with_shape(shape.to_vec());
        let ssa = self.op_typed(
            "tosa.reshape",
            &[(&x.ssa, x.ty.mlir()), (&s, st)],
            "",
            &ty.mlir(),
        );
        Val { ssa, ty }
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
        let perms: Vec<String> = perms.iter().map(|p| p.to_string()).collect();
        self.op(
            "tosa.transpose",
            &[x],
            &format!("perms = array<i32: {}>", perms.join(", ")),
            x.ty.with_shape(shape),
        )
    }

    pub fn slice(&mut self, x: &Val, start: &[i64], size: &[i64]) -> Val {
        if start.iter().all(|&s| s == 0) && size == x.shape() {
            return x.clone();
        }
        let (a, at) = self.shape_operand(start);
        let (b, bt) = self.shape_operand(size);
        let ty = x.ty.with_shape(size.to_vec());
        let ssa = self.op_typed(
            "tosa.slice",
            &[(&x.ssa, x.ty.mlir()), (&a, at), (&b, bt)],
            "",
            &ty.mlir(),
        );
        Val { ssa, ty }
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
        let (p, pt) = self.shape_operand(&flat);
        let pad_value = self.splat(x.dtype(), vec![1], value);
        let shape: Vec<i64> = x
            .shape()
            .iter()
            .zip(pads)
            .map(|(d, (a, b))| d + a + b)
            .collect();
        let ty = x.ty.with_shape(shape);
        let ssa = self.op_typed(
            "tosa.pad",
            &[
                (&x.ssa, x.ty.mlir()),
                (&p, pt),
                (&pad_value.ssa, pad_value.ty.mlir()),
            ],
            "",
            &ty.mlir(),
        );
        Val { ssa, ty }
    }

    pub fn concat(&mut self, parts: &[Val], axis: usize) -> Val {
        let parts: Vec<&Val> = parts.iter().filter(|p| p.shape()[axis] != 0).collect();
        if parts.len() == 1 {
            return parts[0].clone();
        }
        let mut shape = parts[0].shape().to_vec();
        shape[axis] = parts.iter().map(|p| p.shape()[axis]).sum();
        let ty = parts[0].ty.with_shape(shape);
        self.op("tosa.concat", &parts, &format!("axis = {axis} : i32"), ty)
    }

    pub fn tile(&mut self, x: &Val, multiples: &[i64]) -> Val {
        if multiples.iter().all(|&m| m == 1) {
            return x.clone();
        }
        let (m, mt) = self.shape_operand(multiples);
        let shape: Vec<i64> = x
            .shape()
            .iter()
            .zip(multiples)
            .map(|(d, m)| d * m)
            .collect();
        let ty = x.ty.with_shape(shape);
        let ssa = self.op_typed(
            "tosa.tile",
            &[(&x.ssa, x.ty.mlir()), (&m, mt)],
            "",
            &ty.mlir(),
        );
        Val { ssa, ty }
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
        self.op("tosa.cast", &[x], "", x.ty.with_dtype(dtype))
    }

    // ---- elementwise -----------------------------------------------------

    pub fn unary(&mut self, name: &str, x: &Val) -> Val {
        self.op(name, &[x], "", x.ty.clone())
    }

    pub fn negate(&mut self, x: &Val) -> Val {
        let zp = self.zero_point(x.dtype());
        self.op("tosa.negate", &[x, &zp, &zp], "", x.ty.clone())
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
        Ok(self.op(name, &[&a, &b], "", TType::new(dtype, shape)))
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
        Ok(self.op("tosa.mul", &[&a, &b, &shift], "", a.ty.with_shape(shape)))
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
        Ok(self.op("tosa.select", &[&c, &a, &b], "", a.ty.with_shape(shape)))
    }

    /// `tosa.clamp` (float bounds for float tensors, integer bounds otherwise).
    pub fn clamp(&mut self, x: &Val, min: f64, max: f64) -> Val {
        let d = x.dtype();
        let (lo, hi) = if d.is_float() {
            let (lo, hi) = match d {
                DType::F16 => (min.max(-65504.0), max.min(65504.0)),
                _ => (min.max(f32::MIN as f64), max.min(f32::MAX as f64)),
            };
            (
                format!("{} : {}", float_literal(lo, d), d.mlir()),
                format!("{} : {}", float_literal(hi, d), d.mlir()),
            )
        } else {
            let (tmin, tmax) = match d {
                DType::I8 => (i8::MIN as f64, i8::MAX as f64),
                DType::I16 => (i16::MIN as f64, i16::MAX as f64),
                DType::I32 => (i32::MIN as f64, i32::MAX as f64),
                _ => (i64::MIN as f64, i64::MAX as f64),
            };
            (
                format!("{} : {}", min.max(tmin) as i64, d.mlir()),
                format!("{} : {}", max.min(tmax) as i64, d.mlir()),
            )
        };
        self.op(
            "tosa.clamp",
            &[x],
            &format!("max_val = {hi}, min_val = {lo}"),
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
            &format!("axis = {axis} : i32"),
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
        self.op("tosa.matmul", &[a, b, &zp, &zp], "", a.ty.with_shape(shape))
    }

    // ---- linalg escape hatch ----------------------------------------------

    /// An elementwise `linalg.generic` over `inputs` (numpy-broadcast to the
    /// result shape) with a body written by `body` from the block argument
    /// names; the body's last line must define `%r`.
    pub fn map(&mut self, inputs: &[&Val], out: TType, body: &dyn Fn(&[String]) -> String) -> Val {
        let rank = out.rank();
        let dims: Vec<String> = (0..rank).map(|i| format!("d{i}")).collect();
        let domain = format!("({})", dims.join(", "));
        let mut maps = Vec::new();
        for input in inputs {
            let offset = rank - input.rank();
            let exprs: Vec<String> = (0..input.rank())
                .map(|j| {
                    if input.shape()[j] == 1 && out.shape[j + offset] != 1 {
                        "0".to_string()
                    } else {
                        dims[j + offset].clone()
                    }
                })
                .collect();
            maps.push(format!("affine_map<{domain} -> ({})>", exprs.join(", ")));
        }
        maps.push(format!("affine_map<{domain} -> {domain}>"));
        let empty = self.fresh();
        self.line(&format!("{empty} = tensor.empty() : {}", out.mlir()));
        let result = self.fresh();
        let args: Vec<String> = (0..inputs.len()).map(|i| format!("%in{i}")).collect();
        let mut block_args: Vec<String> = inputs
            .iter()
            .zip(&args)
            .map(|(v, a)| format!("{a}: {}", v.dtype().mlir()))
            .collect();
        block_args.push(format!("%out: {}", out.dtype.mlir()));
        let iterators = vec!["\"parallel\""; rank].join(", ");
        let ins: Vec<String> = inputs.iter().map(|v| v.ssa.clone()).collect();
        let in_types: Vec<String> = inputs.iter().map(|v| v.ty.mlir()).collect();
        let mut text = format!(
            "    {result} = linalg.generic {{indexing_maps = [{}], iterator_types = [{iterators}]}} ins({} : {}) outs({empty} : {}) {{\n    ^bb0({}):\n",
            maps.join(", "),
            ins.join(", "),
            in_types.join(", "),
            out.mlir(),
            block_args.join(", ")
        );
        for line in body(&args).lines() {
            let _ = writeln!(text, "      {line}");
        }
        let _ = writeln!(
            text,
            "      linalg.yield %r : {}\n    }} -> {} {}",
            out.dtype.mlir(),
            out.mlir(),
            self.loc
        );
        self.body.push_str(&text);
        Val {
            ssa: result,
            ty: out,
        }
    }

    /// A filled `tensor.empty` (linalg inits).
    pub fn filled(&mut self, ty: &TType, value: f64) -> Val {
        let scalar = self.fresh();
        let literal = if ty.dtype.is_float() {
            float_literal(value, ty.dtype)
        } else {
            (value as i64).to_string()
        };
        self.line(&format!(
            "{scalar} = arith.constant {literal} : {}",
            ty.dtype.mlir()
        ));
        let empty = self.fresh();
        self.line(&format!("{empty} = tensor.empty() : {}", ty.mlir()));
        let filled = self.fresh();
        self.line(&format!(
            "{filled} = linalg.fill ins({scalar} : {}) outs({empty} : {}) -> {}",
            ty.dtype.mlir(),
            ty.mlir(),
            ty.mlir()
        ));
        Val {
            ssa: filled,
            ty: ty.clone(),
        }
    }

    /// A linalg named op `name` (convolution or pooling) with `attrs`,
    /// inputs and an init; returns the result of the init's type.
    pub fn linalg_named(&mut self, name: &str, attrs: &str, inputs: &[&Val], init: &Val) -> Val {
        let result = self.fresh();
        let ins: Vec<String> = inputs.iter().map(|v| v.ssa.clone()).collect();
        let in_types: Vec<String> = inputs.iter().map(|v| v.ty.mlir()).collect();
        self.line(&format!(
            "{result} = {name} {{{attrs}}} ins({} : {}) outs({} : {}) -> {}",
            ins.join(", "),
            in_types.join(", "),
            init.ssa,
            init.ty.mlir(),
            init.ty.mlir()
        ));
        Val {
            ssa: result,
            ty: init.ty.clone(),
        }
    }

    /// An empty tensor of a type (shape-only operands such as pooling windows).
    pub fn empty(&mut self, ty: &TType) -> Val {
        let ssa = self.fresh();
        self.line(&format!("{ssa} = tensor.empty() : {}", ty.mlir()));
        Val {
            ssa,
            ty: ty.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_literals_parse_as_mlir_floats() {
        assert_eq!(float_literal(1.0, DType::F32), "1.0e0");
        assert_eq!(float_literal(-0.5, DType::F32), "-5.0e-1");
        assert_eq!(float_literal(1e-5, DType::F32), "1.0e-5");
        assert_eq!(float_literal(0.1, DType::F32), "1.0e-1");
        assert_eq!(float_literal(f64::INFINITY, DType::F32), "0x7F800000");
        assert_eq!(float_literal(f64::NEG_INFINITY, DType::F16), "0xFC00");
    }

    #[test]
    fn constants_inline_hex_or_resource() {
        let mut e = Emitter::new(ConstStyle::Hex);
        let small = Const::from_f64(DType::F32, vec![2, 2], &[1.0, 2.0, 3.0, 4.5]);
        assert_eq!(
            e.dense_literal(&small, "w"),
            "dense<[[1.0e0, 2.0e0], [3.0e0, 4.5e0]]> : tensor<2x2xf32>"
        );
        let splat = Const::splat_f64(DType::F32, vec![3], 0.0);
        assert_eq!(e.dense_literal(&splat, "z"), "dense<0.0e0> : tensor<3xf32>");
        let big = Const::from_i64(DType::I32, vec![65], &(0..65).collect::<Vec<_>>());
        assert!(
            e.dense_literal(&big, "b")
                .starts_with("dense<\"0x0000000001000000")
        );
        let mut r = Emitter::new(ConstStyle::Resource);
        assert_eq!(
            r.dense_literal(&big, "my.w"),
            "dense_resource<my_w_0> : tensor<65xi32>"
        );
        assert!(
            r.resource_section()
                .contains("my_w_0: \"0x040000000000000001000000")
        );
    }

    #[test]
    fn shapes_broadcast_like_numpy() {
        assert_eq!(broadcast_shapes(&[2, 3], &[3]), Some(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[2, 1], &[1, 3]), Some(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[2, 3], &[2]), None);
        assert_eq!(broadcast_shapes(&[], &[4]), Some(vec![4]));
        assert_eq!(sanitize("onnx::Conv_3"), "onnx__Conv_3");
        assert_eq!(sanitize("0"), "_0");
    }
}
