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

/// A value of the function being written, with its static type. The op
/// importers see only the type: how the value is named in the module is
/// the emitter's business.
#[derive(Clone, Debug)]
pub struct Val {
    ssa: String,
    pub ty: TType,
}

impl Val {
    /// The function's argument `index`.
    pub fn argument(index: usize, ty: TType) -> Self {
        Val {
            ssa: format!("%arg{index}"),
            ty,
        }
    }

    /// Whether the value is an argument of the function.
    pub fn is_argument(&self) -> bool {
        self.ssa.starts_with("%arg")
    }

    /// The same value read as another element type of the same MLIR
    /// type (a signed integer as the unsigned one of its width).
    pub fn relabeled(&self, dtype: DType) -> Self {
        Val {
            ssa: self.ssa.clone(),
            ty: self.ty.with_dtype(dtype),
        }
    }

    /// A value that is never emitted, for code that needs only a type.
    pub fn placeholder(ty: TType) -> Self {
        Val {
            ssa: String::new(),
            ty,
        }
    }

    /// The value's name in the written module (for the module writer).
    pub(in crate::front::onnx) fn ssa(&self) -> &str {
        &self.ssa
    }

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
    /// `dense_resource<name>` with no resource section: the bytes stay in
    /// [`Emitter::take_blobs`] (shared with the mapped model file, never
    /// hex-encoded) and the compiler attaches them to the parsed module.
    /// What `tcc compile` uses: a 500 MB model's weights are then neither
    /// written as 1 GB of hex nor parsed back.
    Blob,
}

/// A large constant's bytes kept out of the module text
/// ([`ConstStyle::Blob`]), named by its `dense_resource` key.
#[derive(Clone, Debug)]
pub struct Blob {
    pub key: String,
    /// The raw little-endian elements (shared, not copied).
    pub bytes: bytes::Bytes,
    /// The element size: the alignment the blob asks for.
    pub alignment: usize,
}

/// Constants with at most this many elements are written as element lists.
pub const INLINE_ELEMENTS: usize = 64;

pub struct Emitter {
    body: String,
    next: usize,
    loc: String,
    style: ConstStyle,
    resources: Vec<(String, String)>,
    blobs: Vec<Blob>,
    /// The first operand type with a zero dimension given to a TOSA op
    /// since it was last taken ([`Emitter::take_empty_operand`]):
    /// TOSA has no empty tensors, so the node walk turns it into an error
    /// naming the node rather than leaving it to the verifier.
    empty_operand: Option<(String, String)>,
}

mod attr;
mod body;
mod linalg;
mod literal;
mod tosa;

pub use attr::Attr;
pub use body::{Body, BodyAttr, BodyOp, FPred, IPred, Scalar, Sv};
pub use linalg::Operand;
use literal::{element_literal, hex, nested};
pub use literal::{float_literal, sanitize, string_literal};

/// Whether an MLIR tensor type (`tensor<2x0xf32>`) has a zero dimension.
fn has_zero_dim(ty: &str) -> bool {
    ty.strip_prefix("tensor<")
        .and_then(|rest| rest.strip_suffix('>'))
        .is_some_and(|body| body.split('x').rev().skip(1).any(|dim| dim == "0"))
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

impl Emitter {
    pub fn new(style: ConstStyle) -> Self {
        Self {
            body: String::new(),
            next: 0,
            loc: "loc(unknown)".into(),
            style,
            resources: Vec::new(),
            blobs: Vec::new(),
            empty_operand: None,
        }
    }

    /// The op and operand type of the first empty tensor given to a TOSA
    /// op since the last call, if any.
    pub fn take_empty_operand(&mut self) -> Option<(String, String)> {
        self.empty_operand.take()
    }

    /// The blobs of [`ConstStyle::Blob`] constants written so far (moved
    /// out).
    pub fn take_blobs(&mut self) -> Vec<Blob> {
        std::mem::take(&mut self.blobs)
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

    /// A generic-syntax op with one result (`props`: its attribute
    /// dictionary's text).
    fn op_typed(
        &mut self,
        name: &str,
        operands: &[(&str, String)],
        props: &str,
        result: &str,
    ) -> String {
        let ssa = self.fresh();
        let names: Vec<&str> = operands.iter().map(|(n, _)| *n).collect();
        let types: Vec<&str> = operands.iter().map(|(_, t)| t.as_str()).collect();
        if self.empty_operand.is_none()
            && name.starts_with("tosa.")
            && let Some(empty) = types.iter().find(|t| has_zero_dim(t))
        {
            self.empty_operand = Some((name.to_string(), empty.to_string()));
        }
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

    /// An op `name` on values with the attributes `attrs` and one result
    /// of type `ty`.
    pub fn op(&mut self, name: &str, operands: &[&Val], attrs: &[(&str, Attr)], ty: TType) -> Val {
        let operands: Vec<(&str, String)> = operands
            .iter()
            .map(|v| (v.ssa.as_str(), v.ty.mlir()))
            .collect();
        let ssa = self.op_typed(name, &operands, &attr::dictionary(attrs), &ty.mlir());
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
            ConstStyle::Blob if resource_type => {
                // `_bN`: the driver finds the blob from this suffix also
                // when the parser renames a key already in its context.
                let key = format!("{}_b{}", sanitize(hint), self.blobs.len());
                self.blobs.push(Blob {
                    key: key.clone(),
                    bytes: c.bytes.clone(),
                    alignment: c.dtype.size().max(1),
                });
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
        let ty = c.ty();
        if ty.numel() == 0 {
            // No elements (TOSA has no empty constants): an empty tensor.
            return Ok(self.empty(&ty));
        }
        let literal = self.dense_literal(c, hint);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_dimensions_are_found_in_tensor_types() {
        assert!(has_zero_dim("tensor<2x0xf32>"));
        assert!(has_zero_dim("tensor<0xi64>"));
        assert!(!has_zero_dim("tensor<2x10xf32>"));
        assert!(!has_zero_dim("tensor<f32>"));
        assert!(!has_zero_dim("!tosa.shape<0>"));
    }

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
