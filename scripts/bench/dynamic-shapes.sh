#!/bin/bash
# One dynamic artifact against static ones (issue 33): builds, for an ONNX
# model whose inputs declare a dynamic batch (`dim_param`), the artifact
# compiled with `--dim batch=1..MAX` alone (generic), the same with
# `--specialize batch=B1,B2,...` (the buckets' static variants inside it),
# and one static artifact per bucket (`--input-shape`); then, on the machine
# that runs them, checks every artifact's output against onnxruntime (fp32,
# relative Frobenius error) at each bucket and at one batch between
# buckets, and times them side by side (`tcc-benchmark`, median end to end
# and device time).
#
#   bash scripts/bench/dynamic-shapes.sh build OUT MODEL.onnx [--max=64] [--buckets=1,8,32]
#        [--between=5] [--target=nvidia] [--backend=cuda] [--precision=fp32] [--runtime-bin=DIR]
#        [--fix=NAME=VALUE]... [--seq-max=512 --seq-buckets=128,384 --points=1x128,8x384]
#   bash scripts/bench/dynamic-shapes.sh time OUT [--backend=cuda] [--iterations=50]
#
# `build` runs here (it needs tcc; the artifacts and the model are
# xz-compressed into OUT, with tcc-run and tcc-benchmark from DIR, default
# a release build); `time` runs where the device is (python3 with numpy
# and onnxruntime). For the GPU machine, OUT is a folder the device tool
# carries (e.g. .device-dyn, listed in .git/info/exclude).
# `--fix=sequence=128` gives another dynamic dimension one value (`tcc
# compile --fix-dim`; the static artifacts' shapes take it too). With
# `--seq-max=S` the `sequence` dimension stays symbolic too (`--dim
# sequence=1..S`), `--seq-buckets` are its `--specialize` values (every
# combination with the batch buckets is a variant), the static artifacts
# and the measured shapes are `--points` (BATCHxSEQUENCE), and `--between`
# takes a BATCHxSEQUENCE between buckets.
# Token inputs (integer element types) get random ids below 1000, and an
# input named like a mask is ones with the last row's last quarter zero.
# Models: an export with a dynamic batch, e.g. test/onnx/dynamic/models.py's
# `python3 models.py bench DIR` (a 4-layer hidden-768 encoder), or a
# torchvision export whose first dimension is renamed to `batch`.
set -euo pipefail

command=${1:-}
shift || true
case $command in
build)
  out=$1 model=$2
  shift 2
  max=64 buckets=1,8,32 between=5 target=nvidia backend=cuda precision=fp32 runtime_bin= fixes=()
  seq_max= seq_buckets= points=
  for arg in "$@"; do
    case $arg in
      --max=*) max=${arg#--max=} ;;
      --buckets=*) buckets=${arg#--buckets=} ;;
      --between=*) between=${arg#--between=} ;;
      --target=*) target=${arg#--target=} ;;
      --backend=*) backend=${arg#--backend=} ;;
      --precision=*) precision=${arg#--precision=} ;;
      --runtime-bin=*) runtime_bin=${arg#--runtime-bin=} ;;
      --fix=*) fixes+=("${arg#--fix=}") ;;
      --seq-max=*) seq_max=${arg#--seq-max=} ;;
      --seq-buckets=*) seq_buckets=${arg#--seq-buckets=} ;;
      --points=*) points=${arg#--points=} ;;
      *) echo "unknown option $arg" >&2; exit 2 ;;
    esac
  done
  # The measured shapes: batches, or BATCHxSEQUENCE with a symbolic sequence.
  dim_flags=(--dim batch=1..$max) specialize=(--specialize batch=$buckets)
  if [[ -n $seq_max ]]; then
    dim_flags+=(--dim sequence=1..$seq_max)
    specialize+=(--specialize sequence=$seq_buckets)
  else
    points=$buckets
  fi
  fix_flags=()
  for f in "${fixes[@]}"; do fix_flags+=(--fix-dim "$f"); done
  if [[ -z $runtime_bin ]]; then
    cargo build --release -p tcc-runtime --bin tcc-run --bin tcc-benchmark
    runtime_bin=target/release
  fi
  cargo build -p tcc-compiler --bin tcc
  tcc=target/debug/tcc
  mkdir -p "$out/bin" "$out/a"
  cp "$runtime_bin/tcc-run" "$runtime_bin/tcc-benchmark" "$out/bin/"
  strip "$out/bin/"* 2>/dev/null || true
  flags=(--target="$target" --precision="$precision")
  [[ $backend == cuda ]] && flags+=(--backend=cuda)
  # The inputs naming the batch, and their shapes after it.
  inputs=$(python3 - "$model" "${fixes[@]}" <<'PY'
import onnx, sys
g = onnx.load(sys.argv[1], load_external_data=False).graph
fixed = dict(f.split("=") for f in sys.argv[2:])
init = {i.name for i in g.initializer}
for i in g.input:
    if i.name in init:
        continue
    dims = [fixed.get(d.dim_param, d.dim_param) or str(d.dim_value) for d in i.type.tensor_type.shape.dim]
    if dims and dims[0] == "batch":
        print(i.name + "=" + "x".join(dims[1:]))
PY
)
  "$tcc" compile "$model" "${dim_flags[@]}" "${fix_flags[@]}" "${flags[@]}" -o "$out/a/generic.so"
  "$tcc" compile "$model" "${dim_flags[@]}" "${fix_flags[@]}" "${specialize[@]}" "${flags[@]}" -o "$out/a/specialized.so"
  for p in ${points//,/ }; do
    b=${p%%x*} seq=${p#*x}
    shapes=()
    for spec in $inputs; do
      rest=${spec#*=}
      [[ $p == *x* ]] && rest=${rest//sequence/$seq}
      shapes+=(--input-shape "${spec%%=*}=${b}x${rest}")
    done
    "$tcc" compile "$model" "${shapes[@]}" "${flags[@]}" -o "$out/a/static$p.so"
  done
  echo "$points" > "$out/buckets" && echo "$between" > "$out/between"
  printf '%s\n' "${fixes[@]}" > "$out/fixed"
  xz -T2 -6 -f "$out"/a/*.so
  xz -T2 -6 -k -c "$model" > "$out/model.onnx.xz"
  du -sh "$out"
  ;;
time)
  out=$1
  shift
  backend=cuda iterations=50
  for arg in "$@"; do
    case $arg in
      --backend=*) backend=${arg#--backend=} ;;
      --iterations=*) iterations=${arg#--iterations=} ;;
      *) echo "unknown option $arg" >&2; exit 2 ;;
    esac
  done
  cd "$out"
  for f in a/*.so.xz model.onnx.xz; do xz -d -k -f "$f"; done
  chmod +x bin/*
  buckets=$(cat buckets) between=$(cat between)
  python3 - "$buckets,$between" <<'PY'
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
fixed = dict(l.split("=") for l in open("fixed").read().split())
for point in sys.argv[1].split(","):
    b, _, seq = point.partition("x")
    b = int(b)
    feeds = {}
    for k, i in enumerate(s.get_inputs()):
        shape = [b] + [int(seq) if d == "sequence" and seq else int(fixed.get(d, d)) for d in i.shape[1:]]
        rng = np.random.default_rng(b * 10 + k)
        integer = "int" in i.type
        dtype = np.int64 if "int64" in i.type else np.int32 if integer else np.float32
        if "mask" in i.name:
            v = np.ones(shape, dtype); v[-1, 3 * shape[1] // 4:] = 0
        elif integer:
            v = rng.integers(0, 1000, shape).astype(dtype)
        else:
            v = rng.uniform(-1, 1, shape).astype(dtype)
        feeds[i.name] = v
        np.save(f"in{point}_{k}.npy", v)
    np.save(f"want{point}.npy", s.run(None, feeds)[0])
PY
  ninputs=$(ls in${between}_*.npy | wc -l)
  args() { for ((k = 0; k < ninputs; k++)); do echo "--input=@in$1_$k.npy"; done; }
  echo "== output against onnxruntime fp32 (relative Frobenius error), --backend=$backend"
  for b in ${buckets//,/ } $between; do
    for a in specialized generic static$b; do
      [[ -f a/$a.so ]] || continue
      ./bin/tcc-run "a/$a.so" --backend="$backend" $(args "$b") --output=@got.npy > /dev/null
      python3 -c "import numpy as np; g=np.load('got.npy').astype(np.float32); w=np.load('want$b.npy'); print('shape $b $a', np.linalg.norm(g-w)/max(np.linalg.norm(w),1e-30))"
    done
  done
  echo "== tcc-benchmark --backend=$backend (median end to end | device time per call), ms"
  for b in ${buckets//,/ } $between; do
    for a in static$b specialized generic; do
      [[ -f a/$a.so ]] || continue
      ./bin/tcc-benchmark "a/$a.so" --backend="$backend" $(args "$b") --warmup=10 --iterations="$iterations" 2>&1 \
        | awk -v what="shape $b $a" '/latency end-to-end/ {e=$7} /device time per call/ {d=$6} END {print what, e, d}'
    done
  done
  ;;
*)
  sed -n '2,25p' "$0"
  exit 2
  ;;
esac
