"""bench_cuda_models' PyTorch side: the same workloads with the same arguments, timed the same way
(3 untimed steps, then the median of --steps steps each ending with torch.cuda.synchronize()),
printed as the same JSON line.

    python3 bench/cuda_models.py gpt2|resnet50|attention|minilm [--batch 16] [--seq 1024]
                                 [--steps 10] [--precision bf16] [--compile] [--channels-last]
                                 [--profile]

gpt2: GPT-2 small as nanoGPT writes it (the structure of Ember's models::Gpt2: pre-norm blocks,
fused qkv projection, F.scaled_dot_product_attention with is_causal, tanh GELU, head tied to the
token embedding), vocab 50304, no dropout; forward and cross-entropy under torch.autocast,
backward, AdamW (lr 6e-4, weight decay 0.1, fused=True); f16 adds torch.amp.GradScaler.

resnet50: ResNet-50 in plain torch.nn (torchvision's resnet50: Bottleneck blocks [3, 4, 6, 3] with
the stride on the 3x3 conv, 25,557,032 parameters; torchvision need not be installed) in training
mode on random images [batch, 3, 224, 224] (--batch defaults to 128 here) and random labels of 1000
classes: forward and F.cross_entropy under torch.autocast, backward, torch.optim.SGD (lr 0.1,
momentum 0.9, weight decay 1e-4, its default foreach). --channels-last converts the model and the
images to torch.channels_last (off by default: NCHW, as Ember). cudnn.benchmark stays off, as Ember
takes cuDNN's heuristic choice; f32 stays off TF32 in matmuls and convolutions, as Ember's does.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        heads = lambda y: y.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        a = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        x = x + self.attn_proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, vocab=50304, positions=1024, d=768, layers=12, heads=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln" not in name:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def precision(args):
    """--precision as autocast's switch and dtype, and the loss scaler (on for f16 only)."""
    low = torch.float16 if args.precision == "f16" else torch.bfloat16
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "f16")
    return args.precision != "f32", low, scaler


def profile(args, f):
    """--profile: the device time per step by kernel over --steps more calls of f (stderr), in
    bench_cuda_models --profile's format, from torch.profiler's CUDA events."""
    if not args.profile:
        return
    from torch.profiler import ProfilerActivity
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            f()
        torch.cuda.synchronize()
    sums = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = e.name if len(e.name) <= 110 else e.name[:107] + "..."
        t, n = sums.get(name, (0.0, 0))
        sums[name] = (t + e.time_range.elapsed_us(), n + 1)
    total = sum(t for t, _ in sums.values())
    calls = sum(n for _, n in sums.values())
    print(f"profile: {total / 1e3 / args.steps:.3f} ms of device time per step in "
          f"{calls / args.steps:.0f} launches per step", file=sys.stderr)
    for name, (t, n) in sorted(sums.items(), key=lambda kv: -kv[1][0])[:30]:
        print(f"profile {t / 1e3 / args.steps:8.3f} ms {100 * t / total:5.1f}% "
              f"{n / args.steps:6.0f} x  {name}", file=sys.stderr)


def time_training(args, name, forward_loss, opt, scaler):
    """A training step timed as bench_cuda_models times it: the median of --steps whole steps after
    3 untimed ones, the peak reset after those, then (uncompiled) where a step's time goes, on
    stderr. Returns the median and the last loss."""
    def step():
        loss = forward_loss()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(3):
        loss = step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    ms = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        ms.append(1e3 * (time.perf_counter() - t0))
    last = loss.item()
    if not args.compile:  # where a step's time goes, as bench_cuda_models prints it
        fwd, bwd, upd = [], [], []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            loss = forward_loss()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            scaler.scale(loss).backward()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            fwd.append(1e3 * (t1 - t0))
            bwd.append(1e3 * (t2 - t1))
            upd.append(1e3 * (t3 - t2))
        print(f"pytorch {name}: forward+loss {statistics.median(fwd):.2f} ms, backward "
              f"{statistics.median(bwd):.2f} ms, optimizer {statistics.median(upd):.2f} ms",
              file=sys.stderr)
    profile(args, step)
    return statistics.median(ms), last


def gpt2(args):
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    model = Gpt2(positions=args.seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1, fused=True)
    ids = torch.randint(0, 50304, (args.batch, args.seq), device=dev)
    targets = torch.randint(0, 50304, (args.batch * args.seq,), device=dev)
    amp, low, scaler = precision(args)
    forward = torch.compile(model) if args.compile else model

    def forward_loss():
        with torch.autocast("cuda", dtype=low, enabled=amp):
            logits = forward(ids)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets)

    m, loss = time_training(args, "gpt2", forward_loss, opt, scaler)
    tokens = args.batch * args.seq
    n = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    flops = tokens * (6.0 * n + 6.0 * 12 * args.seq * 768)
    print(json.dumps({
        "framework": "torch.compile" if args.compile else "pytorch", "workload": "gpt2_train",
        "batch": args.batch, "seq": args.seq, "precision": args.precision, "ms": round(m, 3),
        "tokens_per_s": round(tokens / (m / 1e3)), "mfu": round(flops / (m / 1e3) / 989e12, 4),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
        "loss": round(loss, 4), "torch": torch.__version__}))


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (v1.5: the stride on the 3x3 conv), its names and in-place ReLUs."""
    expansion = 4

    def __init__(self, in_planes, planes, stride):
        super().__init__()
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(in_planes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_planes != out:
            self.downsample = nn.Sequential(nn.Conv2d(in_planes, out, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class ResNet50(nn.Module):
    """torchvision.models.resnet50(): its names, shapes and initialisation, as models::ResNet's."""

    def __init__(self, num_classes=1000, blocks=(3, 4, 6, 3)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_planes = 64
        for s, n in enumerate(blocks):
            planes = 64 << s
            layer = []
            for b in range(n):
                layer.append(Bottleneck(in_planes, planes, 2 if b == 0 and s > 0 else 1))
                in_planes = planes * Bottleneck.expansion
            setattr(self, f"layer{s + 1}", nn.Sequential(*layer))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_planes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50(args):
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    layout = torch.channels_last if args.channels_last else torch.contiguous_format
    model = ResNet50().to(dev, memory_format=layout).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(args.batch, 3, 224, 224, device=dev).contiguous(memory_format=layout)
    labels = torch.randint(0, 1000, (args.batch,), device=dev)
    amp, low, scaler = precision(args)
    forward = torch.compile(model) if args.compile else model

    def forward_loss():
        with torch.autocast("cuda", dtype=low, enabled=amp):
            return F.cross_entropy(forward(images), labels)

    m, loss = time_training(args, "resnet50", forward_loss, opt, scaler)
    print(json.dumps({
        "framework": "torch.compile" if args.compile else "pytorch",
        "workload": "resnet50_train", "batch": args.batch, "precision": args.precision,
        "ms": round(m, 3), "images_per_s": round(args.batch / (m / 1e3), 1),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3), "loss": round(loss, 4),
        "channels_last": args.channels_last, "torch": torch.__version__}))


def median_ms(steps, f):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ms.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(ms)


def attention(args):
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    dt = torch.float16 if args.precision == "f16" else torch.bfloat16
    shape = (args.batch, 12, args.seq, 64)
    q, k, v = (torch.randn(shape, device=dev, dtype=dt, requires_grad=True) for _ in range(3))
    g = torch.randn(shape, device=dev, dtype=dt)

    def step():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)

    m = median_ms(args.steps, step)
    profile(args, step)
    flops = 3.5 * 4.0 * args.batch * 12 * args.seq * args.seq * 64 / 2.0
    print(json.dumps({"framework": "pytorch", "workload": "attention", "batch": args.batch,
                      "seq": args.seq, "precision": str(dt).replace("torch.", ""),
                      "ms": round(m, 3), "tflops": round(flops / (m / 1e3) / 1e12, 1),
                      "torch": torch.__version__}))


def minilm(args):
    from transformers import BertConfig, BertModel
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    config = BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                        intermediate_size=1536, attn_implementation="sdpa")
    model = BertModel(config).to(dev).eval()
    ids = torch.randint(0, 30522, (args.batch, args.seq), device=dev)
    amp, low, _ = precision(args)
    forward = torch.compile(model, mode="reduce-overhead") if args.compile else model

    def step():
        with torch.no_grad(), torch.autocast("cuda", dtype=low, enabled=amp):
            forward(input_ids=ids)

    m = median_ms(args.steps, step)
    profile(args, step)
    print(json.dumps({"framework": "torch.compile" if args.compile else "pytorch",
                      "workload": "minilm", "batch": args.batch, "seq": args.seq,
                      "precision": args.precision, "ms": round(m, 3),
                      "torch": torch.__version__}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=["gpt2", "resnet50", "attention", "minilm"])
    p.add_argument("--batch", type=int, default=None, help="16; 128 for resnet50")
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--precision", default="bf16", choices=["bf16", "f16", "f32"])
    p.add_argument("--compile", action="store_true")
    p.add_argument("--channels-last", action="store_true", help="resnet50: NHWC model and images")
    p.add_argument("--profile", action="store_true", help="device time by kernel (stderr)")
    args = p.parse_args()
    if args.batch is None:
        args.batch = 128 if args.workload == "resnet50" else 16
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    {"gpt2": gpt2, "resnet50": resnet50, "attention": attention,
     "minilm": minilm}[args.workload](args)


if __name__ == "__main__":
    main()
