//! The OpenCL C writer.
//!
//! Every SSA value becomes a `const` local named after its number (`v12`);
//! loop-carried values and `scf.if` results become mutable locals. Memrefs
//! are never materialized: a memref value is its kernel argument (the whole
//! buffer) plus the offset and strides its type's layout gives relative to
//! that buffer, so loads and stores index the argument directly. Any op the
//! writer does not know is an error naming the op and its location.
//!
//! This file holds the program and the kernel signature (arguments, the
//! strategy's choice between the loop-nest body and a template); the body's
//! expressions are in `expressions.rs`, its statements and control flow in
//! `control_flow.rs`, the templates in `gemm.rs`, `reduce.rs`,
//! `softmax.rs`, `layer_norm.rs` and `window.rs`.

use std::collections::HashMap;
use std::fmt::Write as _;

use tcc_kernels::{Access, Buffer, KernelParameter, KernelParameters, Storage};

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, Module, RegionLike, Type, TypeLike, Value, ValueLike};

use super::prelude::{PRELUDE, program_prelude};
use super::template::TemplateKernel;
use crate::back::{CodegenError, ErrorAt};
pub use crate::ir::element_type::ElementType;
use crate::ir::memref::MemRefLayout;
use crate::ir::strategy::KernelStrategy;
use crate::ir::util::{op_name, ops_named, string_value};

/// One kernel argument: a whole buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    /// The type the kernel computes with.
    pub element: ElementType,
    /// How the buffer holds its elements: as `element` says, or half for
    /// an f32 buffer `tcc-narrow-storage` marked.
    pub storage: Storage,
    pub shape: Vec<i64>,
    pub written: bool,
}

/// A scalar kernel argument: a `tcc_index` (the program's index width,
/// [`IndexWidth`]) after the buffers, which the host computes for each
/// launch of a kernel on a symbolic dimension (issue 33). Static kernels
/// take none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScalarArg {
    /// The launch's `index` operand at this argument position of the
    /// kernel (a view rebuilt inside the kernel takes its dynamic sizes
    /// so): the C parameter `a{argument}`.
    Index { argument: usize },
    /// The extent of buffer argument `buffer` along its dynamic dimension
    /// `dim` (a `memref.dim` the kernel reads, or the rows of a template
    /// kernel's bounds guard): the C parameter `a{buffer}_d{dim}`.
    Extent { buffer: usize, dim: usize },
}

impl ScalarArg {
    /// The C parameter's name.
    pub fn name(self) -> String {
        match self {
            Self::Index { argument } => format!("a{argument}"),
            Self::Extent { buffer, dim } => format!("a{buffer}_d{dim}"),
        }
    }
}

/// What the host needs to know of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub kind: String,
    pub workgroup_size: [i64; 3],
    pub args: Vec<KernelArg>,
    /// The scalar arguments after the buffers, in parameter order.
    pub scalars: Vec<ScalarArg>,
    /// Floating-point operations per launch (0: not counted).
    pub flops: u64,
    /// CUDA dynamic local memory the kernel's sm_90a PTX form needs, in
    /// bytes (`tcc_kernels::gemm::dynamic_local_marker` in its text: the
    /// large-tile wgmma GEMM of `--backend=cuda`); `None`: none.
    pub dynamic_local_bytes: Option<u32>,
}

/// The translated kernels: one OpenCL C program, kernels in module order.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub source: String,
    pub kernels: Vec<KernelInfo>,
    /// Each kernel's source alone (with the shared prelude), for `--emit=opencl-c`.
    pub kernel_sources: Vec<(String, String)>,
    /// The width of `tcc_index`, which the host passes scalar arguments
    /// ([`KernelInfo::scalars`]) at.
    pub index_width: IndexWidth,
    /// The extent a symbolic dimension is counted at where a static count
    /// is needed (the largest declared maximum; 1 without one): a dynamic
    /// buffer's elements in a launch record.
    pub dynamic_extent: i64,
}

/// The width of index arithmetic in a program's kernels: every `index`
/// value, loop counter and offset is a `tcc_index`, which is `int` when
/// every buffer of every kernel holds fewer than 2^30 elements (offsets,
/// even one row or plane past an edge before a bounds check, then fit in
/// 31 bits) and `long` otherwise. 32-bit division and remainder by the
/// shape constants of implicit-GEMM and copy kernels cost a fraction of
/// their 64-bit forms on GPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexWidth {
    #[default]
    Bits32,
    Bits64,
}

impl IndexWidth {
    /// Largest buffer (in elements) a 32-bit program may address.
    const MAX_32_BIT_ELEMENTS: i64 = 1 << 30;

    /// The width for `kernels`, a dynamic extent counted at `dynamic`
    /// (the largest declared maximum; 1 where none is declared).
    fn of(kernels: &[KernelInfo], dynamic: i64) -> Self {
        let fits = kernels.iter().flat_map(|k| &k.args).all(|arg| {
            arg.shape
                .iter()
                .map(|&d| {
                    if d == crate::ir::memref::DYNAMIC {
                        dynamic
                    } else {
                        d
                    }
                })
                .try_fold(1i64, |n, d| n.checked_mul(d.max(1)))
                .is_some_and(|n| n < Self::MAX_32_BIT_ELEMENTS)
        });
        if fits { Self::Bits32 } else { Self::Bits64 }
    }

    fn typedef(self) -> &'static str {
        match self {
            Self::Bits32 => {
                "typedef int tcc_index; /* every buffer < 2^30 elements */\ntypedef uint tcc_uindex;\n"
            }
            Self::Bits64 => "typedef long tcc_index;\ntypedef ulong tcc_uindex;\n",
        }
    }
}

/// Whether every dynamically shaped buffer of the host functions has fewer
/// than `IndexWidth::MAX_32_BIT_ELEMENTS` elements at its bound
/// (`ir::dynamic::max_extent`, each argument's `?` at `max`); a buffer whose
/// bound is not known counts its `?`s at `max`, as the kernels' check does.
fn host_buffers_fit_32_bits(module: &Module, max: i64) -> bool {
    let root = unsafe { OperationRef::from_raw(module.as_operation().to_raw()) };
    let mut memo = crate::ir::dynamic::Bounds::new();
    let mut fits = |value: melior::ir::Value| {
        let Some(shape) = crate::ir::types::ranked_shape(value.r#type()) else {
            return true;
        };
        if shape.iter().all(Option::is_some) {
            return true;
        }
        shape
            .iter()
            .enumerate()
            .map(|(axis, d)| {
                d.unwrap_or_else(|| {
                    crate::ir::dynamic::max_extent_with(value, axis, max, &mut memo).unwrap_or(max)
                })
            })
            .try_fold(1i64, |n, d| n.checked_mul(d.max(1)))
            .is_some_and(|n| n < IndexWidth::MAX_32_BIT_ELEMENTS)
    };
    crate::ir::util::body_ops_named(root, "func.func")
        .into_iter()
        .flat_map(crate::ir::util::collect_ops)
        .all(|op| op.results().all(|r| fits(r.into())))
}

/// An `index` constant in C: unsuffixed when it fits in 32 bits (then it
/// takes the width of the `tcc_index` it meets), `L` otherwise.
pub(super) fn index_literal(number: i64) -> String {
    if i32::try_from(number).is_ok() {
        number.to_string()
    } else {
        format!("{number}L")
    }
}

/// The arithmetic the kernels may use (`precision` of the module's
/// `#tcc.target` and of each `#tcc.gemm`).
pub use tcc_dialects::target::Precision;

/// Translates every `gpu.func` of the module's kernel module. Each GEMM
/// multiplies in its `#tcc.gemm`'s precision; the module's `#tcc.target`
/// says which helpers the program's prelude holds (its precision), and
/// whether the kernels are launched through the CUDA driver (`api =
/// "cuda"`), which gives TF32 GEMMs dynamic local memory past 48 KiB.
pub fn write_program(module: &Module) -> Result<Program, CodegenError> {
    // A kernel on a symbolic dimension (issue 33) reads its dynamic
    // extents from scalar arguments (`ScalarArg`); its buffers are counted
    // at the declared maximum for the index width.
    let dynamic_extent =
        crate::ir::dynamic::strategy_extent(&crate::ir::dynamic::module_dims(unsafe {
            OperationRef::from_raw(module.as_operation().to_raw())
        }))
        .unwrap_or(1);
    let target = module
        .as_operation()
        .attribute(crate::ir::attr_names::TARGET)
        .ok()
        .and_then(tcc_dialects::target::TargetDesc::from_attribute);
    let precision = target.as_ref().map_or(Precision::Fp32, |t| t.precision);
    let dynamic_local = target.as_ref().is_some_and(|t| {
        t.api == tcc_dialects::target::LaunchApi::Cuda
            && matches!(
                t.precision,
                Precision::Tf32 | Precision::Fp16 | Precision::Bf16
            )
    });
    let single_item_attention = target.as_ref().is_some_and(|t| {
        crate::config::targets::family(t).is_ok_and(|family| family.attention_single_item())
    });
    let rational_erf_tanh = target.as_ref().is_some_and(|t| {
        crate::config::targets::family(t).is_ok_and(|family| family.rational_erf_tanh())
    });
    let select_min_max = target.as_ref().is_some_and(|t| {
        crate::config::targets::family(t).is_ok_and(|family| family.select_min_max())
    });
    let polynomial_exp = target.as_ref().is_some_and(|t| {
        crate::config::targets::family(t).is_ok_and(|family| family.polynomial_exp())
    });
    let window_rows_rolled = target.as_ref().is_some_and(|t| {
        crate::config::targets::family(t).is_ok_and(|family| family.window_rows_rolled())
    });
    let window_vector_stores = target.as_ref().is_some_and(|t| {
        crate::config::targets::family(t).is_ok_and(|family| family.window_vector_stores())
    });
    let window_lanes_vectorized = target.as_ref().is_some_and(|t| {
        crate::config::targets::family(t).is_ok_and(|family| family.window_lanes_vectorized())
    });
    let window_unswitched_taps = target.as_ref().and_then(|t| {
        crate::config::targets::family(t)
            .ok()
            .and_then(|family| family.window_unswitched_taps())
    });
    let mut kernels = Vec::new();
    for kernel in ops_named(module.as_operation(), "gpu.func") {
        let writer = KernelWriter {
            precision,
            dynamic_local,
            single_item_attention,
            rational_erf_tanh,
            select_min_max,
            polynomial_exp,
            window_rows_rolled,
            window_vector_stores,
            window_lanes_vectorized,
            window_unswitched_taps,
            ..KernelWriter::default()
        };
        kernels.push(writer.write(kernel)?);
    }
    let infos: Vec<KernelInfo> = kernels.iter().map(|(info, _)| info.clone()).collect();
    let index_width = match IndexWidth::of(&infos, dynamic_extent) {
        // A `?` may be a multiple of the dimension (batch x tokens rows):
        // the host's buffers at their bounds must fit too.
        IndexWidth::Bits32 if !host_buffers_fit_32_bits(module, dynamic_extent) => {
            IndexWidth::Bits64
        }
        width => width,
    };
    let prelude = format!(
        "/* Generated by tcc. OpenCL C 1.2. */\n{}{PRELUDE}{}",
        index_width.typedef(),
        program_prelude(precision, kernels.iter().map(|(_, text)| text.as_str()))
    );
    let mut program = Program {
        source: prelude.clone(),
        index_width,
        dynamic_extent,
        ..Program::default()
    };
    for (info, text) in kernels {
        program.source.push('\n');
        program.source.push_str(&text);
        program
            .kernel_sources
            .push((info.name.clone(), format!("{prelude}\n{text}")));
        program.kernels.push(info);
    }
    Ok(program)
}

/// The kernel's typed parameter list: one buffer per argument, `a0`,
/// `a1`, ..., declared const where the kernel never stores through it.
pub(super) fn parameters(args: &[KernelArg]) -> KernelParameters {
    KernelParameters {
        buffers: args
            .iter()
            .enumerate()
            .map(|(index, arg)| KernelParameter {
                buffer: argument_buffer(index, arg.storage),
                access: if arg.written {
                    Access::Written
                } else {
                    Access::ReadOnly
                },
            })
            .collect(),
        extents: Vec::new(),
    }
}

/// The buffer of kernel argument `index`.
pub(super) fn argument_buffer(index: usize, storage: Storage) -> Buffer {
    Buffer::new(format!("a{index}"), storage)
}

/// How kernel argument `index` of `kernel` stores its `element`s: half
/// where `tcc-narrow-storage` marked an f32 buffer, else as the type says.
fn argument_storage(
    kernel: OperationRef,
    index: usize,
    element: ElementType,
) -> Result<Storage, CodegenError> {
    match crate::ir::storage::argument_storage(kernel, index) {
        None => Ok(element.storage()),
        Some(storage) if storage.is_f16() && element == ElementType::F32 => Ok(Storage::F16),
        Some(storage) if storage.is_bf16() && element == ElementType::F32 => Ok(Storage::BF16),
        Some(storage) => Err(CodegenError::at(
            &kernel,
            format!(
                "kernel argument {index} of {element:?} elements is marked stored as {storage}: only f32 buffers may be stored as f16 or bf16"
            ),
        )),
    }
}

/// Where a memref value's elements live.
#[derive(Clone, Debug)]
pub(super) struct MemrefView {
    /// The kernel argument's buffer.
    pub(super) buffer: Buffer,
    pub(super) element: ElementType,
    pub(super) offset: i64,
    /// Each dimension's stride; [`crate::ir::memref::DYNAMIC`] where it
    /// follows a symbolic extent (then `stride_exprs` holds them all).
    pub(super) strides: Vec<i64>,
    /// Where a stride follows a symbolic extent inside the buffer (issue
    /// 33: `memref<?x?x64xf32>`, whose first stride is `64 x` the second
    /// extent), the C expression of every stride, from the extents' scalar
    /// arguments. Templates whose addressing needs static strides refuse
    /// such a view (`operand_view`); loop kernels address through it.
    pub(super) stride_exprs: Option<Vec<String>>,
    /// Where the offset follows symbolic strides (a slice past the first
    /// rows of a `1x16x?` buffer), its C expression (`offset` is then
    /// [`crate::ir::memref::DYNAMIC`]).
    pub(super) offset_expr: Option<String>,
}

impl MemrefView {
    /// The element offset of the given C index expressions.
    pub(super) fn address(&self, indices: &[String]) -> String {
        let Some(exprs) = &self.stride_exprs else {
            return tcc_kernels::Address::new(self.offset, self.strides.clone()).at(indices);
        };
        tcc_kernels::address::linear(&self.offset_text(), exprs, indices)
    }

    /// The offset as C: its expression where it follows symbolic strides.
    pub(super) fn offset_text(&self) -> String {
        self.offset_expr
            .clone()
            .unwrap_or_else(|| self.offset.to_string())
    }

    /// Whether a stride (or the offset) follows a symbolic extent.
    pub(super) fn has_dynamic_strides(&self) -> bool {
        self.stride_exprs.is_some() || self.offset_expr.is_some()
    }

    /// The C expression of the element at `indices`.
    pub(super) fn load(&self, indices: &[String]) -> String {
        self.buffer.load(&self.address(indices))
    }

    /// The C statement storing `value` at `indices`.
    pub(super) fn store(&self, value: &str, indices: &[String]) -> String {
        self.buffer.store(value, &self.address(indices))
    }

    /// Whether `lanes` elements along `lane_dim` (contiguous) start at a
    /// multiple of `lanes` elements from the buffer's start wherever the
    /// index of `lane_dim` is a multiple of `lanes`, whatever the other
    /// indices: the offset and every other stride are multiples of
    /// `lanes` (static ones; a symbolic stride proves nothing). Such a
    /// vector may be read with [`tcc_kernels::Buffer::load_vector_aligned`].
    /// A dimension of extent 1 in `extents` (the view's shape, where
    /// known) is only ever indexed by 0, whatever its stride.
    pub(super) fn vector_aligned(&self, lanes: u32, lane_dim: usize, extents: &[i64]) -> bool {
        let lanes = i64::from(lanes);
        !self.has_dynamic_strides()
            && self.strides.get(lane_dim) == Some(&1)
            && self.offset % lanes == 0
            && self.strides.iter().enumerate().all(|(dim, stride)| {
                dim == lane_dim
                    || extents.get(dim) == Some(&1)
                    || (*stride >= 0 && stride % lanes == 0)
            })
    }

    /// An epilogue storing `lanes` outputs at once through this view,
    /// where the dimension indexed by `lane_index` in `indices` (one lane
    /// per value of it, from a multiple of `lanes`) keeps them one aligned
    /// vector: `statements` and `value` (one lane's epilogue) assign
    /// `stored[l]`, and the vector is stored at `indices` with
    /// `first` (the first lane's index) for `lane_index`.
    pub(super) fn vector_store(
        &self,
        lanes: u32,
        extents: &[i64],
        indices: &[String],
        (lane_index, first): (&str, &str),
        (statements, value): (&str, &str),
    ) -> Option<tcc_kernels::VectorStore> {
        let lane_dim = indices.iter().position(|index| index == lane_index)?;
        if !self.vector_aligned(lanes, lane_dim, extents) {
            return None;
        }
        let mut at = indices.to_vec();
        at[lane_dim] = first.to_string();
        Some(tcc_kernels::VectorStore {
            value: format!("{statements}stored[l] = {value};\n"),
            store: self
                .buffer
                .store_vector_aligned(lanes, "stored_vector", &self.address(&at)),
        })
    }
}

#[derive(Default)]
pub(super) struct KernelWriter {
    /// C expression (usually a variable name) of each scalar value.
    pub(super) names: HashMap<usize, String>,
    pub(super) views: HashMap<usize, MemrefView>,
    next: usize,
    pub(super) out: String,
    pub(super) indent: usize,
    pub(super) written_args: Vec<bool>,
    /// C types of the mutable locals (loop-carried values, scf.if results).
    pub(super) declared_types: HashMap<String, &'static str>,
    /// The GEMM kernel being written multiplies on tensor cores in its PTX
    /// form unless fp32 (its `#tcc.gemm`'s precision).
    pub(super) precision: Precision,
    /// GEMM kernels may take CUDA dynamic local memory (`GemmSpec::dynamic_local`).
    pub(super) dynamic_local: bool,
    /// The kernel's scalar arguments (`index` arguments and the dynamic
    /// extents its body reads).
    pub(super) scalars: Vec<ScalarArg>,
    /// Each buffer argument's position, by its value's key.
    pub(super) arguments: HashMap<usize, usize>,
    /// Attention kernels take the CPU form (`AttentionSpec::single_item`).
    pub(super) single_item_attention: bool,
    /// f32 `erf` and `tanh` as the prelude's `tcc_erf` and `tcc_tanh`.
    pub(super) rational_erf_tanh: bool,
    /// f32 maximum/minimum as the prelude's branch-free
    /// `tcc_maximumf_select`/`tcc_minimumf_select`.
    pub(super) select_min_max: bool,
    /// f32 `exp` as the prelude's branch-free `tcc_expf_poly`.
    pub(super) polynomial_exp: bool,
    /// Window kernels keep their row loop rolled (`WindowSpec::rolled_rows`).
    pub(super) window_rows_rolled: bool,
    /// Window kernels store a column's channels as one vector where they
    /// can (`WindowSpec::vector_store`).
    pub(super) window_vector_stores: bool,
    /// Window kernels walk a column's channels in a vectorized loop
    /// (`WindowSpec::vectorized_lanes`).
    pub(super) window_lanes_vectorized: bool,
    /// Window kernels of at least this many taps check a folded padding
    /// once per block and run the window unchecked where it lies inside
    /// (`WindowSpec::inside`).
    pub(super) window_unswitched_taps: Option<i64>,
}

pub(super) fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// Static strides and offset of a memref type's layout. A unit
/// dimension's stride is left dynamic by a dynamic extent after it
/// (`memref<1x?x64xf32>`: `[?, 64, 1]`); its index is always 0, so it
/// counts as 0.
pub(super) fn strides_and_offset(ty: Type) -> Option<(Vec<i64>, i64)> {
    let layout = MemRefLayout::of(ty)?;
    if let Some(static_strides) = layout.static_strides() {
        return Some(static_strides);
    }
    let strides = layout.strides.as_ref()?;
    if layout.offset == crate::ir::memref::DYNAMIC {
        return None;
    }
    let strides = strides
        .iter()
        .zip(&layout.shape)
        .map(|(&stride, &size)| match (stride, size) {
            (crate::ir::memref::DYNAMIC, 1) => Some(0),
            (crate::ir::memref::DYNAMIC, _) => None,
            (stride, _) => Some(stride),
        })
        .collect::<Option<Vec<_>>>()?;
    Some((strides, layout.offset))
}

/// A memref type's dimension sizes.
pub(super) fn memref_shape(ty: Type) -> Vec<i64> {
    MemRefLayout::of(ty)
        .map(|layout| layout.shape)
        .unwrap_or_default()
}

/// A memref type's element type, if kernels support it.
pub(super) fn memref_element(ty: Type) -> Option<ElementType> {
    ElementType::of_type(MemRefLayout::of(ty)?.element)
}

impl KernelWriter {
    /// The row-major strides of `memref` (a kernel argument or a view of
    /// one with an identity layout) whose extents include symbolic ones:
    /// each stride as a number ([`crate::ir::memref::DYNAMIC`] where it
    /// follows a symbolic extent) and as a C expression, the product of
    /// the extents after it (a symbolic one its scalar argument, `op`
    /// naming errors).
    pub(super) fn row_major_strides(
        &mut self,
        op: OperationRef,
        memref: Value,
    ) -> Result<(Vec<i64>, Vec<String>), CodegenError> {
        let memref: Value<'static, 'static> = unsafe { Value::from_raw(memref.to_raw()) };
        let shape = memref_shape(memref.r#type());
        let rank = shape.len();
        let mut strides = vec![1i64; rank];
        let mut exprs = vec!["1".to_string(); rank];
        let mut constant = 1i64;
        let mut factors: Vec<String> = Vec::new();
        for dim in (0..rank).rev() {
            strides[dim] = if factors.is_empty() {
                constant
            } else {
                crate::ir::memref::DYNAMIC
            };
            let mut terms = factors.clone();
            if constant != 1 || terms.is_empty() {
                terms.push(index_literal(constant));
            }
            exprs[dim] = if terms.len() == 1 {
                terms.remove(0)
            } else {
                format!("({})", terms.join(" * "))
            };
            if shape[dim] == crate::ir::memref::DYNAMIC {
                factors.push(self.extent(op, memref, dim)?);
            } else {
                constant = constant.saturating_mul(shape[dim]);
            }
        }
        Ok((strides, exprs))
    }

    pub(super) fn fresh(&mut self) -> String {
        let name = format!("v{}", self.next);
        self.next += 1;
        name
    }

    pub(super) fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    pub(super) fn name(&self, op: OperationRef, value: Value) -> Result<String, CodegenError> {
        self.names.get(&key(value)).cloned().ok_or_else(|| {
            CodegenError::at(
                &op,
                format!(
                    "'{}' uses a value the OpenCL C writer has not seen",
                    op_name(&op)
                ),
            )
        })
    }

    pub(super) fn operand(&self, op: OperationRef, index: usize) -> Result<String, CodegenError> {
        let value = op.operand(index).at(&op)?;
        self.name(op, value)
    }

    pub(super) fn result_type(op: OperationRef) -> Result<ElementType, CodegenError> {
        let result = op.result(0).at(&op)?;
        ElementType::of_type(result.r#type()).ok_or_else(|| {
            CodegenError::at(
                &op,
                format!(
                    "'{}' produces {} which OpenCL C kernels do not support",
                    op_name(&op),
                    result.r#type()
                ),
            )
        })
    }

    pub(super) fn operand_type(
        op: OperationRef,
        index: usize,
    ) -> Result<ElementType, CodegenError> {
        let value = op.operand(index).at(&op)?;
        ElementType::of_type(value.r#type()).ok_or_else(|| {
            CodegenError::at(
                &op,
                format!(
                    "'{}' takes {} which OpenCL C kernels do not support",
                    op_name(&op),
                    value.r#type()
                ),
            )
        })
    }

    /// Declares `const T vN` holding `view`'s element at `indices` as the
    /// value of `value` (a block argument standing for that element).
    pub(super) fn define_load(&mut self, value: Value, view: &MemrefView, indices: &[String]) {
        let name = self.fresh();
        self.line(&format!(
            "const {} {name} = {};",
            view.element.c_type(),
            view.load(indices)
        ));
        self.names.insert(key(value), name);
    }

    /// Declares `const T vN = expr;` for the op's single result.
    pub(super) fn define(&mut self, op: OperationRef, expr: String) -> Result<(), CodegenError> {
        let ty = Self::result_type(op)?;
        let name = self.fresh();
        self.line(&format!("const {} {name} = {expr};", ty.c_type()));
        let result = op.result(0).at(&op)?;
        self.names.insert(key(result.into()), name);
        Ok(())
    }

    fn write(mut self, kernel: OperationRef) -> Result<(KernelInfo, String), CodegenError> {
        let name = kernel
            .attribute("sym_name")
            .ok()
            .and_then(string_value)
            .ok_or_else(|| CodegenError::at(&kernel, "kernel without a name"))?;
        let kind = kernel
            .attribute(crate::ir::attr_names::KIND)
            .ok()
            .and_then(string_value)
            .unwrap_or_default();
        let workgroup = crate::ir::dense::int_array_attribute(kernel, "known_block_size")
            .and_then(|sizes| <[i64; 3]>::try_from(sizes).ok())
            .ok_or_else(|| {
                CodegenError::at(
                    &kernel,
                    format!("kernel {name} has no known_block_size: run the gpu phase first"),
                )
            })?;
        let region = kernel.region(0).at(&kernel)?;
        let block = region
            .first_block()
            .ok_or_else(|| CodegenError::at(&kernel, "kernel without a body"))?;

        let mut args = Vec::new();
        for index in 0..block.argument_count() {
            let argument: Value = block.argument(index).at(&kernel)?.into();
            let ty = argument.r#type();
            if ty.is_index() {
                // A host value (a rebuilt view's dynamic size): a scalar
                // parameter after the buffers.
                let scalar = ScalarArg::Index { argument: index };
                self.names.insert(key(argument), scalar.name());
                self.scalars.push(scalar);
                continue;
            }
            if !ty.is_mem_ref() {
                return Err(CodegenError::at(
                    &kernel,
                    format!("kernel argument {index} is {ty}, not a buffer"),
                ));
            }
            if self
                .scalars
                .iter()
                .any(|s| matches!(s, ScalarArg::Index { .. }))
            {
                return Err(CodegenError::at(
                    &kernel,
                    format!(
                        "kernel argument {index} is a buffer after an index argument: buffers come first"
                    ),
                ));
            }
            let element = memref_element(ty).ok_or_else(|| {
                CodegenError::at(&kernel, format!("unsupported element type in {ty}"))
            })?;
            self.arguments.insert(key(argument), index);
            let (strides, offset, stride_exprs) = match strides_and_offset(ty) {
                Some((strides, offset)) => (strides, offset, None),
                None if crate::ir::memref::has_identity_layout(ty) => {
                    // Row-major over symbolic extents: strides are
                    // products of the extents' scalar arguments.
                    let (strides, exprs) = self.row_major_strides(kernel, argument)?;
                    (strides, 0, Some(exprs))
                }
                None => {
                    return Err(CodegenError::at(
                        &kernel,
                        format!("kernel argument {index} has a dynamic layout: {ty}"),
                    ));
                }
            };
            let storage = argument_storage(kernel, index, element)?;
            self.views.insert(
                key(argument),
                MemrefView {
                    buffer: argument_buffer(index, storage),
                    element,
                    offset,
                    strides,
                    stride_exprs,
                    offset_expr: None,
                },
            );
            args.push(KernelArg {
                element,
                storage,
                shape: memref_shape(ty),
                written: false,
            });
        }
        self.written_args = vec![false; args.len()];

        let location =
            crate::diagnostics::location_string(kernel.location().to_raw()).unwrap_or_default();
        let flops = kernel
            .attribute(crate::ir::attr_names::FLOPS)
            .ok()
            .and_then(crate::ir::util::integer_value)
            .unwrap_or(0)
            .max(0) as u64;
        let strategy = crate::ir::strategy::of(&kernel).unwrap_or(KernelStrategy::Loops {
            workgroup_size: workgroup[0],
            max_workgroups: None,
        });
        let template = TemplateKernel {
            op: kernel,
            block,
            name: &name,
            kind: &kind,
            location: &location,
            strategy,
        };
        if let Some(text) = self.write_template(&template, &mut args)? {
            let text = super::specialize::specializable(&name, args.len(), &self.scalars, text);
            let info = KernelInfo {
                name,
                kind,
                workgroup_size: workgroup,
                args,
                scalars: self.scalars,
                flops,
                dynamic_local_bytes: tcc_kernels::gemm::dynamic_local_bytes(&text),
            };
            return Ok((info, text));
        }

        self.indent = 1;
        self.block(block)?;
        let body = std::mem::take(&mut self.out);

        self.mark_arguments(&mut args);
        let mut text = String::new();
        let _ = writeln!(
            text,
            "/* {name}: {kind} kernel, {} work-items per group; from {location} */",
            workgroup[0]
        );
        let _ = write!(
            text,
            "__kernel __attribute__((reqd_work_group_size({}, {}, {})))\nvoid {name}(",
            workgroup[0], workgroup[1], workgroup[2]
        );
        let _ = write!(text, "{}", parameters(&args));
        self.scalars.sort();
        for scalar in &self.scalars {
            let _ = write!(text, ",\n    const tcc_index {}", scalar.name());
        }
        text.push_str(") {\n");
        text.push_str(&body);
        text.push_str("}\n");
        let text = super::specialize::specializable(&name, args.len(), &self.scalars, text);
        Ok((
            KernelInfo {
                name,
                kind,
                workgroup_size: workgroup,
                args,
                scalars: self.scalars,
                flops,
                dynamic_local_bytes: None,
            },
            text,
        ))
    }

    /// The C expression indexing a memref at the op's index operands
    /// `first..first + rank`.
    pub(super) fn element_address(
        &self,
        op: OperationRef,
        memref: Value,
        first: usize,
    ) -> Result<(MemrefView, String), CodegenError> {
        let view = self.views.get(&key(memref)).cloned().ok_or_else(|| {
            CodegenError::at(
                &op,
                "access to a buffer that is not a kernel argument or a view of one",
            )
        })?;
        let indices = (0..view.strides.len())
            .map(|dim| self.operand(op, first + dim))
            .collect::<Result<Vec<_>, _>>()?;
        let address = view.address(&indices);
        Ok((view, address))
    }

    /// Records that the kernel stores to `buffer`.
    pub(super) fn mark_written(&mut self, buffer: &Buffer) {
        if let Some(index) = buffer
            .name
            .strip_prefix('a')
            .and_then(|i| i.parse::<usize>().ok())
            && let Some(flag) = self.written_args.get_mut(index)
        {
            *flag = true;
        }
    }

    /// Copies what the body stored to into the arguments.
    pub(super) fn mark_arguments(&self, args: &mut [KernelArg]) {
        for (arg, written) in args.iter_mut().zip(&self.written_args) {
            arg.written = *written;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_stored_as_bytes() {
        assert_eq!(ElementType::I1.c_type(), "bool");
        assert_eq!(ElementType::I1.storage_type(), "uchar");
        assert_eq!(ElementType::Index.c_type(), "tcc_index");
        assert_eq!(ElementType::Index.storage_type(), "long");
        assert_eq!(index_literal(3136), "3136");
        assert_eq!(index_literal(1 << 40), "1099511627776L");
    }
}
