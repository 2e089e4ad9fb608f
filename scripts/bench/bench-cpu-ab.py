#!/usr/bin/env python3
"""Two builds of the same ONNX models on the CPU, side by side with
onnxruntime, in one run: for each model, rounds of (build A, build B,
onnxruntime) so that the machine's noise falls on all three alike.

  python3 scripts/bench/bench-cpu-ab.py DIR [MODEL...] [--rounds=3]

DIR holds MODEL.onnx and MODEL.input.npy (scripts/bench/gen-real-models.py)
and the two artifacts MODEL.so (A, e.g. compiled by the previous commit)
and MODEL-new.so (B), both `--target=pocl-cpu`. tcc's figure is
`tcc-benchmark --device=pthread` (median of 5 calls after 1 warm-up, end
to end), onnxruntime's the median of 10 calls after 3 warm-ups (CPU
provider, all cores). Prints one Markdown row per model and round, and
checks that both builds' outputs agree with onnxruntime's first.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

try:
    import onnxruntime as ort
except ImportError:  # as scripts/bench/bench-cpu-models.py: from PyPI
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "onnxruntime"])
    import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "target", "debug")


def tcc_ms(artifact, inputs):
    out = subprocess.run(
        [os.path.join(BIN, "tcc-benchmark"), artifact, "--device=pthread",
         f"--input=@{inputs}", "--warmup=1", "--iterations=5", "--json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["median"]


def tcc_output(artifact, inputs, path):
    subprocess.run(
        [os.path.join(BIN, "tcc-run"), artifact, "--device=pthread",
         f"--input=@{inputs}", f"--output=@{path}"],
        check=True, capture_output=True)
    return np.load(path)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = next((int(a.split("=")[1]) for a in sys.argv[1:] if a.startswith("--rounds=")), 3)
    directory, models = args[0], args[1:] or ["squeezenet", "shufflenet", "resnet50", "inception_v1", "densenet121"]
    print(f"CPU: {os.cpu_count()} cores, onnxruntime {ort.__version__}")
    print("| model | round | tcc A ms | tcc B ms | onnxruntime ms | B / A | B / onnxruntime |")
    print("|---|---|---|---|---|---|---|")
    for model in models:
        base = os.path.join(directory, model)
        inputs = base + ".input.npy"
        session = ort.InferenceSession(base + ".onnx", providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: np.load(inputs)}
        reference = session.run(None, feed)[0]
        for name in ["", "-new"]:
            got = tcc_output(f"{base}{name}.so", inputs, f"{base}{name}.ab.npy")
            error = float(np.abs(got.reshape(reference.shape) - reference).max())
            if error > 1e-4 * max(1.0, float(np.abs(reference).max())):
                sys.exit(f"{model}{name}: max error {error} against onnxruntime")
        for r in range(rounds):
            a = tcc_ms(base + ".so", inputs)
            b = tcc_ms(base + "-new.so", inputs)
            for _ in range(3):
                session.run(None, feed)
            times = []
            for _ in range(10):
                start = time.perf_counter()
                session.run(None, feed)
                times.append(time.perf_counter() - start)
            o = sorted(times)[len(times) // 2] * 1e3
            print(f"| {model} | {r + 1} | {a:.1f} | {b:.1f} | {o:.1f} | {b / a:.2f} | {b / o:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
