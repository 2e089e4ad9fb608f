#!/usr/bin/env bash
# Builds .device-cuda-parity/, what scripts/bench/cuda-parity-device.sh needs
# on the GPU machine to measure issue 34's CUDA targets (the CUDA driver
# under the driver-neutral runtime core, runtime/src/hal):
#
#   .device-cuda-parity/bin/tcc-run, tcc-benchmark   runtime CLIs of this tree (release)
#   .device-cuda-parity/models.tar.xz                unpacked by the device script into models/:
#     models/resnet50.so           ResNet-50, batch 1, --target=nvidia
#     models/resnet50.input.npy    the model's image
#     models/resnet50_b32.so       the same at batch 32 (one GPU's batch; a batch
#                                  of 64 split over two)
#   .device-cuda-parity/cuda-parity-device.sh        the measuring script
#
# ResNet-50 comes from --resnet=PATH (default /work/models/tx/resnet50.onnx
# where it exists, else scripts/bench/gen-real-models.py --shared-weights;
# needs python3 with onnx), its weights tiled (scripts/bench/tile-weights.py:
# same shapes and kernels, each weight one random row repeated), so the two
# artifacts compress to well under the 64 MiB a trip carries and every
# section of the device script runs from one bundle. --split is kept for
# the old two-trip command line (both artifacts are always built).
#
# Usage: scripts/bench/build-cuda-parity-bundle.sh [--split] [--tcc=PATH] [--resnet=PATH] [--debug]
#   (PATH: a tcc binary; default target/release/tcc, else target/debug/tcc;
#    --debug bundles target/debug's runtime CLIs instead of a release build,
#    to check the bundle on a machine whose disk has no room for one)
# Then carry .device-cuda-parity/ and run .device-cuda-parity/cuda-parity-device.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."

tcc=
resnet=
profile=release
for arg in "$@"; do
  case "$arg" in
    --split) ;;
    --resnet=*) resnet=${arg#--resnet=} ;;
    --tcc=*) tcc=${arg#--tcc=} ;;
    --debug) profile=debug ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "build-cuda-parity-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

export PATH="/usr/lib/llvm-22/bin:$HOME/.cargo/bin:$PATH"
cargo=${CARGO:-cargo}
echo "== building the runtime CLIs ($profile)"
if [[ $profile == release ]]; then
  "$cargo" build --release -p tcc-runtime --bins
else
  "$cargo" build -p tcc-runtime --bins
fi
if [[ -z $tcc ]]; then
  if [[ -x target/release/tcc ]]; then tcc=target/release/tcc
  else
    echo "== building tcc"
    "$cargo" build -p tcc-compiler --bin tcc
    tcc=target/debug/tcc
  fi
fi

out=.device-cuda-parity
rm -rf "$out"
mkdir -p "$out/bin" "$out/models"
cp "target/$profile/tcc-run" "target/$profile/tcc-benchmark" "$out/bin/"
# Without symbols: the trip carries 64 MiB, the artifact takes most of it.
strip "$out/bin/tcc-run" "$out/bin/tcc-benchmark"
cp scripts/bench/cuda-parity-device.sh "$out/"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -z $resnet && -e /work/models/tx/resnet50.onnx ]] && resnet=/work/models/tx/resnet50.onnx
if [[ -n $resnet ]]; then
  echo "== ResNet-50 ($resnet, weights tiled)"
  source_onnx=$resnet
else
  echo "== ResNet-50 (gen-real-models.py --shared-weights, weights tiled)"
  python3 scripts/bench/gen-real-models.py "$work" --shared-weights resnet50 > /dev/null
  source_onnx=$work/resnet50.onnx
fi
python3 scripts/bench/tile-weights.py "$source_onnx" "$work/resnet50.tiled.onnx"
input=$(python3 -c "import onnx,sys; print(onnx.load(sys.argv[1], load_external_data=False).graph.input[0].name)" "$work/resnet50.tiled.onnx")
mkdir -p "$work/models"
"$tcc" compile "$work/resnet50.tiled.onnx" --target=nvidia --input-shape="$input=1x3x224x224" -o "$work/models/resnet50.so"
"$tcc" compile "$work/resnet50.tiled.onnx" --target=nvidia --input-shape="$input=32x3x224x224" -o "$work/models/resnet50_b32.so"
python3 -c "import numpy as np,sys; np.save(sys.argv[1], np.random.default_rng(0).standard_normal((1,3,224,224)).astype(np.float32))" "$work/models/resnet50.input.npy"
ls -la "$work/models"
tar -C "$work" -cf - models | xz -6 -T2 > "$out/models.tar.xz"
rmdir "$out/models"
size_kib=$(du -sk "$out" | cut -f1)
echo "== wrote $out ($((size_kib / 1024)) MiB)"
if ((size_kib > ${LIMIT_MIB:-60} * 1024)); then
  echo "build-cuda-parity-bundle.sh: $out is over ${LIMIT_MIB:-60} MiB" >&2
  exit 1
fi
