#!/usr/bin/env python3
"""Runs on the GPU machine: the FP16/BF16 GEMM products of
scripts/bench/build-gemm16-bundle.sh, checked against float64 numpy and
timed against cuBLAS (torch's matmul in the same dtype, fp32 accumulation).

Each model computes C = (X Y) (U V); its last GEMM (M x N x K) reads A = X Y
and B = U V as the 16-bit intermediates --precision stores them in, so that
kernel alone is timed: tcc-benchmark's per-kernel mean (CUDA events) of the
model's kernel of the most floating-point operations, the product itself. Every build directory of the
bundle (fp16, bf16: --backend=cuda, the wgmma body; fp16-mma, bf16-mma: the
mma.sync body) is run.

Accuracy: relative Frobenius error against float64 numpy on inputs uniform
in [-1, 1]; fp16 passes at 2e-3, bf16 at 1e-2 (8 bits of mantissa).

Usage: gemm16-device.py [BUNDLE] (default .device-gemm16)"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

dev = sys.argv[1] if len(sys.argv) > 1 else ".device-gemm16"
LIMIT = {"fp16": 2e-3, "bf16": 1e-2}
SHAPE = re.compile(r"_(\d+)x(\d+)x(\d+)$")
failures = 0


def builds():
    skip = {"bin", "models"}
    return sorted(d for d in os.listdir(dev) if os.path.isdir(os.path.join(dev, d)) and d not in skip)


def check(build, name, m, n, k):
    """Relative error of the artifact's output against float64 numpy."""
    rng = np.random.default_rng(5)
    r = 64
    x = rng.uniform(-1, 1, (1, m, r)).astype(np.float32)
    y = rng.uniform(-1, 1, (1, r, k)).astype(np.float32) / 8
    u = rng.uniform(-1, 1, (1, k, r)).astype(np.float32)
    v = rng.uniform(-1, 1, (1, r, n)).astype(np.float32) / 8
    a = x[0].astype(np.float64) @ y[0].astype(np.float64)
    b = u[0].astype(np.float64) @ v[0].astype(np.float64)
    want = a @ b
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [os.path.join(dev, "bin", "tcc-run"), os.path.join(dev, build, f"{name}.so"), "--backend=cuda"]
        for i, value in enumerate((x, y, u, v)):
            np.save(f"{tmp}/in{i}.npy", value)
            cmd.append(f"--input=@{tmp}/in{i}.npy")
        cmd.append(f"--output=@{tmp}/out.npy")
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            return None, run.stderr.strip()[-400:]
        got = np.load(f"{tmp}/out.npy")[0].astype(np.float64)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want)), ""


def tcc_time(build, name):
    """Mean microseconds of the model's product kernel, and its name."""
    run = subprocess.run([os.path.join(dev, "bin", "tcc-benchmark"), os.path.join(dev, build, f"{name}.so"),
                          "--backend=cuda", "--random-inputs", "--warmup=5", "--iterations=30", "--json"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip()[-400:]
    kernels = json.loads(run.stdout)["kernels"]
    # The product: the kernel of the most floating-point operations (its
    # GFLOP/s times its time), not the slowest (X Y writes M x K halves).
    product = max(kernels, key=lambda kernel: (kernel["gflops"] or 0.0) * kernel["mean_us"])
    return product["mean_us"], product["name"]


def cublas_time(dtype, m, n, k):
    import torch

    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    dt = torch.float16 if dtype == "fp16" else torch.bfloat16
    a = torch.rand((m, k), device="cuda", dtype=dt)
    b = torch.rand((k, n), device="cuda", dtype=dt)
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(30):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    times.sort()
    return times[len(times) // 2]


rows = []
cublas = {}
for build in builds():
    dtype = build.split("-")[0]
    for so in sorted(os.listdir(os.path.join(dev, build))):
        name = so[: -len(".so")]
        if not SHAPE.search(name):
            continue
        m, n, k = map(int, SHAPE.search(name).groups())
        error, why = check(build, name, m, n, k)
        if error is None:
            print(f"FAIL {build} {name}: {why}")
            failures += 1
            continue
        verdict = "PASS" if error <= LIMIT[dtype] else "FAIL"
        failures += verdict == "FAIL"
        us, kernel = tcc_time(build, name)
        if us is None:
            print(f"FAIL {build} {name} timing: {kernel}")
            failures += 1
            continue
        if (dtype, m, n, k) not in cublas:
            cublas[(dtype, m, n, k)] = cublas_time(dtype, m, n, k)
        theirs = cublas[(dtype, m, n, k)]
        flops = 2 * m * n * k
        row = dict(build=build, name=name, m=m, n=n, k=k, error=error, verdict=verdict,
                   tcc_us=us, cublas_us=theirs, tcc_tflops=flops / us / 1e6,
                   cublas_tflops=flops / theirs / 1e6, ratio=theirs / us, kernel=kernel)
        rows.append(row)
        print(f"{verdict} {build:<9} {name:<22} err {error:.2e}  tcc {us:9.1f} us {row['tcc_tflops']:6.1f} TF/s"
              f"  cuBLAS {theirs:9.1f} us {row['cublas_tflops']:6.1f} TF/s  tcc/cuBLAS {row['ratio']:.2f}", flush=True)
out = os.environ.get("OUT")
if out:
    with open(os.path.join(out, "gemm16.json"), "w") as f:
        json.dump(rows, f, indent=1)
sys.exit(1 if failures else 0)
