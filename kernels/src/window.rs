//! Sliding-window kernels over NHWC tensors: depthwise convolution and
//! max/sum pooling (the average pool is a sum pool with a dividing
//! epilogue), with the fill and the fused elementwise epilogue.
//!
//! One work-item computes a block of `columns` neighbouring output
//! columns of one output row, for `vector` neighbouring channels (a
//! `float4` where the channels allow; on a CPU a `float8` or `float16`,
//! one SIMD register of the target). Neighbouring work-items take
//! neighbouring channel vectors of the same pixels, so their loads and
//! stores are coalesced along NHWC's contiguous channels. Per window row
//! the work-item keeps the row's filter taps of its channels in
//! registers, and reads each input column the block touches once, for
//! every output of the block that uses it (a 3x3 stride-1 window over 4
//! columns reads 6 input columns per row instead of 12). The work-item's
//! position comes from its global id by 32-bit divisions by constants,
//! once per work-item; columns past the output's edge are computed on a
//! clamped column and not stored.
//!
//! The compiler supplies what the computation reads as C text: the input
//! element at a window position (a folded pad, producer or transpose
//! included), the filter tap, the accumulator's start and the statements
//! storing one output (the epilogue); the template lays the work out.

use std::fmt::Write as _;

use crate::KernelParameters;

/// How a window kernel divides its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowConfig {
    /// Work-items per work-group (a 1-D NDRange).
    pub workgroup_size: u32,
    /// Neighbouring output columns per work-item.
    pub columns: u32,
    /// Neighbouring channels per work-item: 1, or 4, 8 or 16 (a
    /// `float4`..`float16`: a CPU's SIMD register of channels).
    pub vector: u32,
}

impl WindowConfig {
    /// Checks the configuration against a geometry.
    pub fn validate(&self, geometry: &WindowGeometry) -> Result<(), String> {
        if self.workgroup_size == 0 || self.columns == 0 {
            return Err("window work-groups and column blocks must not be empty".into());
        }
        match self.vector {
            1 => {}
            v @ (4 | 8 | 16)
                if geometry.multiplier == 1 && geometry.channels % i64::from(v) == 0 => {}
            v @ (4 | 8 | 16) => {
                return Err(format!(
                    "a window of {} channels (multiplier {}) cannot run {v} channels per work-item",
                    geometry.channels, geometry.multiplier
                ));
            }
            v => return Err(format!("window vector width {v} is not 1, 4, 8 or 16")),
        }
        if self.work_items(geometry) > i64::from(i32::MAX) {
            return Err("a window kernel's work-items must fit 32-bit indices".into());
        }
        Ok(())
    }

    /// Output column blocks per output row.
    fn column_blocks(&self, geometry: &WindowGeometry) -> i64 {
        let columns = i64::from(self.columns);
        (geometry.out_w + columns - 1) / columns
    }

    /// Channel vectors per output pixel.
    fn channel_vectors(&self, geometry: &WindowGeometry) -> i64 {
        geometry.channels * geometry.multiplier / i64::from(self.vector)
    }

    /// Work-items of a kernel over `geometry`.
    pub fn work_items(&self, geometry: &WindowGeometry) -> i64 {
        geometry.batch
            * geometry.out_h
            * self.column_blocks(geometry)
            * self.channel_vectors(geometry)
    }
}

/// The shape of a window computation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowGeometry {
    pub batch: i64,
    pub out_h: i64,
    pub out_w: i64,
    /// Input channels.
    pub channels: i64,
    /// Outputs per input channel (a depthwise convolution's channel
    /// multiplier; 1 for pooling): output channel `c * multiplier + m`.
    pub multiplier: i64,
    /// Window rows and columns.
    pub window: [i64; 2],
    /// The input column step between neighbouring output columns (the
    /// stride) and between neighbouring window columns (the dilation);
    /// `None` where they are unknown: then each output reads its own
    /// input columns.
    pub column_steps: Option<[i64; 2]>,
}

/// How the window's elements combine into the accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowCombine {
    /// `acc + x * w`: a depthwise convolution.
    MulAdd,
    /// `acc + x`: a sum pooling.
    Add,
    /// `maximum(acc, x)` (NaN propagating): a max pooling.
    Max,
}

/// Everything one instantiation needs. The C text runs with these names
/// in scope (all `int`): `n`, `oy` (output row), `ox` (output column),
/// `c` (first input channel of the work-item), `m` (multiplier index),
/// `ky`, `kx` (window position).
#[derive(Clone, Debug)]
pub struct WindowSpec {
    pub name: String,
    pub parameters: KernelParameters,
    /// A comment placed above the kernel.
    pub comment: String,
    pub config: WindowConfig,
    pub geometry: WindowGeometry,
    pub combine: WindowCombine,
    /// The input element of channels `c ..` at the window position:
    /// C statements, then the expression (`float`, or `floatN` with
    /// `vector` N).
    pub element: (String, String),
    /// The filter tap of channels `c ..` (and `m`) at `ky`, `kx`, a C
    /// expression of the element's type; only for [`WindowCombine::MulAdd`].
    pub tap: Option<String>,
    /// The accumulator's start.
    pub init: WindowInit,
    /// C statements storing the float `acc_value` at output `n`, `oy`,
    /// `ox`, channel `oc`, multiplier index `om` (the epilogue, if any).
    pub store: String,
    /// With `vector` channels per work-item, where the output's channels
    /// `c ..` are one aligned vector: the output stored as that vector
    /// (one store instruction per column instead of one per channel)
    /// instead of by `store`.
    pub vector_store: Option<crate::VectorStore>,
    /// Whether the loop over the window's rows stays a loop (`#pragma
    /// unroll 1`) instead of being unrolled. Unrolled, a 7x7 window's
    /// block is one straight run of 7 x (7 taps + 10 input columns) loads
    /// that ptxas hoists and keeps live together: more than the 255
    /// registers a work-item has, so it spills, and CUDA 13.0's ptxas (the
    /// H200's driver JIT) gave ConvNeXt-T's fp16 14x14 kernel 32 registers
    /// and 2.8 KiB of local memory (557 us; rolled: 62 registers, no
    /// spill, 31 us; docs/benchmarks.md). The target decides
    /// (`TargetConfig::window_rows_rolled` in tcc-compiler).
    pub rolled_rows: bool,
    /// Whether the epilogue's loop over a column's channel lanes (where
    /// they are stored one by one) is vectorized at the vector's width
    /// instead of unrolled. On a CPU the unrolled lanes ran in scalar
    /// registers; the loop is one SIMD pass. A GPU unrolls it, so that
    /// the private array of lanes stays in registers. The target decides
    /// (`TargetConfig::window_lanes_vectorized` in tcc-compiler).
    pub vectorized_lanes: bool,
    /// Where the input element checks a folded padding's bounds: that
    /// check's C name (true inside the input) after `element`'s
    /// statements, which read it as `(tcc_inside | CHECK)`. The template
    /// then evaluates it for every window position of the block first and,
    /// where all lie inside, runs the window with `tcc_inside` true, so
    /// that the checks and the padding's selects fold away there (a
    /// block at the border keeps them).
    pub inside: Option<String>,
}

/// Where a window kernel's accumulators start.
#[derive(Clone, Debug)]
pub enum WindowInit {
    /// A fill value, a scalar C expression.
    Fill(String),
    /// What the output holds at column `ox` (channels `c ..`): a C
    /// expression of the element's type.
    Output(String),
}

/// An input column of a work-item's block and the (output column,
/// window column) pairs reading it; the first pair has the smallest
/// output column.
struct InputColumn {
    readers: Vec<(i64, i64)>,
}

/// The input columns a block of `columns` outputs reads per window row:
/// shared between outputs where the steps are known.
fn input_columns(columns: i64, window_w: i64, steps: Option<[i64; 2]>) -> Vec<InputColumn> {
    let mut inputs: Vec<(i64, InputColumn)> = Vec::new();
    for j in 0..columns {
        for kx in 0..window_w {
            let position = match steps {
                Some([stride, dilation]) => j * stride + kx * dilation,
                None => j * window_w + kx,
            };
            match inputs.iter_mut().find(|(p, _)| *p == position) {
                Some((_, input)) => input.readers.push((j, kx)),
                None => inputs.push((
                    position,
                    InputColumn {
                        readers: vec![(j, kx)],
                    },
                )),
            }
        }
    }
    inputs.sort_by_key(|(position, _)| *position);
    inputs.into_iter().map(|(_, input)| input).collect()
}

/// The NaN-propagating maximum of two `float{lanes}` names (4, 8 or
/// 16): the prelude's `tcc_maximumf4`/`tcc_maximumf16`, and a `float8`
/// written out whole (the prelude's semantics: NaN if either is NaN, the
/// AND of the bits of equal operands, so that -0 < +0; else the larger,
/// by a compare and select). As two `float4` halves it ran every tap's
/// maximum at half the width of an AVX2 register, and `fmax` adds its
/// own NaN handling that the outer select makes redundant: ShuffleNet's
/// 3x3 stride-2 max pool over 112x112x24 took 0.29-0.40 ms so and
/// 0.17-0.23 ms whole (pyopencl on PoCL 3.1, an AVX2 EPYC, in turns).
fn vector_maximum(lanes: i64, a: &str, b: &str) -> String {
    match lanes {
        8 => format!(
            "select(select(select({b}, {a}, {a} > {b}), as_float8(as_uint8({a}) & as_uint8({b})), {a} == {b}), (float8)(NAN), isnan({a}) | isnan({b}))"
        ),
        16 => format!("tcc_maximumf16({a}, {b})"),
        _ => format!("tcc_maximumf4({a}, {b})"),
    }
}

fn indented(out: &mut String, indent: &str, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "{indent}{line}");
    }
}

/// Instantiates the template.
pub fn window_kernel(spec: &WindowSpec) -> Result<String, String> {
    let WindowSpec {
        config, geometry, ..
    } = spec;
    config.validate(geometry)?;
    if (spec.combine == WindowCombine::MulAdd) != spec.tap.is_some() {
        return Err("a depthwise window needs its filter tap, a pooling none".into());
    }
    let w = config.workgroup_size;
    let columns = i64::from(config.columns);
    let vector = i64::from(config.vector);
    let ty = if vector == 1 {
        "float".to_string()
    } else {
        format!("float{vector}")
    };
    let [window_h, window_w] = geometry.window;
    let (out_h, out_w) = (geometry.out_h, geometry.out_w);
    let blocks = config.column_blocks(geometry);
    let vectors = config.channel_vectors(geometry);
    let work_items = config.work_items(geometry);
    let mut out = String::new();
    let _ = writeln!(out, "{}", spec.comment);
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({w}, 1, 1)))"
    );
    let _ = writeln!(out, "void {}({}) {{", spec.name, spec.parameters);
    let _ = writeln!(out, "  const int gid = (int)get_global_id(0);");
    let _ = writeln!(out, "  if (gid >= {work_items}) return;");
    let _ = writeln!(
        out,
        "  /* {vectors} channel vectors of {vector} x {blocks} blocks of {columns} columns x {out_h} rows x {} images */",
        geometry.batch
    );
    let _ = writeln!(out, "  const int q = (gid % {vectors}) * {vector};");
    let _ = writeln!(out, "  const int block = gid / {vectors};");
    let _ = writeln!(out, "  const int ox0 = (block % {blocks}) * {columns};");
    let _ = writeln!(out, "  const int oy = (block / {blocks}) % {out_h};");
    let _ = writeln!(out, "  const int n = block / {};", blocks * out_h);
    if geometry.multiplier == 1 {
        let _ = writeln!(out, "  const int c = q;\n  const int m = 0;");
    } else {
        let multiplier = geometry.multiplier;
        let _ = writeln!(
            out,
            "  const int c = q / {multiplier};\n  const int m = q % {multiplier};"
        );
    }
    for j in 0..columns {
        match &spec.init {
            WindowInit::Fill(value) => {
                let _ = writeln!(out, "  {ty} acc{j} = ({ty})({value});");
            }
            WindowInit::Output(value) => {
                let _ = writeln!(out, "  {ty} acc{j};");
                let _ = writeln!(
                    out,
                    "  {{ const int ox = min(ox0 + {j}, {}); acc{j} = {value}; }}",
                    out_w - 1
                );
            }
        }
    }
    let unroll = if spec.rolled_rows { " 1" } else { "" };
    let inputs = input_columns(columns, window_w, geometry.column_steps);
    // The loop over the window's rows: the taps and input columns
    // combined into the accumulators, or (`check`) only the padding's
    // check of every input column, accumulated into `tcc_all_inside`.
    let window_rows = |check: Option<&str>| -> String {
        let mut out = String::new();
        let _ = writeln!(out, "  #pragma unroll{unroll}");
        let _ = writeln!(out, "  for (int ky = 0; ky < {window_h}; ky++) {{");
        if check.is_none()
            && let Some(tap) = &spec.tap
        {
            for kx in 0..window_w {
                let _ = writeln!(out, "    {ty} w{kx};");
                let _ = writeln!(out, "    {{ const int kx = {kx}; w{kx} = {tap}; }}");
            }
        }
        for input in &inputs {
            let (j, kx) = input.readers[0];
            let _ = writeln!(out, "    {{");
            let _ = writeln!(out, "      const int ox = min(ox0 + {j}, {});", out_w - 1);
            let _ = writeln!(out, "      const int kx = {kx};");
            indented(&mut out, "      ", &spec.element.0);
            if let Some(condition) = check {
                let _ = writeln!(out, "      tcc_all_inside = tcc_all_inside && {condition};");
                let _ = writeln!(out, "    }}");
                continue;
            }
            let _ = writeln!(out, "      const {ty} x = {};", spec.element.1);
            for (j, kx) in &input.readers {
                let update = match spec.combine {
                    WindowCombine::MulAdd => format!("acc{j} + x * w{kx}"),
                    WindowCombine::Add => format!("acc{j} + x"),
                    WindowCombine::Max if vector == 1 => format!("tcc_maximumf(acc{j}, x)"),
                    WindowCombine::Max => vector_maximum(vector, &format!("acc{j}"), "x"),
                };
                let _ = writeln!(out, "      acc{j} = {update};");
            }
            let _ = writeln!(out, "    }}");
        }
        let _ = writeln!(out, "  }}");
        out
    };
    match &spec.inside {
        Some(condition) => {
            let _ = writeln!(
                out,
                "  bool tcc_all_inside = true;\n  {{\n  const bool tcc_inside = false;"
            );
            out.push_str(&window_rows(Some(condition)));
            let rows = window_rows(None);
            let _ = write!(
                out,
                "  }}\n  if (tcc_all_inside) {{\n  const bool tcc_inside = true;\n{rows}  }} else {{\n  const bool tcc_inside = false;\n{rows}  }}\n"
            );
        }
        None => out.push_str(&window_rows(None)),
    }
    for j in 0..columns {
        let guard = if out_w % columns != 0 && j > 0 {
            format!("if (ox0 + {j} < {out_w}) ")
        } else {
            String::new()
        };
        let _ = writeln!(out, "  {guard}{{");
        let _ = writeln!(out, "    const int ox = ox0 + {j};");
        let _ = writeln!(out, "    const int om = m;");
        if vector == 1 {
            let _ = writeln!(out, "    const int oc = c;");
            let _ = writeln!(out, "    const float acc_value = acc{j};");
            indented(&mut out, "    ", &spec.store);
        } else {
            // Stored whole into an aligned array: `vstoreN` is a library
            // call that LLVM splits into 128-bit stores, and a vectorized
            // epilogue's wide load of them misses store-to-load forwarding.
            let _ = writeln!(
                out,
                "    float lanes[{vector}] __attribute__((aligned({})));",
                vector * 4
            );
            let _ = writeln!(out, "    *({ty}*)lanes = acc{j};");
            if spec.vector_store.is_some() {
                let _ = writeln!(out, "    float stored[{vector}];");
            }
            if spec.vectorized_lanes && spec.vector_store.is_none() {
                let _ = writeln!(out, "    #pragma clang loop vectorize_width({vector})");
            } else {
                let _ = writeln!(out, "    #pragma unroll");
            }
            let _ = writeln!(out, "    for (int l = 0; l < {vector}; l++) {{");
            let _ = writeln!(out, "      const int oc = c + l;");
            let _ = writeln!(out, "      const float acc_value = lanes[l];");
            match &spec.vector_store {
                Some(vector_store) => indented(&mut out, "      ", &vector_store.value),
                None => indented(&mut out, "      ", &spec.store),
            }
            let _ = writeln!(out, "    }}");
            if let Some(vector_store) = &spec.vector_store {
                let lanes: Vec<String> = (0..vector).map(|l| format!("stored[{l}]")).collect();
                let _ = writeln!(
                    out,
                    "    const {ty} stored_vector = ({ty})({});",
                    lanes.join(", ")
                );
                indented(&mut out, "    ", &vector_store.store);
            }
        }
        let _ = writeln!(out, "  }}");
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(config: WindowConfig, geometry: WindowGeometry, combine: WindowCombine) -> WindowSpec {
        WindowSpec {
            name: "dw_0".into(),
            parameters: KernelParameters::floats(&[false, false, true]),
            comment: "/* test */".into(),
            config,
            geometry,
            combine,
            element: (
                "const int iy = oy + ky - 1;".into(),
                "vload4(0, a0 + iy * 448 + (ox + kx) * 4 + c)".into(),
            ),
            tap: (combine == WindowCombine::MulAdd)
                .then(|| "vload4(0, a1 + ky * 48 + kx * 16 + c)".into()),
            init: WindowInit::Fill("0.0f".into()),
            store: "a2[((n * 112 + oy) * 112 + ox) * 16 + oc] = acc_value;".into(),
            vector_store: None,
            rolled_rows: false,
            vectorized_lanes: false,
            inside: None,
        }
    }

    const GEOMETRY: WindowGeometry = WindowGeometry {
        batch: 1,
        out_h: 112,
        out_w: 110,
        channels: 16,
        multiplier: 1,
        window: [3, 3],
        column_steps: Some([1, 1]),
    };

    const CONFIG: WindowConfig = WindowConfig {
        workgroup_size: 128,
        columns: 4,
        vector: 4,
    };

    #[test]
    fn a_folded_padding_is_checked_once_per_block() {
        let mut padded = spec(CONFIG, GEOMETRY, WindowCombine::MulAdd);
        padded.element = (
            "const bool inside = (uint)(oy + ky - 1) < 112u && (uint)(ox + kx - 1) < 110u;".into(),
            "((tcc_inside | inside) ? vload4(0, a0 + c) : (float4)(0.0f))".into(),
        );
        padded.inside = Some("inside".into());
        let text = window_kernel(&padded).unwrap();
        // Every input column of every window row checked first...
        assert!(
            text.contains("  bool tcc_all_inside = true;\n  {\n  const bool tcc_inside = false;"),
            "{text}"
        );
        assert_eq!(
            text.matches("tcc_all_inside = tcc_all_inside && inside;")
                .count(),
            6,
            "{text}"
        );
        // ... then the window twice: unchecked where the block lies inside.
        assert!(
            text.contains("  if (tcc_all_inside) {\n  const bool tcc_inside = true;\n  #pragma unroll\n  for (int ky = 0;"),
            "{text}"
        );
        assert!(
            text.contains(
                "  } else {\n  const bool tcc_inside = false;\n  #pragma unroll\n  for (int ky = 0;"
            ),
            "{text}"
        );
        assert_eq!(text.matches(" + x * w").count(), 24, "{text}");
        // Without a check, one window and no flag.
        let text = window_kernel(&spec(CONFIG, GEOMETRY, WindowCombine::MulAdd)).unwrap();
        assert!(!text.contains("tcc_inside"), "{text}");
    }

    #[test]
    fn a_block_reads_each_input_column_once() {
        let text = window_kernel(&spec(CONFIG, GEOMETRY, WindowCombine::MulAdd)).unwrap();
        // 4 columns of a 3-wide window at stride 1: 6 input columns.
        assert_eq!(text.matches("const float4 x = ").count(), 6, "{text}");
        // 12 multiply-adds, the taps loaded once per row.
        assert_eq!(text.matches(" + x * w").count(), 12, "{text}");
        assert_eq!(text.matches("w1 = vload4").count(), 1, "{text}");
        // Work-item position by 32-bit divisions: 4 vectors, 28 blocks.
        assert!(text.contains("const int q = (gid % 4) * 4;"), "{text}");
        assert!(text.contains("const int ox0 = (block % 28) * 4;"), "{text}");
        assert!(text.contains("if (gid >= 12544) return;"), "{text}");
        // 110 columns in blocks of 4: the tail is guarded, reads clamped.
        assert!(text.contains("if (ox0 + 3 < 110) {"), "{text}");
        assert!(text.contains("const int ox = min(ox0 + 2, 109);"), "{text}");
        assert!(text.contains("*(float4*)lanes = acc3;"), "{text}");
        // Unrolled lane by lane unless the target vectorizes the lanes.
        assert!(
            text.contains("    #pragma unroll\n    for (int l = 0; l < 4; l++) {"),
            "{text}"
        );
        assert!(text.contains("reqd_work_group_size(128, 1, 1)"), "{text}");
    }

    #[test]
    fn a_vector_store_stores_each_column_once() {
        let mut spec = spec(CONFIG, GEOMETRY, WindowCombine::MulAdd);
        spec.vector_store = Some(crate::VectorStore {
            value: "const float v = acc_value + 1.0f;\nstored[l] = v;\n".into(),
            store:
                "*(__global float4*)(a2 + ((n * 112 + oy) * 112 + ox) * 16 + c) = stored_vector;"
                    .into(),
        });
        let text = window_kernel(&spec).unwrap();
        // Each lane's epilogue runs on its own, the column is stored once.
        assert_eq!(text.matches("stored[l] = v;").count(), 4, "{text}");
        assert_eq!(
            text.matches(
                "const float4 stored_vector = (float4)(stored[0], stored[1], stored[2], stored[3]);"
            )
            .count(),
            4,
            "{text}"
        );
        assert_eq!(text.matches("= stored_vector;").count(), 4, "{text}");
        // The scalar store is not used.
        assert!(!text.contains("* 16 + oc] = acc_value;"), "{text}");
        // Without it, one store per channel.
        spec.vector_store = None;
        let scalar = window_kernel(&spec).unwrap();
        assert_eq!(
            scalar.matches("* 16 + oc] = acc_value;").count(),
            4,
            "{scalar}"
        );
        assert!(!scalar.contains("stored"), "{scalar}");
    }

    #[test]
    fn rows_unroll_unless_the_target_keeps_them_rolled() {
        let mut spec = spec(CONFIG, GEOMETRY, WindowCombine::MulAdd);
        let unrolled = window_kernel(&spec).unwrap();
        assert!(
            unrolled.contains("  #pragma unroll\n  for (int ky = 0; ky < 3; ky++) {"),
            "{unrolled}"
        );
        spec.rolled_rows = true;
        let rolled = window_kernel(&spec).unwrap();
        assert!(
            rolled.contains("  #pragma unroll 1\n  for (int ky = 0; ky < 3; ky++) {"),
            "{rolled}"
        );
        // Only the row loop: the block's columns and the lanes of its
        // stores are written out either way.
        assert_eq!(rolled.matches("#pragma unroll 1").count(), 1, "{rolled}");
        assert_eq!(
            rolled.replace("#pragma unroll 1", "#pragma unroll"),
            unrolled
        );
    }

    #[test]
    fn strided_and_unknown_steps_share_less() {
        let strided = WindowGeometry {
            column_steps: Some([2, 1]),
            ..GEOMETRY
        };
        let text = window_kernel(&spec(CONFIG, strided, WindowCombine::MulAdd)).unwrap();
        assert_eq!(text.matches("const float4 x = ").count(), 9, "{text}");
        let unknown = WindowGeometry {
            column_steps: None,
            ..GEOMETRY
        };
        let text = window_kernel(&spec(CONFIG, unknown, WindowCombine::MulAdd)).unwrap();
        assert_eq!(text.matches("const float4 x = ").count(), 12, "{text}");
    }

    #[test]
    fn pooling_has_no_taps_and_max_propagates_nan() {
        let config = WindowConfig {
            vector: 1,
            columns: 2,
            ..CONFIG
        };
        let mut spec = spec(config, GEOMETRY, WindowCombine::Max);
        spec.element.1 = "a0[c]".into();
        spec.init = WindowInit::Output("a2[ox * 16 + c]".into());
        let text = window_kernel(&spec).unwrap();
        assert!(!text.contains(" w0"), "{text}");
        assert!(text.contains("acc0 = tcc_maximumf(acc0, x);"), "{text}");
        assert!(
            text.contains("{ const int ox = min(ox0 + 1, 109); acc1 = a2[ox * 16 + c]; }"),
            "{text}"
        );
        assert!(text.contains("const float acc_value = acc1;"), "{text}");
    }

    #[test]
    fn cpu_registers_of_channels() {
        let config = WindowConfig {
            vector: 8,
            ..CONFIG
        };
        let mut eight = spec(config, GEOMETRY, WindowCombine::MulAdd);
        eight.element.1 = "vload8(0, a0 + c)".into();
        eight.tap = Some("vload8(0, a1 + c)".into());
        let text = window_kernel(&eight).unwrap();
        assert_eq!(text.matches("const float8 x = ").count(), 6, "{text}");
        assert!(text.contains("float8 acc3 = (float8)(0.0f);"), "{text}");
        assert!(text.contains("const int q = (gid % 2) * 8;"), "{text}");
        assert!(text.contains("if (gid >= 6272) return;"), "{text}");
        assert!(text.contains("*(float8*)lanes = acc0;"), "{text}");
        // The lanes stored whole into an aligned array (no `vstore8`: its
        // 128-bit pieces stall the vectorized epilogue's wide load), and
        // walked in a loop vectorized at their width.
        assert!(
            text.contains("float lanes[8] __attribute__((aligned(32)));"),
            "{text}"
        );
        assert!(!text.contains("vstore8"), "{text}");
        eight.vectorized_lanes = true;
        let text = window_kernel(&eight).unwrap();
        assert!(
            text.contains(
                "    #pragma clang loop vectorize_width(8)\n    for (int l = 0; l < 8; l++) {"
            ),
            "{text}"
        );
        // A float8 maximum whole, not as two float4 halves; float16 has
        // the prelude's.
        let text = window_kernel(&spec(config, GEOMETRY, WindowCombine::Max)).unwrap();
        assert!(
            text.contains(
                "acc0 = select(select(select(x, acc0, acc0 > x), as_float8(as_uint8(acc0) & as_uint8(x)), acc0 == x), (float8)(NAN), isnan(acc0) | isnan(x));"
            ),
            "{text}"
        );
        assert!(!text.contains(".lo"), "{text}");
        let sixteen = WindowConfig {
            vector: 16,
            ..CONFIG
        };
        let text = window_kernel(&spec(sixteen, GEOMETRY, WindowCombine::Max)).unwrap();
        assert!(text.contains("acc1 = tcc_maximumf16(acc1, x);"), "{text}");
        assert!(text.contains("if (gid >= 3136) return;"), "{text}");
        // 24 channels do not divide into registers of 16.
        let geometry = WindowGeometry {
            channels: 24,
            ..GEOMETRY
        };
        let error = window_kernel(&spec(sixteen, geometry, WindowCombine::Add)).unwrap_err();
        assert!(error.contains("cannot run 16 channels"), "{error}");
        let odd = WindowConfig {
            vector: 2,
            ..CONFIG
        };
        assert!(window_kernel(&spec(odd, GEOMETRY, WindowCombine::Add)).is_err());
    }

    #[test]
    fn channel_multipliers_take_scalar_channels() {
        let geometry = WindowGeometry {
            multiplier: 2,
            ..GEOMETRY
        };
        assert!(window_kernel(&spec(CONFIG, geometry, WindowCombine::MulAdd)).is_err());
        let config = WindowConfig {
            vector: 1,
            ..CONFIG
        };
        let mut spec = spec(config, geometry, WindowCombine::MulAdd);
        spec.element.1 = "a0[c]".into();
        spec.tap = Some("a1[c * 2 + m]".into());
        let text = window_kernel(&spec).unwrap();
        assert!(text.contains("const int c = q / 2;"), "{text}");
        assert!(text.contains("const int m = q % 2;"), "{text}");
        assert!(text.contains("if (gid >= 100352) return;"), "{text}");
    }
}
