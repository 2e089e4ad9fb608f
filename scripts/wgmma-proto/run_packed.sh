#!/bin/bash
# Device run of the pre-packed-operand prototype (packed.cu): build with
# nvcc for sm_90a (ptxas -v: registers per entry), every case in its own
# process under a timeout (a wrong mbarrier protocol hangs), REPEATS timings
# each, torch's TF32 matmul in the same run, then the gemm entries named in
# OPENCL_ENTRIES (regexes over the mangled names; empty for none) through
# OpenCL with their packing kernels (packed_opencl.py).
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v packed.cu -o /tmp/packed 2>&1 |
  awk '/error|C75/ && !/C7519/ {print} /Compiling entry/ {e = $0; sub(/.*function ./, "", e); sub(/. for .*/, "", e)}
       /Used [0-9]+ registers/ && e ~ /gemm/ {sub(/.*Used/, "Used"); print e ": " $0}' | head -40
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -ptx packed.cu -o /tmp/packed.ptx 2>&1 | tail -3
/tmp/packed --list | while read -r name; do
  [[ -n ${PACKED_ONLY-} && $name != *$PACKED_ONLY* ]] && continue
  timeout "${CASE_TIMEOUT:-40}" /tmp/packed "$name" 0 "${REPEATS:-2}" || echo "$name: exit $?"
done
python3 - <<'PY'
import torch
torch.backends.cuda.matmul.allow_tf32 = True
for n in (2048, 4096):
    a = torch.rand(n, n, device="cuda") - 0.5; b = torch.rand(n, n, device="cuda") - 0.5
    for _ in range(3): a @ b
    for rep in range(3):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(); s.record()
        for _ in range(20): a @ b
        e.record(); torch.cuda.synchronize()
        ms = s.elapsed_time(e) / 20
        print(f"torch tf32 {n}: ms={ms:.3f} TF/s={2*n**3/ms/1e9:.1f}")
PY
for e in ${OPENCL_ENTRIES-}; do timeout 60 python3 packed_opencl.py /tmp/packed.ptx "$e" 2>&1 | grep -v "^device"; done
