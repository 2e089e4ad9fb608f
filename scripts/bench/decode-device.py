#!/usr/bin/env python3
"""Greedy decoding of GPT-2 small with a static key/value cache: tcc
against PyTorch eager and `torch.compile(mode="reduce-overhead")` on the
same weights (issue 33, autoregressive decoding).

Two steps run on the GPU machine (torch, transformers, onnxruntime), one
here between them:

  1. there: `decode-device.py export OUT [--max-cache=256]` builds
     GPT2LMHeadModel (GPT2Config(): small, 124M parameters) with the
     deterministic low-entropy weights of transformers-device.py, wraps it
     in test/onnx/exporters/kv_cache.py's StaticDecoder (transformers'
     StaticCache of max-cache positions, its buffers as inputs and
     outputs) and exports it twice with the TorchScript exporter (opset
     17, batch and sequence symbolic): in fp32, and in fp16 (`.half()`:
     the graph, its cache and its logits in half; transformers' eager
     attention, as the exporter's SDPA mixes float and half operands) into
     OUT/decode-models.tar.xz.
  2. here: `scripts/bench/build-decode-bundle.sh DECODE_MODELS_TAR_XZ`
     compiles both for `--target=nvidia --backend=cuda` into .device-decode/.
  3. there: `decode-device.py time .device-decode [--batch=1]
     [--prompt=128] [--tokens=128]` rebuilds the same torch model and, per
     precision, generates `tokens` tokens greedily after a `prompt`-token
     prompt (the same seeded ids on both sides):
       - torch eager and torch.compile(mode="reduce-overhead",
         fullgraph=True) on the one-token step, transformers' StaticCache
         on the GPU (the prompt's step eager on both): decode ms per token
         (CUDA events over the whole loop, argmax on the GPU), median of 3
         loops after a warm-up loop;
       - tcc: `tcc-benchmark --decode=TOKENS --prompt=@ids.npy
         --backend=cuda --json` (the cache kept in device memory between
         steps, the logits read back for the argmax on the host);
     and checks that tcc generates the same tokens as torch eager. Prints
     one JSON line per precision and a table.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build():
    """GPT-2 small with its LM head and transformers-device.py's weights."""
    import transformers

    tx = load(os.path.join(HERE, "transformers-device.py"), "transformers_device")
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    tx.tile_weights(model, "gpt2-lm")
    return model.eval()


def tie_period(model):
    """The tiled weights repeat the token embedding (which is also the LM
    head) every `period` rows, so tokens t and t + k * period have equal
    logits in exact arithmetic and identical embeddings: which copy the
    argmax takes depends on the last bit of each product's summation
    order. Tokens are compared modulo the period (the continuation after
    either copy is the same); `vocab` when no row repeats."""
    wte = model.transformer.wte.weight.detach()
    same = (wte == wte[0]).all(dim=1).nonzero().flatten().tolist()
    return same[1] if len(same) > 1 else wte.shape[0]


def prompt_ids(batch, length, vocab, same_rows=False):
    rows = 1 if same_rows else batch
    ids = np.random.default_rng(7).integers(0, vocab, size=(rows, length), dtype=np.int64)
    return np.repeat(ids, batch, axis=0) if same_rows else ids


def export(args):
    import torch

    kv = load(os.path.join(ROOT, "test", "onnx", "exporters", "kv_cache.py"), "kv_cache")
    work = tempfile.mkdtemp()
    dtypes = {"fp32": torch.float32, "fp16": torch.float16}
    for precision in args.precisions.split(","):
        dtype = dtypes[precision]
        model = build().to("cuda", dtype=dtype)
        if precision == "fp16":
            # The TorchScript exporter's scaled_dot_product_attention mixes
            # float and float16 operands in half (an invalid graph): the
            # half export takes transformers' eager attention (same math).
            model.set_attn_implementation("eager")
        config = model.config
        example = kv.static_step_inputs(2, 6, 3, 0, np.random.default_rng(1), args.max_cache, config.n_head,
                                        config.n_embd // config.n_head, config.n_layer, config.vocab_size)
        example = tuple(t.to("cuda", dtype=dtype) if t.is_floating_point() else t.cuda() for t in example)
        path = os.path.join(work, f"gpt2-decode.{precision}.onnx")
        with torch.no_grad():
            kv.export_static(model, path, "torchscript", max_cache=args.max_cache, example=example,
                             fold=precision == "fp32")
        print(f"exported {path}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    os.makedirs(args.out, exist_ok=True)
    archive = os.path.join(args.out, "decode-models.tar.xz")
    subprocess.run(["tar", "-C", work, "-cf", archive, "-I", "xz -T0 -6", "."], check=True)
    print(f"{archive}: {os.path.getsize(archive) / 1e6:.1f} MB")


def torch_decode(model, ids, tokens, max_cache, compiled):
    """Greedy decoding with transformers' StaticCache: the tokens, and the
    decode loop's milliseconds per token (median of 3 loops after one)."""
    import torch
    from transformers import StaticCache

    batch, length = ids.shape
    cache = StaticCache(config=model.config, max_cache_len=max_cache)
    mask = torch.zeros(batch, max_cache, dtype=torch.int64, device="cuda")
    position = torch.zeros(batch, 1, dtype=torch.int64, device="cuda")

    def step(token, mask, position):
        out = model(input_ids=token, attention_mask=mask, past_key_values=cache, position_ids=position,
                    use_cache=True)
        return out.logits[:, -1].argmax(-1, keepdim=True)

    step_fn = torch.compile(step, mode="reduce-overhead", fullgraph=True) if compiled else step
    times, generated = [], None
    for loop in range(4):
        cache.reset()
        mask.zero_()
        mask[:, :length] = 1
        positions = torch.arange(length, device="cuda").unsqueeze(0).expand(batch, -1)
        token = step(ids, mask, positions)  # the prompt's step, eager
        out = [token]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for t in range(tokens - 1):
            mask[:, length + t] = 1
            position.fill_(length + t)
            token = step_fn(token, mask, position)
            if compiled:
                token = token.clone()  # CUDA-graph outputs are overwritten by the next replay
            out.append(token)
        end.record()
        end.synchronize()
        if loop > 0:
            times.append(start.elapsed_time(end) / max(tokens - 1, 1))
        generated = torch.cat(out, 1).cpu().numpy()
    return generated, float(np.median(times))


def time_decode(args):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    bundle = os.path.abspath(args.bundle)
    models = os.path.join(bundle, "models")
    manifest = [json.loads(line) for line in open(os.path.join(bundle, "MANIFEST.jsonl"))]
    for case in manifest:
        artifact = os.path.join(bundle, case["artifact"])
        if not os.path.exists(artifact):
            subprocess.run(["unxz", "-k", "-T0", artifact + ".xz"], check=True)
    base = build()
    ids = prompt_ids(args.batch, args.prompt, base.config.vocab_size, args.same_rows)
    os.makedirs(models, exist_ok=True)
    np.save(os.path.join(models, "prompt.npy"), ids)
    rows = []
    for case in manifest:
        precision = case["precision"]
        if precision not in args.precisions.split(","):
            continue
        dtype = {"fp32": torch.float32, "fp16": torch.float16}[precision]
        max_cache = case["max_cache"]
        row = {"precision": precision, "batch": args.batch, "prompt": args.prompt, "tokens": args.tokens}
        model = build().to("cuda", dtype=dtype)
        with torch.no_grad():
            want, row["torch_eager_ms_per_token"] = torch_decode(model, torch.from_numpy(ids).cuda(), args.tokens,
                                                                 max_cache, compiled=False)
            _, row["torch_compile_ms_per_token"] = torch_decode(model, torch.from_numpy(ids).cuda(), args.tokens,
                                                                max_cache, compiled=True)
        torch._dynamo.reset()
        del model
        torch.cuda.empty_cache()
        env = dict(os.environ, TCC_CACHE_DIR=os.path.join(bundle, "cache"))
        bench = subprocess.run(
            [os.path.join(bundle, "bin", "tcc-benchmark"), os.path.join(bundle, case["artifact"]), "--backend=cuda",
             f"--decode={args.tokens}", f"--prompt=@{os.path.join(models, 'prompt.npy')}", "--warmup=1",
             "--iterations=3", "--json"],
            capture_output=True, text=True, env=env)
        if bench.returncode != 0:
            row["tcc"] = "failed: " + bench.stderr.strip()[-400:]
        else:
            report = json.loads(bench.stdout)["decode"]
            row["tcc_ms_per_token"] = report["ms_per_token"]
            row["tcc_prefill_ms"] = report["prefill_ms"]
            got = np.array(report["tokens"])
            row["tokens_equal_to_eager"] = int((got == want).all(axis=0).cumprod().sum())
            # Per prompt row: how many leading tokens agree with eager.
            row["equal_per_row"] = [int((g == w).cumprod().sum()) for g, w in zip(got, want)]
            # The same, counting the tied copies of a token as equal.
            period = tie_period(base)
            row["tie_period"] = period
            row["equal_per_row_up_to_ties"] = [int((g % period == w % period).cumprod().sum())
                                               for g, w in zip(got, want)]
            if args.same_rows:
                row["tcc_rows_identical"] = bool((got == got[:1]).all())
                row["eager_rows_identical"] = bool((want == want[:1]).all())
            row["tcc_tokens_per_s"] = 1000.0 * args.batch / row["tcc_ms_per_token"]
            row["torch_compile_tokens_per_s"] = 1000.0 * args.batch / row["torch_compile_ms_per_token"]
            row["tcc_over_compile_tokens_per_s"] = row["tcc_tokens_per_s"] / row["torch_compile_tokens_per_s"]
        print(json.dumps(row), flush=True)
        rows.append(row)
    print()
    print("| precision | batch | prompt + new tokens | tcc ms/token | torch eager ms/token | torch.compile ms/token | tcc tokens/s | tcc / torch.compile (tokens/s) | tokens equal to eager |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        def f(key, fmt="{:.3f}"):
            return fmt.format(r[key]) if isinstance(r.get(key), (int, float)) else str(r.get(key, "—"))
        print(f"| {r['precision']} | {r['batch']} | {r['prompt']} + {r['tokens']} | {f('tcc_ms_per_token')} | "
              f"{f('torch_eager_ms_per_token')} | {f('torch_compile_ms_per_token')} | {f('tcc_tokens_per_s', '{:.0f}')} | "
              f"{f('tcc_over_compile_tokens_per_s', '{:.2f}')} | {r.get('tokens_equal_to_eager', '—')} of {r['tokens']} "
              f"(up to tied copies: {min(r.get('equal_per_row_up_to_ties', [0]))}) |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    e = sub.add_parser("export")
    e.add_argument("out")
    e.add_argument("--max-cache", type=int, default=256)
    e.add_argument("--precisions", default="fp32,fp16")
    t = sub.add_parser("time")
    t.add_argument("bundle")
    t.add_argument("--batch", type=int, default=1)
    t.add_argument("--prompt", type=int, default=128)
    t.add_argument("--tokens", type=int, default=128)
    t.add_argument("--precisions", default="fp32,fp16")
    t.add_argument("--same-rows", action="store_true", help="every prompt row the same (they must decode alike)")
    args = parser.parse_args()
    export(args) if args.step == "export" else time_decode(args)


if __name__ == "__main__":
    sys.exit(main())
