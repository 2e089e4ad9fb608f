//! Kernels of kind `attention` (a `tcc.flash_attention`): instantiated from
//! the flash-attention template of `tcc-kernels`, with the operands'
//! layouts (offsets and strides of their views) read off the kernel IR. A
//! mask dimension of size 1 broadcasts (stride 0). With `--precision=fp16`
//! or `bf16` the template adds its tensor-core body for the PTX form.

use melior::ir::ValueLike;
use melior::ir::attribute::{BoolAttribute, FloatAttribute};
use melior::ir::operation::{OperationLike, OperationRef};
use tcc_kernels::{
    AttentionOperand, AttentionShape, AttentionSpec, KernelParameters, attention_kernel,
};

use super::template::{KernelTemplate, TemplateKernel};
use super::writer::{KernelWriter, memref_shape};
use crate::back::CodegenError;
use crate::ir::strategy::KernelStrategy;

/// Operand `index` of `op` as a rank-4 template operand and its shape.
fn operand(
    writer: &KernelWriter,
    op: OperationRef,
    index: usize,
    what: &str,
) -> Result<(AttentionOperand, Vec<i64>), CodegenError> {
    let (value, view) = writer.operand_view(op, index, what)?;
    let shape = memref_shape(value.r#type());
    let strides: [i64; 4] = view.strides.clone().try_into().map_err(|_| {
        CodegenError::at(&op, format!("the attention kernel's {what} is not rank 4"))
    })?;
    if shape.len() != 4 {
        return Err(CodegenError::at(
            &op,
            format!("the attention kernel's {what} is not rank 4"),
        ));
    }
    let mut strides = strides;
    for (stride, size) in strides.iter_mut().zip(&shape) {
        if *size == 1 {
            *stride = 0;
        }
    }
    Ok((
        AttentionOperand {
            buffer: view.buffer.clone(),
            offset: view.offset,
            strides,
        },
        shape,
    ))
}

impl KernelTemplate for AttentionSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        let op = writer.only_template_op(kernel, "tcc.flash_attention", "attention")?;
        let KernelStrategy::Attention {
            block_q,
            block_k,
            key_lanes,
        } = kernel.strategy
        else {
            return Err(CodegenError::at(
                &op,
                "attention kernel without #tcc.attention",
            ));
        };
        let (query, q) = operand(writer, op, 0, "query")?;
        let (key, k) = operand(writer, op, 1, "key")?;
        let (value, _) = operand(writer, op, 2, "value")?;
        let count = op.operand_count();
        let mask = if count == 5 {
            Some(operand(writer, op, 3, "mask")?.0)
        } else {
            None
        };
        let (output, _) = operand(writer, op, count - 1, "output")?;
        let scale = op
            .attribute("scale")
            .ok()
            .and_then(|a| FloatAttribute::try_from(a).ok())
            .map(|a| a.value() as f32)
            .ok_or_else(|| CodegenError::at(&op, "attention without a float scale"))?;
        let causal = op
            .attribute("causal")
            .ok()
            .and_then(|a| BoolAttribute::try_from(a).ok())
            .is_some_and(|a| a.value());
        writer.mark_written(&output.buffer);
        let block = |v: i64| {
            u32::try_from(v).map_err(|_| CodegenError::at(&op, "attention block out of range"))
        };
        Ok(AttentionSpec {
            name: kernel.name.to_string(),
            parameters: KernelParameters::default(),
            comment: if key_lanes > 1 {
                format!(
                    "/* {}: flash attention kernel, one work-group per {block_q} query rows of {key_lanes} work-items each; from {} */",
                    kernel.name, kernel.location
                )
            } else if writer.single_item_attention {
                format!(
                    "/* {}: flash attention kernel, one work-item per {block_q} query rows; from {} */",
                    kernel.name, kernel.location
                )
            } else {
                format!(
                    "/* {}: flash attention kernel, one work-group per {block_q} query rows; from {} */",
                    kernel.name, kernel.location
                )
            },
            shape: AttentionShape {
                batch: q[0],
                heads: q[1],
                kv_heads: k[1],
                q_len: q[2],
                kv_len: k[2],
                head_dim: q[3],
            },
            scale,
            causal,
            block_q: block(block_q)?,
            block_k: block(block_k)?,
            query,
            key,
            value,
            mask,
            output,
            // fp16/bf16: the PTX form multiplies on tensor cores (when the
            // shape suits them, `tensor_cores_fit`); fp32 and TF32 keep
            // the exact fp32 body.
            tensor_cores: writer.precision.attention_tensor_cores(),
            single_item: writer.single_item_attention,
            key_lanes: block(key_lanes.max(1))?,
        })
    }

    fn instantiate(mut self, parameters: KernelParameters) -> Result<String, String> {
        self.parameters = parameters;
        attention_kernel(&self)
    }
}
