#!/usr/bin/env python3
"""Sums the ATen calls of two bench_train traces by op (EMBER_BENCH_TRACE, train_torch.cpp).

    EMBER_BENCH_TRACE=/tmp/t EMBER_BENCH_TRAIN_IMAGES=3200 \\
        build-bench/bench/bench_train --benchmark_filter='torch_epoch/thr:1'  # both rows
    bench/trace_ops.py /tmp/t-ember_libtorch.json /tmp/t-torch.json

Only outermost calls count (an op's inner calls are inside its time); LibTorch's autograd
functions appear as 'autograd::engine::evaluate_function: ...'.
"""
import collections
import json
import sys


def outermost(path):
    events = [e for e in json.load(open(path)) if e.get("ph") == "X"]
    events.sort(key=lambda e: (e["ts"], -e["dur"]))
    ops = collections.defaultdict(lambda: [0, 0.0])
    end = -1.0
    for e in events:
        if e["ts"] >= end:
            ops[e["name"]][0] += 1
            ops[e["name"]][1] += e["dur"]
            end = e["ts"] + e["dur"]
    return ops


def main():
    a, b = outermost(sys.argv[1]), outermost(sys.argv[2])
    names = sorted(set(a) | set(b), key=lambda n: -(a.get(n, [0, 0])[1] + b.get(n, [0, 0])[1]))
    print(f"{'op':60s} {'calls':>7s} {'ms':>8s} {'calls':>7s} {'ms':>8s}")
    for n in names:
        x, y = a.get(n, [0, 0.0]), b.get(n, [0, 0.0])
        print(f"{n[:60]:60s} {x[0]:7d} {x[1] / 1e3:8.1f} {y[0]:7d} {y[1] / 1e3:8.1f}")
    total = lambda ops: sum(v[1] for v in ops.values()) / 1e3
    print(f"{'total':60s} {'':7s} {total(a):8.1f} {'':7s} {total(b):8.1f}")


if __name__ == "__main__":
    main()
