//! Kernels of kind `softmax` (a `linalg.softmax` over the last axis):
//! instantiated from the row-softmax template of `tcc-kernels`, with the
//! operands' layouts read off the kernel IR. [`RowIo`], the input and
//! output rows, is shared with the layer-norm kernel.

use melior::ir::ValueLike;
use melior::ir::operation::{OperationLike, OperationRef};
use tcc_kernels::{KernelParameters, RowLength, RowOperand, SoftmaxSpec, softmax_kernel};

use super::template::{KernelTemplate, TemplateKernel, row_kernel, row_offset};
use super::writer::{KernelWriter, MemrefView, memref_shape};
use crate::back::CodegenError;

/// The input and output of a row kernel (softmax, layer norm): one row per
/// work-group along the last dimension of the input's shape.
pub(super) struct RowIo {
    pub(super) shape: Vec<i64>,
    pub(super) input: MemrefView,
    pub(super) output: MemrefView,
    /// With symbolic extents other than one leading (issue 33: `?x?x64`
    /// rows, or rows along a symbolic dimension), the C expression of
    /// every extent of the input; `None` where the static addressing
    /// holds.
    extents: Option<Vec<String>>,
}

impl RowIo {
    /// Operands `input` and `output` of `op` (`what` names them in errors).
    pub(super) fn read(
        writer: &mut KernelWriter,
        op: OperationRef,
        (input, output): (usize, usize),
        what: &str,
    ) -> Result<Self, CodegenError> {
        let (input_value, input) = writer.operand_view_strided(op, input, what)?;
        let (_, output) = writer.operand_view_strided(op, output, what)?;
        let ty = input_value.r#type();
        let shape = memref_shape(ty);
        // One symbolic extent counting rows only (leading, after unit
        // dimensions) keeps the static strides; anything else addresses
        // rows through the extents' scalar arguments.
        let leading_rows = match crate::ir::dynamic::leading_dynamic(ty) {
            Ok(None) => true,
            Ok(Some(dim)) => dim + 1 < shape.len(),
            Err(()) => false,
        };
        let extents = if leading_rows
            && !input.has_dynamic_strides()
            && !output.has_dynamic_strides()
        {
            None
        } else {
            let last = shape.len().saturating_sub(1);
            for view in [&input, &output] {
                if view.strides.get(last) == Some(&crate::ir::memref::DYNAMIC) {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "the {what} {ty} steps along its rows by a symbolic stride: the row template needs a static one"
                        ),
                    ));
                }
            }
            Some(
                (0..shape.len())
                    .map(|dim| writer.extent(op, input_value, dim))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        };
        Ok(Self {
            shape,
            input,
            output,
            extents,
        })
    }

    /// The row length.
    pub(super) fn columns(&self) -> RowLength {
        let last = self.shape[self.shape.len() - 1];
        match &self.extents {
            Some(extents) if last == crate::ir::memref::DYNAMIC => {
                RowLength::Dynamic(extents[extents.len() - 1].clone())
            }
            _ => RowLength::Static(last),
        }
    }

    /// `in_row` and `out_row`: where the work-group's row starts in each.
    pub(super) fn row_offsets(&self) -> String {
        match &self.extents {
            None => format!(
                "{}\n{}",
                row_offset("in_row", &self.input, &self.shape),
                row_offset("out_row", &self.output, &self.shape)
            ),
            Some(extents) => format!(
                "{}\n{}",
                symbolic_row_offset("in_row", &self.input, &self.shape, extents),
                symbolic_row_offset("out_row", &self.output, &self.shape, extents)
            ),
        }
    }
}

/// C statements computing `name` (the element offset of row `row`'s first
/// element) for a view of `shape` whose extents (`extents`, C
/// expressions) or strides follow symbolic dimensions: each leading
/// coordinate is `row` divided by the extents inside it, modulo its own
/// (the outermost takes no modulo), times its stride.
fn symbolic_row_offset(name: &str, view: &MemrefView, shape: &[i64], extents: &[String]) -> String {
    let leading = shape.len().saturating_sub(1);
    let mut terms = vec![view.offset.to_string()];
    let mut inside: Vec<&str> = Vec::new();
    for dim in (0..leading).rev() {
        if shape[dim] == 1 {
            continue;
        }
        let quotient = if inside.is_empty() {
            "row".to_string()
        } else {
            format!("(row / ({}))", inside.join(" * "))
        };
        let outermost = (0..dim).all(|d| shape[d] == 1);
        let coordinate = if outermost {
            quotient
        } else {
            format!("({quotient} % {})", extents[dim])
        };
        let stride = match &view.stride_exprs {
            Some(exprs) => exprs[dim].clone(),
            None => view.strides[dim].to_string(),
        };
        if stride != "0" {
            terms.push(format!("{coordinate} * {stride}"));
        }
        inside.push(&extents[dim]);
    }
    format!("const tcc_index {name} = {};", terms.join(" + "))
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
