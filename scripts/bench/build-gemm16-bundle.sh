#!/usr/bin/env bash
# Builds a bundle for timing and checking the FP16/BF16 GEMMs on an NVIDIA
# GPU against cuBLAS (scripts/bench/gemm16-device.py runs it there):
#
#   OUT/bin/tcc-run, tcc-benchmark      the runtime CLIs (already built: make build)
#   OUT/models/NAME.mlir                the products, C = (X Y) (U V): the last GEMM
#                                       reads A = X Y and B = U V as the 16-bit
#                                       intermediates --precision stores them in
#   OUT/P/NAME.so                       compiled with --precision=P --backend=cuda
#                                       (P = fp16, bf16: the wgmma body on sm_90a)
#   OUT/P-mma/NAME.so                   the same without --backend=cuda (the mma.sync
#                                       body, in 48 KiB of local memory)
#   OUT/gemm16-device.py                the timing script
#
# Usage: scripts/bench/build-gemm16-bundle.sh [OUT]   (default .device-gemm16)
# On the device: python3 OUT/gemm16-device.py OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.device-gemm16}
bin=target/debug
rm -rf "$out"
mkdir -p "$out/bin" "$out/models"
cp "$bin/tcc-run" "$bin/tcc-benchmark" "$out/bin/"
cp scripts/bench/gemm16-device.py "$out/"
# name M N K: the check products (random inputs, against float64 numpy; M
# = 2000 leaves the last 128-row tile 80 rows; K = 96 and 200 (M large enough
# for the wgmma body), the last k
# tile hanging past K), ConvNeXt-T's first-stage expansion (K = 96), the transformer shapes at
# batch 32 (M = 4096 tokens; ViT-B/16's 32 x 197 = 6304) and at batch 1
# (M = 128, the table's split-K tiles), and the square one.
shapes=(
  "check_2048x1152x512 2048 1152 512"
  "check_2000x1152x512 2000 1152 512"
  "check_8000x384x96 8000 384 96"
  "check_4000x768x200 4000 768 200"
  "gemm_100352x384x96 100352 384 96"
  "gemm_6304x768x768 6304 768 768"
  "gemm_6304x3072x768 6304 3072 768"
  "gemm_128x768x768 128 768 768"
  "gemm_128x2304x768 128 2304 768"
  "gemm_128x3072x768 128 3072 768"
  "gemm_128x768x3072 128 768 3072"
  "gemm_4096x4096x4096 4096 4096 4096"
  "gemm_4096x768x768 4096 768 768"
  "gemm_4096x2304x768 4096 2304 768"
  "gemm_4096x3072x768 4096 3072 768"
  "gemm_4096x768x3072 4096 768 3072"
)
r=64
for line in "${shapes[@]}"; do
  read -r name m n k <<< "$line"
  cat > "$out/models/$name.mlir" <<MLIR
// C = (X Y) (U V), M=$m N=$n K=$k: the last GEMM reads its operands as the
// 16-bit intermediates of the first two (rank $r).
func.func @gemm(%x: tensor<1x${m}x${r}xf32>, %y: tensor<1x${r}x${k}xf32>, %u: tensor<1x${k}x${r}xf32>, %v: tensor<1x${r}x${n}xf32>) -> tensor<1x${m}x${n}xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %a = tosa.matmul %x, %y, %zp, %zp : (tensor<1x${m}x${r}xf32>, tensor<1x${r}x${k}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x${m}x${k}xf32>
  %b = tosa.matmul %u, %v, %zp, %zp : (tensor<1x${k}x${r}xf32>, tensor<1x${r}x${n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x${k}x${n}xf32>
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x${m}x${k}xf32>, tensor<1x${k}x${n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x${m}x${n}xf32>
  return %c : tensor<1x${m}x${n}xf32>
}
MLIR
  for precision in fp16 bf16; do
    mkdir -p "$out/$precision" "$out/$precision-mma"
    "$bin/tcc" compile "$out/models/$name.mlir" --target=nvidia --precision=$precision --backend=cuda -o "$out/$precision/$name.so"
    "$bin/tcc" compile "$out/models/$name.mlir" --target=nvidia --precision=$precision -o "$out/$precision-mma/$name.so"
  done
done
du -sh "$out"
