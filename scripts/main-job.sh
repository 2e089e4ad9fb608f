#!/usr/bin/env bash
# The main job: compile the bundled example model (test/models/mlp.mlir, an
# MLP with a softmax head) to an artifact and run it on the default OpenCL
# device, then run the same input through the upstream-MLIR reference and
# show both, with the kernel statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/debug
out=target/example
mkdir -p "$out"

echo "== tcc compile test/models/mlp.mlir -o $out/mlp.so --stats"
"$bin/tcc" compile test/models/mlp.mlir -o "$out/mlp.so" --stats

echo "== tcc-run --list-devices"
"$bin/tcc-run" --list-devices

echo "== tcc-run $out/mlp.so --function=mlp --input=1x4x16xf32=0.25 (default OpenCL device)"
"$bin/tcc-run" "$out/mlp.so" --function=mlp --input=1x4x16xf32=0.25 --output=@"$out/mlp.out.npy"
"$bin/tcc-run" "$out/mlp.so" --function=mlp --input=1x4x16xf32=0.25

echo "== tcc run --target=reference (upstream MLIR on the CPU)"
"$bin/tcc" run test/models/mlp.mlir --function=mlp --input=1x4x16xf32=0.25 --target=reference

echo "== tcc-benchmark (second run: the program comes from the cache)"
"$bin/tcc-benchmark" "$out/mlp.so" --function=mlp --input=1x4x16xf32=0.25 --warmup=2 --iterations=20
