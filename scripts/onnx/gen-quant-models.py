#!/usr/bin/env python3
"""Writes the small ONNX models and seeded sample inputs that the int8
quantization test (compiler/tests/quantize.rs) profiles and quantizes.

- convnet: Conv 3x3 + BatchNormalization + Relu, Conv 3x3 stride 2 + Relu,
  GlobalAveragePool, Flatten, Gemm (a classifier of 10 classes);
- mlp: MatMul + Add + Relu, Gemm (10 classes);
- dwnet: Conv 3x3 + Relu, depthwise Conv 3x3 (group = channels) + Relu,
  Conv 1x1 + Relu, all padded where 3x3, GlobalAveragePool, Flatten, Gemm
  (the int8 depthwise and pad folding test, compiler/tests/quantize_graph.rs);
- widenet: Conv 3x3 + Relu, Conv 1x1 to 256 channels + Relu, then
  ResNet-50's tail (AveragePool over the image, Reshape, Gemm): a
  classifier whose 256-long int8 rows take the row-reduction template's
  int32 sums (compiler/tests/quantize.rs).

Weights are seeded uniform values scaled like He initialization, so that
activations stay of order 1 through the layers; the samples are seeded
standard normal images/vectors. For each model M the script writes
OUT/M.onnx and OUT/M-samples/NNN.npy (one sample per file, the model's one
input).

Usage: scripts/onnx/gen-quant-models.py OUT_DIR [--samples=N]"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(rng, shape, fan_in):
    bound = np.sqrt(6.0 / fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def classifier(name, nodes, inits):
    """The graph of `nodes` (a 1x3x16x16 image `x` in, `r2` out) followed by
    GlobalAveragePool, Flatten and Gemm (w3, b3) to 10 classes `y`."""
    nodes = nodes + [
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    return graph, (1, 3, 16, 16)


def convnet(rng):
    inits = [
        numpy_helper.from_array(weight(rng, (8, 3, 3, 3), 27), "w1"),
        numpy_helper.from_array(weight(rng, (8,), 27) * 0.1, "b1"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn_scale"),
        numpy_helper.from_array(rng.uniform(-0.2, 0.2, 8).astype(np.float32), "bn_bias"),
        numpy_helper.from_array(rng.uniform(-0.2, 0.2, 8).astype(np.float32), "bn_mean"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn_var"),
        numpy_helper.from_array(weight(rng, (16, 8, 3, 3), 72), "w2"),
        numpy_helper.from_array(weight(rng, (16,), 72) * 0.1, "b2"),
        numpy_helper.from_array(weight(rng, (10, 16), 16), "w3"),
        numpy_helper.from_array(weight(rng, (10,), 16) * 0.1, "b3"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node(
            "BatchNormalization",
            ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
            ["n1"],
            name="bn1",
        ),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node(
            "Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]
        ),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    ]
    return classifier("convnet", nodes, inits)


def mlp(rng):
    inits = [
        numpy_helper.from_array(weight(rng, (32, 64), 32), "w1"),
        numpy_helper.from_array(weight(rng, (64,), 32) * 0.1, "b1"),
        numpy_helper.from_array(weight(rng, (64, 10), 64), "w2"),
        numpy_helper.from_array(weight(rng, (10,), 64) * 0.1, "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])],
        inits,
    )
    return graph, (4, 32)


def dwnet(rng):
    inits = [
        numpy_helper.from_array(weight(rng, (8, 3, 3, 3), 27), "w1"),
        numpy_helper.from_array(weight(rng, (8,), 27) * 0.1, "b1"),
        numpy_helper.from_array(weight(rng, (8, 1, 3, 3), 9), "wd"),
        numpy_helper.from_array(weight(rng, (8,), 9) * 0.1, "bd"),
        numpy_helper.from_array(weight(rng, (16, 8, 1, 1), 8), "w2"),
        numpy_helper.from_array(weight(rng, (16,), 8) * 0.1, "b2"),
        numpy_helper.from_array(weight(rng, (10, 16), 16), "w3"),
        numpy_helper.from_array(weight(rng, (10,), 16) * 0.1, "b3"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["d"], name="dw", pads=[1, 1, 1, 1], group=8),
        helper.make_node("Relu", ["d"], ["rd"], name="relu_dw"),
        helper.make_node("Conv", ["rd", "w2", "b2"], ["c2"], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    ]
    return classifier("dwnet", nodes, inits)


def widenet(rng):
    inits = [
        numpy_helper.from_array(weight(rng, (16, 3, 3, 3), 27), "w1"),
        numpy_helper.from_array(weight(rng, (16,), 27) * 0.1, "b1"),
        numpy_helper.from_array(weight(rng, (256, 16, 1, 1), 16), "w2"),
        numpy_helper.from_array(weight(rng, (256,), 16) * 0.1, "b2"),
        numpy_helper.from_array(weight(rng, (10, 256), 256), "w3"),
        numpy_helper.from_array(weight(rng, (10,), 256) * 0.1, "b3"),
        numpy_helper.from_array(np.array([1, 256], dtype=np.int64), "flat"),
    ]
    # ResNet-50's tail: AveragePool over the whole image, Reshape, Gemm.
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("AveragePool", ["r2"], ["p"], name="pool", kernel_shape=[16, 16]),
        helper.make_node("Reshape", ["p", "flat"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "widenet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    return graph, (1, 3, 16, 16)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    samples = 16
    for a in sys.argv[1:]:
        if a.startswith("--samples="):
            samples = int(a.split("=", 1)[1])
    if len(args) != 1:
        sys.exit(__doc__)
    out = args[0]
    os.makedirs(out, exist_ok=True)
    for name, build in [
        ("convnet", convnet),
        ("mlp", mlp),
        ("dwnet", dwnet),
        ("widenet", widenet),
    ]:
        rng = np.random.default_rng(2026)
        graph, shape = build(rng)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, f"{name}.onnx"))
        directory = os.path.join(out, f"{name}-samples")
        os.makedirs(directory, exist_ok=True)
        for i in range(samples):
            x = rng.standard_normal(shape).astype(np.float32)
            np.save(os.path.join(directory, f"{i:03}.npy"), x)


if __name__ == "__main__":
    main()
