#!/usr/bin/env bash
# Runs on the GPU machine (no Rust, no LLVM): measures issue 34's CUDA
# targets with the bundle scripts/bench/build-cuda-parity-bundle.sh makes
# (.device-cuda-parity/), through the driver-neutral core's CUDA driver:
#
# 1. The default: an artifact with PTX runs through CUDA where NVIDIA's
#    driver is (the one line tcc-run says), and --backend=opencl still
#    chooses OpenCL.
# 2. ResNet-50, batch 1: sequential synchronous calls (one CudaSession,
#    CUDA graphs replayed) against 2, 4 and 8 calls in flight
#    (`--in-flight=N`: N sessions, each on a stream of its own, from the
#    core's lanes). Target: 4 in flight >= 1.4x sequential.
# 3. The module cache: the first session's cuModuleLoadDataEx with the
#    driver's JIT cache off (CUDA_CACHE_DISABLE=1: ptxas runs) and on (a
#    second process: the driver's disk cache), and the 4 lanes' sessions
#    (one driver load, three taken from the runtime's module cache).
# 4. With two or more GPUs: ResNet-50 at batch 32 on one GPU against a
#    batch of 64 split into two batch-32 parts across two GPUs (--split),
#    one run, both figures; items per second compared. Target: >= 1.9x.
#    Also whole batch-32 calls round robin on two GPUs, 2 in flight each.
#
# Each case prints one line: calls/s, items/s, mean latency, the ratio to
# its baseline. The raw JSON of every run goes to $OUT (default
# /tmp/tcc-cuda-parity-results).
#
# Sections 1-3 run where the bundle holds models/resnet50.so, section 4
# where it holds models/resnet50_b32.so (both, from models.tar.xz, which
# this script unpacks first). At the end, one `target:` line per target of
# issue 34 this bundle measures: the figure, the bound and met / NOT met.
#
# Usage: cuda-parity-device.sh [BUNDLE_DIR]   (default: the directory of this script)
# (ITERATIONS: timed calls per batch-1 case, default 300; SPLIT_ITERATIONS:
#  per batch-32/64 case, default 40.)
set -uo pipefail
here=$(cd "${1:-$(dirname "$0")}" && pwd)
bin=$here/bin
models=$here/models
out=${OUT:-/tmp/tcc-cuda-parity-results}
mkdir -p "$out"
export TCC_CACHE_DIR=${TCC_CACHE_DIR:-/tmp/tcc-cuda-parity-cache}
if [[ -e $here/models.tar.xz && ! -d $models ]]; then
  tar -C "$here" -xJf "$here/models.tar.xz" || exit 1
fi
iterations=${ITERATIONS:-300}
split_iterations=${SPLIT_ITERATIONS:-40}
echo "== devices"
nvidia-smi -L 2>/dev/null
"$bin/tcc-run" --list-devices --backend=cuda
ngpus=$("$bin/tcc-run" --list-devices --backend=cuda | grep -c '^CUDA device')

# bench NAME BASELINE_ITEMS_PER_S BATCH MODEL ARGS...: one tcc-benchmark
# --json run on the CUDA backend; prints a line and echoes items/s (calls/s
# times BATCH, the images of one call) into $out/NAME.ips.
bench() {
  local name=$1 base=$2 batch=$3 model=$4; shift 4
  if ! "$bin/tcc-benchmark" "$models/$model" --backend=cuda "$@" --json > "$out/$name.json" 2> "$out/$name.err"; then
    echo "$name: FAILED"; sed 's/^/    /' "$out/$name.err" | tail -5; echo 0 > "$out/$name.ips"; return
  fi
  python3 - "$out/$name.json" "$name" "$base" "$out/$name.ips" "$batch" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); name = sys.argv[2]; base = float(sys.argv[3])
cps = r["throughput_calls_per_s"]
ips = cps * int(sys.argv[5])
lat = r["latency_ms"]["mean"]
extra = ""
if "module_cache" in r:
    extra += " sessions opened in %.3f s, module cache %s" % (r["open_seconds"], r["module_cache"])
if "program_seconds" in r:
    extra += " module load %.3f s" % r["program_seconds"]
ratio = (" = %.2fx baseline" % (ips / base)) if base > 0 else ""
print("%-28s %9.1f calls/s %10.1f items/s  mean %.3f ms%s%s" % (name, cps, ips, lat, ratio, extra))
open(sys.argv[4], "w").write("%f\n" % ips)
PY
}
ips() { cat "$out/$1.ips" 2>/dev/null || echo 0; }

if [[ -e $models/resnet50.so ]]; then
echo "== 1. the default backend for an artifact with PTX"
"$bin/tcc-run" "$models/resnet50.so" --input=@"$models/resnet50.input.npy" --print-max-elements=3 2>&1 | grep -E 'CUDA backend|result' | head -3
"$bin/tcc-run" "$models/resnet50.so" --input=@"$models/resnet50.input.npy" --backend=opencl --verbose 2>&1 | grep -E 'CUDA|OpenCL|device' | head -3

echo "== 2. ResNet-50 batch 1: sequential against calls in flight"
R=(resnet50.so --input=@"$models/resnet50.input.npy" --warmup=20 --iterations="$iterations")
bench r50_b1_sequential 0 1 "${R[@]}"
base=$(ips r50_b1_sequential)
for n in 2 4 8; do
  bench "r50_b1_in_flight_$n" "$base" 1 "${R[@]}" --in-flight="$n"
done

echo "== 3. the module cache (the first session's module load)"
CUDA_CACHE_DISABLE=1 bench r50_b1_jit_cold 0 1 resnet50.so --input=@"$models/resnet50.input.npy" --warmup=1 --iterations=5
bench r50_b1_jit_driver_cache 0 1 resnet50.so --input=@"$models/resnet50.input.npy" --warmup=1 --iterations=5

else
  echo "== 1-3. skipped: no models/resnet50.so in this bundle (built with --split)"
fi

if ((ngpus >= 2)) && [[ -e $models/resnet50_b32.so ]]; then
  echo "== 4. two GPUs: batch 32 on one, a batch of 64 split across two"
  bench r50_b32_one_gpu 0 32 resnet50_b32.so --input=32x3x224x224xf32=0.5 --device=0 --warmup=5 --iterations="$split_iterations"
  base=$(ips r50_b32_one_gpu)
  bench r50_b64_split_two_gpus "$base" 64 resnet50_b32.so --input=64x3x224x224xf32=0.5 --split --device=0,1 --warmup=5 --iterations="$split_iterations"
  bench r50_b32_round_robin_two_gpus "$base" 32 resnet50_b32.so --input=32x3x224x224xf32=0.5 --device=0,1 --in-flight=2 --warmup=5 --iterations="$split_iterations"
else
  echo "== 4. skipped: $ngpus CUDA device(s) (the split needs two) or no models/resnet50_b32.so"
fi
# target NAME FIGURE BOUND: "target: NAME = FIGUREx (>= BOUNDx: met|NOT met)".
target() {
  python3 - "$@" <<'PY'
import sys
name, figure, bound = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
verdict = "met" if figure >= bound else "NOT met"
print("target: %s = %.2fx (>= %.1fx: %s)" % (name, figure, bound, verdict))
PY
}
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(a / b if b > 0 else 0)" "$1" "$2"; }
echo "== issue 34's targets"
if [[ -e $out/r50_b1_sequential.ips && -e $out/r50_b1_in_flight_4.ips ]]; then
  target "CUDA ResNet-50 batch 1, 4 calls in flight / sequential" "$(ratio "$(ips r50_b1_in_flight_4)" "$(ips r50_b1_sequential)")" 1.4
fi
if [[ -e $out/r50_b32_one_gpu.ips && -e $out/r50_b64_split_two_gpus.ips ]]; then
  target "CUDA ResNet-50 two GPUs, batch 64 split / one GPU batch 32 (items/s)" "$(ratio "$(ips r50_b64_split_two_gpus)" "$(ips r50_b32_one_gpu)")" 1.9
fi
echo "== raw results in $out"
