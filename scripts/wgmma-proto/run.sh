#!/bin/bash
# Device run of the wgmma prototype: build with nvcc for sm_90a, run the CUDA
# cases, torch's TF32 matmul in the same run, then the PTX through OpenCL
# (each kernel in its own process: a fault ends the OpenCL context).
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v proto.cu -o /tmp/proto 2>&1 | grep -E "error|C75|registers" | grep -v C7519 | head -40
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -ptx proto.cu -o /tmp/proto.ptx 2>&1 | tail -3
/tmp/proto
python3 - <<'PY'
import torch
torch.backends.cuda.matmul.allow_tf32 = True
for n in (2048, 4096):
    a = torch.rand(n, n, device="cuda") - 0.5; b = torch.rand(n, n, device="cuda") - 0.5
    for _ in range(3): a @ b
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); s.record()
    for _ in range(20): a @ b
    e.record(); torch.cuda.synchronize()
    ms = s.elapsed_time(e) / 20
    print(f"torch tf32 {n}: ms={ms:.3f} TF/s={2*n**3/ms/1e9:.1f}")
PY
for e in ${OPENCL_ENTRIES:-reference gemmhILi128ELi2ELi2ELi32ELi3ELi1ELi0ELi1}; do timeout 60 python3 opencl_run.py /tmp/proto.ptx "$e" 2>&1 | grep -v "^device\|^CL_DEVICE"; done
