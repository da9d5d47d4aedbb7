#!/usr/bin/env bash
# The core API's evaluator (include/attncap/attncap.h, since 1.6; issue #31 part 5) from a program that
# knows only that header: tests/core_eval.c compiles as C99 and C++17 (-pedantic -Werror) and links
# against $BUILD/libattncap.so. Its scores of coco-caption's own example are coco-caption's published
# counts and scores; `attncap eval`, a program over the same evaluator, prints what the library returns
# (the scores of a model's captions of a split, text and JSON, and the files it writes); the progress
# comes in order and the trained-photos warning as an event; every error path answers with one line.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=$(dirname "$A")
SO="$B/libattncap.so"
[ -f "$SO" ] || SO="$ROOT/${BUILD:-build}/libattncap.so" # under ATTNCAP_CLI_WRAPPER, $A is a wrapper script
P="$T/core_eval"
san=()
readelf -d "$SO" 2>/dev/null | grep -q 'libasan' && san=(-fsanitize=address,undefined)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

t_begin eval_compiles_as_c99_and_cxx17_against_the_header_alone
built=0
if [ ! -f "$SO" ]; then t_fail "no $SO (make BUILD=... tests builds it)"
elif grep -E '^#include' "$ROOT/tests/core_eval.c" | grep -v -E '<attncap/attncap.h>|<(stdio|stdlib|string)\.h>' | grep -q .; then
  t_fail "core_eval.c includes more than attncap.h and the C library"
else
  mkdir -p "$T/inc/attncap" && cp "$ROOT/include/attncap/attncap.h" "$T/inc/attncap/"
  so_dir=$(cd "$(dirname "$SO")" && pwd)
  if ! cc -std=c99 -pedantic -Wall -Wextra -Werror "${san[@]}" -I"$T/inc" "$ROOT/tests/core_eval.c" "$SO" \
       -Wl,-rpath,"$so_dir" -o "$P" 2>"$T/cc.err"; then t_fail "C99: $(head -5 "$T/cc.err")"
  elif ! c++ -std=c++17 -pedantic -Wall -Wextra -Werror "${san[@]}" -I"$T/inc" -x c++ "$ROOT/tests/core_eval.c" -x none "$SO" \
       -Wl,-rpath,"$so_dir" -o "$T/core_eval_cxx" 2>"$T/cc.err"; then t_fail "C++17: $(head -5 "$T/cc.err")"
  elif ! objdump -T "$P" | grep -qE '\(ATTNCAP_1\.6\)[[:space:]]+ac_evaluator_run$'; then
    t_fail "the program does not ask for ac_evaluator_run@ATTNCAP_1.6: $(objdump -T "$P" | grep ac_evaluator | head -2)"
  else built=1; t_ok; fi
fi

need_built() { [ $built = 1 ] && return 0; t_skip "core_eval did not build"; return 1; }

# coco-caption's example (../shared/metrics): its published counts and scores (3 decimals).
t_begin eval_scores_coco_captions_example_as_coco_caption
if need_built && need_data metrics/magic_mscoco_result.json; then
  "$P" run pairs="$DATA/metrics/magic_mscoco_result.json" meteor=0 >"$T/golden.out" 2>"$T/err"; rc=$?
  m=$(sed -n 's/^metrics //p' "$T/golden.out")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif ! grep -q '"correct":	\[26801, 9496, 2857, 902\]' "$T/golden.out" || ! grep -q '"reflen":	47168' "$T/golden.out"; then
    t_fail "counts differ from coco-caption's: $(grep -E 'correct|reflen' "$T/golden.out" | tr -d '\n\t')"
  elif ! awk -v m="$m" 'BEGIN { split(m, x, " "); want["2"] = 0.568; want["3"] = 0.358; want["4"] = 0.214; want["5"] = 0.129;
         want["7"] = 0.399; want["8"] = 0.493; bad = x[1] != 4982 || x[6] != "nan";
         for (k in want) if (x[k] - want[k] > 0.0005 || want[k] - x[k] > 0.0005) bad = 1; exit bad }'; then
    t_fail "scores differ from coco-caption's published ones (n, B1..4, METEOR, ROUGE-L, CIDEr-D): $m"
  else t_ok; fi
fi

# The same options through the program and through the library: the same bytes out.
F8=${DATA:-}/data/flickr8k
have_model() { (cd "$ROOT" && "$A" caption samples/dog.jpg >/dev/null 2>"$T/model.err") && return 0
  t_skip "no default model here: $(head -1 "$T/model.err")"; return 1; }
t_begin eval_of_a_split_is_the_clis
if need_built && need_data data/flickr8k/Flickr8k.token.txt && have_model; then
  (cd "$ROOT" && "$A" eval --data "$F8" --split val --limit 5 --quiet --novel-from "$F8" --per-category --json \
     --results-out "$T/cli.json" --per-image "$T/cli.csv" >"$T/cli.out" 2>"$T/cli.err") &&
  (cd "$ROOT" && CORE_PER_CATEGORY=1 "$P" run data="$F8" split=val limit=5 novel_from="$F8" results_out="$T/lib.json" \
     per_image="$T/lib.csv" >"$T/lib.out" 2>"$T/lib.err"); rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/cli.err" "$T/lib.err" | head -3)"
  elif ! diff <(grep -v -E '^(metrics|events) ' "$T/lib.out") "$T/cli.out" >"$T/d"; then t_fail "JSON differs: $(head -5 "$T/d")"
  elif ! cmp -s "$T/cli.json" "$T/lib.json" || ! cmp -s "$T/cli.csv" "$T/lib.csv"; then t_fail "the files written differ"
  elif [ "$(grep '^events' "$T/lib.out")" != "events 6 0 5 5" ]; then t_fail "progress events: $(grep '^events' "$T/lib.out")"
  elif ! grep -q '"novel"' "$T/lib.out"; then t_fail "no novel categories in $(head -c 300 "$T/lib.out")"
  else
    (cd "$ROOT" && "$A" eval --data "$F8" --split val --limit 5 --quiet >"$T/cli.txt" 2>/dev/null)
    (cd "$ROOT" && CORE_TEXT=1 "$P" run data="$F8" split=val limit=5 >"$T/lib.txt" 2>/dev/null)
    if ! diff <(grep -v -E '^(metrics|events) ' "$T/lib.txt") "$T/cli.txt" >"$T/d"; then t_fail "text differs: $(head -5 "$T/d")"
    else t_ok; fi
  fi
fi

# Training photos among those scored: a warning event (the CLI prints it), the scores still come.
t_begin eval_warns_of_training_photos_by_event
if need_built && need_data data/flickr8k/Flickr8k.token.txt && have_model; then
  (cd "$ROOT" && "$P" run data="$F8" split=train limit=2 meteor=0 >"$T/tr.out" 2>"$T/tr.err"); rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/tr.err")"
  elif [ "$(grep -c '^warning	2 of the 2 photos scored are among the' "$T/tr.err")" != 1 ]; then t_fail "warnings: $(cat "$T/tr.err")"
  elif [ "$(grep '^events' "$T/tr.out")" != "events 3 1 2 2" ]; then t_fail "events: $(grep '^events' "$T/tr.out")"
  else t_ok; fi
fi

# 1.6's description of a file against an independent reader of the same bytes: the safetensors header
# parsed by Python (every tensor's name, type and shape in order, the metadata keys), the TFLite
# flatbuffer by tools/tflite_py.py (the operator and tensor counts); the vocabulary as its metadata.
t_begin describe_file_as_python_reads_it
if need_built && [ -f "$ROOT/models/attncap.safetensors" ]; then
  M="$ROOT/models/attncap.safetensors"
  "$P" describe 0 "$M" >"$T/st.txt" && "$P" describe 4 "$M" >"$T/vocab.txt" && "$P" describe 2 "$M" >"$T/meta.txt"; rc=$?
  /usr/bin/python3 - "$M" "$T" <<'PY' >"$T/py.err" 2>&1
import json, struct, sys
path, t = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read(8); n = struct.unpack("<Q", raw)[0]
head = json.loads(open(path, "rb").read(8 + n)[8:])
meta = head.pop("__metadata__", {})
order = sorted(head, key=lambda k: head[k]["data_offsets"][0])
lines = open(f"{t}/st.txt").read().split("tensors:\n")[1].splitlines()
want = [f"  {i:4d} {head[k]['dtype']:<4} [{','.join(str(d) for d in head[k]['shape'])}] {k}" for i, k in enumerate(order)]
assert lines == want, (lines[:3], want[:3])
got_keys = [l.split()[0] for l in open(f"{t}/meta.txt").read().split("metadata:\n")[1].splitlines()]
assert got_keys == list(meta), (got_keys, list(meta))
words = [l.split("\t")[0] for l in open(f"{t}/vocab.txt").read().splitlines()]
assert words == json.loads(meta["vocab"]), "vocabulary"
PY
  if [ $rc -ne 0 ]; then t_fail "exit $rc"
  elif [ -s "$T/py.err" ]; then t_fail "$(tail -3 "$T/py.err")"
  elif ! grep -q "^tensors:" "$T/st.txt" || grep -q "^tensors:" "$T/meta.txt"; then t_fail "flags not followed"
  else t_ok; fi
else t_skip "needs models/attncap.safetensors"; fi

t_begin describe_tflite_as_python_reads_it
if need_built && need_data encoders/mobilenet_v2_1.0_224_quant.tflite; then
  E="$DATA/encoders/mobilenet_v2_1.0_224_quant.tflite"
  first=$("$P" describe 0 "$E" | head -1)
  want=$(cd "$ROOT/tools" && /usr/bin/python3 -c "
import sys, tflite_py
m = tflite_py.read_model(open(sys.argv[1], 'rb').read())
print(len(m['ops']), len(m['tensors']))" "$E")
  if [ -z "$first" ]; then t_fail "no description"
  elif [ -z "$want" ] || ! grep -q ": ${want% *} operators, ${want#* } tensors$" <<<"$first"; then
    t_fail "'$first' against tflite_py's $want"
  elif [ "$("$P" describe 1 "$E" | grep -c '^operators:')" != 0 ]; then t_fail "AC_DESCRIBE_NO_OPS kept the operators"
  elif "$P" describe 0 /nonexistent.tflite 2>"$T/d.err" || [ "$(wc -l <"$T/d.err")" != 1 ]; then t_fail "a missing file: $(cat "$T/d.err")"
  else t_ok; fi
fi

# 1.6's page of a caption run: every photo a row, each missing photo a note, the thumbnails there.
t_begin report_captions_lists_every_photo
if need_built && have_model; then
  (cd "$ROOT" && "$A" caption --json samples/dog.jpg samples/kite.jpg >"$T/caps.jsonl" 2>/dev/null)
  echo '{"image":"/nonexistent/gone.jpg","caption":"a cat on a mat","confidence":0.5}' >>"$T/caps.jsonl"
  (cd "$ROOT" && "$P" gallery "$T/caps.jsonl" "$T/page" "my <title>") >"$T/g.out" 2>"$T/g.err"; rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/g.err")"
  elif [ "$(tail -1 "$T/g.out")" != "photos 3" ] || [ "$(grep -c '^note	.*gone.jpg' "$T/g.out")" != 1 ]; then t_fail "$(cat "$T/g.out")"
  elif [ "$(ls "$T/page/thumbs" | wc -l)" != 2 ] || ! grep -q 'a cat on a mat' "$T/page/index.html" ||
       ! grep -q 'my &lt;title&gt;' "$T/page/index.html"; then t_fail "the page lacks a row, a thumbnail or the title"
  elif "$P" gallery "$T/nonexistent.jsonl" "$T/page2" 2>"$T/g2.err" || [ -e "$T/page2/index.html" ]; then t_fail "a missing file"
  else t_ok; fi
fi

# 1.6's tools: "ground"'s report through the library is what `attncap ground` prints (its numbers are
# checked against hand-computed ones by ground_cli.sh), the progress in order, a missing photo a note.
t_begin tool_ground_is_the_clis
if need_built && have_model; then
  G=tests/fixtures/grounding/samples.tsv
  (cd "$ROOT" && "$A" ground --boxes "$G" --root samples --json --quiet >"$T/gcli.out" 2>"$T/gcli.err" &&
   "$P" tool ground boxes="$G" root=samples json >"$T/glib.out" 2>"$T/glib.err"); rc=$?
  (cd "$ROOT" && "$P" tool ground boxes=detected photos=samples/dog.jpg photos=/nonexistent/gone.jpg >"$T/gd.out" 2>"$T/gd.err")
  rc2=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(cat "$T/gcli.err" "$T/glib.err" | head -3)"
  elif ! cmp -s "$T/gcli.out" "$T/glib.out"; then t_fail "the report differs: $(diff "$T/gcli.out" "$T/glib.out" | head -4)"
  elif [ "$(grep -c '"object"' "$T/glib.out")" -lt 3 ]; then t_fail "few rows: $(cat "$T/glib.out")"
  elif [ "$(tail -1 "$T/glib.err")" != "progress 7 6" ]; then t_fail "progress: $(tail -1 "$T/glib.err")"
  elif [ $rc2 -ne 0 ] || [ "$(grep -c '^note	.*gone.jpg' "$T/gd.err")" != 1 ] || ! grep -q '^all ' "$T/gd.out"; then
    t_fail "a missing photo: exit $rc2, $(cat "$T/gd.err" | head -3)"
  else t_ok; fi
fi

t_begin eval_error_paths
if need_built; then
  echo '{"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [{"image_id": 1, "caption": "a dog"}]}' >"$T/refs.json"
  "$P" errors "$T" >"$T/errors.out" 2>"$T/errors.err"; rc=$?
  if [ $rc -ne 0 ] || grep -q '^bad' "$T/errors.out"; then t_fail "$(grep '^bad' "$T/errors.out" | head -5) $(head -3 "$T/errors.err")"
  elif [ "$(grep -c '^ok' "$T/errors.out")" -lt 25 ]; then t_fail "only $(grep -c '^ok' "$T/errors.out") checks ran"
  else t_ok; fi
fi
t_end
