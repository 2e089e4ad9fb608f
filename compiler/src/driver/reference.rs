//! The reference oracle (`--target=reference`): the same input lowered with
//! upstream MLIR only — TOSA → linalg → loops → LLVM, no tcc fusion, tiling
//! or code generation — and run on the CPU through MLIR's ExecutionEngine.
//!
//! The only tcc passes it uses are `tcc-decompose-composites`, which
//! defines what the tcc dialect's composite ops mean, and
//! `tcc-reduction-identities`, which corrects upstream's identity of
//! max/min reductions and max pools (-FLT_MAX, where TOSA means -inf).
//! End-to-end tests compare the OpenCL path against this.

use std::path::Path;

use anyhow::{Context as _, Result, anyhow, bail};
use melior::ExecutionEngine;
use melior::ir::attribute::Attribute;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRefMut};
use melior::ir::{BlockLike, RegionLike, Type, ValueLike};
use tcc_runtime::{DType, HostTensor};

use super::session::Session;
use crate::ir::attr_names;
use crate::ir::element_type::ElementType;
use crate::ir::util::{body_ops, integer_value, op_name, string_value};

/// Upstream-only lowering to the LLVM dialect, with C interfaces.
const LOWER_TO_LLVM: &str = "builtin.module(\
tcc-decompose-composites,\
func.func(tosa-optional-decompositions,tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),tcc-reduction-identities,canonicalize,\
one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},\
buffer-results-to-out-params{modify-public-functions},\
func.func(convert-linalg-to-loops),lower-affine,expand-strided-metadata,convert-scf-to-cf,\
convert-math-to-llvm,convert-math-to-libm,\
finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,\
reconcile-unrealized-casts)";

use super::environment::llvm_prefix;

fn dtype_of(element: Type) -> Result<DType> {
    Ok(match ElementType::of_type(element) {
        Some(ElementType::F32) => DType::F32,
        Some(ElementType::F16) => DType::F16,
        Some(ElementType::BF16) => DType::BF16,
        Some(ElementType::F64) => DType::F64,
        Some(ElementType::I16) => DType::I16,
        Some(ElementType::I32) => DType::I32,
        Some(ElementType::I64) => DType::I64,
        Some(ElementType::I8) => DType::I8,
        Some(ElementType::I1) => DType::Bool,
        _ => bail!("the reference runner does not support {element} tensors"),
    })
}

/// A function's signature as the reference sees it after bufferization.
struct Signature {
    inputs: Vec<(DType, Vec<usize>)>,
    outputs: Vec<(DType, Vec<usize>)>,
}

/// A strided memref descriptor for a rank-`rank` buffer, as the C interface
/// expects: allocated and aligned pointers, offset, sizes, strides.
fn descriptor(data: *mut u8, shape: &[usize]) -> Vec<i64> {
    let mut words = vec![data as i64, data as i64, 0];
    words.extend(shape.iter().map(|&d| d as i64));
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as i64;
    }
    words.extend(strides);
    words
}

/// Runs `function` of the model at `input` on `inputs`. Booleans: MLIR
/// stores i1 in memory as one byte per element, like the ABI, so tensors
/// pass through unchanged.
pub fn run(input: &Path, function: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>> {
    let session = Session::new();
    let mut module = super::import::parse_model(&session, input)?;
    session.run_pipeline(
        &mut module,
        "builtin.module(tcc-check-supported,tcc-record-interface)",
    )?;
    let signature = signature_of(&module, input, function)?;
    check_inputs(function, &signature, inputs)?;
    for op in body_ops(module.as_operation()) {
        if op_name(&op) == "func.func" {
            let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            op.set_discardable_attribute(
                "llvm.emit_c_interface",
                Attribute::unit(&session.context),
            );
        }
    }
    session
        .run_pipeline(&mut module, LOWER_TO_LLVM)
        .context("lowering for the reference runner")?;

    // libm (erff, ...) resolves from this process; memref copies need
    // MLIR's C runner utilities (memrefCopy). The library is opened here
    // and its symbol handed to the engine: when the engine opened the path
    // itself, about one run in ten of the e2e suite failed with "Error: No
    // such file or directory / Symbols not found: [ memrefCopy ]".
    let memref_copy = runner_utils_memref_copy()?;
    let engine = ExecutionEngine::new(&module, 2, &[], false, false);
    unsafe { engine.register_symbol("memrefCopy", memref_copy) };
    // `fptrunc float to bfloat` on a CPU without AVX512-BF16 (an AMD EPYC)
    // is a call to compiler-rt's `__truncsfbf2`, which Debian 12's libgcc
    // lacks ("Symbols not found: [ __truncsfbf2 ]").
    unsafe { engine.register_symbol("__truncsfbf2", truncate_to_bf16 as *mut ()) };
    let mut input_bytes: Vec<Vec<u8>> = inputs.iter().map(|t| t.bytes.to_vec()).collect();
    let mut outputs: Vec<HostTensor> = signature
        .outputs
        .iter()
        .map(|(dtype, shape)| HostTensor::zeros(*dtype, shape.clone()))
        .collect::<Result<_, _>>()?;
    let mut descriptors: Vec<Vec<i64>> = Vec::new();
    for (bytes, (_, shape)) in input_bytes.iter_mut().zip(&signature.inputs) {
        descriptors.push(descriptor(bytes.as_mut_ptr(), shape));
    }
    for output in outputs.iter_mut() {
        let shape = output.shape.clone();
        descriptors.push(descriptor(output.bytes.as_mut_ptr(), &shape));
    }
    let mut pointers: Vec<*mut i64> = descriptors.iter_mut().map(|d| d.as_mut_ptr()).collect();
    let mut arguments: Vec<*mut ()> = pointers
        .iter_mut()
        .map(|p| p as *mut *mut i64 as *mut ())
        .collect();
    // The C API calls the packed wrapper of `_mlir_ciface_<function>`.
    unsafe { engine.invoke_packed(function, &mut arguments) }
        .map_err(|e| anyhow!("the reference run of @{function} failed: {e}"))?;
    Ok(outputs)
}

fn check_inputs(function: &str, signature: &Signature, inputs: &[HostTensor]) -> Result<()> {
    if inputs.len() != signature.inputs.len() {
        bail!(
            "@{function} takes {} inputs, got {}",
            signature.inputs.len(),
            inputs.len()
        );
    }
    for (index, (tensor, (dtype, shape))) in inputs.iter().zip(&signature.inputs).enumerate() {
        if tensor.dtype != *dtype || &tensor.shape != shape {
            bail!(
                "input {index} of @{function} expects {}, got {}",
                tcc_runtime::tensor::type_string(shape, *dtype),
                tensor.type_string()
            );
        }
    }
    Ok(())
}

/// Reads the function's input and output tensor types (before lowering).
fn signature_of(module: &melior::ir::Module, input: &Path, function: &str) -> Result<Signature> {
    let op = body_ops(module.as_operation())
        .into_iter()
        .find(|op| {
            op_name(op) == "func.func"
                && op
                    .attribute("sym_name")
                    .ok()
                    .and_then(string_value)
                    .as_deref()
                    == Some(function)
        })
        .ok_or_else(|| anyhow!("{}: no function @{function}", input.display()))?;
    let num_outputs = op
        .attribute(attr_names::NUM_OUTPUTS)
        .ok()
        .and_then(integer_value)
        .unwrap_or(0) as usize;
    let block = op
        .region(0)?
        .first_block()
        .ok_or_else(|| anyhow!("@{function} has no body"))?;
    let mut inputs = Vec::new();
    for index in 0..block.argument_count() {
        inputs.push(tensor_type(block.argument(index)?.r#type())?);
    }
    let function_type = melior::ir::r#type::FunctionType::try_from(
        melior::ir::attribute::TypeAttribute::try_from(op.attribute("function_type")?)
            .map_err(|_| anyhow!("malformed function type"))?
            .value(),
    )
    .map_err(|_| anyhow!("malformed function type"))?;
    let mut outputs = Vec::new();
    for index in 0..num_outputs {
        outputs.push(tensor_type(function_type.result(index)?)?);
    }
    Ok(Signature { inputs, outputs })
}

fn tensor_type(ty: Type) -> Result<(DType, Vec<usize>)> {
    let tensor = crate::ir::types::StaticTensor::of(ty)
        .ok_or_else(|| anyhow!("{ty} is not a statically shaped tensor"))?;
    Ok((
        dtype_of(tensor.element)?,
        tensor.shape.iter().map(|&d| d as usize).collect(),
    ))
}

/// `memrefCopy` from MLIR's C runner utilities, opened once per process
/// (the library stays loaded for the life of the process).
fn runner_utils_memref_copy() -> Result<*mut ()> {
    static LIBRARY: std::sync::OnceLock<std::result::Result<libloading::Library, String>> =
        std::sync::OnceLock::new();
    let path = format!("{}/lib/libmlir_c_runner_utils.so", llvm_prefix());
    let library = LIBRARY
        .get_or_init(|| {
            if !Path::new(&path).exists() {
                return Err(format!(
                    "the reference runner needs {path} (libmlir-22-dev): run `make deps`"
                ));
            }
            unsafe { libloading::Library::new(&path) }
                .map_err(|e| format!("cannot open {path}: {e}"))
        })
        .as_ref()
        .map_err(|message| anyhow!("{message}"))?;
    let symbol: libloading::Symbol<'_, unsafe extern "C" fn()> =
        unsafe { library.get(b"memrefCopy\0") }
            .map_err(|e| anyhow!("{path} has no memrefCopy: {e}"))?;
    Ok(*symbol as *mut ())
}

/// compiler-rt's `__truncsfbf2` for the reference engine: `x` rounded to
/// the nearest bfloat16, ties to even (a NaN stays a quiet NaN), its 16
/// bits returned in the low half of the float return register, where the
/// x86-64 calling convention puts a `__bf16` result.
extern "C" fn truncate_to_bf16(x: f32) -> f32 {
    let bits = x.to_bits();
    let rounded = if x.is_nan() {
        (bits >> 16) | 0x40
    } else {
        bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16
    };
    f32::from_bits(rounded & 0xffff)
}
