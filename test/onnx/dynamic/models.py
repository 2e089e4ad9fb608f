"""Writes the dynamic-batch test models (compiler/tests/dynamic_shapes.rs):
graphs whose inputs declare `dim_param: "batch"` as exporters write them.

    python3 models.py OUT_DIR

- mlp.onnx: x[batch, 32] -> MatMul(32x64) + Add -> Relu -> MatMul(64x10) +
  Add -> Softmax(axis=-1) -> y[batch, 10]
- cnn.onnx: x[batch, 3, 16, 16] -> Conv(8, 3x3, pad 1) -> Relu ->
  MaxPool(2x2) -> GlobalAveragePool -> Flatten -> Gemm(8x10) -> y[batch, 10]
- two_inputs.onnx: a[batch, 16] + b[batch, 16] -> Relu -> y[batch, 16]
  (two inputs tied by the same dimension)
- shape_of.onnx: x[batch, 4] -> Shape -> y (a value computed from the
  dimension, which the importer cannot keep symbolic yet)
- layer_norm.onnx: x[batch, 16] -> LayerNormalization(axis=-1) -> y
  (a row normalization over the static inner axis)
- sum_over_batch.onnx: x[batch, 4] -> ReduceSum(axes=[0]) -> y[1, 4] (a
  reduction over the symbolic dimension, outside the first dynamic slice)
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(name, shape, seed):
    rng = np.random.default_rng(seed)
    data = rng.uniform(-0.5, 0.5, size=shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


def save(graph, path):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="tcc-dynamic-tests",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def mlp(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        helper.make_node("Add", ["h1", "b1"], ["h2"], name="bias1"),
        helper.make_node("Relu", ["h2"], ["h3"], name="relu"),
        helper.make_node("MatMul", ["h3", "w2"], ["h4"], name="fc2"),
        helper.make_node("Add", ["h4", "b2"], ["h5"], name="bias2"),
        helper.make_node("Softmax", ["h5"], ["y"], name="softmax", axis=-1),
    ]
    inits = [
        weight("w1", (32, 64), 1),
        weight("b1", (64,), 2),
        weight("w2", (64, 10), 3),
        weight("b2", (10,), 4),
    ]
    save(helper.make_graph(nodes, "mlp", [x], [y], inits), path)


def cnn(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node(
            "Conv", ["x", "wc", "bc"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]
        ),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    inits = [
        weight("wc", (8, 3, 3, 3), 5),
        weight("bc", (8,), 6),
        weight("wf", (10, 8), 7),
        weight("bf", (10,), 8),
    ]
    save(helper.make_graph(nodes, "cnn", [x], [y], inits), path)


def two_inputs(path):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 16])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    save(helper.make_graph(nodes, "two_inputs", [a, b], [y]), path)


def shape_of(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2])
    nodes = [helper.make_node("Shape", ["x"], ["y"], name="shape_of_x")]
    save(helper.make_graph(nodes, "shape_of", [x], [y]), path)


def layer_norm(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    nodes = [
        helper.make_node(
            "LayerNormalization", ["x", "gamma", "beta"], ["y"], name="ln", axis=-1, epsilon=1e-5
        )
    ]
    inits = [weight("gamma", (16,), 9), weight("beta", (16,), 10)]
    save(helper.make_graph(nodes, "layer_norm", [x], [y], inits), path)


def sum_over_batch(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum_batch", keepdims=1)]
    save(helper.make_graph(nodes, "sum_over_batch", [x], [y], [axes]), path)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlp(os.path.join(out, "mlp.onnx"))
    cnn(os.path.join(out, "cnn.onnx"))
    two_inputs(os.path.join(out, "two_inputs.onnx"))
    shape_of(os.path.join(out, "shape_of.onnx"))
    layer_norm(os.path.join(out, "layer_norm.onnx"))
    sum_over_batch(os.path.join(out, "sum_over_batch.onnx"))
