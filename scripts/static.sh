#!/usr/bin/env bash
# Builds examples/classify as one statically linked executable with the Fashion-MNIST CNN's
# weights inside, then shows that it needs nothing installed: it runs in an empty chroot (the
# executable and the images, no libc, no /proc, no /dev) and its logits are checked against the
# float64 NumPy model of examples/classify/reference.py. Prints its size and start-up time.
#   scripts/static.sh [model.safetensors]
# Without a file it trains one epoch with the `ember` of $EMBER_BUILD_DIR (default: build;
# scripts/fashion_weights.sh).
# EMBER_STATIC_BUILD_DIR picks the static build's directory (default: build-static).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_STATIC_BUILD_DIR:-build-static}
weights=${1:-}

bash scripts/setup.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
weights=$(bash scripts/fashion_weights.sh "$weights")

cmake -S examples/classify -B "$build" -G Ninja -DEMBER_CLASSIFY_WEIGHTS="$weights" \
  -DEMBER_WERROR=ON > /dev/null
cmake --build "$build" -j2 --target classify
linkage=$(ldd "$build/classify" 2>&1 || true)
if [[ $linkage != *"not a dynamic executable"* ]]; then
  echo "static.sh: $build/classify is dynamically linked:" >&2
  echo "$linkage" >&2
  exit 1
fi

root=$work/root
mkdir -p "$root/images"
cp "$build/classify" "$root/classify"
python3 examples/classify/reference.py export "$root/images" 100
images=$(cd "$root" && printf '/%s ' images/*.png)
# shellcheck disable=SC2086  # one argument per image
chroot "$root" /classify --logits $images > "$work/answers.txt"
head -3 "$work/answers.txt"
python3 examples/classify/reference.py check "$weights" "$work/answers.txt"

# Start-up to the first answer: the whole process, loading and one image, 20 times.
start=$(date +%s%N)
for _ in $(seq 20); do chroot "$root" /classify /images/0000.png > /dev/null; done
ms=$((($(date +%s%N) - start) / 20000000))
strip -o "$work/stripped" "$build/classify"
echo "static.sh: classify is $(stat -c %s "$build/classify") bytes" \
  "($(stat -c %s "$work/stripped") stripped, of which $(stat -c %s "$weights") are the weights);" \
  "start to first answer ${ms} ms (mean of 20 runs, in the chroot)"
