//! Kernels whose strategy is `#tcc.row_reduce`: a fill, the reduction it initialises
//! and an optional elementwise epilogue of the result, instantiated from the row-reduction template of
//! `tcc-kernels` (one work-group per output element). The reduction's body
//! — everything but its final `combiner(x, acc)` — becomes the per-element
//! C statements; the combiner becomes the template's partial and tree step,
//! and the epilogue runs on the total where work-item 0 stores it.

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, BlockRef, RegionLike, TypeLike, Value, ValueLike};
use tcc_kernels::{RowReduceSpec, row_reduce_kernel};

use super::gemm::affine_indices;
use super::writer::{KernelWriter, key, row_coordinates};
use crate::back::CodegenError;
use crate::ir::util::{defining_op, op_name};

/// The combiner's C form and identity.
fn combiner(op: OperationRef) -> Result<(&'static str, &'static str), CodegenError> {
    Ok(match op_name(&op).as_str() {
        "arith.addf" => ("({a} + {b})", "0.0f"),
        "arith.mulf" => ("({a} * {b})", "1.0f"),
        "arith.maximumf" => ("tcc_maximumf({a}, {b})", "-INFINITY"),
        "arith.maxnumf" => ("fmax({a}, {b})", "-INFINITY"),
        "arith.minimumf" => ("tcc_minimumf({a}, {b})", "INFINITY"),
        "arith.minnumf" => ("fmin({a}, {b})", "INFINITY"),
        other => {
            return Err(CodegenError::at(
                &op,
                format!("'{other}' is not a row-reduction combiner"),
            ));
        }
    })
}

/// Static extent of each iteration dimension of a linalg op on buffers,
/// read off the operands its indexing maps index with plain dimensions.
fn loop_ranges(
    op: OperationRef,
    maps: &melior::ir::attribute::ArrayAttribute,
    dims: usize,
) -> Result<Vec<i64>, CodegenError> {
    let mut ranges = vec![0i64; dims];
    for index in 0..op.operand_count() {
        let ty = op
            .operand(index)
            .map_err(|e| CodegenError::at(&op, e.to_string()))?
            .r#type();
        let map = unsafe {
            mlir_sys::mlirAffineMapAttrGetValue(
                maps.element(index)
                    .map_err(|e| CodegenError::at(&op, e.to_string()))?
                    .to_raw(),
            )
        };
        for position in 0..unsafe { mlir_sys::mlirAffineMapGetNumResults(map) } {
            let expr = unsafe { mlir_sys::mlirAffineMapGetResult(map, position) };
            if unsafe { mlir_sys::mlirAffineExprIsADim(expr) } {
                let dim = unsafe { mlir_sys::mlirAffineDimExprGetPosition(expr) } as usize;
                ranges[dim] = unsafe { mlir_sys::mlirShapedTypeGetDimSize(ty.to_raw(), position) };
            }
        }
    }
    if ranges.contains(&0) {
        return Err(CodegenError::at(
            &op,
            "cannot tell every loop range of the reduction",
        ));
    }
    Ok(ranges)
}

impl KernelWriter {
    pub(super) fn write_row_reduce(
        &mut self,
        kernel: OperationRef,
        block: BlockRef,
        workgroup_size: i64,
        name: &str,
        parameters: String,
        comment: String,
    ) -> Result<String, CodegenError> {
        let mut fill: Option<(usize, String)> = None;
        let mut reduction: Option<OperationRef> = None;
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
                "linalg.generic" if reduction.is_none() => reduction = Some(op),
                "linalg.generic" if epilogue.is_none() => epilogue = Some(op),
                other => {
                    return Err(CodegenError::at(
                        &op,
                        format!("'{other}' cannot be part of a row-reduction kernel"),
                    ));
                }
            }
        }
        let generic = reduction.ok_or_else(|| {
            CodegenError::at(&kernel, "row-reduction kernel without its reduction")
        })?;
        let maps = melior::ir::attribute::ArrayAttribute::try_from(
            generic
                .attribute("indexing_maps")
                .map_err(|e| CodegenError::at(&generic, e.to_string()))?,
        )
        .map_err(|_| CodegenError::at(&generic, "malformed indexing_maps"))?;
        let body = generic
            .region(0)
            .map_err(|e| CodegenError::at(&generic, e.to_string()))?
            .first_block()
            .ok_or_else(|| CodegenError::at(&generic, "reduction without a body"))?;
        let count = generic.operand_count();
        let dims = unsafe {
            mlir_sys::mlirAffineMapGetNumDims(mlir_sys::mlirAffineMapAttrGetValue(
                maps.element(0)
                    .map_err(|e| CodegenError::at(&generic, e.to_string()))?
                    .to_raw(),
            ))
        } as usize;
        let ranges = loop_ranges(generic, &maps, dims)?;

        // Indices: the parallel dimensions from `row`, the reduced one is `r`.
        let names: Vec<String> = (0..dims)
            .map(|d| {
                if d + 1 == dims {
                    "r".to_string()
                } else {
                    format!("d{d}")
                }
            })
            .collect();
        let mut row_setup = String::new();
        for (d, index) in row_coordinates(&ranges[..dims - 1]).iter().enumerate() {
            row_setup.push_str(&format!("const tcc_index d{d} = {index};\n"));
        }
        let dim_names: Vec<&str> = names.iter().map(String::as_str).collect();

        // The per-element statements: inputs loaded through their maps, the
        // body without its combiner.
        let terminator = body
            .terminator()
            .ok_or_else(|| CodegenError::at(&generic, "reduction body without a terminator"))?;
        let yielded = terminator
            .operand(0)
            .map_err(|e| CodegenError::at(&generic, e.to_string()))?;
        let combined = defining_op(unsafe { Value::from_raw(yielded.to_raw()) })
            .ok_or_else(|| CodegenError::at(&generic, "the reduction yields no combination"))?;
        let (combine, identity) = combiner(combined)?;
        let accumulator: Value = body
            .argument(count - 1)
            .map_err(|e| CodegenError::at(&generic, e.to_string()))?
            .into();
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        for index in 0..count - 1 {
            let operand = generic
                .operand(index)
                .map_err(|e| CodegenError::at(&generic, e.to_string()))?;
            let argument: Value = body
                .argument(index)
                .map_err(|e| CodegenError::at(&generic, e.to_string()))?
                .into();
            let indices = affine_indices(
                generic,
                maps.element(index)
                    .map_err(|e| CodegenError::at(&generic, e.to_string()))?,
                &dim_names,
            )?;
            let view = self.views.get(&key(operand)).cloned().ok_or_else(|| {
                CodegenError::at(&generic, "reduction input is not a kernel buffer")
            })?;
            let name = self.fresh();
            self.line(&format!(
                "const {} {name} = {}[{}];",
                view.element.c_type(),
                view.base,
                view.address(&indices)
            ));
            self.names.insert(key(argument), name);
        }
        let mut next = body.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let op = unsafe { OperationRef::from_raw(op.to_raw()) };
            if op.to_raw().ptr == combined.to_raw().ptr || op_name(&op) == "linalg.yield" {
                continue;
            }
            self.op(op)?;
        }
        let value_operand = combined
            .operands()
            .find(|v| *v != accumulator)
            .ok_or_else(|| {
                CodegenError::at(
                    &combined,
                    "the combiner combines the accumulator with itself",
                )
            })?;
        let value = self.name(combined, value_operand)?;
        self.line(&format!("const float value = {value};"));
        let element = std::mem::replace(&mut self.out, saved.0);
        self.indent = saved.1;

        // The result: combine the fill value (or the output's contents)
        // with the total.
        let output = generic
            .operand(count - 1)
            .map_err(|e| CodegenError::at(&generic, e.to_string()))?;
        let view =
            self.views.get(&key(output)).cloned().ok_or_else(|| {
                CodegenError::at(&generic, "reduction output is not a kernel buffer")
            })?;
        let parallel: Vec<&str> = dim_names.clone();
        let out_indices = affine_indices(
            generic,
            maps.element(count - 1)
                .map_err(|e| CodegenError::at(&generic, e.to_string()))?,
            &parallel,
        )?;
        let address = view.address(&out_indices);
        let init = match fill {
            Some((target, value)) if target == key(output) => value,
            _ => format!("{}[{address}]", view.base),
        };
        let result = combine.replace("{a}", "total").replace("{b}", &init);
        let finish = match epilogue {
            None => {
                self.mark_written(&view.base.clone());
                format!("{}[{address}] = {result};", view.base)
            }
            Some(epilogue) => {
                // The epilogue runs over the reduction's output elements:
                // its dimensions are the output's coordinates.
                let dims: Vec<&str> = out_indices.iter().map(String::as_str).collect();
                let (statements, value, (epilogue_view, indices)) =
                    self.translate_generic(epilogue, Some(output), &dims)?;
                self.mark_written(&epilogue_view.base.clone());
                format!(
                    "const float acc_value = {result};\n{statements}{}[{}] = {value};",
                    epilogue_view.base,
                    epilogue_view.address(&indices)
                )
            }
        };
        let spec = RowReduceSpec {
            name: name.to_string(),
            parameters,
            comment,
            workgroup_size: workgroup_size as u32,
            length: ranges[dims - 1],
            row_setup,
            element,
            identity: identity.to_string(),
            combine: combine.to_string(),
            finish,
        };
        row_reduce_kernel(&spec).map_err(|e| CodegenError::at(&kernel, e))
    }
}
