//! Kernel names derived from the ops a kernel fuses
//! (`matmul_add_max_0`, `reduce_max_3`, `exp_sub_div_5`), so that profiles
//! and emitted OpenCL C say what each kernel computes.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{TypeLike, ValueLike};

use crate::config::KernelKind;
use crate::ir::affine::has_reduction_iterator;
use crate::ir::util::{collect_ops, op_name};

/// Short name of a scalar op inside a linalg body, or `None` for ops that
/// say nothing about the computation (yields, constants, index ops).
fn scalar_op_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "arith.addf" | "arith.addi" => "add",
        "arith.subf" | "arith.subi" => "sub",
        "arith.mulf" | "arith.muli" => "mul",
        "arith.divf" | "arith.divsi" | "arith.divui" => "div",
        "arith.maximumf" | "arith.maxnumf" | "arith.maxsi" | "arith.maxui" => "max",
        "arith.minimumf" | "arith.minnumf" | "arith.minsi" | "arith.minui" => "min",
        "arith.negf" => "neg",
        "arith.cmpf" | "arith.cmpi" => "cmp",
        "arith.select" => "select",
        "arith.sitofp" | "arith.uitofp" | "arith.fptosi" | "arith.fptoui" | "arith.extf"
        | "arith.truncf" | "arith.extsi" | "arith.extui" | "arith.trunci" | "arith.index_cast"
        | "arith.bitcast" => "cast",
        "math.exp" => "exp",
        "math.log" => "log",
        "math.tanh" => "tanh",
        "math.erf" => "erf",
        "math.sqrt" => "sqrt",
        "math.rsqrt" => "rsqrt",
        "math.powf" | "math.fpowi" | "math.ipowi" => "pow",
        "math.absf" | "math.absi" => "abs",
        "math.floor" => "floor",
        "math.ceil" => "ceil",
        "math.fma" => "fma",
        _ => return None,
    })
}

/// The name parts an op contributes: its kind for named ops, the scalar
/// ops of its body for generic ones.
pub fn op_parts(op: OperationRef) -> Vec<String> {
    if crate::ir::grouped_conv::of(op).is_some() {
        return vec!["grouped_conv".into()];
    }
    let name = op_name(&op);
    // A window op rewritten by `tcc-fold-conv-inputs` is named after the
    // op it computes.
    let conv = crate::ir::conv::of(&op);
    let short = match &conv {
        Some(conv) => conv.kind.name(),
        None => name.strip_prefix("linalg.").unwrap_or(&name),
    };
    let named = match short {
        "matmul" | "batch_matmul" | "matvec" | "batch_matvec" | "vecmat" => Some(short.to_string()),
        "fill" => Some("fill".into()),
        "softmax" => Some("softmax".into()),
        "tcc.layer_norm_rows" => Some("layer_norm".into()),
        "tcc.flash_attention" => Some("attention".into()),
        "transpose" => Some("transpose".into()),
        "broadcast" => Some("broadcast".into()),
        "copy" | "memref.copy" => Some("copy".into()),
        s if s.starts_with("conv_") => Some("conv".into()),
        s if s.starts_with("depthwise_conv") => Some("depthwise_conv".into()),
        s if s.starts_with("pooling_") && s.contains("max") => Some("max_pool".into()),
        s if s.starts_with("pooling_") && s.contains("min") => Some("min_pool".into()),
        s if s.starts_with("pooling_") => Some("sum_pool".into()),
        _ => None,
    };
    if let Some(named) = named {
        return vec![named];
    }
    let mut parts = Vec::new();
    if short == "reduce" || has_reduction_iterator(op) {
        parts.push("reduce".to_string());
    }
    for inner in collect_ops(op).into_iter().skip(1) {
        // Address arithmetic and bounds checks (index operands) say
        // nothing about what is computed.
        let on_indices = inner.operands().any(|v| v.r#type().is_index())
            || inner.results().any(|r| r.r#type().is_index())
            || is_bounds_select(inner);
        if !on_indices
            && let Some(part) = scalar_op_name(&op_name(&inner))
            && parts.last().map(String::as_str) != Some(part)
        {
            parts.push(part.to_string());
        }
    }
    if parts.is_empty() {
        parts.push(if short == "generic" {
            "copy".into()
        } else {
            short.replace('.', "_")
        });
    }
    parts
}

/// Whether `op` is an `arith.select` of a pad value by a bounds check
/// (its condition an `andi` or `cmpi` of index values), as folded pads
/// read.
fn is_bounds_select(op: OperationRef) -> bool {
    op_name(&op) == "arith.select"
        && op
            .operand(0)
            .ok()
            .and_then(crate::ir::util::defining_op)
            .is_some_and(|c| {
                let name = op_name(&c);
                name == "arith.andi"
                    || (name == "arith.cmpi" && c.operands().any(|v| v.r#type().is_index()))
            })
}

/// Joins the parts of a kernel's ops into its name, at most six parts,
/// with the kernel's index in the module as suffix.
pub fn kernel_name(parts: &[String], index: usize) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for part in parts {
        if unique.last() != Some(&part.as_str()) {
            unique.push(part);
        }
    }
    unique.truncate(6);
    format!("{}_{index}", unique.join("_"))
}

/// Whether `name` (an op name) is a contraction, convolution or pooling.
pub fn is_contraction_or_conv(name: &str) -> bool {
    let short = name.strip_prefix("linalg.").unwrap_or(name);
    matches!(
        short,
        "matmul" | "batch_matmul" | "matvec" | "batch_matvec" | "vecmat"
    ) || short.starts_with("conv_")
        || short.starts_with("depthwise_conv")
        || short.starts_with("pooling_")
}

/// The kind of kernel an op roots.
pub fn kind_of(op: OperationRef) -> KernelKind {
    // The kind the dispatch was formed with, which a later rewrite of the
    // op keeps (a matmul whose weights are packed in panels is a generic
    // by then, still a matmul).
    if let Some(kind) = op
        .attribute(crate::ir::attr_names::KIND)
        .ok()
        .and_then(crate::ir::util::string_value)
        .and_then(|name| KernelKind::from_name(&name))
    {
        return kind;
    }
    if is_conv_op(op) || crate::ir::grouped_conv::of(op).is_some() {
        return KernelKind::Convolution;
    }
    let name = op_name(&op);
    let short = name.strip_prefix("linalg.").unwrap_or(&name);
    if short == "softmax" {
        KernelKind::Softmax
    } else if name == "tcc.layer_norm_rows" {
        KernelKind::LayerNorm
    } else if name == "tcc.flash_attention" {
        KernelKind::Attention
    } else if matches!(
        short,
        "matmul" | "batch_matmul" | "matvec" | "batch_matvec" | "vecmat"
    ) {
        KernelKind::Matmul
    } else if is_contraction_or_conv(&name) {
        KernelKind::Convolution
    } else if short == "reduce" || has_reduction_iterator(op) {
        KernelKind::Reduction
    } else {
        KernelKind::Elementwise
    }
}

/// Whether `op` is a convolution or pooling rewritten into a `tcc.conv`
/// by `tcc-fold-conv-inputs`.
pub fn is_conv_op(op: OperationRef) -> bool {
    op_name(&op) == crate::ir::conv::OP
}

#[cfg(test)]
mod tests {
    use super::kernel_name;

    #[test]
    fn names_join_parts_without_repeats() {
        let parts: Vec<String> = ["matmul", "add", "add", "max"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(kernel_name(&parts, 0), "matmul_add_max_0");
        let many: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
        assert_eq!(kernel_name(&many, 3), "p0_p1_p2_p3_p4_p5_3");
    }
}
