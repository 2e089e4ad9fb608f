// Prototype (issue 9, session 11): a TF32 GEMM main loop on Hopper's wgmma
// under OpenCL's 48 KiB local-memory limit, to find a working descriptor /
// fence recipe and the speed ceiling before porting it into tcc's template.
// C[M][N] = A[M][K] B[K][N], all row-major, M, N, K multiples of the tile.
// wgmma cannot read a row-major B from shared memory for TF32 (both shared
// operands must be K-major), so the product is computed transposed:
// C^T = B^T A^T, wgmma's A = B^T from registers (loaded from a plain,
// XOR-swizzled shared tile of B), wgmma's B = A^T from shared memory through
// a descriptor (A's rows are K-major already), in the no-swizzle core-matrix
// layout that 16-byte cp.async copies write directly (`gemm`). Variant
// `gemmh` loads B's fragments straight from global memory (shared memory
// holds only A, so a stage spans more k) and, with SW, writes A in the
// 128-byte swizzle layout (the fastest: tcc's wgmma body follows it).
// Session 11's second round added `gemmp` (P: an mbarrier pipeline with
// no block barrier in the main loop) and `gemmv` (V: B's fragments as
// float2 / float4 `.cg` loads, tcc's layout and a two-block one).
// Cases: CASE (gemm), HCASE (gemmh, no swizzle), SCASE (gemmh, swizzled),
// PCASE, VCASE; each at 2048^3 and 4096^3 against a naive fp32 kernel,
// timed with events; `proto NAME_SUBSTRING SIZE` runs only those (ncu).
// Build and run: run.sh (on the GPU machine; docs/benchmarks.md).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cmath>
#include <cstring>
#include "wgmma_asm.h"
#include "harness.h"

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void cp_async16(void* s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem_addr(s)), "l"(g));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
__device__ __forceinline__ void fence_proxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

template <int BM>
__device__ __forceinline__ void wgmma(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned long long desc) {
  if constexpr (BM == 64) wgmma_n64(d, a0, a1, a2, a3, desc);
  else if constexpr (BM == 128) wgmma_n128(d, a0, a1, a2, a3, desc);
  else wgmma_n256(d, a0, a1, a2, a3, desc);
}

// LBO: byte distance of core matrices adjacent along K; SBO: along M/N.
__device__ __forceinline__ unsigned long long desc_of(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32);
}

__device__ __forceinline__ unsigned tf32_round(float x) { return __float_as_uint(x) + 0x1000u; }

// A thread's place: its warpgroup, warp in it, and fragment coordinates.
struct Ids { int tid, wg, warp, group, tig; };
__device__ __forceinline__ Ids thread_ids() {
  const int tid = threadIdx.x, lane = tid % 32;
  return {tid, tid / 128, (tid / 32) % 4, lane / 4, lane % 4};
}

// d[r][4j + e]: wgmma row (C column) 64 r + 8 (e / 2) from `c` (the thread's
// first column: 64 (wg NR) + 16 warp + group), wgmma column (C row)
// 8 j + 2 tig + e % 2.
template <int NR, int BM>
__device__ __forceinline__ void store(const float (&d)[NR][BM / 2], float* c, int N, int tig) {
#pragma unroll
  for (int r = 0; r < NR; ++r)
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) c[(size_t)(8 * j + 2 * tig + e % 2) * N + r * 64 + 8 * (e / 2)] = d[r][4 * j + e];
}

// cp.async copies of a BM x KS tile of A (row stride K) into the no-swizzle
// core-matrix layout: copy i is row 8 (i / (2 KS)) + i % 8, k chunk
// (i / 8) % (KS / 4), at byte 16 i (k-adjacent core matrices 128 bytes
// apart, row-adjacent ones KS / 4 x 128).
template <int BM, int KS, int THREADS>
__device__ __forceinline__ void copy_a_core(float* s, const float* a, int K, int tid) {
#pragma unroll
  for (int i = tid; i < BM * KS / 4; i += THREADS) {
    const int r8 = i % 8, c = (i / 8) % (KS / 4), g = i / (8 * (KS / 4));
    cp_async16(s + i * 4, a + (size_t)(g * 8 + r8) * K + 4 * c);
  }
}

// BM: rows of C per block (wgmma's N); WG warpgroups, each NR x 64 columns
// of C (wgmma's M); KS: k per stage; SWAP: exchange LBO and SBO (to test
// the descriptor's field meaning); WAIT: wgmma groups left in flight.
template <int BM, int WG, int NR, int KS, int STAGES, int SWAP, int WAIT>
__global__ void __launch_bounds__(WG * 128, 1) gemm(const float* __restrict__ A, const float* __restrict__ B,
                                                   float* __restrict__ C, int M, int N, int K) {
  constexpr int BN = 64 * WG * NR, THREADS = WG * 128;
  constexpr int A_STAGE = BM * KS, B_STAGE = KS * BN;
  __shared__ __align__(128) float smem[STAGES * (A_STAGE + B_STAGE)];
  float* sa = smem;
  float* sb = smem + STAGES * A_STAGE;
  const Ids ids = thread_ids();
  const int tid = ids.tid, wg = ids.wg, warp = ids.warp, group = ids.group, tig = ids.tig;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float d[NR][BM / 2] = {};
  auto load = [&](int stage, int kt) {
    const int k0 = kt * KS;
    copy_a_core<BM, KS, THREADS>(sa + stage * A_STAGE, A + (size_t)m0 * K + k0, K, tid);
#pragma unroll
    for (int i = tid; i < KS * BN / 4; i += THREADS) {
      const int k = i / (BN / 4), j = i % (BN / 4);
      cp_async16(sb + stage * B_STAGE + k * BN + ((j ^ ((k % 4) * 2)) * 4), B + (size_t)(k0 + k) * N + n0 + 4 * j);
    }
  };
  const int KT = K / KS;
  constexpr int AHEAD = STAGES - 1 - WAIT;
  for (int s = 0; s < AHEAD; ++s) {
    if (s < KT) load(s, s);
    cp_commit();
  }
  constexpr unsigned LBO = SWAP ? (KS / 4) * 128 : 128, SBO = SWAP ? 128 : (KS / 4) * 128;
  for (int kt = 0; kt < KT; ++kt) {
    cp_wait<AHEAD - 1>();
    fence_proxy();
    __syncthreads();
    const int ahead = kt + AHEAD;
    if (ahead < KT) load(ahead % STAGES, ahead);
    cp_commit();
    const int st = kt % STAGES;
    const float* b_st = sb + st * B_STAGE;
    const unsigned a_base = smem_addr(sa + st * A_STAGE);
    unsigned f[KS / 8][NR][4];
#pragma unroll
    for (int s = 0; s < KS / 8; ++s)
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        const int n = (wg * NR + r) * 64 + warp * 16 + group, k = s * 8 + tig;
        f[s][r][0] = tf32_round(b_st[k * BN + (n ^ (tig * 8))]);
        f[s][r][1] = tf32_round(b_st[k * BN + ((n + 8) ^ (tig * 8))]);
        f[s][r][2] = tf32_round(b_st[(k + 4) * BN + (n ^ (tig * 8))]);
        f[s][r][3] = tf32_round(b_st[(k + 4) * BN + ((n + 8) ^ (tig * 8))]);
      }
    wg_fence();
#pragma unroll
    for (int s = 0; s < KS / 8; ++s) {
      const unsigned long long desc = desc_of(a_base + s * 256, LBO, SBO);
#pragma unroll
      for (int r = 0; r < NR; ++r) wgmma<BM>(d[r], f[s][r][0], f[s][r][1], f[s][r][2], f[s][r][3], desc);
    }
    wg_commit();
    wg_wait<WAIT>();
  }
  wg_wait<0>();
  store<NR, BM>(d, C + (size_t)m0 * N + n0 + wg * NR * 64 + warp * 16 + group, N, tig);
}


// cp.async copies of a BM x KS tile of A (row stride K) into the swizzle
// layout of KS * 4-byte rows: KS 32, the 128-byte swizzle (row m's 16-byte
// chunk c at c ^ (m % 8)); KS 16, the 64-byte swizzle (c ^ ((m / 2) % 4)).
template <int BM, int KS, int THREADS>
__device__ __forceinline__ void copy_a_swizzled(float* s, const float* a, int K, int tid) {
  static_assert(KS == 32 || KS == 16, "swizzle rows are 128 or 64 bytes");
  constexpr int CH = KS / 4;
#pragma unroll
  for (int i = tid; i < BM * CH; i += THREADS) {
    const int m = i / CH, c = i % CH;
    const int x = KS == 32 ? (m % 8) : ((m / 2) % 4);
    cp_async16(s + m * KS + ((c ^ x) * 4), a + (size_t)m * K + 4 * c);
  }
}
// The K-major swizzled descriptor: SBO = one 8-row atom (8 x KS x 4 bytes),
// layout type 1 (128-byte swizzle) or 2 (64-byte).
template <int KS>
__device__ __forceinline__ unsigned long long swizzled_desc(unsigned addr) {
  return desc_of(addr, 16, 8 * KS * 4) | ((KS == 32 ? 1ull : 2ull) << 62);
}

// B's fragments of k tile `kt` as four scalar loads per k step: rows
// `group` and `group + 8` of m64 block r are C columns bp + 64 r and 8 more,
// at k tig and tig + 4.
template <int KS, int NR>
__device__ __forceinline__ void fetch_scalar(float (&fn)[KS / 8][NR][4], const float* bp, int kt, int N) {
#pragma unroll
  for (int s = 0; s < KS / 8; ++s)
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      const float* p = bp + (size_t)(kt * KS + s * 8) * N + r * 64;
      fn[s][r][0] = __ldg(p);
      fn[s][r][1] = __ldg(p + 8);
      fn[s][r][2] = __ldg(p + 4 * (size_t)N);
      fn[s][r][3] = __ldg(p + 4 * (size_t)N + 8);
    }
}
// Fetched fragments rounded to TF32 register words.
template <int KS, int NR>
__device__ __forceinline__ void round_frags(unsigned (&fr)[KS / 8][NR][4], const float (&fb)[KS / 8][NR][4]) {
#pragma unroll
  for (int s = 0; s < KS / 8; ++s)
#pragma unroll
    for (int r = 0; r < NR; ++r)
#pragma unroll
      for (int e = 0; e < 4; ++e) fr[s][r][e] = tf32_round(fb[s][r][e]);
}
// One stage's wgmma group: every k step of every m64 block, the local
// operand through `desc(step)`; fenced and committed.
template <int BM, int KS, int NR, typename Desc>
__device__ __forceinline__ void issue_stage(float (&d)[NR][BM / 2], const unsigned (&fr)[KS / 8][NR][4], Desc desc) {
  wg_fence();
#pragma unroll
  for (int s = 0; s < KS / 8; ++s) {
    const unsigned long long dd = desc(s);
#pragma unroll
    for (int r = 0; r < NR; ++r) wgmma<BM>(d[r], fr[s][r][0], fr[s][r][1], fr[s][r][2], fr[s][r][3], dd);
  }
  wg_commit();
}

__device__ __forceinline__ unsigned mbar_addr(const unsigned long long* b) { return smem_addr(b); }
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(mbar_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" :: "r"(mbar_addr(b)) : "memory");
}
// Arrives on `b` when all of this thread's earlier cp.async copies are done.
__device__ __forceinline__ void mbar_cp_async_arrive(unsigned long long* b) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(mbar_addr(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
  unsigned ok;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(mbar_addr(b)), "r"(parity) : "memory");
  } while (!ok);
}

// Variant P: no block-wide barrier in the main loop. Every thread copies its
// share of A (cp.async, KS 16 in the 64-byte swizzle or KS 32 in the
// 128-byte one) and signals the stage's `full` mbarrier when its copies
// land; every thread waits on `full`, issues its wgmmas, commits, and
// waits for the previous stage's group only (wait_group 1), then arrives
// on that stage's `empty` mbarrier and refills it (after `empty` completes)
// with the tile STAGES - 1 ahead. B's fragments from global memory one
// stage ahead into two register buffers (a wgmma reads its registers until
// its group completes). The tensor pipe keeps the current stage's group
// while a warpgroup waits.
template <int BM, int WG, int NR, int KS, int STAGES>
__global__ void __launch_bounds__(WG * 128, 1) gemmp(const float* __restrict__ A, const float* __restrict__ B,
                                                    float* __restrict__ C, int M, int N, int K) {
  constexpr int BN = 64 * WG * NR, THREADS = WG * 128, A_STAGE = BM * KS;
  __shared__ __align__(1024) float sa[STAGES * A_STAGE];
  __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
  const Ids ids = thread_ids();
  const int tid = ids.tid, wg = ids.wg, warp = ids.warp, group = ids.group, tig = ids.tig;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  if (tid == 0)
    for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], THREADS); mbar_init(&empty[s], THREADS); }
  __syncthreads();
  float d[NR][BM / 2] = {};
  auto load = [&](int kt) {
    copy_a_swizzled<BM, KS, THREADS>(sa + (kt % STAGES) * A_STAGE, A + (size_t)m0 * K + kt * KS, K, tid);
    mbar_cp_async_arrive(&full[kt % STAGES]);
  };
  float fb[KS / 8][NR][4];
  unsigned fr[2][KS / 8][NR][4];
  const float* bp = B + (size_t)tig * N + n0 + (wg * NR) * 64 + warp * 16 + group;
  const int KT = K / KS;  // even
  for (int t = 0; t < STAGES - 1 && t < KT; ++t) load(t);
  fetch_scalar<KS, NR>(fb, bp, 0, N);
  for (int k0 = 0; k0 < KT; k0 += 2) {
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int kt = k0 + u;
      round_frags<KS, NR>(fr[u], fb);
      mbar_wait(&full[kt % STAGES], (kt / STAGES) & 1);
      fence_proxy();
      const unsigned a_base = smem_addr(sa + (kt % STAGES) * A_STAGE);
      issue_stage<BM, KS, NR>(d, fr[u], [&](int s) { return swizzled_desc<KS>(a_base + s * 32); });
      if (kt + 1 < KT) fetch_scalar<KS, NR>(fb, bp, kt + 1, N);
      wg_wait<1>();
      if (kt >= 1) mbar_arrive(&empty[(kt - 1) % STAGES]);
      const int next = kt + STAGES - 1;
      if (next < KT) {
        if (kt >= 1) mbar_wait(&empty[(kt - 1) % STAGES], ((kt - 1) / STAGES) & 1);
        load(next);
      }
    }
  }
  wg_wait<0>();
  store<NR, BM>(d, C + (size_t)m0 * N + n0 + wg * NR * 64 + warp * 16 + group, N, tig);
}

// Variant H: as G, with B's fragments fetched FD stages ahead (the loop
// unrolled FD times so each buffer has a compile-time index) and WAIT wgmma
// groups left in flight across the barrier (A's copies then run
// STAGES - 1 - WAIT stages ahead).
template <int BM, int WG, int NR, int KS, int STAGES, int FD, int WAIT, int SW>
__global__ void __launch_bounds__(WG * 128, 1) gemmh(const float* __restrict__ A, const float* __restrict__ B,
                                                    float* __restrict__ C, int M, int N, int K) {
  constexpr int BN = 64 * WG * NR, THREADS = WG * 128;
  constexpr int A_STAGE = BM * KS;
  __shared__ __align__(1024) float sa[STAGES * A_STAGE];
  const Ids ids = thread_ids();
  const int tid = ids.tid, wg = ids.wg, warp = ids.warp, group = ids.group, tig = ids.tig;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float d[NR][BM / 2] = {};
  auto load = [&](int stage, int kt) {
    const int k0 = kt * KS;
    if constexpr (SW) {
      copy_a_swizzled<BM, KS, THREADS>(sa + stage * A_STAGE, A + (size_t)m0 * K + k0, K, tid);
    } else {
      copy_a_core<BM, KS, THREADS>(sa + stage * A_STAGE, A + (size_t)m0 * K + k0, K, tid);
    }
  };
  float fb[FD][KS / 8][NR][4];
  unsigned fr[FD][KS / 8][NR][4];
  const float* bp = B + (size_t)tig * N + n0 + (wg * NR) * 64 + warp * 16 + group;
  const int KT = K / KS;
  constexpr int AHEAD = STAGES - 1 - WAIT;
  for (int s = 0; s < AHEAD; ++s) {
    if (s < KT) load(s, s);
    cp_commit();
  }
#pragma unroll
  for (int u = 0; u < FD; ++u) fetch_scalar<KS, NR>(fb[u], bp, u, N);
  constexpr unsigned LBO = 128, SBO = (KS / 4) * 128;
  for (int k0 = 0; k0 < KT; k0 += FD) {
#pragma unroll
    for (int u = 0; u < FD; ++u) {
      const int kt = k0 + u;
      round_frags<KS, NR>(fr[u], fb[u]);
      cp_wait<AHEAD - 1>();
      fence_proxy();
      __syncthreads();
      const int ahead = kt + AHEAD;
      if (ahead < KT) load(ahead % STAGES, ahead);
      cp_commit();
      const unsigned a_base = smem_addr(sa + (kt % STAGES) * A_STAGE);
      issue_stage<BM, KS, NR>(d, fr[u], [&](int s) {
        return SW ? swizzled_desc<KS>(a_base + s * 32) : desc_of(a_base + s * 256, LBO, SBO);
      });
      if (kt + FD < KT) fetch_scalar<KS, NR>(fb[u], bp, kt + FD, N);
      wg_wait<WAIT>();
    }
  }
  wg_wait<0>();
  store<NR, BM>(d, C + (size_t)m0 * N + n0 + wg * NR * 64 + warp * 16 + group, N, tig);
}

// Variant V: as H with the 128-byte swizzle (KS 32), but B's fragments
// loaded as vectors, `.cg`, as tcc does: a warp's NR x 16 columns of C are
// 16 NR contiguous ones, and lane (group, tig) holds columns
// base + 2 NR group + 2 r + h (r: the warpgroup's m64 block, h: fragment
// row group + 8 h), so one load of 2 NR floats per k fetches all of a
// lane's rows (NR 1: float2, tcc's layout; NR 2: float4, a warp's row of
// k is one whole 128-byte line instead of half of one).
template <int NR>
__device__ __forceinline__ void load_cg(float* f, const float* p) {
  if constexpr (NR == 1)
    asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(f[0]), "=f"(f[1]) : "l"(p));
  else
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(f[0]), "=f"(f[1]), "=f"(f[2]), "=f"(f[3]) : "l"(p));
}
template <int BM, int WG, int NR, int STAGES>
__global__ void __launch_bounds__(WG * 128) gemmv(const float* __restrict__ A, const float* __restrict__ B,
                                                 float* __restrict__ C, int M, int N, int K) {
  constexpr int KS = 32, BN = 64 * WG * NR, THREADS = WG * 128, A_STAGE = BM * KS, V = 2 * NR;
  __shared__ __align__(1024) float sa[STAGES * A_STAGE];
  const Ids ids = thread_ids();
  const int tid = ids.tid, wg = ids.wg, warp = ids.warp, group = ids.group, tig = ids.tig;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int col = (wg * 4 + warp) * 16 * NR + V * group;  // the lane's first C column in the tile
  float d[NR][BM / 2] = {};
  // fb[s][h2][v]: k = s * 8 + tig + 4 h2, column col + v (v = 2 r + h)
  float fb[KS / 8][2][V];
  unsigned fr[KS / 8][NR][4];
  const float* bp = B + (size_t)tig * N + n0 + col;
  auto fetch = [&](int kt) {
#pragma unroll
    for (int s = 0; s < KS / 8; ++s)
#pragma unroll
      for (int h2 = 0; h2 < 2; ++h2) load_cg<NR>(fb[s][h2], bp + (size_t)(kt * KS + s * 8 + 4 * h2) * N);
  };
  const int KT = K / KS;
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) copy_a_swizzled<BM, KS, THREADS>(sa + s * A_STAGE, A + (size_t)m0 * K + s * KS, K, tid);
    cp_commit();
  }
  fetch(0);
  for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
    for (int s = 0; s < KS / 8; ++s)
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        // wgmma A fragment: {row g, k tig}, {row g+8, k tig}, {row g, k tig+4}, {row g+8, k tig+4}
        fr[s][r][0] = tf32_round(fb[s][0][2 * r]);
        fr[s][r][1] = tf32_round(fb[s][0][2 * r + 1]);
        fr[s][r][2] = tf32_round(fb[s][1][2 * r]);
        fr[s][r][3] = tf32_round(fb[s][1][2 * r + 1]);
      }
    cp_wait<STAGES - 2>();
    fence_proxy();
    __syncthreads();
    const int ahead = kt + STAGES - 1;
    if (ahead < KT) copy_a_swizzled<BM, KS, THREADS>(sa + (ahead % STAGES) * A_STAGE, A + (size_t)m0 * K + ahead * KS, K, tid);
    cp_commit();
    const unsigned a_base = smem_addr(sa + (kt % STAGES) * A_STAGE);
    issue_stage<BM, KS, NR>(d, fr, [&](int s) { return swizzled_desc<KS>(a_base + s * 32); });
    if (kt + 1 < KT) fetch(kt + 1);
    wg_wait<0>();
  }
  // d[r][4 j + e]: C row 8 j + 2 tig + e % 2, column col + 2 r + e / 2
  float* c = C + (size_t)m0 * N + n0 + col;
#pragma unroll
  for (int r = 0; r < NR; ++r)
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) c[(size_t)(8 * j + 2 * tig + e % 2) * N + 2 * r + e / 2] = d[r][4 * j + e];
}

struct Case { const char* name; void (*launch)(const float*, const float*, float*, int, int, int); int bm, bn, smem; };
template <int BM, int WG, int NR, int KS, int STAGES, int SWAP, int WAIT>
void launch(const float* A, const float* B, float* C, int M, int N, int K) {
  dim3 grid(N / (64 * WG * NR), M / BM);
  gemm<BM, WG, NR, KS, STAGES, SWAP, WAIT><<<grid, WG * 128>>>(A, B, C, M, N, K);
}
template <int BM, int WG, int NR, int STAGES>
void launchv(const float* A, const float* B, float* C, int M, int N, int K) {
  dim3 grid(N / (64 * WG * NR), M / BM);
  gemmv<BM, WG, NR, STAGES><<<grid, WG * 128>>>(A, B, C, M, N, K);
}
template <int BM, int WG, int NR, int KS, int STAGES>
void launchp(const float* A, const float* B, float* C, int M, int N, int K) {
  dim3 grid(N / (64 * WG * NR), M / BM);
  gemmp<BM, WG, NR, KS, STAGES><<<grid, WG * 128>>>(A, B, C, M, N, K);
}
template <int BM, int WG, int NR, int KS, int STAGES, int FD, int WAIT, int SW>
void launchh(const float* A, const float* B, float* C, int M, int N, int K) {
  dim3 grid(N / (64 * WG * NR), M / BM);
  gemmh<BM, WG, NR, KS, STAGES, FD, WAIT, SW><<<grid, WG * 128>>>(A, B, C, M, N, K);
}
#define HCASE(BM, WG, NR, KS, ST, FD, WT) \
  {"H " #BM "x" #WG "x" #NR " ks" #KS " st" #ST " fd" #FD " wait" #WT, launchh<BM, WG, NR, KS, ST, FD, WT, 0>, BM, 64 * WG * NR, 4 * ST * BM * KS}
#define SCASE(BM, WG, NR, KS, ST, FD, WT) \
  {"S " #BM "x" #WG "x" #NR " ks" #KS " st" #ST " fd" #FD " wait" #WT " swizzle128", launchh<BM, WG, NR, KS, ST, FD, WT, 1>, BM, 64 * WG * NR, 4 * ST * BM * KS}
#define VCASE(BM, WG, NR, ST) \
  {"V " #BM "x" #WG "x" #NR " ks32 st" #ST " cg vector B", launchv<BM, WG, NR, ST>, BM, 64 * WG * NR, 4 * ST * BM * 32}
#define PCASE(BM, WG, NR, KS, ST) \
  {"P " #BM "x" #WG "x" #NR " ks" #KS " st" #ST " mbarrier", launchp<BM, WG, NR, KS, ST>, BM, 64 * WG * NR, 4 * ST * BM * KS + 16 * ST}
#define CASE(BM, WG, NR, KS, ST, SW, WT) \
  {#BM "x" #WG "x" #NR " ks" #KS " st" #ST " swap" #SW " wait" #WT, launch<BM, WG, NR, KS, ST, SW, WT>, BM, 64 * WG * NR, 4 * ST * (BM * KS + KS * 64 * WG * NR)}

int main(int argc, char** argv) {
  Case cases[] = {
      SCASE(128, 2, 1, 32, 3, 1, 0), SCASE(128, 4, 1, 32, 3, 1, 0),
      VCASE(128, 2, 1, 3), VCASE(128, 1, 2, 3), VCASE(128, 2, 2, 3), VCASE(128, 4, 1, 3),
      SCASE(128, 2, 1, 16, 6, 1, 1), PCASE(128, 2, 1, 16, 5), PCASE(128, 4, 1, 16, 5),
  };
  // proto [NAME_SUBSTRING [SIZE]]: only those cases (for ncu)
  const char* only = argc > 1 ? argv[1] : "";
  const int one_size = argc > 2 ? atoi(argv[2]) : 0;
  for (int size : {2048, 4096}) {
    if (one_size && size != one_size) continue;
    Problem p = make_problem(size);
    const int M = p.M, N = p.N, K = p.K;
    const float *A = p.A, *B = p.B;
    float* C = p.C;
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (auto& c : cases) {
      if (!strstr(c.name, only)) continue;
      if (c.smem > 48 * 1024) { printf("%d %s: %d bytes of shared memory, skipped\n", size, c.name, c.smem); continue; }
      cudaMemset(C, 0, (size_t)M * N * 4);
      c.launch(A, B, C, M, N, K);
      double max_err, max_ref;
      if (!check_result(p, size, c.name, max_err, max_ref)) return 1;
      for (int i = 0; i < 3; ++i) c.launch(A, B, C, M, N, K);
      cudaEventRecord(e0);
      const int iters = 20;
      for (int i = 0; i < iters; ++i) c.launch(A, B, C, M, N, K);
      cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= iters;
      printf("%d %-32s smem=%5d ms=%.3f TF/s=%.1f max_err=%.3g (max |ref| %.3g)\n", size, c.name, c.smem, ms,
             2.0 * M * N * K / ms / 1e9, max_err, max_ref);
    }
    free_problem(p);
  }
  return 0;
}
