#!/usr/bin/env bash
# Fuzzes the ONNX importer with cargo-fuzz (libFuzzer + AddressSanitizer)
# for a bounded time: scripts/fuzz-onnx.sh [SECONDS] (default 60).
# Seeds: the hand-made models of test/onnx/models. Needs a nightly
# toolchain; installs cargo-fuzz when it is missing. Exits non-zero when
# the importer crashes, hangs (> 10 s on one input) or leaks memory; the
# input that did is kept under fuzz/artifacts/import_onnx/.
set -euo pipefail
seconds=${1:-60}
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz-onnx: needs a nightly toolchain (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! command -v cargo-fuzz >/dev/null; then
    cargo +nightly install cargo-fuzz --locked
fi
corpus=fuzz/corpus/import_onnx
mkdir -p "$corpus"
for model in test/onnx/models/*/model.onnx; do
    cp "$model" "$corpus/seed-$(basename "$(dirname "$model")").onnx"
done
cd fuzz
# -rss_limit_mb / -malloc_limit_mb: a model that makes the importer
# allocate without bound is a finding too.
cargo +nightly fuzz run import_onnx "../$corpus" -- \
    -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=4096 -malloc_limit_mb=2048 -print_final_stats=1
