#!/usr/bin/env bash
# Real models on the CPU: tcc on PoCL (--target=pocl-cpu) next to
# onnxruntime's CPU provider and IREE's llvm-cpu back end, the same ONNX
# graphs (the light CNNs with random weights from
# scripts/bench/gen-real-models.py) on the same machine in one run. Prints the
# kernel count, tcc's first-call time (program build included, fresh
# cache), the three median end-to-end latencies and tcc's ratios, one
# table row per model. IREE imports with `iree-import-onnx
# --opset-version 17` and compiles for this host's CPU; its median is of
# 20 calls through its Python runtime (`local-task`, all cores) after 3
# warm-ups, as onnxruntime's.
#
#   bash scripts/bench/bench-cpu-models.sh [OUT_DIR] [MODEL...]   (default target/bench-cpu-models)
#
# TUNING=FILE compiles with `tcc compile --tuning=FILE` (a `tcc tune`
# record, e.g. tuning/pocl-cpu-skylake-avx512.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-target/bench-cpu-models}
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(squeezenet shufflenet resnet50 inception_v1 densenet121)
python3 -c "import onnxruntime" 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check onnxruntime
IREE_VERSION=3.13.0
python3 -c "import iree.compiler, iree.runtime" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check \
    "iree-base-compiler[onnx]==$IREE_VERSION" "iree-base-runtime==$IREE_VERSION"
make -s build >&2
bin=target/debug
mkdir -p "$out"
python3 scripts/bench/gen-real-models.py "$out" "${models[@]}" >/dev/null
# Both program caches empty: the first call builds every kernel.
export TCC_CACHE_DIR="$out/cache" POCL_CACHE_DIR="$out/pocl-cache"
rm -rf "$TCC_CACHE_DIR" "$POCL_CACHE_DIR"
echo "CPU: $(nproc) cores, $(python3 -c 'import onnxruntime; print("onnxruntime", onnxruntime.__version__)')"
echo "| model | tcc kernels | tcc first call s | tcc ms | onnxruntime ms | IREE ms | tcc / onnxruntime | tcc / IREE |"
echo "|---|---|---|---|---|---|---|---|"
for model in "${models[@]}"; do
  kernels=$("$bin/tcc" compile "$out/$model.onnx" --target=pocl-cpu ${TUNING:+--tuning="$TUNING"} --stats -o "$out/$model.so" 2>&1 | sed -n 's/^kernels: //p')
  start=$(date +%s.%N)
  "$bin/tcc-run" "$out/$model.so" --device=pthread --input=@"$out/$model.input.npy" >/dev/null
  first=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  tcc=$("$bin/tcc-benchmark" "$out/$model.so" --device=pthread --input=@"$out/$model.input.npy" \
      --warmup=1 --iterations=5 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["latency_ms"]["median"])')
  ort=$(python3 - "$out/$model.onnx" "$out/$model.input.npy" <<'PY'
import sys, time
import numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
x = {s.get_inputs()[0].name: np.load(sys.argv[2])}
for _ in range(3):
    s.run(None, x)
times = []
for _ in range(20):
    t = time.perf_counter(); s.run(None, x); times.append(time.perf_counter() - t)
print(sorted(times)[len(times) // 2] * 1e3)
PY
)
  iree-import-onnx "$out/$model.onnx" --opset-version 17 -o "$out/$model.iree.mlir" >&2
  iree-compile "$out/$model.iree.mlir" --iree-hal-target-device=local \
    --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host \
    -o "$out/$model.vmfb" >&2
  iree=$(python3 - "$out/$model.vmfb" "$out/$model.input.npy" <<'PY'
import sys, time
import numpy as np, iree.runtime as rt
context = rt.SystemContext(config=rt.Config("local-task"))
with open(sys.argv[1], "rb") as f:
    module = rt.VmModule.copy_buffer(context.instance, f.read())
context.add_vm_module(module)
name = next(n for n in module.function_names if "$" not in n and not n.startswith("__"))
function = context.modules.module[name]
x = np.load(sys.argv[2])
for _ in range(3):
    np.asarray(function(x))
times = []
for _ in range(20):
    t = time.perf_counter(); np.asarray(function(x)); times.append(time.perf_counter() - t)
print(sorted(times)[len(times) // 2] * 1e3)
PY
)
  python3 -c "import sys; m,k,f,t,o,i=sys.argv[1:]; t,o,i=float(t),float(o),float(i); print(f'| {m} | {k} | {f} | {t:.1f} | {o:.1f} | {i:.1f} | {t/o:.1f}x | {t/i:.2f}x |')" "$model" "$kernels" "$first" "$tcc" "$ort" "$iree"
done
