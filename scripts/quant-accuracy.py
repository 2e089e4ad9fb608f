#!/usr/bin/env python3
"""Measures issue 15's int8 accuracy target: on the light models with
random weights (scripts/gen-real-models.py), `tcc compile --quantize=int8`
must agree with f32 on the top-1 class for at least 99% of 100 inputs
drawn from a fixed seed (ResNet-50, SqueezeNet, DenseNet-121).

Per model: writes the model, a calibration set (--calibration=N images,
seed 1) and an evaluation set (--samples=N images, seed 2; uniform [0, 1)
like gen-real-models.py's input), profiles the model on the calibration
set (`tcc profile`), compiles it quantized with the evaluation set as
`--calibration-inputs` and prints tcc's accuracy report (top-1 agreement,
max and mean abs difference against f32, on the default OpenCL device)
plus the compile's summary of the ops left f32.

Usage: scripts/quant-accuracy.py OUT_DIR [--samples=100] [--calibration=16]
       [--calibration-method=max|percentile] [--target=auto] [MODEL...]
(tcc from target/debug unless TCC is set; models default to resnet50,
squeezenet, densenet121)."""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["resnet50", "squeezenet", "densenet121"]


def images(directory, count, seed, shape):
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(count):
        np.save(os.path.join(directory, f"{i:03}.npy"), rng.random(shape, dtype=np.float32))


def main():
    options = {"samples": "100", "calibration": "16", "calibration-method": "max", "target": "auto"}
    args = []
    for a in sys.argv[1:]:
        if a.startswith("--") and "=" in a:
            key, value = a[2:].split("=", 1)
            if key not in options:
                sys.exit(__doc__)
            options[key] = value
        else:
            args.append(a)
    if not args:
        sys.exit(__doc__)
    out, models = args[0], args[1:] or MODELS
    tcc = os.environ.get("TCC", os.path.join(ROOT, "target", "debug", "tcc"))
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen-real-models.py"), out, *models], check=True)
    for model in models:
        onnx_path = os.path.join(out, f"{model}.onnx")
        shape = np.load(os.path.join(out, f"{model}.input.npy")).shape
        calibration = os.path.join(out, f"{model}-calibration")
        evaluation = os.path.join(out, f"{model}-evaluation")
        images(calibration, int(options["calibration"]), 1, shape)
        images(evaluation, int(options["samples"]), 2, shape)
        profile = os.path.join(out, f"{model}.profile.json")
        subprocess.run(
            [tcc, "profile", onnx_path, f"--inputs={calibration}", "-o", profile, f"--target={options['target']}", "--bins=2048"],
            check=True,
        )
        target = [] if options["target"] == "auto" else [f"--target={options['target']}"]
        result = subprocess.run(
            [
                tcc, "compile", onnx_path, "--quantize=int8", f"--profile={profile}",
                f"--calibration={options['calibration-method']}", f"--calibration-inputs={evaluation}",
                "-o", os.path.join(out, f"{model}-int8.so"), *target,
            ],
            capture_output=True, text=True,
        )
        lines = [line for line in result.stderr.splitlines() if "tcc compile" in line or "error" in line]
        print(f"{model}:")
        for line in lines:
            print(f"  {line}")
        if result.returncode != 0:
            print(result.stderr[-4000:])
            sys.exit(result.returncode)


if __name__ == "__main__":
    main()
