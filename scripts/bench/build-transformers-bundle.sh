#!/usr/bin/env bash
# Builds .device-tx/, the bundle `scripts/bench/transformers-device.py time` runs
# on the GPU machine: the models that `transformers-device.py export`
# wrote there (its tx-models.tar.xz, brought back here), compiled with
# `tcc compile --target=nvidia` per batch and precision (a dynamic export's
# axes fixed with --input-shape), xz-compressed so
# the bundle travels (the weights are tiled blocks), with release tcc-run
# and tcc-benchmark.
#
#   .device-tx/tx-models.tar.xz     the ONNX files (onnxruntime's reference there)
#   .device-tx/art/M.bB.P.so.xz     model M, batch B, precision P
#   .device-tx/MANIFEST.jsonl       one line per artifact: model, batch, precision, artifact, inputs
#   .device-tx/bin/                 tcc-run, tcc-benchmark (release)
#   .device-tx/FAILED               what did not compile, with the reason
#
# Usage: scripts/bench/build-transformers-bundle.sh TX_MODELS_TAR_XZ [--batches=1,32]
#          [--precisions=fp32,fp16] [--runtime-bin=DIR] [--cuda] [--out=DIR] [MODEL...]
# --runtime-bin=DIR takes tcc-run and tcc-benchmark from DIR (built
# already) instead of building them with --release here. --cuda compiles
# with --backend=cuda (kernels for the CUDA driver: dynamic local memory,
# the large TF32 and the FP16/BF16 wgmma GEMM bodies); --out=DIR writes
# the bundle there instead of .device-tx.
# There: `for f in .device-tx/art/*.xz; do unxz -k $f; done` is done by
#        `python3 scripts/bench/transformers-device.py time .device-tx`.
set -euo pipefail
cd "$(dirname "$0")/../.."

[[ $# -ge 1 ]] || { sed -n '2,18p' "$0"; exit 2; }
archive=$1; shift
batches=1,32
precisions=fp32
runtime_bin=
backend=()
out=.device-tx
models=()
for arg in "$@"; do
  case "$arg" in
    --batches=*) batches=${arg#--batches=} ;;
    --precisions=*) precisions=${arg#--precisions=} ;;
    --runtime-bin=*) runtime_bin=${arg#--runtime-bin=} ;;
    --cuda) backend=(--backend=cuda) ;;
    --out=*) out=${arg#--out=} ;;
    -*) echo "build-transformers-bundle.sh: unknown option $arg" >&2; exit 2 ;;
    *) models+=("$arg") ;;
  esac
done

export PATH=/usr/lib/llvm-22/bin:$HOME/.cargo/bin:$PATH
export MLIR_SYS_220_PREFIX=/usr/lib/llvm-22 TABLEGEN_220_PREFIX=/usr/lib/llvm-22 LLVM_SYS_221_PREFIX=/usr/lib/llvm-22
if [[ -z $runtime_bin ]]; then
  cargo build --release -p tcc-runtime --bin tcc-run --bin tcc-benchmark
  runtime_bin=target/release
fi
cargo build -p tcc-compiler --bin tcc
tcc=target/debug/tcc

rm -rf "$out"
mkdir -p "$out/art" "$out/bin" "$out/onnx"
cp "$runtime_bin/tcc-run" "$runtime_bin/tcc-benchmark" "$out/bin/"
cp "$archive" "$out/tx-models.tar.xz"
tar -C "$out/onnx" -xf "$archive"
[[ ${#models[@]} -gt 0 ]] || models=($(ls "$out/onnx" | sed -n 's/\.onnx$//p'))
: > "$out/MANIFEST.jsonl"
: > "$out/FAILED"

# The graph inputs of a model, in order, with their batch-1 shapes (NAME=AxB...);
# an export with dynamic axes (`transformers-device.py export --dynamic`) has
# its `batch` at 1 here and its `sequence` at 128.
inputs_of() {
  python3 - "$1" <<'EOF'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
values = {"batch": 1, "sequence": 128}
for i in m.graph.input:
    if i.name not in inits:
        dims = []
        for d in i.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif d.dim_param in values:
                dims.append(values[d.dim_param])
            else:
                sys.exit(f"{sys.argv[1]}: input {i.name} has the dynamic dimension '{d.dim_param}'")
        print(i.name + "=" + "x".join(map(str, dims)))
EOF
}

for model in "${models[@]}"; do
  onnx=$out/onnx/$model.onnx
  mapfile -t inputs < <(inputs_of "$onnx")
  names=$(printf '"%s",' "${inputs[@]%%=*}")
  for batch in ${batches//,/ }; do
    shapes=()
    for input in "${inputs[@]}"; do
      shapes+=("--input-shape=${input%%=*}=$batch${input#*=1}")
    done
    for precision in ${precisions//,/ }; do
      flags=()
      case "$precision" in
        fp32) ;;
        tf32) flags=(--precision=tf32) ;;
        fp16) flags=(--precision=fp16 --storage=fp16) ;;
        bf16) flags=(--precision=bf16) ;;
        *) echo "unknown precision $precision" >&2; exit 2 ;;
      esac
      art=art/$model.b$batch.$precision.so
      echo "== $model batch $batch $precision"
      start=$(date +%s)
      if "$tcc" compile "$onnx" --target=nvidia "${shapes[@]}" "${flags[@]}" "${backend[@]}" -o "$out/$art" 2> "$out/log"; then
        xz -T0 -1 -f "$out/$art"
        echo "   $(( $(date +%s) - start )) s, $(du -h "$out/$art.xz" | cut -f1) compressed"
        printf '{"model":"%s","batch":%s,"precision":"%s","artifact":"%s","inputs":[%s]}\n' \
          "$model" "$batch" "$precision" "$art" "${names%,}" >> "$out/MANIFEST.jsonl"
      else
        echo "   FAILED: $(tail -1 "$out/log")"
        { echo "$model b$batch $precision:"; tail -5 "$out/log" | sed 's/^/    /'; } >> "$out/FAILED"
      fi
    done
  done
done
rm -rf "$out/onnx" "$out/log"
du -sh "$out"
