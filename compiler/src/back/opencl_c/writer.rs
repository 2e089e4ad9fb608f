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
//! `softmax.rs` and `layer_norm.rs`.

use std::collections::HashMap;
use std::fmt::Write as _;

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, BlockRef, Module, RegionLike, Type, TypeLike, Value, ValueLike};

use crate::back::CodegenError;
pub use crate::ir::element_type::ElementType;
use crate::ir::strategy::KernelStrategy;
use crate::ir::util::{op_name, ops_named, string_value};

/// One kernel argument: a whole buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    pub element: ElementType,
    pub shape: Vec<i64>,
    pub written: bool,
}

/// What the host needs to know of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub kind: String,
    pub workgroup_size: [i64; 3],
    pub args: Vec<KernelArg>,
    /// Floating-point operations per launch (0: not counted).
    pub flops: u64,
}

/// The translated kernels: one OpenCL C program, kernels in module order.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub source: String,
    pub kernels: Vec<KernelInfo>,
    /// Each kernel's source alone (with the shared prelude), for `--emit=opencl-c`.
    pub kernel_sources: Vec<(String, String)>,
}

/// Helpers every program may use: IEEE-754 `maximum`/`minimum` (NaN
/// propagating, unlike `fmax`/`fmin`), scalar, float4 and float16 (the
/// NaN tests combine with `|`, not `||`: no branch, so that they vectorize).
/// The program's `tcc_index` typedef comes first (see [`IndexWidth`]).
const PRELUDE: &str = "\
/* arith.maximumf/minimumf (IEEE 754-2019 maximum/minimum): NaN propagates
 * and -0 < +0. fmax/fmin may return either zero of a (-0, +0) pair: equal
 * operands take the AND (maximum) or OR (minimum) of their bits instead. */
inline float tcc_maximumf(float a, float b) { return (isnan(a) | isnan(b)) ? NAN : a == b ? as_float(as_uint(a) & as_uint(b)) : fmax(a, b); }
inline float tcc_minimumf(float a, float b) { return (isnan(a) | isnan(b)) ? NAN : a == b ? as_float(as_uint(a) | as_uint(b)) : fmin(a, b); }
inline float4 tcc_maximumf4(float4 a, float4 b) { return select(select(fmax(a, b), as_float4(as_uint4(a) & as_uint4(b)), a == b), (float4)(NAN), isnan(a) | isnan(b)); }
inline float4 tcc_minimumf4(float4 a, float4 b) { return select(select(fmin(a, b), as_float4(as_uint4(a) | as_uint4(b)), a == b), (float4)(NAN), isnan(a) | isnan(b)); }
inline float16 tcc_maximumf16(float16 a, float16 b) { return select(select(fmax(a, b), as_float16(as_uint16(a) & as_uint16(b)), a == b), (float16)(NAN), isnan(a) | isnan(b)); }
/* A fence that makes this work-item's global stores visible device-wide
 * (split-K publishes partial tiles with it); the PTX back end defines
 * TCC_PTX and gets NVIDIA's membar.gl directly. */
#ifdef TCC_PTX
inline void tcc_global_fence(void) { __nvvm_membar_gl(); }
#else
inline void tcc_global_fence(void) { mem_fence(CLK_GLOBAL_MEM_FENCE); }
#endif
#ifdef TCC_PTX
/* TF32 tensor cores (--precision=tf32): round to TF32, and one
 * mma.sync.m16n8k8 accumulating into four fp32 registers. */
inline uint tcc_tf32(float x) { uint r; __asm__(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x)); return r; }
#define TCC_MMA_TF32(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1) \\
  __asm__(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" \\
          : \"+f\"(c0), \"+f\"(c1), \"+f\"(c2), \"+f\"(c3) \\
          : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))
#endif
/* exp of a float. The PTX form replaces libclc's portable polynomial
 * (twice as slow as NVIDIA's own in a row softmax) with the hardware's
 * 2^f: x log2(e) = j + f with |f| <= 1/2 (one fma, and the bits of log2(e)
 * the float constant lacks), ex2.approx of f, then 2^j in two halves so
 * that neither scale overflows before the product does. About 2 ulp;
 * NaN stays NaN, the clamps give inf and 0. */
#ifdef TCC_PTX
inline float tcc_expf(float x) {
  const float y = x > 88.8f ? 88.8f : (x < -104.0f ? -104.0f : x);
  const float j = rint(y * 1.44269504f);
  const float f = fma(y, 1.44269504f, -j) + y * 1.92596303e-8f;
  float p;
  __asm__(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(p) : \"f\"(f));
  const int k = (int)j, k1 = k / 2, k2 = k - k1;
  return p * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
}
#else
inline float tcc_expf(float x) { return exp(x); }
#endif
";

/// The width of index arithmetic in a program's kernels: every `index`
/// value, loop counter and offset is a `tcc_index`, which is `int` when
/// every buffer of every kernel holds fewer than 2^30 elements (offsets,
/// even one row or plane past an edge before a bounds check, then fit in
/// 31 bits) and `long` otherwise. 32-bit division and remainder by the
/// shape constants of implicit-GEMM and copy kernels cost a fraction of
/// their 64-bit forms on GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexWidth {
    Bits32,
    Bits64,
}

impl IndexWidth {
    /// Largest buffer (in elements) a 32-bit program may address.
    const MAX_32_BIT_ELEMENTS: i64 = 1 << 30;

    fn of(kernels: &[KernelInfo]) -> Self {
        let fits = kernels.iter().flat_map(|k| &k.args).all(|arg| {
            arg.shape
                .iter()
                .try_fold(1i64, |n, &d| n.checked_mul(d.max(1)))
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

/// An `index` constant in C: unsuffixed when it fits in 32 bits (then it
/// takes the width of the `tcc_index` it meets), `L` otherwise.
pub(super) fn index_literal(number: i64) -> String {
    if i32::try_from(number).is_ok() {
        number.to_string()
    } else {
        format!("{number}L")
    }
}

/// The arithmetic the kernels may use (`tcc compile --precision`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// IEEE fp32 everywhere (the default).
    #[default]
    Fp32,
    /// GEMMs and convolutions multiply on tensor cores in TF32 (fp32
    /// inputs rounded to 10 mantissa bits, fp32 accumulation) in the PTX
    /// form; the OpenCL C form stays fp32.
    Tf32,
}

/// Translates every `gpu.func` of the module's kernel module.
pub fn write_program(module: &Module) -> Result<Program, CodegenError> {
    write_program_with(module, Precision::Fp32)
}

/// As [`write_program`], with the GEMMs' precision.
pub fn write_program_with(module: &Module, precision: Precision) -> Result<Program, CodegenError> {
    let mut kernels = Vec::new();
    for kernel in ops_named(module.as_operation(), "gpu.func") {
        let writer = KernelWriter {
            tf32: precision == Precision::Tf32,
            ..KernelWriter::default()
        };
        kernels.push(writer.write(kernel)?);
    }
    let infos: Vec<KernelInfo> = kernels.iter().map(|(info, _)| info.clone()).collect();
    let prelude = format!(
        "/* Generated by tcc. OpenCL C 1.2. */\n{}{PRELUDE}",
        IndexWidth::of(&infos).typedef()
    );
    let mut program = Program {
        source: prelude.clone(),
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

/// Placeholder for a template kernel's parameter list.
const PARAMETERS: &str = "@PARAMETERS@";

/// The kernel's parameter list: one restrict pointer per buffer, const
/// where the kernel never stores through it.
fn parameter_list(args: &[KernelArg]) -> String {
    let mut text = String::new();
    for (index, arg) in args.iter().enumerate() {
        if index > 0 {
            text.push_str(",\n    ");
        }
        let constness = if arg.written { "" } else { "const " };
        let _ = write!(
            text,
            "__global {constness}{}* restrict a{index}",
            arg.element.storage_type()
        );
    }
    text
}

/// Where a memref value's elements live.
#[derive(Clone, Debug)]
pub(super) struct MemrefView {
    /// The kernel argument's C name.
    pub(super) base: String,
    pub(super) element: ElementType,
    pub(super) offset: i64,
    pub(super) strides: Vec<i64>,
}

impl MemrefView {
    /// The element offset of the given C index expressions.
    pub(super) fn address(&self, indices: &[String]) -> String {
        tcc_kernels::Address::new(self.offset, self.strides.clone()).at(indices)
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
    written_args: Vec<bool>,
    /// C types of the mutable locals (loop-carried values, scf.if results).
    pub(super) declared_types: HashMap<String, &'static str>,
    /// GEMM kernels multiply in TF32 on tensor cores in their PTX form.
    pub(super) tf32: bool,
}

pub(super) fn key(value: Value) -> usize {
    value.to_raw().ptr as usize
}

/// Static strides and offset of a memref type's layout.
pub(super) fn strides_and_offset(ty: Type) -> Option<(Vec<i64>, i64)> {
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(ty.to_raw()) } as usize;
    let mut strides = vec![0i64; rank];
    let mut offset = 0i64;
    let result = unsafe {
        mlir_sys::mlirMemRefTypeGetStridesAndOffset(ty.to_raw(), strides.as_mut_ptr(), &mut offset)
    };
    if result.value == 0 {
        return None;
    }
    let dynamic = unsafe { mlir_sys::mlirShapedTypeGetDynamicStrideOrOffset() };
    if offset == dynamic || strides.contains(&dynamic) {
        return None;
    }
    Some((strides, offset))
}

/// C expressions for the coordinates of row `row` (a flat index over the
/// row-major dimensions `leading`, last fastest), one per dimension.
pub(super) fn row_coordinates(leading: &[i64]) -> Vec<String> {
    let mut coordinates = vec![String::new(); leading.len()];
    let mut divisor = 1i64;
    for dim in (0..leading.len()).rev() {
        let index = if divisor == 1 {
            "row".to_string()
        } else {
            format!("(row / {divisor})")
        };
        coordinates[dim] = if dim == 0 {
            index
        } else {
            format!("({index} % {})", leading[dim])
        };
        divisor *= leading[dim];
    }
    coordinates
}

pub(super) fn memref_shape(ty: Type) -> Vec<i64> {
    let rank = unsafe { mlir_sys::mlirShapedTypeGetRank(ty.to_raw()) } as usize;
    (0..rank)
        .map(|i| unsafe { mlir_sys::mlirShapedTypeGetDimSize(ty.to_raw(), i as isize) })
        .collect()
}

pub(super) fn memref_element(ty: Type) -> Option<ElementType> {
    ElementType::of_type(unsafe {
        Type::from_raw(mlir_sys::mlirShapedTypeGetElementType(ty.to_raw()))
    })
}

impl KernelWriter {
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
        let value = op
            .operand(index)
            .map_err(|e| CodegenError::at(&op, e.to_string()))?;
        self.name(op, value)
    }

    pub(super) fn result_type(op: OperationRef) -> Result<ElementType, CodegenError> {
        let result = op
            .result(0)
            .map_err(|e| CodegenError::at(&op, e.to_string()))?;
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
        let value = op
            .operand(index)
            .map_err(|e| CodegenError::at(&op, e.to_string()))?;
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

    /// Declares `const T vN = expr;` for the op's single result.
    pub(super) fn define(&mut self, op: OperationRef, expr: String) -> Result<(), CodegenError> {
        let ty = Self::result_type(op)?;
        let name = self.fresh();
        self.line(&format!("const {} {name} = {expr};", ty.c_type()));
        let result = op
            .result(0)
            .map_err(|e| CodegenError::at(&op, e.to_string()))?;
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
        let region = kernel
            .region(0)
            .map_err(|e| CodegenError::at(&kernel, e.to_string()))?;
        let block = region
            .first_block()
            .ok_or_else(|| CodegenError::at(&kernel, "kernel without a body"))?;

        let mut args = Vec::new();
        for index in 0..block.argument_count() {
            let argument: Value = block
                .argument(index)
                .map_err(|e| CodegenError::at(&kernel, e.to_string()))?
                .into();
            let ty = argument.r#type();
            if !ty.is_mem_ref() {
                return Err(CodegenError::at(
                    &kernel,
                    format!("kernel argument {index} is {ty}, not a buffer"),
                ));
            }
            let element = memref_element(ty).ok_or_else(|| {
                CodegenError::at(&kernel, format!("unsupported element type in {ty}"))
            })?;
            let (strides, offset) = strides_and_offset(ty).ok_or_else(|| {
                CodegenError::at(
                    &kernel,
                    format!("kernel argument {index} has a dynamic layout: {ty}"),
                )
            })?;
            let base = format!("a{index}");
            self.views.insert(
                key(argument),
                MemrefView {
                    base,
                    element,
                    offset,
                    strides,
                },
            );
            args.push(KernelArg {
                element,
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
        // Template kernels: the parameters' constness is known only after
        // the body, so the template gets a placeholder for them.
        let strategy = crate::ir::strategy::of(&kernel).unwrap_or(KernelStrategy::Loops {
            workgroup_size: workgroup[0],
            max_workgroups: None,
        });
        let template = match strategy {
            KernelStrategy::Loops { .. } => None,
            KernelStrategy::Gemm { config, shape } => {
                let comment =
                    format!("/* {name}: tiled matmul kernel ({kind}); from {location} */");
                Some(self.write_gemm(
                    kernel,
                    block,
                    config,
                    shape,
                    &name,
                    PARAMETERS.into(),
                    comment,
                )?)
            }
            KernelStrategy::RowReduce { workgroup_size }
            | KernelStrategy::Softmax { workgroup_size }
            | KernelStrategy::LayerNorm { workgroup_size } => {
                // The row templates: one work-group per row (per output
                // element for a reduction), written by the same signature.
                type RowWriter = fn(
                    &mut KernelWriter,
                    OperationRef,
                    BlockRef,
                    i64,
                    &str,
                    String,
                    String,
                ) -> Result<String, CodegenError>;
                let (what, per, write): (&str, &str, RowWriter) = match strategy {
                    KernelStrategy::RowReduce { .. } => {
                        ("row reduction", "output element", Self::write_row_reduce)
                    }
                    KernelStrategy::Softmax { .. } => ("row softmax", "row", Self::write_softmax),
                    _ => ("row layer norm", "row", Self::write_layer_norm),
                };
                let comment = format!(
                    "/* {name}: {what} kernel, one work-group of {workgroup_size} per {per}; from {location} */"
                );
                Some(write(
                    &mut self,
                    kernel,
                    block,
                    workgroup_size,
                    &name,
                    PARAMETERS.into(),
                    comment,
                )?)
            }
        };
        if let Some(text) = template {
            for (arg, written) in args.iter_mut().zip(&self.written_args) {
                arg.written = *written;
            }
            let text = text.replace(PARAMETERS, &parameter_list(&args));
            let info = KernelInfo {
                name,
                kind,
                workgroup_size: workgroup,
                args,
                flops,
            };
            return Ok((info, text));
        }

        self.indent = 1;
        self.block(block)?;
        let body = std::mem::take(&mut self.out);

        for (arg, written) in args.iter_mut().zip(&self.written_args) {
            arg.written = *written;
        }
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
        text.push_str(&parameter_list(&args));
        text.push_str(") {\n");
        text.push_str(&body);
        text.push_str("}\n");
        Ok((
            KernelInfo {
                name,
                kind,
                workgroup_size: workgroup,
                args,
                flops,
            },
            text,
        ))
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
                | "memref.cast" => self.op(op)?,
                _ => ops.push(op),
            }
        }
        Ok(ops)
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

    pub(super) fn mark_written(&mut self, base: &str) {
        if let Some(index) = base.strip_prefix('a').and_then(|i| i.parse::<usize>().ok())
            && let Some(flag) = self.written_args.get_mut(index)
        {
            *flag = true;
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
