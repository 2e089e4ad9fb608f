//! The tensor-core main loop of the GEMM template (`--precision=tf32`,
//! `fp16` and `bf16`, PTX form only): a multi-stage local-memory pipeline
//! fed by `cp.async` and `mma.sync` warps reading their fragments with few,
//! conflict-free local loads.
//!
//! Local tiles, `stages` deep: A as `tile_a[stage][m][k + pad]` (K
//! contiguous, as the fragments read it) and B as `tile_b[stage][k][n +
//! pad]`, of fp32 words for TF32 and of 16-bit halves (`ushort`: IEEE half
//! or bfloat16 bits) for FP16 and BF16. An operand that the tile holds as
//! it is stored (an fp32 buffer for TF32; a buffer stored as that half
//! type, `tcc-narrow-storage` or a half ONNX graph, for FP16/BF16), plain
//! row-major with its contiguous axis 4-element aligned
//! (`GemmOperand::vectorizable`), is copied global -> local by `cp.async`
//! (16 bytes, `.cg`, of four floats; 8 bytes, `.ca`, of four halves),
//! zero-filled outside the operand, with no registers in between; any
//! other (an implicit-GEMM convolution's computed A, a strided operand, an
//! fp32 operand of a half GEMM) is fetched into fp32 registers before the
//! step's arithmetic and stored after it (a half tile rounding it to
//! nearest even: `cvt.rn.f16.f32` / `cvt.rn.bf16.f32`). One barrier per k step: at step `kt` every work-item
//! waits for its copies of tile `kt`, the barrier makes everyone's visible
//! and frees the stage computed at `kt - 1`, which then receives tile
//! `kt + stages - 1`.
//!
//! Fragments (PTX ISA, `mma.m16n8k8` / `m16n8k16`, A row-major, B
//! column-major). TF32: A by `ldmatrix.x4` (four 8x4 fp32 blocks: rows
//! `lane % 16`, k `4 (lane / 16)`), B as single words `B[tig][group]`,
//! `B[tig + 4][group]`; the fp32 bits are rounded to TF32 by adding half a
//! TF32 ulp (`0x1000`: the tensor core ignores the 13 low bits, so this is
//! round-to-nearest, ties away from zero, what `cvt.rna` does, for one
//! integer add). FP16 and BF16 (`m16n8k16`): A as one 32-bit word per
//! half pair `A[row][2 tig ..]` read straight from the tile, B as the two
//! halves `B[2 tig][group]`, `B[2 tig + 1][group]` packed into a word.
//! Paddings put each warp's fragment reads in distinct banks: rows of A 20
//! words apart (TF32, `ldmatrix` rows 16 bytes wide) or 8 halves longer
//! than the k step (16-bit: 12 words for a k step of 16, 20 for 32), rows
//! of B 8 words (TF32) or 4 halves (16-bit) longer than the n tile.
//!
//! Local memory is at most 48 KiB on NVIDIA's OpenCL: a 128x128 tile with
//! a k step of 16 fits two stages of fp32 (37 KiB) and four of halves;
//! smaller tiles take up to four.

use std::fmt::Write as _;

use super::int8::{self, Int8Staging};
use super::staging::{
    Operand, Sources, copy_tile_async, declare_staging_registers, fetch_tile, store_tile,
};
use super::{GemmConfig, GemmSpec};
use crate::Storage;

/// The tensor-core arithmetic of `--precision`: both accumulate in fp32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorCores {
    /// `mma.sync.m16n8k8` on TF32 inputs (fp32 rounded to 10 mantissa bits).
    Tf32,
    /// `mma.sync.m16n8k16` on FP16 inputs (as stored, or rounded to
    /// nearest half).
    Fp16,
    /// `mma.sync.m16n8k16` on BF16 inputs (as stored, or rounded to
    /// nearest bfloat16): sm_80 and newer.
    Bf16,
    /// An int8 GEMM (`tcc-quantize-int8`'s products): A and B hold int8
    /// values, summed exactly into int32 accumulators (`acc` is an
    /// `int`); the PTX body multiplies on `mma.sync.m16n8k32` s8, the
    /// OpenCL C body in integers (`int8`).
    S8,
}

impl TensorCores {
    /// How the kernel's comment names the arithmetic.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TensorCores::Tf32 => "TF32",
            TensorCores::Fp16 => "FP16",
            TensorCores::Bf16 => "BF16",
            TensorCores::S8 => "int8",
        }
    }

    /// The 16-bit storage the local tiles hold (FP16, BF16), if any.
    pub(crate) fn half_storage(self) -> Option<Storage> {
        match self {
            TensorCores::Fp16 => Some(Storage::F16),
            TensorCores::Bf16 => Some(Storage::BF16),
            TensorCores::Tf32 | TensorCores::S8 => None,
        }
    }

    /// The k of one `mma.sync`.
    pub(super) fn mma_k(self) -> u32 {
        match self {
            TensorCores::Tf32 => 8,
            TensorCores::Fp16 | TensorCores::Bf16 => 16,
            TensorCores::S8 => 32,
        }
    }

    /// Elements (words, or halves) each row of the local A and B tiles is
    /// padded by (see the module comment).
    fn pads(self) -> (u32, u32) {
        match self {
            TensorCores::Tf32 => (4, 8),
            TensorCores::Fp16 | TensorCores::Bf16 => (8, 4),
            TensorCores::S8 => (int8::PAD, int8::PAD),
        }
    }
}

/// NVIDIA's OpenCL limit on a kernel's static local memory.
const LOCAL_MEMORY_LIMIT: u32 = 48 * 1024;

/// Deepest pipeline: more stages buy little once copies are in flight for
/// three k steps ahead.
const MAX_STAGES: u32 = 4;

/// The shape of the local tiles of one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pipeline {
    pub(super) stages: u32,
    pad_a: u32,
    pad_b: u32,
}

impl Pipeline {
    /// As many stages of `c`'s tiles as fit the local memory limit (at
    /// most [`MAX_STAGES`]), beside split-K's arrival flag where `c`
    /// splits K; `None` when not even two fit.
    pub(super) fn new(c: &GemmConfig, precision: TensorCores) -> Option<Self> {
        let (pad_a, pad_b) = precision.pads();
        let stage_bytes = match precision {
            TensorCores::S8 => int8::stage_bytes(c),
            TensorCores::Tf32 => {
                4 * (c.tile_m * (c.tile_k + pad_a) + c.tile_k * (c.tile_n + pad_b))
            }
            TensorCores::Fp16 | TensorCores::Bf16 => {
                2 * (c.tile_m * (c.tile_k + pad_a) + c.tile_k * (c.tile_n + pad_b))
            }
        };
        let flag = if c.split_k > 1 { 16 } else { 0 };
        let stages = ((LOCAL_MEMORY_LIMIT - flag) / stage_bytes).min(MAX_STAGES);
        (stages >= 2).then_some(Pipeline {
            stages,
            pad_a,
            pad_b,
        })
    }
}

/// The storage the local tiles of `precision` hold: fp32 words, or its
/// halves.
fn tile_storage(precision: TensorCores) -> Storage {
    precision.half_storage().unwrap_or(Storage::F32)
}

/// Whether `cp.async` copies A: a buffer stored as the tile holds it, read
/// through its strides, 4-element aligned along k.
fn a_async(spec: &GemmSpec, precision: TensorCores) -> bool {
    spec.a.buffer.storage == tile_storage(precision)
        && spec.a_offset.is_none()
        && spec.a_element.is_none()
        && spec.a.vectorizable(spec.shape.k)
        && spec.config.tile_k.is_multiple_of(4)
}

/// Whether `cp.async` copies B: a buffer stored as the tile holds it,
/// staged 4 elements at a time.
fn b_async(spec: &GemmSpec, sources: &Sources, precision: TensorCores) -> bool {
    spec.b.buffer.storage == tile_storage(precision) && sources.b_vector
}

/// Declares the pipeline's local tiles.
pub(super) fn local_tiles(out: &mut String, spec: &GemmSpec, pipeline: Pipeline) {
    let c = spec.config;
    if spec.tensor_cores == Some(TensorCores::S8) {
        return int8::local_tiles(out, &c, Some(pipeline.stages));
    }
    let ty = match spec.tensor_cores.and_then(TensorCores::half_storage) {
        Some(_) => "ushort",
        None => "float",
    };
    let _ = writeln!(
        out,
        "  __local {ty} tile_a[{}][{}][{}] __attribute__((aligned(16)));",
        pipeline.stages,
        c.tile_m,
        c.tile_k + pipeline.pad_a
    );
    let _ = writeln!(
        out,
        "  __local {ty} tile_b[{}][{}][{}] __attribute__((aligned(16)));",
        pipeline.stages,
        c.tile_k,
        c.tile_n + pipeline.pad_b
    );
}

/// How a pipeline's stages are filled: the float operands' `cp.async`
/// copies or register staging (`staging`), or the int8 ones (`int8`).
enum StageFill<'s, 'a> {
    Float(FloatFill<'s, 'a>),
    Int8(Int8Staging<'a>),
}

/// The float operands' staging: each copied by `cp.async` where it may
/// be, else through registers.
struct FloatFill<'s, 'a> {
    spec: &'a GemmSpec,
    sources: &'s Sources<'a>,
    a_async: bool,
    b_async: bool,
    /// What the local tiles hold: fp32, or the halves of FP16/BF16.
    tile_storage: Storage,
}

impl FloatFill<'_, '_> {
    /// A then B: the operand, whether `cp.async` copies it, its tile and
    /// the registers it is fetched into otherwise.
    fn operands(&self) -> [(Operand, bool, &'static str, &'static str); 2] {
        [
            (Operand::A, self.a_async, "tile_a", "fetch_a"),
            (Operand::B, self.b_async, "tile_b", "fetch_b"),
        ]
    }
}

impl StageFill<'_, '_> {
    /// Whether A and B are copied by `cp.async` (else fetched into
    /// registers and stored).
    fn copied(&self) -> (bool, bool) {
        match self {
            StageFill::Float(fill) => (fill.a_async, fill.b_async),
            StageFill::Int8(staging) => (staging.a_async, false),
        }
    }

    /// Declares the registers of the operands staged through them.
    fn declare(&self, out: &mut String, threads: u32) {
        let fill = match self {
            StageFill::Int8(staging) => return staging.declare(out),
            StageFill::Float(fill) => fill,
        };
        for (operand, copied, tile, registers) in fill.operands() {
            if !copied {
                let staging = fill
                    .sources
                    .staging(fill.spec, operand, tile, false)
                    .holding(fill.tile_storage);
                declare_staging_registers(out, &staging, registers, threads);
            }
        }
    }

    /// Copies (or fetches, and with `store` also stores) the k tile at
    /// `k_base` into `stage`.
    fn issue(&self, out: &mut String, threads: u32, stage: &str, k_base: &str, store: bool) {
        let (tile_a, tile_b) = (format!("tile_a[{stage}]"), format!("tile_b[{stage}]"));
        let fill = match self {
            StageFill::Int8(staging) => {
                staging.fetch(out, &tile_a, k_base);
                if store {
                    staging.store(out, &tile_a, &tile_b);
                }
                return;
            }
            StageFill::Float(fill) => fill,
        };
        for (operand, copied, tile, registers) in fill.operands() {
            let tile = format!("{tile}[{stage}]");
            let staging = fill
                .sources
                .staging(fill.spec, operand, &tile, false)
                .holding(fill.tile_storage);
            if copied {
                copy_tile_async(out, &staging, threads, k_base);
            } else {
                fetch_tile(out, &staging, threads, registers, k_base);
                if store {
                    store_tile(out, &staging, threads, registers);
                }
            }
        }
    }

    /// Stores the fetched registers into `stage`.
    fn store(&self, out: &mut String, threads: u32, stage: &str) {
        let (tile_a, tile_b) = (format!("tile_a[{stage}]"), format!("tile_b[{stage}]"));
        let fill = match self {
            StageFill::Int8(staging) => return staging.store(out, &tile_a, &tile_b),
            StageFill::Float(fill) => fill,
        };
        for (operand, copied, tile, registers) in fill.operands() {
            if !copied {
                let tile = format!("{tile}[{stage}]");
                let staging = fill
                    .sources
                    .staging(fill.spec, operand, &tile, false)
                    .holding(fill.tile_storage);
                store_tile(out, &staging, threads, registers);
            }
        }
    }
}

/// The k loop over `[k_begin, k_end)`: a prologue puts `stages - 1` tiles
/// in flight; then per k step wait, barrier, issue the tile `stages - 1`
/// ahead into the stage freed by the barrier, multiply the current one.
pub(super) fn main_loop<'a>(
    out: &mut String,
    spec: &'a GemmSpec,
    (precision, pipeline): (TensorCores, Pipeline),
    (mi, ni): (u32, u32),
    sources: &Sources<'a>,
    (k_begin, k_end): (&str, &str),
) {
    let c = spec.config;
    let threads = c.workgroup_size();
    let stages = pipeline.stages;
    let fill = match precision {
        TensorCores::S8 => StageFill::Int8(Int8Staging::new(
            spec,
            (sources.a_address, sources.b_address),
            true,
        )),
        _ => StageFill::Float(FloatFill {
            spec,
            sources,
            a_async: a_async(spec, precision),
            b_async: b_async(spec, sources, precision),
            tile_storage: tile_storage(precision),
        }),
    };
    let (a_async, b_async) = fill.copied();
    let how = |copied: bool| {
        if copied {
            "by cp.async"
        } else {
            "through registers"
        }
    };
    let _ = writeln!(
        out,
        "  /* {stages}-stage local pipeline: A {}, B {} */",
        how(a_async),
        how(b_async)
    );
    fill.declare(out, threads);
    let _ = writeln!(
        out,
        "  const int k_tiles = (int)(({k_end} - {k_begin} + {}) / {});",
        c.tile_k - 1,
        c.tile_k
    );
    for stage in 0..stages - 1 {
        let _ = writeln!(
            out,
            "  if ({stage} < k_tiles) {{
    const tcc_index k_first = {k_begin} + {};",
            stage * c.tile_k
        );
        fill.issue(out, threads, &stage.to_string(), "k_first", true);
        let _ = writeln!(
            out,
            "  }}
  tcc_cp_async_commit();"
        );
    }
    let _ = writeln!(out, "  for (int kt = 0; kt < k_tiles; ++kt) {{");
    let _ = writeln!(
        out,
        "    TCC_CP_ASYNC_WAIT({});
    barrier(CLK_LOCAL_MEM_FENCE);",
        stages - 2
    );
    let _ = writeln!(
        out,
        "    const int ahead = kt + {}, ahead_stage = ahead % {stages}, stage = kt % {stages};",
        stages - 1
    );
    let _ = writeln!(
        out,
        "    if (ahead < k_tiles) {{
    const tcc_index k_next = {k_begin} + (tcc_index)ahead * {};",
        c.tile_k
    );
    fill.issue(out, threads, "ahead_stage", "k_next", false);
    let _ = writeln!(
        out,
        "    }}
    tcc_cp_async_commit();"
    );
    mma_steps(out, precision, c.tile_k, mi, ni);
    if !a_async || !b_async {
        // The fetched tile goes into the stage no warp reads in this step.
        let _ = writeln!(out, "    if (ahead < k_tiles) {{");
        fill.store(out, threads, "ahead_stage");
        let _ = writeln!(out, "    }}");
    }
    let _ = writeln!(out, "  }}");
}

/// One stage's tensor-core steps: per `mma_k` of k each warp loads its A
/// fragments (`mi` of 16 rows) and B fragments (`ni` of 8 columns) from
/// `tile_a[stage]`, `tile_b[stage]` and issues `mi * ni` `mma.sync`s into
/// `acc` (c0, c1: row group, columns 2 tig, 2 tig + 1; c2, c3: row group + 8).
fn mma_steps(out: &mut String, precision: TensorCores, tile_k: u32, mi: u32, ni: u32) {
    if precision == TensorCores::S8 {
        return int8::mma_steps(out, tile_k, mi, ni);
    }
    let step = precision.mma_k();
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int ks = 0; ks < {tile_k}; ks += {step}) {{\n      uint fa[{mi}][4], fb[{ni}][2];"
    );
    match precision {
        TensorCores::Tf32 => {
            let _ = writeln!(
                out,
                "      #pragma unroll\n      for (int m = 0; m < {mi}; ++m) {{\n        TCC_LDMATRIX_X4(fa[m][0], fa[m][1], fa[m][2], fa[m][3], &tile_a[stage][warp_row + m * 16 + lane % 16][ks + (lane / 16) * 4]);\n        fa[m][0] += 0x1000u; fa[m][1] += 0x1000u; fa[m][2] += 0x1000u; fa[m][3] += 0x1000u;\n      }}"
            );
            let _ = writeln!(
                out,
                "      #pragma unroll\n      for (int n = 0; n < {ni}; ++n) {{\n        const int col = warp_col + n * 8 + group;\n        fb[n][0] = as_uint(tile_b[stage][ks + tig][col]) + 0x1000u;\n        fb[n][1] = as_uint(tile_b[stage][ks + tig + 4][col]) + 0x1000u;\n      }}"
            );
        }
        TensorCores::Fp16 | TensorCores::Bf16 | TensorCores::S8 => {
            // The tiles hold the halves: an A pair along k is one aligned
            // word; a B pair is two rows of one column.
            let _ = writeln!(
                out,
                "      #pragma unroll\n      for (int m = 0; m < {mi}; ++m) {{\n        const int r = warp_row + m * 16 + group;\n        fa[m][0] = *(__local const uint*)&tile_a[stage][r][ks + 2 * tig]; fa[m][1] = *(__local const uint*)&tile_a[stage][r + 8][ks + 2 * tig];\n        fa[m][2] = *(__local const uint*)&tile_a[stage][r][ks + 2 * tig + 8]; fa[m][3] = *(__local const uint*)&tile_a[stage][r + 8][ks + 2 * tig + 8];\n      }}"
            );
            let _ = writeln!(
                out,
                "      #pragma unroll\n      for (int n = 0; n < {ni}; ++n) {{\n        const int col = warp_col + n * 8 + group;\n        fb[n][0] = (uint)tile_b[stage][ks + 2 * tig][col] | ((uint)tile_b[stage][ks + 2 * tig + 1][col] << 16);\n        fb[n][1] = (uint)tile_b[stage][ks + 2 * tig + 8][col] | ((uint)tile_b[stage][ks + 2 * tig + 9][col] << 16);\n      }}"
            );
        }
    }
    let mma = match precision {
        TensorCores::Tf32 => "TCC_MMA_TF32",
        TensorCores::Fp16 | TensorCores::S8 => "TCC_MMA_F16",
        TensorCores::Bf16 => "TCC_MMA_BF16",
    };
    let _ = writeln!(
        out,
        "      #pragma unroll\n      for (int m = 0; m < {mi}; ++m)\n        #pragma unroll\n        for (int n = 0; n < {ni}; ++n)\n          {mma}(acc[2 * m][2 * n], acc[2 * m][2 * n + 1], acc[2 * m + 1][2 * n], acc[2 * m + 1][2 * n + 1], fa[m][0], fa[m][1], fa[m][2], fa[m][3], fb[n][0], fb[n][1]);\n    }}"
    );
}
