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
//! is `-inf` gives `0 * (1 / 0)`, NaN, as the unfused softmax's
//! `exp(-inf - -inf)` does; where the maximum is still `-inf` the update
//! subtracts 0 instead, so that such keys add nothing (rather than NaN) to
//! a row that later finds a finite score.

use std::fmt::Write as _;

use crate::{Address, Buffer, KernelParameters};

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
}

/// The launch of an attention kernel: (work-groups, work-items per group)
/// along x (query blocks) and y (batch times heads).
pub fn attention_launch(shape: &AttentionShape, block_q: u32) -> ([i64; 3], [i64; 3]) {
    let block_q = i64::from(block_q.max(1));
    (
        [
            (shape.q_len + block_q - 1) / block_q,
            shape.batch * shape.heads,
            1,
        ],
        [block_q, 1, 1],
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

/// Instantiates the template.
pub fn attention_kernel(spec: &AttentionSpec) -> Result<String, String> {
    spec.check()?;
    let s = spec.shape;
    let (bq, bk, d) = (spec.block_q, spec.block_k, s.head_dim);
    let group = s.heads / s.kv_heads;
    let chunk = bk.min(CHUNK);
    let mut out = String::new();
    let w = |out: &mut String, line: &str| {
        let _ = writeln!(out, "{line}");
    };
    w(&mut out, &spec.comment);
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({bq}, 1, 1)))\nvoid {}({}) {{",
        spec.name, spec.parameters
    );
    let _ = writeln!(
        out,
        "  __local float k_tile[{tile}];\n  __local float v_tile[{tile}];",
        tile = i64::from(bk) * d
    );
    let _ = writeln!(
        out,
        "  const int lid = (int)get_local_id(0);\n  \
         const tcc_index q0 = (tcc_index)get_group_id(0) * {bq};\n  \
         const tcc_index bh = (tcc_index)get_group_id(1);\n  \
         const tcc_index b = bh / {heads}, h = bh % {heads};\n  \
         const tcc_index hk = h / {group};\n  \
         const tcc_index i = q0 + lid;\n  \
         /* Rows past the sequence compute on the last row and store nothing. */\n  \
         const tcc_index qi = i < {q_len} ? i : {last};",
        heads = s.heads,
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
    let _ = writeln!(
        out,
        "    barrier(CLK_LOCAL_MEM_FENCE);\n    \
         for (int e = lid; e < {tile}; e += {bq}) {{\n      \
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
    let _ = writeln!(
        out,
        "    /* Chunks past the last key visited are skipped (uniform per group). */\n    \
         for (int c0 = 0; c0 < {bk} && k0 + c0 < kv_end; c0 += {chunk}) {{\n      \
         float sc[{chunk}];\n      \
         float chunk_max = -INFINITY;\n      \
         #pragma unroll\n      \
         for (int c = 0; c < {chunk}; ++c) {{\n        \
         const int jj = c0 + c;\n        \
         const tcc_index j = k0 + jj;\n        \
         float dot = 0.0f;\n        \
         #pragma unroll\n        \
         for (int dd = 0; dd < {d}; ++dd)\n          \
         dot = fma(q[dd], k_tile[jj * {d} + dd], dot);",
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
         for (int dd = 0; dd < {d}; ++dd)\n          \
         acc[dd] = fma(p, v_tile[jj * {d} + dd], acc[dd]);\n      }}\n      \
         m = m_new;\n    }}\n  }}",
    );
    let o_at = spec.output.address(["b", "h", "i", "dd"]);
    let _ = writeln!(
        out,
        "  if (i < {q_len}) {{\n    \
         const float inverse = 1.0f / l;\n    \
         #pragma unroll\n    \
         for (int dd = 0; dd < {d}; ++dd)\n      \
         {}\n  }}\n}}",
        spec.output.buffer.store("acc[dd] * inverse", &o_at),
        q_len = s.q_len,
    );
    Ok(out)
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
        }
    }

    #[test]
    fn online_softmax_over_staged_tiles() {
        let text = attention_kernel(&spec(false, true)).unwrap();
        assert!(text.contains("reqd_work_group_size(64, 1, 1)"), "{text}");
        assert!(text.contains("__local float k_tile[2048];"), "{text}");
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
        assert!(
            text.contains("acc[dd] = fma(p, v_tile[jj * 64 + dd], acc[dd]);"),
            "{text}"
        );
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
            attention_launch(&spec(false, false).shape, 64),
            ([2, 8, 1], [64, 1, 1])
        );
    }
}
