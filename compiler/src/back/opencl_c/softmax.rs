//! Kernels of kind `softmax` (a `linalg.softmax` over the last axis):
//! instantiated from the row-softmax template of `tcc-kernels`, with the
//! operands' layouts read off the kernel IR.

use melior::ir::ValueLike;
use melior::ir::operation::OperationLike;
use tcc_kernels::{KernelParameters, RowOperand, SoftmaxSpec, softmax_kernel};

use super::template::{KernelTemplate, TemplateKernel, row_kernel, row_offset};
use super::writer::{KernelWriter, memref_shape};
use crate::back::CodegenError;

impl KernelTemplate for SoftmaxSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        let softmax = writer.only_template_op(kernel, "linalg.softmax", "softmax")?;
        let (input_value, input) = writer.operand_view(softmax, 0, "softmax operand")?;
        let (_, output) = writer.operand_view(softmax, 1, "softmax operand")?;
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
        writer.mark_written(&output.buffer);
        Ok(SoftmaxSpec {
            kernel: row_kernel(kernel, "row softmax", "row"),
            columns: shape[rank - 1],
            row_offsets: format!(
                "{}\n{}",
                row_offset("in_row", &input, &shape),
                row_offset("out_row", &output, &shape)
            ),
            input: RowOperand {
                stride: input.strides[rank - 1],
                buffer: input.buffer,
            },
            output: RowOperand {
                stride: output.strides[rank - 1],
                buffer: output.buffer,
            },
        })
    }

    fn instantiate(mut self, parameters: KernelParameters) -> Result<String, String> {
        self.kernel.parameters = parameters;
        softmax_kernel(&self)
    }
}
