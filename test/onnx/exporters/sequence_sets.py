"""Writes test/onnx/exporters-sequence: the language models of
test/onnx/exporters-dynamic (BERT, GPT-2, Llama and T5, both exporters)
with data sets whose sequence lengths differ, so that the scoreboard keeps
`sequence` (and T5's `decoder_sequence`) symbolic beside `batch`
(issue 33: the sequence dimension).

Each case <arch>-<exporter>-sequence links its model.onnx to the dynamic
case's and has three data sets: batch 2 at the exported sequence length
(16; T5's decoder 8), batch 3 at sequence 11 (decoder 5) whose attention
mask pads the last three tokens of its second row, and batch 1 at
sequence 4 (decoder 3). The references are onnxruntime's (CPU, fp32),
made here: `python3 test/onnx/exporters/sequence_sets.py` (needs onnx,
onnxruntime and numpy; no torch) rewrites the directory.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DYNAMIC = os.path.join(HERE, "..", "exporters-dynamic")
OUT = os.path.join(HERE, "..", "exporters-sequence")
VOCAB = 128
# (batch, sequence, decoder sequence, padded tokens at the end of row 1)
SETS = [(2, 16, 8, 0), (3, 11, 5, 3), (1, 4, 3, 0)]


def dims(info):
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


def inputs_for(model, batch, seq, decoder_seq, padded, rng):
    feeds = {}
    for info in model.graph.input:
        shape = []
        for d in dims(info):
            shape.append({"batch": batch, "sequence": seq, "decoder_sequence": decoder_seq}.get(d, d))
        if info.name == "attention_mask":
            mask = np.ones(shape, dtype=np.int64)
            if padded and batch > 1:
                mask[1, seq - padded:] = 0
            feeds[info.name] = mask
        else:
            feeds[info.name] = rng.integers(0, VOCAB, size=shape, dtype=np.int64)
    return feeds


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    rng = np.random.default_rng(33)
    for case in sorted(os.listdir(DYNAMIC)):
        path = os.path.join(DYNAMIC, case, "model.onnx")
        model = onnx.load(path)
        if not any("sequence" in dims(i) for i in model.graph.input):
            continue
        name = case.replace("-dynamic", "-sequence")
        directory = os.path.join(OUT, name)
        os.makedirs(directory)
        os.symlink(os.path.join("..", "..", "exporters-dynamic", case, "model.onnx"),
                   os.path.join(directory, "model.onnx"))
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for index, (batch, seq, decoder_seq, padded) in enumerate(SETS):
            feeds = inputs_for(model, batch, seq, decoder_seq, padded, rng)
            outputs = session.run(None, feeds)
            data = os.path.join(directory, f"test_data_set_{index}")
            os.makedirs(data)
            for i, info in enumerate(model.graph.input):
                tensor = numpy_helper.from_array(feeds[info.name], info.name)
                with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                    f.write(tensor.SerializeToString())
            for i, (info, value) in enumerate(zip(model.graph.output, outputs)):
                tensor = numpy_helper.from_array(value, info.name)
                with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
                    f.write(tensor.SerializeToString())
        print(name, file=sys.stderr)


if __name__ == "__main__":
    main()
