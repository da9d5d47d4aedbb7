#!/usr/bin/env bash
# attncap caption end to end on a tiny random model (written by test_captioner --make-model) over the
# small shared encoder: output formats, inputs (files, DIR, -), overlays, hostile input.
. "$(dirname "$0")/lib.sh"
MK="$(dirname "$A")/tests/test_captioner"
S=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/samples
py=$(command -v python3 || true)

setup() {
  need_data encoders/mobilenet_v1_0.25_128_quant.tflite || return 1
  [ -x "$MK" ] || { t_skip "needs $MK (make tests)"; return 1; }
  [ -f "$T/tiny.safetensors" ] || "$MK" --make-model "$T/tiny.safetensors" || { t_fail "cannot make the tiny model"; return 1; }
  M="--model $T/tiny.safetensors"
}

# WxH of a PNG from its IHDR chunk.
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'; }

t_begin plain_output
if setup; then
  out=$("$A" caption $M "$S/dog.jpg" 2>"$T/err"); rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif ! printf '%s\n' "$out" | grep -qP "^$S/dog.jpg\t[a-z]+( [a-z]+)*\$"; then t_fail "bad line: $out"
  elif [ -s "$T/err" ]; then t_fail "stderr not empty: $(cat "$T/err")"
  else t_ok; fi
fi

t_begin dir_walk_sorted_and_stdin
if setup; then
  mkdir -p "$T/in/sub" && cp "$S/horses.jpg" "$T/in/b.jpg" && cp "$S/dog.jpg" "$T/in/a.JPG" && cp "$S/kite.jpg" "$T/in/sub/c.jpg"
  echo "not an image" >"$T/in/notes.txt"
  got=$("$A" caption $M --quiet "$T/in" | cut -f1)
  want=$(printf '%s\n' "$T/in/a.JPG" "$T/in/b.jpg" "$T/in/sub/c.jpg")
  got2=$(printf '%s\n' "$S/eagle.jpg" "" "$S/person.jpg" | "$A" caption $M - | cut -f1)
  want2=$(printf '%s\n' "$S/eagle.jpg" "$S/person.jpg")
  if [ "$got" != "$want" ]; then t_fail "DIR gave: $got"
  elif [ "$got2" != "$want2" ]; then t_fail "stdin gave: $got2"
  else t_ok; fi
fi

t_begin json_and_attention
if setup; then
  if [ -z "$py" ]; then t_skip "needs python3 to check JSON"
  else
    "$A" caption $M --json --attention --beam 2 "$S/dog.jpg" "$S/eagle.jpg" >"$T/j.jsonl"
    msg=$("$py" - "$T/j.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, "%d lines" % len(lines)
for l in lines:
    o = json.loads(l)
    assert set(o) >= {"image", "caption", "tokens", "logprob", "overlays", "attention", "grid"}, sorted(o)
    assert o["caption"] == " ".join(o["tokens"]), o
    assert o["logprob"] < 0 and o["overlays"] == []
    h, w = o["grid"]
    assert len(o["attention"]) == len(o["tokens"]) and len(o["tokens"]) >= 1
    for row in o["attention"]:
        assert len(row) == h * w and abs(sum(row) - 1) < 1e-2 and min(row) >= 0, row
print("ok")
PY
)
    [ "$msg" = ok ] && t_ok || t_fail "$msg"
  fi
fi

t_begin deterministic_threads_and_greedy
if setup; then
  a=$("$A" caption $M --threads 1 --json "$S")
  b=$("$A" caption $M --threads 2 --json "$S")
  c=$("$A" caption $M --threads 4 --json "$S/dog.jpg" "$S/eagle.jpg" "$S/horses.jpg" "$S/kite.jpg" "$S/person.jpg" "$S/giraffe.jpg")
  one=$("$A" caption $M --threads 2 --json "$S/dog.jpg")
  g=$("$A" caption $M --beam 1 --max-len 5 "$S/dog.jpg" | cut -f2 | wc -w)
  if [ "$a" != "$b" ]; then t_fail "1 and 2 threads differ"
  elif [ "$(printf '%s\n' "$c" | sort)" != "$(printf '%s\n' "$a" | sort)" ]; then t_fail "4 lanes differ from 1 thread"
  elif ! printf '%s\n' "$a" | grep -qxF -- "$one"; then t_fail "one photo with a 2-thread CNN differs"
  elif [ "$g" -gt 5 ] || [ "$g" -lt 1 ]; then t_fail "--max-len 5 gave $g words"
  else t_ok; fi
fi

t_begin corrupt_among_good
if setup; then
  head -c 3000 "$S/dog.jpg" >"$T/trunc.jpg"; echo "garbage" >"$T/bad.png"
  "$A" caption $M "$S/eagle.jpg" "$T/trunc.jpg" "$S/horses.jpg" "$T/bad.png" "$T/missing.jpg" "$S/kite.jpg" >"$T/out" 2>"$T/err"; rc=$?
  nout=$(wc -l <"$T/out"); nerr=$(grep -vc '^attncap caption: [0-9]* captioned, ' "$T/err")
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then t_fail "exit $rc"
  elif [ "$nout" -ne 3 ]; then t_fail "$nout captions: $(cat "$T/out")"
  elif [ "$nerr" -ne 3 ]; then t_fail "$nerr error lines: $(cat "$T/err")"
  elif [ "$(tail -1 "$T/err" | sed -E 's/[0-9.]+ s$/S s/')" != "attncap caption: 3 captioned, 3 failed, S s" ]; then
    t_fail "summary: $(tail -1 "$T/err")"
  elif ! grep -q trunc.jpg "$T/err" || ! grep -q bad.png "$T/err" || ! grep -q missing.jpg "$T/err"; then t_fail "errors do not name the files: $(cat "$T/err")"
  elif [ "$(cut -f1 "$T/out" | tr '\n' ' ')" != "$S/eagle.jpg $S/horses.jpg $S/kite.jpg " ]; then t_fail "order: $(cut -f1 "$T/out")"
  else t_ok; fi
fi

t_begin overlays_written_not_clobbered
if setup; then
  "$A" caption $M --json --overlays "$T/ov" --size 256 "$S/dog.jpg" "$T/in/b.jpg" "$S/horses.jpg" >"$T/o.json" 2>"$T/err"; rc=$?
  n_png=$(ls "$T/ov/dog/"*.png 2>/dev/null | wc -l)
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif [ ! -f "$T/ov/dog/sheet.png" ] || [ ! -f "$T/ov/dog/01_"*.png ]; then t_fail "missing overlays: $(ls "$T/ov/dog")"
  elif [ ! -f "$T/ov/horses/sheet.png" ] || [ ! -f "$T/ov/b/sheet.png" ]; then t_fail "missing sheets: $(ls "$T/ov")"
  elif [ "$(head -c 8 "$T/ov/dog/sheet.png" | od -An -tx1 | tr -d ' ')" != 89504e470d0a1a0a ]; then t_fail "sheet is not a PNG"
  elif ls "$T/ov/dog" | grep -q tmp; then t_fail "temp files left"
  elif ! png_size "$(ls "$T/ov/dog/01_"*.png)" | grep -qE '^256x(19[3-9]|2[0-9][0-9])$'; then # 192 rows, then the label
    t_fail "overlay of a 768x576 photo at --size 256: $(png_size "$(ls "$T/ov/dog/01_"*.png)")"
  elif ! grep -q '"overlays":\["[^"]*/ov/dog/01_' "$T/o.json"; then t_fail "JSON does not list the overlays: $(head -c 300 "$T/o.json")"
  elif ! expect_error "existing overlays" "$A" caption $M --overlays "$T/ov" "$S/dog.jpg"; then :
  elif ! grep -q -- "--force" "$T/err"; then t_fail "refusal does not mention --force: $(cat "$T/err")"
  elif [ -s "$T/out" ]; then t_fail "captioned before refusing (issue #32: refused before any work): $(cat "$T/out")"
  elif ! "$A" caption $M --force --overlays "$T/ov" "$S/dog.jpg" >/dev/null 2>"$T/err"; then t_fail "--force: $(cat "$T/err")"
  else t_ok; fi
fi

t_begin same_stem_twice
if setup; then
  mkdir -p "$T/x1" "$T/x2" && cp "$S/dog.jpg" "$T/x1/p.jpg" && cp "$S/eagle.jpg" "$T/x2/p.jpg"
  "$A" caption $M --overlays "$T/ov2" "$T/x1/p.jpg" "$T/x2/p.jpg" >/dev/null 2>"$T/err"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif [ ! -f "$T/ov2/p/sheet.png" ] || [ ! -f "$T/ov2/p-2/sheet.png" ]; then t_fail "$(ls "$T/ov2")"
  else t_ok; fi
fi

# --given: the caption beam search chose, given back, must come out with the same attention and
# log-probability (teacher forcing is the search's own arithmetic); an unknown word keeps its label
# (fed as <unk>); a caption without words is refused.
t_begin given_caption
if setup; then
  if [ -z "$py" ]; then t_skip "needs python3 to check JSON"
  else
    "$A" caption $M --json --attention --beam 1 "$S/kite.jpg" >"$T/g1.json" 2>"$T/err"
    text=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["caption"])' "$T/g1.json")
    "$A" caption $M --json --attention --given "$text" --overlays "$T/gov" "$S/kite.jpg" >"$T/g2.json" 2>>"$T/err"; rc=$?
    msg=$("$py" - "$T/g1.json" "$T/g2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["tokens"] == b["tokens"] and len(a["tokens"]) > 0, (a["tokens"], b["tokens"])
assert abs(a["logprob"] - b["logprob"]) < 1e-4 * abs(a["logprob"]), (a["logprob"], b["logprob"])
assert a["attention"] == b["attention"]
assert len(b["overlays"]) == len(b["tokens"]) + 1, b["overlays"]  # one per word + the sheet
print("ok")
PY
)
    if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
    elif [ "$msg" != ok ]; then t_fail "$msg"
    elif ! out=$("$A" caption $M --json --given "zzqx" --overlays "$T/gov2" "$S/kite.jpg" 2>"$T/err"); then
      t_fail "unknown word: $(cat "$T/err")"
    elif ! printf '%s' "$out" | grep -q '"tokens":\["zzqx"\]' || [ ! -f "$T/gov2/kite/01_zzqx.png" ]; then
      t_fail "unknown word lost its label: $out"
    elif ! expect_error "no words" "$A" caption $M --given " . , " "$S/kite.jpg"; then :
    elif ! grep -q "no words" "$T/err"; then t_fail "empty caption: $(cat "$T/err")"
    else t_ok; fi
  fi
fi

t_begin fix_attention_given
if setup; then
  if [ -z "$py" ]; then t_skip "needs python3 to check JSON"
  else
    g="a dog is running"
    for f in model uniform peak; do
      "$A" caption $M --json --attention --given "$g" --fix-attention $f "$S/kite.jpg" >"$T/fx_$f.json" 2>"$T/err" || break
    done
    msg=$("$py" - "$T"/fx_model.json "$T"/fx_uniform.json "$T"/fx_peak.json <<'PY'
import json, sys
m, u, p = (json.load(open(f)) for f in sys.argv[1:4])
for r in (m, u, p):
    assert len(r["token_logprobs"]) == len(r["tokens"]) + 1, r
    assert abs(sum(r["token_logprobs"]) - r["logprob"]) < 1e-3, (sum(r["token_logprobs"]), r["logprob"])
L = len(u["attention"][0])
assert all(abs(a - 1 / L) < 1e-4 for row in u["attention"] for a in row), "uniform rows"
assert all(sorted(row)[-1] == 1 and sum(row) == 1 for row in p["attention"]), "peak rows"
assert m["logprob"] != u["logprob"] and m["logprob"] != p["logprob"]
print("ok")
PY
)
    if [ "$msg" != ok ]; then t_fail "${msg:-$(cat "$T/err")}"
    elif ! expect_error "model, uniform or peak" "$A" caption $M --fix-attention flat "$S/kite.jpg"; then :
    else t_ok; fi
  fi
fi

t_begin hostile_setup_errors
if setup; then
  echo x >"$T/afile"
  cp "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" "$T/enc.tflite"; printf '\x01' | dd of="$T/enc.tflite" bs=1 seek=5000 conv=notrunc 2>/dev/null
  echo "not a model" >"$T/junk.safetensors"
  if ! expect_error "missing model" "$A" caption --model "$T/none.safetensors" "$S/dog.jpg"; then :
  elif ! grep -q none.safetensors "$T/err"; then t_fail "missing model not named: $(cat "$T/err")"
  elif ! expect_error "junk model" "$A" caption --model "$T/junk.safetensors" "$S/dog.jpg"; then :
  elif ! expect_error "unwritable overlays" "$A" caption $M --overlays "$T/afile/sub" "$S/dog.jpg"; then :
  elif ! expect_error "other encoder" "$A" caption $M --encoder "$T/enc.tflite" "$S/dog.jpg"; then :
  elif ! grep -q SHA-256 "$T/err"; then t_fail "encoder refusal: $(cat "$T/err")"
  elif ! ATTNCAP_MODEL= ATTNCAP_DATA= expect_error "no model anywhere" bash -c "cd '$T' && '$A' caption x.jpg"; then :
  else
    "$A" caption $M --beam 0 x.jpg >/dev/null 2>&1; r1=$?
    "$A" caption $M --bogus x.jpg >/dev/null 2>&1; r2=$?
    [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && t_ok || t_fail "usage errors exit $r1 $r2, expected 2"
  fi
fi

# --nbest: the first line is the caption a plain run prints, the runners-up follow in score order,
# at most beam of them in all; JSON carries the same as "alternatives".
t_begin nbest_runners_up
if setup; then
  plain=$("$A" caption $M --beam 4 "$S/dog.jpg" 2>"$T/err" | cut -f2)
  "$A" caption $M --beam 4 --nbest 9 "$S/dog.jpg" >"$T/nb" 2>>"$T/err"; rc=$?
  js=$("$A" caption $M --beam 4 --nbest 9 --json "$S/dog.jpg" 2>>"$T/err")
  n=$(wc -l <"$T/nb")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
  elif [ "$n" -lt 2 ] || [ "$n" -gt 4 ]; then t_fail "$n lines for beam 4: $(cat "$T/nb")"
  elif [ "$(head -1 "$T/nb" | cut -f2)" != "$plain" ]; then t_fail "first is not the caption: $(head -1 "$T/nb") vs $plain"
  elif [ "$(cut -f2 "$T/nb" | sort -u | wc -l)" -ne "$n" ]; then t_fail "repeated captions: $(cat "$T/nb")"
  elif ! cut -f4 "$T/nb" | awk 'NR > 1 && $1 > prev + 1e-9 {bad = 1} {prev = $1} END {exit bad}'; then
    t_fail "scores not in order: $(cat "$T/nb")"
  elif [ "$(grep -o '"score":' <<<"$js" | wc -l)" -ne "$n" ]; then t_fail "JSON alternatives: $js"
  else t_ok; fi
fi

# After "--" nothing is an option: "-x.jpg" is a photo (here a missing one: its own error line and
# exit 1, the other photo still captioned), not an unknown option.
t_begin double_dash_ends_options
if setup; then
  "$A" caption $M --quiet -- -x.jpg "$S/dog.jpg" >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q -- "-x.jpg" "$T/err"; then
    t_fail "exit $rc, stderr '$(cat "$T/err")'"
  elif ! grep -q "^$S/dog.jpg	" "$T/out"; then t_fail "dog.jpg not captioned: $(cat "$T/out")"
  else t_ok; fi
fi

# --tags: required words appear in the caption (JSON marks them forced and named); auto tags from the
# small encoder's own head and the committed class -> word table; bad tag options: one line, no output.
t_begin tags_given_and_auto
if setup; then
  TB=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}/models/imagenet_words.tsv
  got=$("$A" caption $M --quiet --tags kite,horse "$S/dog.jpg" 2>"$T/err" | cut -f2)
  js=$("$A" caption $M --quiet --json --tags kite "$S/dog.jpg" 2>>"$T/err")
  auto=$(ATTNCAP_NAMING='{"threshold":0.01}' "$A" caption $M --quiet --json --tags auto --tag-table "$TB" "$S/dog.jpg" 2>>"$T/err")
  if ! grep -qw kite <<<"$got" || ! grep -qw horse <<<"$got"; then t_fail "--tags kite,horse gave '$got' $(cat "$T/err")"
  elif ! grep -q '"tags":\[{"word":"kite","prob":1,"named":true,"forced":true}\]' <<<"$js"; then t_fail "JSON: $js"
  elif ! grep -q '"tags":\[{"word":"' <<<"$auto" || ! grep -q '"class":"' <<<"$auto"; then t_fail "auto: $auto"
  else t_ok; fi
fi

t_begin tags_bad_options
if setup; then
  ok=1
  expect_error "empty word list" "$A" caption $M --tags "" "$S/dog.jpg" || ok=0
  expect_error "five words" "$A" caption $M --tags a,b,c,d,e "$S/dog.jpg" || ok=0
  expect_error "threshold over 1" env ATTNCAP_NAMING='{"threshold":2}' "$A" caption $M --tags auto "$S/dog.jpg" || ok=0
  expect_error "a positive log-probability" env ATTNCAP_NAMING='{"trust_logprob":0.5}' "$A" caption $M --tags auto "$S/dog.jpg" || ok=0
  expect_error "an unknown naming key" env ATTNCAP_NAMING='{"treshold":0.2}' "$A" caption $M --tags auto "$S/dog.jpg" || ok=0
  grep -q "ATTNCAP_NAMING: unknown key 'treshold'" "$T/err" || { ok=0; t_fail "message: $(cat "$T/err")"; }
  expect_error "not an object" env ATTNCAP_NAMING='0.2' "$A" eval --model "$T/tiny.safetensors" --data "$S/captions.tsv" --images "$S" || ok=0
  expect_error "missing table" "$A" caption $M --tags auto --tag-table "$T/none.tsv" "$S/dog.jpg" || ok=0
  [ $ok = 1 ] && t_ok
fi

# The naming's numbers are the model's (issue 30 part 4): --tags and --tag-table are the only naming
# flags --help shows; each flag that once set a number is refused with one line naming the record's key
# and what to use instead, exit 2, nothing on stdout, the photo not captioned.
t_begin naming_flags_removed
if setup; then
  ok=1
  shown=$("$A" caption --help | grep -cE '^ +--(tag|presence|min-conf)')
  shown_eval=$("$A" eval --help | grep -cE '^ +--(tag|presence|min-conf)')
  [ "$shown" -le 3 ] && [ "$shown_eval" -le 3 ] || { ok=0; t_fail "naming flags in --help: caption $shown, eval $shown_eval"; }
  for fk in tag-threshold:threshold tag-max-drop:max_drop tag-absent:absent tag-absent-object:absent_object \
            tag-trust-logprob:trust_logprob tag-trust-seen:trust_seen tag-rare-max-drop:rare_max_drop \
            tag-objects-only:tag_objects_only tag-min-precision:tag_min_precision presence-absent:presence_absent \
            presence-ratio:presence_ratio min-confidence:min_confidence; do
    flag=--${fk%%:*} key=${fk#*:}
    for cmd in caption eval; do
      [ $cmd = eval ] && [ $flag = --min-confidence ] && continue
      if [ $cmd = caption ]; then "$A" caption $M $flag 0.5 "$S/dog.jpg" >"$T/out" 2>"$T/err"; rc=$?
      else "$A" eval --model "$T/tiny.safetensors" --data "$S/captions.tsv" $flag=0.5 >"$T/out" 2>"$T/err"; rc=$?; fi
      if [ $rc -ne 2 ] || [ -s "$T/out" ] || [ "$(wc -l <"$T/err")" -ne 1 ] ||
         ! grep -qF "attncap $cmd: $flag was removed: the model's \"naming\" record sets $key " "$T/err" ||
         ! grep -qF "attncap tune --naming '{\"$key\":X}'" "$T/err"; then
        ok=0; t_fail "$cmd $flag: exit $rc, stdout $(head -c 80 "$T/out"), stderr $(cat "$T/err")"; break 2
      fi
    done
  done
  [ $ok = 1 ] && t_ok
fi

# Words outside the vocabulary: a note on stderr and "unknown_words" in JSON for --given; info --vocab
# lists the vocabulary (the tiny model's 14 words, in id order).
t_begin unknown_words_marked
if setup; then
  js=$("$A" caption $M --json --given "a zebrafish runs on the grass" "$S/dog.jpg" 2>"$T/err")
  "$A" info --vocab "$T/tiny.safetensors" >"$T/vocab" 2>>"$T/err"
  if ! grep -q '"unknown_words":\["zebrafish"\]' <<<"$js"; then t_fail "JSON: $js"
  elif [ "$(grep -c "zebrafish" "$T/err")" -ne 1 ]; then t_fail "stderr: $(cat "$T/err")"
  elif [ "$(wc -l <"$T/vocab")" -ne 14 ] || [ "$(sed -n 6p "$T/vocab" | cut -f1)" != "dog" ]; then t_fail "vocab: $(head -8 "$T/vocab")"
  else t_ok; fi
fi

# --precision: f32 and bf16x2 (AMX, where the CPU has it) caption alike, int8 captions every photo (the tiny model is sensitive
# to its features: every word is close to others); a bad name is one line, from the flag or the env.
t_begin precision_choices
if setup; then
  ok=1
  expect_error "unknown precision" "$A" caption $M --precision fp8 "$S/dog.jpg" || ok=0
  ATTNCAP_PRECISION=half expect_error "unknown ATTNCAP_PRECISION" "$A" caption $M "$S/dog.jpg" || ok=0
  f32=$("$A" caption $M --json --precision f32 "$S" 2>"$T/err") || { ok=0; t_fail "f32: $(cat "$T/err")"; }
  auto=$("$A" caption $M --json "$S" 2>>"$T/err") || { ok=0; t_fail "auto: $(cat "$T/err")"; }
  if bf=$("$A" caption $M --json --precision bf16x2 "$S" 2>"$T/bferr"); then
    strip() { sed 's/"logprob":[^,]*,//; s/"token_logprobs":\[[^]]*\],//; s/"score":[^,]*,//; s/"confidence":[^,]*,//'; }
    if [ "$(strip <<<"$bf")" != "$(strip <<<"$f32")" ]; then ok=0; t_fail "bf16x2 and f32 captions differ"
    elif [ "$auto" != "$bf" ]; then ok=0; t_fail "auto is not bf16x2 on a CPU that has it"; fi
  elif ! grep -q "AMX" "$T/bferr" || [ "$(wc -l <"$T/bferr")" -ne 1 ]; then ok=0; t_fail "bf16x2 refused oddly: $(cat "$T/bferr")"
  elif [ "$auto" != "$f32" ]; then ok=0; t_fail "auto is not f32 on a CPU without AMX"; fi
  # int8: the quantized encoder on its integers (tests/test_cnn_int8.c checks them): every photo captioned
  if i8=$("$A" caption $M --json --precision int8 "$S" 2>"$T/i8err"); then
    [ "$(wc -l <<<"$i8")" = "$(wc -l <<<"$f32")" ] || { ok=0; t_fail "int8 captioned $(wc -l <<<"$i8") photos, f32 $(wc -l <<<"$f32")"; }
  else ok=0; t_fail "int8: $(cat "$T/i8err")"; fi
  [ $ok = 1 ] && t_ok
fi

t_begin precision_flag_over_the_environment
# --precision wins over $ATTNCAP_PRECISION from the start: an environment naming bf16x2 on a CPU without
# AMX (refused alone) with --precision f32 gives f32's lines
if ! setup; then :
elif grep -qw amx_bf16 /proc/cpuinfo 2>/dev/null; then t_skip "this CPU has AMX: bf16x2 is not refused here"
else
  want=$("$A" caption $M --json --precision f32 "$S/dog.jpg" 2>"$T/err")
  got=$(ATTNCAP_PRECISION=bf16x2 "$A" caption $M --json --precision f32 "$S/dog.jpg" 2>>"$T/err"); rc=$?
  ATTNCAP_PRECISION=bf16x2 "$A" caption $M "$S/dog.jpg" >/dev/null 2>"$T/alone"; rc_alone=$?
  if [ $rc -ne 0 ] || [ -z "$want" ] || [ "$got" != "$want" ]; then t_fail "exit $rc: '$got' vs f32's '$want': $(head -2 "$T/err")"
  elif [ $rc_alone -eq 0 ] || ! grep -q AMX "$T/alone"; then t_fail "bf16x2 from the environment alone not refused: $(cat "$T/alone")"
  else t_ok; fi
fi

t_end
