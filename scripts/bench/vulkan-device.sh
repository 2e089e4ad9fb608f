#!/usr/bin/env bash
# Runs on the GPU machine (no Rust, no LLVM; NVIDIA's driver with its Vulkan
# ICD and Debian's libvulkan1): issue 34's Vulkan checks, from the bundle of
# scripts/bench/build-vulkan-bundle.sh.
#
# 1. Every e2e model through Vulkan (`run-all.sh --backend=vulkan`), each
#    output compared with the upstream-MLIR reference (tcc-compare).
# 2. ResNet-50 and BERT-base at batch 1 and 32: tcc-benchmark's median
#    latency through Vulkan and through the CUDA backend, and the ratio
#    (the target: Vulkan within 1.5x of CUDA).
#
# It runs what the bundle holds: the e2e part (models.tar.xz) and the
# timing part (timing.tar.xz), unpacked beside this script first. The
# Vulkan loader is the machine's where ldconfig knows libvulkan.so.1, else
# the bundle's lib/libvulkan.so.1 (TCC_VULKAN_LOADER); NVIDIA's ICD is
# named through VK_DRIVER_FILES where the loader would not find it.
#
# At the end, one `target:` line per model and batch: Vulkan's time over
# CUDA's, the bound (1.5x) and met / NOT met (or why it was not measured).
#
# Usage: vulkan-device.sh [BUNDLE_DIR] (default: this script's folder).
# ITERATIONS (default 50) and WARMUP (default 10) set the timing runs;
# BATCHES (e.g. 1) and MODELS (e.g. resnet50) keep only those rows (to
# check the script on lavapipe, where CUDA's column fails: no driver).
set -uo pipefail
here=$(cd "${1:-$(dirname "$0")}" && pwd)
b=$here/bin
export TCC_CACHE_DIR=${TCC_CACHE_DIR:-/tmp/tcc-vulkan-cache}
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then
  export TCC_VULKAN_LOADER=${TCC_VULKAN_LOADER:-$here/lib/libvulkan.so.1}
  echo "== no libvulkan.so.1 known to ldconfig: the bundle's loader $TCC_VULKAN_LOADER"
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [[ -z ${VK_DRIVER_FILES:-} && -e $icd ]] && ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* > /dev/null 2>&1; then
  export VK_DRIVER_FILES=$icd
fi
for archive in models timing; do
  if [[ -e $here/$archive.tar.xz && ! -d $here/$archive ]]; then
    tar -C "$here" -xJf "$here/$archive.tar.xz" || exit 1
  fi
done
echo "== devices"
"$b/tcc-run" --list-devices --backend=vulkan || exit 1
"$b/tcc-run" --list-devices --backend=cuda || true
e2e=0
if [[ -d $here/models ]]; then
  echo "== e2e models through Vulkan"
  "$here/run-all.sh" --backend=vulkan
  e2e=$?
else
  echo "== e2e models: not in this bundle (build-vulkan-bundle.sh --part=e2e)"
fi
if [[ ! -d $here/timing ]]; then
  echo "== timing: not in this bundle (build-vulkan-bundle.sh --part=timing)"
  exit $e2e
fi
echo "== timing (median ms; Vulkan / CUDA)"
median() {
  python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['latency_ms']['median'])" 2> /dev/null
}
printf '%-10s %5s %12s %12s %8s\n' model batch vulkan_ms cuda_ms ratio
targets=()
while read -r model batch flags; do
  [[ -n ${BATCHES:-} && ,$BATCHES, != *,$batch,* ]] && continue
  [[ -n ${MODELS:-} && ,$MODELS, != *,$model,* ]] && continue
  read -ra inputs <<< "$flags"
  times=()
  for kind in vulkan cuda; do
    artifact=$here/timing/$model.b$batch.$kind.so
    if [[ -e $artifact ]]; then
      t=$("$b/tcc-benchmark" "$artifact" --backend="$kind" "${inputs[@]}" \
            --warmup="${WARMUP:-10}" --iterations="${ITERATIONS:-50}" --json 2> "$here/timing/$model.b$batch.$kind.log" | median) || t=failed
    else
      t=missing
    fi
    times+=("${t:-failed}")
  done
  ratio=$(python3 -c "import sys
try: print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))
except ValueError: print('-')" "${times[0]}" "${times[1]}")
  printf '%-10s %5s %12s %12s %8s\n' "$model" "$batch" "${times[0]}" "${times[1]}" "$ratio"
  if [[ $ratio == - ]]; then
    targets+=("target: $model batch $batch, Vulkan / CUDA time: not measured (vulkan ${times[0]}, cuda ${times[1]}; logs in timing/$model.b$batch.*.log)")
  else
    verdict=$(python3 -c "import sys; print('met' if float(sys.argv[1]) <= 1.5 else 'NOT met')" "$ratio")
    targets+=("target: $model batch $batch, Vulkan / CUDA time = ${ratio}x (<= 1.5x: $verdict)")
  fi
done < "$here/INPUTS"
echo "== issue 34's Vulkan targets"
printf '%s\n' "${targets[@]}"
[[ -s $here/FAILED ]] && { echo "== not compiled"; cat "$here/FAILED"; }
exit $e2e
