#!/usr/bin/env bash
# Builds .device-attention/, the bundle scripts/bench/attention-device.py times on
# the GPU machine (the flash-attention kernel against PyTorch's
# scaled_dot_product_attention on the same inputs):
#
#   .device-attention/bin/tcc-benchmark, tcc-run   the runtime's tools (link only OpenCL, opened at run time)
#   .device-attention/CASES.json                   the cases (batch 32, 12 heads, D 64, seq 128/512/2048, causal or not)
#   .device-attention/models/CASE.mlir             each case as a one-op tcc.attention model
#   .device-attention/models/CASE.so               compiled with `tcc compile --target=nvidia`
#   .device-attention/models/CASE.P.so             the same with --precision=P (fp16, bf16: tensor cores)
#   .device-attention/models/CASE.fp16-graph.so    CASE.f16.mlir (the case on f16 tensors) with --precision=fp16
#   .device-attention/models/CASE.bf16-graph.so    CASE.bf16.mlir (the case on bf16 tensors) with --precision=bf16
#   .device-attention/STATS.txt                    `tcc compile --stats` of each case (one attention kernel)
#   .device-attention/attention-kernel.cl          the emitted OpenCL C of the seq-512 causal case
#
# Usage: scripts/bench/build-attention-bundle.sh [--release] [--out=DIR]
# On the device (from a checkout, with the bundle carried):
#   python3 scripts/bench/attention-device.py .device-attention
set -euo pipefail
cd "$(dirname "$0")/../.."

profile=debug
cargo_profile=()
out=.device-attention
for arg in "$@"; do
  case "$arg" in
    --release) profile=release; cargo_profile=(--release) ;;
    --out=*) out=${arg#--out=} ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-attention-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

LLVM_PREFIX=/usr/lib/llvm-22
export PATH="$LLVM_PREFIX/bin:$HOME/.cargo/bin:$PATH"
cargo=${CARGO:-cargo}

echo "== building ($profile)"
"$cargo" build "${cargo_profile[@]}" --workspace --bins --lib --locked
bin=target/$profile

rm -rf "$out"
mkdir -p "$out/models" "$out/bin"
cp "$bin/tcc-benchmark" "$bin/tcc-run" "$out/bin/"
python3 scripts/bench/attention-device.py --write-models "$out"

echo "== compiling the cases (--target=nvidia)"
: > "$out/STATS.txt"
for model in "$out"/models/*.mlir; do
  name=$(basename "$model" .mlir)
  if [[ $name == *.f16 || $name == *.bf16 ]]; then
    element=${name##*.}
    name=${name%.*}
    precision=$([[ $element == f16 ]] && echo fp16 || echo bf16)
    echo "# tcc compile $name.$element.mlir --target=nvidia --precision=$precision --stats" >> "$out/STATS.txt"
    "$bin/tcc" compile "$model" --target=nvidia --precision=$precision --stats \
      -o "$out/models/$name.$precision-graph.so" 2>> "$out/STATS.txt"
    continue
  fi
  echo "# tcc compile $name.mlir --target=nvidia --stats" >> "$out/STATS.txt"
  "$bin/tcc" compile "$model" --target=nvidia --stats -o "$out/models/$name.so" 2>> "$out/STATS.txt"
  for precision in fp16 bf16; do
    echo "# tcc compile $name.mlir --target=nvidia --precision=$precision --stats" >> "$out/STATS.txt"
    "$bin/tcc" compile "$model" --target=nvidia --precision=$precision --stats \
      -o "$out/models/$name.$precision.so" 2>> "$out/STATS.txt"
  done
done
grep -q "kind=attention" "$out/STATS.txt" || { echo "no attention kernel in $out/STATS.txt" >&2; exit 1; }

"$bin/tcc" compile "$out/models/attention-b32-h12-s512-d64-causal.mlir" --target=nvidia --ptx=off \
  --emit=opencl-c > "$out/attention-kernel.cl"
echo "== $out: $(ls "$out"/models/*.so | wc -l) artifacts, $(du -sh "$out" | cut -f1)"
echo "   on the device: python3 scripts/bench/attention-device.py $out"
