"""The PyTorch peer of `ember train fashion-mnist --device cuda:0`: the same job with the CLI's
defaults (tools/ember/main.cpp): the Fashion-MNIST CNN, Adam lr 1e-3 with a cosine decay to 0
stepped per batch, batch 64 shuffled each epoch, the test set (batch 500) evaluated after every
epoch, a checkpoint (model + optimizer + schedule) written after every epoch, the model saved at
the end, ten progress lines per epoch. Data: the same idx files (.gz or plain), decoded once and
normalised per batch on the host, as x / 255 then (x - 0.2860) / 0.3530, and copied to the GPU
batch by batch (pinned, asynchronous), as Ember's DataLoader does. float32 throughout (no TF32),
as Ember's default.
scripts/gpu_bench.sh times the whole process; the last line gives the test accuracy.

    python3 bench/train_torch_cuda.py --data DIR [--epochs 8] [--out runs/torch-fashion-mnist]
"""
import argparse
import gzip
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F

from cuda_torch import FashionCnn


def read_idx(dir_, name):
    """An idx file as numpy, from name.gz or else name (the order Ember's reader tries)."""
    path = os.path.join(dir_, name + ".gz")
    opener = gzip.open
    if not os.path.exists(path):
        path, opener = os.path.join(dir_, name), open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def batches(images, labels, batch, device, order=None):
    """(x, y) on `device`: uint8 images gathered and normalised on the host, then copied."""
    n = images.shape[0]
    for start in range(0, n, batch):
        idx = order[start:start + batch] if order is not None else slice(start, start + batch)
        x = (images[idx].float().div_(255.0).sub_(0.2860).div_(0.3530)).unsqueeze(1)
        y = labels[idx]
        # Pinned (PyTorch's caching host allocator) and asynchronous: DataLoader(pin_memory=True).
        yield (x.pin_memory().to(device, non_blocking=True),
               y.pin_memory().to(device, non_blocking=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("EMBER_FASHION_MNIST_DIR",
                                                     "/usr/share/datasets/fashion-mnist"))
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/torch-fashion-mnist")
    args = ap.parse_args()
    t_start = time.perf_counter()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda:0")
    torch.manual_seed(args.seed)

    train_x = torch.from_numpy(read_idx(args.data, "train-images-idx3-ubyte").copy())
    train_y = torch.from_numpy(read_idx(args.data, "train-labels-idx1-ubyte").astype(np.int64))
    test_x = torch.from_numpy(read_idx(args.data, "t10k-images-idx3-ubyte").copy())
    test_y = torch.from_numpy(read_idx(args.data, "t10k-labels-idx1-ubyte").astype(np.int64))

    model = FashionCnn().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    steps_per_epoch = math.ceil(train_x.shape[0] / args.batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps_per_epoch)
    os.makedirs(os.path.join(args.out, "checkpoints"), exist_ok=True)
    print(f"Fashion-MNIST CNN ({sum(p.numel() for p in model.parameters())} parameters) on "
          f"{torch.cuda.get_device_name(device)}: {train_x.shape[0]} training images, "
          f"{test_x.shape[0]} test images; Adam lr {args.lr} (cosine decay), batch "
          f"{args.batch_size}, {args.epochs} epochs; torch {torch.__version__}", flush=True)
    shuffle = torch.Generator().manual_seed(args.seed)
    log_every = max(1, steps_per_epoch // 10)
    accuracy = float("nan")
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        model.train()
        # Running sums stay on the GPU; read at the log lines and the end of the epoch.
        loss_sum = torch.zeros((), device=device, dtype=torch.float64)
        correct = torch.zeros((), device=device, dtype=torch.int64)
        seen = 0
        order = torch.randperm(train_x.shape[0], generator=shuffle)
        for step, (x, y) in enumerate(batches(train_x, train_y, args.batch_size, device, order)):
            opt.zero_grad(set_to_none=True)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            sched.step()
            with torch.no_grad():
                loss_sum += loss.detach().double() * y.shape[0]
                correct += (logits.argmax(1) == y).sum()
            seen += y.shape[0]
            if (step + 1) % log_every == 0:
                print(f"  epoch {epoch + 1} batch {step + 1}/{steps_per_epoch} "
                      f"loss {loss_sum.item() / seen:.4f} lr {sched.get_last_lr()[0]:.2e}",
                      flush=True)
        train_loss, train_acc = loss_sum.item() / seen, correct.item() / seen
        model.eval()
        with torch.no_grad():
            vloss = torch.zeros((), device=device, dtype=torch.float64)
            vcorrect = torch.zeros((), device=device, dtype=torch.int64)
            for x, y in batches(test_x, test_y, 500, device):
                logits = model(x)
                vloss += F.cross_entropy(logits, y, reduction="sum").double()
                vcorrect += (logits.argmax(1) == y).sum()
            valid_loss = vloss.item() / test_x.shape[0]
            accuracy = vcorrect.item() / test_x.shape[0]
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(), "epoch": epoch + 1},
                   os.path.join(args.out, "checkpoints", f"epoch-{epoch + 1}.pt"))
        print(f"epoch {epoch + 1}/{args.epochs}: train loss {train_loss:.4f} accuracy "
              f"{100 * train_acc:.2f}%, test loss {valid_loss:.4f} accuracy {100 * accuracy:.2f}%"
              f", {time.perf_counter() - t0:.1f} s", flush=True)
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
    print(f"\ntest accuracy after {args.epochs} epochs: {100 * accuracy:.2f}% "
          f"({test_x.shape[0]} test images); {time.perf_counter() - t_start:.1f} s after imports",
          flush=True)


if __name__ == "__main__":
    main()
