#!/usr/bin/env python3
"""Quantizes a small CNN with onnxruntime's quantize_static and checks that
tcc's outputs match onnxruntime's on the quantized models (issue 15: QDQ
models from onnxruntime's own tool import and match).

The CNN (conv, relu, strided conv, relu, global average pool, gemm) has
random weights; it is quantized in the QDQ format with uint8 and int8
activations (int8 weights, per channel and per tensor), calibrated on 16
random inputs. Each quantized model and the float model run in
onnxruntime and through `tcc run` on the default OpenCL device over
--inputs random inputs; the script prints, per model, the largest
difference and the top-1 agreement between tcc and onnxruntime, and
exits 1 if any output differs by more than one quantization step.

Usage: scripts/onnx/onnx-quantized-check.py [--tcc=target/debug/tcc] [--inputs=8]
Needs python3 with numpy, onnx and onnxruntime.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

parser = argparse.ArgumentParser()
parser.add_argument("--tcc", default="target/debug/tcc")
parser.add_argument("--inputs", type=int, default=8)
args = parser.parse_args()
rng = np.random.default_rng(0)
work = tempfile.mkdtemp(prefix="tcc-quantized-")


def weight(name, *shape, s=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)


nodes = [
    helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"]),
    helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["c2"], ["r2"]),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
    helper.make_node("Flatten", ["g"], ["f"]),
    helper.make_node("Gemm", ["f", "W3", "B3"], ["y"], transB=1),
]
graph = helper.make_graph(
    nodes, "small_cnn",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
    [weight("W1", 16, 3, 3, 3, s=0.3), weight("B1", 16, s=0.1), weight("W2", 32, 16, 3, 3, s=0.1),
     weight("B2", 32, s=0.1), weight("W3", 10, 32), weight("B3", 10, s=0.1)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
float_path = os.path.join(work, "float.onnx")
onnx.save(model, float_path)


class Calibration(CalibrationDataReader):
    def __init__(self):
        self.feeds = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(16)])

    def get_next(self):
        return next(self.feeds, None)


models = {"float": float_path}
for name, activations, per_channel in [("qdq_uint8_per_channel", QuantType.QUInt8, True),
                                       ("qdq_int8_per_tensor", QuantType.QInt8, False)]:
    path = os.path.join(work, name + ".onnx")
    quantize_static(float_path, path, Calibration(), quant_format=QuantFormat.QDQ,
                    activation_type=activations, weight_type=QuantType.QInt8, per_channel=per_channel)
    models[name] = path

inputs = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(args.inputs)]
failed = False
for name, path in models.items():
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    worst, agree, step = 0.0, 0, 0.0
    # The output's quantization step (the last DequantizeLinear's scale).
    for init in onnx.load(path).graph.initializer:
        if init.name.startswith("y_scale") or init.name == "y_scale":
            step = float(numpy_helper.to_array(init))
    for i, x in enumerate(inputs):
        x_path, y_path = os.path.join(work, f"x{i}.npy"), os.path.join(work, f"{name}_y{i}.npy")
        np.save(x_path, x)
        ref = session.run(None, {"x": x})[0]
        subprocess.run([args.tcc, "run", path, f"--input=@{x_path}", f"--output=@{y_path}"],
                       check=True, stdout=subprocess.DEVNULL)
        got = np.load(y_path)
        worst = max(worst, float(np.abs(got - ref).max()))
        agree += int(got.argmax() == ref.argmax())
    ok = worst <= max(step, 1e-5) * 1.0001
    failed |= not ok
    print(f"{name:24s} max |tcc - onnxruntime| {worst:.3g} (output step {step:.3g})  "
          f"top-1 agreement {agree}/{len(inputs)}  {'ok' if ok else 'FAILED'}")
sys.exit(1 if failed else 0)
