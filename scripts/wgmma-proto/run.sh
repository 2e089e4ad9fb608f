#!/bin/bash
# Device run of the wgmma prototype: build with nvcc for sm_90a, run the CUDA
# cases, torch's TF32 matmul in the same run, then (NCU=1, where Nsight
# Compute exists) one profile of each case named in NCU_CASES at 2048^3, then
# the PTX through OpenCL (each kernel in its own process: a fault ends the
# OpenCL context; OPENCL_ENTRIES, empty for none).
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v proto.cu -o /tmp/proto 2>&1 | grep -E "error|C75|registers|spill" | grep -v C7519 | grep -v " 0 bytes spill" | head -60
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -ptx proto.cu -o /tmp/proto.ptx 2>&1 | tail -3
/tmp/proto
python3 torch_tf32.py
if [[ ${NCU:-0} == 1 ]]; then
  ncu=$(ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  echo "== ncu: ${ncu:-not found}"
  if [[ -n $ncu ]]; then
    IFS=';' read -ra cases <<< "${NCU_CASES:-S 128x2x1 ks32}"
    for c in "${cases[@]}"; do
      echo "-- $c"
      timeout 120 "$ncu" -k 'regex:gemm[hp]' -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats \
        --section MemoryWorkloadAnalysis /tmp/proto "$c" 2048 2>&1 |
        grep -E "Throughput|Duration|Achieved Occupancy|Block Limit|Stall|Warp Cycles|L2 Hit|Mem Busy|Max Bandwidth|Registers|Theoretical Occ|Executed Ipc|Issue Slots|est\. speedup|^ *[A-Z][a-z]+ [A-Za-z ]+ +%" | head -45
    done
  fi
fi
for e in ${OPENCL_ENTRIES-reference gemmhILi128ELi2ELi2ELi32ELi3ELi1ELi0ELi1}; do timeout 60 python3 opencl_run.py /tmp/proto.ptx "$e" 2>&1 | grep -v "^device\|^CL_DEVICE"; done
