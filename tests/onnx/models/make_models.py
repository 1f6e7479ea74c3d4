#!/usr/bin/env python3
"""Exports the real architectures of issue 15 to ONNX with PyTorch and records ONNX Runtime's
outputs on the same inputs, in the layout of ONNX's backend tests:

    OUT/<name>/model.onnx
    OUT/<name>/test_data_set_<k>/input_<i>.pb, output_<i>.pb    (TensorProto files)

    /usr/bin/python3 tests/onnx/models/make_models.py --out build/onnx_models [--only resnet18]

Needs Debian's python3-torch and python3-torchvision (the networks are defined here or taken
from torchvision without weights: nothing is downloaded) and onnxruntime from pip. Weights are
random (seeded); the comparison is Ember's executor against ONNX Runtime, not accuracy.
Several data sets per model exercise dynamic shapes (batch sizes, sequence lengths).
"""
import argparse
import inspect
import math
import os

import numpy as np
import onnxruntime as ort
import torch
from onnx import numpy_helper

OPSET = 17  # the newest PyTorch 1.13 exports


class SelfAttention(torch.nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.dim = heads, hidden // heads
        self.query = torch.nn.Linear(hidden, hidden)
        self.key = torch.nn.Linear(hidden, hidden)
        self.value = torch.nn.Linear(hidden, hidden)
        self.out = torch.nn.Linear(hidden, hidden)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.dim).transpose(1, 2)

    def forward(self, x, mask_bias):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.dim) + mask_bias
        ctx = torch.softmax(scores, dim=-1) @ v
        b, h, s, d = ctx.shape
        return self.out(ctx.transpose(1, 2).reshape(b, s, h * d))


class EncoderLayer(torch.nn.Module):
    def __init__(self, hidden, heads, inner):
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.norm1 = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.ff1 = torch.nn.Linear(hidden, inner)
        self.ff2 = torch.nn.Linear(inner, hidden)
        self.norm2 = torch.nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask_bias):
        x = self.norm1(x + self.attention(x, mask_bias))
        return self.norm2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


class MiniLM(torch.nn.Module):
    """A BERT encoder shaped like all-MiniLM-L6-v2: 6 layers, hidden 384, 12 heads, inner 1536."""

    def __init__(self, vocab=30522, hidden=384, heads=12, layers=6, inner=1536, max_len=512):
        super().__init__()
        self.word = torch.nn.Embedding(vocab, hidden)
        self.position = torch.nn.Embedding(max_len, hidden)
        self.token_type = torch.nn.Embedding(2, hidden)
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.layers = torch.nn.ModuleList(EncoderLayer(hidden, heads, inner) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + self.token_type(torch.zeros_like(input_ids))
        x = self.norm(x)
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x


class Lstm2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(32, 64, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


class IfLoop(torch.nn.Module):
    """Data-dependent control flow: scripted, so the export keeps If and Loop."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x, steps: torch.Tensor):
        y = x
        for _ in range(int(steps)):
            y = torch.tanh(self.linear(y))
        if bool(y.sum() > 0):
            y = y * 2.0
        else:
            y = y - 1.0
        return y


def busy(model):
    """Random batch-norm statistics and affine terms: a fresh torchvision model's are 0 and 1, and
    MobileNetV3's outputs then shrink to ~1e-9, which would compare nothing."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)
        if isinstance(m, torch.nn.Linear):
            m.weight.data.normal_(0, 1 / m.in_features ** 0.5, generator=g)
    return model


def save(folder, k, arrays, prefix):
    d = os.path.join(folder, f"test_data_set_{k}")
    os.makedirs(d, exist_ok=True)
    for i, a in enumerate(arrays):
        with open(os.path.join(d, f"{prefix}_{i}.pb"), "wb") as f:
            a = np.asarray(a)  # (np.ascontiguousarray would make a 0-d input 1-d)
            f.write(numpy_helper.from_array(a if a.flags.c_contiguous else a.copy()).SerializeToString())


def export(name, model, example, input_names, output_names, dynamic_axes, data_sets, out):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    model.eval()
    # PyTorch >= 2.9 exports through dynamo by default; the TorchScript exporter (Debian's 1.13
    # has only it) keeps scripted If/Loop and gives the same graphs on every version.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with torch.no_grad():
        torch.onnx.export(model, example, path, input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=OPSET, do_constant_folding=True,
                          **legacy)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, inputs in enumerate(data_sets):
        feed = {n: a for n, a in zip(input_names, inputs)}
        outputs = session.run(None, feed)
        save(folder, k, inputs, "input")
        save(folder, k, outputs, "output")
    print("wrote", folder)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    images = lambda b: rng.standard_normal((b, 3, 224, 224)).astype(np.float32)

    def torchvision_model(name):
        import torchvision  # only these two need it (the GPU machine's Python has none)
        return busy(getattr(torchvision.models, name)())

    models = {
        "resnet18": lambda: export(
            "resnet18", torchvision_model("resnet18"), torch.randn(1, 3, 224, 224), ["input"],
            ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}}, [[images(1)], [images(2)]],
            args.out),
        "mobilenet_v3_small": lambda: export(
            "mobilenet_v3_small", torchvision_model("mobilenet_v3_small"), torch.randn(1, 3, 224, 224),
            ["input"], ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}},
            [[images(1)], [images(2)]], args.out),
        "minilm": lambda: export(
            "minilm", MiniLM(), (torch.randint(0, 30522, (1, 16)), torch.ones(1, 16, dtype=torch.int64)),
            ["input_ids", "attention_mask"], ["hidden"],
            {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
             "hidden": {0: "batch", 1: "sequence"}},
            [[rng.integers(0, 30522, (1, 16)), np.ones((1, 16), np.int64)],
             [rng.integers(0, 30522, (2, 40)),
              np.concatenate([np.ones((2, 30), np.int64), np.zeros((2, 10), np.int64)], axis=1)]],
            args.out),
        "lstm2": lambda: export(
            "lstm2", Lstm2(), torch.randn(2, 7, 32), ["x"], ["y"],
            {"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}},
            [[rng.standard_normal((2, 7, 32)).astype(np.float32)],
             [rng.standard_normal((3, 12, 32)).astype(np.float32)]], args.out),
        "if_loop": lambda: export(
            "if_loop", torch.jit.script(IfLoop()), (torch.randn(4, 8), torch.tensor(3)), ["x", "steps"],
            ["y"], {"x": {0: "batch"}},
            [[rng.standard_normal((4, 8)).astype(np.float32), np.array(3, np.int64)],
             [rng.standard_normal((2, 8)).astype(np.float32) - 3, np.array(0, np.int64)],
             [rng.standard_normal((5, 8)).astype(np.float32), np.array(6, np.int64)]], args.out),
    }
    for name, make in models.items():
        if not args.only or name in args.only.split(","):
            make()


if __name__ == "__main__":
    main()
