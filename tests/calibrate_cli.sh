#!/usr/bin/env bash
# attncap calibrate --tags: each tag word's precision fitted on hand-made photos whose counts are known
# (a tag is named when a reference says one of its forms, or the object it names: "a toilet" for a
# toilet seat), written into a copy of the shipped model, reported by caption --json and used by
# the naming's tag_min_precision; the confidence fit on the same kind of files; hostile input gives one line.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
ENC=encoders/mobilenet_v2_1.0_224_quant.tflite
TABLE="$ROOT/models/imagenet_words.tsv"

printf '%s\t%s\n' a.jpg "a dog runs on the grass" a.jpg "a brown dog runs" \
  b.jpg "two dogs play in the snow" c.jpg "a man in a bathrobe" d.jpg "a toilet in a small bathroom" \
  f.jpg "a robe hangs on a door" >"$T/refs.tsv"
cat >"$T/res.jsonl" <<'J'
{"image":"x/a.jpg","caption":"a dog runs","tokens":["a","dog","runs"],"logprob":-2.0,"tags":[{"word":"dog","prob":0.9},{"word":"robe","prob":0.5}]}
{"image":"x/b.jpg","caption":"a dog","tokens":["a","dog"],"logprob":-3.0,"tags":[{"word":"dog","prob":0.3}]}
{"image":"x/c.jpg","caption":"a man in a robe","tokens":["a","man","in","a","robe"],"logprob":-6.0,"tags":[{"word":"robe","prob":0.7}]}
{"image":"x/d.jpg","caption":"a toilet seat","tokens":["a","toilet","seat"],"logprob":-4.0,"tags":[{"word":"toilet seat","prob":0.4}]}
{"image":"x/e.jpg","caption":"a cat","tokens":["a","cat"],"logprob":-1.0,"tags":[{"word":"dog","prob":0.8}]}
{"image":"x/f.jpg","caption":"a cat on a door","tokens":["a","cat","on","a","door"],"logprob":-5.0,"tags":[{"word":"robe","prob":0.25}]}
J

t_begin help
if "$A" calibrate --help | grep -q -- '--tags'; then t_ok; else t_fail "no --tags in usage"; fi

# Counts by hand: dog 2 tags, 2 named (a; b by "dogs"); robe 3, 1 (f; "bathrobe" is not "robe");
# toilet seat 1, 1 (by its object); e.jpg has no references and is not counted.
t_begin tag_counts
if "$A" calibrate --tags --tag-table "$TABLE" --refs "$T/refs.tsv" --results "$T/res.jsonl" >"$T/fit" 2>"$T/err"; then
  got=$(awk '$1=="dog"||$1=="robe"{print $1, $2, $3} $1=="toilet"&&$2=="seat"{print "toilet_seat", $3, $4}' "$T/fit" | sort | tr '\n' ' ')
  if [ "$got" != "dog 2 2 robe 3 1 toilet_seat 1 1 " ]; then t_fail "counts: '$got'"
  elif ! grep -q '^photos 5, tags 6, named by a reference 4 ' "$T/fit"; then t_fail "summary: $(head -1 "$T/fit")"
  else t_ok; fi
else t_fail "$(head -2 "$T/err")"; fi

t_begin confidence_fit
if "$A" calibrate --refs "$T/refs.tsv" --results "$T/res.jsonl" >"$T/conf" 2>"$T/err" &&
   grep -q '^captions 5, right ' "$T/conf"; then t_ok; else t_fail "$(head -2 "$T/err") $(head -1 "$T/conf")"; fi

t_begin hostile
echo '{"image":"x/a.jpg","tags":[{"word":"no such word","prob":0.5}]}' >"$T/bad_word.jsonl"
echo '{"image":"x/a.jpg","tags":[{"word":"dog","prob":1.5}]}' >"$T/bad_prob.jsonl"
echo 'not json' >"$T/bad_line.jsonl"
if expect_error "word not in the table" "$A" calibrate --tags --tag-table "$TABLE" --refs "$T/refs.tsv" --results "$T/bad_word.jsonl" &&
   expect_error "prob over 1" "$A" calibrate --tags --tag-table "$TABLE" --refs "$T/refs.tsv" --results "$T/bad_prob.jsonl" &&
   expect_error "not json" "$A" calibrate --tags --tag-table "$TABLE" --refs "$T/refs.tsv" --results "$T/bad_line.jsonl" &&
   expect_error "lambda" "$A" calibrate --tags --tag-table "$TABLE" --lambda -1 --refs "$T/refs.tsv" --results "$T/res.jsonl" &&
   expect_error "no table" "$A" calibrate --tags --refs "$T/refs.tsv" --results "$T/res.jsonl" &&
   expect_error "table without --tags" "$A" calibrate --tag-table "$TABLE" --refs "$T/refs.tsv" --results "$T/res.jsonl" &&
   expect_error "one label" "$A" calibrate --tags --tag-table "$TABLE" --refs "$T/refs.tsv" --results <(sed -n 2p "$T/res.jsonl") &&
   expect_error "missing model" "$A" calibrate --tags --tag-table "$TABLE" --refs "$T/refs.tsv" --results "$T/res.jsonl" --write "$T/none.safetensors"; then
  if [ -e "$T/none.safetensors" ]; then t_fail "wrote a model after an error"; else t_ok; fi
fi

# Written into a copy of the shipped model: caption --json reports each tag's precision (its formula,
# recomputed from the written fit), and a bar of 1 holds every tag back (nothing forced) while 0 gives
# the shipped model's caption.
t_begin write_and_use
if need_data $ENC; then
  mkdir -p "$T/m"; cp "$ROOT/models/attncap.safetensors" "$T/m/"; ln -sf "$TABLE" "$T/m/imagenet_words.tsv"
  ln -sf "$ROOT/models/presence.safetensors" "$T/m/presence.safetensors"
  # cap MODEL BAR: giraffe.jpg's JSON line (its zebra tag forced) with the tags as constraints
  # (--tags auto) and the naming's tag_min_precision at BAR (ATTNCAP_NAMING)
  cap() { ATTNCAP_NAMING="{\"tag_min_precision\":$2}" "$A" caption --tags auto --json --quiet --model "$1" --encoder "$DATA/$ENC" "$ROOT/samples/giraffe.jpg" 2>>"$T/err"; }
  if ! "$A" calibrate --tags --refs "$T/refs.tsv" --results "$T/res.jsonl" --write "$T/m/attncap.safetensors" >"$T/w" 2>"$T/err"; then
    t_fail "write: $(head -2 "$T/err")"
  else
    cap "$T/m/attncap.safetensors" 0 >"$T/j0"; cap "$ROOT/models/attncap.safetensors" 0 >"$T/js"
    cap "$T/m/attncap.safetensors" 1 >"$T/j1"
    field() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["caption"] if sys.argv[2] == "caption" else sum(t["forced"] for t in d.get("tags", [])))' "$@"; }
    check=$(python3 - "$T/m/attncap.safetensors" "$T/j0" <<'PY'
import json, math, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
tp = json.loads(json.loads(b[8:8 + n])["__metadata__"]["tag_precision"])
tags = json.loads(open(sys.argv[2]).read())["tags"]
bad = []
for t in tags:
    p = min(max(t["prob"], 1e-4), 1 - 1e-4); u = tp["words"].get(t["word"], [0, 0, 0, 1])[2]
    want = 1 / (1 + math.exp(-(tp["a"] + tp["b"] * math.log(p / (1 - p)) + u)))
    if abs(want - t["precision"]) > 2e-4: bad.append((t["word"], t["precision"], want))
print("ok" if tags and not bad else "bad %s %s" % (bad, tags))
PY
)
    if [ "$check" != ok ]; then t_fail "precision: $check"
    elif [ "$(field "$T/j0" caption)" != "$(field "$T/js" caption)" ]; then t_fail "bar 0 changed the caption"
    elif [ "$(field "$T/j1" forced)" != 0 ]; then t_fail "bar 1 still forced: $(cat "$T/j1")"
    elif [ "$(field "$T/js" forced)" = 0 ]; then t_fail "the photo has no forced tag to hold back: $(cat "$T/js")"
    else t_ok; fi
  fi
fi
t_end
