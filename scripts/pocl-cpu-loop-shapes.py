#!/usr/bin/env python3
"""Loop shapes behind two pocl-cpu choices, measured directly on PoCL with
pyopencl (the best of 9 launches from profiling events; docs/benchmarks.md,
"CPU: register blocks for AVX2, convolutions as window loops (session 12)").

1. ResNet-50's 14x14 3x3 convolution (M=196, N=256, K=2304) in a
   register-blocked kernel walking the window's loops, with the padding
   checked per element (`sel`), checked per tap with a check-free channel
   loop where all rows are inside (`version`, what tcc generates), and not
   checked at all (`plain`: wrong at the borders, the bound).
2. A BatchNorm + ReLU over 56x56x112 (ShuffleNet) mapped element by
   element onto a grid-stride loop (`elements`) and by rows, each row's 112
   channels walked in order (`rows`, what tcc-map-loops-to-work-items
   {serial-rows} generates).

  python3 scripts/pocl-cpu-loop-shapes.py [ROWS COLUMNS]   (default 6 16)

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

ctx = cl.Context([d for p in cl.get_platforms() for d in p.get_devices()][:1])
queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
mf = cl.mem_flags


def best_ms(kernel, global_size, local_size, *args, runs=9):
    best = float("inf")
    for _ in range(runs):
        event = kernel(queue, global_size, local_size, *args)
        event.wait()
        best = min(best, (event.profile.end - event.profile.start) * 1e-6)
    return best


def conv_source(rows, columns, mode, m=196, n=256, c=256, h=14):
    vectors = columns // 8
    tiles_m, tiles_n = (m + rows - 1) // rows, n // columns
    lines = [
        "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))",
        "void conv(__global const float* restrict bias, __global float* restrict out,",
        "          __global const float* restrict w, __global const float* restrict x) {",
        f"  const int group = get_group_id(1) * {tiles_n} + get_group_id(0);",
        f"  const int row0 = (group % {tiles_m}) * {rows}, col0 = (group / {tiles_m}) * {columns};",
    ]
    for r in range(rows):
        lines.append(f"  const int i{r} = min(row0 + {r}, {m - 1}), y{r} = i{r} / {h}, x{r} = i{r} % {h};")
        lines += [f"  float8 acc{r}_{v} = (float8)(0.0f);" for v in range(vectors)]
    lines.append("  for (int ky = 0; ky < 3; ++ky) for (int kx = 0; kx < 3; ++kx) {")
    for r in range(rows):
        lines.append(f"    const int yy{r} = y{r} + ky - 1, xx{r} = x{r} + kx - 1;")
        lines.append(f"    const bool ok{r} = yy{r} >= 0 && yy{r} < {h} && xx{r} >= 0 && xx{r} < {h};")
        lines.append(f"    __global const float* p{r} = x + (clamp(yy{r}, 0, {h - 1}) * {h} + clamp(xx{r}, 0, {h - 1})) * {c};")
    lines.append(f"    __global const float* wb = w + (ky * 3 + kx) * {c * n} + col0;")

    def channel_loop(checked):
        body = [f"    for (int ch = 0; ch < {c}; ++ch) {{"]
        body += [f"      const float8 b{v} = vload8(0, wb + ch * {n} + {8 * v});" for v in range(vectors)]
        for r in range(rows):
            a = f"(ok{r} ? p{r}[ch] : 0.0f)" if checked else f"p{r}[ch]"
            body.append(f"      {{ const float8 a = (float8)({a});")
            body += [f"        acc{r}_{v} = fma(a, b{v}, acc{r}_{v});" for v in range(vectors)]
            body.append("      }")
        return body + ["    }"]

    if mode == "version":
        lines.append("    if (" + " && ".join(f"ok{r}" for r in range(rows)) + ") {")
        lines += channel_loop(False) + ["    } else {"] + channel_loop(True) + ["    }"]
    else:
        lines += channel_loop(mode == "sel")
    lines.append("  }")
    for r in range(rows):
        lines.append(f"  if (row0 + {r} < {m}) {{")
        lines += [f"    vstore8(max(acc{r}_{v} + vload8(0, bias + col0 + {8 * v}), 0.0f), 0, out + (row0 + {r}) * {n} + col0 + {8 * v});"
                  for v in range(vectors)]
        lines.append("  }")
    return "\n".join(lines + ["}"]), (tiles_n, tiles_m, 1)


def conv(rows, columns):
    m, n, c, h = 196, 256, 256, 14
    rng = np.random.default_rng(0)
    x = rng.standard_normal((h, h, c)).astype(np.float32)
    w = (rng.standard_normal((9 * c, n)) * 0.05).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    padded = np.pad(x, ((1, 1), (1, 1), (0, 0)))
    windows = np.stack([padded[ky:ky + h, kx:kx + h] for ky in range(3) for kx in range(3)], axis=2)
    want = np.maximum(windows.reshape(m, 9 * c) @ w + bias, 0)
    buffers = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in (bias,)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, m * n * 4)
    buffers += [out] + [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in (w, x)]
    for mode in ["sel", "version", "plain"]:
        source, grid = conv_source(rows, columns, mode)
        kernel = cl.Program(ctx, source).build().conv
        ms = best_ms(kernel, grid, (1, 1, 1), *buffers)
        got = np.empty((m, n), np.float32)
        cl.enqueue_copy(queue, got, out)
        error = np.abs(got - want).max()
        print(f"3x3 conv {rows}x{columns} {mode:8s} {ms:.3f} ms {2 * m * n * 9 * c / ms / 1e6:6.1f} GFLOP/s  max error {error:.1e}")


# tcc's NaN-propagating minimum and maximum (the OpenCL C back end's).
HELPERS = """
inline float tcc_maximumf(float a, float b) { return (isnan(a) | isnan(b)) ? NAN : a == b ? as_float(as_uint(a) & as_uint(b)) : fmax(a, b); }
inline float tcc_minimumf(float a, float b) { return (isnan(a) | isnan(b)) ? NAN : a == b ? as_float(as_uint(a) | as_uint(b)) : fmin(a, b); }
"""
BODY = """
      const float v = a0[r * 112 + ch] * a1[ch] + a2[ch];
      a3[r * 112 + ch] = tcc_maximumf(tcc_minimumf(v, 3.4028235e38f), 0.0f);"""
ELEMENTS = HELPERS + """
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void bn_relu(__global const float* restrict a0, __global const float* restrict a1,
             __global const float* restrict a2, __global float* restrict a3) {
  const int step = get_local_size(0) * get_num_groups(0);
  for (int e = get_global_id(0); e < 351232; e += step) {
    const int ch = e % 112, r = e / 112;""" + BODY + """
  }
}"""
ROWS = HELPERS + """
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bn_relu(__global const float* restrict a0, __global const float* restrict a1,
             __global const float* restrict a2, __global float* restrict a3) {
  const int step = get_local_size(0) * get_num_groups(0);
  for (int r = get_global_id(0); r < 3136; r += step)
    for (int ch = 0; ch < 112; ++ch) {""" + BODY + """
    }
}"""


def elementwise():
    n = 351232
    rng = np.random.default_rng(0)
    x, scale, shift = (rng.standard_normal(s).astype(np.float32) for s in (n, 112, 112))
    want = np.maximum(x.reshape(-1, 112) * scale + shift, 0).ravel()
    args = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in (x, scale, shift)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, n * 4)
    for name, source, workgroup in [("elements", ELEMENTS, 256), ("rows", ROWS.replace("WG", "256"), 256),
                                    ("rows", ROWS.replace("WG", "16"), 16)]:
        kernel = cl.Program(ctx, source).build().bn_relu
        ms = best_ms(kernel, (workgroup * 64,), (workgroup,), *args, out)
        got = np.empty(n, np.float32)
        cl.enqueue_copy(queue, got, out)
        print(f"BatchNorm + ReLU 56x56x112 by {name:8s} (64 groups of {workgroup:3d}) {ms:.3f} ms  max error {np.abs(got - want).max():.1e}")


if __name__ == "__main__":
    rows, columns = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else (6, 16)
    conv(rows, columns)
    elementwise()
