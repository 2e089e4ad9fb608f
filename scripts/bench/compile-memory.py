#!/usr/bin/env python3
"""Compile time and peak memory per model against its weight bytes.

For each ONNX model given, runs `tcc import` and `tcc compile` (for each
--target) in a child process and prints the wall and CPU seconds and the
child's peak RSS (getrusage(RUSAGE_CHILDREN) of a fresh wrapper process,
so runs do not mask each other), next to the model's weight bytes (the
initializers' raw data, external data included) and the ratio
peak RSS / weight bytes. A figure printer, not a test: the regression bound
is tests/memory.rs.

    python3 scripts/bench/compile-memory.py --tcc target/debug/tcc \\
        --target nvidia --target pocl-cpu /work/models/tx/*.onnx

Needs the `onnx` Python package to count the weight bytes (without it the
file size stands in).
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def weight_bytes(path):
    try:
        import onnx
    except ImportError:
        return os.path.getsize(path), "file size"
    model = onnx.load(path, load_external_data=False)
    total = 0
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            entries = {e.key: e.value for e in tensor.external_data}
            total += int(entries.get("length", 0))
        elif tensor.raw_data:
            total += len(tensor.raw_data)
        else:
            count = 1
            for d in tensor.dims:
                count *= d
            total += count * 4
    return total, "initializers"


MEASURE = r"""
import resource, subprocess, sys, time, json
start = time.time()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.time() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc.returncode, "wall": wall,
                  "cpu": usage.ru_utime + usage.ru_stime,
                  "rss_kib": usage.ru_maxrss,
                  "stderr": rc.stderr.decode(errors="replace")[-2000:]}))
"""


def measure(command):
    import json
    out = subprocess.run([sys.executable, "-c", MEASURE] + command,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--tcc", default="target/debug/tcc")
    parser.add_argument("--target", action="append", default=[],
                        help="compile for this target (repeat; default nvidia)")
    parser.add_argument("--no-import", action="store_true", help="skip `tcc import`")
    parser.add_argument("--scratch", default=None,
                        help="directory for the outputs (default: a temporary one)")
    args = parser.parse_args()
    targets = args.target or ["nvidia"]
    scratch = args.scratch or tempfile.mkdtemp(prefix="tcc-compile-memory-")
    os.makedirs(scratch, exist_ok=True)
    print(f"{'model':<22} {'step':<18} {'weights MB':>10} {'wall s':>8} {'cpu s':>8} "
          f"{'peak RSS MB':>11} {'RSS/weights':>11}")
    failed = False
    for model in args.models:
        name = os.path.splitext(os.path.basename(model))[0]
        weights, _ = weight_bytes(model)
        steps = []
        if not args.no_import:
            steps.append(("import", [args.tcc, "import", model, "-o",
                                     os.path.join(scratch, name + ".mlir")]))
        for target in targets:
            steps.append((f"compile {target}",
                          [args.tcc, "compile", model, f"--target={target}", "-o",
                           os.path.join(scratch, f"{name}-{target}.so")]))
        for step, command in steps:
            r = measure(command)
            rss = r["rss_kib"] * 1024
            print(f"{name:<22} {step:<18} {weights / 1e6:>10.1f} {r['wall']:>8.1f} "
                  f"{r['cpu']:>8.1f} {rss / 1e6:>11.0f} {rss / max(weights, 1):>11.2f}"
                  + ("" if r["rc"] == 0 else f"  FAILED (exit {r['rc']})"), flush=True)
            if r["rc"] != 0:
                failed = True
                print(r["stderr"], file=sys.stderr)
            for suffix in (".mlir", f"-{step.split()[-1]}.so"):
                path = os.path.join(scratch, name + suffix)
                if os.path.exists(path):
                    os.remove(path)
    if not args.scratch:
        os.rmdir(scratch)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
