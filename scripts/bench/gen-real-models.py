#!/usr/bin/env python3
"""Writes the real-model benchmark set: the onnx package's light CNNs
(ResNet-50, DenseNet-121, SqueezeNet, Inception v1, ShuffleNet; AlexNet,
VGG-19, ZFNet-512 and Inception v2 when named) with
*random* weights instead of the packaged constants, so that BatchNorm
folding, layout changes and fused epilogues are checked on values that
differ per channel. Each weight is a deterministic random 4096-value block
(multiples of 1/8) tiled over the tensor (BatchNorm variances made positive; the light models' ConstantOfShape
weights become initializers first), which keeps the
compiled artifacts compressible for the trip to the GPU machine. Dropout
nodes are removed (identity at inference; onnx2torch cannot convert
opset-7 Dropout), so tcc, onnxruntime and PyTorch run the same graph.

With --shared-weights (for carrying artifacts to the GPU machine, which
takes at most 64 MiB): every weight of one shape holds the same values and
BatchNorm scales are exactly 1 (gamma = 1, variance = 1 - epsilon; means
and shifts stay random per channel), so identical constants merge and
ResNet-50's artifact shrinks by the number of repeated layer shapes. The
kernels do the same work whatever the values; per-channel BatchNorm scales
are exercised by the PoCL light-model tests, whose BatchNorm parameters are
real.

With --batch=N the graph input gets batch N and every Reshape whose
constant target starts with the old batch 1 keeps the input's batch
instead (ONNX's 0), so onnxruntime and PyTorch run the batch too (tcc
compiles the batch-1 file with `--input-shape=NAME=Nx3x224x224`).

Usage: scripts/bench/gen-real-models.py OUT_DIR [--shared-weights] [--batch=N] [MODEL...]
Writes OUT_DIR/NAME.onnx and OUT_DIR/NAME.input.npy (a [0, 1) image)."""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

MODELS = ["resnet50", "densenet121", "squeezenet", "inception_v1", "shufflenet"]
# The other light models: named on the command line, for correctness runs
# (VGG-19's, AlexNet's and ZFNet-512's fully connected weights take
# 240-550 MB; their tiled blocks compress, so `xz` carries them).
OTHERS = ["bvlc_alexnet", "vgg19", "zfnet512", "inception_v2"]
BLOCK = 4096


def strip_dropout(graph):
    rename = {}
    kept = []
    for node in graph.node:
        if node.op_type == "Dropout":
            rename[node.output[0]] = rename.get(node.input[0], node.input[0])
            continue
        kept.append(node)
    for node in kept:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    for output in graph.output:
        if output.name in rename:
            # Keep the graph output's name: route it through an Identity.
            kept.append(onnx.helper.make_node("Identity", [rename[output.name]], [output.name]))
    del graph.node[:]
    graph.node.extend(kept)


def materialize_constants(graph):
    """ConstantOfShape nodes with a constant shape (how the light models
    store their weights) become initializers, so they can be randomized."""
    inits = {i.name: i for i in graph.initializer}
    kept = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = numpy_helper.to_array(inits[node.input[0]]).astype(np.int64)
            value = np.zeros(1, np.float32)
            for a in node.attribute:
                if a.name == "value":
                    value = numpy_helper.to_array(a.t)
            full = np.full(tuple(shape), value.reshape(-1)[0], dtype=value.dtype)
            graph.initializer.append(numpy_helper.from_array(full, node.output[0]))
            continue
        kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for node in graph.node for name in node.input}
    unused = [i for i in graph.initializer if i.name not in used]
    for init in unused:
        graph.initializer.remove(init)
    # Graph inputs are only the real inputs: not initializers, and not the
    # removed shape tensors (older exporters list both as inputs).
    names = {i.name for i in graph.initializer}
    real = [i for i in graph.input if i.name not in names and i.name in used]
    del graph.input[:]
    graph.input.extend(real)


def randomize(model, rng, shared=False):
    # Multiples of 1/8 in [-2, 2]: after BatchNorm folding scales a
    # channel, its weights still take few distinct values (compressible).
    block = (np.clip(np.round(rng.standard_normal(BLOCK) * 8), -16, 16) / 8).astype(np.float32)
    variances, gammas, epsilons = set(), set(), {}
    for node in model.graph.node:
        if node.op_type == "BatchNormalization" and len(node.input) == 5:
            variances.add(node.input[4])
            gammas.add(node.input[1])
            eps = [a.f for a in node.attribute if a.name == "epsilon"]
            epsilons[node.input[4]] = eps[0] if eps else 1e-5
    for i, init in enumerate(model.graph.initializer):
        value = numpy_helper.to_array(init)
        if value.dtype != np.float32 or value.size < 2:
            continue
        if shared and init.name in gammas:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.ones_like(value), init.name))
            continue
        if shared and init.name in variances:
            ones = np.full_like(value, np.float32(1.0 - epsilons[init.name]))
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(ones, init.name))
            continue
        offset = (hash(value.shape) if shared else i * 977) % BLOCK
        tiled = np.resize(np.roll(block, offset), value.size).reshape(value.shape)
        fan_in = int(np.prod(value.shape[1:])) if value.ndim > 1 else 1
        if init.name in variances:
            tiled = 0.5 + np.abs(tiled)
        elif value.ndim > 1:
            tiled = tiled * np.sqrt(2.0 / max(fan_in, 1))
        else:
            tiled = 0.1 * tiled
        model.graph.initializer[i].CopyFrom(numpy_helper.from_array(tiled.astype(np.float32), init.name))


def set_batch(model, x, batch):
    x.type.tensor_type.shape.dim[0].dim_value = batch
    for output in model.graph.output:
        dims = output.type.tensor_type.shape.dim
        if dims and dims[0].dim_value == 1:
            dims[0].dim_value = batch
    inits = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Reshape" and node.input[1] in inits:
            target = numpy_helper.to_array(inits[node.input[1]]).copy()
            if target.size and target[0] == 1:
                target[0] = 0
                inits[node.input[1]].CopyFrom(numpy_helper.from_array(target, node.input[1]))
    del model.graph.value_info[:]


def main():
    # OUT_DIR first; anything else that starts with "-" must be a known
    # option (a stray `--help` once became an output folder of 181 MB).
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    for a in sys.argv[2:]:
        if a.startswith("-") and a != "--shared-weights" and not a.startswith("--batch="):
            sys.exit(f"unknown option {a}\n{__doc__}")
    out = sys.argv[1]
    shared = "--shared-weights" in sys.argv[2:]
    batch = next((int(a.split("=", 1)[1]) for a in sys.argv[2:] if a.startswith("--batch=")), 1)
    wanted = [a for a in sys.argv[2:] if not a.startswith("--")] or MODELS
    os.makedirs(out, exist_ok=True)
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for name in wanted:
        # One generator per model, so any subset regenerates the same files.
        if name not in MODELS + OTHERS:
            sys.exit(f"unknown model {name}: one of {' '.join(MODELS + OTHERS)}")
        rng = np.random.default_rng([2026, (MODELS + OTHERS).index(name)])
        model = onnx.load(os.path.join(light, f"light_{name}.onnx"))
        strip_dropout(model.graph)
        materialize_constants(model.graph)
        # Initializers that are not graph inputs need IR version 4 or later.
        model.ir_version = max(model.ir_version, 4)
        randomize(model, rng, shared)
        inits = {i.name for i in model.graph.initializer}
        x = [i for i in model.graph.input if i.name not in inits][0]
        if batch != 1:
            set_batch(model, x, batch)
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, f"{name}.onnx"))
        shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
        np.save(os.path.join(out, f"{name}.input.npy"), rng.random(shape, dtype=np.float32))
        print(name, shape)


if __name__ == "__main__":
    main()
