#!/usr/bin/env bash
# Builds .device-async/, what scripts/bench/async-device.sh needs on the GPU
# machine to measure issue 14's targets (asynchronous calls, several calls
# in flight, two GPUs):
#
#   .device-async/bin/tcc-run, tcc-benchmark     runtime CLIs of this tree (release)
#   .device-async/models/resnet50.so             ResNet-50, batch 1, --target=nvidia
#   .device-async/models/resnet50_fp16.so        the same with --storage=fp16 (issue 15)
#   .device-async/models/resnet50_b32{,_fp16}.so (--fp16-batch32) batch 32, f32 and fp16 storage
#   .device-async/models/resnet50_full{,_fp16}.so (--fp16-batch32) batch 1 with weights of
#                                                its own per tensor, for fp16's accuracy
#   .device-async/models/sgemm_4096.so           C = A @ B, 4096^3 f32, --target=nvidia
#   .device-async/models/resnet50_b16.so         (--with-batch16) batch 16, for a batch
#                                                of 32 split across two GPUs
#   .device-async/async-device.sh                the measuring script
#
# ResNet-50 comes from scripts/bench/gen-real-models.py --shared-weights (random
# weights shared per shape so the artifact stays small; needs python3 with
# onnx). The device tool carries 64 MiB: the batch-1 bundle fits; the
# batch-16 artifact is as large again, so --with-batch16 is for a second
# trip (or a machine with two GPUs).
#
# Usage: scripts/bench/build-async-bundle.sh [--with-batch16] [--fp16-batch32] [--tcc=PATH]
#   (PATH: a tcc binary; default target/release/tcc, else target/debug/tcc)
# Then carry .device-async/ and run .device-async/async-device.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."

batch16=0
fp16_batch32=0
tcc=
for arg in "$@"; do
  case "$arg" in
    --with-batch16) batch16=1 ;;
    --fp16-batch32) fp16_batch32=1 ;;
    --tcc=*) tcc=${arg#--tcc=} ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "build-async-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

export PATH="/usr/lib/llvm-22/bin:$HOME/.cargo/bin:$PATH"
cargo=${CARGO:-cargo}
echo "== building the runtime CLIs (release)"
"$cargo" build --release -p tcc-runtime --bins
if [[ -z $tcc ]]; then
  if [[ -x target/release/tcc ]]; then tcc=target/release/tcc
  else
    echo "== building tcc"
    "$cargo" build -p tcc-compiler --bin tcc
    tcc=target/debug/tcc
  fi
fi

out=.device-async
rm -rf "$out"
mkdir -p "$out/bin" "$out/models"
cp target/release/tcc-run target/release/tcc-benchmark "$out/bin/"
cp scripts/bench/async-device.sh "$out/"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== ResNet-50 (shared weights)"
python3 scripts/bench/gen-real-models.py "$work" --shared-weights resnet50 > /dev/null
input=$(python3 -c "import onnx,sys; print(onnx.load(sys.argv[1], load_external_data=False).graph.input[0].name)" "$work/resnet50.onnx")
"$tcc" compile "$work/resnet50.onnx" --target=nvidia -o "$out/models/resnet50.so"
"$tcc" compile "$work/resnet50.onnx" --target=nvidia --storage=fp16 -o "$out/models/resnet50_fp16.so"
if ((fp16_batch32)); then
  "$tcc" compile "$work/resnet50.onnx" --target=nvidia --input-shape="$input=32x3x224x224" -o "$out/models/resnet50_b32.so"
  "$tcc" compile "$work/resnet50.onnx" --target=nvidia --storage=fp16 --input-shape="$input=32x3x224x224" -o "$out/models/resnet50_b32_fp16.so"
  python3 scripts/bench/gen-real-models.py "$work/full" resnet50 > /dev/null
  "$tcc" compile "$work/full/resnet50.onnx" --target=nvidia -o "$out/models/resnet50_full.so"
  "$tcc" compile "$work/full/resnet50.onnx" --target=nvidia --storage=fp16 -o "$out/models/resnet50_full_fp16.so"
fi
cp "$work/resnet50.input.npy" "$out/models/resnet50.input.npy"
if ((batch16)); then
  "$tcc" compile "$work/resnet50.onnx" --target=nvidia --input-shape="$input=16x3x224x224" -o "$out/models/resnet50_b16.so"
fi
echo "== sgemm 4096"
python3 scripts/bench/gen-bench-models.py "$work/bench" > /dev/null
"$tcc" compile "$work/bench/sgemm_4096.mlir" --target=nvidia -o "$out/models/sgemm_4096.so"
echo "== $(du -sh "$out" | cut -f1) in $out:"
ls -la "$out/models"
