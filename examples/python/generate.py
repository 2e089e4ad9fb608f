#!/usr/bin/env python3
"""Greedy text generation with a decoder compiled by tcc, its key/value
cache kept in device memory between steps (issue 33).

The model is a decoder step exported with a static cache (transformers'
StaticCache; test/onnx/exporters/kv_cache.py and
scripts/bench/decode-device.py export GPT-2 this way): inputs input_ids
[batch, sequence], attention_mask [batch, max_cache], cache_position
[sequence] and past_key_values.L.key / .value; outputs logits and
present.L.key / .value. Compile it once with the batch and the sequence
symbolic, so that the prompt's step and every one-token step run the same
artifact:

    tcc compile decoder.onnx -o decoder.so --dim batch=1..8 --dim sequence=1..256

and generate:

    python3 examples/python/generate.py decoder.so --prompt 27,69,126 --tokens 20

Each step's cache inputs are the previous step's outputs as
`tcc.DeviceArray`s (`Model.run_device`), so the cache never crosses to
the host; only the ids, the mask and the positions go up, and the logits
come back for the argmax. Prints the new tokens of each prompt row (rows
separated by `;` in --prompt) and the time per token.
"""
import argparse
import sys
import time

import numpy as np

import tcc


def generate(model, prompt, new_tokens):
    """The new tokens of each row of `prompt` ([batch, length] int64),
    and the seconds each one-token step took."""
    (step,) = model.functions
    inputs = {i.name: i for i in step.inputs}
    outputs = [o.name for o in step.outputs]
    for needed in ("input_ids", "attention_mask", "cache_position"):
        if needed not in inputs:
            raise ValueError(f"{step.signature} has no input {needed}: not a static-cache decoder step")
    max_cache = inputs["attention_mask"].shape[1]
    batch, length = prompt.shape
    if length + new_tokens - 1 > max_cache:
        raise ValueError(f"{length} + {new_tokens} tokens do not fit a cache of {max_cache} positions")
    # The cache starts empty (zeros); later steps take the device arrays
    # the previous one returned.
    cache = {name: np.zeros([batch] + list(info.shape[1:]), dtype=info.dtype)
             for name, info in inputs.items() if name.startswith("past_key_values.")}
    ids, start, tokens, step_seconds = prompt, 0, [], []
    for n in range(new_tokens):
        began = time.perf_counter()
        seq = ids.shape[1]
        mask = np.zeros((batch, max_cache), dtype=inputs["attention_mask"].dtype)
        mask[:, : start + seq] = 1
        feeds = {"input_ids": ids, "attention_mask": mask,
                 "cache_position": np.arange(start, start + seq, dtype=np.int64), **cache}
        result = dict(zip(outputs, model.run_device(**feeds)))
        cache = {name: result[name.replace("past_key_values.", "present.", 1)] for name in cache}
        logits = result["logits"].numpy()  # the one read-back of the step
        ids = logits[:, -1].argmax(-1).astype(np.int64)[:, None]
        tokens.append(ids[:, 0])
        if n > 0:
            step_seconds.append(time.perf_counter() - began)
        start += seq
    return np.stack(tokens, axis=1), step_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="the compiled decoder (decoder.so)")
    parser.add_argument("--prompt", required=True, help="token ids: 1,2,3 (rows separated by ;)")
    parser.add_argument("--tokens", type=int, default=16, help="new tokens to generate")
    parser.add_argument("--device", help="OpenCL device selector or CUDA ordinal")
    parser.add_argument("--backend", choices=["opencl", "cuda"])
    args = parser.parse_args()
    rows = [[int(t) for t in row.split(",")] for row in args.prompt.split(";")]
    if len({len(r) for r in rows}) != 1:
        sys.exit("generate.py: every prompt row needs the same length")
    model = tcc.load(args.model, device=args.device, backend=args.backend)
    tokens, steps = generate(model, np.array(rows, dtype=np.int64), args.tokens)
    for row in tokens:
        print(" ".join(str(t) for t in row))
    if steps:
        print(f"{1000 * sum(steps) / len(steps):.3f} ms per token ({len(steps)} one-token steps)", file=sys.stderr)


if __name__ == "__main__":
    main()
