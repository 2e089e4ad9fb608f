#!/usr/bin/env bash
# Builds a bundle for timing every distinct ResNet-50 convolution shape at
# batch 1 against cuDNN on an NVIDIA GPU (scripts/conv-shapes-device.py
# runs it there): the per-shape model of `gen-conv-layer-models.py
# --resnet50` compiled --target=nvidia by this checkout's tcc ("table"), by
# OLD_BIN/tcc ("old") when given, and once per CONFIG with that GEMM
# configuration forced on every layer by a tuning record (`tcc compile
# --tuning-db`). CONFIG is TMxTNxTK-WMxWN-SPLIT (e.g. 32x64x16-4x4-2).
# shapes/MANIFEST.json names, per variant, the kernel that runs each layer
# and its configuration, read from the kernels the compiler emits
# (`--emit=opencl-c`: each GEMM kernel's "tile" comment names its M, N and
# K, and kernels are numbered in graph order), so nothing is matched by
# flop counts. Artifacts are xz-compressed (the trip carries <= 64 MiB).
#
# --nhwc: every variant also as "nhwc-VARIANT", the layers with NHWC inputs
# and outputs (`gen-conv-layer-models.py --nhwc`), whose kernels read and
# write channels-last activations as they do inside ResNet-50 (the NCHW
# models read their input through a folded transpose, strided in K).
# --resnet50: ResNet-50 itself at batch 1 (`gen-real-models.py
# --shared-weights`), compiled by this tcc (resnet50/table.so) and OLD_BIN's
# (resnet50/old.so), for the device script's end-to-end rows.
#
# Usage: scripts/build-conv-shapes-bundle.sh [--nhwc] [--resnet50] OUT [OLD_BIN] [CONFIG...]
# On the device: python3 OUT/conv-shapes-device.py OUT [--repeats=N] (it unpacks the .xz)
set -euo pipefail
cd "$(dirname "$0")/.."
layouts=(nchw)
resnet50=
while [[ ${1:-} == --* ]]; do
  case $1 in
    --nhwc) layouts+=(nhwc) ;;
    --resnet50) resnet50=1 ;;
    *) echo "build-conv-shapes-bundle.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
out=$1
old_bin=${2:-}
shift $(( $# < 2 ? $# : 2 ))
bin=target/debug
rm -rf "$out"
mkdir -p "$out/bin" "$out/shapes"
cp "$bin/tcc-run" "$bin/tcc-benchmark" "$out/bin/"
strip "$out/bin/"* 2>/dev/null || true
cp scripts/conv-shapes-device.py scripts/gen-conv-layer-models.py scripts/cuda_graph_timing.py \
  scripts/cuda_timing.py scripts/gen-real-models.py "$out/"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 scripts/gen-conv-layer-models.py "$work/layers-nchw.onnx" --resnet50
python3 scripts/gen-conv-layer-models.py "$work/layers-nhwc.onnx" --resnet50 --nhwc
configs=(table)
[[ -n $old_bin ]] && configs+=(old)
configs+=("$@")
variants=()
for layout in "${layouts[@]}"; do
  for config in "${configs[@]}"; do
    variant=$config
    [[ $layout == nhwc ]] && variant=nhwc-$config
    variants+=("$variant")
    tcc=$bin/tcc
    args=()
    [[ $config == old ]] && tcc=$old_bin/tcc
    if [[ $config == *-* ]]; then
      python3 - "$config" "$work/$config.json" <<'PY'
import importlib.util, json, re, sys
spec = importlib.util.spec_from_file_location("gen", "scripts/gen-conv-layer-models.py")
gen = importlib.util.module_from_spec(spec); spec.loader.exec_module(gen)
tm, tn, tk, wm, wn, split = map(int, re.split("[x-]", sys.argv[1]))
shapes = sorted({gen.gemm_shape(layer) for layer, _ in gen.RESNET50})
json.dump({"version": 1, "device": "forced", "driver": "", "target": "nvidia",
           "gemms": [{"kind": "convolution", "shape": [1, m, n, k], "config": [tm, tn, tk, wm, wn, split],
                      "best_ms": 0.0, "default_ms": 0.0} for m, n, k in shapes]}, open(sys.argv[2], "w"))
PY
      args=("--tuning-db=$work/$config.json")
    fi
    model=$work/layers-$layout.onnx
    "$tcc" compile "$model" --target=nvidia "${args[@]}" -o "$out/shapes/$variant.so"
    "$tcc" compile "$model" --target=nvidia "${args[@]}" --emit=opencl-c -o "$work/cl-$variant" > /dev/null
  done
done
python3 - "$work" "$out/shapes/MANIFEST.json" "${variants[@]}" <<'PY'
import glob, importlib.util, json, os, re, sys
spec = importlib.util.spec_from_file_location("gen", "scripts/gen-conv-layer-models.py")
gen = importlib.util.module_from_spec(spec); spec.loader.exec_module(gen)
work, path, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
layers = [list(layer) + [count] for layer, count in gen.RESNET50]
manifest = {"layers": layers, "variants": {}}
for variant in variants:
    kernels = []
    for source in glob.glob(os.path.join(work, f"cl-{variant}", "*.cl")):
        text = open(source).read()
        tile = re.search(r"/\* tile (\d+)x(\d+)x(\d+), (\d+)x(\d+) outputs per work-item; M=(\d+) N=(\d+) K=(\d+)", text)
        if tile is None:
            continue
        name = os.path.basename(source)[:-3]
        split = re.search(r"get_group_id\(2\) % (\d+)\)", text)
        tm, tn, tk, wm, wn, m, n, k = map(int, tile.groups())
        config = f"{tm}x{tn}x{tk}, {wm}x{wn}" + (f", {split.group(1)} slices" if split else "")
        kernels.append((int(name.rsplit("_", 1)[1]), name, (m, n, k), config))
    kernels.sort()
    expected = [gen.gemm_shape(layer) for layer, _ in gen.RESNET50]
    found = [shape for _, _, shape, _ in kernels]
    if found != expected:
        sys.exit(f"{variant}: the GEMM kernels' shapes {found} are not the layers' {expected}")
    manifest["variants"][variant] = {"kernels": [name for _, name, _, _ in kernels],
                                     "configs": {str(i): c for i, (_, _, _, c) in enumerate(kernels)}}
json.dump(manifest, open(path, "w"), indent=1)
PY
if [[ -n $resnet50 ]]; then
  mkdir -p "$out/resnet50"
  python3 scripts/gen-real-models.py "$work/r50" --shared-weights resnet50 > /dev/null
  "$bin/tcc" compile "$work/r50/resnet50.onnx" --target=nvidia -o "$out/resnet50/table.so"
  [[ -n $old_bin ]] && "$old_bin/tcc" compile "$work/r50/resnet50.onnx" --target=nvidia -o "$out/resnet50/old.so"
  xz -T2 -3 "$out"/resnet50/*.so
fi
xz -T2 -3 "$out"/shapes/*.so
du -sh "$out"
