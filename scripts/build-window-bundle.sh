#!/usr/bin/env bash
# Builds .device-dw/, the bundle scripts/window-kernels-device.py times on
# the GPU machine (the window template against the loop nest and PyTorch,
# per depthwise/pooling layer):
#
#   .device-dw/bin/tcc-benchmark           the runtime's benchmark (links only OpenCL, opened at run time)
#   .device-dw/LAYERS.json                 the layers (MobileNet-v2, ShuffleNet, ResNet-50; batch 1 and 32)
#   .device-dw/models/LAYER.mlir           each layer as a one-op NHWC model
#   .device-dw/models/LAYER.window.so      compiled for --target=nvidia with TCC_WINDOWS=on (#tcc.window forced;
#                                          the target takes it by itself only where it measured faster)
#   .device-dw/models/LAYER.loops.so       the same with TCC_WINDOWS=off (the loop-nest kernel)
#   .device-dw/depthwise-kernel.cl         the emitted OpenCL C of one MobileNet-v2 depthwise layer
#   .device-dw/shufflenet-stats.txt        `tcc compile --stats` of ShuffleNet (scripts/gen-real-models.py)
#                                          with TCC_WINDOWS=off and as the target chooses
#
# Usage: scripts/build-window-bundle.sh [--release] [--out=DIR] [--filter=TEXT]
# On the device: python3 scripts/window-kernels-device.py .device-dw
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
cargo_profile=()
out=.device-dw
filter=
for arg in "$@"; do
  case "$arg" in
    --release) profile=release; cargo_profile=(--release) ;;
    --out=*) out=${arg#--out=} ;;
    --filter=*) filter=${arg#--filter=} ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-window-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

LLVM_PREFIX=/usr/lib/llvm-22
export PATH="$LLVM_PREFIX/bin:$HOME/.cargo/bin:$PATH"
cargo=${CARGO:-cargo}

echo "== building ($profile)"
"$cargo" build "${cargo_profile[@]}" --workspace --bins --lib --locked
bin=target/$profile

rm -rf "$out/models" "$out/bin"
mkdir -p "$out/models" "$out/bin"
cp "$bin/tcc-benchmark" "$out/bin/"
python3 scripts/window-kernels-device.py --write-models "$out"

echo "== compiling the layers (template and loop nest, --target=nvidia)"
count=0
for model in "$out"/models/*.mlir; do
  name=$(basename "$model" .mlir)
  [[ -z $filter || $name == *"$filter"* ]] || { rm -f "$model"; continue; }
  TCC_WINDOWS=on "$bin/tcc" compile "$model" --target=nvidia -o "$out/models/$name.window.so"
  TCC_WINDOWS=off "$bin/tcc" compile "$model" --target=nvidia -o "$out/models/$name.loops.so"
  count=$((count + 1))
done
if [[ -n $filter ]]; then
  python3 - "$out/LAYERS.json" "$filter" <<'EOF'
import json, sys
path, text = sys.argv[1:3]
layers = [l for l in json.load(open(path)) if text in l["name"]]
json.dump(layers, open(path, "w"), indent=1)
EOF
fi
echo "   $count layers"

dw="$out/models/mobilenet_v2-dw3s1-56x56x144-n32.mlir"
if [[ -e $dw ]]; then
  TCC_WINDOWS=on "$bin/tcc" compile "$dw" --target=nvidia --ptx=off --emit=opencl-c > "$out/depthwise-kernel.cl"
  echo "== $out/depthwise-kernel.cl: $(grep -c . "$out/depthwise-kernel.cl") lines"
fi

echo "== ShuffleNet kernel counts (--stats)"
if python3 -c 'import onnx' 2> /dev/null; then
  real=$(mktemp -d)
  python3 scripts/gen-real-models.py "$real" shufflenet > /dev/null
  {
    for choice in off auto; do
      echo "# TCC_WINDOWS=$choice: tcc compile shufflenet.onnx --target=nvidia --stats"
      TCC_WINDOWS=$choice "$bin/tcc" compile "$real/shufflenet.onnx" --target=nvidia --ptx=off --stats -o "$real/shufflenet.so" 2>&1 \
        | grep -E '^(kernels|arena)'
      windows=$(TCC_WINDOWS=$choice "$bin/tcc" compile "$real/shufflenet.onnx" --target=nvidia --ptx=off --emit=opencl-c | grep -c 'window kernel,' || true)
      echo "window kernels: $windows"
    done
  } | tee "$out/shufflenet-stats.txt"
  rm -rf "$real"
else
  echo "   (no onnx module: skipped)" | tee "$out/shufflenet-stats.txt"
fi
cp scripts/window-kernels-device.py scripts/cuda_graph_timing.py "$out/"
du -sh "$out"
