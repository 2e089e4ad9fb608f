#!/usr/bin/env python3
"""Runs on the GPU machine: every distinct ResNet-50 convolution shape at
batch 1 as tcc runs it, next to cuDNN's torch.nn.functional.conv2d (fp32,
TF32 off, `cudnn.benchmark`), in one run: issue 9's per-layer target (tcc
>= 0.7x cuDNN's speed), matched exactly.

The bundle (scripts/build-conv-shapes-bundle.sh) holds the per-shape model
of `gen-conv-layer-models.py --resnet50` (each layer, Conv + bias + ReLU,
on an input of its own) compiled into several variants: the nvidia table's
configurations ("table"), main's ("old"), and each of a list of GEMM
configurations forced on every layer through a tuning record. A variant
whose name starts with "nhwc-" is the same layers with NHWC inputs and
outputs (`--nhwc`): its kernels read and write channels-last activations,
as inside ResNet-50, instead of reading the NCHW input through a folded
transpose. Its MANIFEST.json names, for each variant, which kernel runs
which layer with which configuration, read from the compiler's own
emitted kernels (no matching by flop counts). Per variant and repeat this
script takes each kernel's mean time from `tcc-benchmark --json`
(profiling events) and checks every layer's output once against a float64
torch reference (relative to the largest output). cuDNN (conv2d with
bias, NCHW) is timed as a CUDA graph of 20 calls, median of 10 replays
(scripts/cuda_graph_timing.py), once per repeat. The table shows each
time's median over the repeats; the ratio columns are per repeat.

With a resnet50/ folder in the bundle (`--resnet50` when building), also
ResNet-50 itself at batch 1 (scripts/gen-real-models.py --shared-weights,
regenerated here): each artifact checked against onnxruntime and timed
with `tcc-benchmark --json` (the runtime's own kernel form, PTX on NVIDIA),
per repeat, beside PyTorch eager (torchvision's resnet50, fp32, TF32 off:
the same stages, not the same graph: v1.5 strides its 3x3 convolutions).

Usage: conv-shapes-device.py BUNDLE_DIR [--repeats=N]"""
import glob
import importlib.util
import json
import lzma
import os
import statistics
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

bundle = sys.argv[1]
repeats = next((int(a.split("=", 1)[1]) for a in sys.argv[2:] if a.startswith("--repeats=")), 1)
sys.path.insert(0, bundle)
from cuda_graph_timing import graph_us  # noqa: E402

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def unpack(directory):
    for packed in glob.glob(os.path.join(directory, "*.so.xz")):
        open(packed[:-3], "wb").write(lzma.open(packed).read())
        os.remove(packed)


manifest = json.load(open(os.path.join(bundle, "shapes", "MANIFEST.json")))
layers = manifest["layers"]
unpack(os.path.join(bundle, "shapes"))
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
    np.save(f"/tmp/cs-nhwc-x{i}.npy", np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    inputs.append(x)
references = []
for i, (c, h, w, oc, k, s, p, _count) in enumerate(layers):
    wt = torch.from_numpy(weights[f"w{i}"]).double()
    b = torch.from_numpy(weights[f"b{i}"]).double()
    references.append(F.relu(F.conv2d(torch.from_numpy(inputs[i]).double(), wt, b, s, p)).numpy())


def layout(variant):
    return "nhwc" if variant.startswith("nhwc-") else "nchw"


binary = os.path.join(bundle, "bin")
times = {v: [] for v in manifest["variants"]}  # per variant: per repeat, per layer
errors = {}
failed = set()
for repeat in range(repeats):
    for variant, info in manifest["variants"].items():
        if variant in failed:
            continue
        artifact = os.path.join(bundle, "shapes", f"{variant}.so")
        prefix = "cs-nhwc-" if layout(variant) == "nhwc" else "cs-"
        ins = [f"--input=@/tmp/{prefix}x{i}.npy" for i in range(len(layers))]
        run = subprocess.run([f"{binary}/tcc-benchmark", artifact, *ins, "--warmup=10",
                              "--iterations=50", "--json"], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{variant}: tcc-benchmark failed: {run.stderr.strip()[-300:]}")
            failed.add(variant)
            continue
        by_name = {k["name"]: k["mean_us"] for k in json.loads(run.stdout)["kernels"]}
        times[variant].append([by_name.get(info["kernels"][i]) for i in range(len(layers))])
        if repeat > 0:
            continue
        outs = [f"--output=@/tmp/cs-y{i}.npy" for i in range(len(layers))]
        check = subprocess.run([f"{binary}/tcc-run", artifact, *ins, *outs], capture_output=True, text=True)
        if check.returncode != 0:
            print(f"{variant}: tcc-run failed: {check.stderr.strip()[-300:]}")
            continue
        errs = []
        for i in range(len(layers)):
            y = np.load(f"/tmp/cs-y{i}.npy")
            if layout(variant) == "nhwc":
                y = y.transpose(0, 3, 1, 2)
            errs.append(float(np.abs(y - references[i]).max() / np.abs(references[i]).max()))
        errors[variant] = errs

cudnn_runs = []
for repeat in range(repeats):
    run = []
    for i, (c, h, w, oc, k, s, p, _count) in enumerate(layers):
        x = torch.from_numpy(inputs[i]).cuda()
        wt = torch.from_numpy(weights[f"w{i}"]).cuda()
        b = torch.from_numpy(weights[f"b{i}"]).cuda()
        run.append(graph_us(lambda: F.conv2d(x, wt, b, s, p)))
    cudnn_runs.append(run)
cudnn = [statistics.median(r[i] for r in cudnn_runs) for i in range(len(layers))]


def median_time(variant, i):
    values = [run[i] for run in times[variant] if run[i] is not None]
    return statistics.median(values) if values else None


def correct(variant, i):
    return errors.get(variant, [1.0] * len(layers))[i] <= 1e-5


variants = [v for v in times if times[v]]
tables = [v for v in variants if v in ("table", "nhwc-table")]
print(f"{repeats} repeat(s); times are medians over them (us per kernel, mean of 50 calls)")
print("| layer C,HxW -> OC, KxK / s | M, N, K | in graph | cuDNN us | "
      + " | ".join(variants) + " | best (us) | table config | "
      + " | ".join(f"cuDNN / {v} per repeat" for v in tables) + " |")
print("|---" * (6 + len(variants) + len(tables)) + "|")
weighted = {v: [0.0] * repeats for v in variants}
weighted_cudnn = [0.0] * repeats
below = {v: [] for v in tables}
for i, (c, h, w, oc, k, s, p, count) in enumerate(layers):
    oh = (h + 2 * p - k) // s + 1
    m, n, kk = oh * oh, oc, c * k * k
    cells = []
    for v in variants:
        t = median_time(v, i)
        cells.append("-" if t is None else f"{t:.1f}{'' if correct(v, i) else ' WRONG'}")
        for r, run in enumerate(times[v]):
            weighted[v][r] += (run[i] or 0.0) * count
    for r in range(repeats):
        weighted_cudnn[r] += cudnn_runs[r][i] * count
    candidates = [(median_time(v, i), v) for v in variants if median_time(v, i) is not None and correct(v, i)]
    best = min(candidates) if candidates else (None, "-")
    config = manifest["variants"].get("table", {}).get("configs", {}).get(str(i), "-")
    best_text = "-" if best[0] is None else f"{best[1]} ({best[0]:.1f})"
    ratio_cells = []
    for v in tables:
        ratios = [cudnn_runs[r][i] / run[i] for r, run in enumerate(times[v]) if run[i]]
        if not ratios or min(ratios) < 0.7:
            below[v].append(i)
        ratio_cells.append(" ".join(f"{x:.2f}" for x in ratios))
    print(f"| {c},{h}x{w} -> {oc}, {k}x{k} / {s} | {m}, {n}, {kk} | {count} | {cudnn[i]:.1f} | "
          + " | ".join(cells) + f" | {best_text} | {config} | " + " | ".join(ratio_cells) + " |")
print()
for v in variants:
    worst = max(errors.get(v, [float("nan")]))
    sums = " ".join(f"{x / 1000:.3f}" for x in weighted[v][:len(times[v])])
    print(f"{v}: summed over ResNet-50's 53 convolutions {sums} ms per repeat "
          f"(cuDNN {' '.join(f'{x / 1000:.3f}' for x in weighted_cudnn)}); "
          f"max error / max |reference| {worst:.1e}")
for v in tables:
    ratios = sorted(cudnn[i] / median_time(v, i) for i in range(len(layers)) if median_time(v, i))
    print(f"{v}: cuDNN / tcc (medians) min {ratios[0]:.2f}, median {ratios[len(ratios) // 2]:.2f}; "
          f"{len(layers) - len(below[v])} of {len(layers)} shapes at >= 0.7 in every repeat; below: {below[v]}")

# ResNet-50 itself, batch 1: each artifact against onnxruntime, then timed.
r50 = os.path.join(bundle, "resnet50")
if os.path.isdir(r50):
    import onnxruntime as ort
    import torchvision
    from cuda_timing import cuda_median_ms

    unpack(r50)
    subprocess.run([sys.executable, os.path.join(bundle, "gen-real-models.py"), "/tmp/cs-r50",
                    "--shared-weights", "resnet50"], check=True, capture_output=True)
    x = np.load("/tmp/cs-r50/resnet50.input.npy")
    session = ort.InferenceSession("/tmp/cs-r50/resnet50.onnx", providers=["CPUExecutionProvider"])
    expected = session.run(None, {session.get_inputs()[0].name: x})[0]
    print("\n| ResNet-50 batch 1 | correct (max abs diff) | form | device ms per call | e2e median ms |")
    print("|---|---|---|---|---|")
    for artifact in sorted(glob.glob(os.path.join(r50, "*.so"))):
        name = os.path.basename(artifact)[:-3]
        run = subprocess.run([f"{binary}/tcc-run", artifact, "--input=@/tmp/cs-r50/resnet50.input.npy",
                              "--output=@/tmp/cs-r50-y.npy"], capture_output=True, text=True)
        diff = float(np.abs(np.load("/tmp/cs-r50-y.npy") - expected).max()) if run.returncode == 0 else float("nan")
        ok = diff <= 1e-3 * max(1.0, float(np.abs(expected).max()))
        device, e2e, form = [], [], "-"
        for _ in range(repeats):
            bench = subprocess.run([f"{binary}/tcc-benchmark", artifact, "--input=@/tmp/cs-r50/resnet50.input.npy",
                                    "--warmup=20", "--iterations=200", "--json"], capture_output=True, text=True)
            if bench.returncode != 0:
                print(f"{name}: tcc-benchmark failed: {bench.stderr.strip()[-300:]}")
                break
            report = json.loads(bench.stdout)
            device.append(report["device_ms_per_call"])
            e2e.append(report["latency_ms"]["median"])
            form = report.get("program_format") or "-"
        print(f"| tcc {name} | {'yes' if ok else 'NO'} ({diff:.1e}) | {form} | "
              f"{' '.join(f'{d:.3f}' for d in device)} | {' '.join(f'{e:.3f}' for e in e2e)} |")
    model = torchvision.models.resnet50().eval().cuda()
    gpu_x = torch.from_numpy(x).cuda()
    with torch.no_grad():
        compute = [cuda_median_ms(lambda: model(gpu_x), 20, 200) for _ in range(repeats)]
        e2e = [cuda_median_ms(lambda: model(torch.from_numpy(x).cuda()).cpu(), 20, 200) for _ in range(repeats)]
    print(f"| PyTorch eager (torchvision resnet50) | - | cuDNN | {' '.join(f'{c:.3f}' for c in compute)} "
          f"(compute, GPU-resident input) | {' '.join(f'{e:.3f}' for e in e2e)} |")
