#!/bin/bash
# Device run of the TMA prototype (tma.cu): build with nvcc for sm_90a
# (ptxas -v), check the tensor-map field encodings (`tma fields`), rebuild
# with the encodings that matched, run every case in its own process under a
# timeout (a bad map faults the context), torch's TF32 matmul in the same
# run, then the device-map entries and tcc's current body through NVIDIA's
# OpenCL (tma_opencl.py). NCU_CASES (';'-separated case names): an Nsight
# Compute profile of each at 4096^3.
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
build() {
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v "$@" tma.cu -o /tmp/tma -lcuda 2>&1 |
    awk '/error|C75/ && !/C7519/ {print} /Compiling entry/ {e = $0; sub(/.*function ./, "", e); sub(/. for .*/, "", e)}
         /Used [0-9]+ registers/ && e ~ /gemm/ {sub(/.*Used/, "Used"); print e ": " $0}' | head -20
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -ptx "$@" tma.cu -o /tmp/tma.ptx 2>&1 | tail -3
}
build
timeout 60 /tmp/tma fields | tee /tmp/fields.txt
m() { grep -q "field $1 *MATCH" /tmp/fields.txt; }
flags=()
m "rank 2" && flags+=(-DTMAP_RANK_VALUE=2)
m "rank 1" && flags+=(-DTMAP_RANK_VALUE=1)
m "box0 32" && flags+=(-DTMAP_BOX_MINUS=0)
m "dim0 4096" && flags+=(-DTMAP_DIM_MINUS=0)
m "stride0 16384" && flags+=(-DTMAP_STRIDE_ORD=0 -DTMAP_STRIDE_SHIFT=0)
m "stride1 16384" && flags+=(-DTMAP_STRIDE_ORD=1 -DTMAP_STRIDE_SHIFT=0)
m "stride1 1024" && flags+=(-DTMAP_STRIDE_ORD=1 -DTMAP_STRIDE_SHIFT=4)
m "estr0 1" && flags+=(-DTMAP_ESTRIDE_MINUS=0)
echo "== encodings: ${flags[*]:-the defaults}"
if [[ ${#flags[@]} -gt 0 ]]; then
  build "${flags[@]}"
  timeout 60 /tmp/tma fields | grep "built"
fi
/tmp/tma --list | while read -r name; do
  [[ -n ${ONLY-} && $name != *$ONLY* ]] && continue
  timeout "${CASE_TIMEOUT:-40}" /tmp/tma "$name" "${REPEATS:-2}" || echo "$name: exit $?"
done
python3 torch_tf32.py "${REPEATS:-2}"
if [[ -n ${NCU_CASES-} ]]; then
  ncu=$(ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  IFS=';' read -ra cases <<< "$NCU_CASES"
  for c in "${cases[@]}"; do
    echo "-- ncu $c"
    timeout 120 "$ncu" -k regex:gemm -c 1 -s 1 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
      /tmp/tma "$c" 1 2>&1 | grep -E "Duration|Throughput|Achieved Occupancy|Registers|L2 Hit|Mem Busy" | head -16
  done
fi
timeout 120 python3 tma_opencl.py /tmp/tma.ptx 2>&1
