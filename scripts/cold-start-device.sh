#!/usr/bin/env bash
# Runs on the GPU machine: the cold first call of ResNet-50 (batch 1)
# three times, each on an empty tcc program cache with NVIDIA's own JIT
# cache off (CUDA_CACHE_DISABLE=1), in both kernel forms; prints the
# seconds `tcc-run --verbose` reports for getting the kernel program.
# Expects .device/bin (scripts/build-device-bundle.sh) and
# .device-real/B/resnet50.so (tcc compile --target=nvidia of
# scripts/gen-real-models.py --shared-weights resnet50).
set -uo pipefail
cd "$(dirname "$0")/../.device-real"
python3 ../scripts/gen-real-models.py B --shared-weights resnet50 >/dev/null
for form in ptx opencl-c; do
  for run in 1 2 3; do
    rm -rf /tmp/tcc-cold
    printf '%s run %s: ' "$form" "$run"
    TCC_KERNEL_FORMAT=$form TCC_CACHE_DIR=/tmp/tcc-cold CUDA_CACHE_DISABLE=1 \
      ../.device/bin/tcc-run B/resnet50.so --input=@B/resnet50.input.npy --output=@/tmp/tcc-cold-out.npy --verbose 2>&1 \
      | sed -n 's/.*kernels: //p'
  done
done
