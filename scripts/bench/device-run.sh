#!/usr/bin/env bash
# Runs on the GPU machine (no Rust, no LLVM): the end-to-end models with
# tcc-run on NVIDIA's OpenCL, then the benchmarks side by side with
# PyTorch/cuBLAS. Expects .device/ from scripts/bench/build-device-bundle.sh plus
# .device/bench/*.so from scripts/bench/gen-bench-models.py + tcc compile.
set -uo pipefail
cd "$(dirname "$0")/../.."
dev=.device
export TCC_CACHE_DIR=/tmp/tcc-cache
echo "== devices"; nvidia-smi -L; "$dev/bin/tcc-run" --list-devices
echo "== end-to-end models on the default device"
"$dev/run-all.sh" 2>&1 | tail -n 60
echo "== benchmarks (tcc)"
bench() { # model, flops, inputs...
  local model=$1 flops=$2; shift 2
  local args=(); for i in "$@"; do args+=("--input=$i"); done
  "$dev/bin/tcc-benchmark" "$dev/bench/$model.so" "${args[@]}" --warmup=3 --iterations=20 --flops="$flops" --json
}
bench sgemm_1024 $((2*1024**3)) 1x1024x1024xf32=0.5 1x1024x1024xf32=0.25
bench sgemm_2048 $((2*2048**3)) 1x2048x2048xf32=0.5 1x2048x2048xf32=0.25
bench sgemm_4096 $((2*4096**3)) 1x4096x4096xf32=0.5 1x4096x4096xf32=0.25
bench dense_512x1024x1024 $((2*512*1024*1024)) 1x512x1024xf32=0.5 1x1024x1024xf32=0.25 1x1x1024xf32=0.1
bench dense_2048x1024x4096 $((2*2048*1024*4096)) 1x2048x1024xf32=0.5 1x1024x4096xf32=0.25 1x1x4096xf32=0.1
"$dev/bin/tcc-benchmark" "$dev/bench/softmax_4096x1024.so" --input=4096x1024xf32=0.5 --warmup=3 --iterations=20 --json
"$dev/bin/tcc-benchmark" "$dev/bench/rowsum_4096x1024.so" --input=4096x1024xf32=0.5 --warmup=3 --iterations=20 --json
echo "== benchmarks (second run of sgemm_1024: program from the disk cache)"
bench sgemm_1024 $((2*1024**3)) 1x1024x1024xf32=0.5 1x1024x1024xf32=0.25
echo "== benchmarks (PyTorch / cuBLAS, fp32, no TF32)"
python3 scripts/bench/torch_baseline.py
