#!/bin/bash
# Device run of the pre-packed-operand prototype (packed.cu): build with
# nvcc for sm_90a (ptxas -v: registers per entry), every case in its own
# process under a timeout (a wrong mbarrier protocol hangs), REPEATS timings
# each, torch's TF32 matmul in the same run, then the gemm entries named in
# OPENCL_ENTRIES (regexes over the mangled names; empty for none) through
# OpenCL with their packing kernels (packed_opencl.py); NCU_CASES (case
# names, ';'-separated): an Nsight Compute profile of each at 4096^3.
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
if [[ -n ${NCU_CASES-} ]]; then  # Nsight Compute: the first gemm launch of each named case at 4096^3
  ncu=$(ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  IFS=';' read -ra cases <<< "$NCU_CASES"
  for c in "${cases[@]}"; do
    echo "-- ncu $c"
    timeout 120 "$ncu" -k regex:gemm_packed -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section MemoryWorkloadAnalysis /tmp/packed "$c" 4096 1 2>&1 |
      grep -E "Duration|Throughput|Achieved Occupancy|Registers|Block Limit|Warp Cycles Per Issued|L2 Hit|Mem Busy|Max Bandwidth" | head -24
  done
fi
python3 torch_tf32.py 3
for e in ${OPENCL_ENTRIES-}; do timeout 60 python3 packed_opencl.py /tmp/packed.ptx "$e" 2>&1 | grep -v "^device"; done
