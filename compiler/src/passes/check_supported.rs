//! `tcc-check-supported`: the input phase's gate. Rejects, with the op's
//! location, every op outside tcc's coverage list, every dynamically
//! shaped tensor (an argument's symbolic dimensions declared by the
//! module's `tcc.dims` and named by its `tcc.dim_names` are checked and
//! accepted; an op computing on them must be in the first dynamic slice,
//! a leading batch through elementwise ops, MatMul, row softmax and layer
//! norm, reductions over static axes, convolution and pooling, reshapes
//! and transposes, or it is refused with its name and the dimension:
//! docs/architecture.md, "Dynamic shapes"), and every tensor of more than
//! [`MAX_TENSOR_ELEMENTS`](crate::ir::types::MAX_TENSOR_ELEMENTS) elements
//! (the ONNX importer's limit), so that later phases only meet what they
//! can compile and every size they compute fits.

use melior::Context;
use melior::ir::operation::OperationLike;
use melior::ir::{TypeLike, ValueLike};

use tcc_dialects::dims::{DIM_NAMES, Dims};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::dynamic::{leading_dynamic, node_name};
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
        let dims = match root.attribute(tcc_dialects::dims::DIMS) {
            Ok(attribute) => match Dims::from_attribute(attribute) {
                Some(dims) => dims,
                None => {
                    return Err(PassError::at(
                        root.location(),
                        format!(
                            "the module's '{}' is not a #tcc.dims attribute",
                            tcc_dialects::dims::DIMS
                        ),
                    ));
                }
            },
            Err(_) => Dims::default(),
        };
        // The declared dimensions some argument uses, and whether an op
        // computing on them was reported.
        let mut symbolic_in_use: Vec<String> = Vec::new();
        // With one declared dimension, each dynamic value's extent as a
        // multiple of it (`numerator / denominator`): a function's
        // arguments are the dimension itself; a reshape scales it by the
        // ratio of its static parts; every other op of the first slice
        // keeps its operand's. A result must be the dimension itself: the
        // runtime sizes an output from it (`Factors`).
        let mut factors = Factors::default();
        let single = dims.0.len() == 1;
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
                        if (ty.is_ranked_tensor() || ty.is_tensor())
                            && !is_static_tensor(ty)
                            && !dims.is_empty()
                        {
                            factors.set(argument.into(), (1, 1));
                            let names = crate::ir::dynamic::argument_dim_names(&op, index);
                            match symbolic_argument(ty, names.as_deref(), &dims) {
                                Ok(used) => {
                                    for name in used {
                                        if !symbolic_in_use.contains(&name) {
                                            symbolic_in_use.push(name);
                                        }
                                    }
                                }
                                Err(why) => errors.push(PassError::at(
                                    op.location(),
                                    format!(
                                        "argument {index} of @{function} has the type '{}': {why}",
                                        quote(ty)
                                    ),
                                )),
                            }
                        } else if (ty.is_ranked_tensor() || ty.is_tensor()) && !is_static_tensor(ty)
                        {
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
            // An op computing on a declared symbolic dimension: compiled
            // when it is in the first dynamic slice (docs/architecture.md,
            // "Dynamic shapes"), refused with its name otherwise.
            if !symbolic_in_use.is_empty()
                && let Some(ty) = op
                    .results()
                    .map(|r| r.r#type())
                    .chain(op.operands().map(|v| v.r#type()))
                    .find(|&ty| crate::ir::dynamic::is_dynamic(ty))
            {
                let why = match outside_dynamic_slice(&op, &name) {
                    Some(why) => {
                        // Reported here; not again where it is returned.
                        factors.refused(&op);
                        Some(why)
                    }
                    None if single => factors.follow(&op, &name, &dims.0[0].name),
                    None => None,
                };
                if let Some(why) = why {
                    let ranges: Vec<String> = symbolic_in_use
                        .iter()
                        .filter_map(|n| dims.get(n))
                        .map(|d| format!("'{}' ({}..{})", d.name, d.min, d.max))
                        .collect();
                    errors.push(PassError::at(
                        op.location(),
                        format!(
                            "'{name}'{} computes on the dynamically shaped type '{}' (dynamic dimension {}): {why}; compile one shape with --input-shape",
                            node_name(&op).map_or(String::new(), |n| format!(" (node '{n}')")),
                            quote(ty),
                            ranges.join(", ")
                        ),
                    ));
                }
                continue;
            }
            for value in op.results() {
                let ty = value.r#type();
                let dynamic = (ty.is_ranked_tensor() || ty.is_tensor()) && !is_static_tensor(ty);
                if dynamic {
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

/// Checks a dynamically shaped argument against the declared dimensions:
/// each `?` must be named (by `names`, or, with no names and one declared
/// dimension, by that one) and each name declared and on a `?`. The names
/// it uses, or why it is refused.
fn symbolic_argument(
    ty: melior::ir::Type,
    names: Option<&[String]>,
    dims: &Dims,
) -> Result<Vec<String>, String> {
    let declared: Vec<&str> = dims.0.iter().map(|d| d.name.as_str()).collect();
    let Ok(tensor) = melior::ir::r#type::RankedTensorType::try_from(ty) else {
        return Err("an unranked tensor: tcc needs a rank".into());
    };
    use melior::ir::r#type::{DimSize, ShapedTypeLike};
    let rank = tensor.rank();
    let extents: Vec<Option<u64>> = (0..rank)
        .map(|i| match tensor.dim_size(i) {
            Ok(DimSize::Static(d)) => Some(d),
            _ => None,
        })
        .collect();
    let dynamic = |i: usize| extents[i].is_none();
    let names: Vec<String> = match names {
        Some(names) => {
            if names.len() != rank {
                return Err(format!(
                    "its {DIM_NAMES} has {} entries for a tensor of rank {rank}",
                    names.len()
                ));
            }
            names.to_vec()
        }
        None if declared.len() == 1 => (0..rank)
            .map(|i| {
                if dynamic(i) {
                    declared[0].to_string()
                } else {
                    String::new()
                }
            })
            .collect(),
        None => {
            return Err(format!(
                "name its dynamic dimensions with {DIM_NAMES} (one of {} per dimension, \"\" for a static one)",
                declared.join(", ")
            ));
        }
    };
    let mut used = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match (dynamic(i), name.is_empty()) {
            (true, true) => {
                return Err(format!(
                    "dimension {i} is dynamic but has no name: declare it with --dim NAME=MIN..MAX and name it in {DIM_NAMES}"
                ));
            }
            (false, false) => {
                return Err(format!(
                    "dimension {i} is named '{name}' but is static ({})",
                    extents[i].unwrap_or_default()
                ));
            }
            (true, false) if dims.get(name).is_none() => {
                return Err(format!(
                    "dimension {i} is '{name}', which is not declared (declare it with --dim {name}=MIN..MAX; declared: {})",
                    declared.join(", ")
                ));
            }
            (true, false) => used.push(name.clone()),
            (false, true) => {}
        }
    }
    Ok(used)
}

/// The ops of the first dynamic slice (issue 33): elementwise ops
/// (comparisons and selects included), MatMul/Gemm with a dynamic M,
/// Softmax/LayerNorm/reductions over static inner axes, Conv2D and
/// pooling with a dynamic N, Reshape/Transpose that keep the batch
/// leading, gathers of dynamic indices (from a static table or per
/// batch), and the
/// importer's broadcasts of a value to the batch (`tensor.empty` sized by
/// `tensor.dim`, an all-parallel `linalg.generic`, whose body may read a
/// dynamically shaped tensor with `tensor.extract`: a gather).
const DYNAMIC_SLICE_OPS: &[&str] = &[
    "tosa.abs",
    "tosa.add",
    "tosa.avg_pool2d",
    "tosa.cast",
    "tosa.clamp",
    "tosa.concat",
    "tosa.conv2d",
    "tosa.depthwise_conv2d",
    "tosa.equal",
    "tosa.erf",
    "tosa.exp",
    "tosa.gather",
    "tosa.greater",
    "tosa.greater_equal",
    "tosa.identity",
    "tosa.log",
    "tosa.logical_and",
    "tosa.logical_not",
    "tosa.logical_or",
    "tosa.matmul",
    "tosa.max_pool2d",
    "tosa.maximum",
    "tosa.minimum",
    "tosa.mul",
    "tosa.negate",
    "tosa.pow",
    "tosa.reciprocal",
    "tosa.reduce_max",
    "tosa.reduce_min",
    "tosa.reduce_sum",
    "tosa.reshape",
    "tosa.rsqrt",
    "tosa.select",
    "tosa.sigmoid",
    "tosa.slice",
    "tosa.sub",
    "tosa.tanh",
    "tosa.tile",
    "tosa.transpose",
    "tcc.softmax",
    "tcc.layer_norm",
    "tcc.gelu",
    "tcc.silu",
    "tensor.dim",
    "tensor.empty",
    "tensor.extract",
    "tensor.collapse_shape",
    "tensor.expand_shape",
    "tensor.cast",
    "linalg.generic",
    "func.return",
];

/// The ops of [`DYNAMIC_SLICE_OPS`] that take one leading symbolic extent
/// only (one `?` per type, after unit dimensions: a batch): convolutions,
/// pools and tiles. The others take symbolic extents on any axes, several
/// at once (issue 33, the sequence dimension: `batch x sequence x hidden`
/// activations, attention's `batch x heads x sequence x sequence` scores):
/// elementwise ops, reshapes and transposes, MatMul (a GEMM tiled over its
/// rows or batch, a loop nest otherwise), the last-axis softmax and layer
/// norm, reductions over static axes, slices (whole along a symbolic
/// axis), concatenations along static axes, gathers, and the importer's
/// run-time-sized tensors, reshapes and broadcasts.
const LEADING_SYMBOLIC_EXTENT_ONLY: &[&str] = &[
    "tosa.avg_pool2d",
    "tosa.conv2d",
    "tosa.depthwise_conv2d",
    "tosa.max_pool2d",
    "tosa.tile",
];

/// Each dynamic value's leading extent as a multiple `numerator /
/// denominator` of the one declared dimension (see `CheckSupported::run`).
#[derive(Default)]
struct Factors(std::collections::HashMap<usize, (i64, i64)>);

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs().max(1)
    } else {
        gcd(b, a % b)
    }
}

/// The product of the static extents of a ranked type.
fn static_part(ty: melior::ir::Type) -> Option<i64> {
    crate::ir::types::ranked_shape(ty)?
        .into_iter()
        .flatten()
        .try_fold(1i64, |n, d| n.checked_mul(d))
}

impl Factors {
    fn set(&mut self, value: melior::ir::Value, factor: (i64, i64)) {
        self.0.insert(value.to_raw().ptr as usize, factor);
    }

    fn get(&self, value: melior::ir::Value) -> Option<(i64, i64)> {
        self.0.get(&(value.to_raw().ptr as usize)).copied()
    }

    /// Marks the results of an op refused for its own reason (`(0, 0)`).
    fn refused<'c: 'a, 'a>(&mut self, op: &impl OperationLike<'c, 'a>) {
        for result in op.results() {
            self.set(result.into(), (0, 0));
        }
    }

    /// An `index` value as a multiple of the dimension: `tensor.dim` of a
    /// dynamic value along its dynamic axis, times constants
    /// (`arith.muli`).
    fn index_factor(&self, value: melior::ir::Value) -> Option<(i64, i64)> {
        use crate::ir::util::{constant_int, defining_op};
        // SAFETY: the value belongs to the module being checked.
        let op = defining_op(unsafe { melior::ir::Value::from_raw(value.to_raw()) })?;
        match crate::ir::util::op_name(&op).as_str() {
            "tensor.dim" => {
                let source = op.operand(0).ok()?;
                let axis = constant_int(op.operand(1).ok()?)?;
                let dynamic_axis = leading_dynamic(source.r#type()).ok()??;
                (axis == dynamic_axis as i64)
                    .then(|| self.get(source))
                    .flatten()
            }
            "arith.muli" => {
                let (a, b) = (op.operand(0).ok()?, op.operand(1).ok()?);
                let (factor, times) = match (constant_int(a), constant_int(b)) {
                    (None, Some(c)) => (self.index_factor(a)?, c),
                    (Some(c), None) => (self.index_factor(b)?, c),
                    _ => return None,
                };
                let num = factor.0.checked_mul(times)?;
                let g = gcd(num, factor.1);
                Some((num / g, factor.1 / g))
            }
            _ => None,
        }
    }

    /// Records the factor of `op`'s dynamic results; for `func.return`,
    /// why a returned value is not the dimension `dim` itself (`None`
    /// when every one is).
    fn follow<'c: 'a, 'a>(
        &mut self,
        op: &impl OperationLike<'c, 'a>,
        name: &str,
        dim: &str,
    ) -> Option<String> {
        let dynamic = |v: &melior::ir::Value| crate::ir::dynamic::is_dynamic(v.r#type());
        if name == "func.return" {
            for (index, value) in op.operands().enumerate().filter(|(_, v)| dynamic(v)) {
                match self.get(value) {
                    Some((1, 1)) | Some((0, 0)) => {}
                    Some((num, den)) => {
                        let times = if den == 1 {
                            num.to_string()
                        } else {
                            format!("{num}/{den}")
                        };
                        return Some(format!(
                            "result {index} has the dynamic extent {times} x '{dim}': an output's dynamic extent must be the dimension itself yet (the runtime sizes outputs from it)"
                        ));
                    }
                    None => {
                        return Some(format!(
                            "result {index}'s dynamic extent cannot be related to '{dim}': an output's dynamic extent must be the dimension itself yet (the runtime sizes outputs from it)"
                        ));
                    }
                }
            }
            return None;
        }
        if name == "tensor.empty" {
            // Its one dynamic extent, an index computed from an argument's.
            let factor = op.operand(0).ok().and_then(|size| self.index_factor(size));
            if let (Some(factor), Ok(result)) = (factor, op.result(0)) {
                self.set(result.into(), factor);
            }
            return None;
        }
        let source = op.operands().find(dynamic).and_then(|v| {
            let (num, den) = self.get(v)?;
            if name != "tosa.reshape" {
                return Some((num, den));
            }
            // rows_in x static_in = rows_out x static_out.
            let result = op.result(0).ok()?;
            let (num, den) = (
                num.checked_mul(static_part(v.r#type())?)?,
                den.checked_mul(static_part(result.r#type())?)?,
            );
            let g = gcd(num, den);
            Some((num / g, den / g))
        });
        if let Some(factor) = source {
            for result in op.results().filter(|r| dynamic(&(*r).into())) {
                self.set(result.into(), factor);
            }
        }
        None
    }
}

/// Why `op` (named `name`), which computes on a declared symbolic
/// dimension, is outside the first dynamic slice; `None` when the later
/// phases compile it.
fn outside_dynamic_slice<'c: 'a, 'a>(
    op: &impl OperationLike<'c, 'a>,
    name: &str,
) -> Option<String> {
    if name == "func.return" {
        // What it returns was checked where it was computed.
        return None;
    }
    if !DYNAMIC_SLICE_OPS.contains(&name) {
        return Some(format!(
            "dynamic dimension not supported yet by '{name}' (outside the first dynamic slice)"
        ));
    }
    let types = op
        .results()
        .map(|r| r.r#type())
        .chain(op.operands().map(|v| v.r#type()));
    if LEADING_SYMBOLIC_EXTENT_ONLY.contains(&name) {
        for ty in types {
            if leading_dynamic(ty).is_err() {
                return Some(format!(
                    "'{name}' gets a dynamic dimension that is not the leading one (in '{}'): only a leading batch (after unit dimensions) compiles for it yet",
                    quote(ty)
                ));
            }
        }
    }
    // The operand's symbolic axes.
    let input_shape = op
        .operand(0)
        .ok()
        .and_then(|v| crate::ir::types::ranked_shape(v.r#type()))
        .unwrap_or_default();
    let dynamic_axis =
        |axis: Option<usize>| axis.is_some_and(|a| input_shape.get(a).is_some_and(Option::is_none));
    let input_dynamic = op
        .operand(0)
        .ok()
        .and_then(|v| leading_dynamic(v.r#type()).ok().flatten());
    let rank = input_shape.len();
    let axis = op
        .attribute("axis")
        .ok()
        .and_then(crate::ir::util::integer_value)
        .and_then(|a| crate::ir::types::normalize_axis(a, rank));
    match name {
        "tosa.reduce_max" | "tosa.reduce_min" | "tosa.reduce_sum" if dynamic_axis(axis) => {
            Some(format!(
                "'{name}' reduces over the dynamic dimension: only reductions over static inner axes compile yet"
            ))
        }
        "tcc.softmax" if axis != Some(rank.saturating_sub(1)) => Some(
            "'tcc.softmax' normalizes along an axis other than the last: only rows along the last axis compile with a dynamic dimension yet".to_string(),
        ),
        "tcc.layer_norm" if axis != Some(rank.saturating_sub(1)) || dynamic_axis(axis) => {
            Some(
                "'tcc.layer_norm' normalizes along an axis other than the last, static one: only rows of a static length along the last axis compile with a dynamic dimension yet".to_string(),
            )
        }
        "tosa.tile" if !tiles_static_axes_only(op, input_dynamic) => Some(
            "'tosa.tile' repeats along the dynamic dimension: only tiles of static axes compile yet".to_string(),
        ),
        "tosa.concat" if dynamic_axis(axis) => Some(
            "'tosa.concat' joins along the dynamic dimension: only concatenations along static axes compile yet".to_string(),
        ),
        // A static table, or one gathered per batch (the batch is TOSA's
        // N of both operands: a resize along an axis).
        "tosa.gather"
            if op
                .operand(0)
                .is_ok_and(|v| crate::ir::dynamic::is_dynamic(v.r#type()))
                && !op
                    .operand(1)
                    .is_ok_and(|v| crate::ir::dynamic::is_dynamic(v.r#type())) =>
        {
            Some(
                "'tosa.gather' gathers from a dynamically shaped table with static indices"
                    .to_string(),
            )
        }
        // A product with symbolic extents anywhere: a GEMM tiled over its
        // rows or its batch (attention's heads x batch), a loop nest where
        // the template's launch cannot follow them (attention's products
        // over a sequence: `QK^T`'s columns, `P.V`'s reduction).
        "tosa.matmul" => None,
        "tosa.conv2d"
        | "tosa.depthwise_conv2d"
        | "tosa.avg_pool2d"
        | "tosa.max_pool2d"
            if op
                .operand(1)
                .is_ok_and(|w| crate::ir::dynamic::is_dynamic(w.r#type())) =>
        {
            Some(format!(
                "'{name}' has a dynamic dimension in its second operand: only a convolution's or pool's batch (N) may be dynamic yet"
            ))
        }
        _ => None,
    }
}

/// Whether a `tosa.tile`'s multiples (a `tosa.const_shape`) are 1 along
/// the dynamic dimension `dynamic`.
fn tiles_static_axes_only<'c: 'a, 'a>(
    op: &impl OperationLike<'c, 'a>,
    dynamic: Option<usize>,
) -> bool {
    let Some(axis) = dynamic else {
        return true;
    };
    op.operand(1)
        .ok()
        .and_then(|m| {
            crate::ir::util::defining_op(unsafe { melior::ir::Value::from_raw(m.to_raw()) })
        })
        .filter(|d| crate::ir::util::op_name(d) == "tosa.const_shape")
        .and_then(|d| d.attribute("values").ok())
        .and_then(crate::ir::dense::int_elements)
        .is_some_and(|multiples| multiples.get(axis) == Some(&1))
}
