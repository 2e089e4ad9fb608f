//! Kernels of kind `layer_norm` (a `tcc.layer_norm_rows`): instantiated
//! from the row layer-norm template of `tcc-kernels`, with the operands'
//! layouts read off the kernel IR.

use melior::ir::ValueLike;
use melior::ir::attribute::FloatAttribute;
use melior::ir::operation::OperationLike;
use tcc_kernels::{KernelParameters, LayerNormSpec, RowOperand, layer_norm_kernel};

use super::template::{KernelTemplate, TemplateKernel, row_kernel, row_offset};
use super::writer::{KernelWriter, MemrefView, memref_shape};
use crate::back::CodegenError;

impl KernelTemplate for LayerNormSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        let rows = writer.only_template_op(kernel, "tcc.layer_norm_rows", "layer norm")?;
        let what = "layer norm operand";
        let (input_value, input) = writer.operand_view(rows, 0, what)?;
        let (_, scale) = writer.operand_view(rows, 1, what)?;
        let (_, bias) = writer.operand_view(rows, 2, what)?;
        let (_, output) = writer.operand_view(rows, 3, what)?;
        let shape = memref_shape(input_value.r#type());
        let rank = shape.len();
        if rank == 0 || scale.strides.len() != 1 || bias.strides.len() != 1 {
            return Err(CodegenError::at(
                &rows,
                "the layer norm kernel takes rows and row-shaped scale and bias",
            ));
        }
        let epsilon = rows
            .attribute("epsilon")
            .ok()
            .and_then(|a| FloatAttribute::try_from(a).ok())
            .map(|a| a.value() as f32)
            .ok_or_else(|| CodegenError::at(&rows, "layer norm without a float epsilon"))?;
        writer.mark_written(&output.buffer);
        let operand = |view: &MemrefView, dim: usize| RowOperand {
            buffer: view.buffer.clone(),
            stride: view.strides[dim],
        };
        Ok(LayerNormSpec {
            kernel: row_kernel(kernel, "row layer norm", "row"),
            columns: shape[rank - 1],
            row_offsets: format!(
                "{}\n{}\nconst tcc_index scale_at = {}, bias_at = {};",
                row_offset("in_row", &input, &shape),
                row_offset("out_row", &output, &shape),
                scale.offset,
                bias.offset
            ),
            input: operand(&input, rank - 1),
            output: operand(&output, rank - 1),
            scale: operand(&scale, 0),
            bias: operand(&bias, 0),
            epsilon,
        })
    }

    fn instantiate(mut self, parameters: KernelParameters) -> Result<String, String> {
        self.kernel.parameters = parameters;
        layer_norm_kernel(&self)
    }
}
