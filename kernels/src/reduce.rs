//! A reduction over the innermost dimension with one work-group per output
//! element: the work-items stride over the reduced dimension, each keeping
//! a partial result, then combine the partials in local memory (on CPUs,
//! one work-item with a partial per SIMD lane: `crate::row`). For
//! reductions with few outputs and long rows (layer norm statistics, row
//! sums) this keeps the whole device busy where one work-item per output
//! would leave it idle.

use std::fmt::Write as _;

use crate::row::{RowKernel, RowReduction, reduce_row, row_kernel_prologue};

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct RowReduceSpec {
    pub kernel: RowKernel,
    /// Length of the reduced dimension.
    pub length: i64,
    /// C statements computing the row's indices from `tcc_index row`.
    pub row_setup: String,
    /// The C type of the values, partials and total: `float`, or `int`
    /// for integer sums (an int8 matrix-vector product's int32 sums, which
    /// are exact in any order).
    pub ty: &'static str,
    /// C statements computing `const TY value` for reduction index
    /// `tcc_index r`.
    pub element: String,
    /// The combiner's identity, a C expression.
    pub identity: String,
    /// The combiner as a C expression of `{a}` and `{b}`.
    pub combine: String,
    /// C statements run by work-item 0 with `const TY total` in scope,
    /// storing the result.
    pub finish: String,
}

/// Instantiates the template.
pub fn row_reduce_kernel(spec: &RowReduceSpec) -> Result<String, String> {
    let w = spec.kernel.workgroup_size("row reduction")?;
    let mut out = String::new();
    row_kernel_prologue(&mut out, &spec.kernel, &spec.row_setup, spec.ty);
    reduce_row(
        &mut out,
        w,
        &RowReduction {
            index: "r",
            length: spec.length.into(),
            ty: spec.ty,
            element: &spec.element,
            identity: &spec.identity,
            combine: &spec.combine,
        },
        "total",
    );
    let guard = if w > 1 { "if (lid == 0) " } else { "" };
    let _ = writeln!(out, "  {guard}{{");
    for line in spec.finish.lines() {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "  }}\n}}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_partials_then_a_tree() {
        let spec = RowReduceSpec {
            kernel: RowKernel {
                name: "reduce_add_0".into(),
                parameters: crate::KernelParameters::floats(&[true, false]),
                comment: "/* test */".into(),
                workgroup_size: 128,
            },
            length: 2048,
            row_setup: "const tcc_index d0 = row;".into(),
            ty: "float",
            element: "const float value = a1[d0 * 2048 + r];".into(),
            identity: "0.0f".into(),
            combine: "({a} + {b})".into(),
            finish: "a0[d0] = (0.0f + total);".into(),
        };
        let text = row_reduce_kernel(&spec).unwrap();
        assert!(
            text.contains("for (tcc_index r = lid; r < 2048; r += 128) {"),
            "{text}"
        );
        assert!(
            text.contains("partial_total = (partial_total + value);"),
            "{text}"
        );
        assert!(
            text.contains("if (lid < step) scratch[lid] = (scratch[lid] + scratch[lid + step]);"),
            "{text}"
        );
        assert!(
            row_reduce_kernel(&RowReduceSpec {
                kernel: RowKernel {
                    workgroup_size: 100,
                    ..spec.kernel.clone()
                },
                ..spec
            })
            .is_err()
        );
    }

    #[test]
    fn integer_sums_keep_int_partials_and_scratch() {
        let spec = RowReduceSpec {
            kernel: RowKernel {
                name: "reduce_cast_mul_add_0".into(),
                parameters: crate::KernelParameters::floats(&[true, false]),
                comment: "/* test */".into(),
                workgroup_size: 256,
            },
            length: 2048,
            row_setup: "const tcc_index d0 = row;".into(),
            ty: "int",
            element: "const int value = (int)a1[r] * (int)a2[r * 1000 + d0];".into(),
            identity: "0".into(),
            combine: "({a} + {b})".into(),
            finish: "a0[d0] = (0 + total);".into(),
        };
        let text = row_reduce_kernel(&spec).unwrap();
        assert!(text.contains("__local int scratch[256];"), "{text}");
        assert!(text.contains("int partial_total = 0;"), "{text}");
        assert!(text.contains("const int total = scratch[0];"), "{text}");
        assert!(
            !text.contains("float partial") && !text.contains("float total"),
            "{text}"
        );
    }
}
