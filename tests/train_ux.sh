#!/usr/bin/env bash
# attncap train as a user meets it (issue #16 item 8): --resume refuses flags that differ from the
# checkpoint's (naming them; --force goes on with the checkpoint's, but a --lr given wins and it says
# so: issue #32, 4) and says where it resumes; a
# finished run says so, and resuming it says it is already finished; photos without cached features
# are counted in one warning; --lr-min is a floor for the decay; --help says to run features first;
# the defaults are the shipped recipe's; Ctrl-C leaves no temporaries.
. "$(dirname "$0")/lib.sh"
set -m # job control: a background train gets SIGINT (and env --default-signal=INT below: also when this
       # suite itself was started with SIGINT ignored, as a background job or under nohup, which bash cannot undo)
FX=$(dirname "$0")/fixtures/train
base=(--data "$FX/captions.json" --features "$FX/features" --embed 24 --hidden 32 --att 16 --min-count 1
      --batch 5 --lr 0.005 --dropout 0 --checkpoint-every 0)

t_begin resume_refuses_changed_flags_then_force
"$A" train "${base[@]}" --epochs 20 --max-steps 3 --out "$T/r.safetensors" >/dev/null 2>"$T/err0"
if [ ! -f "$T/r.safetensors.ckpt" ]; then t_fail "no checkpoint: $(head -3 "$T/err0")"
elif expect_error "changed --lr and --hidden" "$A" train "${base[@]}" --epochs 20 --max-steps 6 --lr 0.01 --hidden 40 \
       --out "$T/r.safetensors" --resume; then
  if ! grep -q 'lr 0.01 (checkpoint: 0.005' "$T/err" || ! grep -q 'hidden 40 (checkpoint: 32)' "$T/err" ||
     ! grep -q -- '--force' "$T/err" || grep -q 'batch' "$T/err"; then t_fail "message: $(cat "$T/err")"
  elif ! "$A" train "${base[@]}" --epochs 20 --max-steps 6 --lr 0.01 --batch 7 --out "$T/r.safetensors" --resume --force \
         --log "$T/r.csv" --eval-every 1 >/dev/null 2>"$T/err2"; then t_fail "--force: $(cat "$T/err2")"
  elif ! grep -q '^train: resuming from step 3 ' "$T/err2" || ! grep -q "options are kept: batch 7 (checkpoint: 5)" "$T/err2" ||
       ! grep -q "the learning rate given, 0.01, replaces the checkpoint's 0.005 (at step 3)" "$T/err2"; then
    t_fail "no resume line: $(cat "$T/err2")"
  # the run's own log: every step after the resume at the learning rate given
  elif ! awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "lr") c = i; next} $1 > 3 {n++; if ($c + 0 != 0.01) bad = 1}
                  END {exit !(c && n > 0 && !bad)}' "$T/r.csv"; then t_fail "--lr 0.01 not used after the resume: $(cat "$T/r.csv")"
  # the same flags as the checkpoint's (which now records the learning rate given): no complaint
  elif ! "$A" train "${base[@]}" --epochs 20 --max-steps 9 --lr 0.01 --out "$T/r.safetensors" --resume >/dev/null 2>"$T/err3" ||
       ! grep -q '^train: resuming from step 6 ' "$T/err3"; then t_fail "plain resume: $(cat "$T/err3")"
  else t_ok; fi
fi

# --force keeps the checkpoint's validation metric, as it says: its best score is in that metric's
# units (with a forced --val-metric loss against a best CIDEr-D the run never saved a model again)
t_begin force_keeps_the_val_metric
"$A" train "${base[@]}" --epochs 20 --max-steps 2 --eval-every 1 --out "$T/m.safetensors" >/dev/null 2>&1
rm -f "$T/m.safetensors"
if [ ! -f "$T/m.safetensors.ckpt" ]; then t_fail "no checkpoint"
elif ! "$A" train "${base[@]}" --epochs 20 --max-steps 5 --eval-every 1 --val-metric loss --out "$T/m.safetensors" \
       --resume --force >"$T/out" 2>"$T/err"; then t_fail "resume: $(cat "$T/err")"
elif ! grep -q "options are kept: val_metric loss (checkpoint: cider)" "$T/err"; then t_fail "message: $(cat "$T/err")"
elif ! grep -q "best, saved" "$T/out" "$T/err"; then t_fail "no evaluation after the resume saved a model: $(cat "$T/out" "$T/err")"
else t_ok; fi

t_begin finished_run_says_so_and_resume_is_a_no_op
if "$A" train "${base[@]}" --epochs 2 --out "$T/f.safetensors" >/dev/null 2>"$T/err"; then
  cp "$T/f.safetensors" "$T/f_before.safetensors"
  if ! grep -q '^train: finished: all epochs done at step [0-9]* (2 of 2 epochs).*saved in ' "$T/err"; then
    t_fail "no finish line: $(cat "$T/err")"
  elif ! "$A" train "${base[@]}" --epochs 2 --out "$T/f.safetensors" --resume >"$T/out" 2>"$T/err2"; then
    t_fail "resume of a finished run: $(cat "$T/err2")"
  elif ! grep -q '^train: already finished at step' "$T/err2" || grep -q 'resuming' "$T/err2" || [ -s "$T/out" ]; then
    t_fail "resume of a finished run: $(cat "$T/err2")"
  elif ! cmp -s "$T/f.safetensors" "$T/f_before.safetensors"; then t_fail "the finished model changed"
  else t_ok; fi
else t_fail "$(cat "$T/err")"; fi

t_begin photos_without_features_one_warning
python3 - "$FX/captions.json" "$T/more.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in range(3):
    d["images"].append({"filepath": "", "filename": "nofeat%d.jpg" % k, "split": "train",
                        "sentences": [{"raw": "a dog with no features ."}]})
json.dump(d, open(sys.argv[2], "w"))
PY
n_train=$(python3 -c 'import json,sys; print(sum(1 for i in json.load(open(sys.argv[1]))["images"] if i["split"] == "train"))' "$T/more.json")
if "$A" train "${base[@]}" --data "$T/more.json" --epochs 1 --out "$T/w.safetensors" >/dev/null 2>"$T/err"; then
  if [ "$(grep -c 'warning' "$T/err")" -ne 1 ] ||
     ! grep -q "warning: 3 of $n_train training photos have no features in $FX/features" "$T/err"; then
    t_fail "warning: $(grep -i warn "$T/err")"
  else t_ok; fi
else t_fail "$(cat "$T/err")"; fi

t_begin lr_min_is_a_floor
# a decay of 100x after every evaluation without progress (a learning rate too high for it: the
# loss rises at first); the floor holds it at 0.001
if "$A" train "${base[@]}" --lr 0.3 --ema 0 --epochs 10 --eval-every 1 --val-metric loss --lr-decay 0.01 --lr-patience 1 \
     --patience 1000 --lr-min 0.001 --log "$T/lr.csv" --out "$T/l.safetensors" >/dev/null 2>"$T/err"; then
  if ! python3 - "$T/lr.csv" <<'PY' 2>"$T/err"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
lrs = [float(r["lr"]) for r in rows]
assert lrs[0] == 0.3, lrs[:3]
# the trainer's rule, independently: after each evaluation that is not the best so far, lr = max(lr * 0.01, floor)
best, lr, want = float("inf"), 0.3, []
for r in rows:
    want.append(lr)
    v = float(r["val_loss"])
    if v < best: best = v
    else: lr = max(lr * 0.01, 0.001)
assert min(lrs) == 0.001, ("never decayed to the floor", lrs)
assert all(abs(a - b) < 1e-9 for a, b in zip(lrs, want)), (lrs, want)
PY
  then t_fail "$(cat "$T/err")"
  else t_ok; fi
else t_fail "$(cat "$T/err")"; fi

t_begin help_says_features_first_and_defaults_are_the_recipe
h=$("$A" train --help)
# tools/train_flickr8k.sh's flags, the shipped model's recipe
if ! grep -q 'attncap features' <<<"$h"; then t_fail "train --help does not say to run attncap features first"
elif ! grep -q -- '--batch B .*(64)' <<<"$h" || ! grep -q -- '--embed E --hidden H --att A .*(256, 512, 256)' <<<"$h" ||
     ! grep -q -- '--ema D' <<<"$h" || ! grep -q '(0.999; 0 = off)' <<<"$h" || ! grep -q -- '--beam K .*(3)' <<<"$h"; then
  t_fail "defaults differ from tools/train_flickr8k.sh: $(grep -E -- '--(batch|embed|ema|beam) ' <<<"$h")"
else t_ok; fi

t_begin sigint_leaves_no_temporaries
mkdir -p "$T/int"
env --default-signal=INT "$A" train "${base[@]}" --epochs 100000 --patience 100000 --checkpoint-every 1 --quiet --log "$T/int/log.csv" \
  --out "$T/int/m.safetensors" >/dev/null 2>"$T/err" &
pid=$!
for _ in $(seq 600); do [ -f "$T/int/m.safetensors.ckpt" ] && break; sleep 0.05; done
# this process's temporaries, planted: the handler must remove them (and leave another process's)
: >"$T/int/m.safetensors.tmp.$pid"; : >"$T/int/log.csv.tmp.$pid"; : >"$T/int/other.tmp.999999"
kill -INT $pid; wait $pid; rc=$?
left=$(find "$T/int" -name "*.tmp.$pid*")
if [ $rc -ne 130 ]; then t_fail "exit $rc, expected 130: $(head -3 "$T/err")"
elif [ -n "$left" ]; then t_fail "left behind: $left"
elif [ ! -e "$T/int/other.tmp.999999" ]; then t_fail "another process's temporary was removed"
else t_ok; fi

t_begin tiny_set_holds_out_val
# 6 captioned photos in a TSV without a split column, all of whose names the documented hash puts in
# train (attncap help data): training holds one out for validation and says how to choose them; the
# model records 1 val photo
python3 - "$FX/captions.json" "$T/tiny.tsv" <<'PY'
import json, sys
def split(name):  # attncap help data: FNV-1a 64 of the name, h ^= h >> 29, mod 100: < 90 train (the
    h = 1469598103934665603  # offset basis as src/base/strmap.c has it, a digit short of FNV's)
    for b in name.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    h ^= h >> 29
    return 'train' if h % 100 < 90 else 'val' if h % 100 < 95 else 'test'
d = json.load(open(sys.argv[1]))
rows = [(i['filename'], s['raw']) for i in d['images'] if split(i['filename']) == 'train' for s in i['sentences']]
names = sorted({n for n, _ in rows})[:6]
with open(sys.argv[2], 'w') as f:
    for n, c in rows:
        if n in names: f.write('%s\t%s\n' % (n, c))
PY
if [ "$(cut -f1 "$T/tiny.tsv" | sort -u | wc -l)" -ne 6 ]; then t_fail "fixture: $(cut -f1 "$T/tiny.tsv" | sort -u | wc -l) photos"
elif ! "$A" train "${base[@]}" --data "$T/tiny.tsv" --epochs 1 --out "$T/tiny.safetensors" >/dev/null 2>"$T/err"; then
  t_fail "$(grep -v '^epoch' "$T/err" | head -3)"
elif ! grep -q "train: note: the data set has no val photos: 1 of its 6 training photos with features are held out" "$T/err" ||
     ! grep -q 'image<TAB>caption<TAB>train|val' "$T/err"; then t_fail "no note: $(grep -v '^epoch' "$T/err" | head -3)"
elif ! python3 - "$T/tiny.safetensors" <<'PY'
import json, struct, sys
f = open(sys.argv[1], 'rb'); n = struct.unpack('<Q', f.read(8))[0]
t = json.loads(json.loads(f.read(n))['__metadata__']['training'])
sys.exit(0 if t.get('val_photos') == 1 else 1)
PY
then t_fail "the model does not record 1 val photo"
else t_ok; fi

t_begin eval_warns_on_training_photos
# issue #32, 4: the model records its training photos (metadata "training_photos": hashed file
# names); eval on photos it trained on warns, naming how many; on its val photos it does not
if "$A" train "${base[@]}" --epochs 1 --out "$T/e.safetensors" >/dev/null 2>"$T/err"; then
  counts=$(python3 - "$FX/captions.json" "$T/e.safetensors" <<'PY'
import json, struct, sys
d = json.load(open(sys.argv[1]))
n_train = sum(1 for i in d['images'] if i['split'] == 'train')
f = open(sys.argv[2], 'rb'); n = struct.unpack('<Q', f.read(8))[0]
rec = json.loads(json.loads(f.read(n))['__metadata__']['training_photos'])
def h(name):  # FNV-1a 64 as src/base/strmap.c has it, low 32 bits
    x = 1469598103934665603
    for b in name.encode(): x = ((x ^ b) * 1099511628211) & 0xffffffffffffffff
    return '%08x' % (x & 0xffffffff)
want = ''.join(sorted({h(i['filename']) for i in d['images'] if i['split'] == 'train'}))
print(n_train, 'ok' if rec['hashes'] == want and rec['n'] == len(want) // 8 else 'bad record: %s' % rec)
PY
)
  ev() { "$A" eval --model "$T/e.safetensors" --data "$FX/captions.json" --features "$FX/features" --quiet "$@"; }
  ev --split train >/dev/null 2>"$T/err1"; rc1=$?
  ev --split val >/dev/null 2>"$T/err2"; rc2=$?
  n_train=${counts%% *}
  if [ "${counts#* }" != ok ]; then t_fail "${counts#* }"
  elif [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then t_fail "eval: exit $rc1 $rc2: $(cat "$T/err1" "$T/err2" | head -3)"
  elif ! grep -qF "attncap eval: warning: $n_train of the $n_train photos scored are among the $n_train $T/e.safetensors was trained on" "$T/err1"; then
    t_fail "no warning on the training photos: $(cat "$T/err1")"
  elif grep -q warning "$T/err2"; then t_fail "warned on the val photos: $(cat "$T/err2")"
  else t_ok; fi
else t_fail "$(cat "$T/err")"; fi

t_end
