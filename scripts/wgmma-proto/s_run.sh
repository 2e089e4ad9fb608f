#!/bin/bash
# Device run for session 14: variant S of tma.cu (B through local memory,
# CUDA dynamic shared memory) beside T (tcc's body) and torch, then the
# OpenCL/CUDA file-descriptor interop probe.
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v tma.cu -o /tmp/tma -lcuda 2>&1 |
  awk '/error|C75/ && !/C7519/ {print} /Compiling entry/ {e = $0; sub(/.*function ./, "", e); sub(/. for .*/, "", e)}
       /Used [0-9]+ registers/ && e ~ /gemms/ {sub(/.*Used/, "Used"); print e ": " $0}' | head -30
/tmp/tma --list | while read -r name; do
  [[ $name == "T bm128 wg2 uk32 units2 per1 tm0" || $name == S* ]] || continue
  [[ -n ${ONLY-} && $name != *$ONLY* ]] && continue
  timeout "${CASE_TIMEOUT:-40}" /tmp/tma "$name" "${REPEATS:-2}" || echo "$name: exit $?"
done
python3 torch_tf32.py "${REPEATS:-2}"
timeout 120 python3 interop_fd_probe.py 2>&1
