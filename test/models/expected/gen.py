#!/usr/bin/env python3
"""Independent expected outputs for end-to-end models (test/models/expected).

For each model listed in MODELS, writes expected/<model>/<function>.inputN.npy
(the suite's deterministic inputs, from tcc-e2e-inputs) and
expected/<model>/<function>.outputN.npy, computed here with numpy in float64
from each op's mathematical definition and rounded to float32. None of tcc's
code (in particular not tcc-decompose-composites, which the upstream-MLIR
reference uses for tcc's composite ops) takes part in the outputs, so the
end-to-end test (tests/e2e.rs) checks both the device and the reference
against an independent computation. The harness fails when the stored
inputs differ from the suite's (regenerate after changing a model).

Run from the repository root after `make build`:
    python3 test/models/expected/gen.py
"""

import math
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.join(ROOT, "target", "debug")
HERE = os.path.dirname(os.path.abspath(__file__))


def softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def layer_norm(x, gamma, beta, axis, epsilon):
    x = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float64(np.float32(epsilon))) * gamma + beta


erf = np.vectorize(math.erf)


def gelu_erf(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def silu(x):
    x = x.astype(np.float64)
    return x / (1.0 + np.exp(-x))


def attention(q, k, v, mask, scale, causal):
    """softmax(scale * Q K^T + mask, causal: keys after the query's
    position masked, upper-left aligned) V, K/V heads shared by groups of
    query heads."""
    q, k, v, mask = (a.astype(np.float64) for a in (q, k, v, mask))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2) + mask
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.arange(sk)[None, :] > np.arange(sq)[:, None], -np.inf, s)
    return softmax(s, -1) @ v


MODELS = {
    "composites": {
        "softmax_last": lambda x: [softmax(x, -1)],
        "softmax_first": lambda x: [softmax(x, 0)],
        "softmax_middle": lambda x: [softmax(x, 1)],
        "log_softmax_last": lambda x: [log_softmax(x, -1)],
        "log_softmax_first": lambda x: [log_softmax(x, 0)],
        "log_softmax_middle": lambda x: [log_softmax(x, 1)],
        "layer_norm_last": lambda x, g, b: [layer_norm(x, g, b, -1, 1e-5)],
        "layer_norm_two_axes": lambda x, g, b: [layer_norm(x, g, b, 1, 1e-3)],
        "gelu_erf": lambda x: [gelu_erf(x)],
        "gelu_tanh": lambda x: [gelu_tanh(x)],
        "silu": lambda x: [silu(x)],
        "attention_grouped": lambda q, k, v, m: [attention(q, k, v, m, np.float64(np.float32(0.158113882)), True)],
    },
}


def main():
    for model, functions in MODELS.items():
        source = os.path.join(ROOT, "test", "models", f"{model}.mlir")
        out = os.path.join(HERE, model)
        os.makedirs(out, exist_ok=True)
        for stale in os.listdir(out):
            os.remove(os.path.join(out, stale))
        with tempfile.TemporaryDirectory() as tmp:
            library = os.path.join(tmp, "model.so")
            subprocess.run([os.path.join(BIN, "tcc"), "compile", source, "-o", library], check=True)
            listing = subprocess.run(
                [os.path.join(BIN, "tcc-e2e-inputs"), source, library, os.path.join(out, "x")],
                check=True, capture_output=True, text=True,
            ).stdout
        for line in listing.splitlines():
            tag, function, num_inputs = line.split()[:3]
            if function not in functions:
                sys.exit(f"{model}: no expected outputs defined for @{function}")
            inputs = []
            for i in range(int(num_inputs)):
                path = f"{tag}.input{i}.npy"
                inputs.append(np.load(path))
                os.rename(path, os.path.join(out, f"{function}.input{i}.npy"))
            for i, value in enumerate(functions[function](*inputs)):
                np.save(os.path.join(out, f"{function}.output{i}.npy"), value.astype(np.float32))
        print(f"{model}: {len(functions)} functions -> {out}")


if __name__ == "__main__":
    main()
