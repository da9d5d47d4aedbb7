#!/usr/bin/env bash
# Training throughput, attncap vs the PyTorch re-implementation (tools/torch_decoder.py), same model,
# same batch (32 captions, Flickr8k-like lengths), 7x7x1280 annotations, vocabulary 2500,
# E = H = A = 512, same thread count, measured one after the other in this run. One training step =
# forward + backward of the batch (target tokens per second; the optimizer update is excluded on
# both sides). BENCH_SECONDS (default 20) per side; ATTNCAP_THREADS (default 2).
set -u
cd "$(dirname "$0")/.."
secs=${BENCH_SECONDS:-20}
threads=${ATTNCAP_THREADS:-2}
[ -x build/bench/bench_train ] || { echo "build/bench/bench_train missing (make bench)"; exit 1; }
ours=$(ATTNCAP_THREADS=$threads build/bench/bench_train "$secs")
echo "$ours"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  theirs=$(/usr/bin/python3 tools/torch_decoder.py --bench --seconds "$secs" --threads "$threads")
  echo "$theirs"
  a=$(echo "$ours" | sed -E 's/.* ([0-9]+) target tokens.*/\1/'); ac=$(echo "$ours" | sed -E 's/.* ([0-9]+) per CPU-second.*/\1/')
  b=$(echo "$theirs" | sed -E 's/.* ([0-9]+) target tokens.*/\1/'); bc=$(echo "$theirs" | sed -E 's/.* ([0-9]+) per CPU-second.*/\1/')
  awk -v a="$a" -v b="$b" -v ac="$ac" -v bc="$bc" 'BEGIN {
    printf "train step speed-up over PyTorch: %.2fx wall clock, %.2fx per CPU-second (goal >= 3x, stretch 10x)\n", a / b, ac / bc }'
else
  echo "pytorch: /usr/bin/python3 has no torch; no comparison"
fi
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs on the machine skew both sides)"
