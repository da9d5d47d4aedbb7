#!/usr/bin/env bash
# attncap train with captions without photos (--text) and a warm start (--init), on the tiny fixture:
# words that only the text uses join the vocabulary (counted by source in the model file) and are
# learned (the model's probability of a text-only sentence rises far above the untrained one's); a
# run stopped at a checkpoint and resumed gives the same model byte for byte (the no-photo context
# and its Adam moments are in the checkpoint); --init keeps the rows of the words the models share.
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
printf 't1\ta zebra eats the pizza .\nt2\tthe zebra and a pizza .\nt3\ta red dog runs on the grass .\n' > "$T/text.tsv"
for i in 1 2 3; do cat "$T/text.tsv"; done > "$T/text3.tsv"
args=(--data "$FX/captions.json" --features "$FX/features" --embed 32 --hidden 32 --att 16 --min-count 1 --batch 5
      --lr 0.01 --dropout 0.2 --lambda 0.1 --quiet --text "$T/text3.tsv" --text-ratio 0.6 --patience 100)

t_begin train_text_words_join_the_vocabulary
if "$A" train "${args[@]}" --epochs 30 --checkpoint-every 0 --out "$T/m.safetensors" >/dev/null 2>"$T/err"; then
  "$A" info "$T/m.safetensors" > "$T/info" 2>&1
  # vocab_counts: paired counts are 0 for zebra/pizza, text counts 6 each (2 captions x 3 copies)
  if /usr/bin/env python3 - "$T/m.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
meta = json.loads(b[8:8 + n])["__metadata__"]
vocab, counts = json.loads(meta["vocab"]), json.loads(meta["vocab_counts"])
for w, p, t in (("zebra", 0, 6), ("pizza", 0, 6)):
    i = vocab.index(w)
    assert counts["paired"][i] == p and counts["text"][i] == t, (w, counts["paired"][i], counts["text"][i])
assert len(counts["paired"]) == len(vocab) == len(counts["text"])
assert json.loads(meta["training"])["text_captions"] == 9
PY
  then t_ok; else t_fail "vocab_counts wrong"; fi
else t_fail "train --text failed: $(head -3 "$T/err")"; fi

t_begin train_text_learns_the_text
# The no-photo context is learned: after 30 epochs it has moved away from where one step leaves it.
"$A" train "${args[@]}" --epochs 1 --max-steps 1 --checkpoint-every 0 --out "$T/s.safetensors" >/dev/null 2>&1
if /usr/bin/env python3 - "$T/m.safetensors.ckpt" "$T/s.safetensors.ckpt" <<'PY'
import json, struct, sys, array
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    t = h["null_ctx"]; s, e = t["data_offsets"]; a = array.array("f"); a.frombytes(b[8 + n + s:8 + n + e]); return a
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b) == 16
assert max(abs(x - y) for x, y in zip(a, b)) > 1e-3, "the no-photo context did not move"
PY
then t_ok; else t_fail "the no-photo context is not learned"; fi

t_begin train_text_resume_is_byte_identical
"$A" train "${args[@]}" --epochs 6 --checkpoint-every 4 --out "$T/a.safetensors" >/dev/null 2>"$T/ea" || t_fail "run a"
"$A" train "${args[@]}" --epochs 6 --checkpoint-every 4 --max-steps 9 --out "$T/b.safetensors" >/dev/null 2>"$T/eb"
"$A" train "${args[@]}" --epochs 6 --checkpoint-every 4 --out "$T/b.safetensors" --resume >/dev/null 2>"$T/er"
if cmp -s "$T/a.safetensors" "$T/b.safetensors"; then t_ok; else t_fail "resumed model differs: $(head -2 "$T/er")"; fi

t_begin train_init_keeps_shared_rows
# Warm start from m (whose vocabulary has the text words) into a run without text: after one step at
# lr 1e-9 every word's embedding row equals its row in m.
"$A" train --data "$FX/captions.json" --features "$FX/features" --embed 32 --hidden 32 --att 16 --min-count 1 \
  --batch 5 --lr 1e-9 --dropout 0 --lambda 0.1 --quiet --epochs 1 --max-steps 1 --checkpoint-every 0 \
  --init "$T/m.safetensors" --out "$T/w.safetensors" >/dev/null 2>"$T/ew"
if /usr/bin/env python3 - "$T/m.safetensors" "$T/w.safetensors" <<'PY'
import json, struct, sys, array
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    t = h["emb"]; s, e = t["data_offsets"]; a = array.array("f"); a.frombytes(b[8 + n + s:8 + n + e])
    return json.loads(h["__metadata__"]["vocab"]), a
vm, em = load(sys.argv[1]); vw, ew = load(sys.argv[2])
assert "zebra" not in vw and "zebra" in vm
E = 32; same = 0
for i, w in enumerate(vw):
    j = vm.index(w)
    assert max(abs(ew[i * E + k] - em[j * E + k]) for k in range(E)) < 1e-5, w
    same += 1
assert same == len(vw)
PY
then t_ok; else t_fail "warm start did not keep the rows: $(head -2 "$T/ew")"; fi

t_begin train_text_errors
ok=1
expect_error "missing text file" "$A" train "${args[@]}" --epochs 1 --text "$T/nope.tsv" --out "$T/x.st" || ok=0
expect_error "init not a model" "$A" train "${args[@]}" --epochs 1 --init "$T/text.tsv" --out "$T/x.st" || ok=0
expect_error "init of other sizes" "$A" train "${args[@]}" --epochs 1 --embed 16 --init "$T/m.safetensors" --out "$T/x.st" || ok=0
expect_error "missing extra data" "$A" train "${args[@]}" --epochs 1 --extra-data "$T/nope.json" --out "$T/x.st" || ok=0
[ $ok = 1 ] && t_ok
t_end
