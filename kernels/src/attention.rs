//! Attention in one kernel (flash attention): `softmax(scale * Q·Kᵀ +
//! mask) · V` for every batch, head and query row without writing the
//! scores anywhere.
//!
//! One work-group of `block_q` work-items takes `block_q` query rows of one
//! (batch, head); each work-item owns one row: its query vector and its
//! output accumulator stay in registers (private arrays of the head
//! dimension, which is a compile-time constant, so that the loops over it
//! unroll). The keys are walked in tiles of `block_k` rows of K and V,
//! which the work-group stages in local memory (coalesced loads; every
//! work-item then reads the same element, a broadcast). Per tile each
//! work-item computes its scores in chunks of at most [`CHUNK`] keys (exact
//! fp32 `fma` dot products, then the scale and the additive mask in the
//! order the unfused graph applies them), and updates an online softmax: the
//! running maximum `m`, the running sum `l` of `exp(s - m)`, and the
//! accumulator rescaled by `exp(m_old - m_new)` whenever the maximum grows.
//! The output is `acc * (1 / l)`.
//!
//! Keys past the sequence (the last tile's tail) and, with `causal`, keys
//! past the row (`j > i`) count as `-inf` scores, which is what the
//! composite's decomposition adds; with `causal`, tiles wholly above the
//! work-group's last row are not visited at all. A row whose every score
//! is `-inf` (a padding mask that leaves a query no key) is 0, as
//! `tcc.attention` defines it (the NaN guard of torch's
//! `scaled_dot_product_attention` export); where the maximum is still `-inf` the update
//! subtracts 0 instead, so that such keys add nothing (rather than NaN) to
//! a row that later finds a finite score.

use std::fmt::Write as _;

use crate::{Address, Buffer, KernelParameters, TensorCores};

/// Most keys whose scores a work-item keeps in registers at once.
pub const CHUNK: u32 = 16;

/// One operand: its buffer and the element offset and strides of its four
/// dimensions (`[batch, heads, rows, columns]`; a broadcast dimension of
/// the mask has stride 0).
#[derive(Clone, Debug)]
pub struct AttentionOperand {
    pub buffer: Buffer,
    pub offset: i64,
    pub strides: [i64; 4],
}

impl AttentionOperand {
    fn address(&self, indices: [&str; 4]) -> String {
        Address::new(self.offset, self.strides.to_vec()).at(&indices[..])
    }
}

/// The shapes of one attention: query `[batch, heads, q_len, head_dim]`,
/// key and value `[batch, kv_heads, kv_len, head_dim]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionShape {
    pub batch: i64,
    pub heads: i64,
    pub kv_heads: i64,
    pub q_len: i64,
    pub kv_len: i64,
    pub head_dim: i64,
}

/// Everything one instantiation needs.
#[derive(Clone, Debug)]
pub struct AttentionSpec {
    pub name: String,
    pub parameters: KernelParameters,
    /// A comment placed above the kernel.
    pub comment: String,
    pub shape: AttentionShape,
    pub scale: f32,
    pub causal: bool,
    /// Query rows per work-group (one per work-item).
    pub block_q: u32,
    /// Keys per tile of K and V in local memory.
    pub block_k: u32,
    pub query: AttentionOperand,
    pub key: AttentionOperand,
    pub value: AttentionOperand,
    /// Added to the scaled scores; broadcast dimensions have stride 0.
    pub mask: Option<AttentionOperand>,
    pub output: AttentionOperand,
    /// `Fp16` or `Bf16` (`--precision`): the PTX form multiplies on
    /// `mma.sync.m16n8k16` tensor cores (see [`tensor_core_body`]), the
    /// OpenCL C form keeps the exact fp32 body. `None` (and any other
    /// arithmetic): the fp32 body only.
    pub tensor_cores: Option<TensorCores>,
    /// The CPU form ([`vector_body`]): one work-item per work-group takes
    /// the group's `block_q` query rows in explicit vectors (PoCL runs a
    /// work-group as a loop over its work-items and vectorizes that loop
    /// only when it holds no inner loop, which the key loop always is).
    pub single_item: bool,
    /// Work-items per query row above 1: the key-parallel form
    /// ([`key_lanes_body`]) for a few query rows (a decode step), each
    /// work-item walking every `key_lanes`-th key.
    pub key_lanes: u32,
}

/// The launch of an attention kernel: (work-groups, work-items per group)
/// along x (query blocks) and y (batch times heads); the work-items as
/// [`attention_threads`] says.
pub fn attention_launch(
    shape: &AttentionShape,
    (block_q, block_k, key_lanes): (u32, u32, u32),
    tensor_cores: Option<TensorCores>,
    single_item: bool,
) -> ([i64; 3], [i64; 3]) {
    let threads = attention_threads(
        (block_q, block_k, key_lanes),
        shape.head_dim,
        tensor_cores,
        single_item,
    );
    let block_q = i64::from(block_q.max(1));
    (
        [
            (shape.q_len + block_q - 1) / block_q,
            shape.batch * shape.heads,
            1,
        ],
        [i64::from(threads), 1, 1],
    )
}

/// A C float literal that reads back as exactly `value`.
fn float_literal(value: f32) -> String {
    let text = format!("{value:?}");
    if text.contains(['.', 'e', 'E']) {
        format!("{text}f")
    } else {
        format!("{text}.0f")
    }
}

impl AttentionSpec {
    /// Work-items per work-group (see [`attention_threads`]).
    pub fn threads(&self) -> u32 {
        attention_threads(
            (self.block_q, self.block_k, self.key_lanes),
            self.shape.head_dim,
            self.tensor_cores,
            self.single_item,
        )
    }

    fn check(&self) -> Result<(), String> {
        let s = &self.shape;
        if [s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim]
            .iter()
            .any(|d| *d < 1)
        {
            return Err(format!("attention of an empty shape {s:?}"));
        }
        if s.heads % s.kv_heads != 0 {
            return Err(format!(
                "attention with {} query heads over {} key/value heads",
                s.heads, s.kv_heads
            ));
        }
        if self.block_q == 0 || self.block_k == 0 {
            return Err("attention blocks must be positive".into());
        }
        if self.block_k > CHUNK && !self.block_k.is_multiple_of(CHUNK) {
            return Err(format!(
                "attention key tiles of {} are not whole chunks of {CHUNK}",
                self.block_k
            ));
        }
        if !self.scale.is_finite() {
            return Err(format!("attention scale {} is not finite", self.scale));
        }
        if self.key_lanes > 1 {
            let bytes = key_lanes_local_bytes(self.block_q, self.key_lanes, s.head_dim);
            if self.single_item || bytes > 32 * 1024 || self.block_q * self.key_lanes > 1024 {
                return Err(format!(
                    "attention key lanes: {} rows of {} lanes take {bytes} bytes of local memory and {} work-items (at most 32768 and 1024, on a GPU)",
                    self.block_q,
                    self.key_lanes,
                    self.block_q * self.key_lanes
                ));
            }
            return Ok(());
        }
        // Two tiles of block_k x head_dim floats in local memory: stay
        // within the 32 KiB every OpenCL GPU offers.
        let bytes = 2 * i64::from(self.block_k) * s.head_dim * 4;
        if bytes > 32 * 1024 {
            return Err(format!(
                "attention tiles of {} keys x {} take {bytes} bytes of local memory (at most 32768)",
                self.block_k, s.head_dim
            ));
        }
        Ok(())
    }
}

/// Instantiates the template: the fp32 body, and with `tensor_cores`
/// (when the shape suits them) the tensor-core body under `#ifdef
/// TCC_PTX` in front of it.
pub fn attention_kernel(spec: &AttentionSpec) -> Result<String, String> {
    spec.check()?;
    let mut out = String::new();
    let _ = writeln!(out, "{}", spec.comment);
    if spec.single_item {
        let _ = writeln!(
            out,
            "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))\nvoid {}({}) {{\n{}}}",
            spec.name,
            spec.parameters,
            vector_body(spec)
        );
        return Ok(out);
    }
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({}, 1, 1)))\nvoid {}({}) {{",
        spec.threads(),
        spec.name,
        spec.parameters
    );
    if spec.key_lanes > 1 {
        let _ = writeln!(out, "{}}}", key_lanes_body(spec));
        return Ok(out);
    }
    let fp32 = fp32_body(spec);
    match spec.tensor_cores.filter(|_| tensor_cores_fit(spec)) {
        Some(arithmetic) => {
            let _ = write!(
                out,
                "#ifdef TCC_PTX\n{}#else\n{fp32}#endif\n}}\n",
                tensor_core_body(spec, arithmetic)
            );
        }
        None => {
            let _ = writeln!(out, "{fp32}}}");
        }
    }
    Ok(out)
}

/// log2(e) as the tensor-core body's float literal: its softmax takes
/// `exp(x - m)` as `2^(x log2(e) - m log2(e))`, one fused multiply-add and
/// the hardware's `ex2.approx` (about 2 ulp; `P` is then rounded to 16
/// bits), as FlashAttention does.
const LOG2E: &str = "1.44269504f";

/// Rows of queries one warp of the tensor-core body takes by default (one
/// m16 tile: its accumulators, 32 fp32 registers a work-item at a head
/// dimension of 64, leave room for the scores).
const WARP_ROWS: u32 = 16;

/// Rows of queries one warp takes in work-groups of a multiple of
/// [`WIDE_WARP_BLOCK`] rows at a head dimension of at most
/// [`WIDE_WARP_MAX_HEAD_DIM`]: two m16 tiles, which share every K and V
/// fragment a warp loads from local memory (half the local-memory reads
/// per multiply-add of 16-row warps; FlashAttention-2's 128-row tiles of
/// four warps for a head dimension of 64 do the same).
const WIDE_WARP_ROWS: u32 = 32;
const WIDE_WARP_BLOCK: u32 = 128;
/// Past this head dimension two m16 tiles' accumulators and query
/// fragments (2 x (D/2 + D/4) registers a work-item) leave too few
/// registers for the scores.
const WIDE_WARP_MAX_HEAD_DIM: i64 = 64;

/// Query rows per warp of the tensor-core body for work-groups of
/// `block_q` rows at a head dimension of `head_dim`.
pub fn warp_rows(block_q: u32, head_dim: i64) -> u32 {
    if block_q.is_multiple_of(WIDE_WARP_BLOCK) && head_dim <= WIDE_WARP_MAX_HEAD_DIM {
        WIDE_WARP_ROWS
    } else {
        WARP_ROWS
    }
}

/// Whether the tensor-core body applies to `block_q` query rows, key
/// tiles of `block_k` and a head dimension of `head_dim` multiplied as
/// `tensor_cores`: FP16 or BF16, whole warps of [`warp_rows`] rows, key
/// tiles and the head dimension in steps of 16 (the `k` of
/// `m16n8k16`), and its half tiles within 48 KiB.
pub fn tensor_cores_take(
    block_q: u32,
    block_k: u32,
    head_dim: i64,
    tensor_cores: Option<TensorCores>,
) -> bool {
    matches!(tensor_cores, Some(TensorCores::Fp16 | TensorCores::Bf16))
        && block_q.is_multiple_of(WARP_ROWS)
        && block_k.is_multiple_of(16)
        && head_dim % 16 == 0
        && local_bytes(block_q, block_k, head_dim, 1) <= 48 * 1024
}

/// Work-items per work-group: one (the CPU form), `key_lanes` per query
/// row in the key-parallel form, a warp per [`warp_rows`] query rows
/// where the tensor-core body applies (the portable body, its fallback,
/// then leaves the work-items past `block_q` to the staging), else one
/// per query row.
pub fn attention_threads(
    (block_q, block_k, key_lanes): (u32, u32, u32),
    head_dim: i64,
    tensor_cores: Option<TensorCores>,
    single_item: bool,
) -> u32 {
    if single_item {
        1
    } else if key_lanes > 1 {
        block_q * key_lanes
    } else if tensor_cores_take(block_q, block_k, head_dim, tensor_cores) {
        block_q / warp_rows(block_q, head_dim) * 32
    } else {
        block_q
    }
}

/// Whether the tensor-core body applies to `spec` (see [`tensor_cores_take`]).
pub fn tensor_cores_fit(spec: &AttentionSpec) -> bool {
    tensor_cores_take(
        spec.block_q,
        spec.block_k,
        spec.shape.head_dim,
        spec.tensor_cores,
    )
}

/// Halves of the tensor-core body's one local tile: `stages` buffers of
/// the K and V tiles (`d + 8` halves per row), which hold the Q tile
/// before the key loop (its fragments then live in registers), so at
/// least `block_q` rows.
fn tile_halves(block_q: u32, block_k: u32, d: i64, stages: i64) -> i64 {
    let (bq, bk) = (i64::from(block_q), i64::from(block_k));
    (2 * stages * bk).max(bq) * (d + 8)
}

/// The tensor-core body's local memory with `stages` buffers of the key
/// tiles: the one tile of [`tile_halves`] and the mask tile.
fn local_bytes(block_q: u32, block_k: u32, d: i64, stages: i64) -> i64 {
    2 * tile_halves(block_q, block_k, d, stages) + 4 * stages * i64::from(block_k)
}

/// Whether the tensor-core body double-buffers its key tiles: K and V
/// already hold the tensor cores' half type in rows of whole 16-byte
/// octets (so that `cp.async` copies them with no registers in between,
/// zero-filling the keys past the sequence), and two buffers of each fit
/// in 48 KiB (head dimension 64 with 64-key tiles: 37 KiB).
fn double_buffered(spec: &AttentionSpec, half_storage: Option<crate::Storage>) -> bool {
    let d = spec.shape.head_dim;
    [&spec.key, &spec.value]
        .iter()
        .all(|operand| Some(operand.buffer.storage) == half_storage && octet_aligned(operand, d))
        && local_bytes(spec.block_q, spec.block_k, d, 2) <= 48 * 1024
}

/// The tensor-core body (PTX only; FA2's register layout), a warp per
/// [`warp_rows`] query rows (one or two m16 tiles). The work-group stages
/// its `block_q` query rows once as 16-bit halves in the local tile that
/// later holds K and V, and each warp keeps its rows' Q fragments in
/// registers for the whole key loop. Each K and V tile is staged as
/// halves: where K and V already hold that half type in 16-byte rows
/// (`--storage` intermediates, half graphs: [`double_buffered`]) by
/// `cp.async` into two buffers, the next tile's copies in flight while
/// the warps compute on this one, one barrier a tile; else through
/// registers (rounded to nearest even from the stored floats, or copied
/// 16 bytes a load) into one buffer, both loads in flight a step
/// (BERT-base's attention at batch 32 went from 68.6 to 50.8 us a layer,
/// bf16 on an H200, when half buffers were first copied as they are). V
/// stays row-major; its `·V` B fragments `ldmatrix.trans` reads (two n8
/// tiles a load). K fragments are 32-bit local loads (`ldmatrix` for
/// them measured slower in the causal cases: seq 128 fp16 84-89 against
/// 57-61 us, `scripts/bench/attention-device.py` shapes); with two m16
/// tiles a warp, each K and V fragment serves both. A mask that is the
/// same for every query row (`[batch, 1, 1, keys]`) is staged per key
/// tile. Rows are padded by 8 halves so that a warp's fragment loads fall
/// in distinct banks. Per key tile a warp computes `S = Q·Kᵀ` by
/// `mma.sync.m16n8k16` into fp32 accumulators (a thread holds rows `g`
/// and `g + 8` of each m16 tile, columns `2 t .. 2 t + 1` of each n8
/// block), the scale, mask and causal/sequence bounds as in the fp32 body
/// (a tile whose keys all exist and, with `causal`, all precede the m16
/// tile's rows skips the bounds), the row maximum over the four threads
/// of a row (`shfl.bfly`), the online-softmax rescale with `exp` as
/// `2^(x log2 e - m log2 e)` on the hardware's `ex2.approx` ([`LOG2E`]),
/// then `P` rounded to halves straight from the accumulator registers
/// (their layout is the A fragment's) and `O += P·V` on the tensor cores.
/// The row sums are kept per thread in fp32 and summed over the quad at
/// the end; a row without any key stores 0.
fn tensor_core_body(spec: &AttentionSpec, arithmetic: TensorCores) -> String {
    let s = spec.shape;
    let (bq, bk, d) = (spec.block_q, spec.block_k, s.head_dim);
    let group = s.heads / s.kv_heads;
    let (half_bits, pack, mma) = match arithmetic {
        TensorCores::Bf16 => ("tcc_bf16_bits", "tcc_bf16x2", "TCC_MMA_BF16"),
        _ => ("tcc_f16_bits", "tcc_f16x2", "TCC_MMA_F16"),
    };
    let qk_row = d + 8;
    let n_tiles = bk / 8;
    let d_tiles = d / 8;
    let k_steps_d = d / 16;
    let half_storage = arithmetic.half_storage();
    let threads = spec.threads();
    let rows = warp_rows(bq, d);
    let m_tiles = rows / 16;
    let pipelined = double_buffered(spec, half_storage);
    let stages: i64 = if pipelined { 2 } else { 1 };
    let tile_halves_per_stage = i64::from(bk) * qk_row;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  /* Tensor cores ({name}): mma.sync.m16n8k16, fp32 accumulators, {m_tiles} m16 tile(s) a warp. */\n  \
         __local ushort kv_tile[{kv_tile}] __attribute__((aligned(16)));\n  \
         __local ushort* const q_half = kv_tile;\n  \
         __local ushort* const k_half = kv_tile;\n  \
         __local ushort* const v_half = kv_tile + {v_offset};\n  \
         const int lid = (int)get_local_id(0);\n  \
         const int warp = lid / 32, lane = lid % 32, g = lane / 4, t = lane % 4;\n  \
         const tcc_index q0 = (tcc_index)get_group_id(0) * {bq};\n  \
         const tcc_index bh = (tcc_index)get_group_id(1);\n  \
         const tcc_index b = bh / {heads}, h = bh % {heads};\n  \
         const tcc_index hk = h / {group};",
        name = arithmetic.name(),
        kv_tile = tile_halves(bq, bk, d, stages),
        v_offset = stages * tile_halves_per_stage,
        heads = s.heads,
    );
    // Q once, rows past the sequence as zeros.
    let raw = |operand: &AttentionOperand| {
        Some(operand.buffer.storage) == half_storage && octet_aligned(operand, d)
    };
    let q_at = spec.query.address(["b", "h", "i", "dd"]);
    if raw(&spec.query) {
        let _ = writeln!(
            out,
            "  for (int e = lid; e < {octets}; e += {threads}) {{\n    \
             const int r = (8 * e) / {d}, dd = (8 * e) % {d};\n    \
             const tcc_index i = q0 + r;\n    \
             *(__local uint4*)&q_half[r * {qk_row} + dd] = i < {q_len} ? {} : (uint4)(0u);\n  }}",
            load_octet(&spec.query.buffer, &q_at),
            octets = i64::from(bq) * d / 8,
            q_len = s.q_len,
        );
    } else {
        let _ = writeln!(
            out,
            "  for (int e = lid; e < {q_elems}; e += {threads}) {{\n    \
             const int r = e / {d}, dd = e % {d};\n    \
             const tcc_index i = q0 + r;\n    \
             q_half[r * {qk_row} + dd] = {half_bits}(i < {q_len} ? {} : 0.0f);\n  }}",
            spec.query.buffer.load(&q_at),
            q_elems = i64::from(bq) * d,
            q_len = s.q_len,
        );
    }
    // The warp's Q fragments into registers; the tile is then free for K
    // and V.
    let _ = writeln!(
        out,
        "  barrier(CLK_LOCAL_MEM_FENCE);\n  \
         uint qf[{m_tiles}][{k_steps_d}][4];\n  \
         #pragma unroll\n  for (int mt = 0; mt < {m_tiles}; ++mt) {{\n    \
         const int r0 = warp * {rows} + mt * 16;\n    \
         #pragma unroll\n    for (int ks = 0; ks < {k_steps_d}; ++ks) {{\n      \
         qf[mt][ks][0] = *(__local const uint*)&q_half[(r0 + g) * {qk_row} + 16 * ks + 2 * t];\n      \
         qf[mt][ks][1] = *(__local const uint*)&q_half[(r0 + g + 8) * {qk_row} + 16 * ks + 2 * t];\n      \
         qf[mt][ks][2] = *(__local const uint*)&q_half[(r0 + g) * {qk_row} + 16 * ks + 8 + 2 * t];\n      \
         qf[mt][ks][3] = *(__local const uint*)&q_half[(r0 + g + 8) * {qk_row} + 16 * ks + 8 + 2 * t];\n    }}\n  }}\n  \
         barrier(CLK_LOCAL_MEM_FENCE);"
    );
    let _ = writeln!(
        out,
        "  float o[{m_tiles}][{d_tiles}][4];\n  float m[{m_tiles}][2], l[{m_tiles}][2];\n  \
         #pragma unroll\n  for (int mt = 0; mt < {m_tiles}; ++mt) {{\n    \
         m[mt][0] = m[mt][1] = -INFINITY;\n    l[mt][0] = l[mt][1] = 0.0f;\n    \
         #pragma unroll\n    for (int dn = 0; dn < {d_tiles}; ++dn)\n      \
         o[mt][dn][0] = o[mt][dn][1] = o[mt][dn][2] = o[mt][dn][3] = 0.0f;\n  }}"
    );
    if spec.causal {
        let _ = writeln!(
            out,
            "  const tcc_index kv_end = min((tcc_index){kv}, q0 + {bq});",
            kv = s.kv_len
        );
    } else {
        let _ = writeln!(out, "  const tcc_index kv_end = {};", s.kv_len);
    }
    // A mask that is the same for every query row (a padding mask,
    // `[batch, 1, 1, keys]`) is staged per key tile beside K and V.
    let row_mask = spec
        .mask
        .as_ref()
        .filter(|mask| mask.strides[2] == 0)
        .map(|mask| mask.address(["b", "h", "0", "j"]));
    if row_mask.is_some() {
        let _ = writeln!(
            out,
            "  __local float mask_tile[{}];",
            stages * i64::from(bk)
        );
    }
    // The mask of the key tile from `start` into buffer `stage`.
    let stage_mask = |out: &mut String, start: &str, stage: &str| {
        if let (Some(at), Some(mask)) = (&row_mask, &spec.mask) {
            let _ = writeln!(
                out,
                "    for (int e = lid; e < {bk}; e += {threads}) {{\n      \
                 const tcc_index j = {start} + e;\n      \
                 mask_tile[{stage} * {bk} + e] = j < {kv} ? {} : 0.0f;\n    }}",
                mask.buffer.load(at),
                kv = s.kv_len,
            );
        }
    };
    if pipelined {
        // Two buffers of K and V: the copies of the next key tile are in
        // flight while the warps compute on this one, and one barrier a
        // tile both publishes this tile and frees the other buffer.
        let _ = writeln!(out, "  {{");
        copy_key_tiles_async(&mut out, spec, "0", "0");
        stage_mask(&mut out, "0", "0");
        let _ = writeln!(
            out,
            "  }}\n  tcc_cp_async_commit();\n  int st = 0;\n  \
             for (tcc_index k0 = 0; k0 < kv_end; k0 += {bk}, st ^= 1) {{\n    \
             TCC_CP_ASYNC_WAIT(0);\n    \
             barrier(CLK_LOCAL_MEM_FENCE);\n    \
             if (k0 + {bk} < kv_end) {{"
        );
        copy_key_tiles_async(&mut out, spec, &format!("(k0 + {bk})"), "(st ^ 1)");
        stage_mask(&mut out, &format!("(k0 + {bk})"), "(st ^ 1)");
        let _ = writeln!(
            out,
            "    }}\n    tcc_cp_async_commit();\n    \
             __local const ushort* ks = k_half + st * {tile_halves_per_stage};\n    \
             __local const ushort* vs = v_half + st * {tile_halves_per_stage};"
        );
    } else {
        let _ = writeln!(
            out,
            "  const int st = 0;\n  \
             for (tcc_index k0 = 0; k0 < kv_end; k0 += {bk}) {{\n    \
             barrier(CLK_LOCAL_MEM_FENCE);"
        );
        stage_key_tiles(&mut out, spec, half_storage, half_bits, pack);
        stage_mask(&mut out, "k0", "0");
        let _ = writeln!(
            out,
            "    barrier(CLK_LOCAL_MEM_FENCE);\n    \
             __local const ushort* ks = k_half;\n    \
             __local const ushort* vs = v_half;"
        );
    }
    // S = Q·Kᵀ for the warp's m16 tiles, each K fragment loaded once for
    // all of them.
    let _ = writeln!(
        out,
        "    float sc[{m_tiles}][{n_tiles}][4];\n    \
         #pragma unroll\n    for (int mt = 0; mt < {m_tiles}; ++mt)\n      \
         #pragma unroll\n      for (int nt = 0; nt < {n_tiles}; ++nt)\n        \
         sc[mt][nt][0] = sc[mt][nt][1] = sc[mt][nt][2] = sc[mt][nt][3] = 0.0f;\n    \
         #pragma unroll\n    for (int ks_ = 0; ks_ < {k_steps_d}; ++ks_) {{\n      \
         #pragma unroll\n      for (int nt = 0; nt < {n_tiles}; ++nt) {{\n        \
         const uint b0 = *(__local const uint*)&ks[(nt * 8 + g) * {qk_row} + 16 * ks_ + 2 * t];\n        \
         const uint b1 = *(__local const uint*)&ks[(nt * 8 + g) * {qk_row} + 16 * ks_ + 8 + 2 * t];\n        \
         #pragma unroll\n        for (int mt = 0; mt < {m_tiles}; ++mt)\n          \
         {mma}(sc[mt][nt][0], sc[mt][nt][1], sc[mt][nt][2], sc[mt][nt][3], \
         qf[mt][ks_][0], qf[mt][ks_][1], qf[mt][ks_][2], qf[mt][ks_][3], b0, b1);\n      }}\n    }}"
    );
    // Scale, mask, bounds; the tile's row maxima. Without a mask and
    // with a positive scale, the maxima are taken over the unscaled
    // scores and the scale joins log2(e) in the exponent's one `fma`
    // (`exp(scale (x - m))` as `2^(x c - m c)`, `c = scale log2(e)`).
    let fold_scale = spec.mask.is_none() && spec.scale > 0.0;
    let exp_factor = if fold_scale {
        float_literal(spec.scale * std::f32::consts::LOG2_E)
    } else {
        LOG2E.to_string()
    };
    let mut score = if fold_scale {
        "sc[mt][nt][e]".to_string()
    } else {
        format!("sc[mt][nt][e] * {}", float_literal(spec.scale))
    };
    if row_mask.is_some() {
        score = format!("{score} + mask_tile[st * {bk} + nt * 8 + 2 * t + (e % 2)]");
    } else if let Some(mask) = &spec.mask {
        let at = mask.address(["b", "h", "qi", "j"]);
        score = format!(
            "{score} + (j < {kv} ? {} : 0.0f)",
            mask.buffer.load(&at),
            kv = s.kv_len
        );
    }
    let live = if spec.causal {
        format!("j < {} && j <= qi", s.kv_len)
    } else {
        format!("j < {}", s.kv_len)
    };
    // A tile whose keys all exist and, with `causal`, all precede the
    // m16 tile's first row takes every score as it is (no bounds).
    let full = if spec.causal {
        format!(
            "k0 + {bk} <= {kv} && k0 + {bk} - 1 <= q0 + r0",
            kv = s.kv_len
        )
    } else {
        format!("k0 + {bk} <= {kv}", kv = s.kv_len)
    };
    let scores = |live: &str| {
        format!(
            "#pragma unroll\n        for (int nt = 0; nt < {n_tiles}; ++nt) {{\n          \
             #pragma unroll\n          for (int e = 0; e < 4; ++e) {{\n            \
             const tcc_index i = q0 + r0 + g + (e / 2) * 8;\n            \
             const tcc_index qi = i < {q_len} ? i : {last};\n            \
             const tcc_index j = k0 + nt * 8 + 2 * t + (e % 2);\n            \
             const float x = {score};\n            \
             sc[mt][nt][e] = {live};\n            \
             tile_max[e / 2] = fmax(tile_max[e / 2], sc[mt][nt][e]);\n          }}\n        }}",
            q_len = s.q_len,
            last = s.q_len - 1,
        )
    };
    // Per m16 tile: the online-softmax update and P = exp(S - m), in place.
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int mt = 0; mt < {m_tiles}; ++mt) {{\n      \
         const int r0 = warp * {rows} + mt * 16;\n      \
         float tile_max[2] = {{-INFINITY, -INFINITY}};\n      \
         if ({full}) {{\n        {}\n      }} else {{\n        {}\n      }}\n      \
         float base_log2[2];\n      \
         #pragma unroll\n      for (int r = 0; r < 2; ++r) {{\n        \
         float x = tile_max[r];\n        \
         x = fmax(x, tcc_shfl_xor(x, 1));\n        \
         x = fmax(x, tcc_shfl_xor(x, 2));\n        \
         const float m_new = fmax(m[mt][r], x);\n        \
         /* While every score so far is -inf, subtract 0: exp(-inf) = 0. */\n        \
         base_log2[r] = (m_new == -INFINITY ? 0.0f : m_new) * {exp_factor};\n        \
         const float correction = tcc_ex2(fma(m[mt][r], {exp_factor}, -base_log2[r]));\n        \
         m[mt][r] = m_new;\n        \
         l[mt][r] *= correction;\n        \
         #pragma unroll\n        for (int dn = 0; dn < {d_tiles}; ++dn) {{\n          \
         o[mt][dn][2 * r] *= correction;\n          \
         o[mt][dn][2 * r + 1] *= correction;\n        }}\n      }}\n      \
         #pragma unroll\n      for (int nt = 0; nt < {n_tiles}; ++nt)\n        \
         #pragma unroll\n        for (int e = 0; e < 4; ++e) {{\n          \
         sc[mt][nt][e] = tcc_ex2(fma(sc[mt][nt][e], {exp_factor}, -base_log2[e / 2]));\n          \
         l[mt][e / 2] += sc[mt][nt][e];\n        }}\n    }}",
        scores("x"),
        scores(&format!("({live}) ? x : -INFINITY")),
    );
    // O += P·V: P's A fragments straight from the score registers, each V
    // fragment loaded once for all of the warp's m16 tiles.
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int kt = 0; kt < {k_steps}; ++kt) {{\n      \
         uint pa[{m_tiles}][4];\n      \
         #pragma unroll\n      for (int mt = 0; mt < {m_tiles}; ++mt) {{\n        \
         pa[mt][0] = {pack}(sc[mt][2 * kt][0], sc[mt][2 * kt][1]);\n        \
         pa[mt][1] = {pack}(sc[mt][2 * kt][2], sc[mt][2 * kt][3]);\n        \
         pa[mt][2] = {pack}(sc[mt][2 * kt + 1][0], sc[mt][2 * kt + 1][1]);\n        \
         pa[mt][3] = {pack}(sc[mt][2 * kt + 1][2], sc[mt][2 * kt + 1][3]);\n      }}\n      \
         #pragma unroll\n      for (int dn = 0; dn < {d_tiles}; dn += 2) {{\n        \
         /* Lanes 0-15 name the tile's 16 key rows at column dn * 8, lanes 16-31 at (dn + 1) * 8: b0 b1 and b2 b3, transposed. */\n        \
         uint b0, b1, b2, b3;\n        \
         TCC_LDMATRIX_X4_TRANS(b0, b1, b2, b3, &vs[(kt * 16 + (lane & 15)) * {qk_row} + (dn + (lane >> 4)) * 8]);\n        \
         #pragma unroll\n        for (int mt = 0; mt < {m_tiles}; ++mt) {{\n          \
         {mma}(o[mt][dn][0], o[mt][dn][1], o[mt][dn][2], o[mt][dn][3], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], b0, b1);\n          \
         {mma}(o[mt][dn + 1][0], o[mt][dn + 1][1], o[mt][dn + 1][2], o[mt][dn + 1][3], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], b2, b3);\n        }}\n      }}\n    }}\n  }}",
        k_steps = bk / 16,
    );
    let o_at = spec.output.address(["b", "h", "i", "dd"]);
    // A fragment's two neighbouring columns (2 t, 2 t + 1) are one
    // aligned pair where the head dimension is contiguous and every other
    // stride and the offset are even: one 4-byte store of two halves
    // (8 of two floats) instead of two.
    let paired = spec.output.strides[3] == 1
        && spec.output.offset % 2 == 0
        && spec.output.strides[..3]
            .iter()
            .all(|stride| stride % 2 == 0);
    let store = if paired {
        let pair_at = spec.output.address(["b", "h", "i", "dn * 8 + 2 * t"]);
        format!(
            "#pragma unroll\n        for (int dn = 0; dn < {d_tiles}; ++dn)\n          {}",
            spec.output.buffer.store_vector_aligned(
                2,
                "(float2)(o[mt][dn][2 * r] * inverse, o[mt][dn][2 * r + 1] * inverse)",
                &pair_at,
            )
        )
    } else {
        format!(
            "#pragma unroll\n        for (int dn = 0; dn < {d_tiles}; ++dn)\n          \
             #pragma unroll\n          for (int c = 0; c < 2; ++c) {{\n            \
             const int dd = dn * 8 + 2 * t + c;\n            \
             {}\n          }}",
            spec.output
                .buffer
                .store("o[mt][dn][2 * r + c] * inverse", &o_at)
        )
    };
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int mt = 0; mt < {m_tiles}; ++mt)\n    \
         #pragma unroll\n    for (int r = 0; r < 2; ++r) {{\n      \
         float sum = l[mt][r];\n      \
         sum += tcc_shfl_xor(sum, 1);\n      \
         sum += tcc_shfl_xor(sum, 2);\n      \
         /* A row without any key (sum 0) is 0, not NaN. */\n      \
         const float inverse = sum > 0.0f ? 1.0f / sum : 0.0f;\n      \
         const tcc_index i = q0 + warp * {rows} + mt * 16 + g + r * 8;\n      \
         if (i < {q_len}) {{\n        \
         {store}\n      }}\n    }}",
        q_len = s.q_len,
    );
    out
}

/// Stages one key tile of K and V (`block_k` rows of the head dimension
/// from key `k0`, keys past the sequence as zeros) into the local half
/// tiles `k_half` and `v_half`, both in one loop (two loads in flight a
/// step). A step takes the most elements both operands allow: eight (16
/// bytes) where both buffers already hold the tensor cores' half type
/// with rows at multiples of eight elements, four where rows start at
/// multiples of four, else one; a buffer in the half type is copied as it
/// is, any other is read as floats and rounded.
fn stage_key_tiles(
    out: &mut String,
    spec: &AttentionSpec,
    half_storage: Option<crate::Storage>,
    half_bits: &str,
    pack: &str,
) {
    let (bk, d, kv) = (spec.block_k, spec.shape.head_dim, spec.shape.kv_len);
    let threads = spec.threads();
    let raw = |operand: &AttentionOperand| Some(operand.buffer.storage) == half_storage;
    let step = |operand: &AttentionOperand| {
        if raw(operand) && octet_aligned(operand, d) {
            8
        } else if quad_aligned(operand, d) {
            4
        } else {
            1
        }
    };
    let width = step(&spec.key).min(step(&spec.value));
    let _ = writeln!(
        out,
        "    for (int e = lid; e < {steps}; e += {threads}) {{\n      \
         const int jj = ({width} * e) / {d}, dd = ({width} * e) % {d};\n      \
         const tcc_index j = k0 + jj;",
        steps = i64::from(bk) * d / width,
    );
    for (operand, tile) in [(&spec.key, "k_half"), (&spec.value, "v_half")] {
        let at = operand.address(["b", "hk", "j", "dd"]);
        let target = format!("{tile}[jj * {} + dd]", d + 8);
        let statement = match (raw(operand), width) {
            (true, 8) => format!(
                "*(__local uint4*)&{target} = j < {kv} ? {} : (uint4)(0u);",
                load_octet(&operand.buffer, &at)
            ),
            (true, 4) => format!(
                "*(__local uint2*)&{target} = j < {kv} ? *(__global const uint2*)({} + {at}) : (uint2)(0u);",
                operand.buffer.name
            ),
            (true, _) => format!(
                "{target} = j < {kv} ? ((__global const ushort*){})[{at}] : (ushort)0;",
                operand.buffer.name
            ),
            (false, 4) => format!(
                "{{\n        const float4 x = j < {kv} ? {} : (float4)(0.0f);\n        \
                 *(__local uint2*)&{target} = (uint2)({pack}(x.s0, x.s1), {pack}(x.s2, x.s3));\n      }}",
                load_quad(&operand.buffer, &at)
            ),
            (false, _) => format!(
                "{target} = {half_bits}(j < {kv} ? {} : 0.0f);",
                operand.buffer.load(&at)
            ),
        };
        let _ = writeln!(out, "      {statement}");
    }
    let _ = writeln!(out, "    }}");
}

/// Issues the `cp.async` copies of one key tile of K and V (`block_k` rows
/// from key `start`) into buffer `stage` of `k_half` and `v_half`, 16
/// bytes a copy; the keys past the sequence are zero-filled (a source
/// size of 0, read from the last key's row so that the address stays
/// inside the buffer). Only for [`double_buffered`] operands.
fn copy_key_tiles_async(out: &mut String, spec: &AttentionSpec, start: &str, stage: &str) {
    let (bk, d, kv) = (spec.block_k, spec.shape.head_dim, spec.shape.kv_len);
    let tile_halves = i64::from(bk) * (d + 8);
    let threads = spec.threads();
    let _ = writeln!(
        out,
        "    for (int e = lid; e < {octets}; e += {threads}) {{\n      \
         const int jj = (8 * e) / {d}, dd = (8 * e) % {d};\n      \
         const tcc_index j = {start} + jj;\n      \
         const tcc_index jc = j < {kv} ? j : {last};\n      \
         const int bytes = j < {kv} ? 16 : 0;",
        octets = i64::from(bk) * d / 8,
        last = kv - 1,
    );
    for (operand, tile) in [(&spec.key, "k_half"), (&spec.value, "v_half")] {
        let at = operand.address(["b", "hk", "jc", "dd"]);
        let _ = writeln!(
            out,
            "      tcc_cp_async16((__local float*)&{tile}[{stage} * {tile_halves} + jj * {row} + dd], \
             (__global const float*)({} + {at}), bytes);",
            operand.buffer.name,
            row = d + 8,
        );
    }
    let _ = writeln!(out, "    }}");
}

/// Whether rows of `operand` can be copied eight 16-bit elements (16
/// bytes) at a time: the head dimension contiguous and every row start a
/// multiple of eight elements.
fn octet_aligned(operand: &AttentionOperand, head_dim: i64) -> bool {
    operand.strides[3] == 1
        && head_dim % 8 == 0
        && operand.offset % 8 == 0
        && operand.strides[..3].iter().all(|s| s % 8 == 0)
}

/// The eight 16-bit elements from `index` of a half buffer, as they are
/// (one 16-byte load).
fn load_octet(buffer: &Buffer, index: &str) -> String {
    format!("*(__global const uint4*)({} + {index})", buffer.name)
}

/// Whether rows of `operand` can be read four elements at a time: the
/// head dimension contiguous and every row start a multiple of four
/// elements (so that `vload4` and its half forms are aligned).
fn quad_aligned(operand: &AttentionOperand, head_dim: i64) -> bool {
    operand.strides[3] == 1
        && head_dim % 4 == 0
        && operand.offset % 4 == 0
        && operand.strides[..3].iter().all(|s| s % 4 == 0)
}

/// Four elements from `index` as a `float4`: one 16-byte load for an fp32
/// buffer (`quad_aligned` rows; libclc's `vload4` would load them one by
/// one), `vload_half4` and its bf16 form otherwise.
fn load_quad(buffer: &Buffer, index: &str) -> String {
    match buffer.storage {
        crate::Storage::F32 => format!("*(__global const float4*)({} + {index})", buffer.name),
        _ => buffer.load_vector(4, index),
    }
}

/// Elements per vector of the CPU form for a head dimension of `d`: 16,
/// 8, 4 where they divide it, else 1 (scalars).
fn vector_width(d: i64) -> i64 {
    [16, 8, 4].into_iter().find(|w| d % w == 0).unwrap_or(1)
}

/// The OpenCL C type of `w` floats.
fn float_type(w: i64) -> String {
    if w == 1 {
        "float".into()
    } else {
        format!("float{w}")
    }
}

/// The sum of the `w` lanes of the vector expression `v` (halves added
/// pairwise).
fn lane_sum(v: &str, w: i64) -> String {
    let mut expr = v.to_string();
    let mut width = w;
    while width > 1 {
        width /= 2;
        let half = float_type(width);
        expr = format!("(({half})(({expr}).lo) + ({half})(({expr}).hi))");
    }
    expr
}

/// `w` consecutive head-dimension elements of `operand` from index
/// `indices` (the last one the first element's): one vector load where
/// the head dimension is contiguous, else element by element.
fn load_lanes(operand: &AttentionOperand, indices: [&str; 4], w: i64) -> String {
    if w == 1 {
        return operand.buffer.load(&operand.address(indices));
    }
    if operand.strides[3] == 1 {
        return operand
            .buffer
            .load_vector(w as u32, &operand.address(indices));
    }
    let lanes: Vec<String> = (0..w)
        .map(|e| {
            let dd = format!("({} + {e})", indices[3]);
            operand
                .buffer
                .load(&operand.address([indices[0], indices[1], indices[2], &dd]))
        })
        .collect();
    format!("({})({})", float_type(w), lanes.join(", "))
}

/// The CPU form (`single_item`): one work-item takes the group's
/// `block_q` query rows. Their query vectors and output accumulators are
/// `floatW` vectors over the head dimension; the keys are walked in
/// chunks of [`CHUNK`], read straight from memory (each K and V row
/// serves every row of the block). A score is the lane sum of a row's
/// products with the key row; the chunk's scores take the online softmax
/// update of the fp32 body, their exponentials as one `float16`, and the
/// accumulators add `p * V` row by row. Keys past the sequence (the last
/// chunk's tail, loaded from the last key) and, with `causal`, past the
/// row are `-inf`; a row without any key is 0.
fn vector_body(spec: &AttentionSpec) -> String {
    let s = spec.shape;
    let (rows, d) = (i64::from(spec.block_q), s.head_dim);
    let group = s.heads / s.kv_heads;
    let w = vector_width(d);
    let vectors = d / w;
    let vtype = float_type(w);
    let chunk = i64::from(CHUNK);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  const tcc_index q0 = (tcc_index)get_group_id(0) * {rows};\n  \
         const tcc_index bh = (tcc_index)get_group_id(1);\n  \
         const tcc_index b = bh / {heads}, h = bh % {heads};\n  \
         const tcc_index hk = h / {group};\n  \
         {vtype} q[{rows}][{vectors}], acc[{rows}][{vectors}];\n  \
         float m[{rows}], l[{rows}];\n  \
         /* Rows past the sequence compute on the last row and store nothing. */\n  \
         #pragma unroll\n  for (int r = 0; r < {rows}; ++r) {{\n    \
         const tcc_index qi = min(q0 + r, (tcc_index){last});\n    \
         m[r] = -INFINITY;\n    l[r] = 0.0f;\n    \
         #pragma unroll\n    for (int t = 0; t < {vectors}; ++t) {{\n      \
         q[r][t] = {};\n      acc[r][t] = ({vtype})(0.0f);\n    }}\n  }}",
        load_lanes(&spec.query, ["b", "h", "qi", &format!("t * {w}")], w),
        heads = s.heads,
        last = s.q_len - 1,
    );
    if spec.causal {
        let _ = writeln!(
            out,
            "  const tcc_index kv_end = min((tcc_index){kv}, q0 + {rows});",
            kv = s.kv_len
        );
    } else {
        let _ = writeln!(out, "  const tcc_index kv_end = {};", s.kv_len);
    }
    let mut score = format!("{} * {}", lane_sum("dot", w), float_literal(spec.scale));
    if let Some(mask) = &spec.mask {
        let at = mask.address(["b", "h", "qi", "jl"]);
        score = format!("{score} + {}", mask.buffer.load(&at));
    }
    let live = if spec.causal {
        format!("j < {} && j <= qi", s.kv_len)
    } else {
        format!("j < {}", s.kv_len)
    };
    let _ = writeln!(
        out,
        "  for (tcc_index j0 = 0; j0 < kv_end; j0 += {chunk}) {{\n    \
         float sc[{rows}][{chunk}];\n    \
         #pragma unroll\n    for (int c = 0; c < {chunk}; ++c) {{\n      \
         const tcc_index j = j0 + c;\n      \
         /* Keys past the sequence read the last one and score -inf. */\n      \
         const tcc_index jl = min(j, (tcc_index){kv_last});\n      \
         {vtype} k[{vectors}];\n      \
         #pragma unroll\n      for (int t = 0; t < {vectors}; ++t)\n        \
         k[t] = {};\n      \
         #pragma unroll\n      for (int r = 0; r < {rows}; ++r) {{\n        \
         const tcc_index qi = min(q0 + r, (tcc_index){last});\n        \
         {vtype} dot = q[r][0] * k[0];\n        \
         #pragma unroll\n        for (int t = 1; t < {vectors}; ++t)\n          \
         dot = fma(q[r][t], k[t], dot);\n        \
         const float x = {score};\n        \
         sc[r][c] = ({live}) ? x : -INFINITY;\n      }}\n    }}",
        load_lanes(&spec.key, ["b", "hk", "jl", &format!("t * {w}")], w),
        kv_last = s.kv_len - 1,
        last = s.q_len - 1,
    );
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int r = 0; r < {rows}; ++r) {{\n      \
         float chunk_max = -INFINITY;\n      \
         #pragma unroll\n      for (int c = 0; c < {chunk}; ++c)\n        \
         chunk_max = tcc_maximumf(chunk_max, sc[r][c]);\n      \
         const float m_new = tcc_maximumf(m[r], chunk_max);\n      \
         /* While every score so far is -inf, subtract 0: exp(-inf) = 0. */\n      \
         const float base = m_new == -INFINITY ? 0.0f : m_new;\n      \
         const float correction = exp(m[r] - base);\n      \
         m[r] = m_new;\n      \
         const float16 p = exp(vload16(0, &sc[r][0]) - (float16)(base));\n      \
         vstore16(p, 0, &sc[r][0]);\n      \
         l[r] = l[r] * correction + {};\n      \
         #pragma unroll\n      for (int t = 0; t < {vectors}; ++t)\n        \
         acc[r][t] *= correction;\n    }}",
        lane_sum("p", 16),
    );
    let _ = writeln!(
        out,
        "    #pragma unroll\n    for (int c = 0; c < {chunk}; ++c) {{\n      \
         const tcc_index jl = min(j0 + c, (tcc_index){kv_last});\n      \
         #pragma unroll\n      for (int t = 0; t < {vectors}; ++t) {{\n        \
         const {vtype} v = {};\n        \
         #pragma unroll\n        for (int r = 0; r < {rows}; ++r)\n          \
         acc[r][t] = fma(({vtype})(sc[r][c]), v, acc[r][t]);\n      }}\n    }}\n  }}",
        load_lanes(&spec.value, ["b", "hk", "jl", &format!("t * {w}")], w),
        kv_last = s.kv_len - 1,
    );
    let o_at = spec.output.address(["b", "h", "i", "dd"]);
    let store = if w > 1 && spec.output.strides[3] == 1 {
        spec.output.buffer.store_vector(
            w as u32,
            "acc[r][t] * inverse",
            &spec.output.address(["b", "h", "i", &format!("t * {w}")]),
        )
    } else if w > 1 {
        format!(
            "{{\n          float lanes[{w}];\n          vstore{w}(acc[r][t] * inverse, 0, lanes);\n          \
             for (int e = 0; e < {w}; ++e) {{\n            const int dd = t * {w} + e;\n            {}\n          }}\n        }}",
            spec.output.buffer.store("lanes[e]", &o_at)
        )
    } else {
        format!(
            "{{\n          const int dd = t;\n          {}\n        }}",
            spec.output.buffer.store("acc[r][t] * inverse", &o_at)
        )
    };
    let _ = writeln!(
        out,
        "  #pragma unroll\n  for (int r = 0; r < {rows}; ++r) {{\n    \
         const tcc_index i = q0 + r;\n    \
         if (i < {q_len}) {{\n      \
         /* A row without any key (l = 0) is 0, not NaN. */\n      \
         const float inverse = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;\n      \
         #pragma unroll\n      for (int t = 0; t < {vectors}; ++t)\n        \
         {store}\n    }}\n  }}",
        q_len = s.q_len,
    );
    out
}

/// The work-group's (batch, head) and query row `q0 + row` (C names
/// `b`, `h`, `hk` for grouped heads, `i`, and `qi` clamped into the
/// sequence), the row's query vector `q` and a zero accumulator `acc` in
/// registers, and the online softmax's `m` and `l`: the start of the
/// fp32 and key-parallel bodies.
fn query_row(out: &mut String, spec: &AttentionSpec, row: &str) {
    let s = spec.shape;
    let d = s.head_dim;
    let _ = writeln!(
        out,
        "  const tcc_index q0 = (tcc_index)get_group_id(0) * {bq};\n  \
         const tcc_index bh = (tcc_index)get_group_id(1);\n  \
         const tcc_index b = bh / {heads}, h = bh % {heads};\n  \
         const tcc_index hk = h / {group};\n  \
         const tcc_index i = q0 + {row};\n  \
         /* Rows past the sequence compute on the last row and store nothing. */\n  \
         const tcc_index qi = i < {q_len} ? i : {last};",
        bq = spec.block_q,
        heads = s.heads,
        group = s.heads / s.kv_heads,
        q_len = s.q_len,
        last = s.q_len - 1,
    );
    let q_at = spec.query.address(["b", "h", "qi", "dd"]);
    let _ = writeln!(
        out,
        "  float q[{d}];\n  float acc[{d}];\n  #pragma unroll\n  for (int dd = 0; dd < {d}; ++dd) {{\n    \
         q[dd] = {};\n    acc[dd] = 0.0f;\n  }}\n  float m = -INFINITY;\n  float l = 0.0f;",
        spec.query.buffer.load(&q_at)
    );
}

/// Local memory of the key-parallel form: each work-item's running
/// maximum, sum and accumulator (rows padded by one float, so that the
/// work-items storing theirs side by side hit different banks) and its
/// merge weight.
fn key_lanes_local_bytes(block_q: u32, key_lanes: u32, head_dim: i64) -> i64 {
    let items = i64::from(block_q) * i64::from(key_lanes);
    4 * (items * (head_dim + 1) + 3 * items)
}

/// The key-parallel form (`key_lanes > 1`): a few query rows (a decode
/// step's one per sequence) leave the one-row-per-work-item bodies a
/// work-group or two per head walking every key alone (GPT-2's fp32
/// one-token step spent 80 us a layer so, one work-item doing all 256
/// keys' products). Here `key_lanes` work-items share each row: work-item
/// `t` takes keys `t`, `t + key_lanes`, ... reading K and V rows straight
/// from memory, with exact fp32 dot products and an online softmax of its
/// own (the fp32 body's update, key by key). Then the work-group merges
/// them: the row's maximum over its work-items, each work-item's weight
/// `exp(m_t - max)`, and every output element the weighted sum of the
/// accumulators over the weighted sum of the sums, added in work-item
/// order. Masks, causal rows (keys past the row are not visited), grouped
/// heads and rows without any key (0) as the other bodies.
fn key_lanes_body(spec: &AttentionSpec) -> String {
    let s = spec.shape;
    let (bq, lanes, d) = (spec.block_q, spec.key_lanes, s.head_dim);
    let items = bq * lanes;
    let stride = d + 1;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  __local float lane_max[{items}];\n  __local float lane_sum[{items}];\n  __local float lane_weight[{items}];\n  __local float lane_acc[{}];",
        i64::from(items) * stride
    );
    let _ = writeln!(
        out,
        "  const int lid = (int)get_local_id(0);\n  const int r = lid / {lanes}, t = lid % {lanes};"
    );
    query_row(&mut out, spec, "r");
    let kv_end = if spec.causal {
        format!("min((tcc_index){}, qi + 1)", s.kv_len)
    } else {
        s.kv_len.to_string()
    };
    let _ = writeln!(
        out,
        "  for (tcc_index j = t; j < {kv_end}; j += {lanes}) {{\n    float k_row[{d}], v_row[{d}];"
    );
    for (operand, name) in [(&spec.key, "k_row"), (&spec.value, "v_row")] {
        let at = operand.address(["b", "hk", "j", "dd"]);
        if quad_aligned(operand, d) {
            let _ = writeln!(
                out,
                "    #pragma unroll\n    for (int dd = 0; dd < {d}; dd += 4) {{\n      \
                 const float4 v4 = {};\n      \
                 {name}[dd] = v4.s0; {name}[dd + 1] = v4.s1; {name}[dd + 2] = v4.s2; {name}[dd + 3] = v4.s3;\n    }}",
                load_quad(&operand.buffer, &at)
            );
        } else {
            let _ = writeln!(
                out,
                "    #pragma unroll\n    for (int dd = 0; dd < {d}; ++dd)\n      {name}[dd] = {};",
                operand.buffer.load(&at)
            );
        }
    }
    let mut score = format!("dot * {}", float_literal(spec.scale));
    if let Some(mask) = &spec.mask {
        let at = mask.address(["b", "h", "qi", "j"]);
        score = format!("{score} + {}", mask.buffer.load(&at));
    }
    let _ = writeln!(
        out,
        "    float dot = 0.0f;\n    #pragma unroll\n    for (int dd = 0; dd < {d}; ++dd)\n      dot = fma(q[dd], k_row[dd], dot);\n    \
         const float x = {score};\n    \
         const float m_new = tcc_maximumf(m, x);\n    \
         /* While every score so far is -inf, subtract 0: exp(-inf) = 0. */\n    \
         const float base = m_new == -INFINITY ? 0.0f : m_new;\n    \
         const float correction = tcc_expf(m - base);\n    \
         const float p = tcc_expf(x - base);\n    \
         l = fma(l, correction, p);\n    \
         #pragma unroll\n    \
         for (int dd = 0; dd < {d}; ++dd)\n      \
         acc[dd] = fma(p, v_row[dd], acc[dd] * correction);\n    \
         m = m_new;\n  }}"
    );
    // The merge.
    let o_at = spec.output.address(["b", "h", "i", "dd"]);
    let _ = writeln!(
        out,
        "  lane_max[lid] = m;\n  lane_sum[lid] = l;\n  \
         #pragma unroll\n  for (int dd = 0; dd < {d}; ++dd)\n    lane_acc[lid * {stride} + dd] = acc[dd];\n  \
         barrier(CLK_LOCAL_MEM_FENCE);\n  \
         float row_max = -INFINITY;\n  \
         for (int u = 0; u < {lanes}; ++u)\n    row_max = tcc_maximumf(row_max, lane_max[r * {lanes} + u]);\n  \
         const float row_base = row_max == -INFINITY ? 0.0f : row_max;\n  \
         lane_weight[lid] = tcc_expf(m - row_base);\n  \
         barrier(CLK_LOCAL_MEM_FENCE);\n  \
         float total = 0.0f;\n  \
         for (int u = 0; u < {lanes}; ++u)\n    total = fma(lane_sum[r * {lanes} + u], lane_weight[r * {lanes} + u], total);\n  \
         /* A row without any key (total = 0) is 0, not NaN. */\n  \
         const float inverse = total > 0.0f ? 1.0f / total : 0.0f;\n  \
         if (i < {q_len}) {{\n    \
         for (int dd = t; dd < {d}; dd += {lanes}) {{\n      \
         float o = 0.0f;\n      \
         for (int u = 0; u < {lanes}; ++u)\n        \
         o = fma(lane_acc[(r * {lanes} + u) * {stride} + dd], lane_weight[r * {lanes} + u], o);\n      \
         {}\n    }}\n  }}",
        spec.output.buffer.store("o * inverse", &o_at),
        q_len = s.q_len,
    );
    out
}

/// The exact fp32 body: one work-item per query row.
fn fp32_body(spec: &AttentionSpec) -> String {
    let s = spec.shape;
    let (bq, bk, d) = (spec.block_q, spec.block_k, s.head_dim);
    let threads = spec.threads();
    let chunk = bk.min(CHUNK);
    let mut out = String::new();
    // With a head dimension of whole float4s, the tiles are read four
    // elements at a time (one 16-byte local load serving four `fma`s of
    // the same chain, in the same order: a load per `fma` bounded the
    // body by local-memory issue), and staged so where K's and V's rows
    // are aligned.
    let quads = d % 4 == 0;
    let staged_quads = quads && quad_aligned(&spec.key, d) && quad_aligned(&spec.value, d);
    let align = if quads {
        " __attribute__((aligned(16)))"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  __local float k_tile[{tile}]{align};\n  __local float v_tile[{tile}]{align};",
        tile = i64::from(bk) * d
    );
    let _ = writeln!(out, "  const int lid = (int)get_local_id(0);");
    query_row(&mut out, spec, "lid");
    // The keys this work-group visits: with causal, none past its last row.
    if spec.causal {
        let _ = writeln!(
            out,
            "  const tcc_index kv_end = min((tcc_index){kv}, q0 + {bq});",
            kv = s.kv_len
        );
    } else {
        let _ = writeln!(out, "  const tcc_index kv_end = {};", s.kv_len);
    }
    let _ = writeln!(out, "  for (tcc_index k0 = 0; k0 < kv_end; k0 += {bk}) {{");
    // Stage the tile: consecutive work-items take consecutive elements of
    // a key row.
    let k_at = spec.key.address(["b", "hk", "j", "dd"]);
    let v_at = spec.value.address(["b", "hk", "j", "dd"]);
    if staged_quads {
        let _ = writeln!(
            out,
            "    barrier(CLK_LOCAL_MEM_FENCE);\n    \
             for (int e = lid; e < {quads_in_tile}; e += {threads}) {{\n      \
             const int jj = e / {row_quads}, dd = (e % {row_quads}) * 4;\n      \
             const tcc_index j = k0 + jj;\n      \
             const int inside = j < {kv};\n      \
             ((__local float4*)k_tile)[e] = inside ? {} : (float4)(0.0f);\n      \
             ((__local float4*)v_tile)[e] = inside ? {} : (float4)(0.0f);\n    }}\n    \
             barrier(CLK_LOCAL_MEM_FENCE);",
            load_quad(&spec.key.buffer, &k_at),
            load_quad(&spec.value.buffer, &v_at),
            quads_in_tile = i64::from(bk) * d / 4,
            row_quads = d / 4,
            kv = s.kv_len,
        );
    } else {
        let _ = writeln!(
            out,
            "    barrier(CLK_LOCAL_MEM_FENCE);\n    \
             for (int e = lid; e < {tile}; e += {threads}) {{\n      \
             const int jj = e / {d}, dd = e % {d};\n      \
             const tcc_index j = k0 + jj;\n      \
             const int inside = j < {kv};\n      \
             k_tile[e] = inside ? {} : 0.0f;\n      \
             v_tile[e] = inside ? {} : 0.0f;\n    }}\n    \
             barrier(CLK_LOCAL_MEM_FENCE);",
            spec.key.buffer.load(&k_at),
            spec.value.buffer.load(&v_at),
            tile = i64::from(bk) * d,
            kv = s.kv_len,
        );
    }
    // The chunk's dot products: with whole float4s, all of them at once,
    // four head elements at a time (each its own chain, summed in the
    // same order as one after another would be): the GPU issues in
    // order, so a key's 64-deep chain alone waited an `fma`'s latency per
    // step.
    let dot = if quads {
        format!(
            "#pragma unroll\n      \
             for (int c = 0; c < {chunk}; ++c)\n        \
             dots[c] = 0.0f;\n      \
             #pragma unroll\n      \
             for (int dd = 0; dd < {d}; dd += 4) {{\n        \
             #pragma unroll\n        \
             for (int c = 0; c < {chunk}; ++c) {{\n          \
             const float4 kq = *(__local const float4*)(k_tile + (c0 + c) * {d} + dd);\n          \
             dots[c] = fma(q[dd], kq.x, dots[c]);\n          \
             dots[c] = fma(q[dd + 1], kq.y, dots[c]);\n          \
             dots[c] = fma(q[dd + 2], kq.z, dots[c]);\n          \
             dots[c] = fma(q[dd + 3], kq.w, dots[c]);\n        }}\n      }}\n      \
             #pragma unroll\n      \
             for (int c = 0; c < {chunk}; ++c) {{\n        \
             const int jj = c0 + c;\n        \
             const tcc_index j = k0 + jj;\n        \
             const float dot = dots[c];"
        )
    } else {
        format!(
            "#pragma unroll\n      \
             for (int c = 0; c < {chunk}; ++c) {{\n        \
             const int jj = c0 + c;\n        \
             const tcc_index j = k0 + jj;\n        \
             float dot = 0.0f;\n        \
             #pragma unroll\n        \
             for (int dd = 0; dd < {d}; ++dd)\n          \
             dot = fma(q[dd], k_tile[jj * {d} + dd], dot);"
        )
    };
    let accumulate = if quads {
        format!(
            "for (int dd = 0; dd < {d}; dd += 4) {{\n          \
             const float4 vq = *(__local const float4*)(v_tile + jj * {d} + dd);\n          \
             acc[dd] = fma(p, vq.x, acc[dd]);\n          \
             acc[dd + 1] = fma(p, vq.y, acc[dd + 1]);\n          \
             acc[dd + 2] = fma(p, vq.z, acc[dd + 2]);\n          \
             acc[dd + 3] = fma(p, vq.w, acc[dd + 3]);\n        }}"
        )
    } else {
        format!(
            "for (int dd = 0; dd < {d}; ++dd)\n          acc[dd] = fma(p, v_tile[jj * {d} + dd], acc[dd]);"
        )
    };
    let _ = writeln!(
        out,
        "    /* Chunks past the last key visited are skipped (uniform per group). */\n    \
         for (int c0 = 0; c0 < {bk} && k0 + c0 < kv_end; c0 += {chunk}) {{\n      \
         float sc[{chunk}];\n      \
         float chunk_max = -INFINITY;\n      \
         {dots}{dot}",
        dots = if quads {
            format!("float dots[{chunk}];\n      ")
        } else {
            String::new()
        },
    );
    let mut score = format!("dot * {}", float_literal(spec.scale));
    if let Some(mask) = &spec.mask {
        let at = mask.address(["b", "h", "qi", "j"]);
        // The mask is read only inside the sequence.
        score = format!(
            "{score} + (j < {kv} ? {} : 0.0f)",
            mask.buffer.load(&at),
            kv = s.kv_len
        );
    }
    let live = if spec.causal {
        format!("j < {} && j <= qi", s.kv_len)
    } else {
        format!("j < {}", s.kv_len)
    };
    let _ = writeln!(
        out,
        "        const float x = {score};\n        \
         sc[c] = ({live}) ? x : -INFINITY;\n        \
         chunk_max = tcc_maximumf(chunk_max, sc[c]);\n      }}\n      \
         const float m_new = tcc_maximumf(m, chunk_max);\n      \
         /* While every score so far is -inf, subtract 0: exp(-inf) = 0. */\n      \
         const float base = m_new == -INFINITY ? 0.0f : m_new;\n      \
         const float correction = tcc_expf(m - base);\n      \
         l *= correction;\n      \
         #pragma unroll\n      \
         for (int dd = 0; dd < {d}; ++dd)\n        \
         acc[dd] *= correction;\n      \
         #pragma unroll\n      \
         for (int c = 0; c < {chunk}; ++c) {{\n        \
         const float p = tcc_expf(sc[c] - base);\n        \
         l += p;\n        \
         const int jj = c0 + c;\n        \
         #pragma unroll\n        \
         {accumulate}\n      }}\n      \
         m = m_new;\n    }}\n  }}",
    );
    let o_at = spec.output.address(["b", "h", "i", "dd"]);
    let _ = writeln!(
        out,
        "  if (i < {q_len}{own_row}) {{\n    \
         /* A row without any key (l = 0) is 0, not NaN. */\n    \
         const float inverse = l > 0.0f ? 1.0f / l : 0.0f;\n    \
         #pragma unroll\n    \
         for (int dd = 0; dd < {d}; ++dd)\n      \
         {}\n  }}\n}}",
        spec.output.buffer.store("acc[dd] * inverse", &o_at),
        q_len = s.q_len,
        // Work-items past the group's rows (the tensor-core body's
        // launch) only stage.
        own_row = if threads > bq {
            format!(" && lid < {bq}")
        } else {
            String::new()
        },
    );
    // The kernel's closing brace is the caller's.
    out.truncate(out.trim_end().len() - 1);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operand(name: &str, shape: [i64; 4]) -> AttentionOperand {
        AttentionOperand {
            buffer: Buffer::f32(name),
            offset: 0,
            strides: [
                shape[1] * shape[2] * shape[3],
                shape[2] * shape[3],
                shape[3],
                1,
            ],
        }
    }

    fn spec(causal: bool, mask: bool) -> AttentionSpec {
        let shape = AttentionShape {
            batch: 2,
            heads: 4,
            kv_heads: 2,
            q_len: 77,
            kv_len: 77,
            head_dim: 64,
        };
        AttentionSpec {
            name: "attention_0".into(),
            parameters: KernelParameters::floats(&[false, false, false, false, true]),
            comment: "/* test */".into(),
            shape,
            scale: 0.125,
            causal,
            block_q: 64,
            block_k: 32,
            query: operand("a0", [2, 4, 77, 64]),
            key: operand("a1", [2, 2, 77, 64]),
            value: operand("a2", [2, 2, 77, 64]),
            mask: mask.then(|| AttentionOperand {
                buffer: Buffer::f32("a3"),
                offset: 0,
                strides: [77, 0, 0, 1],
            }),
            output: operand("a4", [2, 4, 77, 64]),
            tensor_cores: None,
            single_item: false,
            key_lanes: 1,
        }
    }

    /// One decode row per (batch, head) over 77 keys, masked, with
    /// `key_lanes` work-items.
    fn decode_row(key_lanes: u32) -> AttentionSpec {
        let mut spec = spec(false, true);
        spec.shape.q_len = 1;
        spec.block_q = 1;
        spec.key_lanes = key_lanes;
        spec.query = operand("a0", [2, 4, 1, 64]);
        spec.output = operand("a4", [2, 4, 1, 64]);
        spec
    }

    #[test]
    fn a_few_rows_share_the_keys_among_lanes_and_merge_in_order() {
        let mut spec = decode_row(64);
        // Whatever the precision: exact fp32, no tensor-core body.
        spec.tensor_cores = Some(TensorCores::Fp16);
        let text = attention_kernel(&spec).unwrap();
        assert!(text.contains("reqd_work_group_size(64, 1, 1)"), "{text}");
        assert!(!text.contains("TCC_PTX"), "{text}");
        assert!(
            text.contains("const int r = lid / 64, t = lid % 64;"),
            "{text}"
        );
        // Each lane walks every 64th key, its rows read four at a time.
        assert!(
            text.contains("for (tcc_index j = t; j < 77; j += 64) {"),
            "{text}"
        );
        assert!(
            text.contains("const float4 v4 = *(__global const float4*)(a1 + "),
            "{text}"
        );
        assert!(
            text.contains("const float x = dot * 0.125f + a3[b * 77 + j];"),
            "{text}"
        );
        // The merge: weights exp(m_t - max), sums in lane order, rows of
        // accumulators padded to 65 floats.
        assert!(
            text.contains("lane_acc[lid * 65 + dd] = acc[dd];"),
            "{text}"
        );
        assert!(
            text.contains("lane_weight[lid] = tcc_expf(m - row_base);"),
            "{text}"
        );
        assert!(
            text.contains("o = fma(lane_acc[(r * 64 + u) * 65 + dd], lane_weight[r * 64 + u], o);"),
            "{text}"
        );
        assert!(text.contains("= o * inverse;"), "{text}");
        assert_eq!(
            attention_launch(&spec.shape, (1, 32, 64), Some(TensorCores::Fp16), false),
            ([1, 8, 1], [64, 1, 1])
        );
    }

    #[test]
    fn causal_key_lanes_stop_at_the_row() {
        let mut spec = spec(true, false);
        spec.block_q = 2;
        spec.key_lanes = 32;
        let text = attention_kernel(&spec).unwrap();
        assert!(text.contains("reqd_work_group_size(64, 1, 1)"), "{text}");
        assert!(
            text.contains("for (tcc_index j = t; j < min((tcc_index)77, qi + 1); j += 32) {"),
            "{text}"
        );
        // Too many lanes for local memory are refused.
        let wide = decode_row(1024);
        assert!(attention_kernel(&wide).unwrap_err().contains("key lanes"));
    }

    #[test]
    fn a_head_dimension_of_odd_elements_stays_scalar() {
        let mut odd = spec(false, false);
        odd.shape.head_dim = 6;
        for operand in [
            &mut odd.query,
            &mut odd.key,
            &mut odd.value,
            &mut odd.output,
        ] {
            operand.strides = [
                operand.strides[0] / 64 * 6,
                operand.strides[1] / 64 * 6,
                6,
                1,
            ];
        }
        let text = attention_kernel(&odd).unwrap();
        assert!(text.contains("__local float k_tile[192];"), "{text}");
        assert!(
            text.contains("dot = fma(q[dd], k_tile[jj * 6 + dd], dot);"),
            "{text}"
        );
        assert!(
            text.contains("acc[dd] = fma(p, v_tile[jj * 6 + dd], acc[dd]);"),
            "{text}"
        );
        assert!(!text.contains("float4"), "{text}");
    }

    #[test]
    fn online_softmax_over_staged_tiles() {
        let text = attention_kernel(&spec(false, true)).unwrap();
        assert!(text.contains("reqd_work_group_size(64, 1, 1)"), "{text}");
        assert!(
            text.contains("__local float k_tile[2048] __attribute__((aligned(16)));"),
            "{text}"
        );
        // Staged and read four floats at a time, each chain's order kept.
        assert!(
            text.contains(
                "((__local float4*)k_tile)[e] = inside ? *(__global const float4*)(a1 + "
            ),
            "{text}"
        );
        // The chunk's 16 dot products interleaved, four elements a step.
        assert!(
            text.contains(
                "for (int dd = 0; dd < 64; dd += 4) {\n        #pragma unroll\n        for (int c = 0; c < 16; ++c) {\n          const float4 kq = *(__local const float4*)(k_tile + (c0 + c) * 64 + dd);"
            ),
            "{text}"
        );
        assert!(
            text.contains("dots[c] = fma(q[dd + 3], kq.w, dots[c]);"),
            "{text}"
        );
        assert!(
            text.contains("acc[dd + 1] = fma(p, vq.y, acc[dd + 1]);"),
            "{text}"
        );
        // Grouped heads: two query heads per key/value head.
        assert!(text.contains("const tcc_index hk = h / 2;"), "{text}");
        assert!(text.contains("const tcc_index kv_end = 77;"), "{text}");
        assert!(
            text.contains("for (int c0 = 0; c0 < 32 && k0 + c0 < kv_end; c0 += 16)"),
            "{text}"
        );
        // Scale, then the broadcast mask (no head or row stride).
        assert!(
            text.contains("const float x = dot * 0.125f + (j < 77 ? a3[b * 77 + j] : 0.0f);"),
            "{text}"
        );
        assert!(text.contains("sc[c] = (j < 77) ? x : -INFINITY;"), "{text}");
        assert!(text.contains("acc[dd] = fma(p, vq.x, acc[dd]);"), "{text}");
        assert!(
            text.contains("a4[b * 19712 + h * 4928 + i * 64 + dd] = acc[dd] * inverse;"),
            "{text}"
        );
    }

    #[test]
    fn causal_skips_tiles_above_the_diagonal() {
        let text = attention_kernel(&spec(true, false)).unwrap();
        assert!(
            text.contains("const tcc_index kv_end = min((tcc_index)77, q0 + 64);"),
            "{text}"
        );
        assert!(
            text.contains("sc[c] = (j < 77 && j <= qi) ? x : -INFINITY;"),
            "{text}"
        );
        // No mask is read.
        assert!(!text.contains("a3["), "{text}");
    }

    #[test]
    fn fp16_adds_a_tensor_core_body_for_ptx() {
        let mut spec = spec(true, true);
        spec.tensor_cores = Some(TensorCores::Fp16);
        let text = attention_kernel(&spec).unwrap();
        let (ptx, fp32) = text
            .split_once("#ifdef TCC_PTX\n")
            .and_then(|(_, rest)| rest.split_once("#else\n"))
            .expect("a PTX body and an fp32 body");
        // A warp per 16 query rows: 128 work-items for 64 rows; the
        // portable body (the OpenCL C form) stages with all of them and
        // computes a row on each of the first 64.
        assert!(
            text.contains("__kernel __attribute__((reqd_work_group_size(128, 1, 1)))"),
            "{text}"
        );
        assert_eq!(
            attention_launch(&spec.shape, (64, 32, 1), spec.tensor_cores, false).1,
            [128, 1, 1]
        );
        assert!(
            fp32.contains("for (int e = lid; e < 512; e += 128) {"),
            "{fp32}"
        );
        assert!(fp32.contains("if (i < 77 && lid < 64) {"), "{fp32}");
        assert!(ptx.contains("float o[1][8][4];"), "{ptx}");
        assert!(ptx.contains("const int r0 = warp * 16 + mt * 16;"), "{ptx}");
        // One tile: Q's 64 rows before the key loop, then K and V (32
        // keys each), rows padded to 72 halves.
        assert!(
            ptx.contains("__local ushort kv_tile[4608] __attribute__((aligned(16)));"),
            "{ptx}"
        );
        assert!(
            ptx.contains("__local ushort* const q_half = kv_tile;"),
            "{ptx}"
        );
        assert!(
            ptx.contains("__local ushort* const v_half = kv_tile + 2304;"),
            "{ptx}"
        );
        // The warp's Q fragments live in registers through the key loop.
        assert!(
            ptx.contains(
                "qf[mt][ks][0] = *(__local const uint*)&q_half[(r0 + g) * 72 + 16 * ks + 2 * t];"
            ),
            "{ptx}"
        );
        assert!(
            ptx.contains(
                "qf[mt][ks_][0], qf[mt][ks_][1], qf[mt][ks_][2], qf[mt][ks_][3], b0, b1);"
            ),
            "{ptx}"
        );
        // Rows of fp32 K and V read four elements at a time, rounded.
        assert!(
            ptx.contains("const float4 x = j < 77 ? *(__global const float4*)(a2 + b * 9856 + hk * 4928 + j * 64 + dd) : (float4)(0.0f);"),
            "{ptx}"
        );
        assert!(
            ptx.contains("*(__local uint2*)&v_half[jj * 72 + dd] = (uint2)(tcc_f16x2(x.s0, x.s1), tcc_f16x2(x.s2, x.s3));"),
            "{ptx}"
        );
        // Both products on FP16 tensor cores (P·V two n8 tiles per
        // transposed ldmatrix of V), P packed from the S accumulators.
        assert_eq!(ptx.matches("TCC_MMA_F16(").count(), 3, "{ptx}");
        assert!(
            ptx.contains(
                "const uint b1 = *(__local const uint*)&ks[(nt * 8 + g) * 72 + 16 * ks_ + 8 + 2 * t];"
            ),
            "{ptx}"
        );
        assert!(
            ptx.contains("TCC_LDMATRIX_X4_TRANS(b0, b1, b2, b3, &vs[(kt * 16 + (lane & 15)) * 72 + (dn + (lane >> 4)) * 8]);"),
            "{ptx}"
        );
        assert!(
            ptx.contains("pa[mt][0] = tcc_f16x2(sc[mt][2 * kt][0], sc[mt][2 * kt][1]);"),
            "{ptx}"
        );
        // The row statistics over the four threads of a row.
        assert!(ptx.contains("tcc_shfl_xor(x, 2)"), "{ptx}");
        assert!(ptx.contains("sum += tcc_shfl_xor(sum, 1);"), "{ptx}");
        // The mask, scale and causal bounds as in the fp32 body; the
        // mask, the same for every query row, staged per key tile.
        assert!(
            ptx.contains("mask_tile[0 * 32 + e] = j < 77 ? a3[b * 77 + j] : 0.0f;"),
            "{ptx}"
        );
        assert!(
            ptx.contains(
                "const float x = sc[mt][nt][e] * 0.125f + mask_tile[st * 32 + nt * 8 + 2 * t + (e % 2)];"
            ),
            "{ptx}"
        );
        assert!(
            ptx.contains("sc[mt][nt][e] = (j < 77 && j <= qi) ? x : -INFINITY;"),
            "{ptx}"
        );
        // A tile of keys that all exist and precede the m16 tile's rows
        // takes its scores without the bounds.
        assert!(
            ptx.contains("if (k0 + 32 <= 77 && k0 + 32 - 1 <= q0 + r0) {"),
            "{ptx}"
        );
        assert!(ptx.contains("sc[mt][nt][e] = x;"), "{ptx}");
        // exp(x - m) as 2^(x log2 e - m log2 e) on the hardware's ex2.
        assert!(
            ptx.contains(
                "sc[mt][nt][e] = tcc_ex2(fma(sc[mt][nt][e], 1.44269504f, -base_log2[e / 2]));"
            ),
            "{ptx}"
        );
        // fp32 K and V are rounded through registers: one buffer each.
        assert!(!ptx.contains("tcc_cp_async16"), "{ptx}");
        assert!(
            ptx.contains("const float inverse = sum > 0.0f ? 1.0f / sum : 0.0f;"),
            "{ptx}"
        );
        // A fragment's two neighbouring output columns, one aligned pair
        // store; an odd offset stores them one by one.
        assert!(
            ptx.contains("*(__global float2*)(a4 + ")
                && ptx.contains(
                    ") = (float2)(o[mt][dn][2 * r] * inverse, o[mt][dn][2 * r + 1] * inverse);"
                ),
            "{ptx}"
        );
        assert!(!ptx.contains("const int dd = dn * 8 + 2 * t + c;"), "{ptx}");
        // The portable body is the exact fp32 one, unchanged.
        assert!(fp32.contains("acc[dd] = fma(p, vq.x, acc[dd]);"));
        assert!(!fp32.contains("TCC_MMA"));
        assert!(text.trim_end().ends_with("#endif\n}"), "{text}");
        let mut odd = spec.clone();
        odd.output.offset = 1;
        let text = attention_kernel(&odd).unwrap();
        assert!(
            text.contains("const int dd = dn * 8 + 2 * t + c;"),
            "{text}"
        );
        assert!(!text.contains("(float2)(o[mt][dn][2 * r]"), "{text}");
    }

    #[test]
    fn groups_of_128_rows_give_each_warp_two_m16_tiles() {
        let mut spec = spec(true, false);
        spec.tensor_cores = Some(TensorCores::Bf16);
        spec.block_q = 128;
        spec.block_k = 64;
        spec.query.buffer = Buffer::f32("a0");
        // K and V in bf16 rows of 64: copied by cp.async, two buffers.
        spec.key.buffer.storage = crate::Storage::BF16;
        spec.value.buffer.storage = crate::Storage::BF16;
        let text = attention_kernel(&spec).unwrap();
        let ptx = text
            .split_once("#ifdef TCC_PTX\n")
            .and_then(|(_, rest)| rest.split_once("#else\n"))
            .expect("a PTX body")
            .0;
        // Four warps of 32 rows: 128 work-items, as many as rows, so the
        // portable body takes one row each.
        assert_eq!(warp_rows(128, 64), 32);
        assert!(text.contains("reqd_work_group_size(128, 1, 1)"), "{text}");
        assert_eq!(
            attention_launch(&spec.shape, (128, 64, 1), spec.tensor_cores, false),
            ([1, 8, 1], [128, 1, 1])
        );
        assert!(ptx.contains("float o[2][8][4];"), "{ptx}");
        assert!(ptx.contains("uint qf[2][4][4];"), "{ptx}");
        assert!(ptx.contains("float sc[2][8][4];"), "{ptx}");
        assert!(ptx.contains("const int r0 = warp * 32 + mt * 16;"), "{ptx}");
        // No mask: the row maxima over the unscaled scores (one `max` a
        // score), the scale folded into the exponent's factor.
        assert!(ptx.contains("const float x = sc[mt][nt][e];"), "{ptx}");
        assert!(
            ptx.contains("tile_max[e / 2] = fmax(tile_max[e / 2], sc[mt][nt][e]);"),
            "{ptx}"
        );
        let factor = float_literal(0.125 * std::f32::consts::LOG2_E);
        assert!(
            ptx.contains(&format!(
                "sc[mt][nt][e] = tcc_ex2(fma(sc[mt][nt][e], {factor}, -base_log2[e / 2]));"
            )),
            "{ptx}"
        );
        assert!(!ptx.contains("tcc_maximumf"), "{ptx}");
        // Each K fragment, loaded once, feeds both m16 tiles; each V
        // fragment likewise.
        let k_load = ptx
            .find("const uint b0 = *(__local const uint*)&ks[")
            .unwrap();
        let qk = &ptx[k_load..];
        assert!(
            qk.find("for (int mt = 0; mt < 2; ++mt)").unwrap() < qk.find("TCC_MMA_BF16(").unwrap(),
            "{ptx}"
        );
        let v_load = ptx.find("TCC_LDMATRIX_X4_TRANS(").unwrap();
        let pv = &ptx[v_load..];
        assert!(
            pv.find("for (int mt = 0; mt < 2; ++mt)").unwrap() < pv.find("TCC_MMA_BF16(").unwrap(),
            "{ptx}"
        );
        // The tile holds two stages of K and V (4 x 64 keys), which the
        // 128 rows of Q use first: 256 rows of 72 halves, 36 KiB.
        assert!(ptx.contains("__local ushort kv_tile[18432]"), "{ptx}");
        assert!(ptx.contains("tcc_cp_async16"), "{ptx}");
        assert!(local_bytes(128, 64, 64, 2) <= 48 * 1024);
        // A head dimension of 128 keeps warps of 16 rows.
        assert_eq!(warp_rows(128, 128), 16);
        assert_eq!(
            attention_threads((128, 32, 1), 128, Some(TensorCores::Fp16), false),
            256
        );
    }

    #[test]
    fn bf16_and_shapes_the_tensor_cores_do_not_take() {
        let mut bf16 = spec(false, false);
        bf16.tensor_cores = Some(TensorCores::Bf16);
        let text = attention_kernel(&bf16).unwrap();
        assert_eq!(text.matches("TCC_MMA_BF16(").count(), 3, "{text}");
        assert!(text.contains("tcc_bf16x2(") && text.contains("tcc_bf16_bits("));
        // Head dimension 128 with 32-key tiles fits (34 KiB of halves).
        let mut wide = bf16.clone();
        wide.shape.head_dim = 128;
        for operand in [
            &mut wide.query,
            &mut wide.key,
            &mut wide.value,
            &mut wide.output,
        ] {
            operand.strides = [0, 77 * 128, 128, 1];
        }
        assert!(tensor_cores_fit(&wide));
        // A value whose head dimension is not contiguous: element loads.
        let mut strided = bf16.clone();
        strided.value.strides = [9856, 4928, 1, 77];
        let text = attention_kernel(&strided).unwrap();
        assert!(
            text.contains("v_half[jj * 72 + dd] = tcc_bf16_bits(j < 77 ?"),
            "{text}"
        );
        assert!(!text.contains("float4*)(a2"), "{text}");
        // Buffers already in bf16 whose rows start at multiples of eight
        // elements: Q, K and V copied into the tiles as they are, 16
        // bytes a load.
        let mut stored = bf16.clone();
        for operand in [&mut stored.query, &mut stored.key, &mut stored.value] {
            operand.buffer.storage = crate::Storage::BF16;
        }
        let text = attention_kernel(&stored).unwrap();
        // K and V double-buffered: the next key tile's cp.async copies in
        // flight during this one's products, the keys past the sequence
        // zero-filled from the last key's row.
        assert!(text.contains("__local ushort kv_tile[9216]"), "{text}");
        assert!(
            text.contains("__local ushort* const v_half = kv_tile + 4608;"),
            "{text}"
        );
        assert!(
            text.contains("tcc_cp_async16((__local float*)&k_half[(st ^ 1) * 2304 + jj * 72 + dd], (__global const float*)(a1 + b * 9856 + hk * 4928 + jc * 64 + dd), bytes);"),
            "{text}"
        );
        assert!(
            text.contains("const tcc_index jc = j < 77 ? j : 76;"),
            "{text}"
        );
        assert!(text.contains("TCC_CP_ASYNC_WAIT(0);"), "{text}");
        assert!(
            text.contains("__local const ushort* ks = k_half + st * 2304;"),
            "{text}"
        );
        assert!(
            text.contains("*(__local uint4*)&q_half[r * 72 + dd] = i < 77 ? *(__global const uint4*)(a0 + b * 19712 + h * 4928 + i * 64 + dd) : (uint4)(0u);"),
            "{text}"
        );
        assert!(!text.contains("tcc_bf16_bits(j < 77"), "{text}");
        // Not whole warps of 16 rows, a head dimension off the k step of
        // 16, or TF32: the fp32 body alone, one work-item a row.
        let changes: [fn(&mut AttentionSpec); 3] = [
            |s| s.block_q = 40,
            |s| s.shape.head_dim = 72,
            |s| s.tensor_cores = Some(TensorCores::Tf32),
        ];
        for change in changes {
            let mut other = bf16.clone();
            change(&mut other);
            let text = attention_kernel(&other).unwrap();
            assert!(!text.contains("TCC_PTX"), "{text}");
            assert_eq!(other.threads(), other.block_q, "{text}");
            assert!(text.trim_end().ends_with('}'), "{text}");
        }
        // fp32 (no tensor cores): one body, as before.
        let text = attention_kernel(&spec(false, false)).unwrap();
        assert!(!text.contains("TCC_PTX") && !text.contains("#endif"));
    }

    #[test]
    fn rejects_bad_configurations() {
        let mut bad = spec(false, false);
        bad.shape.kv_heads = 3;
        assert!(attention_kernel(&bad).is_err());
        let mut bad = spec(false, false);
        bad.block_k = 128;
        bad.shape.head_dim = 128;
        assert!(attention_kernel(&bad).unwrap_err().contains("local memory"));
        let mut bad = spec(false, false);
        bad.scale = f32::NAN;
        assert!(attention_kernel(&bad).is_err());
        assert_eq!(
            attention_launch(&spec(false, false).shape, (64, 32, 1), None, false),
            ([2, 8, 1], [64, 1, 1])
        );
    }

    #[test]
    fn single_item_form_takes_the_groups_rows_in_vectors() {
        let mut cpu = spec(true, true);
        cpu.block_q = 4;
        cpu.single_item = true;
        let text = attention_kernel(&cpu).unwrap();
        assert!(text.contains("reqd_work_group_size(1, 1, 1)"), "{text}");
        assert!(
            !text.contains("barrier") && !text.contains("__local"),
            "{text}"
        );
        // A head of 64: four float16 per row, for 4 rows.
        assert!(
            text.contains("float16 q[4][4], acc[4][4];") && text.contains("vload16(0, a1 + "),
            "{text}"
        );
        assert!(
            text.contains("const tcc_index kv_end = min((tcc_index)77, q0 + 4);"),
            "{text}"
        );
        assert!(text.contains("j < 77 && j <= qi"), "{text}");
        // Grouped heads and the mask read at the clamped key.
        assert!(text.contains("const tcc_index hk = h / 2;"), "{text}");
        assert!(text.contains("a3[b * 77 + jl]"), "{text}");
        // One work-item per group in the launch, rows in groups of 4.
        assert_eq!(
            attention_launch(&cpu.shape, (4, 32, 1), None, true),
            ([20, 8, 1], [1, 1, 1])
        );
        // Head dimensions that 16 does not divide take narrower lanes.
        for (dim, lanes) in [
            (40, "float8 q[4][5]"),
            (20, "float4 q[4][5]"),
            (6, "float q[4][6]"),
        ] {
            let mut narrow = cpu.clone();
            narrow.shape.head_dim = dim;
            for operand in [
                &mut narrow.query,
                &mut narrow.key,
                &mut narrow.value,
                &mut narrow.output,
            ] {
                operand.strides = [
                    operand.strides[1] / 64 * dim * (operand.strides[0] / operand.strides[1]),
                    operand.strides[1] / 64 * dim,
                    dim,
                    1,
                ];
            }
            let text = attention_kernel(&narrow).unwrap();
            assert!(text.contains(lanes), "{dim}: {text}");
        }
    }
}
