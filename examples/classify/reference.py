#!/usr/bin/env python3
"""The Fashion-MNIST CNN (include/ember/models/fashion_cnn.hpp) in float64 NumPy: the reference
that classify's answers, and the microcontroller example's, are checked against. A file with
int8 weights (`ember quantize`: *.weight_scale beside each weight) is run as FashionCnnInt8
computes it: inputs quantized per tensor in float32, int32 sums, the float32 rescale.

  reference.py export DIR N          writes the first N test images as DIR/NNNN.png
  reference.py raw FILE N            writes them to FILE as bytes, 784 an image (for flash)
  reference.py check WEIGHTS OUTPUT  compares the lines "<path>NNNN.png: <class> (<p>%) <10
                                     logits>" of OUTPUT (`classify --logits`, the
                                     microcontroller's output) with this model's answers
"""
import gzip
import json
import os
import re
import struct
import sys
import zlib

import numpy as np

DATA = os.environ.get("EMBER_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530  # the training job's normalisation


def load_file(path):
    """A safetensors file (F32 and I8 tensors) as NumPy arrays: 8 bytes of header length, a JSON
    header, the data. Read here so that NumPy is the only package the checks need."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    types = {"F32": np.float32, "I8": np.int8}
    out = {}
    for name, t in json.loads(data[8:8 + n]).items():
        if name != "__metadata__":
            begin, end = t["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], types[t["dtype"]]).reshape(t["shape"])
    return out


def test_set():
    with gzip.open(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(DATA, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def write_png(path, pixels):
    """An 8-bit grey PNG, each row with filter 0."""
    h, w = pixels.shape
    raw = b"".join(b"\0" + pixels[y].tobytes() for y in range(h))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def conv2d(x, w, b):  # x [C, H, W], w [O, C, 3, 3], no padding, stride 1
    o, c, k, _ = w.shape
    h, wd = x.shape[1] - k + 1, x.shape[2] - k + 1
    cols = np.stack([x[:, i:i + h, j:j + wd] for i in range(k) for j in range(k)], axis=1)
    return np.einsum("ckhw,ock->ohw", cols, w.reshape(o, c, k * k)) + b[:, None, None]


def max_pool2(x):
    c, h, w = x.shape
    return x[:, :h // 2 * 2, :w // 2 * 2].reshape(c, h // 2, 2, w // 2, 2).max(axis=(2, 4))


def quantize_per_tensor(x):  # nn::quantize_per_tensor, in float32 as Ember computes it
    m = np.maximum(np.max(np.abs(x)), np.float32(1e-30)).astype(np.float32)
    q = np.clip(np.round(x * (np.float32(127) / m)), -127, 127).astype(np.int32)
    return q, m / np.float32(127)


def int8_layer(sums, x_scale, p, name, shape):  # the float32 rescale of an Int8 layer
    scale = (x_scale * p[name + ".weight_scale"]).reshape(shape)
    return sums.astype(np.float32) * scale + p[name + ".bias"].reshape(shape)


def conv2d_int8(x, p, name):
    q, s = quantize_per_tensor(x)
    w = p[name + ".weight"].astype(np.int32)
    return int8_layer(conv2d(q, w, np.zeros(w.shape[0], np.int32)), s, p, name, (-1, 1, 1))


def linear_int8(x, p, name):
    q, s = quantize_per_tensor(x)
    return int8_layer(p[name + ".weight"].astype(np.int32) @ q, s, p, name, (-1,))


def logits_int8(p, pixels):
    x = ((pixels.astype(np.float32) / np.float32(255) - np.float32(MEAN)) / np.float32(STD))[None]
    x = max_pool2(np.maximum(conv2d_int8(x, p, "conv1"), 0))
    x = max_pool2(np.maximum(conv2d_int8(x, p, "conv2"), 0))
    x = np.maximum(linear_int8(x.reshape(-1), p, "fc1"), 0)
    return linear_int8(x, p, "fc2").astype(np.float64)


def logits(weights, pixels):
    if "fc1.weight_scale" in weights:
        return logits_int8(weights, pixels)
    p = {k: v.astype(np.float64) for k, v in weights.items()}
    x = ((pixels.astype(np.float64) / 255.0 - MEAN) / STD)[None]
    x = max_pool2(np.maximum(conv2d(x, p["conv1.weight"], p["conv1.bias"]), 0))
    x = max_pool2(np.maximum(conv2d(x, p["conv2.weight"], p["conv2.bias"]), 0))
    x = np.maximum(p["fc1.weight"] @ x.reshape(-1) + p["fc1.bias"], 0)
    return p["fc2.weight"] @ x + p["fc2.bias"]


def check(weights_path, output_path):
    weights = load_file(weights_path)
    images, labels = test_set()
    worst, right, n, bad = 0.0, 0, 0, []
    for line in open(output_path):
        if ".png: " not in line:
            continue  # the microcontroller's other lines (footprint, time)
        m = re.match(r"(\S*?(\d+)\.png): .* \(\S+%\)((?: \S+){10})$", line.strip())
        if not m:
            sys.exit(f"reference.py: cannot read the line {line!r} of {output_path}")
        index = int(m.group(2))
        got = np.array([float(v) for v in m.group(3).split()])
        want = logits(weights, images[index])
        worst = max(worst, float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want)))))
        top2 = np.sort(want)[-2:]
        if np.argmax(got) != np.argmax(want) and top2[1] - top2[0] > 1e-3:
            bad.append(f"image {index}: class {np.argmax(got)}, the reference says {np.argmax(want)}")
        right += int(np.argmax(got) == labels[index])
        n += 1
    print(f"reference.py: {n} images; largest logit difference from the reference {worst:.2e} "
          f"(relative, or absolute below 1); {right}/{n} classified right")
    if n == 0 or bad or worst > 1e-4:
        sys.exit("reference.py: FAILED: " + ("; ".join(bad) or f"difference {worst:.2e} > 1e-4"))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "export":
        images, _ = test_set()
        os.makedirs(sys.argv[2], exist_ok=True)
        for i in range(int(sys.argv[3])):
            write_png(os.path.join(sys.argv[2], f"{i:04d}.png"), images[i])
    elif len(sys.argv) == 4 and sys.argv[1] == "raw":
        images, _ = test_set()
        with open(sys.argv[2], "wb") as f:
            f.write(images[:int(sys.argv[3])].tobytes())
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
