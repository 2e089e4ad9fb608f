#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry .device-cold from
# scripts/bench/build-cold-bundle.sh): ResNet-50's cold first call, each on an
# empty tcc program cache with NVIDIA's own JIT cache off
# (CUDA_CACHE_DISABLE=1), in both kernel forms; prints the seconds
# `tcc-run --verbose` reports for getting the kernel program, then checks
# that the two forms agree.
set -uo pipefail
cd "$(dirname "$0")/../../.device-cold"
python3 -c "
import glob, lzma, os
for f in glob.glob('*.xz'):
    open(f[:-3], 'wb').write(lzma.open(f).read()); os.chmod(f[:-3], 0o755)
"
cold() { # artifact input form
  rm -rf /tmp/tcc-cold
  printf '%s %s: ' "$1" "$3"
  TCC_KERNEL_FORMAT=$3 TCC_CACHE_DIR=/tmp/tcc-cold CUDA_CACHE_DISABLE=1 \
    bin/tcc-run "$1" --input=@"$2" --output=@"/tmp/out-${1%.so}-$3.npy" --verbose 2>&1 \
    | sed -n 's/.*kernels: //p'
}
for rep in 1 2 3; do cold r50.so resnet50.input.npy ptx; done
cold r50.so resnet50.input.npy opencl-c
for rep in 1 2; do cold r50b32.so b32.npy ptx; done
# A second process on the same tcc cache: NVIDIA returns the PTX itself as
# the program binary, so a tcc disk-cache hit still runs the driver's JIT.
TCC_KERNEL_FORMAT=ptx TCC_CACHE_DIR=/tmp/tcc-cold CUDA_CACHE_DISABLE=1 \
  bin/tcc-run r50b32.so --input=@b32.npy --output=@/tmp/again.npy --verbose 2>&1 | sed -n 's/.*kernels: /r50b32.so again: /p'
python3 -c "
import numpy as np
a = np.load('/tmp/out-r50-ptx.npy'); b = np.load('/tmp/out-r50-opencl-c.npy')
print('PTX vs OpenCL C: max |diff| %.3g (max |y| %.3g)' % (abs(a - b).max(), abs(a).max()))"
