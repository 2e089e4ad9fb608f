//! Pieces shared by the one-row-per-work-group templates (softmax, layer
//! norm, row reductions): the kernel prologue, and passes over a row that
//! either reduce it to one value or write it, in one of two shapes chosen
//! by the work-group size:
//!
//! - `w > 1` work-items (GPUs): each strides over the row by `w` keeping
//!   one partial, and the partials meet in a local-memory tree.
//! - one work-item (CPUs): it walks the row in chunks of [`LANES`]
//!   elements with one partial per lane, written out as that many
//!   independent scalar statements, which LLVM's SLP vectorizer turns into
//!   SIMD operations (PoCL's own vectorizer only works across
//!   work-items); the lanes are combined pairwise at the end. Row
//!   reductions are not reassociated into vectors without this: OpenCL C
//!   forbids reordering float additions by default.

use std::fmt::Write as _;

use crate::{Buffer, KernelParameters};

/// The length of a template's rows: a number, or (issue 33: a row along a
/// symbolic dimension, such as attention's scores over the sequence) a C
/// expression of the kernel's scalar arguments, which the one-work-item
/// passes walk in a plain loop (their chunked lanes need the length).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowLength {
    Static(i64),
    Dynamic(String),
}

impl From<i64> for RowLength {
    fn from(length: i64) -> Self {
        RowLength::Static(length)
    }
}

impl std::fmt::Display for RowLength {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowLength::Static(n) => write!(f, "{n}"),
            RowLength::Dynamic(expression) => write!(f, "({expression})"),
        }
    }
}

/// An operand of a row template: its buffer and the stride between
/// consecutive elements of a row; column `c` of the row starting at
/// element offset `start` is `start + c * stride`.
#[derive(Clone, Debug)]
pub struct RowOperand {
    pub buffer: Buffer,
    pub stride: i64,
}

impl RowOperand {
    fn index(&self, start: &str) -> String {
        if self.stride == 1 {
            format!("{start} + c")
        } else {
            format!("{start} + c * {}", self.stride)
        }
    }

    /// Column `c` of the row starting at `start`.
    pub(crate) fn load(&self, start: &str) -> String {
        self.buffer.load(&self.index(start))
    }

    /// Stores `value` to column `c` of the row starting at `start`.
    pub(crate) fn store(&self, value: &str, start: &str) -> String {
        self.buffer.store(value, &self.index(start))
    }

    /// Columns `c .. c + LANES` of a contiguous row starting at `start`.
    pub(crate) fn load_lanes(&self, start: &str) -> String {
        self.buffer.load_vector(LANES, &format!("{start} + c"))
    }

    /// Stores the `LANES`-wide `value` to columns `c ..` of a contiguous row.
    pub(crate) fn store_lanes(&self, value: &str, start: &str) -> String {
        self.buffer
            .store_vector(LANES, value, &format!("{start} + c"))
    }
}

/// Work-items of an NVIDIA warp: the PTX form of a row reduction combines
/// a warp's partials with `tcc_warp_xor` shuffles.
pub(crate) const WARP: u32 = 32;

/// Independent partials (and elements per step) of a one-work-item pass:
/// one AVX-512 register of floats.
pub(crate) const LANES: u32 = 16;

/// What every row template's kernel has besides its computation.
#[derive(Clone, Debug)]
pub struct RowKernel {
    pub name: String,
    pub parameters: KernelParameters,
    /// A comment placed above the kernel.
    pub comment: String,
    /// Work-items per row (a power of two).
    pub workgroup_size: u32,
}

impl RowKernel {
    /// The work-items per row, checked (`what`: the template, for the error).
    pub(crate) fn workgroup_size(&self, what: &str) -> Result<u32, String> {
        let w = self.workgroup_size;
        if w == 0 || !w.is_power_of_two() {
            return Err(format!("{what} work-group size {w} is not a power of two"));
        }
        Ok(w)
    }
}

/// Writes the kernel header, `row` (the work-group's row), and the
/// per-row `setup` statements; with `w > 1` work-items also the
/// `scratch` array of `w` values of C type `scratch` and `lid`.
pub(crate) fn row_kernel_prologue(
    out: &mut String,
    kernel: &RowKernel,
    setup: &str,
    scratch: &str,
) {
    let RowKernel {
        name,
        parameters,
        comment,
        workgroup_size: w,
    } = kernel;
    let w = *w;
    let _ = writeln!(out, "{comment}");
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({w}, 1, 1)))"
    );
    let _ = writeln!(out, "void {name}({parameters}) {{");
    if w > 1 {
        let _ = writeln!(out, "  __local {scratch} scratch[{w}];");
    }
    let _ = writeln!(out, "  const tcc_index row = (tcc_index)get_group_id(0);");
    if w > 1 {
        let _ = writeln!(out, "  const int lid = (int)get_local_id(0);");
    }
    for line in setup.lines() {
        let _ = writeln!(out, "  {line}");
    }
}

/// One reduction pass over a row of `length` elements.
pub(crate) struct RowReduction<'a> {
    /// The loop index, a `tcc_index` in scope of `element`.
    pub index: &'a str,
    pub length: RowLength,
    /// The C type of the values and partials (`float`, or `int` for
    /// integer sums), the type of the prologue's `scratch`.
    pub ty: &'a str,
    /// C statements declaring `const TY value` (may be several lines).
    pub element: &'a str,
    /// The combiner's identity, a C expression.
    pub identity: &'a str,
    /// The combiner as a C expression of `{a}` and `{b}`.
    pub combine: &'a str,
}

impl RowReduction<'_> {
    fn combined(&self, a: &str, b: &str) -> String {
        self.combine.replace("{a}", a).replace("{b}", b)
    }
}

/// Writes a reduction pass with `w` work-items per row, leaving
/// `const TY {result}`, the row's total, in scope of every work-item.
pub(crate) fn reduce_row(out: &mut String, w: u32, pass: &RowReduction, result: &str) {
    let index = pass.index;
    let ty = pass.ty;
    if w > 1 {
        let _ = writeln!(out, "  {ty} partial_{result} = {};", pass.identity);
        accumulate(
            out,
            pass,
            ("lid", &format!("{index} += {w}")),
            &format!("partial_{result}"),
        );
        combine_partials(out, w, pass, result);
        return;
    }
    let length = match &pass.length {
        RowLength::Static(length) => *length,
        RowLength::Dynamic(_) => {
            // One work-item, one partial: the lanes need the length.
            let partial = format!("{result}_0");
            let _ = writeln!(out, "  {ty} {partial} = {};", pass.identity);
            accumulate(out, pass, ("0", &format!("++{index}")), &partial);
            let _ = writeln!(out, "  const {ty} {result} = {partial};");
            return;
        }
    };
    let lanes = (0..LANES)
        .map(|lane| format!("{result}_{lane}"))
        .collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "  {ty} {};",
        lanes
            .iter()
            .map(|lane| format!("{lane} = {}", pass.identity))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for_each_chunk(out, index, length, &|out, lane| {
        for line in pass.element.lines() {
            let _ = writeln!(out, "      {line}");
        }
        let lane = &lanes[lane as usize];
        let _ = writeln!(out, "      {lane} = {};", pass.combined(lane, "value"));
    });
    // Pairwise: lane l takes lane l + half, halving down to lane 0.
    let mut half = LANES / 2;
    while half > 0 {
        for lane in 0..half {
            let (a, b) = (&lanes[lane as usize], &lanes[(lane + half) as usize]);
            let _ = writeln!(out, "  {a} = {};", pass.combined(a, b));
        }
        half /= 2;
    }
    let _ = writeln!(out, "  const {ty} {result} = {};", lanes[0]);
}

/// With `w > 1` work-items per row, each holding `partial_{result}` of
/// `pass`'s type, combines the partials into `const TY {result}`, the
/// row's total, in scope of every work-item.
pub(crate) fn combine_partials(out: &mut String, w: u32, pass: &RowReduction, result: &str) {
    let ty = pass.ty;
    // NVIDIA's PTX form: the partials of a warp meet through register
    // shuffles and only the warps' totals through local memory (one
    // barrier instead of one per halving: a layer norm over 768
    // columns spent most of its time in the eight barriers of the
    // tree). The OpenCL C form keeps the tree.
    let warps = (w >= WARP && ty == "float").then_some(w / WARP);
    if let Some(warps) = warps {
        let partial = format!("partial_{result}");
        let total = format!("total_{result}");
        let _ = writeln!(out, "#ifdef TCC_PTX");
        let _ = writeln!(
            out,
            "  for (int lanes = {}; lanes > 0; lanes >>= 1) {partial} = {};",
            WARP / 2,
            pass.combined(&partial, &format!("tcc_warp_xor({partial}, lanes)"))
        );
        let _ = writeln!(
            out,
            "  if ((lid & {}) == 0) scratch[lid / {WARP}] = {partial};\n  barrier(CLK_LOCAL_MEM_FENCE);",
            WARP - 1
        );
        let _ = writeln!(out, "  {ty} {total} = scratch[0];");
        if warps > 1 {
            let _ = writeln!(
                out,
                "  for (int warp = 1; warp < {warps}; ++warp) {total} = {};",
                pass.combined(&total, "scratch[warp]")
            );
        }
        let _ = writeln!(
            out,
            "  const {ty} {result} = {total};\n  barrier(CLK_LOCAL_MEM_FENCE);\n#else"
        );
    }
    let _ = writeln!(
        out,
        "  scratch[lid] = partial_{result};\n  barrier(CLK_LOCAL_MEM_FENCE);"
    );
    let _ = writeln!(out, "  for (int step = {}; step > 0; step >>= 1) {{", w / 2);
    let _ = writeln!(
        out,
        "    if (lid < step) scratch[lid] = {};",
        pass.combined("scratch[lid]", "scratch[lid + step]")
    );
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);\n  }}");
    // Every work-item reads the total before anyone reuses scratch.
    let _ = writeln!(
        out,
        "  const {ty} {result} = scratch[0];\n  barrier(CLK_LOCAL_MEM_FENCE);"
    );
    if warps.is_some() {
        let _ = writeln!(out, "#endif");
    }
}

/// Writes `pass`'s loop from `start` by `step` (a C increment of its
/// index), combining each element into `partial`.
fn accumulate(out: &mut String, pass: &RowReduction, (start, step): (&str, &str), partial: &str) {
    let index = pass.index;
    let _ = writeln!(
        out,
        "  for (tcc_index {index} = {start}; {index} < {}; {step}) {{",
        pass.length
    );
    for line in pass.element.lines() {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(
        out,
        "    {partial} = {};\n  }}",
        pass.combined(partial, "value")
    );
}

/// Writes a pass running `statements` for every element of a row (with
/// `index` in scope), spread over `w` work-items; one work-item runs a
/// plain loop, which LLVM's loop vectorizer handles better than lanes
/// written out (measured: a softmax's normalizing pass took 1.5 ms as a
/// loop and 5.4 ms as 16 lanes, 2048x1024 on PoCL, one thread).
pub(crate) fn map_row(out: &mut String, w: u32, index: &str, length: &RowLength, statements: &str) {
    let (start, step) = if w > 1 {
        ("lid".to_string(), w)
    } else {
        ("0".to_string(), 1)
    };
    let step_expression = if step == 1 {
        format!("++{index}")
    } else {
        format!("{index} += {step}")
    };
    let _ = writeln!(
        out,
        "  for (tcc_index {index} = {start}; {index} < {length}; {step_expression}) {{"
    );
    for line in statements.lines() {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "  }}");
}

/// One work-item's pass over a contiguous row with explicit `float16`
/// vectors: `vector` statements for each whole chunk of [`LANES`]
/// elements (with `index` its first element), then `scalar` statements
/// for each element past the last whole chunk (with `index` that element).
pub(crate) fn vector_pass(out: &mut String, index: &str, length: i64, vector: &str, scalar: &str) {
    let chunks = |out: &mut String| {
        let _ = writeln!(out, "    {vector}");
    };
    let rest = |out: &mut String| {
        let _ = writeln!(out, "    {scalar}");
    };
    chunked(out, length, (index, chunks), (index, rest));
}

/// Loops over `0 .. length`: one over its whole chunks of [`LANES`]
/// elements (`chunk` naming a chunk's first element) with the statements
/// `chunks` writes, then one over the elements after them (`element`
/// naming each) with those `rest` writes; a loop with nothing to do is
/// left out.
fn chunked(
    out: &mut String,
    length: i64,
    (chunk, chunks): (&str, impl FnOnce(&mut String)),
    (element, rest): (&str, impl FnOnce(&mut String)),
) {
    let lanes = LANES as i64;
    let whole = length / lanes * lanes;
    if whole > 0 {
        let _ = writeln!(
            out,
            "  for (tcc_index {chunk} = 0; {chunk} < {whole}; {chunk} += {lanes}) {{"
        );
        chunks(out);
        let _ = writeln!(out, "  }}");
    }
    if whole < length {
        let _ = writeln!(
            out,
            "  for (tcc_index {element} = {whole}; {element} < {length}; ++{element}) {{"
        );
        rest(out);
        let _ = writeln!(out, "  }}");
    }
}

/// Folds the [`LANES`] lanes of the `float16` `vector` into the scalar
/// `total` with `combine` (`{a}`, `{b}`), pairwise: lanes l and l + 8,
/// then l and l + 4, ..., so sums round as a tree.
pub(crate) fn fold_lanes(out: &mut String, vector: &str, total: &str, combine: &str) {
    let lane = |l: u32| format!("{vector}.s{l:x}");
    let mut terms: Vec<String> = (0..LANES).map(lane).collect();
    while terms.len() > 1 {
        let half = terms.len() / 2;
        terms = (0..half)
            .map(|l| {
                combine
                    .replace("{a}", &terms[l])
                    .replace("{b}", &terms[l + half])
            })
            .collect();
    }
    let _ = writeln!(
        out,
        "  {total} = {};",
        combine.replace("{a}", total).replace("{b}", &terms[0])
    );
}

/// A one-work-item loop over `0 .. length` in chunks of [`LANES`]: `body`
/// is written once per lane with `index` declared, then a remainder loop
/// runs it as lane 0 for the elements past the last whole chunk.
fn for_each_chunk(out: &mut String, index: &str, length: i64, body: &dyn Fn(&mut String, u32)) {
    let lanes = |out: &mut String| {
        for lane in 0..LANES {
            let _ = writeln!(
                out,
                "    {{\n      const tcc_index {index} = chunk + {lane};"
            );
            body(out, lane);
            let _ = writeln!(out, "    }}");
        }
    };
    let rest = |out: &mut String| {
        let _ = writeln!(out, "    {{\n      const tcc_index {index} = rest;");
        body(out, 0);
        let _ = writeln!(out, "    }}");
    };
    chunked(out, length, ("chunk", lanes), ("rest", rest));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(length: i64) -> RowReduction<'static> {
        RowReduction {
            index: "r",
            length: length.into(),
            ty: "float",
            element: "const float value = a1[row * 40 + r];",
            identity: "0.0f",
            combine: "({a} + {b})",
        }
    }

    #[test]
    fn a_group_reduces_strided_partials_through_local_memory() {
        let mut out = String::new();
        reduce_row(&mut out, 64, &sum(40), "total");
        assert!(
            out.contains("for (tcc_index r = lid; r < 40; r += 64) {"),
            "{out}"
        );
        assert!(
            out.contains("if (lid < step) scratch[lid] = (scratch[lid] + scratch[lid + step]);"),
            "{out}"
        );
        assert!(out.contains("const float total = scratch[0];"), "{out}");
    }

    #[test]
    fn a_row_of_run_time_length_is_walked_to_its_expression() {
        let pass = RowReduction {
            length: RowLength::Dynamic("a0_d1".into()),
            ..sum(0)
        };
        let mut group = String::new();
        reduce_row(&mut group, 64, &pass, "total");
        assert!(
            group.contains("for (tcc_index r = lid; r < (a0_d1); r += 64) {"),
            "{group}"
        );
        let mut single = String::new();
        reduce_row(&mut single, 1, &pass, "total");
        // One partial: the lanes' chunks need the length.
        assert!(
            single.contains("for (tcc_index r = 0; r < (a0_d1); ++r) {"),
            "{single}"
        );
        assert!(single.contains("total_0 = (total_0 + value);"), "{single}");
        assert!(single.contains("const float total = total_0;"), "{single}");
        assert!(!single.contains("total_1"), "{single}");
        let mut map = String::new();
        map_row(&mut map, 1, "c", &pass.length, "a0[c] = 1.0f;");
        assert!(map.contains("c < (a0_d1); ++c"), "{map}");
    }

    #[test]
    fn one_work_item_keeps_a_partial_per_lane() {
        let mut out = String::new();
        reduce_row(&mut out, 1, &sum(40), "total");
        assert!(!out.contains("scratch"), "{out}");
        // 2 chunks of 16 lanes, then 8 elements left for lane 0.
        assert!(
            out.contains("for (tcc_index chunk = 0; chunk < 32; chunk += 16) {"),
            "{out}"
        );
        assert!(out.contains("const tcc_index r = chunk + 15;"), "{out}");
        assert!(out.contains("total_15 = (total_15 + value);"), "{out}");
        assert!(
            out.contains("for (tcc_index rest = 32; rest < 40; ++rest) {"),
            "{out}"
        );
        // Pairwise: 16 -> 8 -> 4 -> 2 -> 1.
        assert!(out.contains("total_7 = (total_7 + total_15);"), "{out}");
        assert!(out.contains("total_0 = (total_0 + total_1);"), "{out}");
        assert!(out.contains("const float total = total_0;"), "{out}");
        // A row shorter than one chunk has no chunk loop.
        let mut short = String::new();
        reduce_row(&mut short, 1, &sum(5), "total");
        assert!(!short.contains("chunk"), "{short}");
        assert!(short.contains("rest = 0; rest < 5;"), "{short}");
    }

    #[test]
    fn map_passes_cover_the_row_in_either_shape() {
        let mut group = String::new();
        map_row(&mut group, 64, "c", &100.into(), "a0[c] = 1.0f;");
        assert!(
            group.contains("for (tcc_index c = lid; c < 100; c += 64) {"),
            "{group}"
        );
        let mut single = String::new();
        map_row(&mut single, 1, "c", &100.into(), "a0[c] = 1.0f;");
        assert!(
            single.contains("for (tcc_index c = 0; c < 100; ++c) {"),
            "{single}"
        );
    }

    #[test]
    fn vector_passes_take_whole_chunks_then_the_rest() {
        let mut out = String::new();
        vector_pass(&mut out, "c", 40, "v += vload16(0, a0 + c);", "s += a0[c];");
        assert!(
            out.contains("for (tcc_index c = 0; c < 32; c += 16) {\n    v += vload16(0, a0 + c);"),
            "{out}"
        );
        assert!(
            out.contains("for (tcc_index c = 32; c < 40; ++c) {\n    s += a0[c];"),
            "{out}"
        );
        let mut folded = String::new();
        fold_lanes(&mut folded, "v", "s", "({a} + {b})");
        // Lanes 0 and 8 meet first; the scalar remainder joins last.
        assert!(
            folded.starts_with("  s = (s + ((((v.s0 + v.s8) + (v.s4 + v.sc))"),
            "{folded}"
        );
        assert!(folded.contains("(v.s7 + v.sf)"), "{folded}");
    }
}
