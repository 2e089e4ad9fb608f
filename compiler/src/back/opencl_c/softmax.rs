//! Kernels of kind `softmax` (a `linalg.softmax` over the last axis):
//! instantiated from the row-softmax template of `tcc-kernels`, with the
//! operands' layouts read off the kernel IR.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockRef, Value, ValueLike};
use tcc_kernels::{SoftmaxSpec, softmax_kernel};

use super::writer::{KernelWriter, MemrefView, key, memref_shape, row_coordinates};
use crate::back::CodegenError;
use crate::ir::util::op_name;

/// C statements computing `name` (the element offset of row `row`'s first
/// element) for a view whose leading dimensions are `shape[..rank-1]`.
pub(super) fn row_offset(name: &str, view: &MemrefView, shape: &[i64]) -> String {
    let leading = &shape[..shape.len().saturating_sub(1)];
    let mut terms = vec![view.offset.to_string()];
    for (dim, index) in row_coordinates(leading).into_iter().enumerate() {
        if view.strides[dim] != 0 {
            terms.push(format!("{index} * {}", view.strides[dim]));
        }
    }
    format!("const tcc_index {name} = {};", terms.join(" + "))
}

impl KernelWriter {
    pub(super) fn write_softmax(
        &mut self,
        kernel: OperationRef,
        block: BlockRef,
        workgroup_size: i64,
        name: &str,
        parameters: String,
        comment: String,
    ) -> Result<String, CodegenError> {
        let mut softmax = None;
        for op in self.template_ops(block)? {
            match op_name(&op).as_str() {
                "linalg.softmax" => softmax = Some(op),
                other => {
                    return Err(CodegenError::at(
                        &op,
                        format!("'{other}' cannot be part of a softmax kernel"),
                    ));
                }
            }
        }
        let softmax = softmax
            .ok_or_else(|| CodegenError::at(&kernel, "softmax kernel without linalg.softmax"))?;
        let view = |index: usize| -> Result<(Value, MemrefView), CodegenError> {
            let value = softmax
                .operand(index)
                .map_err(|e| CodegenError::at(&softmax, e.to_string()))?;
            let view = self.views.get(&key(value)).cloned().ok_or_else(|| {
                CodegenError::at(&softmax, "softmax operand is not a kernel buffer")
            })?;
            Ok((value, view))
        };
        let ((input_value, input), (_, output)) = (view(0)?, view(1)?);
        let shape = memref_shape(input_value.r#type());
        let rank = shape.len();
        let dimension = softmax
            .attribute("dimension")
            .ok()
            .and_then(crate::ir::util::integer_value);
        if rank == 0 || dimension != Some(rank as i64 - 1) {
            return Err(CodegenError::at(
                &softmax,
                "the softmax kernel normalizes the last dimension only",
            ));
        }
        self.mark_written(&output.base.clone());
        let spec = SoftmaxSpec {
            name: name.to_string(),
            parameters,
            comment,
            workgroup_size: workgroup_size as u32,
            columns: shape[rank - 1],
            row_offsets: format!(
                "{}\n{}",
                row_offset("in_row", &input, &shape),
                row_offset("out_row", &output, &shape)
            ),
            input: input.base.clone(),
            input_stride: input.strides[rank - 1],
            output: output.base.clone(),
            output_stride: output.strides[rank - 1],
        };
        softmax_kernel(&spec).map_err(|e| CodegenError::at(&kernel, e))
    }
}
