//! Kernels the gpu phase marked `tcc.gemm`: a (batched) matmul, the fill
//! that initialises it and its fused elementwise epilogue, instantiated from
//! the tiled GEMM template of `tcc-kernels`. This module reads the operands'
//! layouts off the kernel IR and turns the epilogue's `linalg.generic` body
//! into the C statements the template runs per output element.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::attribute::AttributeLike;
use melior::ir::{Attribute, BlockLike, BlockRef, RegionLike, Value, ValueLike};
use tcc_kernels::{GemmConfig, GemmOperand, GemmShape, GemmSpec, gemm_kernel};

use super::writer::{KernelWriter, MemrefView, key};
use crate::back::CodegenError;
use crate::ir::util::op_name;

/// A C index expression for each result of an affine map, given the C
/// names of its dimensions.
pub(super) fn affine_indices(op: OperationRef, map: Attribute, dims: &[&str]) -> Result<Vec<String>, CodegenError> {
    if !unsafe { mlir_sys::mlirAttributeIsAAffineMap(map.to_raw()) } {
        return Err(CodegenError::at(&op, format!("indexing map {map} is not an affine map")));
    }
    let map = unsafe { mlir_sys::mlirAffineMapAttrGetValue(map.to_raw()) };
    let count = unsafe { mlir_sys::mlirAffineMapGetNumResults(map) } as usize;
    (0..count)
        .map(|index| expression(op, unsafe { mlir_sys::mlirAffineMapGetResult(map, index as isize) }, dims))
        .collect()
}

fn expression(op: OperationRef, expr: mlir_sys::MlirAffineExpr, dims: &[&str]) -> Result<String, CodegenError> {
    unsafe {
        if mlir_sys::mlirAffineExprIsADim(expr) {
            let position = mlir_sys::mlirAffineDimExprGetPosition(expr) as usize;
            return dims
                .get(position)
                .map(|d| d.to_string())
                .ok_or_else(|| CodegenError::at(&op, format!("indexing map uses d{position} beyond the iteration space")));
        }
        if mlir_sys::mlirAffineExprIsAConstant(expr) {
            return Ok(format!("{}L", mlir_sys::mlirAffineConstantExprGetValue(expr)));
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
    Err(CodegenError::at(&op, "indexing map with div/mod/symbols is not supported in GEMM epilogues"))
}

fn operand_of(view: &MemrefView, rank: usize) -> GemmOperand {
    let strides = &view.strides;
    let (batch_stride, row_stride, col_stride) = if rank == 3 { (strides[0], strides[1], strides[2]) } else { (0, strides[0], strides[1]) };
    GemmOperand { pointer: view.base.clone(), offset: view.offset, batch_stride, row_stride, col_stride }
}

impl KernelWriter {
    /// Writes a `tcc.gemm` kernel from the template; returns the whole
    /// kernel text.
    pub(super) fn write_gemm(
        &mut self,
        kernel: OperationRef,
        block: BlockRef,
        tiles: &[i64],
        name: &str,
        parameters: String,
        comment: String,
    ) -> Result<String, CodegenError> {
        let [tile_m, tile_n, tile_k, work_m, work_n] = tiles else {
            return Err(CodegenError::at(&kernel, "tcc.gemm needs five tile sizes"));
        };
        let config = GemmConfig {
            tile_m: *tile_m as u32,
            tile_n: *tile_n as u32,
            tile_k: *tile_k as u32,
            work_m: *work_m as u32,
            work_n: *work_n as u32,
        };
        let mut matmul: Option<OperationRef> = None;
        let mut fill: Option<(usize, String)> = None;
        let mut epilogue: Option<OperationRef> = None;
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let op = unsafe { OperationRef::from_raw(op.to_raw()) };
            match op_name(&op).as_str() {
                "linalg.fill" => {
                    let value = self.operand(op, 0)?;
                    let target: Value = op.operand(1).map_err(|e| CodegenError::at(&op, e.to_string()))?;
                    fill = Some((key(target), value));
                }
                "linalg.matmul" | "linalg.batch_matmul" => matmul = Some(op),
                "linalg.generic" if matmul.is_some() && epilogue.is_none() => epilogue = Some(op),
                "gpu.return" => {}
                "arith.constant" | "memref.expand_shape" | "memref.collapse_shape" | "memref.subview" | "memref.reinterpret_cast" | "memref.cast" => {
                    self.op(op)?;
                }
                other => return Err(CodegenError::at(&op, format!("'{other}' cannot be part of a tiled GEMM kernel"))),
            }
        }
        let matmul = matmul.ok_or_else(|| CodegenError::at(&kernel, "tcc.gemm kernel without a matmul"))?;
        let view = |index: usize| -> Result<(Value, MemrefView), CodegenError> {
            let value = matmul.operand(index).map_err(|e| CodegenError::at(&matmul, e.to_string()))?;
            let view = self.views.get(&key(value)).cloned().ok_or_else(|| CodegenError::at(&matmul, "matmul operand is not a kernel buffer"))?;
            Ok((value, view))
        };
        let ((_, a), (_, b), (c_value, c)) = (view(0)?, view(1)?, view(2)?);
        let rank = c.strides.len();
        let shape_of = |value: Value| super::writer::memref_shape(value.r#type());
        let a_shape = shape_of(matmul.operand(0).map_err(|e| CodegenError::at(&matmul, e.to_string()))?);
        let c_shape = shape_of(c_value);
        let shape = GemmShape {
            batch: if rank == 3 { c_shape[0] } else { 1 },
            m: c_shape[rank - 2],
            n: c_shape[rank - 1],
            k: a_shape[a_shape.len() - 1],
        };
        let dims: Vec<&str> = if rank == 3 { vec!["b", "i", "j"] } else { vec!["i", "j"] };
        let c_address = c.address(&dims.iter().map(|d| d.to_string()).collect::<Vec<_>>());
        let init = match &fill {
            Some((target, value)) if *target == key(c_value) => value.clone(),
            _ => format!("{}[{c_address}]", c.base),
        };

        let store = match epilogue {
            None => {
                self.mark_written(&c.base.clone());
                format!("{}[{c_address}] = acc_value;", c.base)
            }
            Some(generic) => self.epilogue(generic, c_value, &dims)?,
        };
        let spec = GemmSpec {
            name: name.to_string(),
            parameters,
            comment,
            config,
            shape,
            a: operand_of(&a, rank),
            b: operand_of(&b, rank),
            init,
            store,
        };
        gemm_kernel(&spec).map_err(|e| CodegenError::at(&kernel, e))
    }

    /// The epilogue's body as C statements: operands loaded through their
    /// indexing maps (the matmul result is `acc_value`), the body's ops, and
    /// the store of the yielded value.
    fn epilogue(&mut self, generic: OperationRef, matmul_output: Value, dims: &[&str]) -> Result<String, CodegenError> {
        let maps = generic.attribute("indexing_maps").map_err(|e| CodegenError::at(&generic, e.to_string()))?;
        let maps = melior::ir::attribute::ArrayAttribute::try_from(maps).map_err(|_| CodegenError::at(&generic, "malformed indexing_maps"))?;
        let region = generic.region(0).map_err(|e| CodegenError::at(&generic, e.to_string()))?;
        let body = region.first_block().ok_or_else(|| CodegenError::at(&generic, "epilogue without a body"))?;
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        let count = generic.operand_count();
        let mut output: Option<(MemrefView, Vec<String>)> = None;
        for index in 0..count {
            let operand = generic.operand(index).map_err(|e| CodegenError::at(&generic, e.to_string()))?;
            let argument: Value = body.argument(index).map_err(|e| CodegenError::at(&generic, e.to_string()))?.into();
            let map = maps.element(index).map_err(|e| CodegenError::at(&generic, e.to_string()))?;
            let view = self.views.get(&key(operand)).cloned().ok_or_else(|| CodegenError::at(&generic, "epilogue operand is not a kernel buffer"))?;
            let indices = affine_indices(generic, map, dims)?;
            let is_output = index == count - 1;
            if operand == matmul_output && !is_output {
                self.names.insert(key(argument), "acc_value".to_string());
            } else if !is_output || crate::ir::util::use_count(argument) > 0 {
                let name = self.fresh();
                let element = view.element;
                let address = view.address(&indices);
                self.line(&format!("const {} {name} = {}[{address}];", element.c_type(), view.base));
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
        let (view, indices) = output.ok_or_else(|| CodegenError::at(&generic, "epilogue without an output"))?;
        let result = result.ok_or_else(|| CodegenError::at(&generic, "epilogue without linalg.yield"))?;
        let address = view.address(&indices);
        self.line(&format!("{}[{address}] = {result};", view.base));
        self.mark_written(&view.base.clone());
        let text = std::mem::replace(&mut self.out, saved.0);
        self.indent = saved.1;
        Ok(text)
    }
}
