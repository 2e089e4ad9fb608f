//! Layer normalization over the last axis in one kernel: one work-group per
//! row. The work-items stride over the row for the sum, reduce it in local
//! memory into the mean, do the same for the sum of squared deviations
//! (the variance of the centred values, as the composite defines it), then
//! write `(x - mean) * rsqrt(var + epsilon) * scale + bias` — three passes
//! over a row that stays in cache, one launch instead of four.

use std::fmt::Write as _;

use crate::row::{row_kernel_prologue, tree_reduce};

/// An operand of the template: its buffer, the element offset of its first
/// element and the stride between consecutive elements of a row.
#[derive(Clone, Debug)]
pub struct RowOperand {
    pub base: String,
    pub stride: i64,
}

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct LayerNormSpec {
    pub name: String,
    pub parameters: String,
    pub comment: String,
    /// Work-items per row (a power of two).
    pub workgroup_size: u32,
    /// Length of a row.
    pub columns: i64,
    /// C statements that set `tcc_index in_row, out_row` (element offsets of the
    /// row's first element) from `tcc_index row`, and `tcc_index scale_at, bias_at`
    /// (the element offsets of the scale and bias vectors).
    pub row_offsets: String,
    /// Rows are read at `in_row + c * stride`.
    pub input: RowOperand,
    /// Rows are written at `out_row + c * stride`.
    pub output: RowOperand,
    /// Read at `scale_at + c * stride`.
    pub scale: RowOperand,
    /// Read at `bias_at + c * stride`.
    pub bias: RowOperand,
    pub epsilon: f32,
}

fn at(operand: &RowOperand, start: &str) -> String {
    if operand.stride == 1 {
        format!("{}[{start} + c]", operand.base)
    } else {
        format!("{}[{start} + c * {}]", operand.base, operand.stride)
    }
}

/// A C float literal that reads back as exactly `value`.
fn float_literal(value: f32) -> String {
    let text = format!("{value:?}");
    if text.contains(['.', 'e']) {
        format!("{text}f")
    } else {
        format!("{text}.0f")
    }
}

/// Instantiates the template.
pub fn layer_norm_kernel(spec: &LayerNormSpec) -> Result<String, String> {
    let w = spec.workgroup_size;
    if w == 0 || !w.is_power_of_two() {
        return Err(format!(
            "layer norm work-group size {w} is not a power of two"
        ));
    }
    if spec.columns < 1 {
        return Err(format!("layer norm of rows of {} elements", spec.columns));
    }
    if !(spec.epsilon.is_finite() && spec.epsilon > 0.0) {
        return Err(format!(
            "layer norm epsilon {} is not positive",
            spec.epsilon
        ));
    }
    let n = spec.columns;
    let load = at(&spec.input, "in_row");
    let mut out = String::new();
    row_kernel_prologue(
        &mut out,
        &spec.comment,
        &spec.name,
        &spec.parameters,
        w,
        &spec.row_offsets,
    );
    let _ = writeln!(out, "  const float inverse_n = 1.0f / {n}.0f;");
    let _ = writeln!(out, "  float part = 0.0f;");
    let _ = writeln!(
        out,
        "  for (tcc_index c = lid; c < {n}; c += {w}) part += {load};"
    );
    tree_reduce(&mut out, w, "part", "scratch[lid] + scratch[lid + step]");
    let _ = writeln!(
        out,
        "  const float mean = scratch[0] * inverse_n;\n  barrier(CLK_LOCAL_MEM_FENCE);"
    );
    let _ = writeln!(out, "  part = 0.0f;");
    let _ = writeln!(
        out,
        "  for (tcc_index c = lid; c < {n}; c += {w}) {{ const float d = {load} - mean; part += d * d; }}"
    );
    tree_reduce(&mut out, w, "part", "scratch[lid] + scratch[lid + step]");
    let _ = writeln!(
        out,
        "  const float inv_std = rsqrt(scratch[0] * inverse_n + {});",
        float_literal(spec.epsilon)
    );
    let _ = writeln!(
        out,
        "  for (tcc_index c = lid; c < {n}; c += {w}) {} = ({load} - mean) * inv_std * {} + {};",
        at(&spec.output, "out_row"),
        at(&spec.scale, "scale_at"),
        at(&spec.bias, "bias_at"),
    );
    let _ = writeln!(out, "}}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LayerNormSpec {
        let operand = |base: &str| RowOperand {
            base: base.into(),
            stride: 1,
        };
        LayerNormSpec {
            name: "layer_norm_0".into(),
            parameters: "__global const float* restrict a0".into(),
            comment: "/* test */".into(),
            workgroup_size: 128,
            columns: 768,
            row_offsets:
                "const tcc_index in_row = row * 768, out_row = row * 768, scale_at = 0, bias_at = 0;"
                    .into(),
            input: operand("a0"),
            output: operand("a3"),
            scale: operand("a1"),
            bias: RowOperand {
                base: "a2".into(),
                stride: 2,
            },
            epsilon: 1e-5,
        }
    }

    #[test]
    fn mean_then_centred_variance_then_normalize() {
        let text = layer_norm_kernel(&spec()).unwrap();
        assert!(text.contains("reqd_work_group_size(128, 1, 1)"), "{text}");
        assert!(
            text.contains("const float inverse_n = 1.0f / 768.0f;"),
            "{text}"
        );
        assert_eq!(
            text.matches("for (int step = 64; step > 0; step >>= 1)")
                .count(),
            2,
            "{text}"
        );
        assert!(
            text.contains("const float d = a0[in_row + c] - mean; part += d * d;"),
            "{text}"
        );
        assert!(
            text.contains("const float inv_std = rsqrt(scratch[0] * inverse_n + 1e-5f);"),
            "{text}"
        );
        assert!(
            text.contains(
                "a3[out_row + c] = (a0[in_row + c] - mean) * inv_std * a1[scale_at + c] + a2[bias_at + c * 2];"
            ),
            "{text}"
        );
    }

    #[test]
    fn rejects_bad_configurations() {
        assert!(
            layer_norm_kernel(&LayerNormSpec {
                workgroup_size: 96,
                ..spec()
            })
            .is_err()
        );
        assert!(
            layer_norm_kernel(&LayerNormSpec {
                epsilon: 0.0,
                ..spec()
            })
            .is_err()
        );
        assert!(
            layer_norm_kernel(&LayerNormSpec {
                columns: 0,
                ..spec()
            })
            .is_err()
        );
        assert_eq!(float_literal(2.0), "2.0f");
        assert_eq!(float_literal(0.001), "0.001f");
    }
}
