#!/usr/bin/env python3
"""Generates test/onnx/exporters-kv: a small GPT-2 language model exported
with its key/value cache, the form a decode loop runs step after step
(issue 33, autoregressive decoding), in the two forms transformers has:

- `gpt2-static-kv-<exporter>`: a static cache (`StaticCache`, what
  `torch.compile` decodes with; `StaticDecoder` below). Inputs input_ids
  [batch, sequence], attention_mask [batch, 32], cache_position
  [sequence] (the positions of the step's tokens) and per layer
  past_key_values.L.key / .value [batch, heads, 32, head_dim]; outputs
  logits [batch, sequence, vocab] and present.L.key / .value, the buffers
  with the step's keys and values written at cache_position.
- `gpt2-kv-<exporter>`: a growing cache (`DynamicCache`): past_key_values
  [batch, heads, past_sequence, head_dim] in, present [..., past_sequence
  + sequence, ...] out, attention_mask [batch, past_sequence + sequence]
  (named total_sequence).

Runs on the GPU machine (torch, transformers, onnxruntime):
`python3 test/onnx/exporters/kv_cache.py OUT` writes OUT/exporters-kv.tar.xz,
which unpacks (`tar -C test/onnx/exporters-kv -xf ...`) into one case per
form and exporter (TorchScript, opset 17; dynamo), in the layout of the onnx
package's backend test data (model.onnx, test_data_set_N/input_N.pb,
output_N.pb); an export that fails is listed in SKIPPED with the reason.
The data sets are the steps a decode loop makes: a prompt of 6 tokens on an
empty cache, one-token steps after 6 and 13 cached positions, and a batch
of 3 with a row whose mask hides the first two positions. References are
onnxruntime's (CPU, fp32) outputs; the weights are the library's random
initialisation under a fixed seed. The model is two layers of hidden size
32 (two heads of 16) with a vocabulary of 128.
"""
import importlib.util
import os
import re
import sys
import tarfile
import tempfile
import traceback

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))

VOCAB = 128
HIDDEN = 32
HEADS = 2
LAYERS = 2
# (batch, past, sequence, masked positions at the start of row 1)
STEPS = [(2, 0, 6, 0), (2, 6, 1, 0), (2, 13, 1, 0), (3, 9, 2, 2)]
# The static cache's length (positions a call can attend to).
MAX_CACHE = 32


class Decoder(torch.nn.Module):
    """GPT-2 with its cache as flat tensors: the layout ONNX graphs of
    decoders have (one input and one output per layer's key and value)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, *past):
        from transformers import DynamicCache

        cache = DynamicCache()
        for i in range(LAYERS):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        present = out.past_key_values
        flat = []
        for i in range(LAYERS):
            if hasattr(present, "layers"):
                flat += [present.layers[i].keys, present.layers[i].values]
            else:
                flat += [present[i][0], present[i][1]]
        return (out.logits, *flat)


class StaticDecoder(torch.nn.Module):
    """A causal language model with a static cache (transformers'
    `StaticCache`, the form `torch.compile` decodes with), its cache as
    flat inputs and outputs: every layer's key and value buffers are
    [batch, heads, max_cache, head_dim] whatever the step, `cache_position`
    [sequence] (int64) holds the positions of the step's tokens (the
    prompt's 0..P, then P, P+1, ...), the step writes its keys and values
    there and returns the buffers updated, and `attention_mask` [batch,
    max_cache] covers the positions filled so far. Shapes stay static but
    for batch and sequence; what a step reads depends on values, not
    shapes."""

    def __init__(self, model, max_cache):
        super().__init__()
        self.model = model
        self.max_cache = max_cache

    def forward(self, input_ids, attention_mask, cache_position, *past):
        from transformers import StaticCache

        cache = StaticCache(config=self.model.config, max_cache_len=self.max_cache)
        for i, layer in enumerate(cache.layers):
            # Buffers of the call's own, returned updated.
            layer.keys, layer.values = past[2 * i].clone(), past[2 * i + 1].clone()
            layer.dtype, layer.device = past[2 * i].dtype, past[2 * i].device
            layer.batch_size, layer.num_heads = past[2 * i].shape[:2]
            layer.k_head_dim = layer.v_head_dim = past[2 * i].shape[-1]
            layer.cumulative_length = cache_position[0].clone()
            layer.is_initialized = True
        positions = cache_position.unsqueeze(0).expand(input_ids.shape[0], -1)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                         position_ids=positions, use_cache=True)
        flat = []
        for layer in cache.layers:
            flat += [layer.keys, layer.values]
        return (out.logits, *flat)


def static_names(layers=LAYERS):
    past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    return ["input_ids", "attention_mask", "cache_position", *past], ["logits", *present]


def static_step_inputs(batch, past, seq, masked, rng, max_cache=None, heads=HEADS, head_dim=HIDDEN // HEADS,
                       layers=LAYERS, vocab=VOCAB):
    """A step of the static-cache decoder: the cache holds `past` random
    positions (the rest zero) and the mask covers them and the step's."""
    max_cache = max_cache or MAX_CACHE
    ids = torch.from_numpy(rng.integers(0, vocab, size=(batch, seq), dtype=np.int64))
    mask = torch.zeros(batch, max_cache, dtype=torch.int64)
    mask[:, : past + seq] = 1
    if masked and batch > 1:
        mask[1, :masked] = 0
    cache = []
    for _ in range(2 * layers):
        buffer = np.zeros((batch, heads, max_cache, head_dim), dtype=np.float32)
        buffer[:, :, :past] = rng.standard_normal((batch, heads, past, head_dim))
        cache.append(torch.from_numpy(buffer))
    return (ids, mask, torch.arange(past, past + seq, dtype=torch.int64), *cache)


def export_static(model, path, exporter, max_cache=None, example=None, fold=True):
    """Exports StaticDecoder(model): batch and sequence symbolic. `fold`:
    the TorchScript exporter's constant folding (it folds a half model's
    transposed weights into fp32 initializers; off keeps them half)."""
    max_cache = max_cache or MAX_CACHE
    config = model.config
    layers = config.n_layer
    inputs, outputs = static_names(layers)
    # A step of three tokens (torch.export specializes an example's 1s).
    args = example or static_step_inputs(2, 6, 3, 0, np.random.default_rng(1), max_cache, config.n_head,
                                         config.n_embd // config.n_head, layers, config.vocab_size)
    decoder = StaticDecoder(model, max_cache)
    if exporter == "torchscript":
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch"},
                "cache_position": {0: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
        for name in inputs[3:] + outputs[1:]:
            axes[name] = {0: "batch"}
        torch.onnx.export(decoder, args, path, opset_version=17, dynamo=False, input_names=inputs,
                          output_names=outputs, dynamic_axes=axes, do_constant_folding=fold)
    else:
        batch = torch.export.Dim("batch", min=1, max=64)
        seq = torch.export.Dim("sequence", min=1, max=max_cache)
        shapes = ({0: batch, 1: seq}, {0: batch}, {0: seq}, tuple({0: batch} for _ in range(2 * layers)))
        program = torch.onnx.export(decoder, args, dynamo=True, input_names=inputs, output_names=outputs,
                                    dynamic_shapes=shapes)
        program.save(path)
    onnx.save(onnx.load(path), path, save_as_external_data=False)


def names():
    past = [f"past_key_values.{i}.{kind}" for i in range(LAYERS) for kind in ("key", "value")]
    present = [f"present.{i}.{kind}" for i in range(LAYERS) for kind in ("key", "value")]
    return ["input_ids", "attention_mask", *past], ["logits", *present]


def step_inputs(batch, past, seq, masked, rng):
    ids = torch.from_numpy(rng.integers(0, VOCAB, size=(batch, seq), dtype=np.int64))
    mask = torch.ones(batch, past + seq, dtype=torch.int64)
    if masked and batch > 1:
        mask[1, :masked] = 0
    head_dim = HIDDEN // HEADS
    cache = [torch.from_numpy(rng.standard_normal((batch, HEADS, past, head_dim)).astype(np.float32))
             for _ in range(2 * LAYERS)]
    return (ids, mask, *cache)


def export(model, path, exporter):
    inputs, outputs = names()
    args = step_inputs(2, 6, 1, 0, np.random.default_rng(1))
    if exporter == "torchscript":
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
                "logits": {0: "batch", 1: "sequence"}}
        for name in inputs[2:]:
            axes[name] = {0: "batch", 2: "past_sequence"}
        for name in outputs[1:]:
            axes[name] = {0: "batch", 2: "total_sequence"}
        torch.onnx.export(Decoder(model), args, path, opset_version=17, dynamo=False, input_names=inputs,
                          output_names=outputs, dynamic_axes=axes)
    else:
        batch = torch.export.Dim("batch", min=1, max=64)
        past = torch.export.Dim("past_sequence", min=1, max=512)
        seq = torch.export.Dim("sequence", min=1, max=512)
        # The mask's length is past + sequence: torch.export infers it (a sum of
        # two Dims cannot be declared).
        total = torch.export.Dim.DYNAMIC
        # forward(input_ids, attention_mask, *past): the cache is one tuple.
        shapes = ({0: batch, 1: seq}, {0: batch, 1: total}, tuple({0: batch, 2: past} for _ in range(2 * LAYERS)))
        program = torch.onnx.export(Decoder(model), args, dynamo=True, input_names=inputs, output_names=outputs,
                                    dynamic_shapes=shapes)
        program.save(path)
    onnx.save(onnx.load(path), path, save_as_external_data=False)


def write_case(directory, path, args, data_set):
    """gen.py's data set writer (onnxruntime's outputs as the reference) on
    the step's inputs in the graph's order."""
    spec = importlib.util.spec_from_file_location("exporters_gen", os.path.join(HERE, "gen.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.write_case(directory, path, dict(enumerate(args)), data_set)


def main():
    out = sys.argv[-1]
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp()
    skipped = []
    from transformers import GPT2Config, GPT2LMHeadModel

    for form, exporter in [(f, e) for f in ("kv", "static-kv") for e in ("torchscript", "dynamo")]:
        case = f"gpt2-{form}-{exporter}"
        path = os.path.join(work, case + ".onnx")
        try:
            torch.manual_seed(5)
            config = GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=64)
            model = GPT2LMHeadModel(config).eval()
            with torch.no_grad():
                (export if form == "kv" else export_static)(model, path, exporter)
            rng = np.random.default_rng(33)
            make = step_inputs if form == "kv" else static_step_inputs
            for index, step in enumerate(STEPS):
                write_case(os.path.join(work, "cases", case), path, make(*step, rng), index)
            print(f"{case}: {os.path.getsize(path) / 1e3:.0f} KB", flush=True)
        except Exception as error:  # an exporter's failure is a finding, not a stop
            first = re.sub(r"\x1b\[[0-9;]*m", "", str(error).splitlines()[0][:300]) if str(error) else ""
            reason = f"{type(error).__name__}: {first}"
            skipped.append(f"{case}: {reason}")
            print(f"{case}: SKIPPED {reason}", flush=True)
            traceback.print_exc(limit=3)
    os.makedirs(os.path.join(work, "cases"), exist_ok=True)
    with open(os.path.join(work, "cases", "SKIPPED"), "w") as f:
        f.write("\n".join(skipped) + "\n")
    archive = os.path.join(out, "exporters-kv.tar.xz")
    with tarfile.open(archive, "w:xz") as tar:
        for name in sorted(os.listdir(os.path.join(work, "cases"))):
            tar.add(os.path.join(work, "cases", name), arcname=name)
    print(f"{archive}: {os.path.getsize(archive) / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
