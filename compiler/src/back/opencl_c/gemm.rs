//! Kernels whose strategy is `#tcc.gemm`: a (batched) matmul, the fill
//! that initialises it and its fused elementwise epilogue, instantiated from
//! the tiled GEMM template of `tcc-kernels`. This module reads the operands'
//! layouts off the kernel IR and turns the epilogue's `linalg.generic` body
//! into the C statements the template runs per output element.

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, BlockLike, BlockRef, RegionLike, TypeLike, Value, ValueLike};
use tcc_kernels::{GemmConfig, GemmOperand, GemmShape, GemmSpec, gemm_kernel};

use super::writer::{KernelWriter, MemrefView, key};
use crate::back::CodegenError;
use crate::ir::util::op_name;

/// A C index expression for each result of an affine map, given the C
/// names of its dimensions.
pub(super) fn affine_indices(
    op: OperationRef,
    map: Attribute,
    dims: &[&str],
) -> Result<Vec<String>, CodegenError> {
    if !unsafe { mlir_sys::mlirAttributeIsAAffineMap(map.to_raw()) } {
        return Err(CodegenError::at(
            &op,
            format!("indexing map {map} is not an affine map"),
        ));
    }
    let map = unsafe { mlir_sys::mlirAffineMapAttrGetValue(map.to_raw()) };
    let count = unsafe { mlir_sys::mlirAffineMapGetNumResults(map) } as usize;
    (0..count)
        .map(|index| {
            expression(
                op,
                unsafe { mlir_sys::mlirAffineMapGetResult(map, index as isize) },
                dims,
            )
        })
        .collect()
}

fn expression(
    op: OperationRef,
    expr: mlir_sys::MlirAffineExpr,
    dims: &[&str],
) -> Result<String, CodegenError> {
    unsafe {
        if mlir_sys::mlirAffineExprIsADim(expr) {
            let position = mlir_sys::mlirAffineDimExprGetPosition(expr) as usize;
            return dims.get(position).map(|d| d.to_string()).ok_or_else(|| {
                CodegenError::at(
                    &op,
                    format!("indexing map uses d{position} beyond the iteration space"),
                )
            });
        }
        if mlir_sys::mlirAffineExprIsAConstant(expr) {
            return Ok(format!(
                "{}",
                mlir_sys::mlirAffineConstantExprGetValue(expr)
            ));
        }
        let binary = |symbol: &str| -> Result<String, CodegenError> {
            let lhs = expression(op, mlir_sys::mlirAffineBinaryOpExprGetLHS(expr), dims)?;
            let rhs = expression(op, mlir_sys::mlirAffineBinaryOpExprGetRHS(expr), dims)?;
            Ok(format!("({lhs} {symbol} {rhs})"))
        };
        if mlir_sys::mlirAffineExprIsAAdd(expr) {
            return binary("+");
        }
        if mlir_sys::mlirAffineExprIsAMul(expr) {
            return binary("*");
        }
    }
    Err(CodegenError::at(
        &op,
        "indexing map with div/mod/symbols is not supported in GEMM epilogues",
    ))
}

fn operand_of(view: &MemrefView, rank: usize) -> GemmOperand {
    let strides = &view.strides;
    let (batch_stride, row_stride, col_stride) = if rank == 3 {
        (strides[0], strides[1], strides[2])
    } else {
        (0, strides[0], strides[1])
    };
    GemmOperand {
        pointer: view.base.clone(),
        offset: view.offset,
        batch_stride,
        row_stride,
        col_stride,
    }
}

/// An operand the template never reads through (its loads come from an
/// offset expression or computed elements instead): only its pointer.
fn placeholder_operand(pointer: &str) -> GemmOperand {
    GemmOperand {
        pointer: pointer.to_string(),
        offset: 0,
        batch_stride: 0,
        row_stride: 0,
        col_stride: 0,
    }
}

/// The B operand of an implicit-GEMM convolution: its HWCF filter is the
/// K x N matrix `B[k][j]` (`k` runs over kh, kw, c), row-major with rows of
/// F when the filter is contiguous, which the template loads like any
/// matrix (as float4 where F allows); otherwise an offset expression
/// through the window coordinates.
fn filter_operand(
    b: &MemrefView,
    filter: &[i64],
    [ky, kx, ch]: [String; 3],
) -> (GemmOperand, Option<String>) {
    let (kw, channels, features) = (filter[1], filter[2], filter[3]);
    let contiguous = b.strides == [kw * channels * features, channels * features, features, 1];
    if contiguous {
        let operand = GemmOperand {
            pointer: b.base.clone(),
            offset: b.offset,
            batch_stride: 0,
            row_stride: features,
            col_stride: 1,
        };
        return (operand, None);
    }
    (
        placeholder_operand(&b.base),
        Some(b.address(&[ky, kx, ch, "j".to_string()])),
    )
}

/// Static values of a conv attribute like `dense<[2, 1]> : tensor<2xi64>`
/// or the splat `dense<1> : tensor<2xi64>`; absent: 1.
fn pair(op: OperationRef, name: &str) -> Result<[i64; 2], CodegenError> {
    let Ok(attribute) = op.attribute(name) else {
        return Ok([1, 1]);
    };
    match crate::ir::dense::int_elements(attribute).as_deref() {
        Some([v]) => Ok([*v, *v]),
        Some([a, b]) => Ok([*a, *b]),
        _ => Err(CodegenError::at(
            &op,
            format!("cannot read {name} = {attribute}"),
        )),
    }
}

/// A translated elementwise generic: its statements, the C expression of
/// its yielded value, and its output's view with the output indices.
type TranslatedGeneric = (String, String, (MemrefView, Vec<String>));

/// The contraction a GEMM kernel computes, with C index expressions for
/// the output's dimensions in terms of `b`, `i`, `j`.
struct Contraction {
    a: GemmOperand,
    a_offset: Option<String>,
    a_element: Option<(String, String)>,
    /// `a_element` computes a float4 of 4 neighbouring channels.
    a_element_vector: bool,
    b: GemmOperand,
    b_offset: Option<String>,
    c: MemrefView,
    c_value_key: usize,
    dims: Vec<String>,
}

/// The float ops a convolution's A computation may hold in its float4
/// form, with their vector C function (`None`: an infix operator).
const VECTOR_FLOAT_OPS: &[(&str, Option<&str>)] = &[
    ("arith.addf", None),
    ("arith.subf", None),
    ("arith.mulf", None),
    ("arith.maximumf", Some("tcc_maximumf4")),
    ("arith.minimumf", Some("tcc_minimumf4")),
    ("arith.maxnumf", Some("fmax")),
    ("arith.minnumf", Some("fmin")),
    ("arith.select", None),
];

/// Whether a convolution generic's A computation (the body before its
/// `acc + a * w`) can run 4 channels at a time: every load's last index is
/// the channel (`linalg.index 6`, unclamped), so 4 neighbouring channels
/// lie next to each other in one pixel; every float op is elementwise
/// (add, sub, mul, max, min, a select by a scalar bounds check) on loaded
/// values and scalars from outside the body; everything else is index
/// arithmetic and bounds checks, shared by the 4 channels. A padded
/// input, a folded BatchNorm + ReLU and an unrolled max pool qualify; a
/// transposed (NCHW) input does not.
fn channel_vectorizable(ops: &[OperationRef]) -> bool {
    let is_float = |v: Value| v.r#type().is_f32() || v.r#type().is_f16() || v.r#type().is_f64();
    ops.iter().all(|op| {
        let name = op_name(op);
        match name.as_str() {
            "linalg.index" => true,
            "memref.load" => {
                op.operand_count() >= 2
                    && op
                        .operand(op.operand_count() - 1)
                        .ok()
                        .and_then(crate::ir::util::defining_op)
                        .is_some_and(|index| {
                            op_name(&index) == "linalg.index"
                                && index
                                    .attribute("dim")
                                    .ok()
                                    .and_then(crate::ir::util::integer_value)
                                    == Some(6)
                        })
            }
            "arith.constant" => true,
            name if name.starts_with("arith.") => {
                // A compare or cast of a float would see a float4.
                let float = op.results().any(|r| is_float(r.into())) || op.operands().any(is_float);
                !float || VECTOR_FLOAT_OPS.iter().any(|(n, _)| *n == name)
            }
            _ => false,
        }
    })
}

/// Whether `value` is a float result of one of `ops` (a vector in the
/// float4 form of a convolution's A computation).
fn defining_in(ops: &[OperationRef], value: Value) -> bool {
    value.r#type().is_f32()
        && crate::ir::util::defining_op(unsafe { Value::from_raw(value.to_raw()) })
            .is_some_and(|d| ops.iter().any(|op| op.to_raw().ptr == d.to_raw().ptr))
}

/// Whether `op` is a 2-D NHWC/HWCF convolution rewritten into a generic by
/// `tcc-fold-conv-inputs` (input padding and producer in its body).
fn is_conv_generic(op: OperationRef) -> bool {
    op_name(&op) == "linalg.generic"
        && crate::patterns::conv_inputs::window_layout(op).0 == "conv_2d_nhwc_hwcf"
}

impl KernelWriter {
    /// The implicit GEMM of a `tcc.conv` generic: B is its filter (HWCF),
    /// and A's elements are computed by translating its body up to the
    /// final `acc + a * w`: the coordinates, bounds checks, loads, producer
    /// ops and pad-value select, with `linalg.index` bound to the window
    /// position of GEMM row `i` and column `k`.
    fn conv_generic(&mut self, op: OperationRef, tile_k: i64) -> Result<Contraction, CodegenError> {
        let err = |e: melior::Error| CodegenError::at(&op, e.to_string());
        let ((_, b), (c_value, c)) = (self.view_of(op, 0)?, self.view_of(op, 1)?);
        let output = super::writer::memref_shape(c_value.r#type());
        let filter = super::writer::memref_shape(op.operand(0).map_err(err)?.r#type());
        let (oh, ow, kw, channels) = (output[1], output[2], filter[1], filter[2]);
        let n = format!("(i / {})", oh * ow);
        let y = format!("((i / {ow}) % {oh})");
        let x = format!("(i % {ow})");
        let ky = format!("(k / {})", kw * channels);
        let kx = format!("((k / {channels}) % {kw})");
        let ch = format!("(k % {channels})");
        // (n, oh, ow, f, kh, kw, c); f must not take part in A.
        let dims = [
            Some(n.clone()),
            Some(y.clone()),
            Some(x.clone()),
            None,
            Some(ky.clone()),
            Some(kx.clone()),
            Some(ch.clone()),
        ];
        let body = op
            .region(0)
            .map_err(err)?
            .first_block()
            .ok_or_else(|| CodegenError::at(&op, "convolution without a body"))?;
        let weight: Value = body.argument(0).map_err(err)?.into();
        let acc: Value = body.argument(1).map_err(err)?.into();
        let mut ops = Vec::new();
        let mut next = body.first_operation();
        while let Some(inner) = next {
            next = inner.next_in_block();
            ops.push(unsafe { OperationRef::from_raw(inner.to_raw()) });
        }
        // The tail: addf(acc, mulf(a, w)); yield.
        let malformed = || CodegenError::at(&op, "convolution body is not `acc + a * w`");
        let [.., multiply, add, terminator] = ops.as_slice() else {
            return Err(malformed());
        };
        fn operands<'c>(o: &OperationRef<'c, '_>) -> Vec<Value<'c, 'c>> {
            o.operands()
                .map(|v| unsafe { Value::from_raw(v.to_raw()) })
                .collect()
        }
        let product: Value = multiply.result(0).map_err(err)?.into();
        let sum: Value = add.result(0).map_err(err)?.into();
        if op_name(multiply) != "arith.mulf"
            || op_name(add) != "arith.addf"
            || op_name(terminator) != "linalg.yield"
            || operands(terminator) != [sum]
            || !(operands(add) == [acc, product] || operands(add) == [product, acc])
        {
            return Err(malformed());
        }
        let factors = operands(multiply);
        let a_value = match factors.as_slice() {
            [a, w] if *w == weight && *a != weight => *a,
            [w, a] if *w == weight && *a != weight => *a,
            _ => return Err(malformed()),
        };
        let input_ops = &ops[..ops.len() - 3];
        let vector = channels % 4 == 0 && tile_k % 4 == 0 && channel_vectorizable(input_ops);
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        for inner in input_ops {
            if inner.operands().any(|v| v == weight || v == acc) {
                return Err(CodegenError::at(
                    inner,
                    "the input computation of a convolution reads its filter or accumulator",
                ));
            }
            if op_name(inner) == "linalg.index" {
                let dim = inner
                    .attribute("dim")
                    .ok()
                    .and_then(crate::ir::util::integer_value)
                    .and_then(|d| dims.get(d as usize).cloned().flatten())
                    .ok_or_else(|| {
                        CodegenError::at(
                            inner,
                            "the input of a convolution depends on its output channel",
                        )
                    })?;
                let result: Value = inner.result(0).map_err(err)?.into();
                self.names.insert(key(result), dim);
            } else if vector && op_name(inner) == "memref.load" {
                // The first of 4 channels: the same address, 4 wide.
                let memref = inner.operand(0).map_err(err)?;
                let (view, address) = self.element_address(*inner, memref, 1)?;
                let name = self.fresh();
                self.line(&format!(
                    "const float4 {name} = vload4(0, {} + {address});",
                    view.base
                ));
                let result: Value = inner.result(0).map_err(err)?.into();
                self.names.insert(key(result), name);
            } else if vector
                && let Some((_, function)) =
                    VECTOR_FLOAT_OPS.iter().find(|(n, _)| *n == op_name(inner))
                && inner.results().any(|r| r.r#type().is_f32())
            {
                // 4 channels at once; scalars from outside (a pad value,
                // an accumulator start) are splat.
                let mut args = Vec::new();
                for (index, operand) in inner.operands().enumerate() {
                    let name = self.operand(*inner, index)?;
                    let vector_value = defining_in(input_ops, operand);
                    args.push(if index == 0 && op_name(inner) == "arith.select" {
                        name
                    } else if vector_value {
                        name
                    } else {
                        format!("(float4)({name})")
                    });
                }
                let expr = match (op_name(inner).as_str(), function) {
                    ("arith.select", _) => format!("({} ? {} : {})", args[0], args[1], args[2]),
                    (_, Some(function)) => format!("{function}({}, {})", args[0], args[1]),
                    ("arith.addf", None) => format!("({} + {})", args[0], args[1]),
                    ("arith.subf", None) => format!("({} - {})", args[0], args[1]),
                    (_, None) => format!("({} * {})", args[0], args[1]),
                };
                let name = self.fresh();
                self.line(&format!("const float4 {name} = {expr};"));
                let result: Value = inner.result(0).map_err(err)?.into();
                self.names.insert(key(result), name);
            } else {
                self.op(*inner)?;
            }
        }
        let value = self.name(op, a_value)?;
        let statements = std::mem::replace(&mut self.out, saved.0);
        self.indent = saved.1;
        let (b_operand, b_offset) = filter_operand(&b, &filter, [ky, kx, ch]);
        Ok(Contraction {
            a: placeholder_operand(&b.base),
            a_offset: None,
            a_element: Some((statements, value)),
            a_element_vector: vector,
            b: b_operand,
            b_offset,
            c,
            c_value_key: key(c_value),
            dims: vec![n, y, x, "j".to_string()],
        })
    }

    fn view_of(
        &self,
        op: OperationRef,
        index: usize,
    ) -> Result<(Value<'static, 'static>, MemrefView), CodegenError> {
        let value = op
            .operand(index)
            .map_err(|e| CodegenError::at(&op, e.to_string()))?;
        let view =
            self.views.get(&key(value)).cloned().ok_or_else(|| {
                CodegenError::at(&op, "contraction operand is not a kernel buffer")
            })?;
        Ok((unsafe { Value::from_raw(value.to_raw()) }, view))
    }

    fn contraction(&self, op: OperationRef, tile_k: i64) -> Result<Contraction, CodegenError> {
        let ((_, a), (_, b), (c_value, c)) = (
            self.view_of(op, 0)?,
            self.view_of(op, 1)?,
            self.view_of(op, 2)?,
        );
        let shape_of = |value: Value| super::writer::memref_shape(value.r#type());
        if op_name(&op) == "linalg.conv_2d_nhwc_hwcf" {
            let output = shape_of(c_value);
            let filter = shape_of(unsafe {
                Value::from_raw(
                    op.operand(1)
                        .map_err(|e| CodegenError::at(&op, e.to_string()))?
                        .to_raw(),
                )
            });
            let [sh, sw] = pair(op, "strides")?;
            let [dh, dw] = pair(op, "dilations")?;
            let (oh, ow, kw, channels) = (output[1], output[2], filter[1], filter[2]);
            let n = format!("(i / {})", oh * ow);
            let y = format!("((i / {ow}) % {oh})");
            let x = format!("(i % {ow})");
            let ky = format!("(k / {})", kw * channels);
            let kx = format!("((k / {channels}) % {kw})");
            let ch = format!("(k % {channels})");
            // 4 neighbouring k share a pixel and filter tap and are
            // contiguous channels when the channel count is a multiple of 4.
            let vector = channels % 4 == 0 && tile_k % 4 == 0;
            let a_offset = a.address(&[
                n.clone(),
                format!("({y} * {sh} + {ky} * {dh})"),
                format!("({x} * {sw} + {kx} * {dw})"),
                ch.clone(),
            ]);
            let (b_operand, b_offset) = filter_operand(&b, &filter, [ky, kx, ch]);
            return Ok(Contraction {
                a: placeholder_operand(&a.base),
                a_offset: (!vector).then(|| a_offset.clone()),
                a_element: vector
                    .then(|| (String::new(), format!("vload4(0, {} + {a_offset})", a.base))),
                a_element_vector: vector,
                b: b_operand,
                b_offset,
                c,
                c_value_key: key(c_value),
                dims: vec![n, y, x, "j".to_string()],
            });
        }
        let rank = c.strides.len();
        let dims: Vec<String> = if rank == 3 {
            vec!["b".into(), "i".into(), "j".into()]
        } else {
            vec!["i".into(), "j".into()]
        };
        Ok(Contraction {
            a: operand_of(&a, rank),
            a_offset: None,
            a_element: None,
            a_element_vector: false,
            b: operand_of(&b, rank),
            b_offset: None,
            c,
            c_value_key: key(c_value),
            dims,
        })
    }

    /// Writes a `#tcc.gemm` kernel from the template; returns the whole
    /// kernel text.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_gemm(
        &mut self,
        kernel: OperationRef,
        block: BlockRef,
        config: GemmConfig,
        shape: GemmShape,
        name: &str,
        parameters: String,
        comment: String,
    ) -> Result<String, CodegenError> {
        let tile_k = i64::from(config.tile_k);
        // Split-K kernels end with the workspace and counters arguments
        // (`tcc-attach-split-k-scratch`); the template writes both.
        let split_k_scratch = if config.split_k > 1 {
            let count = block.argument_count();
            let counters_are_i32 = count >= 2
                && block.argument(count - 1).is_ok_and(|counters| {
                    super::writer::memref_element(counters.r#type())
                        == Some(super::writer::ElementType::I32)
                });
            if !counters_are_i32 {
                return Err(CodegenError::at(
                    &kernel,
                    "a split-K GEMM kernel needs its workspace and counters arguments (run tcc-attach-split-k-scratch)",
                ));
            }
            let (workspace, counters) = (format!("a{}", count - 2), format!("a{}", count - 1));
            self.mark_written(&workspace);
            self.mark_written(&counters);
            Some((workspace, counters))
        } else {
            None
        };
        let mut contraction_op: Option<OperationRef> = None;
        let mut fill: Option<(usize, String)> = None;
        let mut init_generic: Option<OperationRef> = None;
        let mut epilogue: Option<OperationRef> = None;
        for op in self.template_ops(block)? {
            match op_name(&op).as_str() {
                "linalg.fill" => {
                    let value = self.operand(op, 0)?;
                    let target: Value = op
                        .operand(1)
                        .map_err(|e| CodegenError::at(&op, e.to_string()))?;
                    fill = Some((key(target), value));
                }
                "linalg.matmul" | "linalg.batch_matmul" | "linalg.conv_2d_nhwc_hwcf" => {
                    contraction_op = Some(op)
                }
                "linalg.generic" if contraction_op.is_none() && is_conv_generic(op) => {
                    contraction_op = Some(op)
                }
                "linalg.generic" if contraction_op.is_none() && init_generic.is_none() => {
                    init_generic = Some(op)
                }
                "linalg.generic" if contraction_op.is_some() && epilogue.is_none() => {
                    epilogue = Some(op)
                }
                other => {
                    return Err(CodegenError::at(
                        &op,
                        format!("'{other}' cannot be part of a tiled GEMM kernel"),
                    ));
                }
            }
        }
        let contraction_op = contraction_op.ok_or_else(|| {
            CodegenError::at(&kernel, "#tcc.gemm kernel without a matmul or convolution")
        })?;
        let contraction = if is_conv_generic(contraction_op) {
            self.conv_generic(contraction_op, tile_k)?
        } else {
            self.contraction(contraction_op, tile_k)?
        };
        let dims: Vec<&str> = contraction.dims.iter().map(String::as_str).collect();
        let c_address = contraction.c.address(&contraction.dims);
        let (init_statements, init) = match (&fill, init_generic) {
            (Some((target, value)), _) if *target == contraction.c_value_key => {
                (String::new(), value.clone())
            }
            (_, Some(generic)) => {
                let (statements, value, _) = self.translate_generic(generic, None, &dims)?;
                (statements, value)
            }
            _ => (
                String::new(),
                format!("{}[{c_address}]", contraction.c.base),
            ),
        };
        let store = match epilogue {
            None => {
                self.mark_written(&contraction.c.base.clone());
                format!("{}[{c_address}] = acc_value;", contraction.c.base)
            }
            Some(generic) => {
                let c_value = contraction_op
                    .operand(contraction_op.operand_count() - 1)
                    .map_err(|e| CodegenError::at(&contraction_op, e.to_string()))?;
                let (mut statements, value, output) =
                    self.translate_generic(generic, Some(c_value), &dims)?;
                let (view, indices) = output;
                statements.push_str(&format!(
                    "{}[{}] = {value};\n",
                    view.base,
                    view.address(&indices)
                ));
                self.mark_written(&view.base.clone());
                statements
            }
        };
        let spec = GemmSpec {
            name: name.to_string(),
            parameters,
            comment,
            config,
            shape,
            a: contraction.a,
            a_offset: contraction.a_offset,
            a_element: contraction.a_element,
            a_element_vector: contraction.a_element_vector,
            b: contraction.b,
            b_offset: contraction.b_offset,
            init_statements,
            init,
            store,
            split_k_scratch,
            tf32: self.tf32,
        };
        gemm_kernel(&spec).map_err(|e| CodegenError::at(&kernel, e))
    }

    /// Translates an elementwise `linalg.generic` at the output element
    /// whose dimensions are `dims`: its inputs are loaded through their
    /// indexing maps (the contraction's result, if given, is `acc_value`)
    /// and its body's ops become statements. Returns the statements, the
    /// yielded value and the output's view with its indices.
    pub(super) fn translate_generic(
        &mut self,
        generic: OperationRef,
        accumulator: Option<Value>,
        dims: &[&str],
    ) -> Result<TranslatedGeneric, CodegenError> {
        let maps = generic
            .attribute("indexing_maps")
            .map_err(|e| CodegenError::at(&generic, e.to_string()))?;
        let maps = melior::ir::attribute::ArrayAttribute::try_from(maps)
            .map_err(|_| CodegenError::at(&generic, "malformed indexing_maps"))?;
        let region = generic
            .region(0)
            .map_err(|e| CodegenError::at(&generic, e.to_string()))?;
        let body = region
            .first_block()
            .ok_or_else(|| CodegenError::at(&generic, "generic without a body"))?;
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        let count = generic.operand_count();
        let mut output: Option<(MemrefView, Vec<String>)> = None;
        for index in 0..count {
            let operand = generic
                .operand(index)
                .map_err(|e| CodegenError::at(&generic, e.to_string()))?;
            let argument: Value = body
                .argument(index)
                .map_err(|e| CodegenError::at(&generic, e.to_string()))?
                .into();
            let map = maps
                .element(index)
                .map_err(|e| CodegenError::at(&generic, e.to_string()))?;
            let is_output = index == count - 1;
            let indices = affine_indices(generic, map, dims)?;
            if !operand.r#type().is_mem_ref() {
                // A scalar input (e.g. a constant broadcast).
                let value = self.name(generic, operand)?;
                self.names.insert(key(argument), value);
                continue;
            }
            let view = self.views.get(&key(operand)).cloned().ok_or_else(|| {
                CodegenError::at(&generic, "generic operand is not a kernel buffer")
            })?;
            if accumulator.is_some_and(|acc| acc == operand) && !is_output {
                self.names.insert(key(argument), "acc_value".to_string());
            } else if !is_output || crate::ir::util::use_count(argument) > 0 {
                let name = self.fresh();
                let address = view.address(&indices);
                self.line(&format!(
                    "const {} {name} = {}[{address}];",
                    view.element.c_type(),
                    view.base
                ));
                self.names.insert(key(argument), name);
            }
            if is_output {
                output = Some((view, indices));
            }
        }
        let mut next = body.first_operation();
        let mut result = None;
        while let Some(op) = next {
            next = op.next_in_block();
            let op = unsafe { OperationRef::from_raw(op.to_raw()) };
            if op_name(&op) == "linalg.yield" {
                result = Some(self.operand(op, 0)?);
            } else {
                self.op(op)?;
            }
        }
        let output =
            output.ok_or_else(|| CodegenError::at(&generic, "generic without an output"))?;
        let result =
            result.ok_or_else(|| CodegenError::at(&generic, "generic without linalg.yield"))?;
        let text = std::mem::replace(&mut self.out, saved.0);
        self.indent = saved.1;
        Ok((text, result, output))
    }
}
