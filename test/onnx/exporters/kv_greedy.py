"""Writes test/onnx/exporters-kv/greedy.json: the tokens onnxruntime
generates greedily with the static-cache GPT-2 of test/onnx/exporters-kv
(the reference of the decode loop's tests: tcc-benchmark --decode, the
Rust example `generate` and examples/python/generate.py must make the
same tokens). Needs onnx, onnxruntime and numpy (no torch):
`python3 test/onnx/exporters/kv_greedy.py`.
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
CASE = os.path.join(HERE, "..", "exporters-kv", "gpt2-static-kv-torchscript", "model.onnx")
PROMPT = [[27, 69, 126, 78, 78, 78], [112, 49, 54, 72, 71, 126]]  # tokens that change along the way
NEW_TOKENS = 20


def main():
    model = onnx.load(CASE)
    session = ort.InferenceSession(CASE, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in model.graph.input}
    max_cache = inputs["attention_mask"].type.tensor_type.shape.dim[1].dim_value
    ids = np.array(PROMPT, dtype=np.int64)
    batch = ids.shape[0]
    cache = {}
    for name, info in inputs.items():
        if name.startswith("past_key_values."):
            dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
            cache[name] = np.zeros([batch] + dims[1:], dtype=np.float32)
    names = [o.name for o in model.graph.output]
    start, tokens = 0, []
    for _ in range(NEW_TOKENS):
        seq = ids.shape[1]
        mask = np.zeros((batch, max_cache), dtype=np.int64)
        mask[:, : start + seq] = 1
        feeds = {"input_ids": ids, "attention_mask": mask,
                 "cache_position": np.arange(start, start + seq, dtype=np.int64), **cache}
        out = dict(zip(names, session.run(None, feeds)))
        for name in cache:
            cache[name] = out[name.replace("past_key_values.", "present.")]
        ids = out["logits"][:, -1].argmax(-1).astype(np.int64)[:, None]
        tokens.append(ids[:, 0].tolist())
        start += seq
    result = {"model": "gpt2-static-kv-torchscript", "prompt": PROMPT,
              "tokens": [list(row) for row in zip(*tokens)]}
    path = os.path.join(HERE, "..", "exporters-kv", "greedy.json")
    with open(path, "w") as f:
        json.dump(result, f)
        f.write("\n")
    print(result)


if __name__ == "__main__":
    main()
