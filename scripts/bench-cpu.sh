#!/usr/bin/env bash
# CPU comparison: tcc on PoCL (--target=pocl-cpu) against onnxruntime's CPU
# provider, the same ONNX graphs on the same machine in one run.
#
#   bash scripts/bench-cpu.sh [OUT_DIR]        (default target/bench-cpu)
#
# Prints one table row per case: median end-to-end call latency of both
# (tcc-benchmark's "latency end-to-end" includes the input copy, as
# onnxruntime's session.run does) and the ratio onnxruntime / tcc (> 1:
# tcc is faster); for the sgemm cases also numpy's (OpenBLAS) median for
# the same product and numpy / tcc. onnxruntime is installed from PyPI if
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/bench-cpu}
ORT_VERSION=1.31.1
if ! python3 -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$ORT_VERSION')" 2>/dev/null; then
  echo "bench-cpu: installing onnxruntime==$ORT_VERSION from PyPI" >&2
  python3 -m pip install --quiet --disable-pip-version-check "onnxruntime==$ORT_VERSION"
fi
make -s build >&2
bin=target/debug
python3 scripts/cpu_baseline.py models "$out" >/dev/null
export TCC_CACHE_DIR="$out/cache"
declare -A tcc_ms
for model in "$out"/*.onnx; do
  case_name=$(basename "$model" .onnx)
  "$bin/tcc" compile "$model" --target=pocl-cpu -o "$out/$case_name.so"
  mapfile -t inputs <"$out/$case_name.inputs"
  tcc_ms[$case_name]=$("$bin/tcc-benchmark" "$out/$case_name.so" --device=pthread \
      "${inputs[@]}" --warmup=3 --iterations=20 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["latency_ms"]["median"])')
done
device=$(clinfo -l 2>/dev/null | sed -n 's/.*Device #0: //p' | head -1)
echo "CPU: $(nproc) cores, PoCL device '$device', onnxruntime $ORT_VERSION"
printf '| %-24s | %12s | %16s | %14s | %10s | %12s |\n' case "tcc ms" "onnxruntime ms" "ort / tcc" "numpy ms" "numpy / tcc"
python3 scripts/cpu_baseline.py time "$out"/*.onnx | while read -r line; do
  case_name=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["case"])' "$line")
  python3 - "$case_name" "${tcc_ms[$case_name]}" "$line" <<'PY'
import json, sys
name, tcc, timing = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
ort, numpy = timing["median_ms"], timing["numpy_ms"]
blas = ("-", "-") if numpy is None else (f"{numpy:.3f}", f"{numpy / tcc:.2f}")
print(f"| {name:<24} | {tcc:12.3f} | {ort:16.3f} | {ort / tcc:14.2f} | {blas[0]:>10} | {blas[1]:>12} |")
PY
done
