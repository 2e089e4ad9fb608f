#!/usr/bin/env python3
"""CPU benchmark models as ONNX, and their onnxruntime timings.

  cpu_baseline.py models DIR     write DIR/<case>.onnx and DIR/<case>.inputs
                                 (tcc-benchmark --input flags, one per line)
  cpu_baseline.py time DIR ...   time each DIR/<case>.onnx with onnxruntime
                                 (CPU provider, all cores); prints JSON lines
                                 {"case", "median_ms", "min_ms", "numpy_ms"}
                                 (numpy_ms: the same product through numpy's
                                 BLAS for the sgemm cases, else null)

The same .onnx files are compiled by tcc (`tcc compile X.onnx
--target=pocl-cpu`), so both sides run exactly the same graph.
"""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def model(name, nodes, inputs, output, initializers=()):
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info(output[0], F, output[1])],
        list(initializers),
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8  # what onnxruntime reads (newer onnx writes IR 14)
    onnx.checker.check_model(m)
    return m, inputs


def cases():
    for n in (512, 1024):
        yield f"sgemm_{n}", model(
            "sgemm",
            [helper.make_node("MatMul", ["a", "b"], ["c"])],
            [("a", [n, n]), ("b", [n, n])],
            ("c", [n, n]),
        )
    m, k, n = 256, 1024, 1024
    yield f"dense_{m}x{k}x{n}", model(
        "dense",
        [
            helper.make_node("MatMul", ["x", "w"], ["mm"]),
            helper.make_node("Add", ["mm", "bias"], ["pre"]),
            helper.make_node("Relu", ["pre"], ["y"]),
        ],
        [("x", [m, k]), ("w", [k, n]), ("bias", [n])],
        ("y", [m, n]),
    )
    r, c = 2048, 1024
    yield f"softmax_{r}x{c}", model(
        "softmax",
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
        [("x", [r, c])],
        ("y", [r, c]),
    )
    yield f"rowsum_exp_{r}x{c}", model(
        "rowsum",
        [
            helper.make_node("Exp", ["x"], ["e"]),
            helper.make_node("ReduceSum", ["e", "axes"], ["y"], keepdims=0),
        ],
        [("x", [r, c])],
        ("y", [r]),
        [numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")],
    )


def write_models(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    for name, (m, inputs) in cases():
        onnx.save(m, out / f"{name}.onnx")
        flags = [f"--input={'x'.join(map(str, s))}xf32=0.5" for _, s in inputs]
        (out / f"{name}.inputs").write_text("\n".join(flags) + "\n")
        print(name)


def time_models(paths, warmup=3, iterations=20):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    for path in paths:
        path = Path(path)
        session = ort.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        feeds = {
            i.name: np.full(i.shape, 0.5, dtype=np.float32)
            for i in session.get_inputs()
        }
        for _ in range(warmup):
            session.run(None, feeds)
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            session.run(None, feeds)
            times.append((time.perf_counter() - start) * 1e3)
        times.sort()
        numpy_ms = None
        if path.stem.startswith("sgemm_"):
            a, b = (np.full(i.shape, 0.5, dtype=np.float32) for i in session.get_inputs())
            numpy_ms = median_ms(lambda: a @ b, warmup, iterations)
        print(
            json.dumps(
                {
                    "case": path.stem,
                    "median_ms": times[len(times) // 2],
                    "min_ms": times[0],
                    "numpy_ms": numpy_ms,
                }
            )
        )


def median_ms(call, warmup, iterations):
    for _ in range(warmup):
        call()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[len(times) // 2]


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "models":
        write_models(Path(sys.argv[2]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "time":
        time_models(sys.argv[2:])
    else:
        sys.exit(__doc__)
