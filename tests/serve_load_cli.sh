#!/usr/bin/env bash
# attncap serve under a small load (bench/serve_load.py; the full one is bench/serve_load.sh): 300
# requests from 32 loopback clients over 60 shared COCO photos, 2 % hostile (truncated JPEG, 50 MB body,
# wrong type, one byte a second, disconnect mid-body): the server survives and exits 0 on SIGTERM,
# every good caption equals `attncap caption`'s for that photo, every hostile request is refused with
# its status, RSS after the last requests within 5 % of its value after the first half.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}

t_begin serve_small_load
if need_data data/coco/images; then
  if ! "$A" caption --model "$ROOT/models/attncap.safetensors" "$ROOT/samples/dog.jpg" >/dev/null 2>"$T/err"; then
    t_skip "the repo's model does not run here (its encoder in ../shared missing?): $(head -1 "$T/err")"
  else
    photos=$(ls "$DATA"/data/coco*/images/*.jpg | head -60)
    if /usr/bin/python3 "$ROOT/bench/serve_load.py" --bin "$A" --model "$ROOT/models/attncap.safetensors" --requests 300 \
         --clients 32 --hostile 0.02 --max-seconds 600 $photos >"$T/out" 2>"$T/err"; then
      cat "$T/out"; t_ok
    else
      t_fail "$(cat "$T/out") $(head -5 "$T/err")"
    fi
  fi
fi
t_end
