#!/usr/bin/env python3
"""The Python peers of bench/serve_bench.sh: FastAPI + uvicorn serving a model with PyTorch or
ONNX Runtime, with Ember's JSON protocol (POST /v1/predict {"inputs": {...}} -> {"outputs":
{...}}; GET /healthz), one request at a time per call as such servers run.

    serve_python.py torch|ort fashion|minilm MODEL_DIR PORT
"""
import os
import sys

import numpy as np
import uvicorn
from fastapi import FastAPI, Request

sys.path.insert(0, os.path.dirname(__file__))

backend, name, model_dir, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
dtypes = {"input": np.float32, "input_ids": np.int64, "attention_mask": np.int64}
app = FastAPI()

if backend == "torch":
    import torch
    from serve_models import build

    model = build(name)
    model.load_state_dict(torch.load(os.path.join(model_dir, name + ".pt")))
    output = "logits" if name == "fashion" else "embedding"

    types = {"input": torch.float32, "input_ids": torch.int64, "attention_mask": torch.int64}

    def run(inputs):  # lists in, lists out (Debian's torch 1.13 cannot take NumPy 2's arrays)
        with torch.inference_mode():
            y = model(*[torch.tensor(v, dtype=types[k]) for k, v in inputs.items()])
        return {output: y.tolist()}
else:
    import onnxruntime as ort

    session = ort.InferenceSession(os.path.join(model_dir, name + ".onnx"),
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]

    def run(inputs):
        arrays = {k: np.asarray(v, dtype=dtypes[k]) for k, v in inputs.items()}
        return {k: v.tolist() for k, v in zip(names, session.run(None, arrays))}


@app.get("/healthz")
def healthz():
    return {"status": "ok"}


@app.post("/v1/predict")
async def predict(request: Request):
    body = await request.json()
    return {"outputs": run(body["inputs"])}


uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
