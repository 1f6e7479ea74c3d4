#!/usr/bin/env bash
# `ember serve` against the same models served from Python (FastAPI + uvicorn with PyTorch, and
# with ONNX Runtime's Python API), one run on this machine, over loopback, with wrk as the load:
# requests per second at 1, 8 and 64 connections, p50 and p99 latency, peak resident memory and
# the time from start to the first answered request. Rows go to docs/PERFORMANCE.md.
#   bench/serve_bench.sh [seconds per load (5)]
# Needs the build of $EMBER_BUILD_DIR (default: build) with ember serve, wrk and curl, and
# /usr/bin/python3 with torch, onnxruntime, fastapi and uvicorn (pip).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
main=${EMBER_BUILD_DIR:-build}
ember=$PWD/$main/tools/ember/ember
py=/usr/bin/python3
dir=$PWD/$main/serve_bench
mkdir -p "$dir"
weights=$(bash scripts/fashion_weights.sh)
$py bench/serve_models.py "$weights" "$dir"
results=$dir/results.md
echo "| model | server | start to first answer | peak RSS | 1 conn: req/s, p50, p99 | 8 conn | 64 conn |" > "$results"
echo "|---|---|---|---|---|---|---|" >> "$results"
port=18400

# row MODEL SERVER COMMAND...: starts the server, waits for its first answer, loads it with wrk
# at each connection count, and appends a table row.
row() {
  local model=$1 server=$2
  shift 2
  port=$((port + 1))
  local body=$dir/$model.json url=http://127.0.0.1:$port/v1/predict
  local start=$(date +%s%N)
  "$@" "$port" > "$dir/$server-$model.log" 2>&1 &
  local pid=$!
  until [[ $(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    --data "@$body" "$url" || true) == 200 ]]; do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "serve_bench.sh: $server ($model) did not start:" >&2
      cat "$dir/$server-$model.log" >&2
      exit 1
    fi
    sleep 0.01
  done
  local startup=$((($(date +%s%N) - start) / 1000000))
  if ! kill -0 "$pid" 2> /dev/null; then  # the answer came from another process on the port
    echo "serve_bench.sh: port $port is taken by another server" >&2
    exit 1
  fi
  local line="| $model | $server | ${startup} ms"
  local cells=""
  for c in 1 8 64; do
    local threads=$((c < 2 ? 1 : 2))
    BODY=$body wrk -t$threads -c$c -d${secs}s --latency -s bench/serve_post.lua "$url" > "$dir/wrk.txt"
    local rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$dir/wrk.txt")
    local p50=$(awk '$1 == "50%" {print $2}' "$dir/wrk.txt")
    local p99=$(awk '$1 == "99%" {print $2}' "$dir/wrk.txt")
    local bad=$(awk '/Non-2xx/ {print $5}' "$dir/wrk.txt")
    cells+=" | $rps, $p50, $p99${bad:+ ($bad non-2xx)}"
  done
  local rss=$(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/$pid/status")
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$line | $rss$cells |" | tee -a "$results"
}

# exec: the server is the background job's process, whose peak RSS is read. The encoder's work
# grows with its batch, so on a CPU batches past 4 buy it no throughput, only memory and wait.
ember_serve() { exec "$ember" serve "$1" --port "$3" --max-batch "$2"; }
python_serve() { exec $py bench/serve_python.py "$1" "$2" "$dir" "$3"; }

row fashion "ember serve" ember_serve "$weights" 16
row fashion "FastAPI + PyTorch" python_serve torch fashion
row fashion "FastAPI + ONNX Runtime" python_serve ort fashion
row minilm "ember serve" ember_serve "$dir/minilm.onnx" 4
row minilm "FastAPI + PyTorch" python_serve torch minilm
row minilm "FastAPI + ONNX Runtime" python_serve ort minilm
echo
cat "$results"
