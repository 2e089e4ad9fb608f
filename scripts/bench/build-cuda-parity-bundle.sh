#!/usr/bin/env bash
# Builds .device-cuda-parity/, what scripts/bench/cuda-parity-device.sh needs
# on the GPU machine to measure issue 34's CUDA targets (the CUDA driver
# under the driver-neutral runtime core, runtime/src/hal):
#
#   .device-cuda-parity/bin/tcc-run, tcc-benchmark   runtime CLIs of this tree (release)
#   .device-cuda-parity/models/resnet50.so           ResNet-50, batch 1, --target=nvidia
#   .device-cuda-parity/models/resnet50.input.npy    the model's image
#   .device-cuda-parity/models/resnet50_b32.so       (--split) the same at batch 32, instead
#                                                    of batch 1 (one GPU's batch; a batch
#                                                    of 64 split over two)
#   .device-cuda-parity/cuda-parity-device.sh        the measuring script
#
# ResNet-50 comes from scripts/bench/gen-real-models.py --shared-weights
# (random weights shared per shape; needs python3 with onnx). Each artifact
# is about 46 MiB and the device tool carries 64 MiB, so the batch-1 cases
# (sections 1-3 of the device script) and the two-GPU split (section 4,
# --split) are two trips; the device script runs what the bundle holds.
#
# Usage: scripts/bench/build-cuda-parity-bundle.sh [--split] [--tcc=PATH] [--debug]
#   (PATH: a tcc binary; default target/release/tcc, else target/debug/tcc;
#    --debug bundles target/debug's runtime CLIs instead of a release build,
#    to check the bundle on a machine whose disk has no room for one)
# Then carry .device-cuda-parity/ and run .device-cuda-parity/cuda-parity-device.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."

tcc=
profile=release
split=0
for arg in "$@"; do
  case "$arg" in
    --split) split=1 ;;
    --tcc=*) tcc=${arg#--tcc=} ;;
    --debug) profile=debug ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
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
echo "== ResNet-50 (shared weights)"
python3 scripts/bench/gen-real-models.py "$work" --shared-weights resnet50 > /dev/null
input=$(python3 -c "import onnx,sys; print(onnx.load(sys.argv[1], load_external_data=False).graph.input[0].name)" "$work/resnet50.onnx")
if ((split)); then
  "$tcc" compile "$work/resnet50.onnx" --target=nvidia --input-shape="$input=32x3x224x224" -o "$out/models/resnet50_b32.so"
else
  "$tcc" compile "$work/resnet50.onnx" --target=nvidia -o "$out/models/resnet50.so"
  cp "$work/resnet50.input.npy" "$out/models/resnet50.input.npy"
fi
echo "== $(du -sh "$out" | cut -f1) in $out:"
ls -la "$out/models"
