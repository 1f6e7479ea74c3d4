#!/usr/bin/env python3
"""Cross-library check: Ember writes a file (io_write_sample) and Python's safetensors reads it.
Exits 77 (ctest's skip) when safetensors (or numpy) is not installed.

    python3 check_ember_written.py <io_write_sample binary> <output file>
"""
import subprocess
import sys

try:
    import numpy as np
    from safetensors import safe_open
except ImportError as e:
    print(f"skipped: {e} (pip install safetensors numpy)")
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None  # numpy has no bfloat16: bf16 is then checked from its raw bits

tool, path = sys.argv[1], sys.argv[2]
subprocess.run([tool, path], check=True)

ramp = np.arange(12, dtype=np.float64).reshape(3, 4) * 0.25 - 1.0
expected = {
    "u8": (np.arange(250, 256, dtype=np.uint8), "U8"),
    "f16": (ramp.astype(np.float16), "F16"),
    "f32": (ramp.astype(np.float32), "F32"),
    "bool": (np.array([True, False, True]), "BOOL"),
    "f64": (ramp, "F64"),
    "bf16": (ramp, "BF16"),
    "i64": (np.arange(-3, 4, dtype=np.int64) * 1_000_000_000_000, "I64"),
    "i32": (np.arange(-5, 5, dtype=np.int32), "I32"),
    "i8": (np.arange(-128, 128, 51).astype(np.int8), "I8"),
    "scalar": (np.array(2.5, dtype=np.float32), "F32"),
    "empty": (np.zeros((2, 0), dtype=np.float32), "F32"),
    "transposed": (ramp.astype(np.float32).T, "F32"),
}

failures = []
framework = "pt" if torch is not None else "numpy"
with safe_open(path, framework=framework) as f:
    if f.metadata() != {"format": "pt", "writer": "ember"}:
        failures.append(f"metadata {f.metadata()}")
    if sorted(f.keys()) != sorted(expected):
        failures.append(f"keys {sorted(f.keys())}")
    for name, (want, _) in expected.items():
        if name == "bf16" and torch is None:
            continue
        got = f.get_tensor(name)
        if torch is not None:
            got = got.float().numpy() if name == "bf16" else got.numpy()
        if got.shape != want.shape or not np.array_equal(got.astype(np.float64), want.astype(np.float64)):
            failures.append(f"{name}: got {got!r}, want {want!r}")
        elif name != "bf16" and got.dtype != want.dtype:
            failures.append(f"{name}: dtype {got.dtype}, want {want.dtype}")

# The header itself: dtype strings, and data that starts 8-byte aligned.
import json
import struct

with open(path, "rb") as fh:
    (n,) = struct.unpack("<Q", fh.read(8))
    header = json.loads(fh.read(n))
if n % 8 != 0:
    failures.append(f"header length {n} is not a multiple of 8")
for name, (_, dtype) in expected.items():
    if header[name]["dtype"] != dtype:
        failures.append(f"{name}: header dtype {header[name]['dtype']}, want {dtype}")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"ok: Python's safetensors read all {len(expected)} tensors Ember wrote ({framework})")
