//! The text every OpenCL C program starts with (after its `tcc_index`
//! typedef): IEEE-754 helpers, the global fence, the PTX form's TF32
//! tensor-core and `exp` helpers; and what programs compiled with
//! `--precision=tf32|fp16` add for the tensor-core GEMM pipeline, and
//! programs with int8 GEMMs (`--quantize=int8`) for theirs.

use super::writer::Precision;

/// Helpers every program may use: IEEE-754 `maximum`/`minimum` (NaN
/// propagating, unlike `fmax`/`fmin`), scalar, float4 and float16 (the
/// NaN tests combine with `|`, not `||`: no branch, so that they vectorize).
/// The program's `tcc_index` typedef comes first (see [`IndexWidth`]).
pub(super) const PRELUDE: &str = "\
/* arith.maximumf/minimumf (IEEE 754-2019 maximum/minimum): NaN propagates
 * and -0 < +0. fmax/fmin may return either zero of a (-0, +0) pair: equal
 * operands take the AND (maximum) or OR (minimum) of their bits instead. */
inline float tcc_maximumf(float a, float b) { return (isnan(a) | isnan(b)) ? NAN : a == b ? as_float(as_uint(a) & as_uint(b)) : fmax(a, b); }
inline float tcc_minimumf(float a, float b) { return (isnan(a) | isnan(b)) ? NAN : a == b ? as_float(as_uint(a) | as_uint(b)) : fmin(a, b); }
inline float4 tcc_maximumf4(float4 a, float4 b) { return select(select(fmax(a, b), as_float4(as_uint4(a) & as_uint4(b)), a == b), (float4)(NAN), isnan(a) | isnan(b)); }
inline float4 tcc_minimumf4(float4 a, float4 b) { return select(select(fmin(a, b), as_float4(as_uint4(a) | as_uint4(b)), a == b), (float4)(NAN), isnan(a) | isnan(b)); }
inline float16 tcc_maximumf16(float16 a, float16 b) { return select(select(fmax(a, b), as_float16(as_uint16(a) & as_uint16(b)), a == b), (float16)(NAN), isnan(a) | isnan(b)); }
/* A fence that makes this work-item's global stores visible device-wide
 * (split-K publishes partial tiles with it); the PTX back end defines
 * TCC_PTX and gets NVIDIA's membar.gl directly. */
#ifdef TCC_PTX
inline void tcc_global_fence(void) { __nvvm_membar_gl(); }
#else
inline void tcc_global_fence(void) { mem_fence(CLK_GLOBAL_MEM_FENCE); }
#endif
#ifdef TCC_PTX
/* TF32 tensor cores (--precision=tf32): round to TF32, and one
 * mma.sync.m16n8k8 accumulating into four fp32 registers. */
inline uint tcc_tf32(float x) { uint r; __asm__(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x)); return r; }
#define TCC_MMA_TF32(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1) \\
  __asm__(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" \\
          : \"+f\"(c0), \"+f\"(c1), \"+f\"(c2), \"+f\"(c3) \\
          : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))
#endif
/* exp of a float. The PTX form replaces libclc's portable polynomial
 * (twice as slow as NVIDIA's own in a row softmax) with the hardware's
 * 2^f: x log2(e) = j + f with |f| <= 1/2 (one fma, and the bits of log2(e)
 * the float constant lacks), ex2.approx of f, then 2^j in two halves so
 * that neither scale overflows before the product does. About 2 ulp;
 * NaN stays NaN, the clamps give inf and 0. */
#ifdef TCC_PTX
inline float tcc_expf(float x) {
  const float y = x > 88.8f ? 88.8f : (x < -104.0f ? -104.0f : x);
  const float j = rint(y * 1.44269504f);
  const float f = fma(y, 1.44269504f, -j) + y * 1.92596303e-8f;
  float p;
  __asm__(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(p) : \"f\"(f));
  const int k = (int)j, k1 = k / 2, k2 = k - k1;
  return p * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
}
#else
inline float tcc_expf(float x) { return exp(x); }
#endif
";

/// The inline PTX of the tensor-core GEMM pipeline (`tcc-kernels`'
/// `gemm::tensor_cores`), only in programs compiled for tensor cores so
/// that fp32 programs stay as they were: 16-byte `cp.async` copies into
/// local memory (a source size below 16 zero-fills the rest) and 8-byte
/// ones of four halves, with their commit and wait, `ldmatrix` of four 8x8
/// 16-bit blocks (8x4 words), fp32 pairs packed into half pairs, fp32
/// rounded to the bits of a half or a bfloat16 (the half tiles' register
/// staging), and the FP16 and BF16 `mma.sync.m16n8k16`; for the
/// flash-attention kernel's tensor-core body also bfloat16 pairs and a
/// warp butterfly shuffle (its row maxima and sums over a quad).
/// (The TF32 `mma` and `tcc_tf32` are in [`PRELUDE`].)
const TENSOR_CORES: &str = "\
#ifdef TCC_PTX
/* Tensor-core GEMM pipeline (--precision=tf32|fp16|bf16). */
inline void tcc_cp_async16(__local float* dst, __global const float* src, int bytes) {
  __asm__ volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"((uint)(ulong)dst), \"l\"(src), \"r\"(bytes) : \"memory\");
}
inline void tcc_cp_async8(__local void* dst, __global const void* src, int bytes) {
  __asm__ volatile(\"cp.async.ca.shared.global [%0], [%1], 8, %2;\" :: \"r\"((uint)(ulong)dst), \"l\"(src), \"r\"(bytes) : \"memory\");
}
inline ushort tcc_f16_bits(float x) { ushort r; __asm__(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x)); return r; }
inline ushort tcc_bf16_bits(float x) { ushort r; __asm__(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x)); return r; }
inline void tcc_cp_async_commit(void) { __asm__ volatile(\"cp.async.commit_group;\" ::: \"memory\"); }
#define TCC_CP_ASYNC_WAIT(n) __asm__ volatile(\"cp.async.wait_group \" #n \";\" ::: \"memory\")
#define TCC_LDMATRIX_X4(r0, r1, r2, r3, p) \\
  __asm__ volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\" \\
                   : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3) : \"r\"((uint)(ulong)(p)) : \"memory\")
/* The same four 8x8 matrices transposed: the B fragments of a row-major K x N tile. */
#define TCC_LDMATRIX_X4_TRANS(r0, r1, r2, r3, p) \\
  __asm__ volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\" \\
                   : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3) : \"r\"((uint)(ulong)(p)) : \"memory\")
/* lo in the low half, as a fragment's element pairs are ordered. */
inline uint tcc_f16x2(float lo, float hi) { uint r; __asm__(\"cvt.rn.f16x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo)); return r; }
inline uint tcc_bf16x2(float lo, float hi) { uint r; __asm__(\"cvt.rn.bf16x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo)); return r; }
/* x from the lane whose id differs in the bits of `lanes` (a warp's butterfly). */
inline float tcc_shfl_xor(float x, int lanes) { uint r; __asm__ volatile(\"shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\" : \"=r\"(r) : \"r\"(as_uint(x)), \"r\"(lanes)); return as_float(r); }
#define TCC_MMA_F16(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1) \\
  __asm__(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" \\
          : \"+f\"(c0), \"+f\"(c1), \"+f\"(c2), \"+f\"(c3) \\
          : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))
#define TCC_MMA_BF16(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1) \\
  __asm__(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" \\
          : \"+f\"(c0), \"+f\"(c1), \"+f\"(c2), \"+f\"(c3) \\
          : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))
#endif
";

/// What a program compiled at `precision` adds after [`PRELUDE`]: nothing
/// for fp32.
fn precision_prelude(precision: Precision) -> &'static str {
    match precision {
        Precision::Fp32 => "",
        Precision::Tf32 | Precision::Fp16 | Precision::Bf16 => TENSOR_CORES,
    }
}

/// The int8 `mma.sync.m16n8k32` of int8 GEMMs' PTX body (`tcc-kernels`'
/// `gemm::int8`): four int8 of consecutive k per fragment word, int32
/// accumulators.
const INT8_MMA: &str = "\
#ifdef TCC_PTX
/* int8 tensor cores (--quantize=int8): s8 x s8 products summed exactly in s32. */
#define TCC_MMA_S8(c0, c1, c2, c3, a0, a1, a2, a3, b0, b1) \\
  __asm__(\"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" \\
          : \"+r\"(c0), \"+r\"(c1), \"+r\"(c2), \"+r\"(c3) \\
          : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))
#endif
";

/// What a program adds after [`PRELUDE`]: the tensor-core pipeline's
/// helpers at `precision` tf32 or fp16, or where a kernel (one of
/// `kernels`' texts) multiplies int8 on tensor cores, with the int8
/// `mma` beside them; nothing for an fp32 program without int8 GEMMs.
pub(super) fn program_prelude<'a>(
    precision: Precision,
    kernels: impl Iterator<Item = &'a str>,
) -> String {
    let texts: Vec<&str> = kernels.collect();
    let uses = |name: &str| texts.iter().any(|text| text.contains(name));
    let mut prelude = String::new();
    // f64 kernels need the extension enabled before their first `double`;
    // the runtime checks that the device has it when it loads the program.
    if uses("double") {
        prelude.push_str(FP64_PRAGMA);
    }
    if uses("tcc_round_f16") {
        prelude.push_str(F16_ROUNDING);
    }
    if uses("TCC_STORE_F16") || uses("tcc_store_f16_aligned") {
        prelude.push_str(tcc_kernels::buffer::F16_HELPERS);
    }
    if uses("tcc_load_f16_aligned") {
        prelude.push_str(tcc_kernels::buffer::HALF_BITS_HELPERS);
        prelude.push_str(tcc_kernels::buffer::F16_ALIGNED_LOADS);
    }
    if uses("bf16") {
        prelude.push_str(tcc_kernels::buffer::BF16_HELPERS);
    }
    if uses("tcc_warp_xor(") {
        prelude.push_str(WARP_SHUFFLE);
    }
    if uses("tcc_split_arrive(") {
        prelude.push_str(SPLIT_K_ARRIVAL);
    }
    if uses("tcc_erf(") || uses("tcc_tanh(") {
        prelude.push_str(RATIONAL_QUOTIENT);
    }
    if uses("tcc_erf(") {
        prelude.push_str(RATIONAL_ERF);
    }
    if uses("tcc_tanh(") {
        prelude.push_str(RATIONAL_TANH);
    }
    if uses("vectorize_width(") {
        prelude.push_str(QUIET_VECTORIZE_PRAGMAS);
    }
    if uses("tcc_expf_poly(") {
        prelude.push_str(POLYNOMIAL_EXP);
    }
    if uses("tcc_ex2(") {
        prelude.push_str(FAST_EXP2);
    }
    if uses("tcc_maximumf_select(") || uses("tcc_minimumf_select(") {
        prelude.push_str(SELECT_MIN_MAX);
    }
    if uses("TCC_MMA_S8(") {
        prelude.push_str(TENSOR_CORES);
        prelude.push_str(INT8_MMA);
    } else {
        prelude.push_str(precision_prelude(precision));
    }
    prelude
}

/// The line that makes `double` available to a program's kernels (the
/// runtime refuses such a program on a device without `cl_khr_fp64`,
/// naming `--demote-f64`).
/// `2^x` by the hardware's `ex2.approx.ftz.f32` (about 2 ulp, subnormal
/// results flushed to 0): the PTX form of the flash-attention kernel's
/// tensor-core softmax (`tcc-kernels`' `attention`), whose probabilities
/// are rounded to 16 bits next.
const FAST_EXP2: &str = "\
#ifdef TCC_PTX
inline float tcc_ex2(float x) { float r; __asm__(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x)); return r; }
#endif
";

/// The PTX form of split-K's hand-over between the work-groups of a tile
/// (`tcc-kernels`' `gemm::emit::split_k_fixup`): one release/acquire
/// atomic per work-group instead of a sequentially consistent fence per
/// work-item, and the partials read back from the L2 four words a load.
const SPLIT_K_ARRIVAL: &str = "\
#ifdef TCC_PTX
/* Split-K's arrival at a tile's counter, by one work-item after the
 * work-group's barrier: a release of the group's partial (cumulative over
 * the stores the barrier ordered before it) and, for the last to arrive,
 * an acquire of everyone else's. */
inline uint tcc_split_arrive(__global int* counter) { uint r; __asm__ volatile(\"atom.acq_rel.gpu.global.inc.u32 %0, [%1], -1;\" : \"=r\"(r) : \"l\"(counter) : \"memory\"); return r; }
/* Four floats from the L2 (another work-group's split-K partial). */
inline float4 tcc_load_l2_float4(__global const float* p) { float x, y, z, w; __asm__ volatile(\"ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];\" : \"=f\"(x), \"=f\"(y), \"=f\"(z), \"=f\"(w) : \"l\"(p) : \"memory\"); return (float4)(x, y, z, w); }
#endif
";

/// The warp shuffle of the row templates' PTX form (`tcc-kernels`'
/// `row::reduce_row`): `x` from the lane whose id differs in the bits of
/// `lanes`.
const WARP_SHUFFLE: &str = "\
#ifdef TCC_PTX
/* x from the lane whose id differs in the bits of `lanes` (row reductions' warp butterfly). */
inline float tcc_warp_xor(float x, int lanes) { uint r; __asm__ volatile(\"shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\" : \"=r\"(r) : \"r\"(as_uint(x)), \"r\"(lanes)); return as_float(r); }
#endif
";

/// The prelude's scalar `tcc_maximumf`/`tcc_minimumf` as selects, no
/// branch, so that a loop over elements vectorizes (CPU targets:
/// `select_min_max`): NaN propagates, -0 < +0.
const SELECT_MIN_MAX: &str = "\
/* arith.maximumf/minimumf as selects (no branch: a loop of them vectorizes). */
inline float tcc_maximumf_select(float a, float b) { return select(select(fmax(a, b), as_float(as_uint(a) & as_uint(b)), (int)(a == b)), NAN, isnan(a) | isnan(b)); }
inline float tcc_minimumf_select(float a, float b) { return select(select(fmin(a, b), as_float(as_uint(a) | as_uint(b)), (int)(a == b)), NAN, isnan(a) | isnan(b)); }
";

/// The register-blocked GEMM's epilogue asks for its loop to be
/// vectorized at the block's width (`#pragma clang loop
/// vectorize_width`). PoCL's clang front end, which builds the program
/// before the work-group compile that does vectorize the loop, cannot honour
/// it and warned once per kernel on the driver's standard error ("loop not
/// vectorized"); the measured kernels are vectorized as asked.
const QUIET_VECTORIZE_PRAGMAS: &str = "\
#pragma clang diagnostic ignored \"-Wpass-failed\"
";

/// exp of a float without a call or a branch, so that a loop over elements
/// vectorizes (CPU targets: `polynomial_exp`): x = j ln 2 + r with j the
/// nearest integer to x log2(e) (added to and subtracted from 1.5 * 2^23,
/// which rounds to nearest even without a call) and ln 2 in two parts
/// (Cody and Waite), exp(r) for |r| <= ln(2)/2 by Cephes' degree-6 fit,
/// then 2^j in two halves so that results down to the smallest subnormal
/// come out right. x is clamped to [-104, 88.8] first (exp is 0 and inf
/// beyond); NaN stays NaN. Within 1.01 ulp of the exact value (25 million
/// floats over [-110, 95] checked against double-precision exp), subnormal
/// results within 1.1e-45.
const POLYNOMIAL_EXP: &str = "\
/* exp as range reduction and a polynomial (branch-free; within 1.01 ulp). */
inline float tcc_expf_poly(float x) {
  const float y = x > 88.8f ? 88.8f : (x < -104.0f ? -104.0f : x);
  const float j = (y * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = fma(j, -0.693359375f, y);
  r = fma(j, 2.12194440e-4f, r);
  float p = fma(r, 1.9875691500e-4f, 1.3981999507e-3f);
  p = fma(p, r, 8.3334519073e-3f);
  p = fma(p, r, 4.1665795894e-2f);
  p = fma(p, r, 1.6666665459e-1f);
  p = fma(p, r, 5.0000001201e-1f);
  p = fma(p, r * r, r) + 1.0f;
  const int k = (int)j, k1 = k >> 1, k2 = k - k1;
  const float e = p * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
  return isnan(x) ? x : e;
}
";

/// The quotient of [`RATIONAL_ERF`]'s and [`RATIONAL_TANH`]'s numerator
/// and denominator. The PTX back end divides with `div.full.f32` (at most
/// 2 ulp, as OpenCL allows a float division: 2.5) where clang's `/` is
/// the correctly rounded `div.rn.f32`, a dozen instructions and a branch
/// to a slow path: a GELU epilogue evaluates one per element of the
/// product.
const RATIONAL_QUOTIENT: &str = "\
#ifdef TCC_PTX
inline float tcc_rational_quotient(float p, float q) { float r; __asm__(\"div.full.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(p), \"f\"(q)); return r; }
#else
inline float tcc_rational_quotient(float p, float q) { return p / q; }
#endif
";

/// erf of a float as a rational function of x (odd numerator over even
/// denominator in x^2, the single-precision fit Eigen and XLA use), with
/// x clamped to [-4, 4], outside which the float erf is +-1. Within
/// 4.2e-7 of the exact value (every float in [-6, 6] checked against
/// double-precision erf; 2.4e-7 more for the PTX back end's 2-ulp
/// quotient, [`RATIONAL_QUOTIENT`]); NaN stays NaN. Arithmetic and selects only, so
/// that a loop over elements vectorizes (CPU targets: `rational_erf_tanh`).
const RATIONAL_ERF: &str = "\
/* erf as a rational function (clamped to [-4, 4]; within 4.2e-7). */
inline float tcc_erf(float a) {
  const float x = fmin(fmax(a, -4.0f), 4.0f);
  const float x2 = x * x;
  float p = fma(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
  p = fma(x2, p, -2.10102402082508e-06f);
  p = fma(x2, p, -5.69250639462346e-05f);
  p = fma(x2, p, -7.34990630326855e-04f);
  p = fma(x2, p, -2.95459980854025e-03f);
  p = fma(x2, p, -1.60960333262415e-02f);
  float q = fma(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
  q = fma(x2, q, -1.68282697438203e-03f);
  q = fma(x2, q, -7.37332916720468e-03f);
  q = fma(x2, q, -1.42647390514189e-02f);
  return isnan(a) ? a : tcc_rational_quotient(x * p, q);
}
";

/// tanh of a float as a rational function (the same family's fit), x
/// clamped to +-7.9053111 where the float tanh is +-1, and x itself below
/// 4e-4. Within 3.3e-7 of the exact value (every float in [-10, 10]
/// checked; 2.4e-7 more for the PTX back end's 2-ulp quotient); NaN stays
/// NaN.
const RATIONAL_TANH: &str = "\
/* tanh as a rational function (clamped to +-7.905; within 3.3e-7). */
inline float tcc_tanh(float a) {
  const float x = fmin(fmax(a, -7.90531110763549805f), 7.90531110763549805f);
  const float x2 = x * x;
  float p = fma(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
  p = fma(x2, p, -8.60467152213735e-11f);
  p = fma(x2, p, 5.12229709037114e-08f);
  p = fma(x2, p, 1.48572235717979e-05f);
  p = fma(x2, p, 6.37261928875436e-04f);
  p = fma(x2, p, 4.89352455891786e-03f);
  float q = fma(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
  q = fma(x2, q, 2.26843463243900e-03f);
  q = fma(x2, q, 4.89352518554385e-03f);
  return isnan(a) ? a : fabs(a) < 4e-4f ? a : tcc_rational_quotient(x * p, q);
}
";

pub const FP64_PRAGMA: &str = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";

/// Rounding a `float` register to the nearest even f16 (what `arith.truncf`
/// to f16 means), through a private half: `vstore_half_rte` and
/// `vload_half` are core OpenCL C 1.2, no `cl_khr_fp16` needed. The PTX
/// form converts there and back with two `cvt`s (libclc's
/// `vstore_half_rte` rounds in software first: see `tcc_kernels`'
/// `buffer::F16_HELPERS`).
const F16_ROUNDING: &str = "\
#ifdef TCC_PTX
inline float tcc_round_f16(float x) { float r; __asm__(\"{ .reg .b16 h; cvt.rn.f16.f32 h, %1; cvt.f32.f16 %0, h; }\" : \"=f\"(r) : \"f\"(x)); return r; }
#else
inline float tcc_round_f16(float x) { ushort h; vstore_half_rte(x, 0, (__private half*)&h); return vload_half(0, (__private const half*)&h); }
#endif
";

#[cfg(test)]
mod tests {
    use super::*;

    /// A GELU's erf (or tanh) brings the rational functions and their
    /// quotient, which the PTX back end takes as `div.full.f32` and every
    /// other OpenCL compiler as a plain division.
    #[test]
    fn rational_erf_divides_with_the_ptx_quotient() {
        let kernel = "out[i] = 0.5f * x * (1.0f + tcc_erf(x * 0.70710678f));";
        let prelude = program_prelude(Precision::Fp32, std::iter::once(kernel));
        let quotient = prelude
            .find("inline float tcc_rational_quotient")
            .expect("quotient");
        let erf = prelude.find("inline float tcc_erf(").expect("erf");
        assert!(quotient < erf, "{prelude}");
        assert!(prelude.contains("#ifdef TCC_PTX\ninline float tcc_rational_quotient(float p, float q) { float r; __asm__(\"div.full.f32 %0, %1, %2;\""));
        assert!(prelude.contains(
            "#else\ninline float tcc_rational_quotient(float p, float q) { return p / q; }\n#endif"
        ));
        assert!(prelude.contains("return isnan(a) ? a : tcc_rational_quotient(x * p, q);"));
        assert!(!prelude.contains("inline float tcc_tanh("));
        // Without erf or tanh, no quotient.
        let plain = program_prelude(Precision::Fp32, std::iter::once("out[i] = x;"));
        assert!(!plain.contains("tcc_rational_quotient"), "{plain}");
    }
}
