#!/usr/bin/env python3
"""Runs on the GPU machine: the e2e models compiled with
`tcc compile --target=nvidia --precision=tf32` (into .device/tf32/, beside
the fp32 bundle of scripts/build-device-bundle.sh) against the bundle's
fp32 reference outputs, then TF32 throughput next to cuBLAS with TF32 on.

Accuracy rule: TF32 rounds each GEMM input to 10 mantissa bits (relative
error <= 2^-11 per input), so each product carries up to ~2^-10 relative
error; summed over K products of mixed signs the error grows like
sqrt(K), and the output's relative Frobenius error against fp32
(||tf32 - fp32|| / ||fp32||) stays near 1e-4..1e-3. A model passes when
that error is <= 2e-3. An error of exactly 0 means no GEMM of the model
took the tensor-core template (products too small for tiles): reported.

Usage: check-tf32-device.py [DEVICE_DIR]   (default .device)"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

dev = sys.argv[1] if len(sys.argv) > 1 else ".device"
tf32_dir = os.path.join(dev, "tf32")
models_dir = os.path.join(dev, "models")
LIMIT = 2e-3
failures = 0
with open(os.path.join(models_dir, "MANIFEST")) as manifest:
    lines = [line.split() for line in manifest if line.strip()]
for name, tag, function, num_inputs, num_outputs, *_ in lines:
    artifact = os.path.join(tf32_dir, f"{name}.so")
    if not os.path.exists(artifact):
        continue
    with tempfile.TemporaryDirectory() as tmp:
        args = [os.path.join(dev, "bin", "tcc-run"), artifact, f"--function={function}", "--verbose"]
        args += [f"--input=@{models_dir}/{tag}.input{i}.npy" for i in range(int(num_inputs))]
        args += [f"--output=@{tmp}/got{i}.npy" for i in range(int(num_outputs))]
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL {tag}: {run.stderr.strip()[-300:]}")
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
        verdict = "PASS" if worst <= LIMIT else "FAIL"
        failures += verdict == "FAIL"
        note = " (identical to fp32: no tensor-core GEMM in this model)" if worst == 0.0 else ""
        print(f"{verdict} {tag}: kernels {form}, relative error vs fp32 {worst:.2e}{note}")

print()
bench = [
    ("sgemm_2048", 2 * 2048 ** 3, ["1x2048x2048xf32=0.5", "1x2048x2048xf32=0.25"]),
    ("sgemm_4096", 2 * 4096 ** 3, ["1x4096x4096xf32=0.5", "1x4096x4096xf32=0.25"]),
    ("dense_2048x1024x4096", 2 * 2048 * 1024 * 4096,
     ["1x2048x1024xf32=0.5", "1x1024x4096xf32=0.25", "1x1x4096xf32=0.1"]),
]
for name, flops, inputs in bench:
    artifact = os.path.join(tf32_dir, f"{name}.so")
    if not os.path.exists(artifact):
        continue
    run = subprocess.run([os.path.join(dev, "bin", "tcc-benchmark"), artifact, "--warmup=3",
                          "--iterations=20", f"--flops={flops}", "--json"]
                         + [f"--input={i}" for i in inputs], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"tcc tf32 {name}: {run.stderr.strip()[-300:]}")
        failures += 1
        continue
    report = json.loads(run.stdout)
    print(f"tcc tf32 {name}: {report['device_ms_per_call']:.3f} ms, {report['gflops']['device'] / 1000:.1f} TF/s")

import torch  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True
for n in (2048, 4096):
    a = torch.rand(n, n, device="cuda")
    b = torch.rand(n, n, device="cuda")
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    median = times[len(times) // 2]
    print(f"cublas tf32 sgemm_{n}: {median:.3f} ms, {2 * n ** 3 / median / 1e9:.1f} TF/s")
sys.exit(1 if failures else 0)
