#!/usr/bin/env bash
# Runs the onnx package's "light" models (AlexNet, DenseNet-121,
# Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512
# with constant weights; backend/test/data/light) through tcc onnx-test.
# Each becomes a test case under target/onnx-light/ with the input the
# onnx backend test runner feeds them (arange(n) / n) and the expected
# output shipped with the package.
#   scripts/onnx/onnx-light-models.sh [CASE-FILTER]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/onnx-light
python3 - "$out" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import numpy_helper
out = sys.argv[1]
light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
for name in sorted(os.listdir(light)):
    if not name.endswith(".onnx"):
        continue
    stem = name[: -len(".onnx")]
    case = os.path.join(out, stem)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    model = onnx.load(os.path.join(light, name))
    onnx.save(model, os.path.join(case, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    for n, x in enumerate(inputs):
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim)
        count = int(np.prod(shape))
        value = (np.arange(count).reshape(shape) / count).astype(np.float32)
        with open(os.path.join(data, f"input_{n}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value).SerializeToString())
    with open(os.path.join(light, f"{stem}_output_0.pb"), "rb") as f:
        expected = f.read()
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(expected)
PY
filter=()
if [ $# -gt 0 ]; then filter=(--filter "$1"); fi
exec target/debug/tcc onnx-test "$out" --verbose "${filter[@]}"
