#!/usr/bin/env python3
"""Runs on the GPU machine (no Rust, no LLVM): the real-model set of
scripts/bench/gen-real-models.py, compiled here with `tcc compile --target=nvidia`,
side by side with the same ONNX graphs in PyTorch eager (onnx2torch, fp32,
TF32 off) in one run.

For each model in DIR (NAME.onnx, NAME.input.npy, NAME.so):
  1. cold start and correctness, once per kernel form (PTX, OpenCL C):
     tcc-run on an empty program cache with NVIDIA's own JIT cache off
     (CUDA_CACHE_DISABLE=1), reporting the seconds spent getting the
     kernel program; onnxruntime (CPU) on the input is the reference and
     tcc-run's output must match it (max |diff| <= 1e-3 * max(1, max |ref|));
  2. tcc: tcc-benchmark --json for each form (device time from profiling
     events, and end-to-end latency including upload and download);
  3. PyTorch eager: the converted model on CUDA, median of CUDA-event
     timings, for a GPU-resident input (compute only) and end to end
     (host input copied in, output copied back). Where onnx2torch cannot
     convert the graph, torchvision's definition of the same architecture
     stands in (reported as torch_stand_in).
Prints one JSON line per model and a table.

Usage: real-models-device.py DIR BIN_DIR [WHEEL_DIR]"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

directory, bin_dir = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:
    for wheel in glob.glob(os.path.join(sys.argv[3], "*.whl")):
        sys.path.insert(0, wheel)
import torch  # noqa: E402
from cuda_timing import cuda_median_ms  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
try:
    import onnx2torch  # noqa: E402
except ImportError as error:
    onnx2torch = None
    print(f"onnx2torch unavailable: {error}", file=sys.stderr)


def cuda_median(fn):
    """Median milliseconds of `fn()` over 50 runs after 10 warm-ups."""
    return cuda_median_ms(fn, warmup=10, iterations=50)


# Where onnx2torch cannot convert a model, torchvision's own definition of
# the same architecture stands in (random weights; its output is not
# compared): Inception v1 is GoogLeNet, whose ONNX AvgPool has asymmetric
# padding onnx2torch lacks.
TORCHVISION_STAND_INS = {"inception_v1": "googlenet"}


def torchvision_net(name):
    import torchvision
    builder = getattr(torchvision.models, TORCHVISION_STAND_INS[name])
    kwargs = {"weights": None}
    if TORCHVISION_STAND_INS[name] == "googlenet":
        kwargs.update(aux_logits=False, init_weights=False)
    return builder(**kwargs)


def torch_times(model_path, x):
    if onnx2torch is None:
        return None
    name = os.path.basename(model_path)[: -len(".onnx")]
    stand_in = None
    try:
        net = onnx2torch.convert(onnx.load(model_path)).cuda().eval()
    except Exception as error:  # a converter gap is reported, not fatal
        if name not in TORCHVISION_STAND_INS:
            return {"error": str(error)[:200]}
        net = torchvision_net(name).cuda().eval()
        stand_in = "torchvision." + TORCHVISION_STAND_INS[name]
    host = torch.from_numpy(x)
    device_x = host.cuda()
    with torch.no_grad():
        compute = cuda_median(lambda: net(device_x))
        end_to_end = cuda_median(lambda: net(host.cuda()).cpu())
        y = net(device_x).cpu().numpy()
    return {"compute_ms": compute, "end_to_end_ms": end_to_end, "output": y, "stand_in": stand_in}


rows = []
for model_path in sorted(glob.glob(os.path.join(directory, "*.onnx"))):
    name = os.path.basename(model_path)[: -len(".onnx")]
    artifact = os.path.join(directory, f"{name}.so")
    input_path = os.path.join(directory, f"{name}.input.npy")
    if not os.path.exists(artifact):
        continue
    x = np.load(input_path)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    reference = session.run(None, {session.get_inputs()[0].name: x})[0]
    row = {"model": name, "batch": int(x.shape[0])}
    for form, suffix in (("ptx", ""), ("opencl-c", "_opencl_c")):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.npy")
            env = dict(os.environ, TCC_CACHE_DIR=os.path.join(tmp, "cache"),
                       CUDA_CACHE_DISABLE="1", TCC_KERNEL_FORMAT=form)
            run = subprocess.run(
                [os.path.join(bin_dir, "tcc-run"), artifact, f"--input=@{input_path}",
                 f"--output=@{out}", "--verbose"], capture_output=True, text=True, env=env)
            if run.returncode != 0:
                row["error" + suffix] = run.stderr.strip()[-400:]
                continue
            built = re.search(r"built from source in ([0-9.]+) s", run.stderr)
            if built:
                row["cold_build_s" + suffix] = float(built.group(1))
            got = np.load(out).reshape(reference.shape)
            diff = float(np.max(np.abs(got - reference)))
            row["max_abs_diff" + suffix] = diff
            row["correct" + suffix] = diff <= 1e-3 * max(1.0, float(np.max(np.abs(reference))))
        bench = subprocess.run(
            [os.path.join(bin_dir, "tcc-benchmark"), artifact, f"--input=@{input_path}",
             "--warmup=10", "--iterations=50", "--json"], capture_output=True, text=True,
            env=dict(os.environ, TCC_KERNEL_FORMAT=form))
        if bench.returncode == 0:
            report = json.loads(bench.stdout)
            row["tcc_kernels"] = len(report["kernels"])
            row["tcc_device_ms" + suffix] = report["device_ms_per_call"]
            row["tcc_end_to_end_ms" + suffix] = report["latency_ms"]["median"]
            row["tcc_top_kernels" + suffix] = sorted(
                ((k["total_ms"] / report["iterations"], k["name"]) for k in report["kernels"]), reverse=True)[:5]
        else:
            row["bench_error" + suffix] = bench.stderr.strip()[-400:]
    eager = torch_times(model_path, x)
    if eager and "output" in eager:
        row["torch_compute_ms"] = eager["compute_ms"]
        row["torch_end_to_end_ms"] = eager["end_to_end_ms"]
        if eager["stand_in"]:
            row["torch_stand_in"] = eager["stand_in"]
        else:
            row["torch_max_abs_diff_vs_ort"] = float(np.max(np.abs(eager["output"].reshape(reference.shape) - reference)))
    elif eager:
        row["torch_error"] = eager["error"]
    print(json.dumps(row), flush=True)
    rows.append(row)

print()
print("| model | batch | correct (PTX / OpenCL C) | cold build s (PTX / OpenCL C) | tcc kernels | tcc device ms (PTX / OpenCL C) | tcc e2e ms | eager compute ms | eager e2e ms | device / eager compute | e2e / eager e2e |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    def f(key):
        value = r.get(key)
        return f"{value:.3f}" if isinstance(value, float) else "-"
    ratio = lambda a, b: f"{r[a] / r[b]:.2f}" if a in r and b in r else "-"
    print(f"| {r['model']} | {r['batch']} | {r.get('correct', r.get('error', '-'))} / {r.get('correct_opencl_c', r.get('error_opencl_c', '-'))} | "
          f"{f('cold_build_s')} / {f('cold_build_s_opencl_c')} | {r.get('tcc_kernels', '-')} | "
          f"{f('tcc_device_ms')} / {f('tcc_device_ms_opencl_c')} | {f('tcc_end_to_end_ms')} | {f('torch_compute_ms')} | {f('torch_end_to_end_ms')} | "
          f"{ratio('tcc_device_ms', 'torch_compute_ms')} | {ratio('tcc_end_to_end_ms', 'torch_end_to_end_ms')} |")
