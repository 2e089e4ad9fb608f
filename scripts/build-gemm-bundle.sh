#!/usr/bin/env bash
# Builds a bundle for measuring the fp32 GEMM template on an NVIDIA GPU
# against cuBLAS/cuDNN (scripts/gemm-device.sh runs it there): the SGEMM
# and dense benchmark products, ResNet-50's slow batch-1 convolution
# layers (scripts/gen-conv-layer-models.py), ResNet-50 at batch 1 and 32
# (shared weights), each compiled --target=nvidia by this checkout's tcc
# ("new") and by OLD_BIN/tcc ("old", e.g. main's build) when given, and
# the e2e models whose GEMMs take the template with their reference
# outputs (checked through PTX on the device). Artifacts are xz-compressed
# (the trip to the device carries at most 64 MiB).
#
# Usage: scripts/build-gemm-bundle.sh OUT [OLD_BIN]   (after cargo build)
# On the device: bash OUT/gemm-device.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
old_bin=${2:-}
bin=target/debug
LLVM_PREFIX=/usr/lib/llvm-22
rm -rf "$out"
mkdir -p "$out/bin" "$out/e2e"
cp "$bin/tcc-run" "$bin/tcc-benchmark" "$bin/tcc-compare" "$out/bin/"
strip "$out/bin/"* 2>/dev/null || true
cp scripts/gemm-device.sh scripts/gen-conv-layer-models.py "$out/"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 scripts/gen-bench-models.py "$work/bench" > /dev/null
python3 scripts/gen-conv-layer-models.py "$work/layers.onnx"
python3 scripts/gen-real-models.py "$work/rm" --shared-weights resnet50 > /dev/null
input=$(python3 -c "import onnx,sys;print(onnx.load(sys.argv[1],load_external_data=False).graph.input[0].name)" "$work/rm/resnet50.onnx")
builds=(new)
[[ -n $old_bin ]] && builds+=(old)
for build in "${builds[@]}"; do
  tcc=$bin/tcc
  [[ $build == old ]] && tcc=$old_bin/tcc
  mkdir -p "$out/$build"
  for m in sgemm_1024 sgemm_2048 sgemm_4096 dense_512x1024x1024 dense_2048x1024x4096; do
    "$tcc" compile "$work/bench/$m.mlir" --target=nvidia -o "$out/$build/$m.so"
  done
  "$tcc" compile "$work/layers.onnx" --target=nvidia -o "$out/$build/layers.so"
  "$tcc" compile "$work/rm/resnet50.onnx" --target=nvidia -o "$out/$build/resnet50-b1.so"
  "$tcc" compile "$work/rm/resnet50.onnx" --target=nvidia --input-shape="$input=32x3x224x224" -o "$out/$build/resnet50-b32.so"
done
reference_env=()
if [[ -e $LLVM_PREFIX/lib/libmlir_c_runner_utils.so ]]; then
  reference_env=(env "LD_PRELOAD=$LLVM_PREFIX/lib/libmlir_c_runner_utils.so")
fi
: > "$out/e2e/MANIFEST"
for model in test/models/*.mlir; do
  name=$(basename "$model" .mlir)
  "$bin/tcc" compile "$model" --target=nvidia --emit=opencl-c -o "$work/$name" > /dev/null 2>&1 || continue
  grep -rq "/\* tile " "$work/$name" || continue
  "$bin/tcc" compile "$model" --target=nvidia -o "$out/e2e/$name.so"
  meta=$("$bin/tcc-e2e-inputs" "$model" "$out/e2e/$name.so" "$out/e2e/$name")
  while read -r tag function num_inputs num_outputs abs rel; do
    args=()
    for ((i = 0; i < num_inputs; i++)); do args+=("--input=@$tag.input$i.npy"); done
    for ((i = 0; i < num_outputs; i++)); do args+=("--output=@$tag.expected$i.npy"); done
    "${reference_env[@]}" "$bin/tcc" run "$model" --target=reference --function="$function" "${args[@]}" > /dev/null
    echo "$name $(basename "$tag") $function $num_inputs $num_outputs $abs $rel" >> "$out/e2e/MANIFEST"
  done <<< "$meta"
done
xz -T2 -3 "$out"/*/*.so
du -sh "$out"
