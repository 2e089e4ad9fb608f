#!/usr/bin/env python3
"""Writes ResNet-50's batch-1 convolution layers as one ONNX model: each
layer (Conv + ReLU) on an input of its own, so that `tcc-benchmark`'s
per-kernel times show each layer's convolution kernel, and a tuning record
(`tcc compile --tuning-db`) can force one GEMM configuration on all of
them. By default the five layers that ran below 0.7x cuDNN on the H100
(docs/benchmarks.md, issue 9); with --resnet50 every distinct convolution
shape of ResNet-50 at batch 1 (23 shapes, in graph order;
scripts/conv-shapes-device.py times them against cuDNN). Weights are a
4096-value random block tiled over each tensor, so the compiled artifact
compresses for the trip to the GPU machine.

With --nhwc each layer's input and output are NHWC (Transpose, Conv, Relu,
Transpose): tcc's layout propagation cancels the transposes, so each
kernel reads and writes channels-last activations as inside ResNet-50,
where the NCHW form reads its input through a transpose folded into the
convolution's loads.

Usage: scripts/gen-conv-layer-models.py OUT.onnx [--resnet50] [--nhwc]"""
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

# Every distinct convolution of ResNet-50 (the onnx package's light model,
# scripts/gen-real-models.py) at batch 1, in graph order, with how many
# times the graph has it.
RESNET50 = [
    ((3, 224, 224, 64, 7, 2, 3), 1),
    ((64, 56, 56, 64, 1, 1, 0), 1),
    ((64, 56, 56, 64, 3, 1, 1), 3),
    ((64, 56, 56, 256, 1, 1, 0), 4),
    ((256, 56, 56, 64, 1, 1, 0), 2),
    ((256, 56, 56, 128, 1, 1, 0), 1),
    ((128, 56, 56, 128, 3, 2, 1), 1),
    ((128, 28, 28, 512, 1, 1, 0), 4),
    ((256, 56, 56, 512, 1, 2, 0), 1),
    ((512, 28, 28, 128, 1, 1, 0), 3),
    ((128, 28, 28, 128, 3, 1, 1), 3),
    ((512, 28, 28, 256, 1, 1, 0), 1),
    ((256, 28, 28, 256, 3, 2, 1), 1),
    ((256, 14, 14, 1024, 1, 1, 0), 6),
    ((512, 28, 28, 1024, 1, 2, 0), 1),
    ((1024, 14, 14, 256, 1, 1, 0), 5),
    ((256, 14, 14, 256, 3, 1, 1), 5),
    ((1024, 14, 14, 512, 1, 1, 0), 1),
    ((512, 14, 14, 512, 3, 2, 1), 1),
    ((512, 7, 7, 2048, 1, 1, 0), 3),
    ((1024, 14, 14, 2048, 1, 2, 0), 1),
    ((2048, 7, 7, 512, 1, 1, 0), 2),
    ((512, 7, 7, 512, 3, 1, 1), 2),
]


def gemm_shape(layer):
    """The implicit GEMM's (M, N, K) of a (C, H, W, OC, kernel, stride, pad) layer."""
    c, h, w, oc, k, s, p = layer
    oh = (h + 2 * p - k) // s + 1
    ow = (w + 2 * p - k) // s + 1
    return oh * ow, oc, c * k * k


def block(shape, rng):
    values = (rng.integers(-8, 8, 4096) / 64.0).astype(np.float32)
    count = int(np.prod(shape))
    return np.resize(values, count).reshape(shape)


def main(path, layers=LAYERS, nhwc=False):
    rng = np.random.default_rng(9)
    inputs, outputs, nodes, weights = [], [], [], []
    for n, (c, h, w, oc, k, s, p) in enumerate(layers):
        oh = (h + 2 * p - k) // s + 1
        ow = (w + 2 * p - k) // s + 1
        x_shape, y_shape = ([1, h, w, c], [1, oh, ow, oc]) if nhwc else ([1, c, h, w], [1, oc, oh, ow])
        inputs.append(helper.make_tensor_value_info(f"x{n}", TensorProto.FLOAT, x_shape))
        outputs.append(helper.make_tensor_value_info(f"y{n}", TensorProto.FLOAT, y_shape))
        weights.append(numpy_helper.from_array(block((oc, c, k, k), rng), f"w{n}"))
        weights.append(numpy_helper.from_array(block((oc,), rng), f"b{n}"))
        conv_in, relu_out = (f"t{n}", f"r{n}") if nhwc else (f"x{n}", f"y{n}")
        if nhwc:
            nodes.append(helper.make_node("Transpose", [f"x{n}"], [conv_in], perm=[0, 3, 1, 2]))
        nodes.append(helper.make_node("Conv", [conv_in, f"w{n}", f"b{n}"], [f"c{n}"],
                                      kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p]))
        nodes.append(helper.make_node("Relu", [f"c{n}"], [relu_out]))
        if nhwc:
            nodes.append(helper.make_node("Transpose", [relu_out], [f"y{n}"], perm=[0, 2, 3, 1]))
    graph = helper.make_graph(nodes, "conv_layers", inputs, outputs, weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1], [layer for layer, _ in RESNET50] if "--resnet50" in sys.argv[2:] else LAYERS,
         nhwc="--nhwc" in sys.argv[2:])
