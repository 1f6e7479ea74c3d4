"""bench_train's PyTorch-from-pip side: one Fashion-MNIST epoch of the same CNN (batch 64, Adam
lr 1e-3, the same normalisation and batch order), timed like bench/train_bench.cpp. Prints one
line per thread count: framework, version, threads, seconds, images/s, last batch loss.

    python3 bench/train_torch.py [--threads 1 2] [--repetitions 3]
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F

DIR = os.environ.get("EMBER_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3)
        self.conv2 = torch.nn.Conv2d(32, 64, 3)
        self.fc1 = torch.nn.Linear(1600, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc2(F.relu(self.fc1(h.flatten(1))))


def epoch(images, labels, batch=64):
    torch.manual_seed(1)
    model = Cnn().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss = None
    for b in range(0, images.shape[0], batch):
        x, y = images[b:b + batch], labels[b:b + batch]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return float(loss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repetitions", type=int, default=3)
    args = ap.parse_args()
    raw = read_idx(os.path.join(DIR, "train-images-idx3-ubyte.gz"))
    images = (torch.from_numpy(raw.astype(np.float32)) / 255.0 - 0.2860) / 0.3530
    images = images.reshape(-1, 1, 28, 28).contiguous()
    labels = torch.from_numpy(read_idx(os.path.join(DIR, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    for threads in args.threads:
        torch.set_num_threads(threads)
        times = []
        for _ in range(args.repetitions):
            t0 = time.perf_counter()
            last = epoch(images, labels)
            times.append(time.perf_counter() - t0)
        med = sorted(times)[len(times) // 2]
        print(f"pytorch {torch.__version__} threads {threads} seconds {med:.2f} "
              f"images_per_s {images.shape[0] / med:.0f} last_loss {last:.4f} "
              f"all {' '.join(f'{t:.2f}' for t in times)}", flush=True)


if __name__ == "__main__":
    main()
