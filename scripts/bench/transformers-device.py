#!/usr/bin/env python3
"""tcc against PyTorch on the public models of issue 31, like for like.

Two steps run on the GPU machine (torch, torchvision, transformers,
onnxruntime; no Rust or LLVM), one here between them:

  1. there: `transformers-device.py export OUT [MODEL...]` builds each model
     in torch with deterministic low-entropy weights (every float tensor
     keeps its initialiser's mean and standard deviation, its values a
     4093-value random block tiled over it, so the files compress for the
     trip), exports it with `torch.onnx.export` (TorchScript exporter,
     opset 17, batch 1, static shapes) and writes OUT/tx-models.tar.xz;
     with `--dynamic`, the batch (and a text model's sequence) axes stay
     dynamic (`dim_param`s `batch`, `sequence`: for `tcc compile --dim`,
     issue 33) and the archive is OUT/tx-models-dynamic.tar.xz.
  2. here: `scripts/bench/build-transformers-bundle.sh` compiles each model with
     `tcc compile --target=nvidia` per batch and precision into
     .device-tx/ (with release tcc-run and tcc-benchmark).
  3. there: `transformers-device.py time .device-tx [--batches=1,32]
     [--precisions=fp32,fp16]` rebuilds the same torch models (the weights
     are a function of the model's name), and for each model, batch and
     precision times in one process run:
       - tcc: `tcc-benchmark --backend=cuda --json --resident` (the median
         call with its inputs and outputs left on the GPU, the CUDA graph
         replayed: the like-for-like figure against torch's timings on
         GPU tensors), and without `--resident` the kernels' device time
         per call (profiling events around each kernel) and the
         end-to-end median, uploads and downloads included;
       - torch eager and `torch.compile(mode="reduce-overhead")` with the
         inputs resident on the GPU, TF32 off in fp32, `.half()` /
         `.to(torch.bfloat16)` for half precision; median of CUDA-event
         timings after warm-up;
     and checks tcc's output against onnxruntime's fp32 output on the CPU
     (relative Frobenius error; at batch 1 only unless `--reference-all`,
     where a static batch-1 export runs its rows one at a time). Prints
     one JSON line per case and a table.
  there: `transformers-device.py profile vit_b_16:32:fp16 ...` prints
     torch.compile's kernels for a model, batch and precision (the
     profiler's times per call), to set beside tcc's own kernel table
     (`tcc-benchmark M.so --backend=cuda`).

Models: bert (transformers BertModel, base, seq 128), gpt2 (GPT2Model,
small, seq 128), vit_b_16, resnet50, mobilenet_v2 (torchvision), and the
held-out convnext_tiny and efficientnet_b0.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

SEQ = 128
BLOCK = 4093
PUBLIC = ["bert", "gpt2", "vit_b_16", "resnet50", "mobilenet_v2"]
HELD_OUT = ["convnext_tiny", "efficientnet_b0"]


def build(name):
    """The torch model `name` in eval mode with deterministic weights, and
    a function making its example inputs for a batch."""
    import torch

    if name in ("bert", "gpt2"):
        import transformers

        if name == "bert":
            model = transformers.BertModel(transformers.BertConfig())
        else:
            model = transformers.GPT2Model(transformers.GPT2Config())
        vocab = model.config.vocab_size

        def inputs(batch):
            rng = np.random.default_rng(7)
            ids = rng.integers(0, vocab, size=(batch, SEQ), dtype=np.int64)
            if name == "bert":
                mask = np.ones((batch, SEQ), dtype=np.int64)
                mask[1::2, SEQ * 3 // 4 :] = 0  # every other row padded
                return {"input_ids": ids, "attention_mask": mask}
            return {"input_ids": ids}
    else:
        import torchvision

        model = getattr(torchvision.models, name)(weights=None)

        def inputs(batch):
            rng = np.random.default_rng(7)
            return {"input": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}

    tile_weights(model, name)
    return model.eval(), inputs


def tile_weights(model, name):
    """Makes `model`'s weights deterministic and low-entropy: every float
    tensor keeps its initialiser's mean and standard deviation, its values
    a 4093-value random block (seeded by `name`) tiled over it."""
    import torch

    rng = np.random.default_rng(sum(map(ord, name)))
    block = torch.from_numpy(rng.standard_normal(BLOCK).astype(np.float32))
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            if not tensor.is_floating_point() or tensor.numel() == 0:
                continue
            mean, std = tensor.float().mean(), tensor.float().std() if tensor.numel() > 1 else 0.0
            reps = -(-tensor.numel() // BLOCK)
            tiled = block.repeat(reps)[: tensor.numel()].reshape(tensor.shape)
            tensor.copy_(mean + std * tiled)


def output_of(result):
    """The first tensor of a model's result (last_hidden_state, logits)."""
    if hasattr(result, "last_hidden_state"):
        return result.last_hidden_state
    if isinstance(result, (tuple, list)):
        return result[0]
    return result


def export(args):
    import torch

    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp()
    names = args.models or PUBLIC + HELD_OUT
    for name in names:
        model, inputs = build(name)
        example = inputs(1)
        if args.half:
            # The graph itself in float16 (`model.half()`), as a half
            # deployment exports it: float inputs and the output too.
            model = model.half()
            if hasattr(model, "set_attn_implementation"):
                # The TorchScript exporter's SDPA in half multiplies f16 by
                # f32 constants (a graph onnxruntime refuses too): the
                # eager attention is the same math.
                model.set_attn_implementation("eager")
            example = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in example.items()}
        tensors = tuple(torch.from_numpy(v) for v in example.values())

        class Wrapped(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *xs):
                return output_of(self.inner(*xs))

        path = os.path.join(work, f"{name}.onnx")
        axes = None
        if args.dynamic:
            text = name in ("bert", "gpt2")
            dims = {0: "batch", 1: "sequence"} if text else {0: "batch"}
            axes = {n: dims for n in list(example) + ["output"]}
        torch.onnx.export(
            Wrapped(model), tensors, path, opset_version=17, dynamo=False,
            input_names=list(example), output_names=["output"], dynamic_axes=axes,
        )
        print(f"exported {name}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    kind = ("-dynamic" if args.dynamic else "") + ("-fp16" if args.half else "")
    archive = os.path.join(args.out, f"tx-models{kind}.tar.xz")
    subprocess.run(["tar", "-C", work, "-cf", archive, "-I", "xz -T0 -6", "."], check=True)
    print(f"{archive}: {os.path.getsize(archive) / 1e6:.1f} MB")


def cuda_median_ms(fn, warmup=10, iterations=50):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def time_cases(args):
    import onnxruntime as ort
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    bundle = os.path.abspath(args.bundle)
    manifest = [json.loads(line) for line in open(os.path.join(bundle, "MANIFEST.jsonl"))]
    models = os.path.join(bundle, "models")
    if not os.path.isdir(models):
        os.makedirs(models)
        with tarfile.open(os.path.join(bundle, "tx-models.tar.xz")) as tar:
            tar.extractall(models)
    for case in manifest:
        artifact = os.path.join(bundle, case["artifact"])
        if not os.path.exists(artifact):
            subprocess.run(["unxz", "-k", "-T0", artifact + ".xz"], check=True)
    batches = [int(b) for b in args.batches.split(",")]
    precisions = args.precisions.split(",")
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    rows = []
    for name in dict.fromkeys(case["model"] for case in manifest):
        model, inputs = build(name)
        for batch in batches:
            # The inputs are a function of the batch (seeded), written here
            # for tcc-run: random images would not compress for the trip.
            feeds = inputs(batch)
            for key, value in feeds.items():
                np.save(os.path.join(models, f"{name}.b{batch}.{key}.npy"), value)
            session = ort.InferenceSession(os.path.join(models, f"{name}.onnx"))
            reference = reference_output(session, feeds) if batch == 1 or args.reference_all else None
            for precision in precisions:
                row = {"model": name, "batch": batch, "precision": precision}
                dtype = dtypes[precision]
                net = copy.deepcopy(model).to("cuda", dtype=dtype)
                xs = [
                    torch.from_numpy(v).cuda().to(dtype) if v.dtype == np.float32 else torch.from_numpy(v).cuda()
                    for v in feeds.values()
                ]
                with torch.no_grad():
                    row["torch_eager_ms"] = cuda_median_ms(lambda: net(*xs))
                    compiled = torch.compile(net, mode="reduce-overhead")
                    row["torch_compile_ms"] = cuda_median_ms(lambda: compiled(*xs), warmup=5)
                torch._dynamo.reset()
                del net, compiled
                torch.cuda.empty_cache()
                case = next(
                    (c for c in manifest if c["model"] == name and c["batch"] == batch and c["precision"] == precision),
                    None,
                )
                if case is None:
                    row["tcc"] = "not built"
                else:
                    row.update(run_tcc(bundle, case, models, name, batch, reference))
                if "tcc_device_ms" in row:
                    row["tcc_over_compile"] = row["tcc_device_ms"] / row["torch_compile_ms"]
                if isinstance(row.get("tcc_resident_ms"), float):
                    row["tcc_resident_over_compile"] = row["tcc_resident_ms"] / row["torch_compile_ms"]
                print(json.dumps(row), flush=True)
                rows.append(row)
        del model
    print()
    print("| model | batch | precision | launches | tcc device ms | tcc resident ms | tcc e2e ms (CUDA graph) | tcc e2e ms (no graph) | torch eager ms | torch.compile ms | tcc resident / torch.compile | tcc device / torch.compile | rel. error vs onnxruntime fp32 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        def f(key, fmt="{:.3f}"):
            return fmt.format(r[key]) if isinstance(r.get(key), float) else str(r.get(key, "—"))
        print(f"| {r['model']} | {r['batch']} | {r['precision']} | {r.get('tcc_launches', '—')} | {f('tcc_device_ms')} | {f('tcc_resident_ms')} | "
              f"{f('tcc_e2e_ms')} | {f('tcc_e2e_no_graph_ms')} | {f('torch_eager_ms')} | {f('torch_compile_ms')} | "
              f"{f('tcc_resident_over_compile', '{:.2f}')} | {f('tcc_over_compile', '{:.2f}')} | {f('tcc_rel_error', '{:.1e}')} |")


def reference_output(session, feeds):
    """onnxruntime's first output for `feeds`. A static export of batch 1
    (the default `export`) refuses a larger batch: its rows then run one
    at a time, each a batch of 1, and the outputs are stacked (the models
    here treat every row of a batch on its own)."""
    declared = [i.shape[0] if i.shape else None for i in session.get_inputs()]
    batch = next(iter(feeds.values())).shape[0]
    if batch == 1 or any(d != 1 for d in declared):
        return session.run(None, feeds)[0]
    rows = [session.run(None, {k: v[r : r + 1] for k, v in feeds.items()})[0] for r in range(batch)]
    return np.concatenate(rows, axis=0)


def run_tcc(bundle, case, models, name, batch, reference):
    """tcc-benchmark and (where a reference is given) tcc-run's output
    against onnxruntime's."""
    binary = os.path.join(bundle, "bin")
    artifact = os.path.join(bundle, case["artifact"])
    inputs = [f"--input=@{os.path.join(models, f'{name}.b{batch}.{key}.npy')}" for key in case["inputs"]]
    env = dict(os.environ, TCC_CACHE_DIR=os.path.join(bundle, "cache"))
    result = {}
    bench = subprocess.run(
        [os.path.join(binary, "tcc-benchmark"), artifact, "--backend=cuda", "--warmup=5", "--iterations=50", "--json", *inputs],
        capture_output=True, text=True, env=env,
    )
    if bench.returncode != 0:
        return {"tcc": "benchmark failed: " + bench.stderr.strip()[-300:]}
    report = json.loads(bench.stdout)
    result["tcc_device_ms"] = report["device_ms_per_call"]
    result["tcc_e2e_ms"] = report["latency_ms"]["median"]
    result["tcc_kernels"] = len(report["kernels"])
    result["tcc_launches"] = sum(k["calls"] for k in report["kernels"]) // 50
    result["tcc_cuda_graphs"] = report.get("cuda_graphs", {}).get("recorded")
    # The same calls with every kernel launched by the host (no CUDA graph).
    direct = subprocess.run(
        [os.path.join(binary, "tcc-benchmark"), artifact, "--backend=cuda", "--warmup=5", "--iterations=50", "--json", *inputs],
        capture_output=True, text=True, env=dict(env, TCC_CUDA_GRAPHS="0"),
    )
    if direct.returncode == 0:
        result["tcc_e2e_no_graph_ms"] = json.loads(direct.stdout)["latency_ms"]["median"]
    # Inputs and outputs resident on the device (the CUDA graph replayed,
    # nothing copied to or from the host): what torch's timing measures.
    resident = subprocess.run(
        [os.path.join(binary, "tcc-benchmark"), artifact, "--backend=cuda", "--warmup=5", "--iterations=50", "--json",
         "--resident", *inputs],
        capture_output=True, text=True, env=env,
    )
    if resident.returncode == 0:
        result["tcc_resident_ms"] = json.loads(resident.stdout)["latency_ms"]["median"]
    else:
        result["tcc_resident_ms"] = "failed: " + resident.stderr.strip()[-300:]
    if reference is not None:
        out = os.path.join(tempfile.mkdtemp(), "out.npy")
        run = subprocess.run(
            [os.path.join(binary, "tcc-run"), artifact, "--backend=cuda", *inputs, f"--output=@{out}"],
            capture_output=True, text=True, env=env,
        )
        if run.returncode != 0:
            result["tcc_rel_error"] = "run failed: " + run.stderr.strip()[-300:]
        else:
            got = np.load(out).astype(np.float64).reshape(reference.shape)
            want = reference.astype(np.float64)
            result["tcc_rel_error"] = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
    return result


def profile(args):
    """torch.compile's kernels, per model, batch and precision: the
    median call (CUDA events on resident inputs, as `time` measures it),
    then the profiler's kernel times over 10 calls, per call, most first."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for case in args.cases:
        name, batch, precision = case.split(":")
        model, inputs = build(name)
        dtype = dtypes[precision]
        net = model.to("cuda", dtype=dtype)
        xs = [
            torch.from_numpy(v).cuda().to(dtype) if v.dtype == np.float32 else torch.from_numpy(v).cuda()
            for v in inputs(int(batch)).values()
        ]
        compiled = torch.compile(net, mode="reduce-overhead")
        with torch.no_grad():
            ms = cuda_median_ms(lambda: compiled(*xs), warmup=5)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    compiled(*xs)
                torch.cuda.synchronize()
        rows = []
        for event in prof.key_averages():
            total = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
            if event.count and total:
                rows.append((total / 10, event.count / 10, event.key))
        rows.sort(reverse=True)
        print(f"== {case}: {ms:.3f} ms a call, {sum(r[0] for r in rows) / 1000:.3f} ms of kernels")
        for us, count, key in rows[: args.top]:
            print(f"{us:9.1f} us  x{count:<5g} {key[:110]}")
        torch._dynamo.reset()
        del net, compiled
        torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    e = sub.add_parser("export")
    e.add_argument("out")
    e.add_argument("models", nargs="*")
    e.add_argument("--dynamic", action="store_true", help="keep the batch (and sequence) axes dynamic")
    e.add_argument("--half", action="store_true",
                   help="export the models themselves in float16 (model.half()): tx-models-fp16.tar.xz")
    t = sub.add_parser("time")
    t.add_argument("bundle")
    t.add_argument("--batches", default="1,32")
    t.add_argument("--precisions", default="fp32")
    t.add_argument("--reference-all", action="store_true", help="check accuracy at every batch, not only 1")
    p = sub.add_parser("profile", help="torch.compile's kernel times, per MODEL:BATCH:PRECISION")
    p.add_argument("cases", nargs="+", help="e.g. vit_b_16:32:fp16")
    p.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    {"export": export, "time": time_cases, "profile": profile}[args.step](args)


if __name__ == "__main__":
    sys.exit(main())
