//! Kernels of kind `layer_norm` (a `tcc.layer_norm_rows`): instantiated
//! from the row layer-norm template of `tcc-kernels`, with the operands'
//! layouts read off the kernel IR.

use melior::ir::attribute::FloatAttribute;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockRef, ValueLike};
use tcc_kernels::{LayerNormSpec, RowOperand, layer_norm_kernel};

use super::softmax::row_offset;
use super::writer::{KernelWriter, MemrefView, key, memref_shape};
use crate::back::CodegenError;
use crate::ir::util::op_name;

impl KernelWriter {
    pub(super) fn write_layer_norm(
        &mut self,
        kernel: OperationRef,
        block: BlockRef,
        workgroup_size: i64,
        name: &str,
        parameters: String,
        comment: String,
    ) -> Result<String, CodegenError> {
        let mut rows = None;
        for op in self.template_ops(block)? {
            match op_name(&op).as_str() {
                "tcc.layer_norm_rows" => rows = Some(op),
                other => {
                    return Err(CodegenError::at(
                        &op,
                        format!("'{other}' cannot be part of a layer norm kernel"),
                    ));
                }
            }
        }
        let rows = rows.ok_or_else(|| {
            CodegenError::at(&kernel, "layer norm kernel without tcc.layer_norm_rows")
        })?;
        let view = |index: usize| -> Result<(Vec<i64>, MemrefView), CodegenError> {
            let value = rows
                .operand(index)
                .map_err(|e| CodegenError::at(&rows, e.to_string()))?;
            let view = self.views.get(&key(value)).cloned().ok_or_else(|| {
                CodegenError::at(&rows, "layer norm operand is not a kernel buffer")
            })?;
            Ok((memref_shape(value.r#type()), view))
        };
        let ((shape, input), (_, scale), (_, bias), (_, output)) =
            (view(0)?, view(1)?, view(2)?, view(3)?);
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
        self.mark_written(&output.base.clone());
        let operand = |view: &MemrefView, dim: usize| RowOperand {
            base: view.base.clone(),
            stride: view.strides[dim],
        };
        let spec = LayerNormSpec {
            name: name.to_string(),
            parameters,
            comment,
            workgroup_size: workgroup_size as u32,
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
        };
        layer_norm_kernel(&spec).map_err(|e| CodegenError::at(&kernel, e))
    }
}
