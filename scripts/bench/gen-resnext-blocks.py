#!/usr/bin/env python3
"""Writes a ResNeXt-style benchmark model for grouped convolutions:
a 3x3 stem (stride 2) and four bottleneck blocks (1x1, a 3x3 convolution
of 32 groups, 1x1, each with BatchNorm; a projected shortcut where the
shape changes; the third block strided)
on a 1x3x112x112 input, then a global average pool. Weights are
independent random values (He-scaled), BatchNorm parameters random per
channel. docs/benchmarks.md's CPU section measures it with
scripts/bench/bench-cpu-ab.py.

  python3 scripts/bench/gen-resnext-blocks.py DIR

writes DIR/resnext_blocks.onnx and DIR/resnext_blocks.input.npy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out):
    rng = np.random.default_rng(0)
    inits, nodes, count = [], [], [0]

    def name(prefix):
        count[0] += 1
        return f"{prefix}{count[0]}"

    def conv(x, cin, cout, k, stride=1, groups=1, relu=True):
        w = name("w")
        scale = np.sqrt(2 / (cin // groups * k * k))
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((cout, cin // groups, k, k)) * scale).astype(np.float32), w))
        y = name("c")
        nodes.append(helper.make_node("Conv", [x, w], [y], group=groups, kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4))
        params = [name(p) for p in "smbv"]
        values = [rng.random(cout) + 0.5, rng.standard_normal(cout) * 0.1,
                  rng.standard_normal(cout) * 0.1, rng.random(cout) + 0.5]
        for p, v in zip(params, values):
            inits.append(numpy_helper.from_array(v.astype(np.float32), p))
        b = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [y] + params, [b]))
        if not relu:
            return b
        r = name("r")
        nodes.append(helper.make_node("Relu", [b], [r]))
        return r

    def block(x, cin, width, cout, stride, groups=32):
        a = conv(x, cin, width, 1)
        a = conv(a, width, width, 3, stride, groups)
        a = conv(a, width, cout, 1, relu=False)
        shortcut = conv(x, cin, cout, 1, stride, relu=False) if (stride != 1 or cin != cout) else x
        y, r = name("add"), name("r")
        nodes.append(helper.make_node("Add", [a, shortcut], [y]))
        nodes.append(helper.make_node("Relu", [y], [r]))
        return r

    x = conv("x", 3, 64, 3, 2)
    x = block(x, 64, 128, 256, 1)
    x = block(x, 256, 128, 256, 1)
    x = block(x, 256, 256, 512, 2)
    x = block(x, 512, 256, 512, 1)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    graph = helper.make_graph(nodes, "resnext_blocks",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 112, 112])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 1, 1])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "resnext_blocks.onnx"))
    np.save(os.path.join(out, "resnext_blocks.input.npy"),
            np.random.default_rng(1).standard_normal((1, 3, 112, 112)).astype(np.float32))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
