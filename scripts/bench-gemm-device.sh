#!/bin/bash
# Runs on the GPU machine: the SGEMM and dense-layer benchmark models
# (scripts/gen-bench-models.py, compiled here with --target=nvidia into
# .device/bench/) with tcc-benchmark in both kernel forms (PTX, OpenCL C),
# then the same products in PyTorch/cuBLAS (scripts/torch_baseline.py),
# in one run. Prints one line per case and form, then cuBLAS's JSON lines.
set -uo pipefail
cd "$(dirname "$0")/.."
dev=.device
for fmt in ptx opencl-c; do
  export TCC_KERNEL_FORMAT=$fmt
  b() { local m=$1 f=$2; shift 2; local a=(); for i in "$@"; do a+=("--input=$i"); done; r=$($dev/bin/tcc-benchmark $dev/bench/$m.so "${a[@]}" --warmup=3 --iterations=20 --flops=$f --json 2>/dev/null); python3 -c "import json,sys;r=json.loads(sys.argv[1]);print('$fmt','$m','device_ms=%.3f'%r['device_ms_per_call'],'TF/s=%.1f'%(r['gflops']['device']/1000))" "$r"; }
  b sgemm_1024 $((2*1024**3)) 1x1024x1024xf32=0.5 1x1024x1024xf32=0.25
  b sgemm_2048 $((2*2048**3)) 1x2048x2048xf32=0.5 1x2048x2048xf32=0.25
  b sgemm_4096 $((2*4096**3)) 1x4096x4096xf32=0.5 1x4096x4096xf32=0.25
  b dense_512x1024x1024 $((2*512*1024*1024)) 1x512x1024xf32=0.5 1x1024x1024xf32=0.25 1x1x1024xf32=0.1
  b dense_2048x1024x4096 $((2*2048*1024*4096)) 1x2048x1024xf32=0.5 1x1024x4096xf32=0.25 1x1x4096xf32=0.1
  for m in softmax_4096x1024 rowsum_4096x1024; do
    r=$($dev/bin/tcc-benchmark $dev/bench/$m.so --input=4096x1024xf32=0.5 --warmup=3 --iterations=20 --json 2>/dev/null)
    python3 -c "import json,sys;r=json.loads(sys.argv[1]);print('$fmt','$m','device_us=%.1f'%(r['device_ms_per_call']*1000))" "$r"
  done
done
unset TCC_KERNEL_FORMAT
python3 scripts/torch_baseline.py 2>&1 | tail -12
