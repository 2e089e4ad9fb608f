//! Kernels of kind `softmax` (a `linalg.softmax` over the last axis):
//! instantiated from the row-softmax template of `tcc-kernels`, with the
//! operands' layouts read off the kernel IR. [`RowIo`], the input and
//! output rows, is shared with the layer-norm kernel.

use melior::ir::ValueLike;
use melior::ir::operation::{OperationLike, OperationRef};
use tcc_kernels::{KernelParameters, RowOperand, SoftmaxSpec, softmax_kernel};

use super::template::{KernelTemplate, TemplateKernel, row_kernel, row_offset};
use super::writer::{KernelWriter, MemrefView, memref_shape};
use crate::back::CodegenError;

/// The input and output of a row kernel (softmax, layer norm): one row per
/// work-group along the last dimension of the input's shape.
pub(super) struct RowIo {
    pub(super) shape: Vec<i64>,
    pub(super) input: MemrefView,
    pub(super) output: MemrefView,
}

impl RowIo {
    /// Operands `input` and `output` of `op` (`what` names them in errors).
    pub(super) fn read(
        writer: &mut KernelWriter,
        op: OperationRef,
        (input, output): (usize, usize),
        what: &str,
    ) -> Result<Self, CodegenError> {
        let (input_value, input) = writer.operand_view(op, input, what)?;
        let (_, output) = writer.operand_view(op, output, what)?;
        // A symbolic extent (issue 33) may only count rows: leading, after
        // unit dimensions, never the row itself.
        let ty = input_value.r#type();
        let rows_only = match crate::ir::dynamic::leading_dynamic(ty) {
            Ok(None) => true,
            Ok(Some(dim)) => dim + 1 < memref_shape(ty).len(),
            Err(()) => false,
        };
        if !rows_only {
            return Err(CodegenError::at(
                &op,
                format!(
                    "the {what} {ty} is dynamic other than in its leading rows: dynamic dimension not supported by the row template"
                ),
            ));
        }
        Ok(Self {
            shape: memref_shape(ty),
            input,
            output,
        })
    }

    /// The row length.
    pub(super) fn columns(&self) -> i64 {
        self.shape[self.shape.len() - 1]
    }

    /// `in_row` and `out_row`: where the work-group's row starts in each.
    pub(super) fn row_offsets(&self) -> String {
        format!(
            "{}\n{}",
            row_offset("in_row", &self.input, &self.shape),
            row_offset("out_row", &self.output, &self.shape)
        )
    }
}

/// A row operand: `view`'s buffer, stepping by its stride along `dim`.
pub(super) fn row_operand(view: &MemrefView, dim: usize) -> RowOperand {
    RowOperand {
        buffer: view.buffer.clone(),
        stride: view.strides[dim],
    }
}

impl KernelTemplate for SoftmaxSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        let softmax = writer.only_template_op(kernel, "linalg.softmax", "softmax")?;
        let rows = RowIo::read(writer, softmax, (0, 1), "softmax operand")?;
        let rank = rows.shape.len();
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
        writer.mark_written(&rows.output.buffer);
        Ok(SoftmaxSpec {
            kernel: row_kernel(kernel, "row softmax", "row"),
            columns: rows.columns(),
            row_offsets: rows.row_offsets(),
            input: row_operand(&rows.input, rank - 1),
            output: row_operand(&rows.output, rank - 1),
        })
    }

    fn instantiate(mut self, parameters: KernelParameters) -> Result<String, String> {
        self.kernel.parameters = parameters;
        softmax_kernel(&self)
    }
}
