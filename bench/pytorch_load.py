#!/usr/bin/env python3
"""Loading a 100M-parameter state dict (24 Linear(2048, 2048) layers, f32, 403 MB) into a model,
then reading every weight once (a sum): Ember from the torch.save file and from safetensors
against PyTorch's torch.load + load_state_dict, in one run. Each measurement is a fresh process
(the model built first and not timed), run 9 times after a warm-up (the files sit in the page
cache); the median and the fastest time are printed, with the peak resident memory the load
added (the largest of the runs). Run by
scripts/pytorch_load_bench.sh, which builds bench_pytorch_load.

    /usr/bin/python3 bench/pytorch_load.py BENCH_BINARY SCRATCH_DIR
"""
import os
import subprocess
import sys

import torch

tool, scratch = sys.argv[1], sys.argv[2]
os.makedirs(scratch, exist_ok=True)
pt = os.path.join(scratch, "stack.pt")
st = os.path.join(scratch, "stack.safetensors")


STACK = """
class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(2048, 2048) for _ in range(24))
"""
exec(STACK)

if not os.path.exists(pt):
    torch.manual_seed(0)
    torch.save(Stack().state_dict(), pt)
if not os.path.exists(st):
    ember = os.path.join(os.path.dirname(tool), "..", "tools", "ember", "ember")
    subprocess.run([ember, "convert", pt, st], check=True, stdout=subprocess.DEVNULL)

TORCH = "import resource, sys, time, torch\n" + STACK + """
model = Stack()
before = int(open("/proc/self/statm").read().split()[1]) * 4096 / 1e6
start = time.perf_counter()
model.load_state_dict(torch.load(sys.argv[1]))
total = sum(float(p.sum()) for p in model.parameters())
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
print(f"{seconds:.4f} {peak - before:.1f} {total:.6g}")
"""


def run(cmd):
    return [float(v) for v in subprocess.run(cmd, check=True, capture_output=True, text=True)
            .stdout.split()]


rows = {
    "Ember, torch.save file (load_pytorch)": [tool, pt, "pt"],
    "Ember, safetensors (load)": [tool, st, "safetensors"],
    "PyTorch 1.13, torch.load + load_state_dict": [sys.executable, "-c", TORCH, pt],
}
print(f"{os.path.getsize(pt) / 1e6:.0f} MB .pt, {os.path.getsize(st) / 1e6:.0f} MB .safetensors; "
      f"{os.cpu_count()} cores")
print(f"{'':48} {'median s':>8} {'fastest':>8} {'added MB':>9}  check sum")
for name, cmd in rows.items():
    run(cmd)  # warm-up: page cache, lazy libraries
    results = sorted(run(cmd) for _ in range(9))
    print(f"{name:48} {results[4][0]:8.3f} {results[0][0]:8.3f} "
          f"{max(r[1] for r in results):9.0f}  {results[0][2]:.6g}")
