#!/usr/bin/env python3
"""The device half of `scripts/onnx/quant-accuracy.py --device-bundle=DIR`:
issue 15's int8 accuracy target (top-1 agreement with f32 >= 99% over 100
seeded inputs) measured on the GPU machine, which runs the int8 loop-nest
kernels far faster than this machine's PoCL.

Run from the bundle directory that quant-accuracy.py wrote (it holds this
script, gen-real-models.py, libtcc_runtime.so, manifest.json and one int8
artifact per model and calibration, compiled with --target=nvidia). Per
model it
- regenerates the ONNX model with gen-real-models.py (random weights, a
  fixed seed per model) and checks its sha256 against the manifest (the
  artifact was compiled from that file), and the evaluation inputs
  (uniform [0, 1), numpy seed 2) against theirs;
- runs onnxruntime f32 (CPU) on each input: the reference;
- runs each int8 artifact through the tcc runtime's C API (ctypes over
  libtcc_runtime.so, one session, PTX on the NVIDIA GPU);
- prints top-1 agreement, max and mean abs difference, and the f32
  reference's top-1 margins (largest minus second largest output): a
  random-weight network can have nearly tied classes, which int8 noise of
  the same size flips.

Usage: python3 quant-accuracy-device.py [BUNDLE_DIR] (default: its own directory)"""
import ctypes
import hashlib
import json
import lzma
import os
import subprocess
import sys
import time

import numpy as np

TCC_F32 = 0  # tcc_abi.h's TCC_DTYPE_F32


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("bytes", ctypes.c_uint64),
        ("dtype", ctypes.c_uint32),
        ("rank", ctypes.c_uint32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
    ]


class TccRuntime:
    """The few C API calls a run needs (runtime/include/tcc_runtime.h)."""

    def __init__(self, library):
        self.lib = ctypes.CDLL(library)
        self.lib.tcc_last_error.restype = ctypes.c_char_p
        self.runtime = ctypes.c_void_p()
        self.check(self.lib.tcc_runtime_create(None, ctypes.byref(self.runtime)), "runtime")
        name = ctypes.c_char_p()
        self.lib.tcc_runtime_device(self.runtime, ctypes.byref(name))
        self.device = name.value.decode()

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: status {status}: {self.lib.tcc_last_error().decode()}")

    def session(self, artifact):
        model, session = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.tcc_model_load_file(artifact.encode(), ctypes.byref(model)), "load")
        self.check(self.lib.tcc_session_create(self.runtime, model, ctypes.byref(session)), "session")
        return session

    def run(self, session, x, out_shape):
        y = np.empty(out_shape, np.float32)
        keep = []

        def tensor(a):
            shape = (ctypes.c_int64 * a.ndim)(*a.shape)
            keep.append(shape)
            return Tensor(a.ctypes.data, a.nbytes, TCC_F32, a.ndim, shape)

        inputs, outputs = (Tensor * 1)(tensor(x)), (Tensor * 1)(tensor(y))
        self.check(self.lib.tcc_session_run(session, None, inputs, 1, outputs, 1), "run")
        return y


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def images(count, seed, shape):
    rng = np.random.default_rng(seed)
    return [rng.random(shape, dtype=np.float32) for _ in range(count)]


def main():
    bundle = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    for name in os.listdir(bundle):
        if name.endswith(".xz") and not os.path.exists(os.path.join(bundle, name[:-3])):
            with lzma.open(os.path.join(bundle, name)) as f, open(os.path.join(bundle, name[:-3]), "wb") as out:
                out.write(f.read())
    work = "/tmp/quant-accuracy-device"
    models = [m["model"] for m in manifest["models"]]
    subprocess.run([sys.executable, os.path.join(bundle, "gen-real-models.py"), work, *models],
                   check=True, stdout=subprocess.DEVNULL)
    import onnxruntime as ort

    tcc = TccRuntime(os.path.join(bundle, "libtcc_runtime.so"))
    print(f"device: {tcc.device}; onnxruntime {ort.__version__} f32 (CPU) is the reference")
    for entry in manifest["models"]:
        name = entry["model"]
        onnx_path = os.path.join(work, f"{name}.onnx")
        same = sha256(onnx_path) == entry["onnx_sha256"]
        shape = tuple(entry["input_shape"])
        xs = images(manifest["samples"], manifest["evaluation_seed"], shape)
        digest = hashlib.sha256(b"".join(x.tobytes() for x in xs)).hexdigest()
        print(f"{name}: regenerated model {'identical' if same else 'DIFFERENT'} (sha256), "
              f"inputs {'identical' if digest == entry['inputs_sha256'] else 'DIFFERENT'}")
        if not same:
            continue
        reference = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        input_name = reference.get_inputs()[0].name
        expected = np.stack([reference.run(None, {input_name: x})[0].reshape(-1) for x in xs])
        # The margin to the next *different* value: random-weight models
        # can repeat a class's weights (tiled blocks), so exact ties occur;
        # tied classes get identical int8 weights and stay tied.
        best = expected.max(1, keepdims=True)
        tied = (expected == best).sum(1) > 1
        below = np.where(expected < best, expected, -np.inf).max(1)
        margins = best[:, 0] - below
        print(f"  f32 top-1 margins (to the next distinct value): min {margins.min():.3e}, "
              f"median {np.median(margins):.3e}, 10th percentile {np.percentile(margins, 10):.3e}; "
              f"inputs whose top value is tied exactly: {tied.sum()}; "
              f"output magnitude (max |y|) median {np.median(np.abs(expected).max(1)):.3e}")
        # How much the output depends on the input at all: random-weight
        # networks can map every input to nearly the same output (then
        # top-1 agreement says little); the int8 error is also measured
        # against this input-driven spread.
        spread = expected - expected.mean(0)
        print(f"  f32: {len(set(expected.argmax(1)))} distinct top-1 classes over {len(xs)} inputs; "
              f"input-driven spread |y - mean over inputs| / |y| = "
              f"{np.linalg.norm(spread) / np.linalg.norm(expected):.3e}")
        softmax = bool((expected > 0).all() and np.allclose(expected.sum(1), 1, atol=1e-3))
        out_shape = reference.get_outputs()[0].shape
        for artifact in entry["artifacts"]:
            path = os.path.join(bundle, artifact["file"])
            session = tcc.session(path)
            start = time.time()
            got = np.stack([tcc.run(session, x, out_shape).reshape(-1) for x in xs])
            seconds = time.time() - start
            agree = expected.argmax(1) == got.argmax(1)
            diff = np.abs(got - expected)
            flipped = margins[~agree]
            centered_agree = (spread.argmax(1) == (got - expected.mean(0)).argmax(1)).mean()
            extra = (f"; error / input-driven spread {np.linalg.norm(got - expected) / np.linalg.norm(spread):.3e}, "
                     f"top-1 of y - mean over inputs (f32's) agreement {100.0 * centered_agree:.0f}%")
            if softmax and (got > 0).all():
                # Softmax outputs: log p = logits - logsumexp, so centered
                # log-probabilities are the centered logits.
                lw, lg = np.log(expected), np.log(got)
                lw, lg = lw - lw.mean(1, keepdims=True), lg - lg.mean(1, keepdims=True)
                ls = np.sort(lw, axis=1)
                extra += (f"; logits (centered log p): relative L2 {np.linalg.norm(lg - lw) / np.linalg.norm(lw):.3e}, "
                          f"max abs difference {np.abs(lg - lw).max():.3e}, f32 logit range median "
                          f"{np.median(ls[:, -1] - ls[:, 0]):.3e}")
            print(f"  int8 ({artifact['calibration']}): top-1 agreement {agree.sum()}/{len(xs)} "
                  f"({100.0 * agree.mean():.2f}%), max abs difference {diff.max():.4e}, "
                  f"mean abs difference {diff.mean():.4e}, relative L2 "
                  f"{np.linalg.norm(got - expected) / np.linalg.norm(expected):.3e}"
                  + (f"; f32 margins of the disagreements: {', '.join(f'{m:.2e}' for m in sorted(flipped))}"
                     if len(flipped) else "")
                  + extra + f" ({seconds:.1f} s for {len(xs)} calls)")


if __name__ == "__main__":
    main()
