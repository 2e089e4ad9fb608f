#!/usr/bin/env bash
# Soak test: runs one function many times in one tcc-benchmark process and
# samples the process's resident memory, open file descriptors and threads
# while it runs, to show they stay flat.
#
#   scripts/soak.sh MODEL.so FUNCTION ITERATIONS [INTERVAL_S] [-- --input=...]
#
# e.g. scripts/soak.sh target/soak/mlp.so mlp 1000000 10 -- --input=1x4x16xf32=0.5
# Prints one line per sample (seconds, RSS in MiB, fds, threads) and the
# benchmark's report; exits with the benchmark's status. Uses the debug
# build's tcc-benchmark unless TCC_BENCHMARK names another.
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,11p' "$0" >&2
    exit 2
fi
model=$1 function=$2 iterations=$3
interval=${4:-10}
shift $(( $# >= 4 ? 4 : 3 ))
[ "${1:-}" = "--" ] && shift
cd "$(dirname "$0")/.."
bench=${TCC_BENCHMARK:-target/debug/tcc-benchmark}
report=$(mktemp)
"$bench" "$model" --function="$function" --warmup=10 --iterations="$iterations" "$@" > "$report" &
pid=$!
start=$(date +%s)
printf '%8s %10s %6s %8s\n' seconds rss_mib fds threads
while kill -0 "$pid" 2>/dev/null; do
    if [ -r "/proc/$pid/status" ]; then
        rss=$(awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status" 2>/dev/null || true)
        threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
        fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
        [ -n "$rss" ] && printf '%8d %10s %6s %8s\n' $(( $(date +%s) - start )) "$rss" "$fds" "$threads"
    fi
    sleep "$interval"
done
status=0
wait "$pid" || status=$?
cat "$report"
rm -f "$report"
exit $status
