#!/usr/bin/env python3
"""Kernel shapes on a PoCL CPU device, measured directly with pyopencl.

The experiment behind the pocl-cpu strategies (compiler/src/config/
pocl_cpu.rs): a register-blocked SGEMM (one work-item per ROWS x COLUMNS
block of C in float16 accumulators, no local memory) for several blocks,
and a row softmax as one 64-item work-group per row (local-memory trees,
the GPU shape) against one work-item per row in float16 vectors.

  python3 scripts/pocl-kernel-shapes.py [N]     (N: the SGEMM size, default 1024)

Prints kernel times from profiling events (the best of 5) and numpy's
time for the same product. Installs pyopencl from PyPI if missing.
"""
import subprocess
import sys
import time

try:
    import pyopencl as cl
except ImportError:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "pyopencl"])
    import pyopencl as cl
import numpy as np


def best_ms(kernel, queue, global_size, local_size, *args, runs=5):
    best = float("inf")
    for _ in range(runs):
        event = kernel(queue, global_size, local_size, *args)
        event.wait()
        best = min(best, (event.profile.end - event.profile.start) * 1e-6)
    return best


def sgemm_source(rows, vectors):
    columns = 16 * vectors
    lines = [
        "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))",
        "void sgemm(__global const float* restrict A, __global const float* restrict B,",
        "           __global float* restrict C, int N, int K) {",
        f"  const int j0 = get_global_id(0) * {columns}, i0 = get_global_id(1) * {rows};",
    ]
    lines += [f"  float16 acc{r}_{v} = (float16)(0.0f);" for r in range(rows) for v in range(vectors)]
    lines.append("  for (int k = 0; k < K; ++k) {")
    lines += [f"    const float16 b{v} = vload16(0, B + k * N + j0 + {16 * v});" for v in range(vectors)]
    for r in range(rows):
        fmas = " ".join(f"acc{r}_{v} = fma(a, b{v}, acc{r}_{v});" for v in range(vectors))
        lines.append(f"    {{ const float16 a = (float16)(A[(i0 + {r}) * K + k]); {fmas} }}")
    lines.append("  }")
    lines += [
        f"  vstore16(acc{r}_{v}, 0, C + (i0 + {r}) * N + j0 + {16 * v});"
        for r in range(rows)
        for v in range(vectors)
    ]
    lines.append("}")
    return "\n".join(lines)


SOFTMAX_GROUP = """
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void softmax(__global const float* restrict x, __global float* restrict y, int n) {
  __local float scratch[64];
  const int row = get_group_id(0), lid = get_local_id(0);
  x += row * n; y += row * n;
  float part = -INFINITY;
  for (int c = lid; c < n; c += 64) part = fmax(part, x[c]);
  scratch[lid] = part; barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 32; s > 0; s >>= 1) { if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]); barrier(CLK_LOCAL_MEM_FENCE); }
  const float m = scratch[0]; barrier(CLK_LOCAL_MEM_FENCE);
  part = 0.0f;
  for (int c = lid; c < n; c += 64) part += exp(x[c] - m);
  scratch[lid] = part; barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 32; s > 0; s >>= 1) { if (lid < s) scratch[lid] += scratch[lid + s]; barrier(CLK_LOCAL_MEM_FENCE); }
  const float inv = 1.0f / scratch[0];
  for (int c = lid; c < n; c += 64) y[c] = exp(x[c] - m) * inv;
}
"""

SOFTMAX_VECTOR = """
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void softmax(__global const float* restrict x, __global float* restrict y, int n) {
  const int row = get_group_id(0);
  x += row * n; y += row * n;
  float16 m16 = (float16)(-INFINITY);
  for (int c = 0; c < n; c += 16) m16 = fmax(m16, vload16(0, x + c));
  float m = -INFINITY;
  for (int l = 0; l < 16; ++l) m = fmax(m, ((float*)&m16)[l]);
  float16 s16 = (float16)(0.0f);
  for (int c = 0; c < n; c += 16) s16 += exp(vload16(0, x + c) - m);
  float s = 0.0f;
  for (int l = 0; l < 16; ++l) s += ((float*)&s16)[l];
  const float inv = 1.0f / s;
  for (int c = 0; c < n; c += 16) vstore16(exp(vload16(0, x + c) - m) * inv, 0, y + c);
}
"""


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    context = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    print(f"device: {context.devices[0].name}")
    flags = cl.mem_flags
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    a_buffer = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    b_buffer = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=b)
    c_buffer = cl.Buffer(context, flags.WRITE_ONLY, n * n * 4)
    expected = a @ b
    for rows, vectors in [(4, 1), (8, 1), (4, 2), (6, 2), (8, 2), (4, 4)]:
        columns = 16 * vectors
        if n % rows or n % columns:
            continue
        kernel = cl.Kernel(cl.Program(context, sgemm_source(rows, vectors)).build(), "sgemm")
        ms = best_ms(kernel, queue, (n // columns, n // rows), (1, 1), a_buffer, b_buffer,
                     c_buffer, np.int32(n), np.int32(n))
        c = np.empty_like(a)
        cl.enqueue_copy(queue, c, c_buffer)
        error = np.abs(c - expected).max() / np.abs(expected).max()
        print(f"sgemm {n}^3, {rows}x{columns} block: {ms:.2f} ms, "
              f"{2 * n**3 / ms / 1e6:.1f} GFLOP/s (relative error {error:.1e})")
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        start = time.perf_counter()
        a @ b
        times.append((time.perf_counter() - start) * 1e3)
    print(f"numpy sgemm {n}^3: {min(times):.2f} ms, {2 * n**3 / min(times) / 1e6:.1f} GFLOP/s")

    rows_, columns_ = 2048, 1024
    x = (np.random.randn(rows_, columns_) * 3).astype(np.float32)
    x_buffer = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    y_buffer = cl.Buffer(context, flags.WRITE_ONLY, x.nbytes)
    for name, source, local in [("64-item group per row", SOFTMAX_GROUP, 64),
                                ("one work-item per row, float16", SOFTMAX_VECTOR, 1)]:
        kernel = cl.Kernel(cl.Program(context, source).build(), "softmax")
        ms = best_ms(kernel, queue, (rows_ * local,), (local,), x_buffer, y_buffer,
                     np.int32(columns_))
        print(f"softmax {rows_}x{columns_}, {name}: {ms:.2f} ms")


if __name__ == "__main__":
    main()
