#!/usr/bin/env python3
"""examples/fashion_server as a user runs it: it starts, answers a JSON request of raw pixels with
ten logits, refuses a wrong shape with a 400, and exits with status 0 on SIGTERM.
Usage: example_server_test.py path/to/fashion_server"""
import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

server = subprocess.Popen([sys.argv[1], "--port", "0"], stdout=subprocess.PIPE, text=True)
try:
    line = server.stdout.readline()
    port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))

    def post(body):
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/predict", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    status, answer = post({"inputs": {"pixels": [[[128] * 28] * 28]}})
    assert status == 200 and len(answer["outputs"]["logits"][0]) == 10, (status, answer)
    status, answer = post({"inputs": {"pixels": [[1, 2, 3]]}})
    assert status == 400 and "expected [any, 28, 28]" in answer["error"], (status, answer)
finally:
    server.send_signal(signal.SIGTERM)
    rest = server.stdout.read()
    code = server.wait(timeout=30)
assert code == 0, code
assert "stopped after 1 requests" in rest, rest
print("example_server_test: ok")
