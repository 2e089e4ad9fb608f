//! Softmax over the last axis in one kernel: one work-group per row. The
//! work-items stride over the row for the maximum, reduce it in local
//! memory, do the same for the sum of exponentials, then write the
//! normalized row — three passes over a row that stays in cache, one launch.

use std::fmt::Write as _;

use crate::row::{row_kernel_prologue, tree_reduce};

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct SoftmaxSpec {
    pub name: String,
    pub parameters: String,
    pub comment: String,
    /// Work-items per row (a power of two).
    pub workgroup_size: u32,
    /// Length of a row.
    pub columns: i64,
    /// C statements that set `tcc_index in_row, out_row` (element offsets of the
    /// row's first element) from `tcc_index row`.
    pub row_offsets: String,
    pub input: String,
    pub input_stride: i64,
    pub output: String,
    pub output_stride: i64,
}

/// Instantiates the template.
pub fn softmax_kernel(spec: &SoftmaxSpec) -> Result<String, String> {
    let w = spec.workgroup_size;
    if w == 0 || !w.is_power_of_two() {
        return Err(format!("softmax work-group size {w} is not a power of two"));
    }
    let (x, y) = (&spec.input, &spec.output);
    let at = |base: &str, stride: i64, row: &str| {
        if stride == 1 {
            format!("{base}[{row} + c]")
        } else {
            format!("{base}[{row} + c * {stride}]")
        }
    };
    let load = at(x, spec.input_stride, "in_row");
    let store = at(y, spec.output_stride, "out_row");
    let mut out = String::new();
    row_kernel_prologue(
        &mut out,
        &spec.comment,
        &spec.name,
        &spec.parameters,
        w,
        &spec.row_offsets,
    );
    let _ = writeln!(out, "  float part = -INFINITY;");
    let _ = writeln!(
        out,
        "  for (tcc_index c = lid; c < {}; c += {w}) part = tcc_maximumf(part, {load});",
        spec.columns
    );
    tree_reduce(
        &mut out,
        w,
        "part",
        "tcc_maximumf(scratch[lid], scratch[lid + step])",
    );
    let _ = writeln!(
        out,
        "  const float row_max = scratch[0];\n  barrier(CLK_LOCAL_MEM_FENCE);"
    );
    let _ = writeln!(out, "  part = 0.0f;");
    let _ = writeln!(
        out,
        "  for (tcc_index c = lid; c < {}; c += {w}) part += tcc_expf({load} - row_max);",
        spec.columns
    );
    tree_reduce(&mut out, w, "part", "scratch[lid] + scratch[lid + step]");
    let _ = writeln!(out, "  const float inverse = 1.0f / scratch[0];");
    let _ = writeln!(
        out,
        "  for (tcc_index c = lid; c < {}; c += {w}) {store} = tcc_expf({load} - row_max) * inverse;",
        spec.columns
    );
    let _ = writeln!(out, "}}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_group_per_row_with_tree_reductions() {
        let spec = SoftmaxSpec {
            name: "softmax_0".into(),
            parameters: "__global const float* restrict a0, __global float* restrict a1".into(),
            comment: "/* test */".into(),
            workgroup_size: 64,
            columns: 1000,
            row_offsets: "const tcc_index in_row = row * 1000, out_row = row * 1000;".into(),
            input: "a0".into(),
            input_stride: 1,
            output: "a1".into(),
            output_stride: 1,
        };
        let text = softmax_kernel(&spec).unwrap();
        assert!(text.contains("reqd_work_group_size(64, 1, 1)"), "{text}");
        assert!(
            text.contains("for (int step = 32; step > 0; step >>= 1)"),
            "{text}"
        );
        assert!(
            text.contains("a1[out_row + c] = tcc_expf(a0[in_row + c] - row_max) * inverse;"),
            "{text}"
        );
        assert!(
            softmax_kernel(&SoftmaxSpec {
                workgroup_size: 48,
                ..spec
            })
            .is_err()
        );
    }
}
