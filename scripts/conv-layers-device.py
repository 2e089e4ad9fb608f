#!/usr/bin/env python3
"""Runs on the GPU machine: each convolution of an ONNX model as tcc runs
it (one kernel per convolution, its epilogue included) next to cuDNN's
torch.nn.functional.conv2d for the same layer shape (fp32, TF32 off), in
one run: issue 9's per-layer target (tcc >= 0.7x cuDNN's speed).

tcc's kernel times come from `tcc-benchmark --json` (profiling events);
its convolution kernels are matched to the graph's Conv nodes by their
floating-point operation counts, in graph order (layers of equal counts
may pair up out of order; the sums do not depend on it). cuDNN (with
`cudnn.benchmark`, NCHW as the graph is) is timed as a CUDA graph of 20
calls replayed between two CUDA events, median of 10 replays: GPU time
without PyTorch's per-call CPU dispatch, as tcc's profiling events are.

Usage: conv-layers-device.py MODEL.onnx MODEL.so BIN_DIR INPUT.npy"""
import json
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper, shape_inference

from cuda_graph_timing import graph_us

torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
model_path, artifact, bin_dir, input_path = sys.argv[1:5]
model = shape_inference.infer_shapes(onnx.load(model_path))
shapes = {}
for value in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
    dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
    shapes[value.name] = dims
x_shape = list(np.load(input_path).shape)
shapes[model.graph.input[0].name] = x_shape
weights = {init.name: numpy_helper.to_array(init).shape for init in model.graph.initializer}

layers = []
for node in model.graph.node:
    if node.op_type != "Conv":
        continue
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    n, c, h, w = shapes[node.input[0]]
    oc, icg, kh, kw = weights[node.input[1]]
    out = shapes.get(node.output[0])
    oh, ow = out[2], out[3]
    pads = attrs.get("pads", [0, 0, 0, 0])
    layers.append({
        "input": [n, c, h, w], "weight": [oc, icg, kh, kw],
        "stride": attrs.get("strides", [1, 1]), "pads": pads,
        "dilation": attrs.get("dilations", [1, 1]), "groups": attrs.get("group", 1),
        "flops": 2 * n * oc * oh * ow * icg * kh * kw,
    })

bench = subprocess.run([f"{bin_dir}/tcc-benchmark", artifact, f"--input=@{input_path}",
                        "--warmup=10", "--iterations=50", "--json"], capture_output=True, text=True)
report = json.loads(bench.stdout)
# A kernel that several equal layers share (tcc-dedupe-kernels) was
# launched that many times per call: it stands for each of them.
once = min(k["calls"] for k in report["kernels"] if k["calls"] > 0)
kernels = []
for k in report["kernels"]:
    if not (k["name"].startswith("conv") and k["gflops"]):
        continue
    k["flops"] = k["gflops"] * 1e9 * k["mean_us"] * 1e-6
    for launch in range(max(1, round(k["calls"] / once))):
        kernels.append(dict(k, slot=f"{k['name']}#{launch}"))


def cudnn_us(layer):
    x = torch.randn(*layer["input"], device="cuda")
    wt = torch.randn(*layer["weight"], device="cuda")
    b = torch.randn(layer["weight"][0], device="cuda")
    top, left, bottom, right = layer["pads"][0], layer["pads"][1], layer["pads"][2], layer["pads"][3]
    if (top, left) == (bottom, right):
        run = lambda: F.conv2d(x, wt, b, layer["stride"], (top, left), layer["dilation"], layer["groups"])
    else:
        xp = F.pad(x, (left, right, top, bottom))
        run = lambda: F.conv2d(xp, wt, b, layer["stride"], 0, layer["dilation"], layer["groups"])
    # A CUDA graph of 20 convolutions, replayed between two events: the
    # GPU time per convolution without PyTorch's per-call CPU dispatch
    # (which at batch 1 is longer than most of these kernels).
    return graph_us(run)


print("| layer (N,C,H,W * OC,IC/g,KH,KW / stride) | tcc kernel | tcc us | cuDNN us | cuDNN / tcc |")
print("|---|---|---|---|---|")
ratios = []
used = set()
tcc_total = cudnn_total = 0.0
for layer in layers:
    match = next((k for k in kernels if k["slot"] not in used
                  and abs(k["flops"] - layer["flops"]) <= 0.02 * layer["flops"]), None)
    if match is None:
        continue
    used.add(match["slot"])
    reference = cudnn_us(layer)
    ratio = reference / match["mean_us"]
    ratios.append(ratio)
    tcc_total += match["mean_us"]
    cudnn_total += reference
    shape = f"{'x'.join(map(str, layer['input']))} * {'x'.join(map(str, layer['weight']))} / {layer['stride'][0]}"
    print(f"| {shape} | {match['name']} | {match['mean_us']:.1f} | {reference:.1f} | {ratio:.2f} |")
ratios.sort()
print()
print(f"{len(ratios)} of {len(layers)} convolutions matched; cuDNN/tcc: min {ratios[0]:.2f}, "
      f"median {ratios[len(ratios) // 2]:.2f}, max {ratios[-1]:.2f}; "
      f"layers at >= 0.7: {sum(r >= 0.7 for r in ratios)}; "
      f"sum tcc {tcc_total / 1000:.3f} ms, sum cuDNN {cudnn_total / 1000:.3f} ms")
