#!/usr/bin/env python3
"""Measures issue 15's int8 accuracy target: on the light models with
random weights (scripts/bench/gen-real-models.py), `tcc compile --quantize=int8`
must agree with f32 on the top-1 class for at least 99% of 100 inputs
drawn from a fixed seed (ResNet-50, SqueezeNet, DenseNet-121).

Per model: writes the model, a calibration set (--calibration=N images,
seed 1) and an evaluation set (--samples=N images, seed 2; uniform [0, 1)
like gen-real-models.py's input), profiles the model on the calibration
set (`tcc profile`), compiles it quantized with the evaluation set as
`--calibration-inputs` and prints tcc's accuracy report (top-1 agreement,
max and mean abs difference against f32, on the default OpenCL device)
plus the compile's summary of the ops left f32.

With --device-bundle=DIR the evaluation runs elsewhere (the GPU machine,
where the int8 loop-nest kernels take seconds instead of PoCL's half hour
for ResNet-50): the profile is still made here, but each model is compiled
with --target=nvidia --no-accuracy-report (one artifact per method of
--calibration-method, a comma-separated list) into DIR, xz-compressed,
beside scripts/onnx/quant-accuracy-device.py, gen-real-models.py, the stripped
libtcc_runtime.so and manifest.json (each model's sha256, input shape,
the evaluation inputs' sha256). `python3 DIR/quant-accuracy-device.py`
there regenerates the models and inputs, checks the hashes, and compares
onnxruntime f32 with the int8 artifacts (docs/benchmarks.md, "int8
accuracy over 100 inputs"). --reuse-profile=yes keeps an OUT_DIR/M.profile.json
made before (from the same calibration set) instead of profiling again.

Usage: scripts/onnx/quant-accuracy.py OUT_DIR [--samples=100] [--calibration=16]
       [--calibration-method=max|percentile[,...]] [--percentile=99.99]
       [--target=auto] [--device-bundle=DIR] [--reuse-profile=yes] [MODEL...]
(tcc from target/debug unless TCC is set; models default to resnet50,
squeezenet, densenet121)."""
import hashlib
import json
import lzma
import shutil
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ["resnet50", "squeezenet", "densenet121"]


def images(directory, count, seed, shape):
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(count):
        np.save(os.path.join(directory, f"{i:03}.npy"), rng.random(shape, dtype=np.float32))


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def inputs_sha256(count, seed, shape):
    """The evaluation inputs' digest, as quant-accuracy-device.py draws them."""
    rng = np.random.default_rng(seed)
    return hashlib.sha256(b"".join(rng.random(shape, dtype=np.float32).tobytes() for _ in range(count))).hexdigest()


def start_bundle(bundle):
    os.makedirs(bundle, exist_ok=True)
    for script in ["onnx/quant-accuracy-device.py", "bench/gen-real-models.py"]:
        shutil.copy(os.path.join(ROOT, "scripts", script), bundle)
    runtime = os.path.join(bundle, "libtcc_runtime.so")
    shutil.copy(os.path.join(ROOT, "target", "debug", "libtcc_runtime.so"), runtime)
    subprocess.run(["strip", runtime], check=True)


def compress(path):
    with open(path, "rb") as f, lzma.open(path + ".xz", "wb", preset=6) as out:
        out.write(f.read())
    os.remove(path)


def main():
    options = {
        "samples": "100", "calibration": "16", "calibration-method": "max", "percentile": "99.99",
        "target": "auto", "device-bundle": "", "reuse-profile": "no",
    }
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
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "gen-real-models.py"), out, *models], check=True)
    bundle = options["device-bundle"]
    manifest = {"samples": int(options["samples"]), "evaluation_seed": 2, "models": []}
    if bundle:
        start_bundle(bundle)
    for model in models:
        onnx_path = os.path.join(out, f"{model}.onnx")
        shape = np.load(os.path.join(out, f"{model}.input.npy")).shape
        calibration = os.path.join(out, f"{model}-calibration")
        evaluation = os.path.join(out, f"{model}-evaluation")
        images(calibration, int(options["calibration"]), 1, shape)
        if not bundle:
            images(evaluation, int(options["samples"]), 2, shape)
        profile = os.path.join(out, f"{model}.profile.json")
        if options["reuse-profile"] == "yes" and os.path.exists(profile):
            print(f"{model}: reusing {profile}")
        else:
            subprocess.run(
                [tcc, "profile", onnx_path, f"--inputs={calibration}", "-o", profile, f"--target={options['target']}", "--bins=2048"],
                check=True,
            )
        if bundle:
            entry = {
                "model": model, "onnx_sha256": sha256_file(onnx_path), "input_shape": list(shape),
                "inputs_sha256": inputs_sha256(int(options["samples"]), 2, shape), "artifacts": [],
            }
            for method in options["calibration-method"].split(","):
                artifact = f"{model}-int8-{method}.so"
                result = subprocess.run(
                    [
                        tcc, "compile", onnx_path, "--quantize=int8", f"--profile={profile}",
                        f"--calibration={method}", f"--percentile={options['percentile']}",
                        "--no-accuracy-report", "--target=nvidia", "-o", os.path.join(bundle, artifact),
                    ],
                    capture_output=True, text=True,
                )
                print(f"{model} ({method}): {result.stderr.strip()}")
                if result.returncode != 0:
                    sys.exit(result.returncode)
                compress(os.path.join(bundle, artifact))
                label = method if method != "percentile" else f"percentile {options['percentile']}"
                entry["artifacts"].append({"file": artifact, "calibration": label})
            manifest["models"].append(entry)
            with open(os.path.join(bundle, "manifest.json"), "w") as f:
                json.dump(manifest, f, indent=1)
            continue
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
