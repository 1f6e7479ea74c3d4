"""bench_cuda's PyTorch side: the same workloads on cuda:0, under the same names, timed the same
way (each op queued `per_sync` times, then torch.cuda.synchronize() inside the timed batch; a
few untimed calls first). Each row is the median over --repetitions of the time per op, each
repetition running whole batches for at least --min-time seconds. Prints one JSON object:
{"context": {...}, "results": {name: {"seconds": s, "enqueue_seconds": s, "FLOPS"|"BW": rate}}}.

    python3 bench/cuda_torch.py [--repetitions 5] [--min-time 0.3] [--compile] > torch.json
"""
import argparse
import json
import math
import statistics
import sys
import time
import warnings

import torch
import torch.nn.functional as F

N = 64 << 20  # elements of the memory-bound rows (256 MiB f32)
BYTES = 4.0 * N


def measure(fn, per_sync, repetitions, min_time):
    """Median seconds per call of fn over `repetitions`, each of whole batches of per_sync calls;
    and the median time per call spent queuing (the batches without their waits)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(per_sync):
        fn()
    torch.cuda.synchronize()
    batches = max(1, math.ceil(min_time / max(time.perf_counter() - t0, 1e-9)))
    times, enqueue = [], []
    for _ in range(repetitions):
        queued = 0.0
        t0 = time.perf_counter()
        for _ in range(batches):
            t1 = time.perf_counter()
            for _ in range(per_sync):
                fn()
            queued += time.perf_counter() - t1
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / (batches * per_sync))
        enqueue.append(queued / (batches * per_sync))
    return statistics.median(times), statistics.median(enqueue)


class FashionCnn(torch.nn.Module):
    """Ember's models::FashionCnn: conv 1->32 3x3 + ReLU, 2x2 max-pool, conv 32->64 3x3 + ReLU,
    2x2 max-pool, linear 1600->128, ReLU, linear 128->10."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3)
        self.conv2 = torch.nn.Conv2d(32, 64, 3)
        self.fc1 = torch.nn.Linear(64 * 5 * 5, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc2(F.relu(self.fc1(h.flatten(1))))


# Forward FLOPs per image, as bench/cuda_bench.cpp counts them; a training step is about 3x.
CNN_FORWARD_FLOPS = 2.0 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 128 * 1600 + 10 * 128)


def cnn_step_fn(batch, compile_model=False, fused=False):
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(batch, 1, 28, 28, device="cuda", generator=g)
    y = torch.randint(0, 10, (batch,), device="cuda", generator=g)
    torch.manual_seed(1)
    model = FashionCnn().cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused or None)
    forward = torch.compile(model) if compile_model else model

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--compile", action="store_true",
                    help="also time the CNN step under torch.compile (compiling takes a minute)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")  # allow_tf32's deprecation notice in newer releases
    dev = torch.device("cuda:0")
    reps, min_time = args.repetitions, args.min_time
    results = {}

    def row(name, fn, per_sync, flops=None, nbytes=None):
        try:
            s, queued = measure(fn, per_sync, reps, min_time)
        except Exception as e:  # one row's failure is that row's result, as in bench_cuda
            results[name] = {"error": f"{type(e).__name__}: {e}"}
            print(f"{name}: {results[name]['error']}", flush=True, file=sys.stderr)
            return
        r = {"seconds": s, "enqueue_seconds": queued}
        if flops:
            r["FLOPS"] = flops / s
        if nbytes:
            r["BW"] = nbytes / s
        results[name] = r
        print(f"{name}: {s * 1e6:.1f} us", flush=True, file=sys.stderr)

    # Ember's default: float32 matmuls and convolutions in full float32 (no TF32) unless asked.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    for n in (4096, 8192):
        g = torch.Generator(device=dev).manual_seed(1)
        a = torch.randn(n, n, device=dev, generator=g)
        b = torch.randn(n, n, device=dev, generator=g)
        per_sync = 5 if n >= 8192 else 20
        flops = 2.0 * n ** 3
        row(f"matmul_f32/n:{n}", lambda: torch.mm(a, b), per_sync, flops=flops)
        torch.backends.cuda.matmul.allow_tf32 = True
        row(f"matmul_tf32/n:{n}", lambda: torch.mm(a, b), per_sync, flops=flops)
        torch.backends.cuda.matmul.allow_tf32 = False
        ab, bb = a.bfloat16(), b.bfloat16()
        row(f"matmul_bf16/n:{n}", lambda: torch.mm(ab, bb), per_sync, flops=flops)
        del a, b, ab, bb

    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(N, device=dev, generator=g)
    y = torch.randn(N, device=dev, generator=g)
    row("clone_64M", lambda: x.clone(), 50, nbytes=2 * BYTES)
    row("add_64M", lambda: x + y, 50, nbytes=3 * BYTES)
    row("exp_64M", lambda: torch.exp(x), 50, nbytes=2 * BYTES)
    row("sum_64M", lambda: x.sum(), 50, nbytes=BYTES)
    del x, y

    c = torch.tensor([1.5], device=dev)
    b1 = torch.tensor([2.5], device=dev)

    def add_1elem():
        nonlocal c
        c = c + b1

    row("add_1elem", add_1elem, 10000)

    batch = 256
    step_flops = 3.0 * CNN_FORWARD_FLOPS * batch
    row(f"cnn_train_step/batch:{batch}", cnn_step_fn(batch), 10, flops=step_flops)
    # Not the goal's peer (that is eager Adam, PyTorch's default): Adam's fused kernel.
    row(f"cnn_train_step_fused_adam/batch:{batch}", cnn_step_fn(batch, fused=True), 10,
        flops=step_flops)
    if args.compile:
        row(f"cnn_train_step_compiled/batch:{batch}", cnn_step_fn(batch, compile_model=True), 10,
            flops=step_flops)

    context = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(dev),
        "repetitions": reps,
        "min_time": min_time,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    print(json.dumps({"context": context, "results": results}, indent=1))


if __name__ == "__main__":
    main()
