#!/usr/bin/env python3
"""The GPU table of docs/PERFORMANCE.md from one run of scripts/gpu_bench.sh: bench_cuda's JSON
(Google Benchmark, medians of the repetitions), bench/cuda_torch.py's JSON and the 8-epoch job's
timings. Per row: Ember, PyTorch, Ember's speed over PyTorch's (> 1: Ember faster), the issue's
goal, whether it is met, and the bound: the row's bytes over the measured copy bandwidth, or its
FLOPs over the peak that the matmul rows measured.

    python3 bench/cuda_report.py --ember bench_cuda.json --torch torch.json [--job job.json]
"""
import argparse
import json
import re

MATMUL = [("f32", "f32"), ("tf32", "f32 with TF32"), ("bf16", "bf16")]
MEMORY = [("add_64M", "`a + b`, 64M f32", 3, 0.90),
          ("exp_64M", "`exp(x)`, 64M f32", 2, 0.90),
          ("sum_64M", "`x.sum()`, 64M f32", 1, 0.85)]
BYTES = 4.0 * (64 << 20)
CNN_FORWARD_FLOPS = 2.0 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 128 * 1600 + 10 * 128)


def read_json(path):
    """The file's JSON, or None when it is missing or cut short (a stage that failed)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, TypeError, ValueError):
        return None


def load_ember(path):
    """name -> {"seconds", counters...} or {"error": message}; medians when repeated."""
    data = read_json(path)
    if data is None:
        return {}, {}
    runs = data["benchmarks"]
    has_median = any(r.get("aggregate_name") == "median" for r in runs)
    rows, context = {}, dict(data.get("context", {}))
    for r in runs:
        context.setdefault("repetitions", r.get("repetitions", 1))
        # "matmul_f32/n:4096/min_time:0.300/real_time" -> "matmul_f32/n:4096", PyTorch's name.
        name = re.sub(r"(/min_time:[0-9.]+)?(/real_time)?$", "", r.get("run_name", r["name"]))
        if r.get("error_occurred"):
            rows[name] = {"error": r.get("error_message", "error")}
            continue
        if has_median and r.get("aggregate_name") != "median":
            continue
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[r.get("time_unit", "ns")]
        row = {"seconds": r["real_time"] * scale}
        if "enqueue_us" in r:
            row["enqueue_seconds"] = r["enqueue_us"] * 1e-6
        for k in ("FLOPS", "BW"):
            if k in r:
                row[k] = r[k]
        rows[name] = row
    return rows, context


def fmt_time(s):
    if s is None:
        return "–"
    if s >= 1:
        return f"{s:.1f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def cell(r, kind):
    """A result as shown: its rate (and time) or its time; the error; or a dash."""
    if r is None:
        return "–"
    if "error" in r:
        return "error: " + r["error"][:80].replace("|", "/")
    if kind == "flops":
        return f"{r['FLOPS'] / 1e12:.1f} TFLOP/s ({fmt_time(r['seconds'])})"
    if kind == "bw":
        return f"{r['BW'] / 1e12:.2f} TB/s ({fmt_time(r['seconds'])})"
    return fmt_time(r["seconds"])


def ok(r):
    return r is not None and "error" not in r


def speed(e, p):
    """PyTorch's time over Ember's: > 1 when Ember is faster."""
    return p["seconds"] / e["seconds"] if ok(e) and ok(p) else None


def met(flag):
    return "–" if flag is None else ("**yes**" if flag else "**no**")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", help="bench_cuda's JSON")
    ap.add_argument("--torch", help="bench/cuda_torch.py's JSON")
    ap.add_argument("--job")
    ap.add_argument("--commit", default="?")
    args = ap.parse_args()
    ember, ectx = load_ember(args.ember)
    tdata = read_json(args.torch) or {}
    torch, tctx = tdata.get("results", {}), tdata.get("context", {})
    both = lambda name: (ember.get(name), torch.get(name))  # noqa: E731

    # The ceilings, from this run: the best matmul rate per precision, the best device copy.
    peak = {}
    for key, _ in MATMUL:
        rates = [r["FLOPS"] for src in (ember, torch) for n in (4096, 8192)
                 for r in [src.get(f"matmul_{key}/n:{n}")] if ok(r)]
        peak[key] = max(rates) if rates else None
    copies = [r["BW"] for r in both("clone_64M") if ok(r)]
    copy_bw = max(copies) if copies else None

    lines = ["| workload | Ember | PyTorch | speed: Ember ÷ PyTorch | goal | met | bound |",
             "|---|---|---|---|---|---|---|"]

    def add(label, e, p, kind, goal, is_met, bound):
        sp = speed(e, p)
        lines.append(f"| {label} | {cell(e, kind)} | {cell(p, kind)} | "
                     f"{f'{sp:.2f}' if sp else '–'} | {goal} | {met(is_met)} | {bound} |")

    for key, label in MATMUL:
        for n in (4096, 8192):
            e, p = both(f"matmul_{key}/n:{n}")
            sp = speed(e, p)
            bound = "–"
            if peak[key]:
                bound = (f"{fmt_time(2.0 * n ** 3 / peak[key])} at {peak[key] / 1e12:.0f} "
                         f"TFLOP/s ({label} peak of this run)")
                if ok(e):
                    bound += f"; Ember at {100 * e['FLOPS'] / peak[key]:.0f}%"
            add(f"matmul {n}³, {label}", e, p, "flops", "≥ 95% of PyTorch",
                None if sp is None else sp >= 0.95, bound)

    e, p = both("clone_64M")
    add("device copy (`clone`), 64M f32: the bandwidth peer", e, p, "bw", "(peer)", None,
        f"copy bandwidth of this run: {copy_bw / 1e12:.2f} TB/s (the better of the two)"
        if copy_bw else "–")
    for name, label, tensors, goal in MEMORY:
        e, p = both(name)
        bound, is_met = "–", None
        if copy_bw:
            bound = f"{fmt_time(tensors * BYTES / copy_bw)} ({tensors} × 256 MiB over the copy)"
            if ok(e):
                is_met = e["BW"] >= goal * copy_bw
                bound += f"; Ember at {100 * e['BW'] / copy_bw:.0f}%"
        add(label, e, p, "bw", f"≥ {100 * goal:.0f}% of the copy bandwidth", is_met, bound)

    e, p = both("add_1elem")
    floor, alloc = ember.get("launch_floor"), ember.get("alloc_1elem")
    bound = "–"
    if ok(floor):
        bound = f"an empty kernel's launch: {fmt_time(floor['seconds'])}"
        if ok(alloc):
            bound += f"; a 1-element allocation: {fmt_time(alloc['seconds'])}"
    add("per-op overhead: `c = c + b`, 1-element f32 (per op)", e, p, "time", "Ember < 3 µs",
        e["seconds"] < 3e-6 if ok(e) else None, bound)

    name = "cnn_train_step/batch:256"
    e, p = both(name)
    sp = speed(e, p)
    flops = 3.0 * CNN_FORWARD_FLOPS * 256
    add("Fashion-MNIST CNN train step, batch 256, Adam (per step)", e, p, "time",
        "below PyTorch eager", None if sp is None else sp > 1.0,
        f"{fmt_time(flops / peak['f32'])} ({flops / 1e9:.1f} GFLOP over the f32 peak)"
        if peak["f32"] else "–")

    notes = []
    job = read_json(args.job) if args.job else None
    if job:
        je, jp = job.get("ember"), job.get("pytorch")

        def conv(j):
            if j is None:
                return None
            if j.get("status") == 0:
                return {"seconds": j["seconds"]}
            if j.get("status") == 124:
                return {"error": f"timed out after {j['seconds']:.0f} s"}
            return {"error": f"exit status {j.get('status')} after {j['seconds']:.0f} s"}

        e, p = conv(je), conv(jp)
        sp = speed(e, p)
        add("8-epoch Fashion-MNIST job, batch 64 (wall time of the process)", e, p, "time",
            "below PyTorch", None if sp is None else sp > 1.0, "–")
        notes.append(f"8-epoch job: test accuracy Ember {(je or {}).get('accuracy', '?')}, "
                     f"PyTorch {(jp or {}).get('accuracy', '?')}; commands: "
                     f"`{job.get('ember_command', '?')}` and `{job.get('pytorch_command', '?')}`.")

    for name, label in (("add_1elem", "`c = c + b` per op"),
                        ("cnn_train_step/batch:256", "CNN train step")):
        e, p = both(name)
        if ok(e) and ok(p) and "enqueue_seconds" in e and "enqueue_seconds" in p:
            notes.append(f"Host time queuing the work (the batches without their waits), "
                         f"{label}: Ember {fmt_time(e['enqueue_seconds'])}, PyTorch "
                         f"{fmt_time(p['enqueue_seconds'])}.")
    for key, label in (("cnn_train_step_fused_adam/batch:256", "with Adam's fused kernel"),
                       ("cnn_train_step_compiled/batch:256", "under torch.compile")):
        if ok(torch.get(key)):
            notes.append(f"PyTorch's CNN train step {label}: {fmt_time(torch[key]['seconds'])}.")
    notes.append(
        "Rates count bytes read + written and 2 FLOPs per multiply-add; each row is the median of "
        f"{ectx.get('repetitions', '?')} repetitions (Ember) and {tctx.get('repetitions', '?')} "
        "(PyTorch), each batch of ops ending in a device synchronisation inside the time. "
        "Float32 rows and the CNN run without TF32 in both (Ember's and the CNN's default here); "
        "the bound of the CNN step counts its FLOPs only.")
    notes.append(f"Run {tctx.get('date', '?')} on {tctx.get('device', '?')}; Ember commit "
                 f"{args.commit}; PyTorch {tctx.get('torch', '?')} (CUDA {tctx.get('cuda', '?')}, "
                 f"cuDNN {tctx.get('cudnn', '?')}); host {ectx.get('host_name', '?')}, "
                 f"{ectx.get('num_cpus', '?')} CPUs.")
    print("\n".join(lines))
    print()
    for n in notes:
        print(f"- {n}")


if __name__ == "__main__":
    main()
