#!/usr/bin/env bash
# Runs on the GPU machine from a bundle of scripts/build-wgmma-bundle.sh:
# ptxas -v of the tf32 SGEMM's PTX (sm_90a: registers, spills), the tf32
# and fp32 SGEMMs on random inputs against numpy (relative Frobenius error
# against float64, and which kernel form ran), then in one run tcc's
# SGEMM/dense TF/s at tf32 and fp32 (tcc-benchmark, device time) and
# torch's (cuBLAS) TF32 matmul and addmm+relu; with WGMMA_NCU=1 the tf32
# SGEMM's PTX through the CUDA driver and one Nsight Compute profile of it;
# with WGMMA_PROTO=1 also the nvcc prototype (scripts/wgmma-proto/run.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
python3 -c "
import glob, lzma, os
for f in glob.glob('*/*.xz'):
    open(f[:-3], 'wb').write(lzma.open(f).read()); os.chmod(f[:-3], 0o755); os.remove(f)
"
export PATH=/usr/local/cuda/bin:$PATH
# TF32_DIRS: the folders of tf32 artifacts to check and time (variants
# side by side: tf32 and any tf32-* folder built beside it).
tf32_dirs=${TF32_DIRS:-tf32}
for d in $tf32_dirs; do
  echo "== ptxas -v, $d sgemm_4096 (sm_90a)"
  ptxas -arch=sm_90a -v $d/sgemm_4096.ptx -o /tmp/sgemm.cubin 2>&1 | grep -E "registers|spill|error|C75" | head
  cuobjdump -sass /tmp/sgemm.cubin 2>/dev/null | grep -oE "HGMMA[.A-Z0-9x]*|HMMA[.A-Z0-9]*" | sort | uniq -c
done
echo "== correctness on random inputs (relative Frobenius error against float64)"
python3 - <<'PY'
import os, subprocess, numpy as np
for n in (2048, 4096):
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (1, n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (1, n, n)).astype(np.float32)
    np.save("/tmp/a.npy", a); np.save("/tmp/b.npy", b)
    ref = a[0].astype(np.float64) @ b[0].astype(np.float64)
    for p in os.environ.get("TF32_DIRS", "tf32").split() + ["fp32"]:
        r = subprocess.run(["bin/tcc-run", f"{p}/sgemm_{n}.so", "--verbose", "--input=@/tmp/a.npy", "--input=@/tmp/b.npy",
                            "--output=@/tmp/c.npy"], capture_output=True, text=True)
        if r.returncode:
            print(p, n, "FAILED", r.stderr[-500:]); continue
        form = "PTX" if "kernels: PTX" in r.stderr else "OpenCL C"
        c = np.load("/tmp/c.npy")[0].astype(np.float64)
        print(f"{p} sgemm_{n} ({form}): rel error {np.linalg.norm(c - ref) / np.linalg.norm(ref):.2e}, max |diff| {abs(c - ref).max():.3g}")
PY
# REPEATS: how many times the timing below runs (tcc and torch each time).
for rep in $(seq "${REPEATS:-1}"); do
echo "== tcc (device time) and torch, one run ($rep)"
b() { local p=$1 m=$2 f=$3; shift 3; local a=(); for i in "$@"; do a+=("--input=$i"); done; r=$(bin/tcc-benchmark $p/$m.so "${a[@]}" --warmup=3 --iterations=20 --flops=$f --json 2>/dev/null); python3 -c "import json,sys;r=json.loads(sys.argv[1]);print('tcc $p','$m','device_ms=%.3f'%r['device_ms_per_call'],'TF/s=%.1f'%(r['gflops']['device']/1000))" "$r"; }
for p in $tf32_dirs fp32; do
  b $p sgemm_2048 $((2*2048**3)) 1x2048x2048xf32=0.5 1x2048x2048xf32=0.25
  b $p sgemm_4096 $((2*4096**3)) 1x4096x4096xf32=0.5 1x4096x4096xf32=0.25
  b $p dense_2048x1024x4096 $((2*2048*1024*4096)) 1x2048x1024xf32=0.5 1x1024x4096xf32=0.25 1x1x4096xf32=0.1
done
python3 - <<'PY'
import torch
for tf32 in (True, False):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    for name, (m, k, n) in [("sgemm_2048", (2048,) * 3), ("sgemm_4096", (4096,) * 3), ("dense_2048x1024x4096", (2048, 1024, 4096))]:
        a = torch.rand(m, k, device="cuda"); b = torch.rand(k, n, device="cuda"); bias = torch.rand(n, device="cuda")
        f = (lambda: torch.relu(torch.addmm(bias, a, b))) if name.startswith("dense") else (lambda: a @ b)
        for _ in range(3): f()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(); s.record()
        for _ in range(20): f()
        e.record(); torch.cuda.synchronize()
        ms = s.elapsed_time(e) / 20
        print(f"torch {'tf32' if tf32 else 'fp32'} {name} ms={ms:.3f} TF/s={2*m*n*k/ms/1e9:.1f}")
PY
done
if [[ ${WGMMA_NCU:-0} == 1 ]]; then
  ncu=$(ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for d in ${NCU_DIRS:-$tf32_dirs}; do
    echo "== $d sgemm_4096 through the CUDA driver (ncu: ${ncu:-not found})"
    python3 proto/cuda_run.py $d/sgemm_4096.ptx 4096
    [[ -n $ncu ]] && timeout 120 "$ncu" -k batch_matmul_0 -c 1 --section SpeedOfLight --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section Occupancy \
      --metrics breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
      python3 proto/cuda_run.py $d/sgemm_4096.ptx 4096 1 2>&1 |
      grep -E "Throughput|Duration|Block Limit|Stall|Warp Cycles|L2 Hit|Mem Busy|Max Bandwidth|Registers|Achieved Occ|Issue Slots|Executed Ipc|l1tex__|gmma" | head -60
  done
fi
if [[ ${WGMMA_PROTO:-0} == 1 ]]; then
  echo "== nvcc prototype"
  bash proto/run.sh
fi
