#!/usr/bin/env python3
"""Writes ResNet-50's batch-1 convolution layers that ran below 0.7x cuDNN
on the H100 (docs/benchmarks.md, issue 9) as one ONNX model: each layer
(Conv + ReLU) on an input of its own, so that `tcc-benchmark`'s per-kernel
times show each layer's convolution kernel, and a tuning record
(`tcc compile --tuning-db`) can force one GEMM configuration on all of
them. Weights are a 4096-value random block tiled over each tensor, so the
compiled artifact compresses for the trip to the GPU machine.

Usage: scripts/gen-conv-layer-models.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (input C, H, W, output channels, kernel, stride, pad)
LAYERS = [
    (64, 56, 56, 64, 3, 1, 1),     # M = 3136, N = 64, K = 576
    (512, 28, 28, 256, 1, 1, 0),   # M = 784, N = 256, K = 512
    (128, 28, 28, 512, 1, 1, 0),   # M = 784, N = 512, K = 128
    (512, 28, 28, 1024, 1, 2, 0),  # M = 196, N = 1024, K = 512
    (256, 56, 56, 512, 1, 2, 0),   # M = 784, N = 512, K = 256
]


def block(shape, rng):
    values = (rng.integers(-8, 8, 4096) / 64.0).astype(np.float32)
    count = int(np.prod(shape))
    return np.resize(values, count).reshape(shape)


def main(path):
    rng = np.random.default_rng(9)
    inputs, outputs, nodes, weights = [], [], [], []
    for n, (c, h, w, oc, k, s, p) in enumerate(LAYERS):
        oh = (h + 2 * p - k) // s + 1
        ow = (w + 2 * p - k) // s + 1
        inputs.append(helper.make_tensor_value_info(f"x{n}", TensorProto.FLOAT, [1, c, h, w]))
        outputs.append(helper.make_tensor_value_info(f"y{n}", TensorProto.FLOAT, [1, oc, oh, ow]))
        weights.append(numpy_helper.from_array(block((oc, c, k, k), rng), f"w{n}"))
        weights.append(numpy_helper.from_array(block((oc,), rng), f"b{n}"))
        nodes.append(helper.make_node("Conv", [f"x{n}", f"w{n}", f"b{n}"], [f"c{n}"],
                                      kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p]))
        nodes.append(helper.make_node("Relu", [f"c{n}"], [f"y{n}"]))
    graph = helper.make_graph(nodes, "conv_layers", inputs, outputs, weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1])
