#!/usr/bin/env python3
"""The ONNX Runtime side of scripts/onnx_bench.sh: writes random inputs for one benchmark row
as TensorProto files (which bench_onnx reads too) and times ONNX Runtime's CPU provider on the
same .onnx file with the same thread count.

    onnx_ort.py MODEL.onnx OUTDIR SPEC --threads N [--runs 20 --warmup 3]

SPEC: "image:B" (one float input [B, 3, 224, 224]) or "tokens:B:S" (input_ids [B, S] in
[0, 30522) and an all-ones attention_mask). Prints "ort <model> median_ms min_ms runs" and the
input files' paths on the first line as "inputs <file> ...".
"""
import argparse
import os
import time

import numpy as np
import onnxruntime as ort
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("outdir")
    p.add_argument("spec")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    kind, *dims = a.spec.split(":")
    if kind == "image":
        arrays = [rng.standard_normal((int(dims[0]), 3, 224, 224)).astype(np.float32)]
    else:
        b, s = int(dims[0]), int(dims[1])
        arrays = [rng.integers(0, 30522, (b, s)).astype(np.int64), np.ones((b, s), np.int64)]
    os.makedirs(a.outdir, exist_ok=True)
    files = []
    for i, x in enumerate(arrays):
        path = os.path.join(a.outdir, f"input_{i}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(x).SerializeToString())
        files.append(path)
    print("inputs " + " ".join(files))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
    feed = {i.name: x for i, x in zip(sess.get_inputs(), arrays)}
    times = []
    for r in range(a.warmup + a.runs):
        t0 = time.perf_counter()
        sess.run(None, feed)
        t1 = time.perf_counter()
        if r >= a.warmup:
            times.append((t1 - t0) * 1e3)
    times.sort()
    print(f"ort {a.model} {times[len(times) // 2]:.3f} {times[0]:.3f} {a.runs}")


if __name__ == "__main__":
    main()
