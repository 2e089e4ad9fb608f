#!/usr/bin/env bash
# Builds a bundle for measuring the TF32 wgmma GEMM body on the H100
# (scripts/wgmma-device.sh runs it there): SGEMM 2048^3 and 4096^3 and the
# 2048x1024x4096 dense layer compiled --target=nvidia at --precision=tf32
# and fp32, the tf32 SGEMM's PTX (for ptxas -v there), the runtime CLIs,
# and the wgmma prototype (scripts/wgmma-proto). Artifacts are
# xz-compressed.
#
# Usage: scripts/build-wgmma-bundle.sh OUT   (after cargo build)
# On the device: bash OUT/wgmma-device.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
bin=target/debug
rm -rf "$out"
mkdir -p "$out/bin" "$out/tf32" "$out/fp32" "$out/proto"
cp "$bin/tcc-run" "$bin/tcc-benchmark" "$out/bin/"
strip "$out/bin/"* 2>/dev/null || true
cp scripts/wgmma-device.sh "$out/"
cp scripts/wgmma-proto/* "$out/proto/"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 scripts/gen-bench-models.py "$work/bench" > /dev/null
for name in sgemm_2048 sgemm_4096 dense_2048x1024x4096; do
  for precision in tf32 fp32; do
    "$bin/tcc" compile "$work/bench/$name.mlir" --target=nvidia --precision=$precision -o "$out/$precision/$name.so"
  done
done
"$bin/tcc" compile "$work/bench/sgemm_4096.mlir" --target=nvidia --precision=tf32 --emit=ptx -o "$out/tf32/sgemm_4096.ptx"
xz -T2 -3 "$out"/*/*.so
du -sh "$out"
