// Prototype (issue 9, session 11, third round): TF32 GEMM on Hopper with
// both operands pre-packed in global memory into the exact shared-memory
// image wgmma's descriptors read, so that the load/store unit carries no
// operand traffic. C[M][N] = A[M][K] B[K][N], row-major, M, N, K multiples
// of the tile. `pack` rewrites A (rows m, K-contiguous) and B (rows n: a
// transpose) into blocks of ROWS x KS floats, one contiguous block per
// (tile, k stage), K-major, in the 32-, 64- or 128-byte swizzle for KS 8, 16
// or 32, rounded to TF32 on the way. The GEMM (`gemm_packed`) then moves
// each stage with ONE bulk copy per operand (`cp.async.bulk` completing on
// an mbarrier, plain sm_90, no tensor map), issued by one thread (a
// producer warp, or thread 0 inline), and both wgmma operands come from
// shared memory (SS: two descriptors, no register fragments, no transpose
// trick). `full` / `empty` mbarriers per stage, `wgmma.wait_group 1`.
// Cases (main): each at 2048^3 and 4096^3 against a naive fp32 kernel,
// timed with events (the GEMM alone, A's and B's packing alone: B's
// simple `pack` and the shared-memory transpose `pack_tiled`, which the
// correctness check and the sums use);
// `packed [NAME_SUBSTRING [SIZE [REPEATS]]]` runs only those (`packed
// --list`: the case names). DYN cases use more than
// 48 KiB (dynamic shared memory, CUDA only: OpenCL cannot).
// The problem and the reference check: harness.h (shared with proto.cu).
// Build and run: run_packed.sh (on the GPU machine; docs/benchmarks.md).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cmath>
#include <cstring>
#include "packed_asm.h"
#include "harness.h"

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// Swizzle of a K-major row of KS floats: row r's 16-byte chunk c lives at
// chunk c ^ swz(r) (32-byte: address bit 4 ^= bit 7; 64: bits 4-5 ^= 7-8;
// 128: bits 4-6 ^= 7-9).
template <int KS>
__host__ __device__ __forceinline__ int swz(int r) {
  static_assert(KS == 8 || KS == 16 || KS == 32, "rows of 32, 64 or 128 bytes");
  return KS == 32 ? (r % 8) : KS == 16 ? ((r / 2) % 4) : ((r / 4) % 2);
}
__device__ __forceinline__ float tf32_rne(float x) {  // round half away, low 13 bits cleared
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u);
}

// Packs a ROWS x K operand into blocks [R / ROWS][K / KS][ROWS][KS].
// TRANS 0: element (r, k) is src[r * ld + k] (A, ld = K); TRANS 1:
// src[k * ld + r] (B, ld = N). One thread per 16-byte output chunk, the
// output written in order (coalesced); A reads row segments of KS floats,
// B reads 4 rows of 32 consecutive columns per warp (coalesced).
template <int ROWS, int KS, int TRANS>
__global__ void pack(const float* __restrict__ src, float* __restrict__ dst, int R, int K, int ld) {
  const size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;  // output chunk index
  constexpr int CH = KS / 4;
  const size_t total = (size_t)R * K / 4;
  if (q >= total) return;
  int r, c;
  size_t blk;
  if (TRANS) {  // chunk order inside a block: c major, r minor (r fastest: coalesced reads of B's rows)
    r = q % ROWS; c = (q / ROWS) % CH; blk = q / (ROWS * CH);
  } else {
    c = q % CH; r = (q / CH) % ROWS; blk = q / (ROWS * CH);
  }
  const int KT = K / KS;
  const int kt = blk % KT, rb = blk / KT;
  const int row = rb * ROWS + r, k0 = kt * KS + 4 * c;
  float4 v;
  if (TRANS) {
    v.x = src[(size_t)k0 * ld + row]; v.y = src[(size_t)(k0 + 1) * ld + row];
    v.z = src[(size_t)(k0 + 2) * ld + row]; v.w = src[(size_t)(k0 + 3) * ld + row];
  } else {
    v = *reinterpret_cast<const float4*>(src + (size_t)row * ld + k0);
  }
  v.x = tf32_rne(v.x); v.y = tf32_rne(v.y); v.z = tf32_rne(v.z); v.w = tf32_rne(v.w);
  *reinterpret_cast<float4*>(dst + blk * ROWS * KS + r * KS + 4 * (c ^ swz<KS>(r))) = v;
}

// B's packing through a shared-memory transpose: a block reads a 32 (k) x
// 64 (n) tile of B in whole rows, then writes 64 image rows of KS floats
// per KS-block of k: contiguous runs of 64 KS x 4 bytes (ROWS % 64 == 0).
template <int ROWS, int KS>
__global__ void __launch_bounds__(256) pack_tiled(const float* __restrict__ src, float* __restrict__ dst, int R, int K,
                                                  int ld) {
  __shared__ float t[32][65];
  const int n0 = blockIdx.x * 64, k0 = blockIdx.y * 32, tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int k = i * 4 + tid / 64, n = tid % 64;
    t[k][n] = tf32_rne(src[(size_t)(k0 + k) * ld + n0 + n]);
  }
  __syncthreads();
  constexpr int CH = KS / 4;
  const int KT = K / KS;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int j = i * 256 + tid, c = j % CH, n = (j / CH) % 64, kb = j / (CH * 64);
    const int k = kb * KS + 4 * c, row = n0 + n, r = row % ROWS, kt = (k0 + kb * KS) / KS;
    const float4 v = make_float4(t[k][n], t[k + 1][n], t[k + 2][n], t[k + 3][n]);
    *reinterpret_cast<float4*>(dst + ((size_t)(row / ROWS) * KT + kt) * ROWS * KS + r * KS + 4 * (c ^ swz<KS>(r))) = v;
  }
}

// mbarriers and the bulk copy
__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" :: "r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* b, unsigned bytes) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" :: "r"(smem_u32(b)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  unsigned ok;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(smem_u32(b)), "r"(parity) : "memory");
  } while (!ok);
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// K-major swizzled descriptor: SBO one 8-row atom (8 x KS x 4 bytes), LBO
// unused (1), layout type 3 (32-byte), 2 (64-byte) or 1 (128-byte).
template <int KS>
__device__ __forceinline__ unsigned long long desc(unsigned addr) {
  constexpr unsigned long long type = KS == 32 ? 1 : KS == 16 ? 2 : 3;
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)((8 * KS * 4) >> 4) << 32) |
         (type << 62);
}
template <int TN>
__device__ __forceinline__ void wgmma_ss(float* d, unsigned long long da, unsigned long long db) {
  if constexpr (TN == 64) wgmma_ss_n64(d, da, db);
  else if constexpr (TN == 128) wgmma_ss_n128(d, da, db);
  else wgmma_ss_n256(d, da, db);
}

// BM = 64 WGM rows, BN columns, WGM x WGN consumer warpgroups, each a 64 x
// (BN / WGN) block of C; KS k per stage, STAGES stages; PW: one extra
// producer warp (else thread 0 refills inline); MINB: blocks per SM for
// the register budget; DYN: dynamic shared memory (CUDA only, > 48 KiB);
// W: wgmma groups left in flight (stage kt - W is released at stage kt).
template <int BM, int BN, int WGN, int KS, int STAGES, int PW, int MINB, int DYN, int W>
__global__ void __launch_bounds__((BM / 64) * WGN * 128 + 32 * PW, MINB)
    gemm_packed(const float* __restrict__ Ap, const float* __restrict__ Bp, float* __restrict__ C, int M, int N, int K) {
  constexpr int WGM = BM / 64, TN = BN / WGN, CONSUMERS = WGM * WGN;
  static_assert(W >= 1 && W < STAGES, "a free stage to refill");
  constexpr unsigned A_BYTES = BM * KS * 4, B_BYTES = BN * KS * 4, STAGE = A_BYTES + B_BYTES;
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "1024-byte aligned images");
  __shared__ __align__(1024) unsigned char static_smem[DYN ? 16 : STAGES * STAGE];
  __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
  extern __shared__ unsigned char dyn_smem[];
  unsigned char* smem = static_smem;
  if constexpr (DYN) {
    const unsigned a = smem_u32(dyn_smem);
    smem = dyn_smem + ((1024 - (a & 1023)) & 1023);
  }
  const int tid = threadIdx.x, KT = K / KS;
  const int mb = blockIdx.y, nb = blockIdx.x;
  const float* a_img = Ap + (size_t)mb * KT * BM * KS;
  const float* b_img = Bp + (size_t)nb * KT * BN * KS;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], CONSUMERS * 4); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  // Stage kt into slot kt % STAGES, once its previous use has been released.
  auto produce = [&](int kt) {
    const int s = kt % STAGES;
    if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
    mbar_expect_tx(&full[s], STAGE);
    bulk_copy(smem + s * STAGE, a_img + (size_t)kt * BM * KS, A_BYTES, &full[s]);
    bulk_copy(smem + s * STAGE + A_BYTES, b_img + (size_t)kt * BN * KS, B_BYTES, &full[s]);
  };
  if (PW && tid >= CONSUMERS * 128) {  // producer warp
    if (tid == CONSUMERS * 128)
      for (int kt = 0; kt < KT; ++kt) produce(kt);
    return;
  }
  if (!PW && tid == 0)
    for (int kt = 0; kt < STAGES && kt < KT; ++kt) produce(kt);
  const int wg = tid / 128, wgm = wg % WGM, wgn = wg / WGM, lane = tid % 32, w4 = (tid / 32) % 4;
  float d[TN / 2];
#pragma unroll
  for (int i = 0; i < TN / 2; ++i) d[i] = 0.f;
  for (int kt = 0; kt < KT; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], (kt / STAGES) & 1);
    const unsigned a_base = smem_u32(smem + s * STAGE) + wgm * 64 * KS * 4;
    const unsigned b_base = smem_u32(smem + s * STAGE + A_BYTES) + wgn * TN * KS * 4;
    wg_fence();
#pragma unroll
    for (int k = 0; k < KS / 8; ++k) wgmma_ss<TN>(d, desc<KS>(a_base + 32 * k), desc<KS>(b_base + 32 * k));
    wg_commit();
    wg_wait<W>();
    if (kt >= W) {
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[(kt - W) % STAGES]);
      if (!PW && tid == 0 && kt - W + STAGES < KT) produce(kt - W + STAGES);
    }
  }
  wg_wait<0>();
  // d[i]: row 16 w4 + lane / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (lane % 4) + i % 2
  float* c = C + (size_t)(mb * BM + wgm * 64 + 16 * w4 + lane / 4) * N + nb * BN + wgn * TN + 2 * (lane % 4);
#pragma unroll
  for (int i = 0; i < TN / 2; i += 2)
    *reinterpret_cast<float2*>(c + (size_t)(8 * ((i / 2) % 2)) * N + 8 * (i / 4)) = make_float2(d[i], d[i + 1]);
}

struct Case {
  const char* name;
  void (*gemm)(const float*, const float*, float*, int, int, int);
  void (*pack_a)(const float*, float*, int, int);
  void (*pack_b)(const float*, float*, int, int);
  void (*pack_b_tiled)(const float*, float*, int, int);
  int smem;
};
template <int BM, int BN, int WGN, int KS, int STAGES, int PW, int MINB, int DYN, int W>
void launch(const float* Ap, const float* Bp, float* C, int M, int N, int K) {
  constexpr int smem = STAGES * (BM + BN) * KS * 4 + 1024;
  auto k = gemm_packed<BM, BN, WGN, KS, STAGES, PW, MINB, DYN, W>;
  if (DYN) cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  k<<<dim3(N / BN, M / BM), (BM / 64) * WGN * 128 + 32 * PW, DYN ? smem : 0>>>(Ap, Bp, C, M, N, K);
}
template <int ROWS, int KS>
void launch_pack_a(const float* A, float* out, int M, int K) {
  const size_t chunks = (size_t)M * K / 4;
  pack<ROWS, KS, 0><<<(chunks + 255) / 256, 256>>>(A, out, M, K, K);
}
template <int ROWS, int KS>
void launch_pack_b(const float* B, float* out, int K, int N) {
  const size_t chunks = (size_t)N * K / 4;
  pack<ROWS, KS, 1><<<(chunks + 255) / 256, 256>>>(B, out, N, K, N);
}
template <int ROWS, int KS>
void launch_pack_b_tiled(const float* B, float* out, int K, int N) {
  pack_tiled<ROWS, KS><<<dim3(N / 64, K / 32), 256>>>(B, out, N, K, N);
}
#define PCASE(BM, BN, WGN, KS, ST, PW, MINB, DYN, W)                                                          \
  {"P " #BM "x" #BN " wgn" #WGN " ks" #KS " st" #ST " pw" #PW " minb" #MINB " dyn" #DYN " w" #W,               \
   launch<BM, BN, WGN, KS, ST, PW, MINB, DYN, W>, launch_pack_a<BM, KS>, launch_pack_b<BN, KS>,                   \
   launch_pack_b_tiled<BN, KS>, ST*(BM + BN) * KS * 4 + 16 * ST}

template <typename F>
float time_ms(F f, int iters) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0);
  for (int i = 0; i < iters; ++i) f();
  cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return ms / iters;
}

int main(int argc, char** argv) {
  Case cases[] = {
      // run 1's cases (W 1)
      PCASE(128, 128, 1, 8, 5, 1, 2, 0, 1), PCASE(128, 128, 1, 8, 5, 1, 1, 0, 1), PCASE(128, 128, 1, 8, 5, 0, 2, 0, 1),
      PCASE(128, 128, 1, 16, 2, 1, 2, 0, 1), PCASE(128, 256, 2, 8, 3, 1, 1, 0, 1), PCASE(128, 256, 1, 8, 3, 1, 1, 0, 1),
      PCASE(256, 128, 1, 8, 3, 1, 1, 0, 1), PCASE(128, 128, 1, 32, 4, 1, 1, 1, 1), PCASE(128, 256, 2, 16, 4, 1, 1, 1, 1),
      // run 2: more groups in flight; smaller tiles, more blocks (more bytes in flight) per SM
      PCASE(128, 128, 1, 8, 5, 1, 2, 0, 2), PCASE(128, 128, 1, 8, 5, 1, 2, 0, 3),
      PCASE(64, 128, 1, 8, 7, 1, 4, 0, 1), PCASE(64, 128, 1, 8, 7, 1, 4, 0, 2), PCASE(64, 128, 1, 8, 7, 1, 3, 0, 2),
      PCASE(64, 256, 1, 8, 4, 1, 2, 0, 1), PCASE(128, 64, 1, 8, 7, 1, 3, 0, 2), PCASE(64, 128, 1, 16, 3, 1, 4, 0, 1),
      PCASE(128, 256, 2, 16, 4, 1, 1, 1, 2), PCASE(128, 256, 2, 16, 6, 1, 1, 1, 2),
      // run 3: around the best one under 48 KiB (64x256, one consumer warpgroup of 128 accumulators)
      PCASE(64, 256, 1, 8, 4, 1, 2, 0, 2), PCASE(64, 256, 1, 16, 2, 1, 2, 0, 1), PCASE(64, 256, 1, 8, 4, 0, 3, 0, 1),
      PCASE(64, 256, 1, 8, 4, 0, 2, 0, 1),
  };
  if (argc > 1 && !strcmp(argv[1], "--list")) {
    for (auto& c : cases) printf("%s\n", c.name);
    return 0;
  }
  const char* only = argc > 1 ? argv[1] : "";
  const int one_size = argc > 2 ? atoi(argv[2]) : 0;
  const int repeats = argc > 3 ? atoi(argv[3]) : 2;
  for (int size : {2048, 4096}) {
    if (one_size && size != one_size) continue;
    Problem p = make_problem(size);
    float *Ap, *Bp;  // packed images of A and B (M = N = K)
    cudaMalloc(&Ap, p.hr.size() * 4);
    cudaMalloc(&Bp, p.hr.size() * 4);
    const int M = p.M, N = p.N, K = p.K;
    const float *A = p.A, *B = p.B;
    float* C = p.C;
    for (auto& c : cases) {
      if (!strstr(c.name, only)) continue;
      cudaMemset(C, 0, (size_t)M * N * 4);
      c.pack_a(A, Ap, M, K);
      c.pack_b_tiled(B, Bp, K, N);
      c.gemm(Ap, Bp, C, M, N, K);
      double max_err, max_ref;
      if (!check_result(p, size, c.name, max_err, max_ref)) return 1;
      for (int i = 0; i < 3; ++i) c.gemm(Ap, Bp, C, M, N, K);
      const double flop = 2.0 * M * N * K;
      for (int rep = 0; rep < repeats; ++rep) {
        const float g = time_ms([&] { c.gemm(Ap, Bp, C, M, N, K); }, 20);
        const float pa = time_ms([&] { c.pack_a(A, Ap, M, K); }, 20);
        const float pb = time_ms([&] { c.pack_b(B, Bp, K, N); }, 20);
        const float pt = time_ms([&] { c.pack_b_tiled(B, Bp, K, N); }, 20);
        const float all = time_ms([&] { c.pack_a(A, Ap, M, K); c.pack_b_tiled(B, Bp, K, N); c.gemm(Ap, Bp, C, M, N, K); }, 20);
        const float ag = time_ms([&] { c.pack_a(A, Ap, M, K); c.gemm(Ap, Bp, C, M, N, K); }, 20);
        printf("%d %-44s smem=%6d gemm ms=%.3f TF/s=%.1f | pack A ms=%.3f B ms=%.3f B tiled ms=%.3f | pack A+gemm TF/s=%.1f"
               " | packs (B tiled)+gemm ms=%.3f TF/s=%.1f | max_err=%.3g (max |ref| %.3g)\n",
               size, c.name, c.smem, g, flop / g / 1e9, pa, pb, pt, flop / ag / 1e9, all, flop / all / 1e9, max_err, max_ref);
      }
    }
    free_problem(p);
    cudaFree(Ap); cudaFree(Bp);
  }
  return 0;
}
