#!/usr/bin/env python3
"""BERT-base compiled for Vulkan against onnxruntime, on this machine.

Issue 34: BERT-base (`/work/models/tx/bert.onnx` by default: input_ids and
attention_mask of 1x128 int64, output 1x128x768) compiled with
`tcc compile --target=vulkan` must match onnxruntime. The script makes
deterministic inputs (token ids in [1000, 30000), the attention mask's last
quarter of the positions 0, so the boolean mask path is exercised), runs
onnxruntime's CPU provider, compiles the model for Vulkan (unless
--artifact names one), runs it with `tcc-run --backend=vulkan` (lavapipe
here) and prints the largest absolute and relative differences and the
relative Frobenius error; exits 1 when an element is out of
|got - want| <= ATOL + RTOL * |want| (defaults 1e-3, 1e-3) or the
Frobenius error exceeds 1e-4.

Usage: scripts/bench/vulkan-bert-check.py [--model=bert.onnx] [--tcc=target/debug/tcc]
         [--tcc-run=target/debug/tcc-run] [--artifact=bert.vulkan.so] [--work=DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="/work/models/tx/bert.onnx")
    parser.add_argument("--tcc", default="target/debug/tcc")
    parser.add_argument("--tcc-run", default="target/debug/tcc-run")
    parser.add_argument("--artifact", help="an artifact already compiled with --target=vulkan")
    parser.add_argument("--work", help="where the artifact and .npy files go (default: a temporary folder)")
    parser.add_argument("--atol", type=float, default=1e-3)
    parser.add_argument("--rtol", type=float, default=1e-3)
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="tcc-vulkan-bert-")
    os.makedirs(work, exist_ok=True)

    session = onnxruntime.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    shapes = {i.name: [d if isinstance(d, int) else 1 for d in i.shape] for i in session.get_inputs()}
    rng = np.random.default_rng(34)
    feeds = {}
    for name, shape in shapes.items():
        if "mask" in name:
            mask = np.ones(shape, dtype=np.int64)
            mask[..., shape[-1] * 3 // 4:] = 0
            feeds[name] = mask
        else:
            feeds[name] = rng.integers(1000, 30000, size=shape, dtype=np.int64)
    want = session.run(None, feeds)[0].astype(np.float32)

    artifact = args.artifact
    if artifact is None:
        artifact = os.path.join(work, "bert.vulkan.so")
        start = time.time()
        subprocess.run([args.tcc, "compile", args.model, "--target=vulkan", "-o", artifact], check=True)
        print(f"compiled for Vulkan in {time.time() - start:.0f} s")
    command = [args.tcc_run, artifact, "--backend=vulkan"]
    for name in shapes:
        path = os.path.join(work, f"{name}.npy")
        np.save(path, feeds[name])
        command.append(f"--input=@{path}")
    got_path = os.path.join(work, "output.vulkan.npy")
    command.append(f"--output=@{got_path}")
    start = time.time()
    subprocess.run(command, check=True)
    print(f"ran through Vulkan in {time.time() - start:.1f} s")
    got = np.load(got_path).astype(np.float32)
    if got.shape != want.shape:
        print(f"FAILED: output shape {got.shape}, onnxruntime's {want.shape}")
        return 1
    diff = np.abs(got - want)
    rel = diff / np.maximum(np.abs(want), 1e-30)
    frob = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    bad = int(np.count_nonzero(~(diff <= args.atol + args.rtol * np.abs(want))))
    print(f"bert Vulkan vs onnxruntime: {got.size} elements, max |diff| {diff.max():.3e}, "
          f"max rel {rel.max():.3e}, relative Frobenius error {frob:.3e}, "
          f"{bad} outside atol {args.atol:g} + rtol {args.rtol:g}")
    ok = bad == 0 and frob <= 1e-4
    print("[SUCCESS]" if ok else "[FAILED]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
