//! Softmax over the last axis in one kernel: one work-group per row. It
//! reduces the row to its maximum, then to the sum of exponentials, then
//! writes the normalized row: three passes over a row that stays in
//! cache, one launch (`crate::row` spreads each pass over the group's
//! work-items, or over SIMD lanes of a single one; a single one over a
//! contiguous row uses `float16` vectors outright).

use std::fmt::Write as _;

use crate::row::{
    RowKernel, RowLength, RowOperand, RowReduction, fold_lanes, map_row, reduce_row,
    row_kernel_prologue, vector_pass,
};

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct SoftmaxSpec {
    pub kernel: RowKernel,
    /// Length of a row (a C expression where the row follows a symbolic
    /// dimension).
    pub columns: RowLength,
    /// C statements that set `tcc_index in_row, out_row` (element offsets of the
    /// row's first element) from `tcc_index row`.
    pub row_offsets: String,
    /// Rows are read at `in_row + c * stride`.
    pub input: RowOperand,
    /// Rows are written at `out_row + c * stride`.
    pub output: RowOperand,
}

/// Instantiates the template.
pub fn softmax_kernel(spec: &SoftmaxSpec) -> Result<String, String> {
    let w = spec.kernel.workgroup_size("softmax")?;
    let load = spec.input.load("in_row");
    let mut out = String::new();
    row_kernel_prologue(&mut out, &spec.kernel, &spec.row_offsets, "float");
    if let (1, 1, 1, RowLength::Static(n)) =
        (w, spec.input.stride, spec.output.stride, &spec.columns)
    {
        vector_row(&mut out, spec, *n, &load);
        return Ok(out);
    }
    let maximum = format!("const float value = {load};");
    reduce_row(
        &mut out,
        w,
        &RowReduction {
            ty: "float",
            index: "c",
            length: spec.columns.clone(),
            element: &maximum,
            identity: "-INFINITY",
            combine: "tcc_maximumf({a}, {b})",
        },
        "row_max",
    );
    let exponential = format!("const float value = tcc_expf({load} - row_max);");
    reduce_row(
        &mut out,
        w,
        &RowReduction {
            ty: "float",
            index: "c",
            length: spec.columns.clone(),
            element: &exponential,
            identity: "0.0f",
            combine: "({a} + {b})",
        },
        "row_sum",
    );
    let _ = writeln!(out, "  const float inverse = 1.0f / row_sum;");
    map_row(
        &mut out,
        w,
        "c",
        &spec.columns,
        &spec
            .output
            .store(&format!("tcc_expf({load} - row_max) * inverse"), "out_row"),
    );
    let _ = writeln!(out, "}}");
    Ok(out)
}

/// One work-item over a contiguous row, in `float16` vectors: the
/// maximum, the exponentials (written to the output row) and their sum,
/// then the row scaled in place, each pass a vector loop and a scalar
/// tail.
fn vector_row(out: &mut String, spec: &SoftmaxSpec, n: i64, load: &str) {
    let (x, y) = (&spec.input, &spec.output);
    let (x16, y16) = (x.load_lanes("in_row"), y.load_lanes("out_row"));
    let _ = writeln!(
        out,
        "  float16 max16 = (float16)(-INFINITY);\n  float row_max = -INFINITY;"
    );
    vector_pass(
        out,
        "c",
        n,
        &format!("max16 = tcc_maximumf16(max16, {x16});"),
        &format!("row_max = tcc_maximumf(row_max, {load});"),
    );
    fold_lanes(out, "max16", "row_max", "tcc_maximumf({a}, {b})");
    let _ = writeln!(
        out,
        "  float16 sum16 = (float16)(0.0f);\n  float row_sum = 0.0f;"
    );
    // The exponentials go to the output row as they are summed; the last
    // pass scales them in place (the row is still in cache), so each
    // element's exp is computed once.
    vector_pass(
        out,
        "c",
        n,
        &format!(
            "const float16 e = exp({x16} - row_max); {} sum16 += e;",
            y.store_lanes("e", "out_row")
        ),
        &format!(
            "const float e = tcc_expf({load} - row_max); {} row_sum += e;",
            y.store("e", "out_row")
        ),
    );
    fold_lanes(out, "sum16", "row_sum", "({a} + {b})");
    let _ = writeln!(out, "  const float inverse = 1.0f / row_sum;");
    vector_pass(
        out,
        "c",
        n,
        &y.store_lanes(&format!("{y16} * inverse"), "out_row"),
        &y.store(&format!("{} * inverse", y.load("out_row")), "out_row"),
    );
    let _ = writeln!(out, "}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Buffer;

    #[test]
    fn one_group_per_row_with_tree_reductions() {
        let spec = SoftmaxSpec {
            kernel: RowKernel {
                name: "softmax_0".into(),
                parameters: crate::KernelParameters::floats(&[false, true]),
                comment: "/* test */".into(),
                workgroup_size: 64,
            },
            columns: 1000.into(),
            row_offsets: "const tcc_index in_row = row * 1000, out_row = row * 1000;".into(),
            input: RowOperand {
                buffer: Buffer::f32("a0"),
                stride: 1,
            },
            output: RowOperand {
                buffer: Buffer::f32("a1"),
                stride: 1,
            },
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
                kernel: RowKernel {
                    workgroup_size: 48,
                    ..spec.kernel.clone()
                },
                ..spec.clone()
            })
            .is_err()
        );
        // One work-item per row (CPUs): float16 passes with a scalar tail
        // (1000 = 62 chunks of 16 + 8).
        let single = softmax_kernel(&SoftmaxSpec {
            kernel: RowKernel {
                workgroup_size: 1,
                ..spec.kernel.clone()
            },
            ..spec.clone()
        })
        .unwrap();
        assert!(single.contains("reqd_work_group_size(1, 1, 1)"), "{single}");
        assert!(!single.contains("scratch"), "{single}");
        assert!(
            single.contains("max16 = tcc_maximumf16(max16, vload16(0, a0 + in_row + c));"),
            "{single}"
        );
        assert!(
            single.contains("for (tcc_index c = 992; c < 1000; ++c) {"),
            "{single}"
        );
        assert!(
            single.contains(
                "const float16 e = exp(vload16(0, a0 + in_row + c) - row_max); vstore16(e, 0, a1 + out_row + c); sum16 += e;"
            ),
            "{single}"
        );
        assert!(
            single
                .contains("vstore16(vload16(0, a1 + out_row + c) * inverse, 0, a1 + out_row + c);"),
            "{single}"
        );
        assert!(
            single.contains("a1[out_row + c] = a1[out_row + c] * inverse;"),
            "{single}"
        );
        // A strided row falls back to lanes of scalars.
        let strided = softmax_kernel(&SoftmaxSpec {
            kernel: RowKernel {
                workgroup_size: 1,
                ..spec.kernel.clone()
            },
            input: RowOperand {
                buffer: Buffer::f32("a0"),
                stride: 3,
            },
            ..spec
        })
        .unwrap();
        assert!(!strided.contains("vload16"), "{strided}");
        assert!(strided.contains("row_max_15"), "{strided}");
    }
}
