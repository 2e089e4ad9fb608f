#!/usr/bin/env bash
# Installs what tcc needs from Debian's archive, skipping what is present.
# A second run finds everything installed and returns in a second or two.
set -euo pipefail

packages=(
  # LLVM/MLIR 22 (static libraries, tablegen, lit/FileCheck, clang for the C++ shim, lld)
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libpolly-22-dev
  clang-22 libclang-22-dev lld-22
  # libclc: OpenCL built-ins as bitcode, linked into the PTX for NVIDIA
  libclc-22
  # libraries LLVM links against
  zlib1g-dev libzstd-dev libffi-dev libxml2-dev libedit-dev libcurl4-openssl-dev
  # OpenCL: ICD loader, headers, PoCL (CPU device), clinfo; SPIR-V validator
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo spirv-tools
  # Vulkan: the loader and Mesa's lavapipe (a CPU device), for --target=vulkan
  libvulkan1 mesa-vulkan-drivers
  # python3 runs LLVM's lit
  python3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deps: all ${#packages[@]} packages present"
fi

# The onnx package (PyPI) carries the ONNX backend test data the ONNX
# scoreboard runs (compiler/tests/onnx_scoreboard.rs).
ONNX_VERSION=1.23.2
if ! python3 -c "import onnx, sys; sys.exit(onnx.__version__ != '$ONNX_VERSION')" 2>/dev/null; then
  echo "deps: installing onnx==$ONNX_VERSION from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check "onnx==$ONNX_VERSION"
fi

# ml_dtypes (onnx's dependency) computes the node suite's expected outputs
# of casts to the 4- and 2-bit integers (test_castlike_FLOAT_to_UINT4 and
# its kin: out-of-range values, which ONNX leaves to the implementation).
# 0.5 and 0.6 wrap them modulo the type's range, as tcc does; 0.7 turns
# them into 0, so the pinned version keeps the suite's expectations
# stable on a fresh machine.
ML_DTYPES_VERSION=0.6.0
if ! python3 -c "import ml_dtypes, sys; sys.exit(ml_dtypes.__version__ != '$ML_DTYPES_VERSION')" 2>/dev/null; then
  echo "deps: installing ml_dtypes==$ML_DTYPES_VERSION from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check "ml_dtypes==$ML_DTYPES_VERSION"
fi

# onnxruntime runs the lowered graphs of the dynamic-shape tests
# (test/onnx/dynamic/run_lowered.py, compiler/tests/dynamic_shapes.rs): the
# dispatch phase's graph at every batch against the original's output.
ORT_VERSION=1.32.0
if ! python3 -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$ORT_VERSION')" 2>/dev/null; then
  echo "deps: installing onnxruntime==$ORT_VERSION from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check "onnxruntime==$ORT_VERSION"
fi

# pytest runs the Python module's tests (runtime/python/tests, driven by
# compiler/tests/python.rs); numpy comes with onnx.
if ! python3 -c "import pytest, numpy" 2>/dev/null; then
  echo "deps: installing pytest from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check pytest numpy
fi

# Ray Serve runs tcc.serve (runtime/python/python/tcc/serve.py) and its
# test (runtime/python/tests/test_serve.py), which fails without it. About
# 40 s and 300 MB on a fresh machine; a second run checks the version only.
RAY_VERSION=2.60.0
# (Checked without importing Ray, which takes seconds.)
if ! python3 -c "
import importlib.metadata as m, importlib.util as u, sys
sys.exit(m.version('ray') != '$RAY_VERSION' or not all(u.find_spec(x) for x in ('fastapi', 'uvicorn', 'starlette')))" 2>/dev/null; then
  echo "deps: installing ray[serve]==$RAY_VERSION from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check "ray[serve]==$RAY_VERSION"
fi

command -v cargo >/dev/null || { echo "deps: cargo not found; install Rust (rustup) first" >&2; exit 1; }
[ -x /usr/lib/llvm-22/bin/lit ] || { echo "deps: LLVM lit missing from llvm-22-tools" >&2; exit 1; }
[ -f /usr/lib/clc/nvptx64--.bc ] || { echo "deps: libclc-22 has no /usr/lib/clc/nvptx64--.bc" >&2; exit 1; }
