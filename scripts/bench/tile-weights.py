#!/usr/bin/env python3
"""Rewrites an ONNX model's large float weights as tiled ones, for carrying
compiled artifacts to the GPU machine for timing (the device tool carries
64 MiB; real or random weights hardly compress).

Every floating-point initializer of at least MIN_ELEMENTS (default 4096)
elements becomes one random row, of the tensor's last dimension, repeated
over the others (scaled to the original's standard deviation and offset by
its mean, so activations keep their magnitudes). The shapes, dtypes and the
graph are unchanged, so the compiled kernels and their times are those of
the real model; a compiled artifact's weights, in whatever layout the
compiler packs them, are then runs of a few KiB that xz finds again.
Integer initializers (shapes, indices) and small tensors (biases, layer
norm scales) are kept.

Usage: scripts/bench/tile-weights.py IN.onnx OUT.onnx [--min-elements=N] [--seed=S]
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    if len(args) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src, dst = args
    min_elements = int(opts.get("min-elements", 4096))
    rng = np.random.default_rng(int(opts.get("seed", 0)))
    model = onnx.load(src)
    tiled = kept = 0
    for i, init in enumerate(model.graph.initializer):
        array = numpy_helper.to_array(init)
        if array.dtype.kind != "f" or array.size < min_elements or array.ndim == 0:
            kept += 1
            continue
        x = array.astype(np.float64)
        std = float(x.std()) or 1.0
        row = (rng.standard_normal(array.shape[-1]) * std + float(x.mean())).astype(array.dtype)
        new = np.broadcast_to(row, array.shape).copy()
        model.graph.initializer[i].CopyFrom(numpy_helper.from_array(new, init.name))
        tiled += 1
    onnx.save(model, dst)
    print(f"{dst}: {tiled} weight tensor(s) tiled, {kept} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
