#!/usr/bin/env python3
"""Turns the benchmarks' JSON output (out/bench/*.json) into the Markdown tables of
docs/PERFORMANCE.md. Uses the median of repetitions when there are several, else the one run.

    python3 bench/report.py out/bench/bench_gemm.json out/bench/bench_elementwise.json \\
        out/bench/bench_overhead.json out/bench/bench_autodiff.json out/bench/bench_nn.json
"""
import json
import os
import re
import sys


CV = {}  # name -> coefficient of variation of real time over the repetitions, when there are some


def load(paths):
    """name (without /real_time and aggregate suffix) -> benchmark entry; plus contexts."""
    rows, contexts = {}, {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        contexts[path] = data.get("context", {})
        runs = data["benchmarks"]
        has_median = any(r.get("aggregate_name") == "median" for r in runs)
        for r in runs:
            name = re.sub(r"/real_time$", "", r.get("run_name", r["name"]))
            if r.get("aggregate_name") == "cv":
                CV[name] = r["real_time"]
            if has_median and r.get("aggregate_name") != "median":
                continue
            rows[name] = r
    return rows, contexts


def ns(r):
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[r.get("time_unit", "ns")]
    return r["real_time"] * scale


def cv(r):
    """' ±x%' (run-to-run variation of this row), or '' without repetitions."""
    name = re.sub(r"/real_time$", "", r.get("run_name", r["name"]))
    return f" ±{100 * CV[name]:.0f}%" if name in CV else ""


def met(ok):
    return "**yes**" if ok else "**no**"


def gemm(rows, ctx):
    peaks = {t: rows.get(f"fma_peak/thr:{t}") for t in (1, 2)}
    if not any(peaks.values()):
        return
    print("### 1. SGEMM (square, f32): GFLOP/s and % of the measured FMA peak\n")
    for t, r in peaks.items():
        if r:
            print(f"- FMA peak, {t} thread{'s' if t > 1 else ''}: "
                  f"**{r['FLOPS'] / 1e9:.1f} GFLOP/s** (bench `fma_peak/thr:{t}`)")
    print()
    print("GFLOP/s are medians over the repetitions; ± is their coefficient of variation.\n")
    have_blas = any(k.startswith("sgemm_openblas") for k in rows)
    head = "| threads | n | Ember `matmul` | oneDNN `dnnl_sgemm` | "
    head += "OpenBLAS `cblas_sgemm` | " if have_blas else ""
    head += ("Ember % of peak | oneDNN % of peak | Ember / oneDNN | "
             "goal: ≥ 85% of peak (n ≥ 1024) | parity: ≥ 95% of oneDNN |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for t in (1, 2):
        for n in (256, 512, 1024, 2048):
            e = rows.get(f"sgemm_ember/n:{n}/thr:{t}")
            d = rows.get(f"sgemm_onednn/n:{n}/thr:{t}")
            b = rows.get(f"sgemm_openblas/n:{n}/thr:{t}")
            if not e:
                continue
            cells = [str(t), str(n), f"{e['FLOPS'] / 1e9:.1f}{cv(e)}"]
            cells.append(f"{d['FLOPS'] / 1e9:.1f}{cv(d)}" if d else "–")
            if have_blas:
                cells.append(f"{b['FLOPS'] / 1e9:.1f}{cv(b)}" if b else "–")
            # % of the peak row shown above (the in-run pct_peak counter uses its last repetition).
            peak = peaks[t]["FLOPS"] if peaks[t] else None
            pct = (lambda r: f"{100 * r['FLOPS'] / peak:.0f}%" if r and peak else "–")
            cells += [pct(e), pct(d)]
            ratio = e["FLOPS"] / d["FLOPS"] if d else None
            cells.append(f"{100 * ratio:.1f}%" if ratio else "–")
            cells.append(met(e["FLOPS"] >= 0.85 * peak) if peak and n >= 1024 else "–")
            cells.append(met(ratio >= 0.95) if ratio else "–")
            print("| " + " | ".join(cells) + " |")
    print()


def elementwise(rows):
    if not any(k.startswith("memcpy/") for k in rows):
        return
    print("### 2–3. add, exp, sum on 16M f32 (64 MB) vs memcpy of 64 MB: GB/s\n")
    print("± is the run-to-run variation (coefficient of variation over the repetitions).\n")
    print("Bytes counted: memcpy 2 × 64 MB, add 3 × 64 MB, exp 2 × 64 MB, sum 1 × 64 MB "
          "(read + written). Goal: ≥ 80% of memcpy's GB/s on the same thread count.\n")
    print("| op | threads | time (ms) | GB/s | memcpy GB/s | % of memcpy | goal ≥ 80% met |")
    print("|---|---|---|---|---|---|---|")
    labels = [("ember_add", "Ember `a + b`"), ("ember_exp", "Ember `exp(x)`"),
              ("ember_sum", "Ember `x.sum()`"),
              ("ember_tanh", "Ember `tanh(x)`"),
              ("tanh_libm", "reference: plain loop over std::tanh (libm)"),
              ("ember_transpose", "Ember `x.t().contiguous()`, [4096, 4096]"),
              ("ember_rowsum", "Ember `x.sum(1)`, [65536, 256] (rows)"),
              ("ember_colsum", "Ember `x.sum(0)`, [65536, 256] (columns)"),
              ("add_loop", "reference: plain add loop (ordinary stores)"),
              ("add_stream", "reference: add loop with streaming stores"),
              ("sum_loop", "reference: plain sum loop")]
    for key, label in labels:
        for t in (1, 2):
            r, c = rows.get(f"{key}/thr:{t}"), rows.get(f"memcpy/thr:{t}")
            if not r or not c:
                continue
            pct = 100.0 * r["BW"] / c["BW"]
            goal = met(pct >= 80.0) if key.startswith("ember_") else "(reference)"
            print(f"| {label} | {t} | {ns(r) / 1e6:.2f}{cv(r)} | {r['BW'] / 1e9:.2f} | "
                  f"{c['BW'] / 1e9:.2f} | {pct:.0f}% | {goal} |")
    print()
    for t in (1, 2):
        c = rows.get(f"memcpy/thr:{t}")
        if c:
            print(f"- memcpy, {t} thread{'s' if t > 1 else ''}: {ns(c) / 1e6:.2f} ms per 64 MB, "
                  f"{c['BW'] / 1e9:.2f} GB/s")
    add1, add2 = rows.get("ember_add/thr:1"), rows.get("ember_add/thr:2")
    exp1, exp2 = rows.get("ember_exp/thr:1"), rows.get("ember_exp/thr:2")
    if add1 and add2 and exp1 and exp2:
        print(f"- 2 threads vs 1: add {ns(add1) / ns(add2):.2f}x faster, "
              f"exp {ns(exp1) / ns(exp2):.2f}x faster")
    print()


def overhead(rows):
    e = rows.get("BM_ember_add_1elem/thr:1")
    if not e:
        return
    print("### 4. Per-op overhead: `a + b` on 1-element f32 tensors, ns per op\n")
    print("| implementation | ns / op | goal: Ember < 250 ns |")
    print("|---|---|---|")
    print(f"| Ember `a + b` (1 thread) | {ns(e):.0f}{cv(e)} | {met(ns(e) < 250)} |")
    extra = [("BM_ember_add_1elem/thr:2", "Ember `a + b` (2 threads set)"),
             ("BM_torch_add_1elem", "LibTorch `a + b`"),
             ("BM_torch_add_1elem_inference_mode", "LibTorch `a + b`, `c10::InferenceMode`"),
             ("BM_ember_empty_1elem", "Ember `Tensor<1>::empty({1})` alone"),
             ("BM_ember_add_scalar_1elem", "Ember `a + 2.5f` (Scalar operand)")]
    for key, label in extra:
        r = rows.get(key)
        if r:
            print(f"| {label} | {ns(r):.0f}{cv(r)} | |")
    print()


def autodiff(rows):
    if not any(k.startswith("BM_ember_mlp_") for k in rows):
        return
    print("### 5. Autodiff: 3-layer MLP (784-256-256-10, softmax cross-entropy), µs per step\n")
    print("forward (no_grad): inference, nothing recorded; forward: recording the graph; "
          "step: forward + backward (gradients of all 6 parameters). LibTorch runs the same "
          "model with `torch::autograd::grad`, on the same thread count (its OpenBLAS pool "
          "sized too). Goals: backward < 2x forward at batch 1; Ember's step below LibTorch's.\n")
    print("| batch | threads | Ember forward (no_grad) | Ember forward | Ember step | "
          "Ember backward / forward | LibTorch forward (no_grad) | LibTorch forward | "
          "LibTorch step | LibTorch backward / forward | step: Ember / LibTorch |")
    print("|" + "---|" * 11)
    for batch in (1, 64):
        for t in (1, 2):
            arg = f"batch:{batch}/thr:{t}"
            e0, e1, e2 = (rows.get(f"BM_ember_mlp_{k}/{arg}")
                          for k in ("forward_no_grad", "forward", "forward_backward"))
            t0, t1, t2 = (rows.get(f"BM_torch_mlp_{k}/{arg}")
                          for k in ("forward_no_grad", "forward", "forward_backward"))
            if not (e0 and e1 and e2):
                continue
            us = (lambda r: f"{ns(r) / 1e3:.1f}{cv(r)}" if r else "–")
            ratio = (lambda f, s: f"{(ns(s) - ns(f)) / ns(f):.2f}x" if f and s else "–")
            vs = f"{ns(e2) / ns(t2):.2f}" if t2 else "–"
            print(f"| {batch} | {t} | {us(e0)} | {us(e1)} | {us(e2)} | {ratio(e1, e2)} | "
                  f"{us(t0)} | {us(t1)} | {us(t2)} | {ratio(t1, t2)} | {vs} |")
    print()
    u, tr = rows.get("BM_ember_add_1elem_untracked"), rows.get("BM_ember_add_1elem_tracked")
    tt, ch = rows.get("BM_torch_add_1elem_tracked"), rows.get("BM_ember_backward_chain32_1elem")
    if u and tr:
        print(f"- Recording one op: `a + b` on 1-element tensors takes {ns(u):.0f} ns untracked "
              f"and {ns(tr):.0f} ns with `a` tracked: **{ns(tr) - ns(u):.0f} ns** to record "
              "the node." + (f" LibTorch's tracked `a + b`: {ns(tt):.0f} ns." if tt else ""))
    if ch:
        print(f"- Backward through a chain of 32 1-element `mul`s: {ns(ch) / 32:.0f} ns per node "
              "(the rule's own op included).")
    print()


def nn_layers(rows):
    cases = [("resnet_block", "ResNet basic block (64 ch, 56x56)"),
             ("lstm", "LSTM (2 layers, hidden 256, seq 64)"),
             ("transformer_encoder", "TransformerEncoderLayer (d 256, 4 heads, ff 1024, seq 128)")]
    if not any(k.startswith("BM_ember_" + c + "/") for c, _ in cases for k in rows):
        return
    print("### 6. Layers: forward + backward (gradients of every parameter and the input), "
          "ms per step\n")
    print("Training mode, the sum of the output as the loss. LibTorch runs the same layers "
          "(`torch::nn`, `torch::autograd::grad`) in the same process on the same thread count "
          "(its OpenBLAS pool sized too). ratio = Ember / LibTorch. "
          "Goal: at or below PyTorch's time.\n")
    print("| case | batch | threads | Ember ms | LibTorch ms | ratio | goal: at or below PyTorch |")
    print("|---|---|---|---|---|---|---|")
    order = [c for c, _ in cases]
    pattern = re.compile(r"BM_ember_(\w+)/batch:(\d+)/thr:(\d+)$")
    keys = []
    for k in rows:
        m = pattern.match(k)
        if m:
            rank = order.index(m[1]) if m[1] in order else len(order)
            keys.append((rank, int(m[2]), int(m[3]), m[1], k))
    for _, batch, t, case, key in sorted(keys):
        e, p = rows[key], rows.get(key.replace("BM_ember_", "BM_torch_"))
        ms = (lambda r: f"{ns(r) / 1e6:.1f}{cv(r)}" if r else "–")
        ratio = ns(e) / ns(p) if p else None
        print(f"| {dict(cases).get(case, case)} | {batch} | {t} | {ms(e)} | {ms(p)} | "
              f"{f'{ratio:.2f}' if ratio else '–'} | {met(ratio <= 1.0) if ratio else '–'} |")
    print()


def main():
    rows, contexts = load(sys.argv[1:])
    ctx = next(iter(contexts.values()), {})
    gemm(rows, ctx)
    elementwise(rows)
    overhead(rows)
    autodiff(rows)
    nn_layers(rows)
    for path, c in contexts.items():
        extra = {k: v for k, v in c.items() if k.startswith(("onednn", "openblas"))}
        if extra:
            print(f"Context of `{os.path.basename(path)}`: " +
                  ", ".join(f"{k} = {v}" for k, v in extra.items()))
    if contexts:
        c = ctx
        print(f"\nRun on {c.get('host_name', '?')} at {c.get('date', '?')}, "
              f"{c.get('num_cpus', '?')} CPUs at {c.get('mhz_per_cpu', '?')} MHz, "
              f"load average at start {c.get('load_avg', '?')}.")


if __name__ == "__main__":
    main()
