#!/usr/bin/env python3
"""The models of the serving benchmark (bench/serve_bench.sh), in PyTorch and as ONNX, with one
request body each:

    serve_models.py FASHION_WEIGHTS OUT_DIR

  fashion: the Fashion-MNIST CNN with Ember's trained weights (a safetensors file of FashionCnn),
           input "input" [N, 1, 28, 28] f32, output "logits" [N, 10];
  minilm:  a BERT encoder shaped like all-MiniLM-L6-v2 (tests/onnx/models/make_models.py) with
           mean pooling, random seeded weights, inputs "input_ids" and "attention_mask"
           [N, 128] i64, output "embedding" [N, 384].
Writes OUT_DIR/{fashion,minilm}.{onnx,pt} (the .pt is the torch module's state dict) and
OUT_DIR/{fashion,minilm}.json (one example, the servers' JSON protocol).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "onnx", "models"))
sys.path.insert(0, os.path.dirname(__file__))
from make_models import MiniLM  # noqa: E402
from train_torch import Cnn as FashionCnn  # noqa: E402  (fashion_cnn.hpp in PyTorch, same names)


def load_file(path):
    """A float32 safetensors file as torch tensors (the format is 8 bytes of header length, a JSON
    header, the data); read here so that Debian's Python needs no safetensors package."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        begin, end = t["data_offsets"]
        # torch.frombuffer: Debian's torch 1.13 cannot take NumPy 2's arrays (from_numpy fails).
        values = torch.frombuffer(bytearray(data[8 + n + begin:8 + n + end]), dtype=torch.float32)
        out[name] = values.reshape(t["shape"])
    return out


class PooledMiniLM(torch.nn.Module):
    """MiniLM, then the mean of the unmasked positions: one 384-vector a sentence."""

    def __init__(self):
        super().__init__()
        self.encoder = MiniLM()

    def forward(self, input_ids, attention_mask):
        hidden = self.encoder(input_ids, attention_mask)
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def build(name, weights=None):
    if name == "fashion":
        model = FashionCnn()
        if weights:
            model.load_state_dict(load_file(weights))
    else:
        torch.manual_seed(0)
        model = PooledMiniLM()
    return model.eval()


def main():
    weights, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1)
    fashion = build("fashion", weights)
    image = torch.randn(1, 1, 28, 28)
    torch.onnx.export(fashion, (image,), os.path.join(out, "fashion.onnx"), input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17)
    torch.save(fashion.state_dict(), os.path.join(out, "fashion.pt"))
    with open(os.path.join(out, "fashion.json"), "w") as f:
        json.dump({"inputs": {"input": image.tolist()}}, f)

    minilm = build("minilm")
    ids = torch.randint(0, 30522, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    torch.onnx.export(minilm, (ids, mask), os.path.join(out, "minilm.onnx"),
                      input_names=["input_ids", "attention_mask"], output_names=["embedding"],
                      dynamic_axes={"input_ids": {0: "batch"}, "attention_mask": {0: "batch"},
                                    "embedding": {0: "batch"}}, opset_version=17)
    torch.save(minilm.state_dict(), os.path.join(out, "minilm.pt"))
    with open(os.path.join(out, "minilm.json"), "w") as f:
        json.dump({"inputs": {"input_ids": ids.tolist(), "attention_mask": mask.tolist()}}, f)


if __name__ == "__main__":
    main()
