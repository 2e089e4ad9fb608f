#!/usr/bin/env bash
# Builds a bundle for checking the tensor-core GEMMs on an NVIDIA GPU
# (scripts/bench/check-tf32-device.py runs it there), smaller than
# scripts/bench/build-device-bundle.sh's: only the e2e models whose GEMMs take
# the tensor-core template, and the benchmark products.
#
#   OUT/bin/tcc-run, tcc-benchmark        the runtime CLIs (already built: cargo build)
#   OUT/models/TAG.inputN.npy, .expectedN.npy, MANIFEST
#                                         inputs and fp32 reference outputs (as build-device-bundle.sh)
#   OUT/tf32/NAME.so, OUT/fp16/NAME.so    those models and the benchmark products at each precision
#   OUT/tf32-cuda/NAME.so                 the same in TF32 for the runtime's CUDA backend (--backend=cuda)
#   OUT/fp32/NAME.so                      the benchmark products in fp32
#   OUT/check-tf32-device.py              the checker, for a device whose checkout lacks it
#
# Usage: scripts/bench/build-mma-bundle.sh [OUT]   (default .device-mma)
# On the device: python3 OUT/check-tf32-device.py OUT --precision=tf32 --precision=tf32-cuda --precision=fp16
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.device-mma}
bin=target/debug
LLVM_PREFIX=/usr/lib/llvm-22
rm -rf "$out"
mkdir -p "$out/bin" "$out/models" "$out/tf32" "$out/tf32-cuda" "$out/fp16" "$out/fp32"
cp "$bin/tcc-run" "$bin/tcc-benchmark" "$out/bin/"
cp scripts/bench/check-tf32-device.py "$out/"
: > "$out/models/MANIFEST"
reference_env=()
if [[ -e $LLVM_PREFIX/lib/libmlir_c_runner_utils.so ]]; then
  reference_env=(env "LD_PRELOAD=$LLVM_PREFIX/lib/libmlir_c_runner_utils.so")
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for model in test/models/*.mlir; do
  name=$(basename "$model" .mlir)
  "$bin/tcc" compile "$model" --target=nvidia --precision=tf32 --emit=opencl-c -o "$work/$name" > /dev/null 2>&1 || continue
  grep -rq "on TF32 tensor cores (" "$work/$name" || continue
  echo "== $name"
  for precision in tf32 fp16; do
    "$bin/tcc" compile "$model" --target=nvidia --precision=$precision -o "$out/$precision/$name.so"
  done
  "$bin/tcc" compile "$model" --target=nvidia --precision=tf32 --backend=cuda -o "$out/tf32-cuda/$name.so"
  "$bin/tcc" compile "$model" --target=nvidia -o "$work/$name.so"
  meta=$("$bin/tcc-e2e-inputs" "$model" "$work/$name.so" "$out/models/$name")
  while read -r tag function num_inputs num_outputs abs rel; do
    args=()
    for ((i = 0; i < num_inputs; i++)); do args+=("--input=@$tag.input$i.npy"); done
    for ((i = 0; i < num_outputs; i++)); do args+=("--output=@$tag.expected$i.npy"); done
    "${reference_env[@]}" "$bin/tcc" run "$model" --target=reference --function="$function" "${args[@]}" > /dev/null
    echo "$name $(basename "$tag") $function $num_inputs $num_outputs $abs $rel" >> "$out/models/MANIFEST"
  done <<< "$meta"
done
python3 scripts/bench/gen-bench-models.py "$work/bench" > /dev/null
for name in sgemm_2048 sgemm_4096 dense_2048x1024x4096; do
  echo "== $name"
  for precision in tf32 fp16 fp32; do
    "$bin/tcc" compile "$work/bench/$name.mlir" --target=nvidia --precision=$precision -o "$out/$precision/$name.so"
  done
  "$bin/tcc" compile "$work/bench/$name.mlir" --target=nvidia --precision=tf32 --backend=cuda -o "$out/tf32-cuda/$name.so"
done
du -sh "$out"
