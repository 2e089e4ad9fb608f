// Prototype (issue 9, session 13): tcc's wgmma TF32 body (variant V of
// proto.cu: C^T = B^T A^T, B's fragments as float2 `.cg` loads, A in
// local memory in the 128-byte swizzle) with A's stages copied by the
// tensor memory accelerator (`cp.async.bulk.tensor`, one thread issues,
// the stage's mbarrier counts the bytes) instead of every thread's 16-byte
// `cp.async`. Session 11's profile found the loop bound by L1's load/store
// pipe, a third of whose wavefronts were those copies; the TMA takes them
// off it and writes the swizzle itself, from the row-major A.
//
// The tensor map: TM 0, encoded on the host (cuTensorMapEncodeTiled) and
// passed as a __grid_constant__ parameter; TM 1, built on the device by
// each work-group's thread 0 from zeros with `tensormap.replace` into a
// 128-byte slot of a scratch buffer (what tcc can do without the CUDA host
// API: its runtime launches through OpenCL, which knows no tensor maps).
// `tmap_fields` first checks each field's encoding: it replaces one field
// of the host-encoded map with a candidate value, and the candidate is
// right when the bytes do not change.
//
// Build and run: tma_run.sh on the GPU machine.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "harness.h"
#include "wgmma_asm.h"

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async16(void* s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem_addr(s)), "l"(g));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
__device__ __forceinline__ void fence_proxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
__device__ __forceinline__ unsigned tf32_round(float x) { return __float_as_uint(x) + 0x1000u; }

__device__ __forceinline__ unsigned long long desc_of(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32);
}
// K-major swizzled descriptor: KS 32 the 128-byte swizzle (SBO 1024, type
// 1), KS 16 the 64-byte one (SBO 512, type 2).
template <int KS>
__device__ __forceinline__ unsigned long long swizzled_desc(unsigned addr) {
  return desc_of(addr, 16, 8 * KS * 4) | ((KS == 32 ? 1ull : 2ull) << 62);
}

__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  unsigned ok;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(smem_addr(b)), "r"(parity) : "memory");
  } while (!ok);
}
// One 2-D box (KS of k, BM rows, from k0, row m0) into `dst`, completing on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const void* tmap, int k0, int m0, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      :: "r"(smem_addr(dst)), "l"(tmap), "r"(k0), "r"(m0), "r"(smem_addr(bar)) : "memory");
}

// ---- tensor-map fields on the device ----
// Field ids: 0 global_address, 1 rank, 2 box_dim[ord], 3 global_dim[ord],
// 4 global_stride[ord], 5 element_stride[ord], 6 elemtype, 7 swizzle_mode,
// 8 interleave_layout, 9 fill_mode.
template <int ORD>
__device__ __forceinline__ void replace_ord(void* m, int field, long long v) {
  switch (field) {
    case 2: asm volatile("tensormap.replace.tile.box_dim.global.b1024.b32 [%0], %1, %2;" :: "l"(m), "n"(ORD), "r"((int)v) : "memory"); break;
    case 3: asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], %1, %2;" :: "l"(m), "n"(ORD), "r"((int)v) : "memory"); break;
    case 4: asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 [%0], %1, %2;" :: "l"(m), "n"(ORD), "l"(v) : "memory"); break;
    case 5: asm volatile("tensormap.replace.tile.element_stride.global.b1024.b32 [%0], %1, %2;" :: "l"(m), "n"(ORD), "r"((int)v) : "memory"); break;
  }
}
__device__ void replace_field(void* m, int field, int ord, long long v) {
  switch (field) {
    case 0: asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" :: "l"(m), "l"(v) : "memory"); break;
    case 1: asm volatile("tensormap.replace.tile.rank.global.b1024.b32 [%0], %1;" :: "l"(m), "r"((int)v) : "memory"); break;
    case 6: asm volatile("tensormap.replace.tile.elemtype.global.b1024.b32 [%0], 7;" :: "l"(m) : "memory"); break;  // candidate 7 only
    case 7: asm volatile("tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%0], 3;" :: "l"(m) : "memory"); break;  // candidate 3 only
    case 8: asm volatile("tensormap.replace.tile.interleave_layout.global.b1024.b32 [%0], 0;" :: "l"(m) : "memory"); break;  // candidate 0 only
    case 9: asm volatile("tensormap.replace.tile.fill_mode.global.b1024.b32 [%0], 0;" :: "l"(m) : "memory"); break;  // candidate 0 only
    default:
      if (ord == 0) replace_ord<0>(m, field, v);
      else if (ord == 1) replace_ord<1>(m, field, v);
      else replace_ord<2>(m, field, v);
  }
}
// maps[i]: 128 bytes each; ops[i] = {field, ord, value}: applied to map i in order.
struct Op { int field, ord; long long value; };
__global__ void apply_ops(unsigned char* maps, const Op* ops, const int* op_start, int n_maps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_maps) return;
  for (int j = op_start[i]; j < op_start[i + 1]; ++j) replace_field(maps + 128 * i, ops[j].field, ops[j].ord, ops[j].value);
}

// The encodings build_a_map uses, as `tma fields` found them on the H100
// (driver 580): rank - 1, every other value as cuTensorMapEncodeTiled takes it.
#ifndef TMAP_RANK_VALUE
#define TMAP_RANK_VALUE 1
#endif
#ifndef TMAP_BOX_MINUS
#define TMAP_BOX_MINUS 0
#endif
#ifndef TMAP_DIM_MINUS
#define TMAP_DIM_MINUS 0
#endif
#ifndef TMAP_STRIDE_ORD
#define TMAP_STRIDE_ORD 0
#endif
#ifndef TMAP_STRIDE_SHIFT
#define TMAP_STRIDE_SHIFT 0
#endif
#ifndef TMAP_ESTRIDE_MINUS
#define TMAP_ESTRIDE_MINUS 0
#endif

// The A map on the device: row-major M x K floats at `a`, box KS x BM,
// swizzle SW (2: 64 bytes, 3: 128), written into `slot` (global, 128 bytes,
// 128-aligned) by the calling thread from zeros, with the TMAP_* encodings.
template <int BM, int KS, int SW>
__device__ __forceinline__ void build_a_map(void* slot, const float* a, int M, int K) {
  uint4* s = (uint4*)slot;
#pragma unroll
  for (int i = 0; i < 8; ++i) s[i] = make_uint4(0, 0, 0, 0);
  asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" :: "l"(slot), "l"(a) : "memory");
  asm volatile("tensormap.replace.tile.rank.global.b1024.b32 [%0], %1;" :: "l"(slot), "r"(TMAP_RANK_VALUE) : "memory");
  asm volatile("tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 0, %1;" :: "l"(slot), "r"(KS - TMAP_BOX_MINUS) : "memory");
  asm volatile("tensormap.replace.tile.box_dim.global.b1024.b32 [%0], 1, %1;" :: "l"(slot), "r"(BM - TMAP_BOX_MINUS) : "memory");
  asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 0, %1;" :: "l"(slot), "r"(K - TMAP_DIM_MINUS) : "memory");
  asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;" :: "l"(slot), "r"(M - TMAP_DIM_MINUS) : "memory");
  asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 [%0], %1, %2;" :: "l"(slot), "n"(TMAP_STRIDE_ORD), "l"((long long)K * 4 >> TMAP_STRIDE_SHIFT) : "memory");
  asm volatile("tensormap.replace.tile.element_stride.global.b1024.b32 [%0], 0, %1;" :: "l"(slot), "r"(1 - TMAP_ESTRIDE_MINUS) : "memory");
  asm volatile("tensormap.replace.tile.element_stride.global.b1024.b32 [%0], 1, %1;" :: "l"(slot), "r"(1 - TMAP_ESTRIDE_MINUS) : "memory");
  asm volatile("tensormap.replace.tile.elemtype.global.b1024.b32 [%0], 7;" :: "l"(slot) : "memory");
  asm volatile("tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%0], %1;" :: "l"(slot), "n"(SW) : "memory");
  asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(slot) : "memory");
}

// Variant T: tcc's layout (BM = 128 rows of C = wgmma N from local memory,
// WG warpgroups of 64 C columns = wgmma M from registers), A copied by the
// TMA in units of UK of k (one box and one mbarrier each; UK 32 in the
// 128-byte swizzle, 16 in the 64-byte, 8 in the 32-byte), UNITS of them in
// a ring, PER consumed per iteration (one block barrier per PER units).
// Iteration kt: wait for its units, block barrier (everyone's wgmmas on
// iteration kt - 1 are done: wait_group 0), thread 0 refills the ring up to
// unit kt PER + UNITS - 1 (the slots kt - 1 used), wgmmas, B's fragments
// for kt + 1, wait.
template <int UK>
__device__ __forceinline__ unsigned long long unit_desc(unsigned addr) {
  constexpr unsigned long long type = UK == 32 ? 1 : UK == 16 ? 2 : 3;
  return desc_of(addr, 16, 8 * UK * 4) | (type << 62);
}
template <int BM>
__device__ __forceinline__ void wgmma_rs(float* d, const unsigned* f, unsigned long long desc) {
  if constexpr (BM == 128) wgmma_n128(d, f[0], f[1], f[2], f[3], desc);
  else if constexpr (BM == 192) wgmma_n192(d, f[0], f[1], f[2], f[3], desc);
  else wgmma_n256(d, f[0], f[1], f[2], f[3], desc);
}
template <int BM, int WG, int UK, int UNITS, int PER, int TM>
__device__ __forceinline__ void gemmt(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, unsigned char* __restrict__ scratch,
                                      const void* host_map, int M, int N, int K) {
  constexpr int BN = 64 * WG, U_SIZE = BM * UK, KI = UK * PER;
  __shared__ __align__(1024) float sa[UNITS * U_SIZE];
  __shared__ __align__(8) uint64_t full[UNITS];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int col = warp * 16 + 2 * group;
  const void* map = host_map;
  if (tid == 0) {
    if constexpr (TM == 1) {
      void* slot = scratch + 128 * (size_t)(blockIdx.y * gridDim.x + blockIdx.x);
      build_a_map<BM, UK, UK == 32 ? 3 : UK == 16 ? 2 : 1>(slot, A, M, K);
      map = slot;
    }
    for (int s = 0; s < UNITS; ++s) mbar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int KU = K / UK, KT = KU / PER;
  int issued = 0;
  auto refill = [&](int upto) {
    for (; issued < upto && issued < KU; ++issued) {
      const int slot = issued % UNITS;
      mbar_expect(&full[slot], U_SIZE * 4);
      tma_load(sa + slot * U_SIZE, map, issued * UK, m0, &full[slot]);
    }
  };
  if (tid == 0) refill(UNITS);
  float d[BM / 2] = {};
  float fb[KI / 8][4];
  unsigned fr[KI / 8][4];
  const float* bp = B + (size_t)tig * N + n0 + col;
  auto fetch = [&](int kt) {
#pragma unroll
    for (int s = 0; s < KI / 8; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(fb[s][2 * h]), "=f"(fb[s][2 * h + 1])
                     : "l"(bp + (size_t)(kt * KI + s * 8 + 4 * h) * N));
  };
  fetch(0);
  for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
    for (int s = 0; s < KI / 8; ++s)
#pragma unroll
      for (int e = 0; e < 4; ++e) fr[s][e] = tf32_round(fb[s][e]);
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const int u = kt * PER + j;
      mbar_wait(&full[u % UNITS], (u / UNITS) & 1);
    }
    __syncthreads();
    if (tid == 0) refill(kt * PER + UNITS);
    wg_fence();
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const unsigned base = smem_addr(sa + ((kt * PER + j) % UNITS) * U_SIZE);
#pragma unroll
      for (int s = 0; s < UK / 8; ++s) {
        wgmma_rs<BM>(d, fr[j * (UK / 8) + s], unit_desc<UK>(base + s * 32));
      }
    }
    wg_commit();
    if (kt + 1 < KT) fetch(kt + 1);
    wg_wait<0>();
  }
  // d[4 j + e]: C row 8 j + 2 tig + e % 2, column col + e / 2 (rows past M:
  // the TMA read zeros there)
  float* c = C + (size_t)m0 * N + n0 + col;
#pragma unroll
  for (int j = 0; j < BM / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (BM == 128 || m0 + 8 * j + 2 * tig + e % 2 < M) c[(size_t)(8 * j + 2 * tig + e % 2) * N + e / 2] = d[4 * j + e];
}
template <int BM, int WG, int UK, int UNITS, int PER>
__global__ void __launch_bounds__(WG * 128) gemmt_host(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, const __grid_constant__ CUtensorMap map,
                                                      int M, int N, int K) {
  gemmt<BM, WG, UK, UNITS, PER, 0>(A, B, C, nullptr, &map, M, N, K);
}
// The entry tcc could launch through OpenCL: no tensor-map parameter.
template <int BM, int WG, int UK, int UNITS, int PER>
__global__ void __launch_bounds__(WG * 128) gemmt_dev(const float* __restrict__ A, const float* __restrict__ B,
                                                     float* __restrict__ C, unsigned char* __restrict__ scratch,
                                                     int M, int N, int K) {
  gemmt<BM, WG, UK, UNITS, PER, 1>(A, B, C, scratch, nullptr, M, N, K);
}

// Variant W: as T (BM 128, UK 32 in the 128-byte swizzle, two units, one
// per iteration) with NR m64 blocks per warpgroup: a warp's B fragments
// are 16 NR contiguous C columns, lane (group, tig) holding columns
// base + 2 NR group + 2 r + h (r: the m64 block, h: fragment row group +
// 8 h), so one load of 2 NR floats per k fetches all of a lane's rows (NR
// 2: float4, a warp's row of k one whole 128-byte line). MINB: the
// work-groups per SM asked of ptxas (__launch_bounds__).
template <int WG, int NR, int MINB>
__global__ void __launch_bounds__(WG * 128, MINB) gemmw(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, const __grid_constant__ CUtensorMap host_map,
                                                       int M, int N, int K) {
  constexpr int BM = 128, UK = 32, UNITS = 2, U_SIZE = BM * UK, V = 2 * NR;
  __shared__ __align__(1024) float sa[UNITS * U_SIZE];
  __shared__ __align__(8) uint64_t full[UNITS];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * (64 * WG * NR);
  const int col = warp * 16 * NR + V * group;
  const void* map = &host_map;
  if (tid == 0) {
    for (int s = 0; s < UNITS; ++s) mbar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int KT = K / UK;
  if (tid == 0)
    for (int s = 0; s < UNITS && s < KT; ++s) {
      mbar_expect(&full[s], U_SIZE * 4);
      tma_load(sa + s * U_SIZE, map, s * UK, m0, &full[s]);
    }
  float d[NR][BM / 2] = {};
  float fb[UK / 8][2][V];
  unsigned fr[UK / 8][NR][4];
  const float* bp = B + (size_t)tig * N + n0 + col;
  auto fetch = [&](int kt) {
#pragma unroll
    for (int s = 0; s < UK / 8; ++s)
#pragma unroll
      for (int h2 = 0; h2 < 2; ++h2) {
        const float* p = bp + (size_t)(kt * UK + s * 8 + 4 * h2) * N;
        if constexpr (NR == 1)
          asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(fb[s][h2][0]), "=f"(fb[s][h2][1]) : "l"(p));
        else
          asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                       : "=f"(fb[s][h2][0]), "=f"(fb[s][h2][1]), "=f"(fb[s][h2][2]), "=f"(fb[s][h2][3]) : "l"(p));
      }
  };
  fetch(0);
  for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
    for (int s = 0; s < UK / 8; ++s)
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        fr[s][r][0] = tf32_round(fb[s][0][2 * r]);
        fr[s][r][1] = tf32_round(fb[s][0][2 * r + 1]);
        fr[s][r][2] = tf32_round(fb[s][1][2 * r]);
        fr[s][r][3] = tf32_round(fb[s][1][2 * r + 1]);
      }
    mbar_wait(&full[kt % UNITS], (kt / UNITS) & 1);
    __syncthreads();
    if (tid == 0 && kt >= 1 && kt + 1 < KT) {
      const int slot = (kt + 1) % UNITS;
      mbar_expect(&full[slot], U_SIZE * 4);
      tma_load(sa + slot * U_SIZE, map, (kt + 1) * UK, m0, &full[slot]);
    }
    const unsigned base = smem_addr(sa + (kt % UNITS) * U_SIZE);
    wg_fence();
#pragma unroll
    for (int s = 0; s < UK / 8; ++s)
#pragma unroll
      for (int r = 0; r < NR; ++r) wgmma_rs<BM>(d[r], fr[s][r], unit_desc<UK>(base + s * 32));
    wg_commit();
    if (kt + 1 < KT) fetch(kt + 1);
    wg_wait<0>();
  }
  float* c = C + (size_t)m0 * N + n0 + col;
#pragma unroll
  for (int r = 0; r < NR; ++r)
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) c[(size_t)(8 * j + 2 * tig + e % 2) * N + 2 * r + e / 2] = d[r][4 * j + e];
}

// Variant V (proto.cu's, tcc's current body) for the side-by-side figure.
template <int KS, int STAGES>
__global__ void __launch_bounds__(256) gemmv(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, int M, int N, int K) {
  constexpr int BM = 128, BN = 128, THREADS = 256, A_STAGE = BM * KS, CH = KS / 4;
  __shared__ __align__(1024) float sa[STAGES * A_STAGE];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  const int wg = warp / 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int col = (wg * 4 + warp % 4) * 16 + 2 * group;
  auto copy = [&](int stage, int kt) {
#pragma unroll
    for (int i = tid; i < BM * CH; i += THREADS) {
      const int m = i / CH, c = i % CH;
      cp_async16(sa + stage * A_STAGE + m * KS + ((c ^ (m % 8)) * 4), A + (size_t)(m0 + m) * K + kt * KS + 4 * c);
    }
  };
  float d[BM / 2] = {};
  float fb[KS / 8][4];
  unsigned fr[KS / 8][4];
  const float* bp = B + (size_t)tig * N + n0 + col;
  auto fetch = [&](int kt) {
#pragma unroll
    for (int s = 0; s < KS / 8; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(fb[s][2 * h]), "=f"(fb[s][2 * h + 1])
                     : "l"(bp + (size_t)(kt * KS + s * 8 + 4 * h) * N));
  };
  const int KT = K / KS;
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) copy(s, s);
    cp_commit();
  }
  fetch(0);
  for (int kt = 0; kt < KT; ++kt) {
#pragma unroll
    for (int s = 0; s < KS / 8; ++s)
#pragma unroll
      for (int e = 0; e < 4; ++e) fr[s][e] = tf32_round(fb[s][e]);
    cp_wait<STAGES - 2>();
    fence_proxy();
    __syncthreads();
    const int ahead = kt + STAGES - 1;
    if (ahead < KT) copy(ahead % STAGES, ahead);
    cp_commit();
    const unsigned a_base = smem_addr(sa + (kt % STAGES) * A_STAGE);
    wg_fence();
#pragma unroll
    for (int s = 0; s < KS / 8; ++s) wgmma_n128(d, fr[s][0], fr[s][1], fr[s][2], fr[s][3], swizzled_desc<KS>(a_base + s * 32));
    wg_commit();
    if (kt + 1 < KT) fetch(kt + 1);
    wg_wait<0>();
  }
  float* c = C + (size_t)m0 * N + n0 + col;
#pragma unroll
  for (int j = 0; j < BM / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) c[(size_t)(8 * j + 2 * tig + e % 2) * N + e / 2] = d[4 * j + e];
}


// Variant S (session 14): T's layout with B through local memory too, in
// more local memory than OpenCL gives (CUDA dynamic shared memory: the
// question is whether the T design reaches 300 TF/s there, before tcc
// grows a CUDA launch path). Each stage holds A's BM x UK tile (TMA,
// 128-byte swizzle) and B's UK x BN tile as BN / 32 boxes of UK rows of
// 32 floats (TMA from the row-major B, 128-byte swizzle), one mbarrier
// per stage counting both. B's fragments come from local memory (LDS.64),
// not from global loads: a warp's C columns are spread over the even (or
// odd) 16-byte chunks of a box row, so that the four k rows a fragment
// load touches fall on two wavefronts under the swizzle. W 0: every
// iteration waits for its wgmmas; W 1: one group stays in flight (B's
// fragments double-buffered), the slot refilled is the one read two
// iterations back.
template <int BM, int WG, int STAGES>
constexpr int s_smem_bytes() { return STAGES * (BM + 64 * WG) * 32 * 4 + 1024; }
template <int BM, int WG, int STAGES, int W, int MINB>
__global__ void __launch_bounds__(WG * 128, MINB) gemms(const __grid_constant__ CUtensorMap amap,
                                                       const __grid_constant__ CUtensorMap bmap,
                                                       float* __restrict__ C, int M, int N, int K) {
  constexpr int UK = 32, BN = 64 * WG, A_SIZE = BM * UK, B_SIZE = BN * UK, STAGE = A_SIZE + B_SIZE;
  extern __shared__ unsigned char dyn[];
  __shared__ __align__(8) uint64_t full[STAGES];
  float* smem = (float*)(((uintptr_t)dyn + 1023) & ~(uintptr_t)1023);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, group = lane / 4, tig = lane % 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  // this lane's pair of C columns: box warp / 2, float f of the box's 32
  const int box = warp / 2, f = 4 * (warp % 2) + 8 * (group / 2) + 2 * (group % 2);
  const int col = 32 * box + f;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int KT = K / UK;
  auto load = [&](int u) {
    const int slot = u % STAGES;
    float* st = smem + slot * STAGE;
    mbar_expect(&full[slot], STAGE * 4);
    tma_load(st, &amap, u * UK, m0, &full[slot]);
#pragma unroll
    for (int b = 0; b < BN / 32; ++b) tma_load(st + A_SIZE + b * 32 * UK, &bmap, n0 + 32 * b, u * UK, &full[slot]);
  };
  if (tid == 0)
    for (int u = 0; u < STAGES && u < KT; ++u) load(u);
  float d[BM / 2] = {};
  unsigned fr[2][UK / 8][4];
  auto step = [&](int kt, unsigned (&f4)[UK / 8][4]) {
    const int slot = kt % STAGES;
    mbar_wait(&full[slot], (kt / STAGES) & 1);
    __syncthreads();
    const int done = kt - 1 - W;  // the unit whose wgmmas every warp has waited for
    if (tid == 0 && done >= 0 && done + STAGES < KT) load(done + STAGES);
    const float* st = smem + slot * STAGE;
    const unsigned bbase = smem_addr(st + A_SIZE + box * 32 * UK);
#pragma unroll
    for (int s = 0; s < UK / 8; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = s * 8 + 4 * h + tig;
        const unsigned addr = bbase + k * 128 + (((f / 4) ^ (k % 8)) * 16) + (f % 4) * 4;
        float x, y;
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(addr));
        f4[s][2 * h] = tf32_round(x);
        f4[s][2 * h + 1] = tf32_round(y);
      }
    const unsigned abase = smem_addr(st);
    wg_fence();
#pragma unroll
    for (int s = 0; s < UK / 8; ++s) wgmma_rs<BM>(d, f4[s], unit_desc<UK>(abase + s * 32));
    wg_commit();
    wg_wait<W>();
  };
  int kt = 0;
  for (; kt + 1 < KT; kt += 2) {
    step(kt, fr[0]);
    step(kt + 1, fr[1]);
  }
  if (kt < KT) step(kt, fr[0]);
  wg_wait<0>();
  // d[4 j + e]: C row 8 j + 2 tig + e % 2, column col + e / 2
  float* c = C + (size_t)m0 * N + n0 + col;
#pragma unroll
  for (int j = 0; j < BM / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) c[(size_t)(8 * j + 2 * tig + e % 2) * N + e / 2] = d[4 * j + e];
}

static CUtensorMap encode_a(const float* a, int M, int K, int BM, int KS, CUtensorMapL2promotion l2) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)M};
  cuuint64_t strides[1] = {(cuuint64_t)K * 4};
  cuuint32_t box[2] = {(cuuint32_t)KS, (cuuint32_t)BM};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)a, dims, strides, box, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      KS == 32 ? CU_TENSOR_MAP_SWIZZLE_128B : KS == 16 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B, l2,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("cuTensorMapEncodeTiled: %d\n", (int)r); exit(1); }
  return m;
}

// B's map for variant S: row-major K x N floats, boxes of 32 columns x UK rows, 128-byte swizzle.
static CUtensorMap encode_b(const float* b, int K, int N, int UK) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)K};
  cuuint64_t strides[1] = {(cuuint64_t)N * 4};
  cuuint32_t box[2] = {32, (cuuint32_t)UK};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)b, dims, strides, box, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("cuTensorMapEncodeTiled (B): %d\n", (int)r); exit(1); }
  return m;
}

static void hex(const char* what, const unsigned char* p) {
  printf("%-10s", what);
  for (int i = 0; i < 128; ++i) printf("%02x%s", p[i], i % 16 == 15 ? (i == 127 ? "\n" : " ") : "");
}

// Which encoding of each field leaves the host-encoded map unchanged.
static void tmap_fields() {
  float* a;
  cudaMalloc(&a, 4096 * 4096 * 4);
  const int M = 4096, K = 4096;
  CUtensorMap h = encode_a(a, M, K, 128, 32, CU_TENSOR_MAP_L2_PROMOTION_NONE);
  hex("host", (unsigned char*)&h);
  struct Cand { const char* name; int field, ord; long long value; };
  const Cand cands[] = {
      {"address a", 0, 0, (long long)a},
      {"rank 2", 1, 0, 2}, {"rank 1", 1, 0, 1},
      {"box0 32", 2, 0, 32}, {"box0 31", 2, 0, 31}, {"box1 128", 2, 1, 128}, {"box1 127", 2, 1, 127},
      {"dim0 4096", 3, 0, 4096}, {"dim0 4095", 3, 0, 4095}, {"dim1 4096", 3, 1, 4096}, {"dim1 4095", 3, 1, 4095},
      {"stride0 16384", 4, 0, 16384}, {"stride0 1024", 4, 0, 1024}, {"stride1 16384", 4, 1, 16384}, {"stride1 1024", 4, 1, 1024},
      {"estr0 1", 5, 0, 1}, {"estr0 0", 5, 0, 0}, {"estr1 1", 5, 1, 1}, {"estr1 0", 5, 1, 0},
      {"elem 7", 6, 0, 7}, {"swz 3", 7, 0, 3}, {"interleave 0", 8, 0, 0}, {"fill 0", 9, 0, 0},
  };
  const int n = sizeof(cands) / sizeof(cands[0]);
  std::vector<unsigned char> maps(128 * (n + 1));
  for (int i = 0; i < n; ++i) memcpy(&maps[128 * i], &h, 128);
  memset(&maps[128 * n], 0, 128);
  std::vector<Op> ops;
  std::vector<int> start;
  for (int i = 0; i < n; ++i) { start.push_back(ops.size()); ops.push_back({cands[i].field, cands[i].ord, cands[i].value}); }
  // map n: zeros + the encodings build_a_map uses
  start.push_back(ops.size());
  const Op all[] = {{0, 0, (long long)a}, {1, 0, TMAP_RANK_VALUE}, {2, 0, 32 - TMAP_BOX_MINUS}, {2, 1, 128 - TMAP_BOX_MINUS},
                    {3, 0, K - TMAP_DIM_MINUS}, {3, 1, M - TMAP_DIM_MINUS}, {4, TMAP_STRIDE_ORD, (long long)K * 4 >> TMAP_STRIDE_SHIFT},
                    {5, 0, 1 - TMAP_ESTRIDE_MINUS}, {5, 1, 1 - TMAP_ESTRIDE_MINUS}, {6, 0, 7}, {7, 0, 3}};
  for (auto& o : all) ops.push_back(o);
  start.push_back(ops.size());
  unsigned char* dmaps; Op* dops; int* dstart;
  cudaMalloc(&dmaps, maps.size()); cudaMalloc(&dops, ops.size() * sizeof(Op)); cudaMalloc(&dstart, start.size() * 4);
  cudaMemcpy(dmaps, maps.data(), maps.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dops, ops.data(), ops.size() * sizeof(Op), cudaMemcpyHostToDevice);
  cudaMemcpy(dstart, start.data(), start.size() * 4, cudaMemcpyHostToDevice);
  apply_ops<<<1, 64>>>(dmaps, dops, dstart, n + 1);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("apply_ops: %s\n", cudaGetErrorString(e)); exit(1); }
  cudaMemcpy(maps.data(), dmaps, maps.size(), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) {
    const bool same = memcmp(&maps[128 * i], &h, 128) == 0;
    printf("field %-14s %s\n", cands[i].name, same ? "MATCH" : "differs");
  }
  const bool same = memcmp(&maps[128 * n], &h, 128) == 0;
  hex("built", &maps[128 * n]);
  printf("built from zeros: %s\n", same ? "MATCH" : "differs");
  cudaFree(a); cudaFree(dmaps); cudaFree(dops); cudaFree(dstart);
}

struct Case { const char* name; int bm, wg, uk, tm, l2; void (*launch)(const float*, const float*, float*, unsigned char*, const CUtensorMap&, int, int, int); };
template <int BM, int WG, int UK, int UNITS, int PER, int TM>
void launcht(const float* A, const float* B, float* C, unsigned char* s, const CUtensorMap& m, int M, int N, int K) {
  const dim3 grid(N / (64 * WG), (M + BM - 1) / BM);
  if constexpr (TM == 0) gemmt_host<BM, WG, UK, UNITS, PER><<<grid, WG * 128>>>(A, B, C, m, M, N, K);
  else gemmt_dev<BM, WG, UK, UNITS, PER><<<grid, WG * 128>>>(A, B, C, s, M, N, K);
}
template <int KS, int STAGES>
void launchv(const float* A, const float* B, float* C, unsigned char*, const CUtensorMap&, int M, int N, int K) {
  gemmv<KS, STAGES><<<dim3(N / 128, M / 128), 256>>>(A, B, C, M, N, K);
}
template <int WG, int NR, int MINB>
void launchw(const float* A, const float* B, float* C, unsigned char*, const CUtensorMap& m, int M, int N, int K) {
  gemmw<WG, NR, MINB><<<dim3(N / (64 * WG * NR), M / 128), WG * 128>>>(A, B, C, m, M, N, K);
}
template <int BM, int WG, int STAGES, int W, int MINB>
void launchs(const float* A, const float* B, float* C, unsigned char*, const CUtensorMap& m, int M, int N, int K) {
  static CUtensorMap bm;
  static const float* last = nullptr;
  if (last != B) { bm = encode_b(B, K, N, 32); last = B; }
  constexpr int bytes = s_smem_bytes<BM, WG, STAGES>();
  static bool set = false;
  if (!set) {
    cudaError_t e = cudaFuncSetAttribute(gemms<BM, WG, STAGES, W, MINB>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) printf("cudaFuncSetAttribute(%d): %s\n", bytes, cudaGetErrorString(e));
    set = true;
  }
  gemms<BM, WG, STAGES, W, MINB><<<dim3(N / (64 * WG), M / BM), WG * 128, bytes>>>(m, bm, C, M, N, K);
}
#define SCASE(BM, WG, STAGES, W, MINB) \
  {"S bm" #BM " wg" #WG " st" #STAGES " w" #W " minb" #MINB, BM, WG, 32, 0, 0, launchs<BM, WG, STAGES, W, MINB>}
#define WCASE(WG, NR, MINB) \
  {"W wg" #WG " nr" #NR " minb" #MINB, 128, WG, 32, 0, 0, launchw<WG, NR, MINB>}
#define TCASE(BM, WG, UK, UNITS, PER, TM) \
  {"T bm" #BM " wg" #WG " uk" #UK " units" #UNITS " per" #PER " tm" #TM, BM, WG, UK, TM, 0, launcht<BM, WG, UK, UNITS, PER, TM>}

int main(int argc, char** argv) {
  // tma fields | tma --list | tma CASE_SUBSTRING [REPEATS]
  const char* only = argc > 1 ? argv[1] : "";
  const int repeats = argc > 2 ? atoi(argv[2]) : 2;
  if (!strcmp(only, "fields")) { tmap_fields(); return 0; }
  // Runs 1-3 of docs/benchmarks.md (session 13); "L2 256": the map asks
  // for 256-byte L2 promotion.
  const Case cases[] = {
      {"V ks32 st3 cp.async (tcc now)", 128, 2, 32, 0, 0, launchv<32, 3>},
      TCASE(128, 2, 32, 2, 1, 0), TCASE(128, 4, 32, 2, 1, 0),
      {"T bm128 wg2 uk32 units2 per1 tm0 L2 256", 128, 2, 32, 0, 2, launcht<128, 2, 32, 2, 1, 0>},
      TCASE(128, 2, 16, 4, 2, 0), TCASE(128, 2, 16, 5, 2, 0), TCASE(128, 2, 16, 5, 1, 0),
      {"T bm128 wg2 uk16 units5 per1 tm0 L2 256", 128, 2, 16, 0, 2, launcht<128, 2, 16, 5, 1, 0>},
      TCASE(128, 2, 16, 4, 1, 0), TCASE(128, 2, 8, 11, 4, 0), TCASE(128, 2, 8, 10, 4, 0),
      TCASE(128, 4, 16, 5, 2, 0), TCASE(128, 4, 8, 11, 4, 0),
      TCASE(256, 2, 16, 2, 1, 0), TCASE(256, 1, 16, 2, 1, 0), TCASE(256, 2, 32, 1, 1, 0),
      TCASE(192, 2, 16, 3, 1, 0), TCASE(192, 1, 16, 3, 1, 0),
      TCASE(128, 2, 32, 2, 1, 1), TCASE(128, 2, 16, 5, 1, 1), TCASE(128, 2, 16, 5, 2, 1), TCASE(128, 4, 16, 5, 2, 1),
      TCASE(128, 2, 8, 11, 4, 1), TCASE(128, 4, 32, 2, 1, 1), TCASE(256, 2, 16, 2, 1, 1), TCASE(192, 2, 16, 3, 1, 1),
      // run 4
      WCASE(2, 1, 1), WCASE(1, 2, 1), WCASE(1, 2, 2), WCASE(1, 2, 3), WCASE(2, 2, 1), WCASE(1, 1, 1), WCASE(1, 1, 4),
      // session 14: B through local memory, more local memory than OpenCL gives
      SCASE(128, 2, 2, 0, 1), SCASE(128, 2, 3, 0, 2), SCASE(128, 2, 3, 1, 2), SCASE(128, 2, 4, 1, 1), SCASE(128, 2, 6, 1, 1),
      SCASE(128, 4, 3, 0, 1), SCASE(128, 4, 3, 1, 1), SCASE(128, 4, 4, 1, 1),
      SCASE(256, 2, 3, 0, 1), SCASE(256, 2, 3, 1, 1), SCASE(256, 1, 4, 1, 1), SCASE(256, 1, 2, 0, 2),
      // second run
      SCASE(256, 2, 4, 0, 1), SCASE(256, 2, 4, 1, 1), SCASE(128, 4, 4, 0, 1), SCASE(128, 2, 5, 1, 1), SCASE(128, 2, 3, 1, 1),
  };
  if (!strcmp(only, "--list")) { for (auto& c : cases) printf("%s\n", c.name); return 0; }
  for (int size : {2048, 4096}) {
    Problem p = make_problem(size);
    unsigned char* scratch;
    cudaMalloc(&scratch, 128 * (size / 64) * (size / 64));
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (auto& c : cases) {
      if (!strstr(c.name, only)) continue;
      const CUtensorMap m = encode_a(p.A, p.M, p.K, c.bm, c.uk,
                                     c.l2 == 2 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE);
      cudaMemset(p.C, 0, (size_t)p.M * p.N * 4);
      c.launch(p.A, p.B, p.C, scratch, m, p.M, p.N, p.K);
      double max_err, max_ref;
      if (!check_result(p, size, c.name, max_err, max_ref)) return 1;
      for (int i = 0; i < 3; ++i) c.launch(p.A, p.B, p.C, scratch, m, p.M, p.N, p.K);
      for (int r = 0; r < repeats; ++r) {
        cudaEventRecord(e0);
        const int iters = 20;
        for (int i = 0; i < iters; ++i) c.launch(p.A, p.B, p.C, scratch, m, p.M, p.N, p.K);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= iters;
        printf("%d %-34s ms=%.3f TF/s=%.1f max_err=%.3g (max |ref| %.3g)\n", size, c.name, ms,
               2.0 * p.M * p.N * p.K / ms / 1e9, max_err, max_ref);
      }
    }
    cudaFree(scratch);
    free_problem(p);
  }
  return 0;
}
