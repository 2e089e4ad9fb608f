//! Statements and control flow of the OpenCL C writer: the op dispatch
//! (loads, stores, views, work-item ids), blocks, `scf.for` loops with
//! loop-carried locals and `scf.if` with result locals.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, BlockRef, RegionLike, Value, ValueLike};

use super::writer::{ElementType, KernelWriter, MemrefView, key, strides_and_offset};
use crate::back::{CodegenError, ErrorAt};
use crate::ir::util::op_name;

impl KernelWriter {
    /// `memref.dim` of a kernel buffer or a view of one: a static extent
    /// is its literal, a dynamic one is read from the scalar argument
    /// `a{buffer}_d{dim}` the host passes (issue 33), through the reshapes
    /// between (see [`Self::extent`]).
    fn dim(&mut self, op: OperationRef) -> Result<(), CodegenError> {
        let source = op.operand(0).at(&op)?;
        let dim = self
            .operand(op, 1)?
            .trim_end_matches('L')
            .parse::<usize>()
            .map_err(|_| {
                CodegenError::at(&op, "'memref.dim' of a dimension that is not a constant")
            })?;
        let name = self.extent(op, unsafe { Value::from_raw(source.to_raw()) }, dim)?;
        let result = op.result(0).at(&op)?;
        self.names.insert(key(result.into()), name);
        Ok(())
    }

    /// The C expression of `memref`'s extent along `dim` (for `op`'s
    /// errors): a literal where static; for a kernel argument the scalar
    /// argument `a{buffer}_d{dim}`; for an `expand_shape` its
    /// `output_shape` operand; for a `collapse_shape` the product of its
    /// group's extents; a `cast` its source's.
    pub(super) fn extent(
        &mut self,
        op: OperationRef,
        memref: Value<'static, 'static>,
        dim: usize,
    ) -> Result<String, CodegenError> {
        let shape = super::writer::memref_shape(memref.r#type());
        let size = *shape.get(dim).ok_or_else(|| {
            CodegenError::at(
                &op,
                format!(
                    "'memref.dim' of dimension {dim} of a rank-{} buffer",
                    shape.len()
                ),
            )
        })?;
        if size != crate::ir::memref::DYNAMIC {
            return Ok(super::writer::index_literal(size));
        }
        if let Some(&buffer) = self.arguments.get(&key(memref)) {
            let scalar = super::writer::ScalarArg::Extent { buffer, dim };
            if !self.scalars.contains(&scalar) {
                self.scalars.push(scalar);
            }
            return Ok(scalar.name());
        }
        let unknown = || {
            CodegenError::at(
                &op,
                format!(
                    "'memref.dim' of dynamic dimension {dim} of {}, which is not a kernel argument nor a reshape of one",
                    memref.r#type()
                ),
            )
        };
        let view = crate::ir::util::defining_op(memref).ok_or_else(unknown)?;
        let source: Value<'static, 'static> =
            unsafe { Value::from_raw(view.operand(0).at(&view)?.to_raw()) };
        match op_name(&view).as_str() {
            "memref.cast" => self.extent(op, source, dim),
            "memref.expand_shape" => {
                // The n-th dynamic result dimension is the n-th dynamic
                // `output_shape` operand (after the source).
                let nth = shape[..dim]
                    .iter()
                    .filter(|&&d| d == crate::ir::memref::DYNAMIC)
                    .count();
                let size = view.operand(1 + nth).at(&view)?;
                self.name(view, size)
            }
            "memref.collapse_shape" => {
                let groups = crate::ir::util::reassociation(view).ok_or_else(unknown)?;
                let group = groups.get(dim).ok_or_else(unknown)?.clone();
                let mut factors = Vec::new();
                for source_dim in group {
                    let factor = self.extent(op, source, source_dim as usize)?;
                    if factor != "1" {
                        factors.push(factor);
                    }
                }
                Ok(match factors.len() {
                    0 => "1".to_string(),
                    1 => factors.remove(0),
                    _ => format!("({})", factors.join(" * ")),
                })
            }
            _ => Err(unknown()),
        }
    }

    /// The strides of `result`, a view `op` makes of `base` whose layout
    /// has symbolic strides and a static offset: a `memref.cast` keeps
    /// its source's, a `memref.subview` (rank kept, static steps)
    /// multiplies them by its steps, a `memref.collapse_shape` takes each
    /// group's innermost, a `memref.expand_shape` gives each group's
    /// innermost its source's and the others the product of the stride
    /// and extent inside them. A static stride of the result's type is
    /// taken as written. `None` for any other view.
    #[allow(clippy::type_complexity)]
    fn derived_strides(
        &mut self,
        op: OperationRef,
        base: &MemrefView,
        result: Value,
    ) -> Result<Option<(Vec<i64>, i64, Option<Vec<String>>, Option<String>)>, CodegenError> {
        use crate::ir::memref::{DYNAMIC, MemRefLayout};
        let Some(layout) = MemRefLayout::of(result.r#type()) else {
            return Ok(None);
        };
        let (Some(written), offset) = (layout.strides.clone(), layout.offset) else {
            return Ok(None);
        };
        // A symbolic offset: a subview's static offsets along the source's
        // strides, past the source's own offset.
        let offset_expr = if offset == DYNAMIC {
            let offsets = crate::ir::util::dense_i64_array(op, "static_offsets");
            let (Some(offsets), Some(exprs)) = (offsets, &base.stride_exprs) else {
                return Ok(None);
            };
            if op_name(&op) != "memref.subview"
                || offsets.len() != exprs.len()
                || offsets.contains(&DYNAMIC)
            {
                return Ok(None);
            }
            // The source's address of the slice's first element (axes
            // not offset left out).
            let (strides, indices): (Vec<&String>, Vec<String>) = exprs
                .iter()
                .zip(&offsets)
                .filter(|(_, o)| **o != 0)
                .map(|(s, o)| (s, o.to_string()))
                .unzip();
            Some(format!(
                "({})",
                tcc_kernels::address::linear(&base.offset_text(), &strides, &indices)
            ))
        } else {
            None
        };
        let source: Vec<String> = match &base.stride_exprs {
            Some(exprs) => exprs.clone(),
            None => base.strides.iter().map(|s| s.to_string()).collect(),
        };
        let times = |a: &str, b: &str| match (a, b) {
            ("0", _) | (_, "0") => "0".to_string(),
            ("1", x) | (x, "1") => x.to_string(),
            (x, y) => format!("({x} * {y})"),
        };
        let rank = written.len();
        let derived: Vec<String> = match op_name(&op).as_str() {
            "memref.cast" if source.len() == rank => source,
            "memref.subview" => {
                let steps = crate::ir::util::dense_i64_array(op, "static_strides");
                match steps {
                    Some(steps)
                        if steps.len() == rank
                            && source.len() == rank
                            && !steps.contains(&DYNAMIC) =>
                    {
                        source
                            .iter()
                            .zip(&steps)
                            .map(|(s, step)| times(s, &step.to_string()))
                            .collect()
                    }
                    _ => return Ok(None),
                }
            }
            "memref.collapse_shape" => {
                let Some(groups) = crate::ir::util::reassociation(op) else {
                    return Ok(None);
                };
                let mut strides = Vec::with_capacity(groups.len());
                for group in &groups {
                    let Some(&last) = group.last() else {
                        return Ok(None);
                    };
                    strides.push(source[last as usize].clone());
                }
                strides
            }
            "memref.expand_shape" => {
                let Some(groups) = crate::ir::util::reassociation(op) else {
                    return Ok(None);
                };
                let mut strides = vec![String::new(); rank];
                for (source_dim, group) in groups.iter().enumerate() {
                    let mut stride = source[source_dim].clone();
                    for &dim in group.iter().rev() {
                        strides[dim as usize] = stride.clone();
                        let extent = self.extent(
                            op,
                            unsafe { Value::from_raw(result.to_raw()) },
                            dim as usize,
                        )?;
                        stride = times(&stride, &extent);
                    }
                }
                strides
            }
            _ => return Ok(None),
        };
        if derived.len() != rank {
            return Ok(None);
        }
        let exprs: Vec<String> = derived
            .into_iter()
            .zip(&written)
            .map(|(expr, &w)| if w == DYNAMIC { expr } else { w.to_string() })
            .collect();
        Ok(Some((written, offset, Some(exprs), offset_expr)))
    }

    pub(super) fn block(&mut self, block: BlockRef) -> Result<(), CodegenError> {
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let op = unsafe { OperationRef::from_raw(op.to_raw()) };
            self.op(op)?;
        }
        Ok(())
    }

    pub(super) fn op(&mut self, op: OperationRef) -> Result<(), CodegenError> {
        let name = op_name(&op);
        match name.as_str() {
            "arith.constant" => self.constant(op),
            "memref.load" => {
                let memref = op.operand(0).at(&op)?;
                let (view, address) = self.element_address(op, memref, 1)?;
                self.define(op, view.buffer.load(&address))
            }
            "memref.store" => {
                let value = self.operand(op, 0)?;
                let memref = op.operand(1).at(&op)?;
                let (view, address) = self.element_address(op, memref, 2)?;
                self.line(&view.buffer.store(&value, &address));
                self.mark_written(&view.buffer);
                Ok(())
            }
            "memref.expand_shape"
            | "memref.collapse_shape"
            | "memref.subview"
            | "memref.reinterpret_cast"
            | "memref.cast"
            | "memref.transpose" => {
                let source = op.operand(0).at(&op)?;
                let base = self
                    .views
                    .get(&key(source))
                    .cloned()
                    .ok_or_else(|| CodegenError::at(&op, "view of an unknown buffer"))?;
                let result: Value = op.result(0).at(&op)?.into();
                let (strides, offset, stride_exprs, offset_expr) =
                    match strides_and_offset(result.r#type()) {
                        Some((strides, offset)) => (strides, offset, None, None),
                        // A row-major view over symbolic extents (a reshape of
                        // a `?x?x64` buffer): strides from its extents.
                        None if crate::ir::memref::has_identity_layout(result.r#type()) => {
                            let (strides, exprs) = self.row_major_strides(op, result)?;
                            (strides, 0, Some(exprs), None)
                        }
                        // A strided view of such a buffer (a slice of its last
                        // axis): strides from the source's.
                        None if let Some(derived) = self.derived_strides(op, &base, result)? => {
                            derived
                        }
                        None => {
                            return Err(CodegenError::at(
                                &op,
                                format!("'{name}' gives a dynamic layout {}", result.r#type()),
                            ));
                        }
                    };
                self.views.insert(
                    key(result),
                    MemrefView {
                        buffer: base.buffer,
                        element: base.element,
                        offset,
                        strides,
                        stride_exprs,
                        offset_expr,
                    },
                );
                Ok(())
            }
            "memref.dim" => self.dim(op),
            "gpu.global_id" | "gpu.thread_id" | "gpu.block_id" | "gpu.block_dim"
            | "gpu.grid_dim" => {
                let dimension = op
                    .attribute("dimension")
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let axis = if dimension.contains('x') {
                    0
                } else if dimension.contains('y') {
                    1
                } else if dimension.contains('z') {
                    2
                } else {
                    return Err(CodegenError::at(
                        &op,
                        format!("unknown dimension {dimension}"),
                    ));
                };
                let function = match name.as_str() {
                    "gpu.global_id" => "get_global_id",
                    "gpu.thread_id" => "get_local_id",
                    "gpu.block_id" => "get_group_id",
                    "gpu.block_dim" => "get_local_size",
                    _ => "get_num_groups",
                };
                self.define(op, format!("(tcc_index){function}({axis})"))
            }
            "gpu.barrier" => {
                self.line("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);");
                Ok(())
            }
            "gpu.return" => {
                self.line("return;");
                Ok(())
            }
            "scf.for" => self.for_loop(op),
            "scf.if" => self.if_op(op),
            "arith.select" => {
                let expr = format!(
                    "({} ? {} : {})",
                    self.operand(op, 0)?,
                    self.operand(op, 1)?,
                    self.operand(op, 2)?
                );
                self.define(op, expr)
            }
            "arith.cmpf" => self.cmpf(op),
            "arith.cmpi" => self.cmpi(op),
            _ => {
                if let Some(expr) = self.expression(op, &name)? {
                    self.define(op, expr)
                } else {
                    Err(CodegenError::at(
                        &op,
                        format!("cannot translate '{name}' to OpenCL C"),
                    ))
                }
            }
        }
    }

    /// The values an `scf.yield` ending `block` yields.
    fn yielded<'c>(block: BlockRef<'c, '_>) -> Option<OperationRef<'c, 'c>> {
        let terminator = block.terminator()?;
        (op_name(&terminator) == "scf.yield")
            .then(|| unsafe { OperationRef::from_raw(terminator.to_raw()) })
    }

    /// Writes a block whose `scf.yield` assigns into `targets`.
    fn block_yielding(&mut self, block: BlockRef, targets: &[String]) -> Result<(), CodegenError> {
        let mut next = block.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            let op = unsafe { OperationRef::from_raw(op.to_raw()) };
            if op_name(&op) == "scf.yield" {
                // Through temporaries: yielded values may read the targets.
                let values: Vec<String> = (0..op.operand_count())
                    .map(|i| self.operand(op, i))
                    .collect::<Result<_, _>>()?;
                if values.len() != targets.len() {
                    return Err(CodegenError::at(
                        &op,
                        "scf.yield arity differs from its parent's results",
                    ));
                }
                let temps: Vec<String> = values.iter().map(|_| self.fresh()).collect();
                for ((temp, value), target) in temps.iter().zip(&values).zip(targets) {
                    let ty = self.declared_types.get(target).copied().unwrap_or("float");
                    self.line(&format!("const {ty} {temp} = {value};"));
                }
                for (temp, target) in temps.iter().zip(targets) {
                    self.line(&format!("{target} = {temp};"));
                }
                continue;
            }
            self.op(op)?;
        }
        Ok(())
    }

    fn for_loop(&mut self, op: OperationRef) -> Result<(), CodegenError> {
        let (lower, upper, step) = (
            self.operand(op, 0)?,
            self.operand(op, 1)?,
            self.operand(op, 2)?,
        );
        let region = op.region(0).at(&op)?;
        let body = region
            .first_block()
            .ok_or_else(|| CodegenError::at(&op, "empty loop"))?;
        // Loop-carried values.
        let mut carried = Vec::new();
        for index in 3..op.operand_count() {
            let init = self.operand(op, index)?;
            let ty = Self::operand_type(op, index)?.c_type();
            let name = self.fresh();
            self.declared_types.insert(name.clone(), ty);
            self.line(&format!("{ty} {name} = {init};"));
            carried.push(name);
        }
        let induction = self.fresh();
        let iv: Value = body.argument(0).at(&op)?.into();
        self.names.insert(key(iv), induction.clone());
        for (index, name) in carried.iter().enumerate() {
            let argument: Value = body.argument(index + 1).at(&op)?.into();
            self.names.insert(key(argument), name.clone());
            if let Ok(result) = op.result(index) {
                self.names.insert(key(result.into()), name.clone());
            }
        }
        self.line(&format!(
            "for (tcc_index {induction} = {lower}; {induction} < {upper}; {induction} += {step}) {{"
        ));
        self.indent += 1;
        if carried.is_empty() && Self::yielded(body).is_some_and(|y| y.operand_count() == 0) {
            self.block_yielding(body, &[])?;
        } else {
            self.block_yielding(body, &carried)?;
        }
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    fn if_op(&mut self, op: OperationRef) -> Result<(), CodegenError> {
        let condition = self.operand(op, 0)?;
        let mut results = Vec::new();
        for index in 0..op.result_count() {
            let result: Value = op.result(index).at(&op)?.into();
            let ty = ElementType::of_type(result.r#type())
                .ok_or_else(|| {
                    CodegenError::at(
                        &op,
                        format!(
                            "scf.if yields {} which kernels do not support",
                            result.r#type()
                        ),
                    )
                })?
                .c_type();
            let name = self.fresh();
            self.declared_types.insert(name.clone(), ty);
            self.line(&format!("{ty} {name};"));
            self.names.insert(key(result), name.clone());
            results.push(name);
        }
        self.line(&format!("if ({condition}) {{"));
        self.indent += 1;
        let then_block = op
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| CodegenError::at(&op, "scf.if without a then block"))?;
        self.block_yielding(then_block, &results)?;
        self.indent -= 1;
        if let Some(else_block) = op.region(1).ok().and_then(|r| r.first_block()) {
            self.line("} else {");
            self.indent += 1;
            self.block_yielding(else_block, &results)?;
            self.indent -= 1;
        }
        self.line("}");
        Ok(())
    }
}
