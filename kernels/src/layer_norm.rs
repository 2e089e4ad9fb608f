//! Layer normalization over the last axis in one kernel: one work-group per
//! row. It reduces the row to its sum (the mean), then to the sum of
//! squared deviations (the variance of the centred values, as the
//! composite defines it), then writes `(x - mean) * rsqrt(var + epsilon) * scale + bias` — three passes
//! over a row that stays in cache, one launch instead of four.

use std::fmt::Write as _;

use crate::row::{
    RowKernel, RowOperand, RowReduction, combine_partials, fold_lanes, map_row, reduce_row,
    row_kernel_prologue, vector_pass,
};

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct LayerNormSpec {
    pub kernel: RowKernel,
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
    /// Rows per work-group (`kernel.workgroup_size` work-items each, then
    /// a power of two of at most 32: one warp's lanes or fewer), and the
    /// rows of the kernel, which the last work-group's rows past the end
    /// compute on the last row of without storing. 1: one row a group.
    pub group_rows: u32,
    pub rows: i64,
}

/// The scalar normalizing statement: `y = (x - mean) * inv_std * scale + bias`.
fn normalize(spec: &LayerNormSpec, load: &str) -> String {
    spec.output.store(
        &format!(
            "({load} - mean) * inv_std * {} + {}",
            spec.scale.load("scale_at"),
            spec.bias.load("bias_at")
        ),
        "out_row",
    )
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
    let w = spec.kernel.workgroup_size("layer norm")?;
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
    let load = spec.input.load("in_row");
    let mut out = String::new();
    if spec.group_rows > 1 {
        return packed_rows(spec, w, &load);
    }
    row_kernel_prologue(&mut out, &spec.kernel, &spec.row_offsets, "float");
    let _ = writeln!(out, "  const float inverse_n = 1.0f / {n}.0f;");
    let contiguous = [&spec.input, &spec.output, &spec.scale, &spec.bias]
        .iter()
        .all(|operand| operand.stride == 1);
    if w == 1 && contiguous {
        vector_row(&mut out, spec, &load);
        return Ok(out);
    }
    let per_item = (n + i64::from(w) - 1) / i64::from(w);
    if w > 1 && per_item <= MAX_HELD_COLUMNS {
        held_row(
            &mut out,
            spec,
            (w, "lid"),
            per_item,
            &load,
            &|out, sum, result| combine_partials(out, w, sum, result),
        );
        return Ok(out);
    }
    let element = format!("const float value = {load};");
    reduce_row(
        &mut out,
        w,
        &RowReduction {
            ty: "float",
            index: "c",
            length: n.into(),
            element: &element,
            identity: "0.0f",
            combine: "({a} + {b})",
        },
        "sum",
    );
    let _ = writeln!(out, "  const float mean = sum * inverse_n;");
    let deviation = format!("const float d = {load} - mean;\nconst float value = d * d;");
    reduce_row(
        &mut out,
        w,
        &RowReduction {
            ty: "float",
            index: "c",
            length: n.into(),
            element: &deviation,
            identity: "0.0f",
            combine: "({a} + {b})",
        },
        "squares",
    );
    let _ = writeln!(
        out,
        "  const float inv_std = rsqrt(squares * inverse_n + {});",
        float_literal(spec.epsilon)
    );
    map_row(&mut out, w, "c", &n.into(), &normalize(spec, &load));
    let _ = writeln!(out, "}}");
    Ok(out)
}

/// The most columns a work-item keeps in registers ([`held_row`]): a
/// row of 2048 among 64 work-items (BERT's and GPT-2's 768 take 12).
const MAX_HELD_COLUMNS: i64 = 32;

/// `w > 1` work-items over a row of at most `w x`[`MAX_HELD_COLUMNS`]
/// columns, each keeping its `per_item` columns (`lid`, `lid + w`, ...) in
/// registers: the row is read from memory once, where the three passes of
/// the strided form read it three times (the second and third from cache),
/// each read a dependent round trip in a kernel that is latency-bound
/// (one short row a work-group). Columns past the row hold 0 and are left
/// out of the squares and the stores.
fn held_row(
    out: &mut String,
    spec: &LayerNormSpec,
    (w, lane): (u32, &str),
    per_item: i64,
    load: &str,
    combine: &dyn Fn(&mut String, &RowReduction, &str),
) {
    let n = spec.columns;
    // Rows past the kernel's (a packed group's last) store nothing.
    let inside = if spec.group_rows > 1 {
        "row_inside && "
    } else {
        ""
    };
    let each = |out: &mut String, body: &str| {
        let _ = writeln!(
            out,
            "  #pragma unroll\n  for (int i = 0; i < {per_item}; ++i) {{\n    const tcc_index c = {lane} + i * {w};"
        );
        for line in body.lines() {
            let _ = writeln!(out, "    {line}");
        }
        let _ = writeln!(out, "  }}");
    };
    let _ = writeln!(
        out,
        "  float held[{per_item}];\n  float partial_sum = 0.0f;"
    );
    each(
        out,
        &format!("held[i] = c < {n} ? {load} : 0.0f;\npartial_sum += held[i];"),
    );
    let sum = RowReduction {
        ty: "float",
        index: "c",
        length: n.into(),
        element: "",
        identity: "0.0f",
        combine: "({a} + {b})",
    };
    combine(out, &sum, "sum");
    let _ = writeln!(
        out,
        "  const float mean = sum * inverse_n;\n  float partial_squares = 0.0f;"
    );
    each(
        out,
        &format!(
            "if (c < {n}) {{\n  const float d = held[i] - mean;\n  partial_squares += d * d;\n}}"
        ),
    );
    combine(out, &sum, "squares");
    let _ = writeln!(
        out,
        "  const float inv_std = rsqrt(squares * inverse_n + {});",
        float_literal(spec.epsilon)
    );
    each(
        out,
        &format!(
            "if ({inside}c < {n}) {{\n  {}\n}}",
            normalize(spec, "held[i]")
        ),
    );
    let _ = writeln!(out, "}}");
}

/// [`LayerNormSpec::group_rows`] rows a work-group, `w` work-items (at
/// most a warp) each keeping its columns in registers ([`held_row`]). A
/// row's partial sums meet by warp shuffles in the PTX form (no local
/// memory, no barrier), and through a local-memory tree per row in the
/// OpenCL C form, whose barriers every work-item of the group reaches
/// (the rows past the kernel's compute on its last row). For many short
/// rows (a layer norm over the channels of a channels-last image), where
/// one row a group leaves too few loads in flight per SM.
fn packed_rows(spec: &LayerNormSpec, w: u32, load: &str) -> Result<String, String> {
    let (r, n) = (spec.group_rows, spec.columns);
    if spec.rows < 1 {
        return Err(format!("a layer norm over {} rows", spec.rows));
    }
    if w > WARP_LANES || !w.is_power_of_two() {
        return Err(format!(
            "a layer norm of {r} rows a work-group takes at most {WARP_LANES} work-items a row (a power of two), not {w}"
        ));
    }
    let per_item = (n + i64::from(w) - 1) / i64::from(w);
    if per_item > MAX_HELD_COLUMNS {
        return Err(format!(
            "a layer norm of {r} rows a work-group keeps at most {MAX_HELD_COLUMNS} columns a work-item, not {per_item}"
        ));
    }
    let RowKernel {
        name,
        parameters,
        comment,
        ..
    } = &spec.kernel;
    let last = spec.rows - 1;
    let mut out = String::new();
    let _ = writeln!(out, "{comment}");
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({}, 1, 1)))",
        w * r
    );
    let _ = writeln!(out, "void {name}({parameters}) {{");
    let _ = writeln!(
        out,
        "#ifndef TCC_PTX\n  __local float scratch[{}];\n#endif",
        w * r
    );
    let _ = writeln!(
        out,
        "  const int lid = (int)get_local_id(0);\n  const int lane = lid % {w};"
    );
    let _ = writeln!(
        out,
        "  const tcc_index row_at = (tcc_index)get_group_id(0) * {r} + lid / {w};"
    );
    let _ = writeln!(
        out,
        "  const bool row_inside = row_at <= {last};\n  const tcc_index row = row_inside ? row_at : {last};"
    );
    for line in spec.row_offsets.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(out, "  const float inverse_n = 1.0f / {n}.0f;");
    let combine = |out: &mut String, _: &RowReduction, result: &str| {
        let partial = format!("partial_{result}");
        let _ = writeln!(out, "#ifdef TCC_PTX");
        let _ = writeln!(
            out,
            "  for (int lanes = {}; lanes > 0; lanes >>= 1) {partial} += tcc_warp_xor({partial}, lanes);",
            w / 2
        );
        let _ = writeln!(out, "  const float {result} = {partial};\n#else");
        let _ = writeln!(
            out,
            "  scratch[lid] = {partial};\n  barrier(CLK_LOCAL_MEM_FENCE);"
        );
        let _ = writeln!(
            out,
            "  for (int step = {}; step > 0; step >>= 1) {{\n    if (lane < step) scratch[lid] += scratch[lid + step];\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }}",
            w / 2
        );
        let _ = writeln!(
            out,
            "  const float {result} = scratch[lid - lane];\n  barrier(CLK_LOCAL_MEM_FENCE);\n#endif"
        );
    };
    held_row(&mut out, spec, (w, "lane"), per_item, load, &combine);
    Ok(out)
}

/// Work-items of an NVIDIA warp, the most a row of a packed group takes.
const WARP_LANES: u32 = 32;

/// One work-item over contiguous rows, in `float16` vectors: the sum, the
/// sum of squared deviations, then the normalized row, each pass a vector
/// loop and a scalar tail.
fn vector_row(out: &mut String, spec: &LayerNormSpec, load: &str) {
    let n = spec.columns;
    let x16 = spec.input.load_lanes("in_row");
    let _ = writeln!(
        out,
        "  float16 sum16 = (float16)(0.0f);\n  float sum = 0.0f;"
    );
    vector_pass(
        out,
        "c",
        n,
        &format!("sum16 += {x16};"),
        &format!("sum += {load};"),
    );
    fold_lanes(out, "sum16", "sum", "({a} + {b})");
    let _ = writeln!(out, "  const float mean = sum * inverse_n;");
    let _ = writeln!(
        out,
        "  float16 squares16 = (float16)(0.0f);\n  float squares = 0.0f;"
    );
    vector_pass(
        out,
        "c",
        n,
        &format!("const float16 d = {x16} - mean; squares16 += d * d;"),
        &format!("const float d = {load} - mean; squares += d * d;"),
    );
    fold_lanes(out, "squares16", "squares", "({a} + {b})");
    let _ = writeln!(
        out,
        "  const float inv_std = rsqrt(squares * inverse_n + {});",
        float_literal(spec.epsilon)
    );
    vector_pass(
        out,
        "c",
        n,
        &spec.output.store_lanes(
            &format!(
                "({x16} - mean) * inv_std * {} + {}",
                spec.scale.load_lanes("scale_at"),
                spec.bias.load_lanes("bias_at")
            ),
            "out_row",
        ),
        &normalize(spec, load),
    );
    let _ = writeln!(out, "}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Buffer;

    fn spec() -> LayerNormSpec {
        let operand = |base: &str| RowOperand {
            buffer: Buffer::f32(base),
            stride: 1,
        };
        LayerNormSpec {
            kernel: RowKernel {
                name: "layer_norm_0".into(),
                parameters: crate::KernelParameters::floats(&[false]),
                comment: "/* test */".into(),
                workgroup_size: 128,
            },
            columns: 768,
            row_offsets:
                "const tcc_index in_row = row * 768, out_row = row * 768, scale_at = 0, bias_at = 0;"
                    .into(),
            input: operand("a0"),
            output: operand("a3"),
            scale: operand("a1"),
            bias: RowOperand {
                buffer: Buffer::f32("a2"),
                stride: 2,
            },
            epsilon: 1e-5,
            group_rows: 1,
            rows: 4,
        }
    }

    #[test]
    fn short_rows_pack_several_to_a_work_group() {
        let packed = LayerNormSpec {
            kernel: RowKernel {
                workgroup_size: 8,
                ..spec().kernel
            },
            columns: 96,
            row_offsets:
                "const tcc_index in_row = row * 96, out_row = row * 96, scale_at = 0, bias_at = 0;"
                    .into(),
            group_rows: 32,
            rows: 1000,
            ..spec()
        };
        let text = layer_norm_kernel(&packed).unwrap();
        assert!(text.contains("reqd_work_group_size(256, 1, 1)"), "{text}");
        assert!(
            text.contains("const tcc_index row_at = (tcc_index)get_group_id(0) * 32 + lid / 8;"),
            "{text}"
        );
        // The last group's rows past 1000 compute on row 999, storing nothing.
        assert!(
            text.contains("const bool row_inside = row_at <= 999;\n  const tcc_index row = row_inside ? row_at : 999;"),
            "{text}"
        );
        assert!(text.contains("float held[12];"), "{text}");
        assert!(text.contains("const tcc_index c = lane + i * 8;"), "{text}");
        // PTX: shuffles within the row's 8 lanes; OpenCL C: a tree per row.
        assert!(
            text.contains("for (int lanes = 4; lanes > 0; lanes >>= 1) partial_sum += tcc_warp_xor(partial_sum, lanes);"),
            "{text}"
        );
        assert!(
            text.contains("if (lane < step) scratch[lid] += scratch[lid + step];"),
            "{text}"
        );
        assert!(
            text.contains("const float squares = scratch[lid - lane];"),
            "{text}"
        );
        assert!(text.contains("if (row_inside && c < 96) {"), "{text}");
        // A row wider than a warp's lanes is refused.
        let wide = LayerNormSpec {
            kernel: RowKernel {
                workgroup_size: 64,
                ..spec().kernel
            },
            group_rows: 4,
            ..spec()
        };
        assert!(layer_norm_kernel(&wide).is_err());
    }

    #[test]
    fn a_short_row_is_read_once_into_registers() {
        let text = layer_norm_kernel(&spec()).unwrap();
        assert!(text.contains("reqd_work_group_size(128, 1, 1)"), "{text}");
        assert!(
            text.contains("const float inverse_n = 1.0f / 768.0f;"),
            "{text}"
        );
        // 768 columns over 128 work-items: six each, loaded once.
        assert!(text.contains("float held[6];"), "{text}");
        assert!(
            text.contains("const tcc_index c = lid + i * 128;"),
            "{text}"
        );
        assert!(
            text.contains("held[i] = c < 768 ? a0[in_row + c] : 0.0f;"),
            "{text}"
        );
        assert_eq!(text.matches("a0[").count(), 1, "{text}");
        assert_eq!(
            text.matches("for (int step = 64; step > 0; step >>= 1)")
                .count(),
            2,
            "{text}"
        );
        assert!(text.contains("const float d = held[i] - mean;"), "{text}");
        assert!(
            text.contains("const float inv_std = rsqrt(squares * inverse_n + 1e-5f);"),
            "{text}"
        );
        assert!(
            text.contains(
                "a3[out_row + c] = (held[i] - mean) * inv_std * a1[scale_at + c] + a2[bias_at + c * 2];"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_long_row_takes_mean_then_centred_variance_then_normalize_passes() {
        let text = layer_norm_kernel(&LayerNormSpec {
            columns: 8192,
            ..spec()
        })
        .unwrap();
        assert!(!text.contains("held"), "{text}");
        assert!(
            text.contains("const float inverse_n = 1.0f / 8192.0f;"),
            "{text}"
        );
        assert_eq!(
            text.matches("for (int step = 64; step > 0; step >>= 1)")
                .count(),
            2,
            "{text}"
        );
        assert!(
            text.contains("const float d = a0[in_row + c] - mean;\n    const float value = d * d;"),
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
    fn one_work_item_uses_float16_on_contiguous_rows() {
        let contiguous = LayerNormSpec {
            kernel: RowKernel {
                workgroup_size: 1,
                ..spec().kernel
            },
            bias: RowOperand {
                buffer: Buffer::f32("a2"),
                stride: 1,
            },
            ..spec()
        };
        let text = layer_norm_kernel(&contiguous).unwrap();
        assert!(text.contains("reqd_work_group_size(1, 1, 1)"), "{text}");
        assert!(!text.contains("scratch"), "{text}");
        assert!(
            text.contains(
                "const float16 d = vload16(0, a0 + in_row + c) - mean; squares16 += d * d;"
            ),
            "{text}"
        );
        assert!(
            text.contains("const float inv_std = rsqrt(squares * inverse_n + 1e-5f);"),
            "{text}"
        );
        assert!(
            text.contains("vload16(0, a1 + scale_at + c) + vload16(0, a2 + bias_at + c), 0, a3 + out_row + c);"),
            "{text}"
        );
        // 768 is 48 whole chunks: no scalar tail.
        assert!(!text.contains("c = 768;"), "{text}");
        // The strided bias of the default spec keeps the scalar lanes.
        let strided = layer_norm_kernel(&LayerNormSpec {
            kernel: RowKernel {
                workgroup_size: 1,
                ..spec().kernel
            },
            ..spec()
        })
        .unwrap();
        assert!(!strided.contains("vload16"), "{strided}");
        assert!(strided.contains("squares_15"), "{strided}");
    }

    #[test]
    fn rejects_bad_configurations() {
        assert!(
            layer_norm_kernel(&LayerNormSpec {
                kernel: RowKernel {
                    workgroup_size: 96,
                    ..spec().kernel
                },
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
