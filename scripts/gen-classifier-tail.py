#!/usr/bin/env python3
"""ResNet-50's tail as an ONNX model, to time a classifier after a global
pool on its own (docs/benchmarks.md, "classifiers after a global pool as
GEMMs"): GlobalAveragePool of 1x2048x7x7, Reshape to 1x2048, Gemm to 1000
with bias (random weights, fixed seed), Softmax; and an input.

Usage: python3 scripts/gen-classifier-tail.py DIR   (writes DIR/tail.onnx, DIR/x.npy)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array((rng.standard_normal((1000, 2048)) * 0.02).astype(np.float32), "w"),
        numpy_helper.from_array((rng.standard_normal(1000) * 0.1).astype(np.float32), "b"),
        numpy_helper.from_array(np.array([1, 2048], dtype=np.int64), "flat"),
    ]
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["p"]),
        helper.make_node("Reshape", ["p", "flat"], ["f"]),
        helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1),
        helper.make_node("Softmax", ["y"], ["s"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "tail", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2048, 7, 7])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # onnxruntime on the GPU machine reads IR versions up to 13
    onnx.save(model, os.path.join(out, "tail.onnx"))
    np.save(os.path.join(out, "x.npy"), rng.uniform(0, 1, (1, 2048, 7, 7)).astype(np.float32))


if __name__ == "__main__":
    main()
