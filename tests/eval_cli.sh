#!/usr/bin/env bash
# attncap eval: the CLI over small generated files (every REFS format, COCO results, pairs), the
# golden case when ../shared is present, and the one-line-error contract on malformed input.
. "$(dirname "$0")/lib.sh"

cat >"$T/refs.json" <<'J'
{"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}],
 "annotations": [{"image_id": 1, "caption": "A dog runs on the grass."},
                 {"image_id": 1, "caption": "A brown dog running."},
                 {"image_id": 2, "caption": "A cat sleeps on a sofa."}]}
J
cat >"$T/res.json" <<'J'
[{"image_id": 1, "caption": "A dog runs on the grass."}, {"image_id": 2, "caption": "A cat sleeps on a sofa."}]
J
printf 'a.jpg\tA dog runs on the grass.\na.jpg\tA brown dog running.\nb.jpg\tA cat sleeps on a sofa.\n' >"$T/refs.tsv"
cat >"$T/res_names.json" <<'J'
[{"image_id": "a.jpg", "caption": "A dog runs on the grass."}, {"image_id": "b", "caption": "A cat sleeps on a sofa."}]
J

t_begin coco_refs_perfect
out=$("$A" eval --refs "$T/refs.json" --results "$T/res.json" --json --no-meteor 2>"$T/err")
if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
elif ! grep -q '"BLEU-1":	1' <<<"$out" || ! grep -q '"testlen":	12' <<<"$out" || ! grep -q '"ROUGE-L":	1' <<<"$out"; then
  t_fail "unexpected: $out"
else t_ok; fi

t_begin tsv_refs_by_file_name
out=$("$A" eval --refs "$T/refs.tsv" --results "$T/res_names.json" --no-meteor 2>"$T/err")
if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
elif ! grep -q 'BLEU-4   1.0000' <<<"$out"; then t_fail "unexpected: $out"; else t_ok; fi

t_begin per_image_files
"$A" eval --refs "$T/refs.json" --results "$T/res.json" --no-meteor --per-image "$T/pi.csv" >/dev/null 2>"$T/err" &&
"$A" eval --refs "$T/refs.json" --results "$T/res.json" --no-meteor --per-image "$T/pi.json" >/dev/null 2>>"$T/err"
if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
elif [ "$(wc -l <"$T/pi.csv")" -ne 3 ] || ! grep -q '"CIDEr-D"' "$T/pi.json"; then t_fail "bad per-image output"
else t_ok; fi

t_begin pairs_meteor
cat >"$T/pairs.json" <<'J'
[{"captions": ["A man rides a horse.", "A person riding a horse on a beach."], "prediction": "A man riding a horse."}]
J
out=$("$A" eval --pairs "$T/pairs.json" --json 2>"$T/err")
if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
elif grep -q '"METEOR":	null' <<<"$out" || ! grep -q '"testlen":	5' <<<"$out"; then t_fail "unexpected: $out"
else t_ok; fi

t_begin golden
if need_data metrics/magic_mscoco_result.json; then
  out=$("$A" eval --pairs "$DATA/metrics/magic_mscoco_result.json" --json 2>"$T/err")
  if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
  elif ! grep -q '"correct":	\[26801, 9496, 2857, 902\]' <<<"$out" || ! grep -q '"reflen":	47168' <<<"$out"; then
    t_fail "counts differ from coco-caption: $out"
  else t_ok; fi
fi

t_begin flickr8k_refs
if need_data data/flickr8k/Flickr8k.token.txt; then
  # the first caption of two dev photos as the "generated" one
  grep -m1 '^1000268201_693b08cb0e.jpg#0' "$DATA/data/flickr8k/Flickr8k.token.txt" >/dev/null
  c1=$(grep -m1 '^1000268201_693b08cb0e.jpg#0' "$DATA/data/flickr8k/Flickr8k.token.txt" | cut -f2)
  printf '[{"image_id": "1000268201_693b08cb0e.jpg", "caption": "%s"}]\n' "$c1" >"$T/f8res.json"
  out=$("$A" eval --refs "$DATA/data/flickr8k" --results "$T/f8res.json" --no-meteor 2>"$T/err")
  if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
  elif ! grep -q 'BLEU-1   1.0000' <<<"$out" || ! grep -q 'of 7000' <<<"$out"; then t_fail "unexpected: $out"
  else t_ok; fi
fi

t_begin malformed_inputs
ok=1
echo '[{"image_id": 1, "caption": "x"' >"$T/bad.json"
expect_error "bad JSON" "$A" eval --refs "$T/refs.json" --results "$T/bad.json" || ok=0
grep -q 'bad.json:1: not valid JSON' "$T/err" || { [ $ok = 1 ] && t_fail "bad JSON message: $(cat "$T/err")"; ok=0; }
echo '[{"image_id": 3, "caption": "x"}]' >"$T/res3.json"
expect_error "id missing in refs" "$A" eval --refs "$T/refs.json" --results "$T/res3.json" || ok=0
grep -q 'image_id 3 is not in the references' "$T/err" || { [ $ok = 1 ] && t_fail "missing id message: $(cat "$T/err")"; ok=0; }
echo '[{"image_id": 1, "caption": "  "}]' >"$T/res4.json"
expect_error "empty caption" "$A" eval --refs "$T/refs.json" --results "$T/res4.json" || ok=0
echo '[{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}]' >"$T/res5.json"
expect_error "duplicate id" "$A" eval --refs "$T/refs.json" --results "$T/res5.json" || ok=0
echo '[{"caption": "a"}]' >"$T/res6.json"
expect_error "no image_id" "$A" eval --refs "$T/refs.json" --results "$T/res6.json" || ok=0
echo '{"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [{"image_id": 1, "caption": ""}]}' >"$T/refs_empty.json"
expect_error "empty reference" "$A" eval --refs "$T/refs_empty.json" --results "$T/res.json" || ok=0
expect_error "missing refs file" "$A" eval --refs "$T/nope.json" --results "$T/res.json" || ok=0
echo '[{"captions": [], "prediction": "x"}]' >"$T/pairs_bad.json"
expect_error "pairs without refs" "$A" eval --pairs "$T/pairs_bad.json" || ok=0
printf '[{"captions": ["a \xff b"], "prediction": "x"}]' >"$T/pairs_utf8.json"
expect_error "invalid UTF-8" "$A" eval --pairs "$T/pairs_utf8.json" || ok=0
expect_error "no arguments" "$A" eval || ok=0
expect_error "negative --len-alpha" "$A" eval --pairs "$T/pairs.json" --len-alpha -1 || ok=0
expect_error "--max-len not a number" "$A" eval --pairs "$T/pairs.json" --max-len x || ok=0
expect_error "unwritable per-image" "$A" eval --pairs "$T/pairs.json" --no-meteor --per-image /nonexistent/dir/x.json || ok=0
[ $ok = 1 ] && t_ok

t_begin report_from_refs
# refs with photos beside them: thumbnails; rows sorted worst CIDEr-D first; links resolve
cat >"$T/res_mixed.json" <<'J'
[{"image_id": 1, "caption": "A dog runs on the grass."}, {"image_id": 2, "caption": "A bird."}]
J
if "$A" eval --refs "$T/refs.json" --results "$T/res_mixed.json" --no-meteor --report "$T/rep1" >/dev/null 2>"$T/err"; then
  h="$T/rep1/index.html"
  first=$(grep -o '<tr data-n="[0-9]*"' "$h" | head -1)
  if [ "$(grep -c '<tr data-n' "$h")" -ne 2 ]; then t_fail "expected 2 rows"
  elif [ "$first" != '<tr data-n="2"' ]; then t_fail "worst image not first: $first"
  elif ! grep -q 'A bird.' "$h" || ! grep -q '<script>' "$h" || grep -qi 'http' "$h"; then t_fail "content/self-containment"
  else t_ok; fi
else t_fail "$(cat "$T/err")"; fi

t_begin report_model_split
MK="$(dirname "$A")/tests/test_captioner"
if need_data encoders/mobilenet_v1_0.25_128_quant.tflite && need_data data/coco/captions.json; then
  if [ ! -x "$MK" ]; then t_skip "needs $MK (make tests)"
  elif ! "$MK" --make-model "$T/tiny.safetensors" >/dev/null 2>&1; then t_fail "cannot make the tiny model"
  else
    out=$("$A" eval --model "$T/tiny.safetensors" --data "$DATA/data/coco/captions.json" --split all --limit 3 --beam 1 \
          --no-meteor --quiet --report "$T/rep2" --results-out "$T/gen.json" --json 2>"$T/err"); rc=$?
    h="$T/rep2/index.html"
    if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/err")"
    elif [ "$(grep -c '<tr data-n' "$h")" -ne 3 ]; then t_fail "expected 3 rows"
    elif ! grep -q '"images":	3' <<<"$out"; then t_fail "scores: $out"
    else
      bad=0
      for f in $(grep -o 'src="[^"]*"\|href="[^"]*"' "$h" | sed 's/^[a-z]*="//; s/"$//'); do [ -f "$T/rep2/$f" ] || bad=1; done
      n_img=$(grep -o 'src="thumbs/[^"]*"' "$h" | wc -l)
      # the generated captions, fed back as results, score the same
      out2=$("$A" eval --refs "$DATA/data/coco/captions.json" --results "$T/gen.json" --no-meteor --json 2>&1)
      # the same photos through a feature cache instead of the encoder: the same captions and scores
      ls "$DATA/data/coco/images" | sort | head -3 | sed "s|^|$DATA/data/coco/images/|" >"$T/flist"
      "$A" features --encoder "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" --size 128 --out "$T/fc" \
        --list "$T/flist" --quiet 2>>"$T/err"
      out3=$("$A" eval --model "$T/tiny.safetensors" --data "$DATA/data/coco/captions.json" --split all --limit 3 \
             --beam 1 --no-meteor --json --features "$T/fc" 2>>"$T/err")
      # without --model: the default model ($ATTNCAP_MODEL here), as attncap caption finds it
      out4=$(ATTNCAP_MODEL="$T/tiny.safetensors" "$A" eval --data "$DATA/data/coco/captions.json" --split all --limit 3 \
             --beam 1 --no-meteor --json --features "$T/fc" 2>>"$T/err")
      "$A" features --encoder "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" --size 160 --out "$T/fc160" \
        --list "$T/flist" --quiet 2>>"$T/err"
      if [ $bad = 1 ] || [ "$n_img" -ne 3 ]; then t_fail "missing thumbnails or sheets"
      elif [ "$(grep CIDEr <<<"$out")" != "$(grep CIDEr <<<"$out2")" ]; then t_fail "results-out rescored differently: $out2"
      elif [ "$(grep -E 'CIDEr|BLEU' <<<"$out")" != "$(grep -E 'CIDEr|BLEU' <<<"$out3")" ]; then
        t_fail "--features scored differently: $out3 $(cat "$T/err")"
      elif [ -z "$out4" ] || [ "$out4" != "$out3" ]; then t_fail "eval without --model: '$out4', with it: '$out3'"
      elif ! expect_error "features of another size" "$A" eval --model "$T/tiny.safetensors" \
             --data "$DATA/data/coco/captions.json" --split all --limit 3 --features "$T/fc160"; then :
      else t_ok; fi
    fi
  fi
fi

t_begin eval_lanes_same_captions
# eval captions photos in the library's lanes (ac_captioner_batch): one lane (the CNN on the caller's
# thread) and two lanes give the same captions, and so does the model over a feature cache of the
# same photos (features.c's own extraction, then the search alone)
if [ ! -f "$T/tiny.safetensors" ]; then t_skip "no tiny model from report_model_split"
else
  ls "$DATA/data/coco/images" | sort | head -6 | sed "s|^|$DATA/data/coco/images/|" >"$T/flist6"
  "$A" features --encoder "$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" --size 128 --out "$T/fc6" \
    --list "$T/flist6" --quiet 2>"$T/err"
  for how in 1 2 fc; do
    if [ $how = fc ]; then flag=(--features "$T/fc6"); else flag=(--threads $how); fi
    "$A" eval --model "$T/tiny.safetensors" --data "$DATA/data/coco/captions.json" --split all --limit 6 --beam 2 \
      --no-meteor --quiet "${flag[@]}" --results-out "$T/lanes$how.json" >/dev/null 2>>"$T/err"
  done
  if [ "$(grep -c image_id "$T/lanes1.json" 2>/dev/null)" != 6 ]; then t_fail "one lane: $(cat "$T/err")"
  elif ! cmp -s "$T/lanes1.json" "$T/lanes2.json"; then t_fail "two lanes captioned differently"
  elif ! cmp -s "$T/lanes1.json" "$T/lanesfc.json"; then t_fail "the feature cache captioned differently"
  else t_ok; fi
fi

t_begin objects_scores
# the hand-computed set of tests/test_objects.c: TP 4, FP 4, FN 2; hallucinated cat (A) and dog (B)
cat >"$T/obj_pairs.json" <<'J'
[{"image_id": "A", "captions": ["A man rides a horse.", "A person on a horse near a dog.", "A horse in a field."],
  "prediction": "A man and a dog on a horse with a cat."},
 {"image_id": "B", "captions": ["A hot dog on a plate.", "A hot dog with mustard.", "Food on a table."],
  "prediction": "A dog on a table."},
 {"image_id": "C", "captions": ["Two teddy bears on a bed.", "Stuffed animals on a bed."], "prediction": "A teddy bear on a bed."},
 {"image_id": "D", "captions": ["A giraffe."], "prediction": "An empty street."}]
J
printf 'x1.jpg\tA man walks a dog.\nx1.jpg\tA person with a dog.\nx2.jpg\tA horse.\nx3.jpg\tA cat on a teddy bear.\n' >"$T/obj_train.tsv"
plain=$("$A" eval --pairs "$T/obj_pairs.json" --no-meteor 2>"$T/err")
js=$("$A" eval --pairs "$T/obj_pairs.json" --no-meteor --json --per-category --novel-from "$T/obj_train.tsv" \
     --novel-split all --novel-max 1 2>>"$T/err")
js2=$("$A" eval --pairs "$T/obj_pairs.json" --no-meteor --json --novel-from "$T/obj_train.tsv" --novel-split all \
      --novel-max 2 2>>"$T/err")
py='import json,sys; o=json.load(sys.stdin)["objects"]'
if [ -s "$T/err" ]; then t_fail "$(cat "$T/err")"
elif ! grep -q '^objects  precision 0.5000 recall 0.6667 F1 0.5714 (TP 4, FP 4, FN 2' <<<"$plain" ||
     ! grep -q '^CHAIR-i  0.2500 (2 of 8 ' <<<"$plain" || ! grep -q '^CHAIR-s  0.5000 (2 of 4 ' <<<"$plain"; then
  t_fail "plain: $plain"
elif ! python3 -c "$py"'
assert (o["precision"], o["recall"], o["F1"], o["CHAIR-i"], o["CHAIR-s"]) == (0.5, 0.666667, 0.571429, 0.25, 0.5), o
n = o["novel"]; pc = o["per_category"]
# named in no photo of the training file: all but person, dog, horse, cat, teddy bear
assert len(n["categories"]) == 75 and "giraffe" in n["categories"] and "dog" not in n["categories"], n
# novel truth: hot dog (B), bed (C, found), giraffe (D); named: dining table (B), bed (C)
assert (n["tp"], n["truth"], n["recall"], n["mentioned"]) == (1, 3, 0.333333, 2), n
assert pc["hot dog"] == {"tp": 0, "fp": 0, "fn": 1, "hallucinated": 0, "source_photos": 0, "novel": True}, pc["hot dog"]
assert pc["dog"]["fp"] == 2 and pc["dog"]["hallucinated"] == 1 and pc["dog"]["source_photos"] == 1' <<<"$js" 2>"$T/err"; then
  t_fail "json: $(cat "$T/err")"
elif ! python3 -c "$py"'
n = o["novel"]; assert len(n["categories"]) == 80 and (n["tp"], n["truth"], n["mentioned"]) == (4, 6, 8), n
assert "per_category" not in o' <<<"$js2" 2>"$T/err"; then
  t_fail "json, novel-max 2: $(cat "$T/err")"
else t_ok; fi

t_begin objects_per_image
"$A" eval --pairs "$T/obj_pairs.json" --no-meteor --per-image "$T/obj.json" >/dev/null 2>"$T/err" &&
"$A" eval --pairs "$T/obj_pairs.json" --no-meteor --per-image "$T/obj.csv" >/dev/null 2>>"$T/err"
if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
elif ! python3 -c '
import json, sys
rows = {r["image_id"]: r["objects"] for r in json.load(open(sys.argv[1]))}
assert rows["B"] == {"candidate": ["dog", "dining table"], "truth": ["hot dog"], "hallucinated": ["dog"], "missed": ["hot dog"]}, rows["B"]
assert rows["A"]["hallucinated"] == ["cat"] and rows["D"]["missed"] == ["giraffe"], rows
' "$T/obj.json" 2>"$T/err"; then t_fail "per-image JSON: $(cat "$T/err")"
elif ! head -1 "$T/obj.csv" | grep -q ',candidate,objects,truth,hallucinated,missed$' ||
     ! grep -q '^"B",.*,"dog; dining table","hot dog","dog","hot dog"$' "$T/obj.csv"; then t_fail "per-image CSV: $(cat "$T/obj.csv")"
else t_ok; fi

t_begin objects_report
if "$A" eval --pairs "$T/obj_pairs.json" --no-meteor --novel-from "$T/obj_train.tsv" --novel-split all \
     --report "$T/rep_obj" >/dev/null 2>"$T/err"; then
  h="$T/rep_obj/index.html"
  if ! grep -q 'objects: precision' "$h" || ! grep -q 'novel recall' "$h"; then t_fail "no object scores"
  elif ! grep -q '<span class="h">cat</span>' "$h" || ! grep -q 'missed: hot dog' "$h" ||
       ! grep -q '<span class="t">teddy bear</span>' "$h"; then t_fail "no per-photo objects"
  else t_ok; fi
else t_fail "$(cat "$T/err")"; fi

t_begin objects_bad_options
ok=1
expect_error "missing --novel-from" "$A" eval --pairs "$T/obj_pairs.json" --no-meteor --novel-from "$T/nope.tsv" || ok=0
expect_error "bad --novel-split" "$A" eval --pairs "$T/obj_pairs.json" --no-meteor --novel-from "$T/obj_train.tsv" \
  --novel-split nope || ok=0
expect_error "--novel-max 0" "$A" eval --pairs "$T/obj_pairs.json" --novel-max 0 || ok=0
printf 'x1.jpg\tA dog \xff.\n' >"$T/obj_bad.tsv"
expect_error "invalid UTF-8 in --novel-from" "$A" eval --pairs "$T/obj_pairs.json" --no-meteor --novel-from "$T/obj_bad.tsv" \
  --novel-split all || ok=0
[ $ok = 1 ] && t_ok

t_begin objects_coco_leave_one_out
# one COCO reference as the candidate against the other four: people agree on the objects
if need_data data/coco/captions.json; then
  python3 -c '
import json, sys, collections
d = json.load(open(sys.argv[1])); caps = collections.defaultdict(list)
for a in d["annotations"]: caps[a["image_id"]].append(a["caption"])
json.dump([{"image_id": k, "captions": v[1:], "prediction": v[0]} for k, v in caps.items()], open(sys.argv[2], "w"))
' "$DATA/data/coco/captions.json" "$T/loo.json"
  out=$("$A" eval --pairs "$T/loo.json" --no-meteor --json --per-image "$T/loo_pi.json" 2>"$T/err")
  if [ $? -ne 0 ]; then t_fail "$(cat "$T/err")"
  elif ! python3 -c 'import json,sys; o=json.load(sys.stdin)["objects"]; assert o["precision"] > 0.75 and o["recall"] > 0.6 and o["CHAIR-i"] < 0.12, o' <<<"$out" 2>"$T/err"
  then t_fail "$(cat "$T/err")"
  # the totals are the per-photo lists added up
  elif ! python3 -c '
import json, sys
o = json.loads(sys.argv[1])["objects"]; rows = [r["objects"] for r in json.load(open(sys.argv[2]))]
tp = sum(len(set(r["candidate"]) & set(r["truth"])) for r in rows); c = sum(len(r["candidate"]) for r in rows)
h = sum(len(r["hallucinated"]) for r in rows); fn = sum(len(r["missed"]) for r in rows)
assert (o["tp"], o["fp"], o["fn"], o["hallucinated"]) == (tp, c - tp, fn, h), (o, tp, c, fn, h)
assert o["captions_hallucinating"] == sum(1 for r in rows if r["hallucinated"]) and len(rows) == 100
assert all(set(r["hallucinated"]) <= set(r["candidate"]) - set(r["truth"]) for r in rows)
' "$out" "$T/loo_pi.json" 2>"$T/err"; then t_fail "per-image lists vs totals: $(cat "$T/err")"
  else t_ok; fi
fi

t_begin report_screenshot
# renders the report in headless Chromium (Debian chromium) and checks the screenshot is not blank
CH=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CH" ]; then t_skip "needs chromium (apt-get install chromium)"
elif [ ! -f "$T/rep1/index.html" ]; then t_skip "no report from report_from_refs"
else
  timeout 60 "$CH" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,800 \
    --screenshot="$T/shot.png" "file://$T/rep1/index.html" >/dev/null 2>&1
  if [ ! -s "$T/shot.png" ]; then t_fail "no screenshot"
  elif [ "$(stat -c %s "$T/shot.png")" -lt 5000 ]; then t_fail "screenshot looks blank"
  else t_ok; fi
fi

t_end
