#!/usr/bin/env bash
# Runs on the GPU machine (no Rust, no LLVM): measures issue 14's targets
# with the bundle scripts/bench/build-async-bundle.sh makes (.device-async/):
#
# 1. ResNet-50, batch 1, inputs uploaded each call: calls per second of
#    sequential synchronous calls (Session::run) against asynchronous ones
#    with 1 and 4 calls in flight on one session, 4 sessions sharing the
#    device's queue, and 4 sessions with a compute queue each
#    (--own-queues), plus the 4-in-flight case without pinned staging.
# 2. sgemm 4096^3 end to end (two 64 MiB inputs up, one down): synchronous
#    against 2 and 4 in flight; the synchronous run's kernel time (profiling
#    events) is the compute part, the rest of its latency the copies.
#    Every tensor is staged through pinned memory (the default 1 GiB
#    limit); the _direct cases set a 4 MiB limit, above which inputs and
#    outputs transfer straight from and to pageable memory; the
#    _fresh_outputs ones drop each call's outputs instead of recycling
#    them into the next call's.
# 3. With two or more GPUs (and models/resnet50_b16.so): a batch of 32 split
#    into two batch-16 parts on one GPU, then across two.
# 4. ResNet-50 with half storage (models/resnet50_fp16.so, `tcc compile
#    --storage=fp16`) against f32, in one run: device time and end to end,
#    and the outputs' top-1 agreement and difference on the model's image
#    and FP16_SAMPLES (16) more; at batch 32 too where the bundle has
#    models/resnet50_b32{,_fp16}.so.
#
# 5. A batch of 64 split into two batch-32 parts of models/resnet50_b32.so on
#    one GPU: when each part's submission began and ended in its call.
# 6. One session, several compute queues (session 11), each case run
#    REPEATS (3) times in turn to show the noise: ResNet-50 batch 1
#    synchronous, 1/2/4/8 in flight on one session (--compute-queues=auto:
#    one queue of its own per call in flight), 4 in flight with the
#    session's kernel objects shared by its queues (TCC_LANE_KERNELS=0),
#    with every call waiting for the runtime's queue (TCC_LANE_RUNTIME_WAIT=
#    always) and on one queue, 4 sessions with a queue each; sgemm 4096^3
#    synchronous, 1/2/4 in flight, and 2 and 4 in flight with --warmup=0 (every
#    slot's pinned staging, device buffers and output blocks allocated
#    inside the timed calls: the JSON's timed_allocations counts them).
#
# Each case prints one line: calls/s, ms per call (1000 / calls per s),
# median latency, and the ratio to the synchronous case. The raw JSON of
# every run goes to $OUT (default /tmp/tcc-async-results).
#
# Usage: async-device.sh [BUNDLE_DIR]   (default: the directory of this script)
# (R50_ITERATIONS, GEMM_ITERATIONS: timed calls per case, default 300, 30;
#  SECTIONS: which of 1 2 3 4 5 6 to run, default 1 to 5.)
set -uo pipefail
here=$(cd "${1:-$(dirname "$0")}" && pwd)
bin=$here/bin
models=$here/models
out=${OUT:-/tmp/tcc-async-results}
mkdir -p "$out"
export TCC_CACHE_DIR=${TCC_CACHE_DIR:-/tmp/tcc-async-cache}
echo "== devices"
nvidia-smi -L 2>/dev/null
"$bin/tcc-run" --list-devices | grep -E '^ *[0-9]+:' || true
# The GPUs' indices: PoCL's CPU device may be listed before them.
mapfile -t gpus < <("$bin/tcc-run" --list-devices | sed -n 's/^ *device \([0-9][0-9]*\):.*\[GPU\].*/\1/p')
ngpus=${#gpus[@]}

# bench NAME BASELINE_CALLS_PER_S MODEL ARGS...: one tcc-benchmark --json
# run; prints a line and echoes calls/s into $out/NAME.cps.
bench() {
  local name=$1 base=$2 model=$3; shift 3
  if ! "$bin/tcc-benchmark" "$models/$model" "$@" --json > "$out/$name.json" 2> "$out/$name.err"; then
    echo "$name: FAILED"; sed 's/^/    /' "$out/$name.err" | tail -5; echo 0 > "$out/$name.cps"; return
  fi
  python3 - "$out/$name.json" "$name" "$base" > "$out/$name.line" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); name = sys.argv[2]; base = float(sys.argv[3])
cps = r.get("throughput_calls_per_s") or 0.0
lat = r["latency_ms"]
extra = ""
if "device_ms_per_call" in r:
    extra = " kernels %.3f ms/call" % r["device_ms_per_call"]
for j, (b, e) in enumerate(r.get("split_part_submissions_ms") or []):
    extra += " part %d submitted %.3f-%.3f ms" % (j, b, e)
ratio = (" = %.2fx sync" % (cps / base)) if base > 0 else ""
if r.get("compute_queues_per_session") is not None:
    t = r.get("timed_allocations") or {}
    extra += " queues %d submit %.2f wait %.2f ms" % (
        r["compute_queues_per_session"], r.get("submit_ms_mean", 0), r.get("wait_ms_mean", 0))
    if t.get("staging_buffers") or t.get("device_buffers"):
        extra += " timed allocs: %d staging (%d MiB), %d device (%d MiB)" % (
            t["staging_buffers"], t["staging_bytes"] >> 20, t["device_buffers"], t["device_bytes"] >> 20)
print("%-34s %9.1f calls/s  %8.3f ms/call  median latency %8.3f ms%s%s" % (
    name, cps, 1000.0 / cps if cps else 0, lat["median"], extra, ratio))
print(cps, file=open(sys.argv[1][:-5] + ".cps", "w"))
EOF
  cat "$out/$name.line"
}
cps() { cat "$out/$1.cps" 2>/dev/null || echo 0; }

sections=${SECTIONS:-1 2 3 4 5}
[[ -e $models/resnet50.so || ! -e $models/resnet50.so.xz ]] || xz -dk "$models/resnet50.so.xz"
want() { [[ " $sections " == *" $1 "* ]]; }

R50=(resnet50.so --input=1x3x224x224xf32=0.5 --warmup=20 --iterations=${R50_ITERATIONS:-300})
if want 1 || want 2; then
echo "== cold start (kernel build; not timed below)"
"$bin/tcc-run" --prepare "$models/resnet50.so" 2>&1 | tail -4
"$bin/tcc-run" --prepare "$models/sgemm_4096.so" 2>&1 | tail -4
fi

if want 1; then
echo "== ResNet-50 batch 1, input uploaded every call"
bench r50_sync 0 "${R50[@]}"
base=$(cps r50_sync)
bench r50_async_inflight1 "$base" "${R50[@]}" --in-flight=1 --own-queues
bench r50_inflight4 "$base" "${R50[@]}" --in-flight=4
TCC_PINNED_STAGING=0 bench r50_inflight4_unpinned "$base" "${R50[@]}" --in-flight=4
bench r50_concurrency4_shared_queue "$base" "${R50[@]}" --concurrency=4
bench r50_concurrency4_own_queues "$base" "${R50[@]}" --concurrency=4 --own-queues
bench r50_concurrency2x2_own_queues "$base" "${R50[@]}" --concurrency=2 --in-flight=2 --own-queues
bench r50_concurrency8_own_queues "$base" "${R50[@]}" --concurrency=8 --own-queues
fi

if want 2; then
echo "== sgemm 4096^3 end to end (2 x 64 MiB up, 64 MiB down per call)"
G=(sgemm_4096.so --input=1x4096x4096xf32=0.5 --input=1x4096x4096xf32=0.25 --warmup=3 --iterations=${GEMM_ITERATIONS:-30})
bench sgemm_sync 0 "${G[@]}"
base=$(cps sgemm_sync)
bench sgemm_sync_fresh_outputs "$base" "${G[@]}" --fresh-outputs
bench sgemm_async_inflight1 "$base" "${G[@]}" --in-flight=1 --own-queues
bench sgemm_inflight2 "$base" "${G[@]}" --in-flight=2
bench sgemm_inflight3 "$base" "${G[@]}" --in-flight=3
bench sgemm_inflight4 "$base" "${G[@]}" --in-flight=4
bench sgemm_inflight4_fresh_outputs "$base" "${G[@]}" --in-flight=4 --fresh-outputs
TCC_STAGING_LIMIT=$((4 << 20)) bench sgemm_inflight1_direct "$base" "${G[@]}" --in-flight=1 --own-queues
TCC_STAGING_LIMIT=$((4 << 20)) bench sgemm_inflight4_direct "$base" "${G[@]}" --in-flight=4
TCC_PINNED_STAGING=0 bench sgemm_inflight4_unpinned "$base" "${G[@]}" --in-flight=4
bench sgemm_concurrency2_own_queues "$base" "${G[@]}" --concurrency=2 --own-queues
bench sgemm_concurrency2x2_own_queues "$base" "${G[@]}" --concurrency=2 --in-flight=2 --own-queues
TCC_STAGING_LIMIT=$((4 << 20)) bench sgemm_concurrency2_own_queues_direct "$base" "${G[@]}" --concurrency=2 --own-queues
bench sgemm_sync_again 0 "${G[@]}"
[[ -s $out/sgemm_sync.json ]] && python3 - "$out/sgemm_sync.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
k = r["device_ms_per_call"]; e = r["latency_ms"]["median"]
print("sgemm sync: %.2f ms end to end = %.2f ms kernels + %.2f ms copies and host work; "
      "max(copy, compute) = %.2f ms is the pipelined bound" % (e, k, e - k, max(k, e - k)))
EOF
fi

if want 6; then
  echo "== session 11: one session, several compute queues (each case ${REPEATS:-3} times, in turn)"
  "$bin/tcc-run" --prepare "$models/resnet50.so" 2>&1 | tail -1
  "$bin/tcc-run" --prepare "$models/sgemm_4096.so" 2>&1 | tail -1
  G0=(sgemm_4096.so --input=1x4096x4096xf32=0.5 --input=1x4096x4096xf32=0.25 --iterations=${GEMM_ITERATIONS:-30})
  G=("${G0[@]}" --warmup=3)
  for rep in $(seq 1 "${REPEATS:-3}"); do
    bench r50_sync_$rep 0 "${R50[@]}"
    base=$(cps r50_sync_$rep)
    bench r50_inflight1_$rep "$base" "${R50[@]}" --in-flight=1 --compute-queues=auto
    bench r50_inflight2_$rep "$base" "${R50[@]}" --in-flight=2
    bench r50_inflight4_$rep "$base" "${R50[@]}" --in-flight=4
    TCC_LANE_KERNELS=0 bench r50_inflight4_shared_kernels_$rep "$base" "${R50[@]}" --in-flight=4
    TCC_LANE_RUNTIME_WAIT=always bench r50_inflight4_runtime_wait_$rep "$base" "${R50[@]}" --in-flight=4
    bench r50_inflight4_one_queue_$rep "$base" "${R50[@]}" --in-flight=4 --compute-queues=1
    bench r50_inflight8_$rep "$base" "${R50[@]}" --in-flight=8
    bench r50_concurrency4_own_queues_$rep "$base" "${R50[@]}" --concurrency=4 --own-queues
    bench sgemm_sync_$rep 0 "${G[@]}"
    base=$(cps sgemm_sync_$rep)
    bench sgemm_inflight1_$rep "$base" "${G[@]}" --in-flight=1 --compute-queues=auto
    bench sgemm_inflight2_$rep "$base" "${G[@]}" --in-flight=2
    bench sgemm_inflight4_$rep "$base" "${G[@]}" --in-flight=4
    bench sgemm_inflight2_no_warmup_$rep "$base" "${G0[@]}" --in-flight=2 --warmup=0
    bench sgemm_inflight4_no_warmup_$rep "$base" "${G0[@]}" --in-flight=4 --warmup=0
  done
fi

if want 5 && ((ngpus >= 1)) && [[ -e $models/resnet50_b32.so ]]; then
  echo "== ResNet-50 batch 64 as two batch-32 parts on one GPU: when each part is submitted"
  "$bin/tcc-run" --prepare "$models/resnet50_b32.so" --device="${gpus[0]}" 2>&1 | tail -2
  bench r50_b32_one_call 0 resnet50_b32.so --input=32x3x224x224xf32=0.5 --device="${gpus[0]}" --warmup=5 --iterations=40
  bench r50_b64_split_one_gpu "$(cps r50_b32_one_call)" resnet50_b32.so --input=64x3x224x224xf32=0.5 --split --device="${gpus[0]}" --warmup=5 --iterations=40
fi

if ! want 3; then
  :
elif ((ngpus >= 2)) && [[ -e $models/resnet50_b16.so ]]; then
  echo "== ResNet-50 batch 32 as two batch-16 parts: one GPU (${gpus[0]}), then two (${gpus[0]},${gpus[1]})"
  S=(resnet50_b16.so --input=32x3x224x224xf32=0.5 --split --warmup=5 --iterations=50)
  "$bin/tcc-run" --prepare "$models/resnet50_b16.so" --device="${gpus[0]}" 2>&1 | tail -2
  "$bin/tcc-run" --prepare "$models/resnet50_b16.so" --device="${gpus[1]}" 2>&1 | tail -2
  bench r50_b16_one_gpu 0 resnet50_b16.so --input=16x3x224x224xf32=0.5 --device="${gpus[0]}" --warmup=5 --iterations=50
  bench r50_b32_split_one_gpu 0 "${S[@]}" --device="${gpus[0]}"
  base=$(cps r50_b32_split_one_gpu)
  bench r50_b32_split_two_gpus "$base" "${S[@]}" --device="${gpus[0]},${gpus[1]}"
  bench r50_b16_round_robin_two_gpus 0 resnet50_b16.so --input=16x3x224x224xf32=0.5 --device="${gpus[0]},${gpus[1]}" --concurrency=2 --warmup=5 --iterations=50
else
  echo "== two-GPU split skipped ($ngpus GPU(s); needs 2 and models/resnet50_b16.so from --with-batch16)"
fi
if want 4 && [[ -e $models/resnet50_fp16.so ]]; then
  echo "== ResNet-50 batch 1: half storage (--storage=fp16) against f32, one run"
  "$bin/tcc-run" --prepare "$models/resnet50_fp16.so" 2>&1 | tail -2
  H=(--input=1x3x224x224xf32=0.5 --warmup=20 --iterations=${R50_ITERATIONS:-300})
  bench r50_f32 0 resnet50.so "${H[@]}"
  base=$(cps r50_f32)
  bench r50_fp16 "$base" resnet50_fp16.so "${H[@]}"
  bench r50_f32_again 0 resnet50.so "${H[@]}"
  # The outputs on the model's image and on FP16_SAMPLES more [0, 1)
  # images of a fixed seed: top-1 agreement and relative error.
  python3 - "$models/resnet50.input.npy" "$out" "${FP16_SAMPLES:-16}" <<'EOF'
import sys
import numpy as np
image, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(15)
np.save(f"{out}/sample0.npy", np.load(image))
for i in range(1, count + 1):
    np.save(f"{out}/sample{i}.npy", rng.random((1, 3, 224, 224), dtype=np.float32))
EOF
  # Accuracy on the model with weights of its own per tensor where the
  # bundle has it (models/resnet50_full{,_fp16}.so): the shared-weights
  # model's 1000 outputs take a few dozen distinct values, so its top-1 is
  # a tie that rounding breaks either way.
  acc=resnet50
  [[ -e $models/resnet50_full_fp16.so ]] && acc=resnet50_full
  for i in $(seq 0 "${FP16_SAMPLES:-16}"); do
    for m in $acc ${acc}_fp16; do
      "$bin/tcc-run" "$models/$m.so" --input=@"$out/sample$i.npy" --output=@"$out/$m.out$i.npy" > /dev/null 2> "$out/$m.run.err" \
        || { echo "$m sample $i: run FAILED"; tail -3 "$out/$m.run.err"; }
    done
  done
  python3 - "$out" "${FP16_SAMPLES:-16}" "$acc" <<'EOF'
import sys
import numpy as np
out, count, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
same, tied, rels, diffs = 0, 0, [], []
for i in range(count + 1):
    a = np.load(f"{out}/{name}.out{i}.npy").astype(np.float64).ravel()
    b = np.load(f"{out}/{name}_fp16.out{i}.npy").astype(np.float64).ravel()
    same += int(a.argmax() == b.argmax())
    # fp16's top class is one of f32's top classes (ties included).
    tied += int(a[b.argmax()] == a.max())
    rels.append(np.linalg.norm(a - b) / np.linalg.norm(a))
    diffs.append(np.abs(a - b).max() / np.abs(a).max())
print("%s: fp16 storage vs f32 over %d images: top-1 agreement %d/%d (%d/%d counting ties), relative Frobenius "
      "error median %.2e max %.2e, max |diff| / max |f32| up to %.2e" % (
          name, count + 1, same, count + 1, tied, count + 1, np.median(rels), max(rels), max(diffs)))
EOF
  if [[ -e $models/resnet50_b32_fp16.so ]]; then
    echo "== ResNet-50 batch 32: half storage against f32"
    "$bin/tcc-run" --prepare "$models/resnet50_b32.so" 2>&1 | tail -1
    "$bin/tcc-run" --prepare "$models/resnet50_b32_fp16.so" 2>&1 | tail -1
    B=(--input=32x3x224x224xf32=0.5 --warmup=5 --iterations=50)
    bench r50_b32_f32 0 resnet50_b32.so "${B[@]}"
    bench r50_b32_fp16 "$(cps r50_b32_f32)" resnet50_b32_fp16.so "${B[@]}"
    bench r50_b32_f32_again 0 resnet50_b32.so "${B[@]}"
  fi
  ls -la "$models"/resnet50.so "$models"/resnet50_fp16.so
fi
echo "== raw JSON in $out"
