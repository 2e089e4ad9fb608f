//! `tcc-check-supported`: the input phase's gate. Rejects, with the op's
//! location, every op outside tcc's coverage list, every dynamically
//! shaped tensor, and every tensor of more than
//! [`MAX_TENSOR_ELEMENTS`](crate::ir::types::MAX_TENSOR_ELEMENTS) elements
//! (the ONNX importer's limit), so that later phases only meet what they
//! can compile and every size they compute fits.

use melior::Context;
use melior::ir::operation::OperationLike;
use melior::ir::{TypeLike, ValueLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::{collect_ops, dialect_of, op_name};

pub struct CheckSupported;

/// TOSA ops tcc compiles (f32 models; integer tensors for indices and masks).
pub const SUPPORTED_TOSA_OPS: &[&str] = &[
    "abs",
    "add",
    "argmax",
    "avg_pool2d",
    "cast",
    "clamp",
    "concat",
    "const",
    "const_shape",
    "conv2d",
    "depthwise_conv2d",
    "equal",
    "erf",
    "exp",
    "gather",
    "greater",
    "greater_equal",
    "identity",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "matmul",
    "max_pool2d",
    "maximum",
    "minimum",
    "mul",
    "negate",
    "pad",
    "pow",
    "reciprocal",
    "reduce_max",
    "reduce_min",
    "reduce_product",
    "reduce_sum",
    "reshape",
    "rsqrt",
    "select",
    "sigmoid",
    "slice",
    "sub",
    "tanh",
    "tile",
    "transpose",
    "transpose_conv2d",
];

/// Whole dialects accepted at the input (linalg-level models, scalar code
/// in bodies, and tcc's own composites).
const SUPPORTED_DIALECTS: &[&str] = &["arith", "math", "linalg", "tensor", "tcc", "bufferization"];

const SUPPORTED_STRUCTURE: &[&str] = &["builtin.module", "func.func", "func.return", "func.call"];

impl TccPass for CheckSupported {
    const ARGUMENT: &'static str = "tcc-check-supported";
    const SUMMARY: &'static str =
        "Reject ops outside tcc's coverage and dynamically shaped tensors";
    type Options = NoOptions;

    fn run<'c>(&self, _context: &'c Context, root: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let mut errors = Vec::new();
        for op in collect_ops(root) {
            let name = op_name(&op);
            let dialect = dialect_of(&name);
            let supported = SUPPORTED_STRUCTURE.contains(&name.as_str())
                || SUPPORTED_DIALECTS.contains(&dialect)
                || (dialect == "tosa" && SUPPORTED_TOSA_OPS.contains(&&name["tosa.".len()..]));
            if !supported {
                errors.push(PassError::at(
                    op.location(),
                    format!("unsupported op '{name}': tcc cannot compile it"),
                ));
                continue;
            }
            // Each dynamic type is reported once, where its value is defined:
            // function arguments at the function, op results at the op.
            if name == "func.func" {
                if let Some(block) = op
                    .region(0)
                    .ok()
                    .and_then(|r| melior::ir::RegionLike::first_block(&r))
                {
                    // Errors name the function and the argument.
                    let function = op
                        .attribute("sym_name")
                        .ok()
                        .and_then(crate::ir::util::string_value)
                        .unwrap_or_default();
                    for index in 0..melior::ir::BlockLike::argument_count(&block) {
                        let Ok(argument) = melior::ir::BlockLike::argument(&block, index) else {
                            continue;
                        };
                        let ty = argument.r#type();
                        if (ty.is_ranked_tensor() || ty.is_tensor()) && !is_static_tensor(ty) {
                            errors.push(PassError::at(
                                op.location(),
                                format!("argument {index} of @{function} has the dynamically shaped type '{}': tcc needs static shapes", quote(ty)),
                            ));
                        } else if let Some(why) = too_large(ty).or_else(|| unsupported_element(ty))
                        {
                            errors.push(PassError::at(
                                op.location(),
                                format!("argument {index} of @{function} {why}"),
                            ));
                        }
                    }
                }
                continue;
            }
            for value in op.results() {
                let ty = value.r#type();
                if (ty.is_ranked_tensor() || ty.is_tensor()) && !is_static_tensor(ty) {
                    errors.push(PassError::at(
                        op.location(),
                        format!("'{name}' uses the dynamically shaped type '{}': tcc needs static shapes", quote(ty)),
                    ));
                    break;
                }
                if let Some(why) = too_large(ty).or_else(|| unsupported_element(ty)) {
                    errors.push(PassError::at(
                        op.location(),
                        format!("'{name}' result {why}"),
                    ));
                    break;
                }
            }
        }
        // Report all but the last here; the last becomes the pass failure.
        let last = errors.pop();
        for error in errors {
            crate::diagnostics::emit_error(error.location, &error.message);
        }
        last.map_or(Ok(()), Err)
    }
}

/// A type for an error message, shortened when huge.
fn quote(ty: melior::ir::Type) -> String {
    crate::diagnostics::truncate_for_message(&ty.to_string())
}

/// Why a static tensor type is too large for tcc, if it is.
fn too_large(ty: melior::ir::Type) -> Option<String> {
    let tensor = crate::ir::types::StaticTensor::of(ty)?;
    if crate::ir::types::checked_element_count(&tensor.shape).is_some() {
        return None;
    }
    let elements = tensor
        .shape
        .iter()
        .try_fold(1u128, |n, &d| n.checked_mul(d.max(0) as u128))
        .map_or("more than 2^128".to_string(), |n| n.to_string());
    Some(format!(
        "has the type '{}' of {elements} elements, more than tcc's limit of {} (2^32) elements per tensor",
        quote(ty),
        crate::ir::types::MAX_TENSOR_ELEMENTS
    ))
}

/// Why a tensor's element type is outside tcc's coverage, if it is. The
/// kernels handle f32, f64 (in `double`, where the device has
/// `cl_khr_fp64`: the runtime checks at load), the half types f16 and bf16
/// (stored as 16 bits, computed in f32 registers) and signless integers of
/// 1, 8, 16, 32 and 64 bits (unsigned ONNX types are carried signless, with
/// unsigned ops). Other float formats (float8, tf32), signed or unsigned
/// MLIR integers and other widths have no kernel form.
fn unsupported_element(ty: melior::ir::Type) -> Option<String> {
    let tensor = crate::ir::types::StaticTensor::of(ty)?;
    let element = tensor.element;
    if crate::ir::element_type::ElementType::of_type(element).is_some() {
        return None;
    }
    Some(format!(
        "has the type '{}': tcc's kernels do not handle {element} elements (they take f32, f64, \
         f16, bf16 and signless i1/i8/i16/i32/i64)",
        quote(ty)
    ))
}

fn is_static_tensor(ty: melior::ir::Type) -> bool {
    crate::ir::types::StaticTensor::of(ty).is_some()
}
