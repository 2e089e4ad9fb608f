//! Elementwise `linalg.generic`s inside template kernels (a GEMM's or row
//! reduction's init and epilogue) as C statements at one output element,
//! and affine indexing maps as C index expressions.

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, BlockLike, RegionLike, TypeLike, Value, ValueLike};

use super::writer::{KernelWriter, MemrefView, key};
use crate::back::{CodegenError, ErrorAt};
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

/// A translated elementwise generic: its statements, the C expression of
/// its yielded value, and its output's view with the output indices.
type TranslatedGeneric = (String, String, (MemrefView, Vec<String>));

impl KernelWriter {
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
        let maps = generic.attribute("indexing_maps").at(&generic)?;
        let maps = melior::ir::attribute::ArrayAttribute::try_from(maps)
            .map_err(|_| CodegenError::at(&generic, "malformed indexing_maps"))?;
        let region = generic.region(0).at(&generic)?;
        let body = region
            .first_block()
            .ok_or_else(|| CodegenError::at(&generic, "generic without a body"))?;
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        let count = generic.operand_count();
        let mut output: Option<(MemrefView, Vec<String>)> = None;
        for index in 0..count {
            let operand = generic.operand(index).at(&generic)?;
            let argument: Value = body.argument(index).at(&generic)?.into();
            let map = maps.element(index).at(&generic)?;
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
                self.define_load(argument, &view, &indices);
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
            } else if op_name(&op) == "linalg.index" {
                // An index reads the element's coordinate (an average
                // pool's divisor counts the window's cells inside the input).
                let dim = op
                    .attribute("dim")
                    .ok()
                    .and_then(crate::ir::util::integer_value)
                    .and_then(|d| dims.get(d as usize))
                    .ok_or_else(|| {
                        CodegenError::at(&op, "linalg.index beyond the iteration space")
                    })?;
                let index: Value = op.result(0).at(&op)?.into();
                self.names.insert(key(index), format!("(tcc_index){dim}"));
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
