#!/usr/bin/env bash
# Scoring speed on the 4,982-image golden case (../shared/metrics): `attncap eval` with and without
# METEOR (best of 3, wall and CPU), and, side by side, coco-caption's own BLEU/ROUGE-L/CIDEr-D Python
# code (transcribed in tools/make_metrics_fixture.py; pycocoevalcap and its Java tokenizer/METEOR are
# not installed here) on the same tokenized captions, CPU time of the scorers alone.
set -u
cd "$(dirname "$0")/.."
A=${ATTNCAP_BIN:-build/attncap}
F=${ATTNCAP_DATA:-../shared}/metrics/magic_mscoco_result.json
if [ ! -f "$F" ]; then echo "skip: needs ../shared/metrics/magic_mscoco_result.json"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() { # label, args...
  local label=$1; shift
  local best=""
  for i in 1 2 3; do
    local t
    t=$( { /usr/bin/time -f '%e %U' "$A" eval --pairs "$F" --json "$@" >/dev/null; } 2>&1 | tail -1)
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{split(a,x," ");split(b,y," ");exit !(x[1]<y[1])}'; then best=$t; fi
  done
  read -r wall cpu <<<"$best"
  printf '%-36s wall %6.3f s   cpu %6.3f s\n' "$label" "$wall" "$cpu"
}
run "attncap eval (tokenize+BLEU+ROUGE+CIDEr)" --no-meteor
run "attncap eval (all, with METEOR)"
"$A" eval --pairs "$F" --no-meteor --per-image "$tmp/pi.json" >/dev/null
ours=$(build/bench/bench_eval 2>/dev/null | awk '/^(BLEU|ROUGE|CIDEr)/{s+=$3} END{printf "%.3f", s}')
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  py=$(/usr/bin/python3 tools/bench_coco_scorers.py "$tmp/pi.json")
  pys=$(awk '{print $3}' <<<"$py")
  echo "$py"
  [ -n "$ours" ] && awk -v a="$pys" -v b="$ours" 'BEGIN{printf "C scorers (BLEU+ROUGE-L+CIDEr-D, cpu %.3f s) vs coco-caption Python: %.0fx faster\n", b, a/b}'
fi
