// Shared by proto.cu and packed.cu: the test problem (M = N = K = size,
// A and B uniform in [-1, 1) from srand(1), row-major, on the device), the
// naive fp32 reference product R, and a result's error against it.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void reference(const float* A, const float* B, float* C, int M, int N, int K) {
  int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N) return;
  float s = 0;
  for (int k = 0; k < K; ++k) s += A[(size_t)m * K + k] * B[(size_t)k * N + n];
  C[(size_t)m * N + n] = s;
}

struct Problem {
  int M, N, K;
  float *A, *B, *C, *R;        // device: inputs, output, reference
  std::vector<float> hr, hc;   // host: reference, output
};

inline Problem make_problem(int size) {
  Problem p{size, size, size};
  std::vector<float> ha((size_t)p.M * p.K), hb((size_t)p.K * p.N);
  srand(1);
  for (auto& x : ha) x = (rand() / (float)RAND_MAX) * 2 - 1;
  for (auto& x : hb) x = (rand() / (float)RAND_MAX) * 2 - 1;
  cudaMalloc(&p.A, ha.size() * 4); cudaMalloc(&p.B, hb.size() * 4);
  cudaMalloc(&p.C, (size_t)p.M * p.N * 4); cudaMalloc(&p.R, (size_t)p.M * p.N * 4);
  cudaMemcpy(p.A, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(p.B, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice);
  reference<<<dim3(p.N / 256, p.M), 256>>>(p.A, p.B, p.R, p.M, p.N, p.K);
  p.hr.resize((size_t)p.M * p.N);
  p.hc.resize((size_t)p.M * p.N);
  cudaMemcpy(p.hr.data(), p.R, p.hr.size() * 4, cudaMemcpyDeviceToHost);
  return p;
}

// Waits for the launches that wrote p.C; false (after printing the error
// with `size` and `name`) if one failed, else the largest |C - R| and |R|.
inline bool check_result(Problem& p, int size, const char* name, double& max_err, double& max_ref) {
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    printf("%d %s: %s\n", size, name, cudaGetErrorString(err));
    return false;
  }
  cudaMemcpy(p.hc.data(), p.C, p.hc.size() * 4, cudaMemcpyDeviceToHost);
  max_err = 0, max_ref = 0;
  for (size_t i = 0; i < p.hc.size(); ++i) {
    max_err = fmax(max_err, fabs(p.hc[i] - p.hr[i]));
    max_ref = fmax(max_ref, fabs(p.hr[i]));
  }
  return true;
}

inline void free_problem(Problem& p) { cudaFree(p.A); cudaFree(p.B); cudaFree(p.C); cudaFree(p.R); }
