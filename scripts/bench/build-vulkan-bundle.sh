#!/usr/bin/env bash
# Builds .device-vulkan/, what scripts/bench/vulkan-device.sh needs on the
# GPU machine to check issue 34's Vulkan targets (every e2e model through
# NVIDIA's Vulkan driver; ResNet-50 and BERT-base within 1.5x of the CUDA
# backend at batch 1 and 32), small enough to travel (the device tool
# carries 64 MiB in all; this script refuses a bundle over LIMIT_MIB,
# default 60):
#
#   .device-vulkan/bin/tcc-run, tcc-benchmark, tcc-compare   runtime CLIs (release, stripped)
#   .device-vulkan/lib/libvulkan.so.1      Debian's Vulkan loader (libvulkan1), only the
#                                          library: the GPU machine has NVIDIA's Vulkan ICD
#                                          but maybe not the loader (vulkan-device.sh uses
#                                          its own loader where ldconfig knows one)
#   .device-vulkan/models.tar.xz           (part e2e) every test/models model with
#                                          --target=vulkan, its inputs and reference outputs,
#                                          MANIFEST (scripts/bench/build-device-bundle.sh
#                                          --target=vulkan); run-all.sh, SKIPPED beside it
#   .device-vulkan/timing.tar.xz           (part timing) timing/M.bB.vulkan.so and
#                                          timing/M.bB.cuda.so (--target=nvidia
#                                          --backend=cuda) for M in resnet50, bert at batch
#                                          B; timing/INPUTS (M B tcc-benchmark --input
#                                          flags, a line each) and timing/FAILED beside it
#   .device-vulkan/vulkan-device.sh        the measuring script (unpacks the archives)
#
# The artifacts travel xz-compressed, their weights tiled
# (scripts/bench/tile-weights.py: each large weight one random row repeated,
# same shapes and graph, so the same kernels and times; a compiled artifact
# then compresses to a few MiB): ResNet-50 from --resnet=PATH (default
# /work/models/tx/resnet50.onnx where it exists, else
# scripts/bench/gen-real-models.py --shared-weights), BERT-base from
# --bert=PATH (default /work/models/tx/bert.onnx where it exists) or the
# bert.onnx of --tx-models=tx-models.tar.xz (`transformers-device.py
# export` on the GPU machine); without either BERT is listed in FAILED.
#
# Usage: scripts/bench/build-vulkan-bundle.sh [--part=all|e2e|timing] [--batches=1,32]
#          [--models=resnet50,bert] [--bert=bert.onnx] [--resnet=resnet50.onnx]
#          [--tx-models=tx-models.tar.xz] [--tcc=PATH] [--debug] [--out=DIR]
# --tcc: the compiler (default target/release/tcc, else target/debug/tcc);
# --debug: target/debug's runtime CLIs instead of a release build (to check
# the bundle on a machine with no room for one; time with release ones).
# --part=e2e and --part=timing make one trip each where both together are
# over the limit (and --part=timing --batches=B --models=M one per model and
# batch where the timing artifacts alone are). --out: the bundle's folder
# (.device-vulkan, the default, or another .device-vulkan* of the root;
# it is emptied first), so that both parts can be
# built side by side (e.g. --part=e2e --out=.device-vulkan-e2e). Then carry
# the folder and run its vulkan-device.sh there (it runs what the bundle holds).
set -euo pipefail
cd "$(dirname "$0")/../.."
batches=1,32
models=resnet50,bert
tx_models=
bert=
resnet=
tcc=
profile=release
part=all
out=.device-vulkan
limit_mib=${LIMIT_MIB:-60}
for arg in "$@"; do
  case "$arg" in
    --tx-models=*) tx_models=${arg#--tx-models=} ;;
    --bert=*) bert=${arg#--bert=} ;;
    --resnet=*) resnet=${arg#--resnet=} ;;
    --tcc=*) tcc=${arg#--tcc=} ;;
    --debug) profile=debug ;;
    --batches=*) batches=${arg#--batches=} ;;
    --models=*) models=${arg#--models=} ;;
    --part=all|--part=e2e|--part=timing) part=${arg#--part=} ;;
    --out=?*) out=${arg#--out=} ;;
    --part=*) echo "build-vulkan-bundle.sh: --part is all, e2e or timing" >&2; exit 2 ;;
    -h|--help) sed -n '2,50p' "$0"; exit 0 ;;
    *) echo "build-vulkan-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
# The folder is emptied: only a .device-vulkan* folder of this checkout.
if [[ ! $out =~ ^\.device-vulkan[A-Za-z0-9._-]*$ ]]; then
  echo "build-vulkan-bundle.sh: --out names a folder .device-vulkan* of the checkout's root (it is emptied first)" >&2
  exit 2
fi
export PATH="/usr/lib/llvm-22/bin:$HOME/.cargo/bin:$PATH"
[[ -z $bert && -z $tx_models && -e /work/models/tx/bert.onnx ]] && bert=/work/models/tx/bert.onnx
[[ -z $resnet && -e /work/models/tx/resnet50.onnx ]] && resnet=/work/models/tx/resnet50.onnx
release=()
[[ $profile == release ]] && release=(--release)
rm -rf "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log

if [[ $part != timing ]]; then
  echo "== the e2e models for Vulkan"
  scripts/bench/build-device-bundle.sh "${release[@]}" --target=vulkan
  mkdir -p "$out"
  mv .device/bin .device/run-all.sh .device/SKIPPED "$out/"
  tar -C .device -cf - models | xz -9 -T2 > "$out/models.tar.xz"
  rm -rf .device/models
else
  echo "== building the runtime CLIs ($profile)"
  cargo build "${release[@]}" -p tcc-compiler -p tcc-runtime -p tcc-e2e --bins
  mkdir -p "$out/bin"
  cp "target/$profile/tcc-run" "target/$profile/tcc-benchmark" "target/$profile/tcc-compare" "$out/bin/"
fi
strip "$out"/bin/* 2>/dev/null || llvm-strip "$out"/bin/*
cp scripts/bench/vulkan-device.sh "$out/"

echo "== the Vulkan loader (Debian's libvulkan1)"
mkdir -p "$out/lib" "$work/deb"
(cd "$work/deb" && apt-get download libvulkan1 > "$log" 2>&1) || { cat "$log"; exit 1; }
dpkg -x "$work"/deb/libvulkan1_*.deb "$work/deb/root"
loader=$(find "$work/deb/root" -name 'libvulkan.so.1' | head -1)
[[ -n $loader ]] || { echo "libvulkan1's package holds no libvulkan.so.1" >&2; exit 1; }
cp -L "$loader" "$out/lib/libvulkan.so.1"

if [[ $part != e2e ]]; then
  if [[ -z $tcc ]]; then
    if [[ -x target/release/tcc ]]; then tcc=target/release/tcc; else tcc=target/debug/tcc; fi
  fi
  timing=$work/timing
  mkdir -p "$timing/timing"
  : > "$out/INPUTS"
  : > "$out/FAILED"
  for model in ${models//,/ }; do
    echo "== $model"
    : > "$log"
    if [[ $model == bert ]]; then
      if [[ -n $bert ]]; then
        source_onnx=$bert
      elif [[ -n $tx_models ]] && tar -C "$work" -xf "$tx_models" bert.onnx > "$log" 2>&1; then
        source_onnx=$work/bert.onnx
      else
        { echo "bert: no bert.onnx (give --bert=bert.onnx, or --tx-models=tx-models.tar.xz from transformers-device.py export)"; sed 's/^/    /' "$log"; } >> "$out/FAILED"
        continue
      fi
    elif [[ $model == resnet50 && -n $resnet ]]; then
      source_onnx=$resnet
    elif python3 scripts/bench/gen-real-models.py "$work" --shared-weights "$model" > "$log" 2>&1; then
      source_onnx=$work/$model.onnx
    else
      { echo "$model: gen-real-models.py failed"; sed 's/^/    /' "$log" | head -20; } >> "$out/FAILED"
      continue
    fi
    onnx=$work/$model.tiled.onnx
    if ! python3 scripts/bench/tile-weights.py "$source_onnx" "$onnx" > "$log" 2>&1; then
      { echo "$model: tile-weights.py failed"; sed 's/^/    /' "$log" | head -20; } >> "$out/FAILED"
      continue
    fi
    cat "$log"
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
        if ! "$tcc" compile "$onnx" "${target[@]}" "${shapes[@]}" -o "$timing/timing/$model.b$batch.$kind.so" > "$log" 2>&1; then
          { echo "$model batch $batch ($kind): tcc compile failed"; sed 's/^/    /' "$log" | head -20; } >> "$out/FAILED"
        fi
      done
      echo "$model $batch ${flags[*]}" >> "$out/INPUTS"
    done
  done
  tar -C "$timing" -cf - timing | xz -9 -T2 > "$out/timing.tar.xz"
fi

size_kib=$(du -sk "$out" | cut -f1)
echo "== wrote $out ($((size_kib / 1024)) MiB)"
if ((size_kib > limit_mib * 1024)); then
  echo "build-vulkan-bundle.sh: $out is over $limit_mib MiB: build it in more trips (--part=e2e; then --part=timing with one --batches=B, and one --models=M, per trip)" >&2
  exit 1
fi
