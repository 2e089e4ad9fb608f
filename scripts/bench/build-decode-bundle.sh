#!/usr/bin/env bash
# Builds .device-decode/, the bundle `scripts/bench/decode-device.py time`
# runs on the GPU machine: the static-cache GPT-2 decoders that
# `decode-device.py export` wrote there (its decode-models.tar.xz, brought
# back here), each compiled once with `tcc compile --target=nvidia
# --backend=cuda --dim batch=1..B --dim sequence=1..MAX_CACHE` (the prompt's
# step and the one-token steps run the same artifact; `--specialize
# sequence=1` adds the one-token step's static variant, and `--specialize
# batch=BUCKETS` (default 1 and the largest batch) static variants of the
# batches a server would run: their one-token steps take the flash-attention
# kernel, which needs static shapes), xz-compressed so the
# bundle travels (the weights are tiled blocks), with release tcc-run and
# tcc-benchmark.
#
#   .device-decode/art/gpt2-decode.P.so.xz   precision P (fp32: the fp32 graph; fp16: the fp16 graph)
#   .device-decode/MANIFEST.jsonl            one line per artifact: precision, artifact, max_cache
#   .device-decode/bin/                      tcc-run, tcc-benchmark (release)
#
# Usage: scripts/bench/build-decode-bundle.sh DECODE_MODELS_TAR_XZ [--max-batch=8]
#          [--batch-buckets=1,8] [--max-cache=256] [--runtime-bin=DIR] [--out=DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."

[[ $# -ge 1 ]] || { sed -n '2,20p' "$0"; exit 2; }
archive=$1; shift
max_batch=8
batch_buckets=
max_cache=256
runtime_bin=
out=.device-decode
for arg in "$@"; do
  case "$arg" in
    --max-batch=*) max_batch=${arg#--max-batch=} ;;
    --batch-buckets=*) batch_buckets=${arg#--batch-buckets=} ;;
    --max-cache=*) max_cache=${arg#--max-cache=} ;;
    --runtime-bin=*) runtime_bin=${arg#--runtime-bin=} ;;
    --out=*) out=${arg#--out=} ;;
    *) echo "build-decode-bundle.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

batch_buckets=${batch_buckets:-1,$max_batch}

export PATH=/usr/lib/llvm-22/bin:$HOME/.cargo/bin:$PATH
export MLIR_SYS_220_PREFIX=/usr/lib/llvm-22 TABLEGEN_220_PREFIX=/usr/lib/llvm-22 LLVM_SYS_221_PREFIX=/usr/lib/llvm-22
if [[ -z $runtime_bin ]]; then
  cargo build --release -p tcc-runtime --bin tcc-run --bin tcc-benchmark
  runtime_bin=target/release
fi
cargo build -p tcc-compiler --bin tcc
tcc=target/debug/tcc

rm -rf "$out"
mkdir -p "$out/art" "$out/bin"
cp "$runtime_bin/tcc-run" "$runtime_bin/tcc-benchmark" "$out/bin/"
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
tar -C "$models" -xf "$archive"
for precision in fp32 fp16; do
  onnx=$models/gpt2-decode.$precision.onnx
  [[ -f $onnx ]] || { echo "no $onnx in $archive" >&2; exit 1; }
  artifact=art/gpt2-decode.$precision.so
  "$tcc" compile "$onnx" -o "$out/$artifact" --target=nvidia --backend=cuda \
    --dim batch=1..$max_batch --dim sequence=1..$max_cache --specialize sequence=1 \
    --specialize batch=$batch_buckets
  xz -T0 -6 "$out/$artifact"
  echo "{\"precision\": \"$precision\", \"artifact\": \"$artifact\", \"max_cache\": $max_cache}" >> "$out/MANIFEST.jsonl"
done
du -sh "$out"
