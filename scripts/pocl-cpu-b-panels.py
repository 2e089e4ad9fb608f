#!/usr/bin/env python3
"""How much packing a GEMM's B into contiguous panels would give the
register-blocked CPU template, measured directly on PoCL with pyopencl
(the best of 9 launches from profiling events; docs/benchmarks.md, "CPU:
B panels, measured for the next step (session 13)").

The kernel is the template's inner loop on plain matrices: one work-item
per ROWS x COLUMNS block of C, per k one broadcast A element per row and
COLUMNS / 8 `float8` loads of B's row. B is read either as tcc reads a
weight today, row-major K x N (each k a new row, N floats further on), or
packed as [N / COLUMNS][K][COLUMNS] (each block's panel contiguous in k),
on ResNet-50's convolution shapes (K = taps x channels).

  python3 scripts/pocl-cpu-b-panels.py

Installs pyopencl from PyPI if missing.
"""
import subprocess
import sys

try:
    import pyopencl as cl
except ImportError:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "pyopencl"])
    import pyopencl as cl
import numpy as np

SHAPES = [  # M, N, K and the layer
    (3136, 256, 64, "56x56 1x1, 64 -> 256"),
    (3136, 64, 576, "56x56 3x3, 64"),
    (784, 512, 128, "28x28 1x1, 128 -> 512"),
    (784, 128, 1152, "28x28 3x3, 128"),
    (196, 256, 2304, "14x14 3x3, 256"),
    (49, 512, 4608, "7x7 3x3, 512"),
]


def source(rows, cols, m, n, k, packed):
    vectors = cols // 8
    lines = [
        "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))",
        "void gemm(__global float* restrict c, __global const float* restrict a, __global const float* restrict b) {",
        f"  const int tiles_m = {(m + rows - 1) // rows}, g = get_global_id(0);",
        f"  const int row0 = (g % tiles_m) * {rows}, col0 = (g / tiles_m) * {cols};",
    ]
    for r in range(rows):
        lines.append(f"  __global const float* a{r} = a + min(row0 + {r}, {m - 1}) * {k};")
        lines += [f"  float8 c{r}_{v} = 0.0f;" for v in range(vectors)]
    if packed:
        lines.append(f"  __global const float* panel = b + (col0 / {cols}) * {k * cols};")
    lines.append(f"  for (int kk = 0; kk < {k}; ++kk) {{")
    for v in range(vectors):
        address = f"panel + kk * {cols} + {8 * v}" if packed else f"b + kk * {n} + col0 + {8 * v}"
        lines.append(f"    const float8 b{v} = vload8(0, {address});")
    for r in range(rows):
        lines.append(f"    const float8 x{r} = (float8)(a{r}[kk]);")
        lines += [f"    c{r}_{v} = fma(x{r}, b{v}, c{r}_{v});" for v in range(vectors)]
    lines.append("  }")
    for r in range(rows):
        lines.append(f"  if (row0 + {r} < {m}) {{")
        lines += [f"    vstore8(c{r}_{v}, 0, c + (row0 + {r}) * {n} + col0 + {8 * v});" for v in range(vectors)]
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def main():
    device = [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU][0]
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    mf = cl.mem_flags
    rng = np.random.default_rng(0)
    rows, cols = 6, 16  # AVX2's block (config/pocl_cpu.rs)
    print(f"{device.name}: {rows}x{cols} blocks, best of 9 launches")
    for m, n, k, name in SHAPES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        reference = a @ b
        panels = np.ascontiguousarray(b.reshape(k, n // cols, cols).transpose(1, 0, 2))
        times = []
        for packed in (False, True):
            kernel = cl.Kernel(cl.Program(ctx, source(rows, cols, m, n, k, packed)).build(), "gemm")
            A = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
            B = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=panels if packed else b)
            C = cl.Buffer(ctx, mf.WRITE_ONLY, m * n * 4)
            kernel.set_args(C, A, B)
            best = float("inf")
            for _ in range(9):
                event = cl.enqueue_nd_range_kernel(queue, kernel, ((m + rows - 1) // rows * (n // cols),), (1,))
                event.wait()
                best = min(best, (event.profile.end - event.profile.start) * 1e-6)
            out = np.empty((m, n), np.float32)
            cl.enqueue_copy(queue, out, C)
            assert np.abs(out - reference).max() <= 1e-3 * np.abs(reference).max(), (name, packed)
            times.append(best)
        gflop = 2 * m * n * k / 1e6
        print(f"{name:24s} M={m:4d} N={n:3d} K={k:4d}: rows of B {times[0]:.3f} ms ({gflop / times[0]:.0f} GFLOP/s), "
              f"panels {times[1]:.3f} ms ({gflop / times[1]:.0f} GFLOP/s), {times[0] / times[1]:.2f}x", flush=True)


if __name__ == "__main__":
    main()
