#!/usr/bin/env python3
"""Real models on the CPU: tcc on PoCL (`--target=pocl-cpu`) next to
onnxruntime's CPU provider and IREE's llvm-cpu back end, the same ONNX
graph and inputs on the same machine in one run (issue 37's table).

  python3 scripts/bench/bench-cpu-models.py [--out=DIR] [--rounds=N] [--threads=N]
      [--no-iree] [--no-first-result] [--tuning=FILE] [--target=TARGET] MODEL...

MODEL is a path to an `.onnx` file (e.g. the exported transformers and
torchvision models, /work/models/tx/*.onnx on the build machine) or one
of the light CNNs of scripts/bench/gen-real-models.py by name (written
into DIR with its random tiled weights). Every graph input gets a
deterministic random tensor of its declared shape (floats in [0, 1),
integers in [0, 100): token ids); a dimension without a size is refused.

Per model: `tcc compile --stats` (kernels, compile seconds), then `tcc
compile --prepare` into a fresh artifact and one `tcc-run` from empty
program caches (seconds to the exit: the first result), one `tcc-run`
whose outputs must agree with onnxruntime's (max error within 1e-4 of
the largest reference value, else the model's row says so), IREE's
import and compile (`iree-import-onnx --opset-version 17`,
`--iree-llvmcpu-target-cpu=host`; a model IREE cannot import or compile
has no IREE figures and says why on stderr, and IREE's outputs are held
to the same bound against onnxruntime's). Then `--rounds` rounds of (tcc,
onnxruntime, IREE) in turns, so that the shared machine's noise falls on
all three alike: tcc's figure is `tcc-benchmark --device=pthread` (median
of 20 calls after 3, end to end), onnxruntime's and IREE's the median of
20 calls after 3 through their Python APIs, with `--threads` intra-op
threads (default: every core) for both. One Markdown row per model and
round; quote the ratios, not the milliseconds, on a shared machine.
`--target` (default `pocl-cpu`, i.e. `pocl-cpu-avx2`) is tcc's target:
`pocl-cpu-avx512` or `host` for the register blocks of an AVX-512
machine, whose SIMD width onnxruntime picks at run time.

onnxruntime and IREE 3.13 are installed with pip when missing (`--no-iree`
skips IREE; `--no-first-result` the prepared build and its cold call).
DIR defaults to target/bench-cpu-models; TCC_BIN_DIR (default
target/debug, built first) names another build's binaries.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TCC_BIN_DIR") or os.path.join(ROOT, "target", "debug")
TARGET = "pocl-cpu"
IREE_VERSION = "3.13.0"
LIGHT = ["resnet50", "densenet121", "squeezenet", "inception_v1", "shufflenet",
         "bvlc_alexnet", "vgg19", "zfnet512", "inception_v2"]
NUMPY_OF_ONNX = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.BOOL: np.bool_,
}


def pip_install(*packages):
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", *packages])


def median_ms(call, warmup=3, calls=20):
    for _ in range(warmup):
        call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e3


def make_inputs(path, stem):
    """One .npy per graph input (initializers excluded), in graph order."""
    model = onnx.load(path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(2026)
    files, feed = [], {}
    for i, value in enumerate(v for v in model.graph.input if v.name not in initializers):
        tensor = value.type.tensor_type
        shape = [d.dim_value for d in tensor.shape.dim]
        if any(d <= 0 for d in shape):
            sys.exit(f"{path}: input {value.name} has a dimension without a size ({tensor.shape}); "
                     "export it with static shapes")
        dtype = NUMPY_OF_ONNX.get(tensor.elem_type)
        if dtype is None:
            sys.exit(f"{path}: input {value.name} has element type {tensor.elem_type}, "
                     "which this script cannot fill")
        if np.issubdtype(dtype, np.floating):
            x = rng.random(shape).astype(dtype)
        elif dtype == np.bool_:
            x = np.ones(shape, dtype)
        else:
            x = rng.integers(0, 100, shape).astype(dtype)
        file = f"{stem}.input{i}.npy"
        np.save(file, x)
        files.append(file)
        feed[value.name] = x
    return files, feed


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs)


def tcc_first_result(onnx_path, stem, inputs, tuning):
    """`tcc compile --prepare` into a fresh artifact, then one `tcc-run`
    with empty caches: seconds to its exit."""
    prepared = f"{stem}.prepared.so"
    shutil.rmtree(prepared + ".prepared", ignore_errors=True)
    env = dict(os.environ, TCC_CACHE_DIR=f"{stem}.cache", POCL_CACHE_DIR=f"{stem}.pocl-cache")
    for d in (env["TCC_CACHE_DIR"], env["POCL_CACHE_DIR"]):
        shutil.rmtree(d, ignore_errors=True)
    run([os.path.join(BIN, "tcc"), "compile", onnx_path, f"--target={TARGET}", "--prepare",
         *tuning, "-o", prepared], env=env)
    for d in (env["TCC_CACHE_DIR"], env["POCL_CACHE_DIR"]):
        shutil.rmtree(d, ignore_errors=True)
    start = time.perf_counter()
    run([os.path.join(BIN, "tcc-run"), prepared, "--device=pthread",
         *[f"--input=@{f}" for f in inputs]], env=env)
    return time.perf_counter() - start


def tcc_outputs(artifact, stem, inputs, count):
    outs = [f"{stem}.tcc-out{i}.npy" for i in range(count)]
    run([os.path.join(BIN, "tcc-run"), artifact, "--device=pthread",
         *[f"--input=@{f}" for f in inputs], *[f"--output=@{o}" for o in outs]])
    return [np.load(o) for o in outs]


def tcc_ms(artifact, inputs):
    out = run([os.path.join(BIN, "tcc-benchmark"), artifact, "--device=pthread",
               *[f"--input=@{f}" for f in inputs], "--warmup=3", "--iterations=20", "--json"]).stdout
    return json.loads(out)["latency_ms"]["median"]


def iree_outputs(result):
    """An IREE function's result (one device array or a sequence of them)
    as host arrays."""
    results = result if isinstance(result, (list, tuple)) else [result]
    return [r.to_host() if hasattr(r, "to_host") else np.asarray(r) for r in results]


def iree_session(onnx_path, stem, threads):
    import iree.runtime as rt
    mlir, vmfb = f"{stem}.iree.mlir", f"{stem}.vmfb"
    run(["iree-import-onnx", onnx_path, "--opset-version", "17", "-o", mlir])
    run(["iree-compile", mlir, "--iree-hal-target-device=local",
         "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host",
         "-o", vmfb])
    rt.flags.parse_flags(f"--task_topology_max_group_count={threads}")
    context = rt.SystemContext(config=rt.Config("local-task"))
    with open(vmfb, "rb") as f:
        module = rt.VmModule.copy_buffer(context.instance, f.read())
    context.add_vm_module(module)
    name = next(n for n in module.function_names if "$" not in n and not n.startswith("__"))
    return context.modules.module[name]


def main():
    options = {a.split("=")[0]: (a.split("=", 1) + [""])[1] for a in sys.argv[1:] if a.startswith("--")}
    known = {"--out", "--rounds", "--threads", "--no-iree", "--no-first-result", "--tuning", "--target",
             "--help", "-h"}
    unknown = set(options) - known
    models = [a for a in sys.argv[1:] if not a.startswith("-")]
    if unknown or "--help" in options or not models:
        sys.exit(__doc__ + (f"\nunknown option(s): {' '.join(sorted(unknown))}" if unknown else ""))
    out = options.get("--out") or os.path.join(ROOT, "target", "bench-cpu-models")
    rounds = int(options.get("--rounds") or 3)
    threads = int(options.get("--threads") or os.cpu_count())
    tuning = [f"--tuning={options['--tuning']}"] if options.get("--tuning") else []
    global TARGET
    TARGET = options.get("--target") or TARGET
    with_iree = "--no-iree" not in options
    os.makedirs(out, exist_ok=True)
    try:
        import onnxruntime as ort
    except ImportError:
        pip_install("onnxruntime")
        import onnxruntime as ort
    if with_iree:
        try:
            import iree.compiler  # noqa: F401
            import iree.runtime  # noqa: F401
        except ImportError:
            pip_install(f"iree-base-compiler[onnx]=={IREE_VERSION}", f"iree-base-runtime=={IREE_VERSION}")
    if "TCC_BIN_DIR" not in os.environ:
        run(["make", "-s", "build"], cwd=ROOT)
    print(f"CPU: {os.cpu_count()} cores; tcc --target={TARGET}; onnxruntime {ort.__version__} and IREE with {threads} threads")
    print("| model | round | kernels | compile s | first result s | max error | tcc ms | onnxruntime ms "
          "| IREE ms | tcc / onnxruntime | tcc / IREE |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model in models:
        if model.endswith(".onnx"):
            onnx_path, name = model, os.path.basename(model)[:-len(".onnx")]
        elif model in LIGHT:
            run([sys.executable, os.path.join(ROOT, "scripts", "bench", "gen-real-models.py"), out, model])
            onnx_path, name = os.path.join(out, f"{model}.onnx"), model
        else:
            sys.exit(f"{model}: neither an .onnx file nor one of {' '.join(LIGHT)}")
        stem = os.path.join(out, name)
        inputs, feed = make_inputs(onnx_path, stem)
        artifact = f"{stem}.so"
        start = time.perf_counter()
        compiled = run([os.path.join(BIN, "tcc"), "compile", onnx_path, f"--target={TARGET}", "--stats",
                        *tuning, "-o", artifact])
        compile_s = time.perf_counter() - start
        kernels = next((line.split(":", 1)[1].strip() for line in (compiled.stdout + compiled.stderr).splitlines()
                        if line.startswith("kernels:")), "?")
        first = None if "--no-first-result" in options else tcc_first_result(onnx_path, stem, inputs, tuning)
        options_ = ort.SessionOptions()
        options_.intra_op_num_threads = threads
        session = ort.InferenceSession(onnx_path, options_, providers=["CPUExecutionProvider"])
        reference = session.run(None, feed)
        got = tcc_outputs(artifact, stem, inputs, len(reference))
        error = max(float(np.abs(g.reshape(r.shape).astype(np.float64) - r).max())
                    for g, r in zip(got, reference))
        scale = max(1.0, max(float(np.abs(r).max()) for r in reference))
        error_cell = f"{error:.1e}" + ("" if error <= 1e-4 * scale else " (WRONG)")
        iree, iree_wrong = None, ""
        if with_iree:
            try:
                iree_function = iree_session(onnx_path, stem, threads)
                values = list(feed.values())
                iree = lambda: iree_outputs(iree_function(*values))  # noqa: E731
                iree_error = max(float(np.abs(g.reshape(r.shape).astype(np.float64) - r).max())
                                 for g, r in zip(iree(), reference))
                if iree_error > 1e-4 * scale:
                    iree_wrong = " (WRONG)"
                    print(f"{name}: IREE's outputs differ from onnxruntime's by {iree_error:.1e}", file=sys.stderr)
            except subprocess.CalledProcessError as e:
                iree = None
                print(f"{name}: IREE failed: {(e.stderr or '').strip().splitlines()[-1:]}", file=sys.stderr)
            except Exception as e:  # the runtime's load or call  # noqa: BLE001
                iree = None
                print(f"{name}: IREE failed: {type(e).__name__}: {e}", file=sys.stderr)
        first_cell = "-" if first is None else f"{first:.1f}"
        for r in range(rounds):
            tcc = tcc_ms(artifact, inputs)
            onnxruntime = median_ms(lambda: session.run(None, feed))
            iree_ms = median_ms(iree) if iree else None
            iree_cell, vs_iree = (f"{iree_ms:.1f}{iree_wrong}", f"{tcc / iree_ms:.2f}x") if iree_ms else ("-", "-")
            print(f"| {name} | {r + 1} | {kernels} | {compile_s:.1f} | {first_cell} | {error_cell} | "
                  f"{tcc:.1f} | {onnxruntime:.1f} | {iree_cell} | {tcc / onnxruntime:.2f}x | {vs_iree} |",
                  flush=True)


if __name__ == "__main__":
    main()
