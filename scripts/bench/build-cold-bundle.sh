#!/usr/bin/env bash
# Builds .device-cold/ for scripts/bench/cold-start-device.sh: the runtime-only
# binaries and ResNet-50 (shared weights, so the artifacts compress) for
# the H100 at batch 1 and 32, xz-compressed to travel in the device tool's
# 64 MiB. Run from the repository root after `make build`.
set -euo pipefail
out=.device-cold
models=${MODELS_DIR:-/tmp/tcc-real-shared}
mkdir -p "$out/bin" "$models"
[ -f "$models/resnet50.onnx" ] || python3 scripts/bench/gen-real-models.py "$models" --shared-weights resnet50
cp target/debug/tcc-run target/debug/tcc-benchmark "$out/bin/"
strip "$out/bin/"* || true
cp "$models/resnet50.input.npy" "$out/"
target/debug/tcc compile "$models/resnet50.onnx" --target=nvidia --stats -o "$out/r50.so" | head -2
target/debug/tcc compile "$models/resnet50.onnx" --target=nvidia \
  --input-shape=gpu_0/data_0=32x3x224x224 -o "$out/r50b32.so"
python3 -c "
import numpy as np
np.save('$out/b32.npy', np.random.default_rng(0).standard_normal((32, 3, 224, 224)).astype(np.float32))"
rm -f "$out"/*.xz
xz -T2 "$out"/*.so "$out/b32.npy"
du -sh "$out"
