#!/usr/bin/env bash
# Scoring speed: `attncap eval` on the 4,982-image golden case (../shared/metrics), with and without
# METEOR, best of 3 runs (wall and CPU time). coco-caption itself (Java tokenizer + METEOR jar,
# Python BLEU/ROUGE/CIDEr) is not installed here, so there is no peer to time side by side; its
# documented run on this set takes minutes, mostly JVM start-up and METEOR.
set -u
cd "$(dirname "$0")/.."
A=${ATTNCAP_BIN:-build/attncap}
F=${ATTNCAP_DATA:-../shared}/metrics/magic_mscoco_result.json
if [ ! -f "$F" ]; then echo "skip: needs ../shared/metrics/magic_mscoco_result.json"; exit 0; fi
run() { # label, args...
  local label=$1; shift
  local best=""
  for i in 1 2 3; do
    local t
    t=$( { /usr/bin/time -f '%e %U' "$A" eval --pairs "$F" --json "$@" >/dev/null; } 2>&1 | tail -1)
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{split(a,x," ");split(b,y," ");exit !(x[1]<y[1])}'; then best=$t; fi
  done
  read -r wall cpu <<<"$best"
  printf '%-34s wall %6.3f s   cpu %6.3f s   (4982 images, 29,902 captions tokenized)\n' "$label" "$wall" "$cpu"
}
run "eval BLEU+ROUGE-L+CIDEr-D" --no-meteor
run "eval all metrics (with METEOR)"
