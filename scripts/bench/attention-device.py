#!/usr/bin/env python3
"""The flash-attention kernel (#tcc.attention) against PyTorch's
torch.nn.functional.scaled_dot_product_attention on the same shapes and
inputs, on the GPU machine in one run.

The cases are issue 31's: batch 32, 12 heads, head dimension 64, sequence
lengths 128, 512 and 2048, causal and not. Each is a one-op model
(`tcc.attention` on f32 inputs) that scripts/bench/build-attention-bundle.sh
compiles with `tcc compile --target=nvidia` (one flash-attention kernel;
the bundle's STATS.txt shows its `--stats`), and again with
`--precision=fp16` and `bf16` (CASE.fp16.so, CASE.bf16.so: the tensor-core
body, rounding the f32 inputs itself), and the case on f16 (bf16) tensors
with `--precision=fp16` (`bf16`) (CASE.fp16-graph.so, CASE.bf16-graph.so:
Q, K and V copied into the tiles as they are, as inside a model compiled
with --precision=fp16 or bf16; compared with SDPA in fp16 or bf16). This script times it with
tcc-benchmark (profiling events, the kernel's mean over --iterations calls
after 10 warm-up calls) on inputs generated here (uniform in [-1, 1),
seeded, written as .npy and passed with --input=@FILE) and times SDPA on
the same tensors by CUDA events (median of 20 calls after 10 warm-up
calls, scripts/bench/cuda_timing.py): in fp32 (TF32
off; PyTorch then picks its memory-efficient or math backend) and in fp16
and bf16 (the flash backend, forced with sdpa_kernel where the installed
torch has it). It checks each tcc output against SDPA's fp32 output (max
absolute difference) and prints one table with the ratios of the same
precision (torch us / tcc us: above 1 means tcc is faster).

Usage:
  attention-device.py --write-models DIR     (here: the models and DIR/CASES.json)
  attention-device.py BUNDLE [--device=N] [--no-torch] [--filter=TEXT] [--iterations=N]
                             [--precisions=fp16-graph,...] [--variant=BUNDLE2]...
                                             (on the device: BUNDLE is .device-attention)

--variant names another bundle of the same cases (built by another tcc, or
with other options: build-attention-bundle.sh --out=DIR); its artifacts
are timed beside the first bundle's, on the same inputs in the same run,
in rows of their own (the variant column names the bundle)."""
import json
import os
import subprocess
import sys
import tempfile

BATCH, HEADS, HEAD_DIM = 32, 12, 64
LENGTHS = [128, 512, 2048]


def cases():
    return [
        {"name": f"attention-b{BATCH}-h{HEADS}-s{s}-d{HEAD_DIM}{'-causal' if causal else ''}",
         "batch": BATCH, "heads": HEADS, "seq": s, "dim": HEAD_DIM, "causal": causal}
        for s in LENGTHS for causal in (False, True)
    ]


def mlir(case, element="f32"):
    t = f"tensor<{case['batch']}x{case['heads']}x{case['seq']}x{case['dim']}x{element}>"
    scale = 1.0 / case["dim"] ** 0.5
    causal = " causal = true" if case["causal"] else ""
    return (f"func.func @attention(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
            f"  %o = tcc.attention %q, %k, %v scale = {scale!r}{causal} : {t}, {t}, {t} -> {t}\n"
            f"  return %o : {t}\n}}\n")


def write_models(directory):
    os.makedirs(os.path.join(directory, "models"), exist_ok=True)
    for case in cases():
        with open(os.path.join(directory, "models", case["name"] + ".mlir"), "w") as out:
            out.write(mlir(case))
        for element in ("f16", "bf16"):
            with open(os.path.join(directory, "models", f"{case['name']}.{element}.mlir"),
                      "w") as out:
                out.write(mlir(case, element))
    with open(os.path.join(directory, "CASES.json"), "w") as out:
        json.dump(cases(), out, indent=1)
    print(f"{len(cases())} cases in {directory}/models")


def tensors(case):
    import numpy as np
    rng = np.random.default_rng(case["seq"])
    shape = (case["batch"], case["heads"], case["seq"], case["dim"])
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(3)]


# "fp16-graph" / "bf16-graph": the model itself in f16 / bf16 (inputs and
# output), as Q, K and V are inside a model compiled with --precision=fp16
# or bf16: the kernel copies them into its tiles as they are.
PRECISIONS = ["fp32", "fp16", "bf16", "fp16-graph", "bf16-graph"]


def to_bf16(array):
    """`array` rounded to bfloat16 (nearest even), as the raw two-byte
    elements (`<V2`) that tcc-run reads as bf16."""
    import numpy as np
    bits = array.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16).view("V2")


def from_half(array):
    """An output as float32: bf16 (`<V2`) widened from its bits."""
    import numpy as np
    if array.dtype.kind == "V":
        return (array.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def artifact_name(case, precision):
    """CASE.so for fp32, CASE.PRECISION.so for `--precision=fp16|bf16`."""
    return case["name"] + ("" if precision == "fp32" else f".{precision}") + ".so"


# The runtime tools of the first bundle (`main` sets it).
TOOLS = None


def tcc_run(bundle, case, arrays, device, iterations, scratch, precision="fp32"):
    """The attention kernel's mean device time (us; all kernels' sum when
    none is named attention), its kernel names and its output. At fp16 and
    bf16 the model keeps fp32 inputs and outputs, converted by kernels of
    their own at the edges: the attention kernel's time is the like-for-like
    figure against SDPA on half tensors."""
    import numpy as np
    paths = []
    for name, array in zip("qkv", arrays):
        path = os.path.join(scratch, f"{name}.npy")
        if precision == "fp16-graph":
            array = array.astype(np.float16)
        elif precision == "bf16-graph":
            array = to_bf16(array)
        np.save(path, array)
        paths.append(path)
    artifact = os.path.join(bundle, "models", artifact_name(case, precision))
    binaries = os.path.join(bundle, "bin")
    if not os.path.isdir(binaries):
        # A --variant bundle without runtime tools of its own: the first
        # bundle's (the artifacts differ, not the runtime).
        binaries = TOOLS
    common = [f"--input=@{p}" for p in paths] + ([f"--device={device}"] if device else [])
    command = [os.path.join(binaries, "tcc-benchmark"), artifact, "--json", "--warmup=10",
               f"--iterations={iterations}"] + common
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {run.stderr.strip()}")
    kernels = json.loads(run.stdout)["kernels"]
    output = os.path.join(scratch, "out.npy")
    command = [os.path.join(binaries, "tcc-run"), artifact, f"--output=@{output}"] + common
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {run.stderr.strip()}")
    attention = [k["mean_us"] for k in kernels if "attention" in k["name"]]
    us = sum(attention) if attention else sum(k["mean_us"] for k in kernels)
    return us, [k["name"] for k in kernels], from_half(np.load(output))


def torch_runs(case, arrays):
    """SDPA's fp32 output and its time per call (us) in fp32, fp16, bf16."""
    import torch
    import torch.nn.functional as F
    from cuda_timing import cuda_median_ms

    def graph_us(run):
        return 1000.0 * cuda_median_ms(run, 10, 20)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    q, k, v = (torch.from_numpy(a).cuda() for a in arrays)
    causal = case["causal"]
    times = {}
    with torch.no_grad():
        reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal).cpu().numpy()
        times["fp32"] = graph_us(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            qh, kh, vh = (t.to(dtype) for t in (q, k, v))
            run = lambda: F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal)
            try:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    times[name] = graph_us(run)
            except ImportError:
                times[name] = graph_us(run)
    return reference, times


def main(argv):
    if len(argv) >= 2 and argv[0] == "--write-models":
        write_models(argv[1])
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    bundle = argv[0]
    global TOOLS
    TOOLS = os.path.join(bundle, "bin")
    device, use_torch, text, iterations = None, True, "", 20
    wanted, variants = None, [bundle]
    for arg in argv[1:]:
        if arg.startswith("--device="):
            device = arg.split("=", 1)[1]
        elif arg == "--no-torch":
            use_torch = False
        elif arg.startswith("--filter="):
            text = arg.split("=", 1)[1]
        elif arg.startswith("--iterations="):
            iterations = int(arg.split("=", 1)[1])
        elif arg.startswith("--precisions="):
            wanted = arg.split("=", 1)[1].split(",")
        elif arg.startswith("--variant="):
            variants.append(arg.split("=", 1)[1])
        else:
            print(f"unknown argument {arg}", file=sys.stderr)
            return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(bundle, "CASES.json")) as f:
        selected = [case for case in json.load(f) if text in case["name"]]
    precisions = [p for p in PRECISIONS
                  if os.path.exists(os.path.join(bundle, "models",
                                                 artifact_name(selected[0], p)))
                  and (wanted is None or p in wanted)] if selected else []
    header = "| case | precision | variant | tcc attention us | kernels |"
    rule = "|---|---|---|---|---|"
    if use_torch:
        header += " max abs diff vs SDPA fp32 | torch SDPA us | torch/tcc |"
        rule += "---|---|---|"
    print(header)
    print(rule)
    with tempfile.TemporaryDirectory() as scratch:
        for case in selected:
            arrays = tensors(case)
            reference, times = torch_runs(case, arrays) if use_torch else (None, {})
            for precision in precisions:
                for variant in variants:
                    if not os.path.exists(os.path.join(variant, "models",
                                                       artifact_name(case, precision))):
                        continue  # a variant built without this precision
                    us, names, output = tcc_run(variant, case, arrays, device, iterations,
                                                scratch, precision)
                    row = (f"| {case['name']} | {precision} | {os.path.basename(variant)} |"
                           f" {us:.1f} | {len(names)} ({', '.join(names)}) |")
                    if use_torch:
                        diff = float(abs(output - reference).max())
                        peer = times[precision.split("-")[0]]
                        row += f" {diff:.2e} | {peer:.1f} | {peer / us:.2f} |"
                    print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
