#!/usr/bin/env bash
# Runs on a GPU machine with two GPUs (no Rust, no LLVM): issue 14's
# two-GPU target, ResNet-50 batch 32 split into two batch-16 parts
# (`tcc-benchmark --split`), on one GPU against two, in one run:
#
# - latency: one split call at a time (`--concurrency=1`);
# - throughput: CONC more threads of split calls at once (each thread a
#   session over the devices; default "2 4");
# - the direct upload (TCC_STAGING_LIMIT=4 MiB: the 9.6 MB parts written
#   from pageable memory instead of pinned staging).
# Each case REPEATS times (default 2). Input uploaded every call.
#
# Bundle (a folder with bin/tcc-run, bin/tcc-benchmark and
# models/resnet50_b16.so, e.g. `scripts/bench/build-async-bundle.sh
# --with-batch16`): usage `split-device.sh [BUNDLE_DIR]`.
set -uo pipefail
here=$(cd "${1:-$(dirname "$0")}" && pwd)
b=$here/bin
m=$here/models
export TCC_CACHE_DIR=${TCC_CACHE_DIR:-/tmp/tcc-split-cache}
mapfile -t gpus < <("$b/tcc-run" --list-devices | sed -n 's/^ *device \([0-9][0-9]*\):.*\[GPU\].*/\1/p')
if ((${#gpus[@]} < 2)); then
  echo "split-device.sh: needs two GPUs, found ${#gpus[@]}" >&2
  exit 1
fi
g0=${gpus[0]}
g1=${gpus[1]}
for g in "$g0" "$g1"; do "$b/tcc-run" --prepare "$m/resnet50_b16.so" --device="$g" > /dev/null 2>&1; done
split=(--input=32x3x224x224xf32=0.5 --split --warmup=10 --iterations=100 --json)
line() {
  python3 -c "import json,sys; r=json.load(sys.stdin); print('%-44s %8.1f calls/s  median latency %7.3f ms' % (sys.argv[1], r['throughput_calls_per_s'], r['latency_ms']['median']))" "$1"
}
for rep in $(seq 1 "${REPEATS:-2}"); do
  for c in 1 ${CONC:-2 4}; do
    "$b/tcc-benchmark" "$m/resnet50_b16.so" "${split[@]}" --concurrency="$c" --device="$g0" | line "rep $rep: one GPU, concurrency $c"
    "$b/tcc-benchmark" "$m/resnet50_b16.so" "${split[@]}" --concurrency="$c" --device="$g0,$g1" | line "rep $rep: two GPUs, concurrency $c"
  done
  TCC_STAGING_LIMIT=4194304 "$b/tcc-benchmark" "$m/resnet50_b16.so" "${split[@]}" --device="$g0" | line "rep $rep: one GPU, direct upload"
  TCC_STAGING_LIMIT=4194304 "$b/tcc-benchmark" "$m/resnet50_b16.so" "${split[@]}" --device="$g0,$g1" | line "rep $rep: two GPUs, direct upload"
done
