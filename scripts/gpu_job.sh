#!/usr/bin/env bash
# The main job on the GPU (issue 13): trains the Fashion-MNIST CNN for 8 epochs on cuda:0 (unless
# a model is given), evaluates the model on cuda:0 and on the Cpu, and resumes a checkpoint across
# devices both ways (Cpu -> Cuda -> Cpu, 3 epochs on 6,000 images). Prints one summary line per
# step (the logs stay in LOG_DIR); exit status 0 only when every step passed.
#
# Usage: bash scripts/gpu_job.sh EMBER_BINARY FASHION_MNIST_DIR [MODEL.safetensors] [LOG_DIR]
# scripts/gpu_test.sh calls it when EMBER_FASHION_MNIST_DIR is set; scripts/gpu_bench.sh's job
# leaves a model to pass here.
set -uo pipefail
ember=$1 data=$2 model=${3:-} logs=${4:-$(dirname "$ember")/gpu-job}
runs=$logs/runs
rm -rf "$runs"
mkdir -p "$runs"
status=0
say() { echo "gpu_job.sh: $*"; }
accuracy() { grep -oE 'test accuracy( after [0-9]+ epochs)?: [0-9.]+%' "$1" | tail -1; }

if [[ -z $model ]]; then
  start=$SECONDS
  if "$ember" train fashion-mnist --device cuda:0 --data "$data" --out "$runs/train" \
    > "$logs/train.log" 2>&1; then
    say "train --device cuda:0: $((SECONDS - start)) s, $(accuracy "$logs/train.log")"
  else
    tail -20 "$logs/train.log"
    say "train --device cuda:0: FAILED (see $logs/train.log)"
    status=1
  fi
  model=$(ls "$runs"/train/*.safetensors 2> /dev/null | head -1)
fi
for device in cuda:0 cpu; do
  if [[ -n $model ]] && "$ember" eval "$model" --device "$device" --data "$data" \
    > "$logs/eval-$device.log" 2>&1; then
    say "eval --device $device: $(accuracy "$logs/eval-$device.log")"
  else
    tail -20 "$logs/eval-$device.log" 2> /dev/null
    say "eval --device $device: FAILED (model: ${model:-none})"
    status=1
  fi
done
resume=(train fashion-mnist --data "$data" --out "$runs/resume" --limit 6000 --schedule constant)
if "$ember" "${resume[@]}" --epochs 1 --device cpu > "$logs/resume.log" 2>&1 &&
  "$ember" "${resume[@]}" --epochs 2 --device cuda:0 --resume >> "$logs/resume.log" 2>&1 &&
  "$ember" "${resume[@]}" --epochs 3 --device cpu --resume >> "$logs/resume.log" 2>&1; then
  say "resume across devices (cpu, then cuda:0, then cpu): ok, $(accuracy "$logs/resume.log")"
else
  tail -30 "$logs/resume.log"
  say "resume across devices: FAILED (see $logs/resume.log)"
  status=1
fi
exit "$status"
