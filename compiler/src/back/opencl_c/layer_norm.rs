//! Kernels of kind `layer_norm` (a `tcc.layer_norm_rows`): instantiated
//! from the row layer-norm template of `tcc-kernels`, with the operands'
//! layouts read off the kernel IR (rows as the softmax kernel reads them).

use melior::ir::attribute::FloatAttribute;
use melior::ir::operation::OperationLike;
use tcc_kernels::{KernelParameters, LayerNormSpec, layer_norm_kernel};

use super::softmax::{RowIo, row_operand};
use super::template::{KernelTemplate, TemplateKernel, row_kernel};
use super::writer::KernelWriter;
use crate::back::CodegenError;

impl KernelTemplate for LayerNormSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        let op = writer.only_template_op(kernel, "tcc.layer_norm_rows", "layer norm")?;
        let what = "layer norm operand";
        let rows = RowIo::read(writer, op, (0, 3), what)?;
        let (_, scale) = writer.operand_view(op, 1, what)?;
        let (_, bias) = writer.operand_view(op, 2, what)?;
        let rank = rows.shape.len();
        if rank == 0 || scale.strides.len() != 1 || bias.strides.len() != 1 {
            return Err(CodegenError::at(
                &op,
                "the layer norm kernel takes rows and row-shaped scale and bias",
            ));
        }
        let epsilon = op
            .attribute("epsilon")
            .ok()
            .and_then(|a| FloatAttribute::try_from(a).ok())
            .map(|a| a.value() as f32)
            .ok_or_else(|| CodegenError::at(&op, "layer norm without a float epsilon"))?;
        let tcc_kernels::RowLength::Static(columns) = rows.columns() else {
            return Err(CodegenError::at(
                &op,
                "the layer norm kernel normalizes rows of a static length only",
            ));
        };
        writer.mark_written(&rows.output.buffer);
        let group_rows = match kernel.strategy {
            crate::ir::strategy::KernelStrategy::LayerNorm { rows, .. } => rows,
            _ => 1,
        };
        let row_count = rows.shape[..rank - 1]
            .iter()
            .map(|&d| (d >= 0).then_some(d))
            .product::<Option<i64>>();
        let row_count = match (group_rows, row_count) {
            (1, count) => count.unwrap_or(1),
            (_, Some(count)) => count,
            (_, None) => {
                return Err(CodegenError::at(
                    &op,
                    "a layer norm of several rows a work-group over a dynamic row count",
                ));
            }
        };
        Ok(LayerNormSpec {
            kernel: row_kernel(kernel, "row layer norm", "row"),
            columns,
            row_offsets: format!(
                "{}\nconst tcc_index scale_at = {}, bias_at = {};",
                rows.row_offsets(),
                scale.offset,
                bias.offset
            ),
            input: row_operand(&rows.input, rank - 1),
            output: row_operand(&rows.output, rank - 1),
            scale: row_operand(&scale, 0),
            bias: row_operand(&bias, 0),
            epsilon,
            group_rows: u32::try_from(group_rows).unwrap_or(1),
            rows: row_count,
        })
    }

    fn instantiate(mut self, parameters: KernelParameters) -> Result<String, String> {
        self.kernel.parameters = parameters;
        layer_norm_kernel(&self)
    }
}
