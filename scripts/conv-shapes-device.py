#!/usr/bin/env python3
"""Runs on the GPU machine: every distinct ResNet-50 convolution shape at
batch 1 as tcc runs it, next to cuDNN's torch.nn.functional.conv2d (fp32,
TF32 off, `cudnn.benchmark`), in one run: issue 9's per-layer target (tcc
>= 0.7x cuDNN's speed), matched exactly.

The bundle (scripts/build-conv-shapes-bundle.sh) holds the per-shape model
of `gen-conv-layer-models.py --resnet50` (each layer, Conv + bias + ReLU,
on an input of its own) compiled into several variants: the nvidia table's
configurations ("table"), main's ("old"), and each of a list of GEMM
configurations forced on every layer through a tuning record. Its
MANIFEST.json names, for each variant, which kernel runs which layer with
which configuration, read from the compiler's own emitted kernels (no
matching by flop counts). Per variant this script takes each kernel's mean
time from `tcc-benchmark --json` (profiling events) and checks every
layer's output against a float64 torch reference (relative to the largest
output). cuDNN (conv2d with bias) is timed as a CUDA graph of 20 calls,
median of 10 replays (scripts/cuda_graph_timing.py).

Usage: conv-shapes-device.py BUNDLE_DIR"""
import importlib.util
import json
import lzma
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

bundle = sys.argv[1]
sys.path.insert(0, bundle)
from cuda_graph_timing import graph_us  # noqa: E402

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True
manifest = json.load(open(os.path.join(bundle, "shapes", "MANIFEST.json")))
layers = manifest["layers"]
for variant in manifest["variants"]:
    packed = os.path.join(bundle, "shapes", f"{variant}.so.xz")
    if os.path.exists(packed):
        open(packed[:-3], "wb").write(lzma.open(packed).read())
        os.remove(packed)
spec = importlib.util.spec_from_file_location("gen", os.path.join(bundle, "gen-conv-layer-models.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
gen.main("/tmp/cs-layers.onnx", [layer for layer, _ in gen.RESNET50])
weights = {t.name: numpy_helper.to_array(t) for t in onnx.load("/tmp/cs-layers.onnx").graph.initializer}
rng = np.random.default_rng(1)
inputs = []
for i, (c, h, w, *_rest) in enumerate(layers):
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    np.save(f"/tmp/cs-x{i}.npy", x)
    inputs.append(x)
references = []
for i, (c, h, w, oc, k, s, p, _count) in enumerate(layers):
    wt = torch.from_numpy(weights[f"w{i}"]).double()
    b = torch.from_numpy(weights[f"b{i}"]).double()
    references.append(F.relu(F.conv2d(torch.from_numpy(inputs[i]).double(), wt, b, s, p)).numpy())

binary = os.path.join(bundle, "bin")
times, errors = {}, {}
for variant, info in manifest["variants"].items():
    artifact = os.path.join(bundle, "shapes", f"{variant}.so")
    ins = [f"--input=@/tmp/cs-x{i}.npy" for i in range(len(layers))]
    run = subprocess.run([f"{binary}/tcc-benchmark", artifact, *ins, "--warmup=10",
                          "--iterations=50", "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{variant}: tcc-benchmark failed: {run.stderr.strip()[-300:]}")
        continue
    by_name = {k["name"]: k["mean_us"] for k in json.loads(run.stdout)["kernels"]}
    times[variant] = [by_name.get(info["kernels"][i]) for i in range(len(layers))]
    outs = [f"--output=@/tmp/cs-y{i}.npy" for i in range(len(layers))]
    check = subprocess.run([f"{binary}/tcc-run", artifact, *ins, *outs], capture_output=True, text=True)
    if check.returncode != 0:
        print(f"{variant}: tcc-run failed: {check.stderr.strip()[-300:]}")
        continue
    errors[variant] = [float(np.abs(np.load(f"/tmp/cs-y{i}.npy") - references[i]).max()
                             / np.abs(references[i]).max()) for i in range(len(layers))]

cudnn = []
for i, (c, h, w, oc, k, s, p, _count) in enumerate(layers):
    x = torch.from_numpy(inputs[i]).cuda()
    wt = torch.from_numpy(weights[f"w{i}"]).cuda()
    b = torch.from_numpy(weights[f"b{i}"]).cuda()
    cudnn.append(graph_us(lambda: F.conv2d(x, wt, b, s, p)))

variants = list(times)
print("| layer C,HxW -> OC, KxK / s | M, N, K | in graph | cuDNN us | "
      + " | ".join(variants) + " | best (us) | table config | cuDNN / table |")
print("|---" * (6 + len(variants)) + "|---|")
weighted = {v: 0.0 for v in variants}
weighted_cudnn = 0.0
below = []
for i, (c, h, w, oc, k, s, p, count) in enumerate(layers):
    oh = (h + 2 * p - k) // s + 1
    m, n, kk = oh * oh, oc, c * k * k
    cells = []
    for v in variants:
        t = times[v][i]
        bad = errors.get(v, [1.0] * len(layers))[i] > 1e-5
        cells.append("-" if t is None else f"{t:.1f}{' WRONG' if bad else ''}")
        weighted[v] += (t or 0.0) * count
    candidates = [(times[v][i], v) for v in variants
                  if times[v][i] is not None and errors.get(v, [1.0] * len(layers))[i] <= 1e-5]
    best = min(candidates) if candidates else (None, "-")
    table = times.get("table", [None] * len(layers))[i]
    ratio = cudnn[i] / table if table else float("nan")
    if ratio < 0.7:
        below.append(i)
    weighted_cudnn += cudnn[i] * count
    config = manifest["variants"].get("table", {}).get("configs", {}).get(str(i), "-")
    best_text = "-" if best[0] is None else f"{best[1]} ({best[0]:.1f})"
    print(f"| {c},{h}x{w} -> {oc}, {k}x{k} / {s} | {m}, {n}, {kk} | {count} | {cudnn[i]:.1f} | "
          + " | ".join(cells) + f" | {best_text} | {config} | {ratio:.2f} |")
print()
for v in variants:
    worst = max(errors.get(v, [float("nan")]))
    print(f"{v}: summed over ResNet-50's 53 convolutions {weighted[v] / 1000:.3f} ms "
          f"(cuDNN {weighted_cudnn / 1000:.3f}); max error / max |reference| {worst:.1e}")
if "table" in times:
    ratios = sorted(cudnn[i] / times["table"][i] for i in range(len(layers)) if times["table"][i])
    print(f"table: cuDNN / tcc min {ratios[0]:.2f}, median {ratios[len(ratios) // 2]:.2f}; "
          f"{len(layers) - len(below)} of {len(layers)} shapes at >= 0.7; below: {below}")
