#!/usr/bin/env bash
# Builds .device-dlpack/, the bundle scripts/bench/dlpack-cuda-device.py
# checks on the GPU machine (DLPack exchange with torch.cuda tensors on the
# CUDA backend, issue 35 item 5):
#
#   .device-dlpack/python/tcc/        the Python package (the native module as tcc/_tcc.abi3.so)
#   .device-dlpack/models/NAME.so     test/models' mlp, cnn, residual_mlp, int_arith and
#                                     transformer_block compiled with `tcc compile --target=nvidia`
#
# Usage: scripts/bench/build-dlpack-bundle.sh [--out=DIR]
# On the device (from a checkout, with the bundle carried; torch with CUDA installed):
#   python3 scripts/bench/dlpack-cuda-device.py .device-dlpack
set -euo pipefail
cd "$(dirname "$0")/../.."

out=.device-dlpack
for arg in "$@"; do
  case "$arg" in
    --out=*) out=${arg#--out=} ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "build-dlpack-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

LLVM_PREFIX=/usr/lib/llvm-22
export PATH="$LLVM_PREFIX/bin:$HOME/.cargo/bin:$PATH"
export MLIR_SYS_220_PREFIX=$LLVM_PREFIX TABLEGEN_220_PREFIX=$LLVM_PREFIX LLVM_SYS_221_PREFIX=$LLVM_PREFIX
cargo=${CARGO:-cargo}

echo "== building the compiler and the Python module (debug)"
"$cargo" build --locked -p tcc-compiler --bin tcc
"$cargo" build --locked --manifest-path runtime/python/Cargo.toml --target-dir target/python

rm -rf "$out"
mkdir -p "$out/python/tcc" "$out/models"
cp runtime/python/python/tcc/* "$out/python/tcc/"
cp target/python/debug/lib_tcc.so "$out/python/tcc/_tcc.abi3.so"

echo "== compiling the models (--target=nvidia)"
for name in mlp cnn residual_mlp int_arith transformer_block; do
  target/debug/tcc compile "test/models/$name.mlir" --target=nvidia -o "$out/models/$name.so"
done
echo "== $out: $(ls "$out"/models/*.so | wc -l) artifacts, $(du -sh "$out" | cut -f1)"
echo "   on the device: python3 scripts/bench/dlpack-cuda-device.py $out"
