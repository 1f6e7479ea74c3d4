#!/usr/bin/env python3
"""Weights between torchvision and Ember, both ways, with no renaming (Ember's ResNet uses
torchvision's names and layouts):

  1. torchvision's resnet18 (random weights and BatchNorm statistics) is saved with torch.save,
     with an input and its output; pytorch_roundtrip (C++) loads it into Ember's ResNet-18
     (strict) and checks Ember computes the same output.
  2. pytorch_roundtrip saves a freshly initialised Ember ResNet-18 as safetensors with its output
     on the same input; here it loads into torchvision's resnet18 with load_state_dict(strict=True)
     and torchvision must compute that output.

Exits 77 (ctest's skip) without torch and torchvision.

    python3 pytorch_roundtrip.py <pytorch_roundtrip binary> <scratch dir>
"""
import json
import os
import struct
import subprocess
import sys

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

tool, scratch = sys.argv[1], sys.argv[2]
os.makedirs(scratch, exist_ok=True)
torch.manual_seed(16)

net = torchvision.models.resnet18(num_classes=10).eval()
with torch.no_grad():
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.weight.uniform_(0.5, 1.5)
            m.bias.normal_(0, 0.1)
            m.running_mean.normal_(0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.num_batches_tracked.fill_(7)
    x = torch.randn(2, 3, 64, 64)
    torch.save(net.state_dict(), os.path.join(scratch, "resnet18.pt"))
    torch.save({"input": x, "output": net(x)}, os.path.join(scratch, "resnet18_io.pt"))

subprocess.run([tool, scratch], check=True)


def read_safetensors(path):  # the format is 8 + JSON + data: no library needed to read it
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    types = {"F32": torch.float32, "I64": torch.int64, "F64": torch.float64}
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        out[name] = torch.frombuffer(data, dtype=types[info["dtype"]]).reshape(info["shape"])
    return out


ember_weights = read_safetensors(os.path.join(scratch, "ember_resnet18.safetensors"))
fresh = torchvision.models.resnet18(num_classes=10).eval()
fresh.load_state_dict(ember_weights, strict=True)
io = read_safetensors(os.path.join(scratch, "ember_resnet18_io.safetensors"))
with torch.no_grad():
    diff = (fresh(x) - io["output"]).abs().max().item()
print(f"torchvision with Ember's weights: max abs difference from Ember's output {diff:.3g}")
sys.exit(0 if diff < 1e-4 else 1)
