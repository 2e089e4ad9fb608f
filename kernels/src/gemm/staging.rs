//! Staging of the A and B tiles into local memory: each work-item's
//! unrolled rounds of (vectorized) loads, prefetched into registers before
//! the current step's arithmetic and stored after it (for the
//! double-buffered loop, through aligned pointers and without the bounds
//! checks the tiles make redundant).

use std::fmt::Write as _;

use super::GemmSpec;
use crate::{Buffer, Storage};

/// A staged tile's global bound: a constant, or a C expression read at
/// run time (a dynamic M, `GemmSpec::m_extent`), which no tile is known to
/// divide, so its bounds check is always kept.
#[derive(Clone, Copy, Debug)]
pub(super) enum Bound<'a> {
    Static(i64),
    Dynamic(&'a str),
}

impl Bound<'_> {
    /// Whether tiles of `extent` divide the bound (never a dynamic one).
    fn divisible_by(self, extent: u32) -> bool {
        matches!(self, Bound::Static(bound) if bound % extent as i64 == 0)
    }
}

impl std::fmt::Display for Bound<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Static(bound) => write!(f, "{bound}"),
            Bound::Dynamic(expression) => f.write_str(expression),
        }
    }
}

/// One operand's copy of a `outer x inner` block into local memory, each
/// work-item taking every `threads`-th element (or float4 along `inner`).
pub(super) struct TileStaging<'a> {
    pub(super) tile: &'a str,
    /// (tile index, global index, global base, tile extent, global bound).
    pub(super) outer: (&'a str, &'a str, &'a str, u32, Bound<'a>),
    pub(super) inner: (&'a str, &'a str, &'a str, u32, Bound<'a>),
    pub(super) buffer: &'a Buffer,
    /// Element offset of (global outer, global inner) in `buffer`.
    pub(super) address: &'a str,
    /// Statements and value computing the element instead of a load.
    pub(super) element: Option<&'a (String, String)>,
    /// Stored as `tile[inner][outer]` rather than `tile[outer][inner]`.
    pub(super) transposed: bool,
    pub(super) vector: bool,
    /// What the local tile holds: fp32 (`float`), or the bits of IEEE half
    /// or bfloat16 (`ushort`, the FP16/BF16 tensor-core tiles).
    pub(super) tile_storage: Storage,
}

impl TileStaging<'_> {
    /// The same staging into a tile of `storage` elements.
    pub(super) fn holding(self, storage: Storage) -> Self {
        TileStaging {
            tile_storage: storage,
            ..self
        }
    }
}

/// The C expression of fp32 `value` as the bits of a half tile's element
/// (rounded to nearest even by the PTX `cvt`, tensor-core bodies only), or
/// `value` itself for an fp32 tile.
fn tile_element(storage: Storage, value: &str) -> String {
    match storage {
        Storage::F16 => format!("tcc_f16_bits({value})"),
        Storage::BF16 => format!("tcc_bf16_bits({value})"),
        _ => value.to_string(),
    }
}

/// Which operand a tile holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Operand {
    /// `tile_m x tile_k` of A (rows m, columns k).
    A,
    /// `tile_k x tile_n` of B (rows k, columns n).
    B,
}

/// Where a kernel's operands come from: their strided addresses (or
/// offset expressions) and whether each is staged as float4.
pub(super) struct Sources<'a> {
    pub(super) a_address: &'a str,
    pub(super) b_address: &'a str,
    /// A is staged as float4 (a vectorizable operand, or a convolution's
    /// float4 elements).
    pub(super) a_vector: bool,
    pub(super) b_vector: bool,
}

impl<'a> Sources<'a> {
    /// The staging of `operand` into the local tile `tile` (an expression
    /// such as `tile_a[stage]`), `transposed` or not.
    pub(super) fn staging<'t>(
        &self,
        spec: &'a GemmSpec,
        operand: Operand,
        tile: &'t str,
        transposed: bool,
    ) -> TileStaging<'t>
    where
        'a: 't,
    {
        let (c, s) = (spec.config, spec.shape);
        let m_bound = match &spec.m_extent {
            Some(expression) => Bound::Dynamic(expression),
            None => Bound::Static(s.m),
        };
        let m = ("mm", "i", "row0", c.tile_m, m_bound);
        let k = ("kk", "k", "k0", c.tile_k, Bound::Static(s.k));
        let n = ("nn", "j", "col0", c.tile_n, Bound::Static(s.n));
        let (outer, inner, buffer, address, element, vector) = match operand {
            Operand::A => (
                m,
                k,
                &spec.a.buffer,
                self.a_address,
                spec.a_element.as_ref(),
                self.a_vector,
            ),
            Operand::B => (k, n, &spec.b.buffer, self.b_address, None, self.b_vector),
        };
        TileStaging {
            tile,
            outer,
            inner,
            buffer,
            address,
            element,
            transposed,
            vector,
            tile_storage: Storage::F32,
        }
    }
}

/// The unrolled loop over a work-item's staging rounds for `t`: each
/// round `r` handles element (or float4) `tid + r * threads` of the tile.
/// `body` receives the round's tile coordinates already declared, and
/// with `k_base` (the k of the tile's first row or column) the global ones.
fn staging_rounds(
    out: &mut String,
    t: &TileStaging,
    threads: u32,
    k_base: Option<&str>,
    body: &dyn Fn(&mut String),
) {
    let (ol, og, ob, oe, _) = t.outer;
    let (il, ig, ib, ie, _) = t.inner;
    let width = if t.vector { 4 } else { 1 };
    // A fixed number of rounds per work-item, unrolled, so that what
    // depends only on a round's row (an implicit-GEMM row's image and
    // pixel) is computed once, outside the k loop.
    let count = oe * ie / width;
    let rounds = count.div_ceil(threads);
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int r = 0; r < {rounds}; ++r) {{\n      const int l = tid + r * {threads};"
    );
    if !count.is_multiple_of(threads) {
        let _ = writeln!(out, "      if (l >= {count}) break;");
    }
    let q = ie / width;
    let inner_index = if t.vector {
        format!("(l % {q}) * 4")
    } else {
        format!("l % {q}")
    };
    let _ = writeln!(out, "      const int {ol} = l / {q}, {il} = {inner_index};");
    if let Some(k_base) = k_base {
        let base = |b: &str| {
            if b == "k0" {
                k_base.to_string()
            } else {
                b.to_string()
            }
        };
        let _ = writeln!(
            out,
            "      const tcc_index {og} = {} + {ol}, {ig} = {} + {il};",
            base(ob),
            base(ib)
        );
    }
    body(out);
    let _ = writeln!(out, "    }}");
}

/// The number of staging rounds of `t` per work-item.
fn staging_count(t: &TileStaging, threads: u32) -> u32 {
    let width = if t.vector { 4 } else { 1 };
    (t.outer.3 * t.inner.3 / width).div_ceil(threads)
}

/// Declares the registers a work-item fetches its part of `t` into
/// (`float` or `float4` per round).
pub(super) fn declare_staging_registers(
    out: &mut String,
    t: &TileStaging,
    registers: &str,
    threads: u32,
) {
    let ty = if t.vector { "float4" } else { "float" };
    let _ = writeln!(out, "  {ty} {registers}[{}];", staging_count(t, threads));
}

/// Emits the guarded global loads of `t`'s tile at k base `k_base` into
/// `registers` (zero outside the operand): issued before the k step that
/// computes on the previous tile, so their latency hides behind it.
pub(super) fn fetch_tile(
    out: &mut String,
    t: &TileStaging,
    threads: u32,
    registers: &str,
    k_base: &str,
) {
    fetch_tile_with(out, t, threads, registers, k_base, None);
}

/// As [`fetch_tile`], for the double-buffered main loop:
/// - a float buffer's float4s are loaded through a `float4` pointer, not
///   `vload4`, which promises only the element's alignment (LLVM's NVPTX
///   back end splits it into four 32-bit loads); a staged float4 operand
///   (`GemmOperand::vectorizable`) is 16-byte aligned;
/// - bounds that the tiles divide are not checked: `i < M` when `tile_m`
///   divides M (likewise N), and `k < K` when `tile_k` divides K and
///   `k_inside` (the caller knows the k tile starts inside K: the next
///   tile of a step, or the first of an unsplit product). The branches
///   around guarded loads cost ptxas registers.
pub(super) fn fetch_aligned_tile(
    out: &mut String,
    t: &TileStaging,
    threads: u32,
    registers: &str,
    (k_base, k_inside): (&str, bool),
) {
    fetch_tile_with(out, t, threads, registers, k_base, Some(k_inside));
}

/// `aligned`: `None` for [`fetch_tile`], `Some(k_inside)` for
/// [`fetch_aligned_tile`].
fn fetch_tile_with(
    out: &mut String,
    t: &TileStaging,
    threads: u32,
    registers: &str,
    k_base: &str,
    aligned: Option<bool>,
) {
    let (_, og, ob, oe, on) = t.outer;
    let (_, ig, ib, ie, inn) = t.inner;
    let guard = match aligned {
        None => format!("({og} < {on} && {ig} < {inn})"),
        Some(k_inside) => {
            let checked = |global: &str, base: &str, extent: u32, bound: Bound| {
                let divides = bound.divisible_by(extent);
                let inside = divides && (base != "k0" || k_inside);
                (!inside).then(|| format!("{global} < {bound}"))
            };
            let terms: Vec<String> = [checked(og, ob, oe, on), checked(ig, ib, ie, inn)]
                .into_iter()
                .flatten()
                .collect();
            if terms.is_empty() {
                String::new()
            } else {
                format!("({})", terms.join(" && "))
            }
        }
    };
    let aligned = aligned.is_some();
    staging_rounds(out, t, threads, Some(k_base), &|out: &mut String| {
        if let Some((statements, value)) = t.element {
            if guard.is_empty() {
                let _ = writeln!(out, "      {{");
            } else if t.vector {
                let _ = writeln!(out, "      float4 element = (float4)(0.0f);");
                let _ = writeln!(out, "      if {guard} {{");
            } else {
                let _ = writeln!(out, "      float element = 0.0f;");
                let _ = writeln!(out, "      if {guard} {{");
            }
            for line in statements.lines() {
                let _ = writeln!(out, "        {line}");
            }
            if guard.is_empty() {
                let _ = writeln!(out, "        {registers}[r] = {value};\n      }}");
            } else {
                let _ = writeln!(out, "        element = {value};");
                let _ = writeln!(out, "      }}");
                let _ = writeln!(out, "      {registers}[r] = element;");
            }
            return;
        }
        let (load, zero) = if !t.vector {
            (t.buffer.load(t.address), "0.0f")
        } else if aligned && t.buffer.storage == Storage::F32 {
            (
                format!("*(__global const float4*)({} + {})", t.buffer, t.address),
                "(float4)(0.0f)",
            )
        } else {
            (t.buffer.load_vector(4, t.address), "(float4)(0.0f)")
        };
        if guard.is_empty() {
            let _ = writeln!(out, "      {registers}[r] = {load};");
        } else {
            let _ = writeln!(out, "      {registers}[r] = {guard} ? {load} : {zero};");
        }
    });
}

/// Emits the stores of fetched `registers` into `t`'s local tile.
pub(super) fn store_tile(out: &mut String, t: &TileStaging, threads: u32, registers: &str) {
    let (ol, _, _, _, _) = t.outer;
    let (il, _, _, _, _) = t.inner;
    let (row, col) = if t.transposed { (il, ol) } else { (ol, il) };
    let tile = t.tile;
    let half = t.tile_storage != Storage::F32;
    staging_rounds(out, t, threads, None, &|out: &mut String| {
        let element = |value: &str| tile_element(t.tile_storage, value);
        if !t.vector {
            let _ = writeln!(
                out,
                "      {tile}[{row}][{col}] = {};",
                element(&format!("{registers}[r]"))
            );
        } else if half && !t.transposed {
            let lanes: Vec<String> = ["x", "y", "z", "w"]
                .iter()
                .map(|lane| element(&format!("{registers}[r].{lane}")))
                .collect();
            let _ = writeln!(
                out,
                "      vstore4((ushort4)({}), 0, &{tile}[{row}][{col}]);",
                lanes.join(", ")
            );
        } else if half {
            let _ = writeln!(
                out,
                "      {tile}[{row}][{col}] = {}; {tile}[{row} + 1][{col}] = {}; {tile}[{row} + 2][{col}] = {}; {tile}[{row} + 3][{col}] = {};",
                element(&format!("{registers}[r].x")),
                element(&format!("{registers}[r].y")),
                element(&format!("{registers}[r].z")),
                element(&format!("{registers}[r].w"))
            );
        } else if t.transposed {
            let _ = writeln!(
                out,
                "      {tile}[{row}][{col}] = {registers}[r].x; {tile}[{row} + 1][{col}] = {registers}[r].y; {tile}[{row} + 2][{col}] = {registers}[r].z; {tile}[{row} + 3][{col}] = {registers}[r].w;"
            );
        } else {
            let _ = writeln!(
                out,
                "      vstore4({registers}[r], 0, &{tile}[{row}][{col}]);"
            );
        }
    });
}

/// Emits `t`'s tile at k base `k_base` as `cp.async` copies of four
/// elements straight into local memory (PTX form only): 16 bytes of
/// floats (`tcc_cp_async16`), or 8 of halves into a half tile
/// (`tcc_cp_async8`), those outside the operand zero-filled (a source size
/// of 0 reads nothing). `t` must be a 4-element-aligned, untransposed,
/// loaded (not computed) tile whose buffer stores what the tile holds.
pub(super) fn copy_tile_async(out: &mut String, t: &TileStaging, threads: u32, k_base: &str) {
    let (ol, og, _, _, on) = t.outer;
    let (il, ig, _, _, inn) = t.inner;
    let (tile, buffer, address) = (t.tile, t.buffer, t.address);
    let bytes = if t.tile_storage == Storage::F32 {
        16
    } else {
        8
    };
    staging_rounds(out, t, threads, Some(k_base), &|out: &mut String| {
        let _ = writeln!(
            out,
            "      const int inside = {og} < {on} && {ig} < {inn};\n      tcc_cp_async{bytes}(&{tile}[{ol}][{il}], {buffer} + (inside ? {address} : 0), inside ? {bytes} : 0);"
        );
    });
}
