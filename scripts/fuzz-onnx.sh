#!/usr/bin/env bash
# Fuzzes the ONNX importer for a bounded time: scripts/fuzz-onnx.sh
# [SECONDS] (default 60). The same as scripts/fuzz.sh import_onnx SECONDS,
# which describes the seeds, limits and where findings are kept.
exec "$(dirname "$0")/fuzz.sh" import_onnx "${1:-60}"
