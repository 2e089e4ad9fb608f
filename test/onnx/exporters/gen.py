#!/usr/bin/env python3
"""Generates test/onnx/exporters: small models of the architectures people
export (BERT, GPT-2, T5, ViT, Whisper's encoder, a Llama-style decoder, a
U-Net with Resize), each exported by the exporters people use, with
onnxruntime's outputs as the expected ones.

Runs on the GPU machine (it has torch, transformers and onnxruntime; this
machine does not): `python3 test/onnx/exporters/gen.py OUT` writes
OUT/exporters.tar.xz, which unpacks (`tar -C test/onnx/exporters -xf
...`) into one case directory per model and exporter, in the layout of
the onnx package's backend test data:

  <arch>-<exporter>/model.onnx
  <arch>-<exporter>/test_data_set_0/input_N.pb, output_N.pb

Exporters: `torchscript` (torch.onnx.export with dynamo=False, opset 17,
the long-standing default) and `dynamo` (torch.onnx.export with
dynamo=True, the new default; its own opset). A model that an exporter
cannot export is listed in OUT/SKIPPED with the reason, not written.
Every model is two layers of hidden size 32 (two heads) with a vocabulary
of 128, so the fixtures stay small (each a few hundred KB at most); the weights are the
libraries' own random initialisation under a fixed seed. Shapes are
static (batch 2).

`python3 test/onnx/exporters/gen.py --dynamic OUT` writes
OUT/exporters-dynamic.tar.xz instead (unpacked into
test/onnx/exporters-dynamic, cases named <arch>-<exporter>-dynamic): the same models exported with a symbolic
`batch` axis on every input and output (and `sequence` on token inputs,
`decoder_sequence` on T5's decoder ids), as `dynamic_axes` /
`dynamic_shapes` declare them, with two data sets: test_data_set_0 at
batch 2 and test_data_set_1 at batch 3 (the sequence lengths as above).
"""
import os
import shutil
import sys
import tarfile
import tempfile
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

VOCAB = 128
HIDDEN = 32
FFN = 64
BATCH = 2
SEQ = 16


def text_inputs(with_mask, batch=BATCH):
    rng = np.random.default_rng(11 + batch - BATCH)
    ids = torch.from_numpy(rng.integers(0, VOCAB, size=(batch, SEQ), dtype=np.int64))
    if not with_mask:
        return {"input_ids": ids}
    mask = torch.ones(batch, SEQ, dtype=torch.int64)
    mask[1, SEQ * 3 // 4 :] = 0  # the second row padded
    return {"input_ids": ids, "attention_mask": mask}


def images(seed, shape, batch):
    rng = np.random.default_rng(seed + batch - BATCH)
    return torch.from_numpy(rng.standard_normal((batch, *shape)).astype(np.float32))


def first_tensor(result):
    if hasattr(result, "last_hidden_state"):
        return result.last_hidden_state
    if isinstance(result, (tuple, list)):
        return result[0]
    return result


class Wrapped(torch.nn.Module):
    """The model's first output (the last hidden state) from positional inputs."""

    def __init__(self, inner, names):
        super().__init__()
        self.inner = inner
        self.names = names

    def forward(self, *xs):
        return first_tensor(self.inner(**dict(zip(self.names, xs))))


def bert(batch=BATCH):
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=FFN, max_position_embeddings=64)
    return BertModel(config), text_inputs(True, batch)


def gpt2(batch=BATCH):
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=2, n_head=2, n_positions=64)
    return GPT2Model(config), text_inputs(False, batch)


def t5(batch=BATCH):
    from transformers import T5Config, T5Model

    config = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=16, d_ff=FFN, num_layers=2, num_heads=2,
                      decoder_start_token_id=0)
    inputs = text_inputs(True, batch)
    inputs["decoder_input_ids"] = inputs["input_ids"][:, : SEQ // 2].clone()
    return T5Model(config), inputs


def vit(batch=BATCH):
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2, intermediate_size=FFN,
                       image_size=32, patch_size=8)
    pixels = images(12, (3, 32, 32), batch)
    return ViTModel(config, add_pooling_layer=False), {"pixel_values": pixels}


def whisper_encoder(batch=BATCH):
    from transformers import WhisperConfig, WhisperModel

    config = WhisperConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=FFN,
                           decoder_ffn_dim=FFN, num_mel_bins=16, max_source_positions=16, max_target_positions=16,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    features = images(13, (16, 32), batch)
    return WhisperModel(config).encoder, {"input_features": features}


def llama(batch=BATCH):
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    return LlamaModel(config), text_inputs(True, batch)


class UNet(torch.nn.Module):
    """Two levels down and up, bilinear and nearest upsampling, skip
    concatenations: the Resize ops of segmentation and detection heads."""

    def __init__(self):
        super().__init__()
        conv = lambda i, o: torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o),
                                                torch.nn.ReLU())
        self.down1, self.down2, self.mid = conv(3, 8), conv(8, 16), conv(16, 16)
        self.up2, self.up1 = conv(32, 8), conv(16, 8)
        self.head = torch.nn.Conv2d(8, 2, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(torch.nn.functional.max_pool2d(d1, 2))
        m = self.mid(torch.nn.functional.max_pool2d(d2, 2))
        u2 = torch.nn.functional.interpolate(m, scale_factor=2, mode="bilinear", align_corners=False)
        u2 = self.up2(torch.cat([u2, d2], 1))
        u1 = torch.nn.functional.interpolate(u2, size=d1.shape[-2:], mode="nearest")
        return self.head(self.up1(torch.cat([u1, d1], 1)))


def unet(batch=BATCH):
    image = images(14, (3, 32, 32), batch)
    return UNet(), {"input": image}


ARCHITECTURES = {
    "bert": bert, "gpt2": gpt2, "t5": t5, "vit": vit, "whisper_encoder": whisper_encoder, "llama": llama,
    "unet": unet,
}


def symbolic_axes(name, rank):
    """The symbolic axes of input `name` (batch first; the token axis of
    text inputs)."""
    axes = {0: "batch"}
    if name in ("input_ids", "attention_mask"):
        axes[1] = "sequence"
    elif name == "decoder_input_ids":
        axes[1] = "decoder_sequence"
    return axes


def export(model, inputs, path, exporter, dynamic=False):
    names = list(inputs)
    args = tuple(inputs.values())
    wrapped = Wrapped(model, names) if not isinstance(model, UNet) else model
    axes = {n: symbolic_axes(n, v.dim()) for n, v in inputs.items()} if dynamic else None
    if exporter == "torchscript":
        dynamic_axes = None
        if dynamic:
            dynamic_axes = dict(axes)
            dynamic_axes["output"] = {0: "batch"}
        torch.onnx.export(wrapped, args, path, opset_version=17, dynamo=False, input_names=names,
                          output_names=["output"], dynamic_axes=dynamic_axes)
    else:
        dynamic_shapes = None
        if dynamic:
            dims = {}
            dynamic_shapes = tuple(
                {axis: dims.setdefault(label, torch.export.Dim(label, min=1, max=64)) for axis, label in a.items()}
                for a in axes.values())
            if wrapped is not model:
                dynamic_shapes = (dynamic_shapes,)  # Wrapped.forward(*xs): one tuple
        program = torch.onnx.export(wrapped, args, dynamo=True, input_names=names, output_names=["output"],
                                    dynamic_shapes=dynamic_shapes)
        program.save(path)
    # One self-contained file (the dynamo exporter may write external data).
    onnx.save(onnx.load(path), path, save_as_external_data=False)


def write_case(directory, path, inputs, data_set=0):
    model = onnx.load(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    graph_inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    for name, value in zip(graph_inputs, inputs.values()):
        feeds[name] = value.numpy()
    outputs = session.run(None, feeds)
    data = os.path.join(directory, f"test_data_set_{data_set}")
    os.makedirs(data)
    if data_set == 0:
        shutil.copy(path, os.path.join(directory, "model.onnx"))
    for i, name in enumerate(graph_inputs):
        tensor = numpy_helper.from_array(feeds[name], name)
        open(os.path.join(data, f"input_{i}.pb"), "wb").write(tensor.SerializeToString())
    for i, (info, value) in enumerate(zip(model.graph.output, outputs)):
        tensor = numpy_helper.from_array(value, info.name)
        open(os.path.join(data, f"output_{i}.pb"), "wb").write(tensor.SerializeToString())


def main():
    dynamic = sys.argv[1] == "--dynamic"
    out = sys.argv[-1]
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp()
    skipped = []
    for arch, make in ARCHITECTURES.items():
        for exporter in ("torchscript", "dynamo"):
            torch.manual_seed(5)
            case = f"{arch}-{exporter}" + ("-dynamic" if dynamic else "")
            path = os.path.join(work, case + ".onnx")
            try:
                model, inputs = make()
                model.eval()
                with torch.no_grad():
                    export(model, inputs, path, exporter, dynamic)
                write_case(os.path.join(work, "cases", case), path, inputs)
                if dynamic:
                    # The same weights at another batch.
                    torch.manual_seed(5)
                    _, more = make(BATCH + 1)
                    write_case(os.path.join(work, "cases", case), path, more, data_set=1)
                size = os.path.getsize(os.path.join(work, "cases", case, "model.onnx"))
                print(f"{case}: {size / 1e3:.0f} KB", flush=True)
            except Exception as error:  # an exporter's failure is a finding, not a stop
                reason = f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
                skipped.append(f"{case}: {reason}")
                print(f"{case}: SKIPPED {reason}", flush=True)
                traceback.print_exc(limit=2)
    with open(os.path.join(work, "cases", "SKIPPED"), "w") as f:
        f.write("\n".join(skipped) + "\n")
    archive = os.path.join(out, "exporters-dynamic.tar.xz" if dynamic else "exporters.tar.xz")
    with tarfile.open(archive, "w:xz") as tar:
        for name in sorted(os.listdir(os.path.join(work, "cases"))):
            tar.add(os.path.join(work, "cases", name), arcname=name)
    print(f"{archive}: {os.path.getsize(archive) / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
