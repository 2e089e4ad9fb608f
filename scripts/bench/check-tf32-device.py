#!/usr/bin/env python3
"""Runs on the GPU machine: the e2e models compiled with
`tcc compile --target=nvidia --precision=P` (into DEVICE_DIR/P/, beside
the fp32 reference outputs of scripts/bench/build-device-bundle.sh or
scripts/bench/build-mma-bundle.sh in DEVICE_DIR/models/) against those
reference outputs, then the benchmark products in tcc (every precision
compiled, fp32 too where DEVICE_DIR/fp32/ exists) next to cuBLAS in the
same precision (TF32: allow_tf32; FP16: half matmul, fp32 accumulation).

Accuracy rule: TF32 and FP16 both keep 10 explicit mantissa bits, so
rounding an input to either costs at most 2^-11 of its value (FP16 also
loses range: beyond 65504 it overflows, below 6.1e-5 it is subnormal);
each product carries up to ~2^-10 relative error; summed over K products
of mixed signs the error grows like sqrt(K), and the output's relative
Frobenius error against fp32 (||got - fp32|| / ||fp32||) stays near
1e-4..1e-3. A model passes when that error is <= 2e-3. An error of
exactly 0 means no GEMM of the model took the tensor-core template
(products too small for tiles): reported.

`tf32-cuda` is TF32 compiled with `--backend=cuda` (DEVICE_DIR/tf32-cuda/):
the runtime's CUDA-driver backend runs it (the artifacts ask for it), and
large products take the 256x128 wgmma tile in CUDA dynamic local memory.

Usage: check-tf32-device.py [DEVICE_DIR] [--precision=tf32|tf32-cuda|fp16]...
(default .device and tf32)"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

args = [a for a in sys.argv[1:] if not a.startswith("--")]
precisions = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--precision=")] or ["tf32"]
dev = args[0] if args else ".device"
models_dir = os.path.join(dev, "models")
LIMIT = {"tf32": 2e-3, "tf32-cuda": 2e-3, "fp16": 2e-3}


def backend(precision):
    """The runtime backend's flag for artifacts of `precision`."""
    return ["--backend=cuda"] if precision.endswith("-cuda") else []
failures = 0


def check_models(precision):
    """Each model's outputs at `precision` against the fp32 reference."""
    global failures
    with open(os.path.join(models_dir, "MANIFEST")) as manifest:
        lines = [line.split() for line in manifest if line.strip()]
    for name, tag, function, num_inputs, num_outputs, *_ in lines:
        artifact = os.path.join(dev, precision, f"{name}.so")
        if not os.path.exists(artifact):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [os.path.join(dev, "bin", "tcc-run"), artifact, f"--function={function}", "--verbose"]
            cmd += backend(precision)
            cmd += [f"--input=@{models_dir}/{tag}.input{i}.npy" for i in range(int(num_inputs))]
            cmd += [f"--output=@{tmp}/got{i}.npy" for i in range(int(num_outputs))]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"FAIL {precision} {tag}: {run.stderr.strip()[-300:]}")
                failures += 1
                continue
            form = "PTX" if "kernels: PTX" in run.stderr else "OpenCL C"
            worst = 0.0
            for i in range(int(num_outputs)):
                got = np.load(f"{tmp}/got{i}.npy").astype(np.float64)
                want = np.load(f"{models_dir}/{tag}.expected{i}.npy").astype(np.float64)
                norm = np.linalg.norm(want.ravel())
                error = np.linalg.norm((got - want).ravel()) / (norm if norm > 0 else 1.0)
                worst = max(worst, float(error))
            verdict = "PASS" if worst <= LIMIT[precision] else "FAIL"
            failures += verdict == "FAIL"
            note = " (identical to fp32: no tensor-core GEMM in this model)" if worst == 0.0 else ""
            print(f"{verdict} {precision} {tag}: kernels {form}, relative error vs fp32 {worst:.2e}{note}")


BENCH = [
    ("sgemm_2048", 2048, 2048, 2048),
    ("sgemm_4096", 4096, 4096, 4096),
    ("dense_2048x1024x4096", 2048, 1024, 4096),
]


def tcc_bench(precision, name, m, k, n):
    """tcc's TF/s for one benchmark product, or None."""
    global failures
    artifact = os.path.join(dev, precision, f"{name}.so")
    if not os.path.exists(artifact):
        return None
    inputs = [f"1x{m}x{k}xf32=0.5", f"1x{k}x{n}xf32=0.25"]
    if name.startswith("dense"):
        inputs.append(f"1x1x{n}xf32=0.1")
    run = subprocess.run([os.path.join(dev, "bin", "tcc-benchmark"), artifact, "--warmup=3",
                          "--iterations=20", f"--flops={2 * m * k * n}", "--json"]
                         + backend(precision) + [f"--input={i}" for i in inputs], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"tcc {precision} {name}: {run.stderr.strip()[-300:]}")
        failures += 1
        return None
    return json.loads(run.stdout)["gflops"]["device"] / 1000


def torch_bench(precision, name, m, k, n):
    """cuBLAS's TF/s for the same product (inputs filled as tcc's)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = precision.startswith("tf32")
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    dtype = torch.float16 if precision == "fp16" else torch.float32
    a = torch.full((m, k), 0.5, device="cuda", dtype=dtype)
    b = torch.full((k, n), 0.25, device="cuda", dtype=dtype)
    bias = torch.full((n,), 0.1, device="cuda", dtype=dtype)
    f = (lambda: torch.relu(torch.addmm(bias, a, b))) if name.startswith("dense") else (lambda: a @ b)
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return 2 * m * k * n / times[len(times) // 2] / 1e9


def check_products(precision):
    """The benchmark products on random inputs against float64 numpy (the
    large products are the ones the 256x128 tile of tf32-cuda takes)."""
    global failures
    rng = np.random.default_rng(7)
    for name, m, k, n in BENCH:
        artifact = os.path.join(dev, precision, f"{name}.so")
        if not os.path.exists(artifact):
            continue
        x = rng.uniform(-1, 1, (1, m, k)).astype(np.float32)
        w = rng.uniform(-1, 1, (1, k, n)).astype(np.float32)
        inputs = [x, w]
        want = x[0].astype(np.float64) @ w[0].astype(np.float64)
        if name.startswith("dense"):
            bias = rng.uniform(-1, 1, (1, 1, n)).astype(np.float32)
            inputs.append(bias)
            want = np.maximum(want + bias[0].astype(np.float64), 0.0)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [os.path.join(dev, "bin", "tcc-run"), artifact, "--verbose"] + backend(precision)
            for i, value in enumerate(inputs):
                np.save(f"{tmp}/in{i}.npy", value)
                cmd.append(f"--input=@{tmp}/in{i}.npy")
            cmd.append(f"--output=@{tmp}/out.npy")
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"FAIL {precision} {name}: {run.stderr.strip()[-300:]}")
                failures += 1
                continue
            got = np.load(f"{tmp}/out.npy")[0].astype(np.float64)
        error = np.linalg.norm((got - want).ravel()) / np.linalg.norm(want.ravel())
        verdict = "PASS" if error <= LIMIT[precision] else "FAIL"
        failures += verdict == "FAIL"
        form = "PTX" if "kernels: PTX" in run.stderr else "OpenCL C"
        print(f"{verdict} {precision} {name} (random inputs): kernels {form}, relative error vs float64 {error:.2e}")


for precision in precisions:
    check_models(precision)
    check_products(precision)
print()
print(f"{'case':<24} {'precision':<9} {'tcc TF/s':>9} {'cuBLAS TF/s':>12} {'ratio':>6}")
for name, m, k, n in BENCH:
    for precision in precisions + (["fp32"] if os.path.isdir(os.path.join(dev, "fp32")) else []):
        ours = tcc_bench(precision, name, m, k, n)
        if ours is None:
            continue
        theirs = torch_bench(precision, name, m, k, n)
        print(f"{name:<24} {precision:<9} {ours:>9.1f} {theirs:>12.1f} {ours / theirs:>6.2f}")
sys.exit(1 if failures else 0)
