#!/usr/bin/env bash
# Builds .device/, a self-contained bundle that runs the end-to-end suite's
# models on a machine with a GPU and an OpenCL driver but no LLVM/MLIR:
#
#   .device/bin/tcc-run, tcc-benchmark   the runtime CLIs (link only OpenCL, opened at run time)
#   .device/bin/tcc-compare              compares .npy outputs within a tolerance (no OpenCL needed)
#   .device/models/NAME.so               every test/models/NAME.mlir compiled with --target=$TARGET
#   .device/models/TAG.inputN.npy        the suite's deterministic inputs (tcc-e2e-inputs)
#   .device/models/TAG.expectedN.npy     outputs of the upstream-MLIR reference on those inputs
#   .device/models/MANIFEST              NAME TAG FUNCTION NUM_INPUTS NUM_OUTPUTS ABS REL, a line
#                                        per function (TAG: NAME, or NAME.FUNCTION for a model
#                                        with several functions)
#   .device/tf32/NAME.so                 (nvidia) the same models with --precision=tf32, checked
#                                        on the device by scripts/bench/check-tf32-device.py
#   .device/SKIPPED                      models left out, with the reason
#   .device/run-all.sh                   runs every model with tcc-run and checks it with tcc-compare
#
# Usage: scripts/bench/build-device-bundle.sh [--release] [--target=nvidia|generic|pocl-cpu|vulkan]
# On the device: .device/run-all.sh [--benchmark] [--device=N|NAME] [--backend=opencl|cuda|vulkan] [MODEL...]
# (--target=vulkan builds Shader SPIR-V artifacts, which run through Vulkan)
# (--backend=cuda runs every model's PTX through NVIDIA's CUDA driver instead of OpenCL)
set -euo pipefail
cd "$(dirname "$0")/../.."

profile=debug
cargo_profile=()
target=nvidia
for arg in "$@"; do
  case "$arg" in
    --release) profile=release; cargo_profile=(--release) ;;
    --target=*) target=${arg#--target=} ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "build-device-bundle.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

LLVM_PREFIX=/usr/lib/llvm-22
export PATH="$LLVM_PREFIX/bin:$HOME/.cargo/bin:$PATH"
cargo=${CARGO:-cargo}

echo "== building ($profile)"
"$cargo" build "${cargo_profile[@]}" -p tcc-compiler -p tcc-runtime -p tcc-e2e --bins
bin=target/$profile

out=.device
rm -rf "$out/models" "$out/bin" "$out/run-all.sh" "$out/SKIPPED" "$out/tf32"
mkdir -p "$out/models" "$out/bin"
cp "$bin/tcc-run" "$bin/tcc-benchmark" "$bin/tcc-compare" "$out/bin/"
: > "$out/models/MANIFEST"
: > "$out/SKIPPED"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The reference runner resolves memrefCopy (used by padded convolutions,
# pooling and tosa.pad) from the process; preloading MLIR's C runner utils
# provides it until the reference's ExecutionEngine loads that library
# itself. Harmless once it does.
reference_env=()
if [[ -e $LLVM_PREFIX/lib/libmlir_c_runner_utils.so ]]; then
  reference_env=(env "LD_PRELOAD=$LLVM_PREFIX/lib/libmlir_c_runner_utils.so")
fi

skip() { # name, reason, log
  echo "   SKIP $1: $2"
  { echo "$1: $2"; sed 's/^/    /' "$3" | head -20; } >> "$out/SKIPPED"
  rm -f "$out/models/$1".*
}

count=0
for model in test/models/*.mlir; do
  name=$(basename "$model" .mlir)
  echo "== $name"
  if ! "$bin/tcc" compile "$model" --target="$target" -o "$out/models/$name.so" > "$log" 2>&1; then
    skip "$name" "tcc compile --target=$target failed" "$log"; continue
  fi
  if ! meta=$("$bin/tcc-e2e-inputs" "$model" "$out/models/$name.so" "$out/models/$name" 2> "$log"); then
    skip "$name" "cannot write its inputs" "$log"; continue
  fi
  entries=()
  while read -r tag function num_inputs num_outputs abs rel; do
    args=()
    for ((i = 0; i < num_inputs; i++)); do args+=("--input=@$tag.input$i.npy"); done
    for ((i = 0; i < num_outputs; i++)); do args+=("--output=@$tag.expected$i.npy"); done
    if ! "${reference_env[@]}" "$bin/tcc" run "$model" --target=reference --function="$function" "${args[@]}" > "$log" 2>&1; then
      entries=(); break
    fi
    entries+=("$name $(basename "$tag") $function $num_inputs $num_outputs $abs $rel")
  done <<< "$meta"
  if ((${#entries[@]} == 0)); then
    skip "$name" "the reference run failed" "$log"; continue
  fi
  printf '%s\n' "${entries[@]}" >> "$out/models/MANIFEST"
  count=$((count + 1))
  if [[ $target == nvidia ]]; then
    mkdir -p "$out/tf32"
    if ! "$bin/tcc" compile "$model" --target=nvidia --precision=tf32 -o "$out/tf32/$name.so" > "$log" 2>&1; then
      echo "   SKIP $name (tf32): tcc compile --precision=tf32 failed"
      { echo "$name (tf32): tcc compile --precision=tf32 failed"; sed 's/^/    /' "$log" | head -20; } >> "$out/SKIPPED"
    fi
  fi
done

cat > "$out/run-all.sh" <<'EOF'
#!/usr/bin/env bash
# Runs every model of the bundle on the default OpenCL device (or
# --device=N|NAME) with tcc-run and compares its outputs with the reference
# outputs (tcc-compare, the suite's tolerance from the model's header).
# --backend=cuda runs them through NVIDIA's CUDA driver instead (the
# artifacts' PTX; --device=N is then a CUDA ordinal); --backend=opencl
# forces OpenCL, also for artifacts that would pick CUDA by themselves.
# Without --backend, $TCC_BACKEND applies, else each artifact's default.
# --benchmark also times each model with tcc-benchmark. MODEL names limit
# the run to those models. Exit status 1 if any model fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
device=()
backend=()
benchmark=0
only=()
for arg in "$@"; do
  case "$arg" in
    --device=*) device=("$arg") ;;
    --backend=opencl|--backend=cuda|--backend=vulkan) backend=("$arg") ;;
    --backend=*) echo "run-all.sh: --backend is opencl, cuda or vulkan, not ${arg#--backend=}" >&2; exit 2 ;;
    --benchmark) benchmark=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    -*) echo "run-all.sh: unknown flag $arg" >&2; exit 2 ;;
    *) only+=("$arg") ;;
  esac
done
"$here/bin/tcc-run" --list-devices "${backend[@]}" "${device[@]}" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0; failed=0; failures=()
while read -r name tag function num_inputs num_outputs abs rel; do
  if ((${#only[@]})) && [[ " ${only[*]} " != *" $name "* ]]; then continue; fi
  models="$here/models"
  inputs=(); outputs=(); pairs=()
  for ((i = 0; i < num_inputs; i++)); do inputs+=("--input=@$models/$tag.input$i.npy"); done
  for ((i = 0; i < num_outputs; i++)); do
    outputs+=("--output=@$work/$tag.got$i.npy")
    pairs+=("$work/$tag.got$i.npy" "$models/$tag.expected$i.npy")
  done
  if "$here/bin/tcc-run" "$models/$name.so" --function="$function" "${backend[@]}" "${device[@]}" "${inputs[@]}" "${outputs[@]}" > "$work/$tag.log" 2>&1 \
     && "$here/bin/tcc-compare" --abs="$abs" --rel="$rel" "${pairs[@]}" >> "$work/$tag.log" 2>&1; then
    echo "PASS $name @$function"
    passed=$((passed + 1))
  else
    echo "FAIL $name @$function"
    sed 's/^/    /' "$work/$tag.log"
    failed=$((failed + 1)); failures+=("$name@$function")
  fi
  if ((benchmark)); then
    "$here/bin/tcc-benchmark" "$models/$name.so" --function="$function" "${backend[@]}" "${device[@]}" "${inputs[@]}" --warmup=3 --iterations=20 2>&1 | sed 's/^/    /'
  fi
done < "$here/models/MANIFEST"
if [[ -s $here/SKIPPED ]]; then
  echo "not in the bundle (see $here/SKIPPED):"
  grep -v '^ ' "$here/SKIPPED" | sed 's/^/    /'
fi
echo "$passed passed, $failed failed${failures[*]:+: ${failures[*]}}${backend[*]:+ (${backend[*]})}"
((failed == 0))
EOF
chmod +x "$out/run-all.sh"

echo "== $count models in $out (target $target), $(grep -c -v '^ ' "$out/SKIPPED" || true) skipped; $(du -sh "$out" | cut -f1) in all"
if [[ -s $out/SKIPPED ]]; then grep -v '^ ' "$out/SKIPPED" | sed 's/^/   /'; fi
