//! Template kernels: a kernel whose strategy names a template (`#tcc.gemm`,
//! a row reduction, softmax, layer norm, `#tcc.window` or `#tcc.attention`) is not translated op by op but
//! instantiated from `tcc-kernels`. Each template writer implements
//! [`KernelTemplate`]: it reads the template's operands off the kernel
//! body (marking the buffers it stores to), and then, with every store
//! known, instantiates the template with the kernel's typed parameter
//! list. This module also holds what the template writers share.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, BlockRef, Value, ValueLike};
use tcc_kernels::{
    AttentionSpec, GemmSpec, KernelParameters, LayerNormSpec, RowKernel, RowReduceSpec,
    SoftmaxSpec, WindowSpec,
};

use super::writer::{KernelArg, KernelWriter, MemrefView, key, parameters};
use crate::back::{CodegenError, ErrorAt};
use crate::ir::strategy::KernelStrategy;
use crate::ir::util::op_name;

/// A template kernel being written: its `gpu.func`, body and header.
pub(super) struct TemplateKernel<'k, 'c, 'a> {
    pub(super) op: OperationRef<'c, 'a>,
    pub(super) block: BlockRef<'c, 'a>,
    pub(super) name: &'k str,
    pub(super) kind: &'k str,
    /// Where the kernel came from, for its comment.
    pub(super) location: &'k str,
    pub(super) strategy: KernelStrategy,
}

impl TemplateKernel<'_, '_, '_> {
    /// Work-items per row (per output element) of a row template.
    pub(super) fn row_workgroup_size(&self) -> i64 {
        match self.strategy {
            KernelStrategy::Loops { workgroup_size, .. }
            | KernelStrategy::RowReduce { workgroup_size }
            | KernelStrategy::Softmax { workgroup_size }
            | KernelStrategy::LayerNorm { workgroup_size, .. } => workgroup_size,
            KernelStrategy::Gemm { config, .. } => i64::from(config.workgroup_size()),
            KernelStrategy::Window { config, .. } => i64::from(config.workgroup_size),
            KernelStrategy::Attention {
                block_q, key_lanes, ..
            } => block_q * key_lanes.max(1),
        }
    }
}

/// A template kernel writer; `Self` is the template's spec.
pub(super) trait KernelTemplate: Sized {
    /// Reads the template's operands off the kernel body, marking the
    /// buffers the kernel stores to; the spec's parameter list is left
    /// empty (constness is known only once every store is).
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError>;

    /// The kernel's text, with its typed parameter list.
    fn instantiate(self, parameters: KernelParameters) -> Result<String, String>;
}

impl KernelWriter {
    /// The kernel's text if its strategy is a template, `None` for a loop
    /// nest; marks the arguments the template writes.
    pub(super) fn write_template(
        &mut self,
        kernel: &TemplateKernel,
        args: &mut [KernelArg],
    ) -> Result<Option<String>, CodegenError> {
        let text = match kernel.strategy {
            KernelStrategy::Loops { .. } => return Ok(None),
            KernelStrategy::Gemm { .. } => self.instantiate::<GemmSpec>(kernel, args)?,
            KernelStrategy::RowReduce { .. } => self.instantiate::<RowReduceSpec>(kernel, args)?,
            KernelStrategy::Softmax { .. } => self.instantiate::<SoftmaxSpec>(kernel, args)?,
            KernelStrategy::LayerNorm { .. } => self.instantiate::<LayerNormSpec>(kernel, args)?,
            KernelStrategy::Window { .. } => self.instantiate::<WindowSpec>(kernel, args)?,
            KernelStrategy::Attention { .. } => self.instantiate::<AttentionSpec>(kernel, args)?,
        };
        Ok(Some(text))
    }

    fn instantiate<T: KernelTemplate>(
        &mut self,
        kernel: &TemplateKernel,
        args: &mut [KernelArg],
    ) -> Result<String, CodegenError> {
        let spec = T::read(self, kernel)?;
        self.mark_arguments(args);
        let mut parameters = parameters(args);
        // A view rebuilt with a symbolic size (a row template's operand
        // reshaped in the kernel) passes the size, which the template's
        // addressing does not need (its strides are static: `RowIo`): the
        // host launches with it all the same. The GEMM template declares
        // its own.
        if !matches!(kernel.strategy, KernelStrategy::Gemm { .. }) {
            self.scalars.sort();
            parameters.extents = self.scalars.iter().map(|s| s.name()).collect();
        }
        spec.instantiate(parameters).at(&kernel.op)
    }

    /// The ops of a template kernel's body other than its constants, views
    /// and return, in order. Constants and views are translated on the way:
    /// they give the names and layouts the template's operands use.
    pub(super) fn template_ops<'c, 'a>(
        &mut self,
        block: BlockRef<'c, 'a>,
    ) -> Result<Vec<OperationRef<'c, 'a>>, CodegenError> {
        let mut ops = Vec::new();
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let op = unsafe { OperationRef::from_raw(op.to_raw()) };
            match op_name(&op).as_str() {
                "gpu.return" => {}
                "arith.constant"
                | "memref.expand_shape"
                | "memref.collapse_shape"
                | "memref.subview"
                | "memref.reinterpret_cast"
                | "memref.cast"
                | "memref.transpose" => self.op(op)?,
                _ => ops.push(op),
            }
        }
        Ok(ops)
    }

    /// The one op of a single-op template's body (`what` kernel, op
    /// `expected`).
    pub(super) fn only_template_op<'c, 'a>(
        &mut self,
        kernel: &TemplateKernel<'_, 'c, 'a>,
        expected: &str,
        what: &str,
    ) -> Result<OperationRef<'c, 'a>, CodegenError> {
        let mut found = None;
        for op in self.template_ops(kernel.block)? {
            if op_name(&op) != expected {
                return Err(CodegenError::at(
                    &op,
                    format!("'{}' cannot be part of a {what} kernel", op_name(&op)),
                ));
            }
            found = Some(op);
        }
        found.ok_or_else(|| {
            CodegenError::at(&kernel.op, format!("{what} kernel without {expected}"))
        })
    }

    /// A `linalg.fill`'s target (its value's key) and the C value it fills.
    pub(super) fn fill(&self, op: OperationRef) -> Result<(usize, String), CodegenError> {
        let value = self.operand(op, 0)?;
        Ok((key(op.operand(1).at(&op)?), value))
    }

    /// Operand `index` of `op` and the view of the kernel buffer it is
    /// (`what`: the operand's role, for the error), with static strides:
    /// a view whose strides follow symbolic extents is refused.
    pub(super) fn operand_view(
        &self,
        op: OperationRef,
        index: usize,
        what: &str,
    ) -> Result<(Value<'static, 'static>, MemrefView), CodegenError> {
        let (value, view) = self.operand_view_strided(op, index, what)?;
        if view.has_dynamic_strides() {
            return Err(CodegenError::at(
                &op,
                format!(
                    "the {what} {} has strides that follow symbolic extents: the template addresses static strides only",
                    value.r#type()
                ),
            ));
        }
        Ok((value, view))
    }

    /// [`Self::operand_view`] whatever its strides (the row templates
    /// address rows of symbolic extents themselves).
    pub(super) fn operand_view_strided(
        &self,
        op: OperationRef,
        index: usize,
        what: &str,
    ) -> Result<(Value<'static, 'static>, MemrefView), CodegenError> {
        let value = op.operand(index).at(&op)?;
        let view = self
            .views
            .get(&key(value))
            .cloned()
            .ok_or_else(|| CodegenError::at(&op, format!("{what} is not a kernel buffer")))?;
        Ok((unsafe { Value::from_raw(value.to_raw()) }, view))
    }
}

/// A row template's kernel header (`what` kernel, one work-group per
/// `per`); its parameters are filled in by [`KernelTemplate::instantiate`].
pub(super) fn row_kernel(kernel: &TemplateKernel, what: &str, per: &str) -> RowKernel {
    let workgroup_size = kernel.row_workgroup_size();
    RowKernel {
        name: kernel.name.to_string(),
        parameters: KernelParameters::default(),
        comment: format!(
            "/* {}: {what} kernel, one work-group of {workgroup_size} per {per}; from {} */",
            kernel.name, kernel.location
        ),
        workgroup_size: workgroup_size as u32,
    }
}

/// The comment above a GEMM kernel.
pub(super) fn gemm_comment(kernel: &TemplateKernel) -> String {
    format!(
        "/* {}: tiled matmul kernel ({}); from {} */",
        kernel.name, kernel.kind, kernel.location
    )
}

/// C expressions for the coordinates of row `row` (a flat index over the
/// row-major dimensions `leading`, last fastest), one per dimension. A
/// dynamic extent (issue 33: leading, after unit dimensions only) takes
/// the quotient, the unit dimensions before it 0, so that no coordinate
/// reads the extent itself.
pub(super) fn row_coordinates(leading: &[i64]) -> Vec<String> {
    let mut coordinates = vec![String::new(); leading.len()];
    let mut divisor = 1i64;
    let first = leading
        .iter()
        .position(|&d| d == crate::ir::memref::DYNAMIC)
        .unwrap_or(0);
    for dim in (0..leading.len()).rev() {
        if dim < first {
            coordinates[dim] = "0".to_string();
            continue;
        }
        let index = if divisor == 1 {
            "row".to_string()
        } else {
            format!("(row / {divisor})")
        };
        if dim == first {
            // The outermost dimension that counts: its extent (dynamic or
            // not) never enters the index.
            coordinates[dim] = index;
            continue;
        }
        coordinates[dim] = format!("({index} % {})", leading[dim]);
        divisor *= leading[dim];
    }
    coordinates
}

/// C statements computing `name` (the element offset of row `row`'s first
/// element) for a view whose leading dimensions are `shape[..rank-1]`.
pub(super) fn row_offset(name: &str, view: &MemrefView, shape: &[i64]) -> String {
    let leading = &shape[..shape.len().saturating_sub(1)];
    let mut terms = vec![view.offset.to_string()];
    for (dim, index) in row_coordinates(leading).into_iter().enumerate() {
        if view.strides[dim] != 0 && index != "0" {
            terms.push(format!("{index} * {}", view.strides[dim]));
        }
    }
    format!("const tcc_index {name} = {};", terms.join(" + "))
}
