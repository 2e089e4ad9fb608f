#!/usr/bin/env python3
"""The window template (#tcc.window: depthwise convolution and pooling)
against the loop-nest kernel it replaces and against PyTorch, per layer,
on the GPU machine in one run.

The layers are the depthwise convolutions and poolings of MobileNet-v2,
ShuffleNet and ResNet-50 (3x3 depthwise with bias at stride 1 and 2, max
and average pools, global average pools), each at batch 1 and 32, as
one-op NHWC models (filter and bias are inputs, so no constant reaches
the kernel). scripts/build-window-bundle.sh compiles each twice for
--target=nvidia: with the target's choice (TCC_WINDOWS unset: the window
template) and with TCC_WINDOWS=off (the loop nest); this script times both
with tcc-benchmark (profiling events, the kernel's mean over 50 calls after
10 warm-up calls) and PyTorch's F.conv2d(groups=C) / F.max_pool2d /
F.avg_pool2d (NCHW, cuDNN, TF32 off) as a CUDA graph of 20 calls replayed
between two CUDA events (median of 10 replays), and prints a table.

Usage:
  window-kernels-device.py --write-models DIR      (here: the one-op models and DIR/LAYERS.json)
  window-kernels-device.py BUNDLE [--device=N] [--no-torch] [--filter=TEXT] [--iterations=N]
                                                   (on the device: BUNDLE is .device-dw)"""
import json
import os
import subprocess
import sys

NETWORKS = {
    # (network, kind, H, W, C, kernel, stride, pad)
    "mobilenet_v2": [
        ("dw", 112, 112, 32, 3, 1, 1),
        ("dw", 112, 112, 96, 3, 2, 1),
        ("dw", 56, 56, 144, 3, 1, 1),
        ("dw", 56, 56, 144, 3, 2, 1),
        ("dw", 28, 28, 192, 3, 1, 1),
        ("dw", 28, 28, 192, 3, 2, 1),
        ("dw", 14, 14, 384, 3, 1, 1),
        ("dw", 14, 14, 576, 3, 1, 1),
        ("dw", 14, 14, 576, 3, 2, 1),
        ("dw", 7, 7, 960, 3, 1, 1),
        ("gap", 7, 7, 1280, 7, 1, 0),
    ],
    "shufflenet": [
        ("max", 112, 112, 24, 3, 2, 1),
        ("dw", 56, 56, 60, 3, 2, 1),
        ("avg", 56, 56, 24, 3, 2, 1),
        ("dw", 28, 28, 60, 3, 1, 1),
        ("dw", 28, 28, 120, 3, 2, 1),
        ("avg", 28, 28, 240, 3, 2, 1),
        ("dw", 14, 14, 120, 3, 1, 1),
        ("dw", 14, 14, 240, 3, 2, 1),
        ("avg", 14, 14, 480, 3, 2, 1),
        ("dw", 7, 7, 240, 3, 1, 1),
        ("gap", 7, 7, 960, 7, 1, 0),
    ],
    "resnet50": [
        ("max", 112, 112, 64, 3, 2, 1),
        ("gap", 7, 7, 2048, 7, 1, 0),
    ],
}
BATCHES = [1, 32]


def layers():
    """Every layer: a dict with its name, shapes and TOSA padding."""
    out = []
    for network, entries in NETWORKS.items():
        for kind, h, w, c, k, s, p in entries:
            for n in BATCHES:
                # TOSA wants (H + pads - K) divisible by the stride: drop
                # padding after the input, as floor mode ignores it anyway.
                pads = []
                for size in (h, w):
                    after = p
                    while after > 0 and (size + p + after - k) % s:
                        after -= 1
                    pads.append((p, after))
                oh = (h + sum(pads[0]) - k) // s + 1
                ow = (w + sum(pads[1]) - k) // s + 1
                name = f"{network}-{kind}{k}s{s}-{h}x{w}x{c}-n{n}"
                out.append({"name": name, "network": network, "kind": kind, "n": n,
                            "h": h, "w": w, "c": c, "k": k, "s": s, "p": p,
                            "pads": [pads[0][0], pads[0][1], pads[1][0], pads[1][1]],
                            "oh": oh, "ow": ow})
    return out


def tensor(shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def mlir(layer):
    """The layer as a one-op TOSA model (NHWC)."""
    n, h, w, c, k, s = (layer[key] for key in ("n", "h", "w", "c", "k", "s"))
    x, y = [n, h, w, c], [n, layer["oh"], layer["ow"], c]
    pad = ", ".join(map(str, layer["pads"]))
    zp = '%zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>'
    if layer["kind"] == "dw":
        args = f"%x: {tensor(x)}, %w: {tensor([k, k, c, 1])}, %b: {tensor([c])}"
        op = (f"%y = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, "
              f"pad = array<i64: {pad}>, stride = array<i64: {s}, {s}>}} : ({tensor(x)}, {tensor([k, k, c, 1])}, "
              f"{tensor([c])}, tensor<1xf32>, tensor<1xf32>) -> {tensor(y)}")
    elif layer["kind"] == "max":
        args = f"%x: {tensor(x)}"
        op = (f"%y = tosa.max_pool2d %x {{kernel = array<i64: {k}, {k}>, pad = array<i64: {pad}>, "
              f"stride = array<i64: {s}, {s}>}} : ({tensor(x)}) -> {tensor(y)}")
    else:
        args = f"%x: {tensor(x)}"
        op = (f"%y = tosa.avg_pool2d %x, %zp, %zp {{acc_type = f32, kernel = array<i64: {k}, {k}>, "
              f"pad = array<i64: {pad}>, stride = array<i64: {s}, {s}>}} : ({tensor(x)}, tensor<1xf32>, "
              f"tensor<1xf32>) -> {tensor(y)}")
    return (f"func.func @layer({args}) -> {tensor(y)} {{\n  {zp}\n  {op}\n"
            f"  return %y : {tensor(y)}\n}}\n")


def inputs(layer):
    """tcc-benchmark's --input flags: splats (the values do not matter)."""
    n, h, w, c, k = (layer[key] for key in ("n", "h", "w", "c", "k"))
    flags = [f"--input={n}x{h}x{w}x{c}xf32=0.5"]
    if layer["kind"] == "dw":
        flags += [f"--input={k}x{k}x{c}x1xf32=0.1", f"--input={c}xf32=0.2"]
    return flags


def write_models(directory):
    os.makedirs(os.path.join(directory, "models"), exist_ok=True)
    all_layers = layers()
    for layer in all_layers:
        with open(os.path.join(directory, "models", layer["name"] + ".mlir"), "w") as out:
            out.write(mlir(layer))
    with open(os.path.join(directory, "LAYERS.json"), "w") as out:
        json.dump(all_layers, out, indent=1)
    print(f"{len(all_layers)} layers in {directory}/models")


def tcc_us(bundle, artifact, layer, device, iterations):
    """The artifact's device time per call (its kernels' means summed) and
    its kernel names."""
    command = [os.path.join(bundle, "bin", "tcc-benchmark"), artifact, "--json",
               "--warmup=10", f"--iterations={iterations}"] + inputs(layer)
    if device:
        command.append(f"--device={device}")
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {run.stderr.strip()}")
    report = json.loads(run.stdout)
    kernels = report["kernels"]
    return sum(k["mean_us"] for k in kernels), [k["name"] for k in kernels]


def torch_us(layer):
    import torch
    import torch.nn.functional as F
    from cuda_graph_timing import graph_us
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    n, h, w, c, k, s, p = (layer[key] for key in ("n", "h", "w", "c", "k", "s", "p"))
    x = torch.randn(n, c, h, w, device="cuda")
    if layer["kind"] == "dw":
        weight = torch.randn(c, 1, k, k, device="cuda")
        bias = torch.randn(c, device="cuda")
        run = lambda: F.conv2d(x, weight, bias, s, p, 1, c)
    elif layer["kind"] == "max":
        run = lambda: F.max_pool2d(x, k, s, p)
    else:
        run = lambda: F.avg_pool2d(x, k, s, p, count_include_pad=False)
    return graph_us(run)


def main(argv):
    if len(argv) >= 2 and argv[0] == "--write-models":
        write_models(argv[1])
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    bundle = argv[0]
    device, use_torch, text, iterations = None, True, "", 50
    for arg in argv[1:]:
        if arg.startswith("--device="):
            device = arg.split("=", 1)[1]
        elif arg == "--no-torch":
            use_torch = False
        elif arg.startswith("--filter="):
            text = arg.split("=", 1)[1]
        elif arg.startswith("--iterations="):
            iterations = int(arg.split("=", 1)[1])
        else:
            print(f"unknown argument {arg}", file=sys.stderr)
            return 2
    with open(os.path.join(bundle, "LAYERS.json")) as f:
        all_layers = [layer for layer in json.load(f) if text in layer["name"]]
    print("| layer (N x H x W x C, kernel/stride) | loops us | window us | loops / window |"
          + (" torch us | torch / window |" if use_torch else ""))
    print("|---|---|---|---|" + ("---|---|" if use_torch else ""))
    totals = {"loops": 0.0, "window": 0.0, "torch": 0.0}
    ratios = []
    for layer in all_layers:
        models = os.path.join(bundle, "models")
        loops, _ = tcc_us(bundle, os.path.join(models, layer["name"] + ".loops.so"), layer, device, iterations)
        window, names = tcc_us(bundle, os.path.join(models, layer["name"] + ".window.so"), layer, device,
                               iterations)
        totals["loops"] += loops
        totals["window"] += window
        row = f"| {layer['name']} | {loops:.2f} | {window:.2f} | {loops / window:.2f} |"
        if use_torch:
            reference = torch_us(layer)
            totals["torch"] += reference
            ratios.append(reference / window)
            row += f" {reference:.2f} | {reference / window:.2f} |"
        print(row, flush=True)
    print()
    summary = (f"{len(all_layers)} layers: sum loops {totals['loops']:.1f} us, "
               f"sum window {totals['window']:.1f} us ({totals['loops'] / max(totals['window'], 1e-9):.2f}x)")
    if use_torch and ratios:
        ratios.sort()
        summary += (f", sum torch {totals['torch']:.1f} us; torch/window min {ratios[0]:.2f}, "
                    f"median {ratios[len(ratios) // 2]:.2f}, max {ratios[-1]:.2f}")
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
