//! Kernels whose strategy is `#tcc.row_reduce`: a fill, the reduction it initialises
//! and an optional elementwise epilogue of the result, instantiated from the row-reduction template of
//! `tcc-kernels` (one work-group per output element). The reduction's body
//! — everything but its final `combiner(x, acc)` — becomes the per-element
//! C statements; the combiner becomes the template's partial and tree step,
//! and the epilogue runs on the total where work-item 0 stores it.

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, RegionLike, TypeLike, Value, ValueLike};
use tcc_kernels::{KernelParameters, RowReduceSpec, row_reduce_kernel};

use super::generic::affine_indices;
use super::template::{KernelTemplate, TemplateKernel, row_coordinates, row_kernel};
use super::writer::{KernelWriter, key};
use crate::back::{CodegenError, ErrorAt};
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
        // int32 sums (an int8 matrix-vector product): exact in any order.
        "arith.addi" => ("({a} + {b})", "0"),
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
        let ty = op.operand(index).at(&op)?.r#type();
        let map =
            unsafe { mlir_sys::mlirAffineMapAttrGetValue(maps.element(index).at(&op)?.to_raw()) };
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
    fn row_reduce_spec(&mut self, kernel: &TemplateKernel) -> Result<RowReduceSpec, CodegenError> {
        let block = kernel.block;
        let mut fill: Option<(usize, String)> = None;
        let mut reduction: Option<OperationRef> = None;
        let mut epilogue: Option<OperationRef> = None;
        for op in self.template_ops(block)? {
            match op_name(&op).as_str() {
                "linalg.fill" => fill = Some(self.fill(op)?),
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
            CodegenError::at(&kernel.op, "row-reduction kernel without its reduction")
        })?;
        let maps = melior::ir::attribute::ArrayAttribute::try_from(
            generic.attribute("indexing_maps").at(&generic)?,
        )
        .map_err(|_| CodegenError::at(&generic, "malformed indexing_maps"))?;
        let body = generic
            .region(0)
            .at(&generic)?
            .first_block()
            .ok_or_else(|| CodegenError::at(&generic, "reduction without a body"))?;
        let count = generic.operand_count();
        let dims = unsafe {
            mlir_sys::mlirAffineMapGetNumDims(mlir_sys::mlirAffineMapAttrGetValue(
                maps.element(0).at(&generic)?.to_raw(),
            ))
        } as usize;
        let ranges = loop_ranges(generic, &maps, dims)?;
        // The reduced dimensions trail the parallel ones
        // (`tcc-configure-kernels` chose the template only so).
        let first_reduced = crate::ir::affine::iterator_types(generic)
            .and_then(|types| {
                types
                    .iter()
                    .position(|t| *t == crate::ir::affine::IteratorType::Reduction)
            })
            .ok_or_else(|| CodegenError::at(&generic, "a reduction without a reduced dimension"))?;

        // Indices: the parallel dimensions from `row`; the reduced one is
        // `r`, or, where several are reduced, each taken from `r` (their
        // product, the row, walked in order).
        let single = first_reduced + 1 == dims;
        let names: Vec<String> = (0..dims)
            .map(|d| {
                if d < first_reduced {
                    format!("d{d}")
                } else if single {
                    "r".to_string()
                } else {
                    format!("r{d}")
                }
            })
            .collect();
        let mut row_setup = String::new();
        for (d, index) in row_coordinates(&ranges[..first_reduced]).iter().enumerate() {
            row_setup.push_str(&format!("const tcc_index d{d} = {index};\n"));
        }
        let dim_names: Vec<&str> = names.iter().map(String::as_str).collect();

        // The per-element statements: inputs loaded through their maps, the
        // body without its combiner.
        let terminator = body
            .terminator()
            .ok_or_else(|| CodegenError::at(&generic, "reduction body without a terminator"))?;
        let yielded = terminator.operand(0).at(&generic)?;
        let combined = defining_op(unsafe { Value::from_raw(yielded.to_raw()) })
            .ok_or_else(|| CodegenError::at(&generic, "the reduction yields no combination"))?;
        let (combine, identity) = combiner(combined)?;
        let accumulator: Value = body.argument(count - 1).at(&generic)?.into();
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        if !single {
            let mut stride = 1i64;
            for d in (first_reduced..dims).rev() {
                let quotient = if stride == 1 {
                    "r".to_string()
                } else {
                    format!("(r / {stride})")
                };
                let index = if d == first_reduced {
                    quotient
                } else {
                    format!("({quotient} % {})", ranges[d])
                };
                self.line(&format!("const tcc_index r{d} = {index};"));
                stride *= ranges[d];
            }
        }
        for index in 0..count - 1 {
            let argument: Value = body.argument(index).at(&generic)?.into();
            let indices = affine_indices(generic, maps.element(index).at(&generic)?, &dim_names)?;
            let (_, view) = self.operand_view(generic, index, "reduction input")?;
            self.define_load(argument, &view, &indices);
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
        let ty = if op_name(&combined) == "arith.addi" {
            "int"
        } else {
            "float"
        };
        self.line(&format!("const {ty} value = {value};"));
        let element = std::mem::replace(&mut self.out, saved.0);
        self.indent = saved.1;

        // The result: combine the fill value (or the output's contents)
        // with the total.
        let output = generic.operand(count - 1).at(&generic)?;
        let (_, view) = self.operand_view(generic, count - 1, "reduction output")?;
        let parallel: Vec<&str> = dim_names.clone();
        let out_indices =
            affine_indices(generic, maps.element(count - 1).at(&generic)?, &parallel)?;
        let init = match fill {
            Some((target, value)) if target == key(output) => value,
            _ => view.load(&out_indices),
        };
        let result = combine.replace("{a}", "total").replace("{b}", &init);
        let finish = match epilogue {
            None => {
                self.mark_written(&view.buffer);
                view.store(&result, &out_indices)
            }
            Some(epilogue) => {
                // The epilogue runs over the reduction's output elements:
                // its dimensions are the output's coordinates.
                let dims: Vec<&str> = out_indices.iter().map(String::as_str).collect();
                let (statements, value, (epilogue_view, indices)) =
                    self.translate_generic(epilogue, Some(output), &dims)?;
                self.mark_written(&epilogue_view.buffer);
                format!(
                    "const {ty} acc_value = {result};\n{statements}{}",
                    epilogue_view.store(&value, &indices)
                )
            }
        };
        Ok(RowReduceSpec {
            kernel: row_kernel(kernel, "row reduction", "output element"),
            length: ranges[first_reduced..].iter().product(),
            row_setup,
            ty,
            element,
            identity: identity.to_string(),
            combine: combine.to_string(),
            finish,
        })
    }
}

impl KernelTemplate for RowReduceSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        writer.row_reduce_spec(kernel)
    }

    fn instantiate(mut self, parameters: KernelParameters) -> Result<String, String> {
        self.kernel.parameters = parameters;
        row_reduce_kernel(&self)
    }
}
