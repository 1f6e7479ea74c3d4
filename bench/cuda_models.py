"""bench_cuda_models' PyTorch side: the same workloads with the same arguments, timed the same way
(3 untimed steps, then the median of --steps steps each ending with torch.cuda.synchronize()),
printed as the same JSON line.

    python3 bench/cuda_models.py gpt2|attention|minilm [--batch 16] [--seq 1024] [--steps 10]
                                 [--precision bf16] [--compile]

gpt2: GPT-2 small as nanoGPT writes it (the structure of Ember's models::Gpt2: pre-norm blocks,
fused qkv projection, F.scaled_dot_product_attention with is_causal, tanh GELU, head tied to the
token embedding), vocab 50304, no dropout; forward and cross-entropy under torch.autocast,
backward, AdamW (lr 6e-4, weight decay 0.1, fused=True); f16 adds torch.amp.GradScaler.
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


def gpt2(args):
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    model = Gpt2(positions=args.seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1, fused=True)
    ids = torch.randint(0, 50304, (args.batch, args.seq), device=dev)
    targets = torch.randint(0, 50304, (args.batch * args.seq,), device=dev)
    amp = args.precision != "f32"
    low = torch.float16 if args.precision == "f16" else torch.bfloat16
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "f16")
    forward = torch.compile(model) if args.compile else model

    def step():
        with torch.autocast("cuda", dtype=low, enabled=amp):
            logits = forward(ids)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets)
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
    if not args.compile:  # where a step's time goes, as bench_cuda_models prints it
        fwd, bwd, upd = [], [], []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=low, enabled=amp):
                logits = forward(ids)
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets)
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
        print(f"pytorch gpt2: forward+loss {statistics.median(fwd):.2f} ms, backward "
              f"{statistics.median(bwd):.2f} ms, optimizer {statistics.median(upd):.2f} ms",
              file=sys.stderr)
    m = statistics.median(ms)
    tokens = args.batch * args.seq
    n = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    flops = tokens * (6.0 * n + 6.0 * 12 * args.seq * 768)
    print(json.dumps({
        "framework": "torch.compile" if args.compile else "pytorch", "workload": "gpt2_train",
        "batch": args.batch, "seq": args.seq, "precision": args.precision, "ms": round(m, 3),
        "tokens_per_s": round(tokens / (m / 1e3)), "mfu": round(flops / (m / 1e3) / 989e12, 4),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
        "loss": round(loss.item(), 4), "torch": torch.__version__}))


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
    amp = args.precision != "f32"
    low = torch.float16 if args.precision == "f16" else torch.bfloat16
    forward = torch.compile(model, mode="reduce-overhead") if args.compile else model

    def step():
        with torch.no_grad(), torch.autocast("cuda", dtype=low, enabled=amp):
            forward(input_ids=ids)

    m = median_ms(args.steps, step)
    print(json.dumps({"framework": "torch.compile" if args.compile else "pytorch",
                      "workload": "minilm", "batch": args.batch, "seq": args.seq,
                      "precision": args.precision, "ms": round(m, 3),
                      "torch": torch.__version__}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=["gpt2", "attention", "minilm"])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--precision", default="bf16", choices=["bf16", "f16", "f32"])
    p.add_argument("--compile", action="store_true")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    {"gpt2": gpt2, "attention": attention, "minilm": minilm}[args.workload](args)


if __name__ == "__main__":
    main()
