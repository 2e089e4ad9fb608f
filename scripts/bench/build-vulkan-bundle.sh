#!/usr/bin/env bash
# Builds .device-vulkan/, what scripts/bench/vulkan-device.sh needs on the
# GPU machine to check issue 34's Vulkan targets (every e2e model through
# NVIDIA's Vulkan driver; ResNet-50 and BERT-base within 1.5x of the CUDA
# backend at batch 1 and 32):
#
#   .device-vulkan/bin/tcc-run, tcc-benchmark, tcc-compare   runtime CLIs (release)
#   .device-vulkan/models/...              every test/models model with --target=vulkan,
#                                          its inputs and reference outputs, MANIFEST, run-all.sh
#                                          (scripts/bench/build-device-bundle.sh --target=vulkan)
#   .device-vulkan/timing/M.bB.vulkan.so   M (resnet50, bert) at batch B, --target=vulkan
#   .device-vulkan/timing/M.bB.cuda.so     the same, --target=nvidia --backend=cuda
#   .device-vulkan/timing/INPUTS           M B tcc-benchmark --input flags, a line each
#   .device-vulkan/timing/FAILED           what did not compile, with the reason
#   .device-vulkan/vulkan-device.sh        the measuring script
#
# ResNet-50 comes from scripts/bench/gen-real-models.py --shared-weights
# (random weights shared per shape, so the artifacts stay small); BERT-base
# from the tx-models.tar.xz that `transformers-device.py export` writes on
# the GPU machine (--tx-models=PATH; without it BERT is listed in FAILED).
#
# Usage: scripts/bench/build-vulkan-bundle.sh [--batches=1,32] [--models=resnet50,bert]
#          [--tx-models=tx-models.tar.xz]
# Then carry .device-vulkan/ and run .device-vulkan/vulkan-device.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
batches=1,32
models=resnet50,bert
tx_models=
for arg in "$@"; do
  case "$arg" in
    --tx-models=*) tx_models=${arg#--tx-models=} ;;
    --batches=*) batches=${arg#--batches=} ;;
    --models=*) models=${arg#--models=} ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "build-vulkan-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
export PATH="/usr/lib/llvm-22/bin:$HOME/.cargo/bin:$PATH"
out=.device-vulkan
rm -rf "$out"
echo "== the e2e models for Vulkan"
scripts/bench/build-device-bundle.sh --release --target=vulkan
mkdir -p "$out"
mv .device/models .device/bin .device/run-all.sh .device/SKIPPED "$out/"
cp scripts/bench/vulkan-device.sh "$out/"
tcc=target/release/tcc
mkdir -p "$out/timing"
: > "$out/timing/INPUTS"
: > "$out/timing/FAILED"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
for model in ${models//,/ }; do
  echo "== $model"
  if [[ $model == bert ]]; then
    if [[ -z $tx_models ]] || ! tar -C "$work" -xf "$tx_models" bert.onnx > "$log" 2>&1; then
      { echo "bert: no bert.onnx (give --tx-models=tx-models.tar.xz from transformers-device.py export)"; sed 's/^/    /' "$log"; } >> "$out/timing/FAILED"
      continue
    fi
  elif ! python3 scripts/bench/gen-real-models.py "$work" --shared-weights "$model" > "$log" 2>&1; then
    { echo "$model: gen-real-models.py failed"; sed 's/^/    /' "$log" | head -20; } >> "$out/timing/FAILED"
    continue
  fi
  onnx=$work/$model.onnx
  # The graph inputs (name and batch-1 dims, NAME=1xAxB) and their dtypes.
  mapfile -t inputs < <(python3 - "$onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
types = {1: "f32", 7: "i64", 6: "i32"}
for i in m.graph.input:
    if i.name not in inits:
        t = i.type.tensor_type
        print(i.name, "x".join(str(d.dim_value or 1) for d in t.shape.dim), types.get(t.elem_type, "f32"))
PY
)
  for batch in ${batches//,/ }; do
    shapes=()
    flags=()
    for line in "${inputs[@]}"; do
      read -r name dims dtype <<< "$line"
      rest=${dims#*x}
      [[ $rest == "$dims" ]] && rest=
      dims_b=$batch${rest:+x$rest}
      shapes+=("--input-shape=$name=$dims_b")
      if [[ $dtype == f32 ]]; then flags+=("--input=${dims_b}x$dtype=0.5"); else flags+=("--input=${dims_b}x$dtype=1"); fi
    done
    for kind in vulkan cuda; do
      case $kind in
        vulkan) target=(--target=vulkan) ;;
        cuda) target=(--target=nvidia --backend=cuda) ;;
      esac
      if ! "$tcc" compile "$onnx" "${target[@]}" "${shapes[@]}" -o "$out/timing/$model.b$batch.$kind.so" > "$log" 2>&1; then
        { echo "$model batch $batch ($kind): tcc compile failed"; sed 's/^/    /' "$log" | head -20; } >> "$out/timing/FAILED"
      fi
    done
    echo "$model $batch ${flags[*]}" >> "$out/timing/INPUTS"
  done
done
echo "== wrote $out ($(du -sh "$out" | cut -f1))"
