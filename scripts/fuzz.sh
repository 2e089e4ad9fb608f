#!/usr/bin/env bash
# Fuzzes tcc with cargo-fuzz (libFuzzer + AddressSanitizer) for a bounded
# time per target:
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]      (default: all, 60 s each)
#
# Targets:
#   import_onnx     the ONNX importer on bytes           (fuzz/)
#   runtime_inputs  .npy reader, tensor literals/types,
#                   program cache entries                (fuzz/)
#   mlir_compile    tcc compile on MLIR text, every phase
#                   to the gpu phase + both writers      (fuzz/mlir/)
#
# Seeds: test/onnx/models/*/model.onnx, a few .npy files and literals,
# test/models/*.mlir. Installs a nightly toolchain (rustup) and cargo-fuzz
# when they are missing. Exits non-zero when a target crashes, hangs (> the
# per-input timeout) or leaks memory; the input that did is kept under
# fuzz/artifacts/TARGET/ (fuzz/mlir/artifacts/ for mlir_compile), and then
# belongs in a regression test. The summary line of each run (executions,
# corpus size) is printed at the end.
set -euo pipefail
target=${1:-all}
seconds=${2:-60}
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$HOME/.cargo/bin:/usr/lib/llvm-22/bin:$PATH"
# cargo-fuzz needs nightly (-Zsanitizer, sancov); rustup installs it once
# (minimal profile: rustc, cargo, rust-std) beside the stable toolchain.
if ! rustup toolchain list | grep -q '^nightly'; then
    command -v rustup >/dev/null || { echo "fuzz: needs rustup to install a nightly toolchain" >&2; exit 2; }
    echo "fuzz: installing the nightly toolchain (rustup, minimal profile)"
    rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
    cargo +nightly install cargo-fuzz --locked
fi

seed_import_onnx() {
    for model in test/onnx/models/*/model.onnx; do
        cp "$model" "$1/seed-$(basename "$(dirname "$model")").onnx"
    done
}

seed_runtime_inputs() {
    printf '2x3xf32=1,2,3,4,5,6' > "$1/seed-literal"
    printf '2x3xf32=[1 2 3][4 5 6]' > "$1/seed-literal-brackets"
    printf 'i1=true' > "$1/seed-bool"
    # .npy files of each dtype (version 1 header, as numpy writes them).
    python3 - "$1" <<'PY'
import struct, sys
def npy(descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data
for name, descr, shape, data in [
    ("f32", "<f4", "(2, 3)", struct.pack("<6f", 1, 2, 3, 4, 5, 6)),
    ("i64", "<i8", "(2,)", struct.pack("<2q", -1, 7)),
    ("bool", "|b1", "(3,)", b"\x01\x00\x01"),
    ("scalar", "<f2", "()", b"\x00\x3c"),
]:
    open(f"{sys.argv[1]}/seed-{name}.npy", "wb").write(npy(descr, shape, data))
PY
}

seed_mlir_compile() {
    for model in test/models/*.mlir; do
        # Keep the seeds quick to compile: skip the models with big weights.
        if [ "$(stat -c %s "$model")" -lt 20000 ]; then
            cp "$model" "$1/seed-$(basename "$model")"
        fi
    done
}

run_target() {
    local name=$1 dir=$2 max_len=$3 timeout=$4
    local corpus=$root/$dir/corpus/$name
    mkdir -p "$corpus"
    "seed_$name" "$corpus"
    echo "== fuzz $name for $seconds s ($dir)"
    local log=$root/$dir/fuzz-$name.log status=0
    (
        cd "$root/$dir"
        # -rss_limit_mb / -malloc_limit_mb: an input that makes tcc
        # allocate without bound is a finding too.
        cargo +nightly fuzz run --fuzz-dir "$root/$dir" "$name" "$corpus" -- \
            -max_total_time="$seconds" -max_len="$max_len" -timeout="$timeout" \
            -rss_limit_mb=4096 -malloc_limit_mb=2048 -print_final_stats=1
    ) > "$log" 2>&1 || status=$?
    grep -E '^#[0-9]+.*DONE|^stat::|SUMMARY|^==[0-9]+==' "$log" || true
    if [ "$status" -ne 0 ]; then
        echo "fuzz: $name failed (exit $status); the log is $log" >&2
        tail -40 "$log" >&2
    fi
    return "$status"
}

status=0
case $target in
    import_onnx | all) run_target import_onnx fuzz 65536 10 || status=1 ;;&
    runtime_inputs | all) run_target runtime_inputs fuzz 65536 10 || status=1 ;;&
    # MLIR's and LLVM's libraries are not instrumented, but the C++ of
    # tcc-dialects is (cc passes -fsanitize=address under cargo-fuzz), and
    # the linker keeps one copy of LLVM's inline allocator templates: the
    # instrumented BumpPtrAllocator poisons each new slab, the libraries'
    # uninstrumented fast path never unpoisons what it hands out, and
    # MLIRContext's constructor then reads "poisoned" memory. Manual
    # poisoning is therefore off for this target (redzones, the
    # interceptors and use-after-free detection stay on).
    mlir_compile | all) ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allow_user_poisoning=0 \
        run_target mlir_compile fuzz/mlir 16384 60 || status=1 ;;&
    import_onnx | runtime_inputs | mlir_compile | all) ;;
    *)
        echo "fuzz: unknown target '$target' (import_onnx, runtime_inputs, mlir_compile, all)" >&2
        exit 2
        ;;
esac
exit $status
