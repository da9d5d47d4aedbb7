#!/usr/bin/env bash
# The stable core API (include/attncap/attncap.h, issue #31) as a program that knows nothing else
# uses it: tests/core_api.c compiles as C99 and C++17 (-pedantic -Werror) against that header alone,
# links against $BUILD/libattncap.so, and captions as `attncap caption` does (plain lines, JSON with
# attention, overlays byte for byte; photos as files, bytes in memory, pixels, a stream; the 1.2
# setters as --precision, --tags and ATTNCAP_NAMING; 1.3's list handed over result by result, with
# the runners-up's confidence, times, caption.json and folder names the CLI takes from it; a result's
# regions, the attention on them and the copied shares as its JSON line prints them); attention rows are
# distributions; ac_evaluate matches coco-caption's published numbers (tests/fixtures/metrics_ref.json);
# 1.4's featurizer and trainer write the CLI's cache and model byte for byte; every error path answers with one line naming
# the problem (and nothing leaks under ASan).
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=$(dirname "$A")
[ -f "$B/libattncap.so" ] || B="$ROOT/${BUILD:-build}" # under ATTNCAP_CLI_WRAPPER, $A is a wrapper script
SO="$B/libattncap.so"
PY=/usr/bin/python3
P="$T/core_c"

# a sanitizer build's library needs the program built the same way. san_note: there the library's
# objects (-O1, -fPIC -fvisibility=hidden) round some sums differently from the CLI's (the CLI linked
# with those objects gives the library's numbers): the same captions, JSON numbers equal but for their last printed digit, and
# overlays that may differ in a few pixels. Built -O2 as usual, everything is equal byte for byte.
san=()
readelf -d "$SO" 2>/dev/null | grep -q 'libasan' && san=(-fsanitize=address,undefined)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

t_begin compiles_as_c99_and_cxx17_against_the_header_alone
built=0
if [ ! -f "$SO" ]; then t_fail "no $SO (make BUILD=... tests builds it)"
elif grep -E '^#include' "$ROOT/tests/core_api.c" | grep -v -E '<attncap/attncap.h>|<(math|stdio|stdlib|string)\.h>' | grep -q .; then
  t_fail "core_api.c includes more than attncap.h and the C library: $(grep '^#include' "$ROOT/tests/core_api.c" | paste -sd' ')"
else
  mkdir -p "$T/inc/attncap" && cp "$ROOT/include/attncap/attncap.h" "$T/inc/attncap/" # the header alone
  if ! cc -std=c99 -pedantic -Wall -Wextra -Werror "${san[@]}" -I"$T/inc" "$ROOT/tests/core_api.c" "$SO" -lm \
       -Wl,-rpath,"$(cd "$B" && pwd)" -o "$P" 2>"$T/cc.err"; then t_fail "C99: $(head -5 "$T/cc.err")"
  elif ! c++ -std=c++17 -pedantic -Wall -Wextra -Werror "${san[@]}" -I"$T/inc" -x c++ "$ROOT/tests/core_api.c" -x none "$SO" \
       -Wl,-rpath,"$(cd "$B" && pwd)" -o "$T/core_cxx" 2>"$T/cc.err"; then t_fail "C++17: $(head -5 "$T/cc.err")"
  elif ! ldd "$P" | grep -q "libattncap.so.[0-9]* => .*$(basename "$(cd "$B" && pwd)")/libattncap.so"; then
    t_fail "not linked to $SO: $(ldd "$P" | grep attncap)"
  else built=1; t_ok; fi
fi

# The shipped model needs its encoder (make models, or ../shared); without it the caption tests skip.
have_model() {
  [ $built = 1 ] || { t_skip "core_api did not build"; return 1; }
  (cd "$ROOT" && "$A" caption samples/dog.jpg >/dev/null 2>"$T/model.err") && return 0
  t_skip "the shipped model cannot caption here ($(head -1 "$T/model.err")): make models, or ../shared"; return 1
}

t_begin captions_json_and_attention_as_the_cli
if have_model; then
  (cd "$ROOT" && "$A" caption samples/*.jpg >"$T/cli.txt" 2>/dev/null && "$A" caption --json --attention samples/*.jpg >"$T/cli.json" 2>/dev/null)
  (cd "$ROOT" && CORE_JSON="$T/core.json" "$P" caption samples/*.jpg >"$T/core.txt" 2>"$T/core.err"); rc=$?
  (cd "$ROOT" && "$T/core_cxx" caption samples/*.jpg >"$T/cxx.txt" 2>>"$T/core.err"); rcx=$?
  n=$(wc -l <"$T/cli.txt")
  if [ $rc -eq 3 ] || [ $rcx -eq 3 ]; then t_fail "an attention row does not sum to 1: $(head -2 "$T/core.err")"
  elif [ $rc -ne 0 ] || [ $rcx -ne 0 ]; then t_fail "exit $rc/$rcx: $(head -3 "$T/core.err")"
  elif [ "$n" -lt 6 ] || ! cmp -s "$T/cli.txt" "$T/core.txt" || ! cmp -s "$T/cli.txt" "$T/cxx.txt"; then
    t_fail "captions differ from attncap caption's ($n lines): $(diff "$T/cli.txt" "$T/core.txt" | head -4 | paste -sd' ')"
  elif [ ${#san[@]} = 0 ] && ! cmp -s "$T/cli.json" "$T/core.json"; then t_fail "JSON differs: $(diff "$T/cli.json" "$T/core.json" | head -2 | cut -c1-200)"
  elif ! "$PY" - "$T/core.json" "$T/cli.json" <<'PY' 2>"$T/py.err"; then t_fail "$(tail -2 "$T/py.err")"; else t_ok; fi
import json, sys
def close(a, b):  # a sanitizer build: equal but for the last digits (see san_note)
    if isinstance(a, float) or isinstance(b, float): return abs(a - b) <= 2e-4 * max(1, abs(b))  # 4 decimals printed
    if isinstance(a, list): return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict): return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    return a == b
for line, cli in zip(open(sys.argv[1]), open(sys.argv[2])):
    assert close(json.loads(line), json.loads(cli)), (line[:200], cli[:200])
    o = json.loads(line)
    h, w = o['grid']
    a = o['attention']
    assert len(a) == len(o['tokens']) > 0, (o['image'], len(a), len(o['tokens']))
    for row in a:  # printed with 4 significant digits: each of h * w cells rounds by at most 5e-5 relative
        assert len(row) == h * w, (o['image'], len(row), h, w)
        assert abs(sum(row) - 1) < 1e-3 and min(row) >= 0, (o['image'], sum(row))
PY
fi

t_begin given_caption_as_the_cli
if have_model; then
  g="a cat on a zebraish sofa" # zebraish: outside the vocabulary, fed as <unk>, shown as written
  (cd "$ROOT" && "$A" caption --json --attention --given "$g" samples/dog.jpg samples/kite.jpg >"$T/given_cli.json" 2>/dev/null)
  (cd "$ROOT" && CORE_GIVEN="$g" CORE_JSON="$T/given_core.json" "$P" caption samples/dog.jpg samples/kite.jpg >/dev/null 2>"$T/err"); rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif ! grep -q '"zebraish"' "$T/given_core.json"; then t_fail "the given caption is not in the results: $(head -c 200 "$T/given_core.json")"
  elif ! "$PY" - "$T/given_core.json" "$T/given_cli.json" "${#san[@]}" <<'PY' 2>"$T/py.err"; then t_fail "$(tail -2 "$T/py.err")"; else t_ok; fi
import json, sys
a, b = open(sys.argv[1]).read(), open(sys.argv[2]).read()
if sys.argv[3] == '0':
    assert a == b, (a[:200], b[:200])
else:  # sanitizer build (san_note): the words exactly
    for x, y in zip(a.splitlines(), b.splitlines()):
        assert json.loads(x)['tokens'] == json.loads(y)['tokens'], (x[:200], y[:200])
PY
fi

t_begin bytes_in_memory_batched_as_the_cli
if have_model; then
  (cd "$ROOT" && "$P" bytes samples/*.jpg >"$T/bytes.txt" 2>"$T/err"); rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif ! cmp -s "$T/bytes.txt" "$T/cli.txt"; then t_fail "$(diff "$T/cli.txt" "$T/bytes.txt" | head -4 | paste -sd' ')"
  else t_ok; fi
fi

t_begin stream_as_the_cli
# ac_caption_stream (1.2): the photos handed out over time, delivered in order, the CLI's captions and JSON
if have_model; then
  (cd "$ROOT" && CORE_JSON="$T/stream.json" "$P" stream samples/*.jpg >"$T/stream.txt" 2>"$T/err"); rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif ! cmp -s "$T/stream.txt" "$T/cli.txt"; then t_fail "$(diff "$T/cli.txt" "$T/stream.txt" | head -4 | paste -sd' ')"
  elif [ ${#san[@]} = 0 ] && ! "$PY" - "$T/stream.json" "$T/cli.json" <<'PY' 2>"$T/py.err"; then t_fail "JSON: $(tail -2 "$T/py.err")"; else t_ok; fi
import json, sys
for a, b in zip(open(sys.argv[1]), open(sys.argv[2])):
    a, b = json.loads(a), json.loads(b)
    assert a == b, (str(a)[:200], str(b)[:200])  # the same line; the stream names its photos as the CLI
PY
fi

# NAME WHAT: the core's JSON lines ($T/NAME.core) are `attncap caption WHAT`'s ($T/NAME.cli): byte for
# byte, or under the sanitizers (the same words, floats printed from other roundings) the same words and
# runners-up.
same_as_cli() {
  local name=$1 what=$2
  if [ ${#san[@]} = 0 ] && ! cmp -s "$T/$name.cli" "$T/$name.core"; then
    t_fail "$name: differs from attncap caption $what: $(diff "$T/$name.cli" "$T/$name.core" | head -2 | cut -c1-200)"; return 1
  elif ! "$PY" -c 'import json, sys
for a, b in zip(open(sys.argv[1]), open(sys.argv[2])):
    a, b = json.loads(a), json.loads(b)
    assert a["tokens"] == b["tokens"], (a["caption"], b["caption"])
    assert [x["caption"] for x in a.get("alternatives", [])] == [x["caption"] for x in b.get("alternatives", [])], a["image"]' \
       "$T/$name.cli" "$T/$name.core" 2>"$T/py.err"; then t_fail "$name: $(tail -1 "$T/py.err")"; return 1; fi
}

# The 1.2 setters against the CLI's flags: each must change the captions of samples/ (else the test
# could not tell a setter that does nothing) and give exactly `attncap caption`'s with the flag.
setter_case() { # NAME "CORE_X=... ..." "CLI flags" [CLI environment]
  local name=$1 core_env=$2 flags=$3 cli_env=${4:-}
  (cd "$ROOT" && env $cli_env "$A" caption --json --attention $flags samples/*.jpg >"$T/$name.cli" 2>"$T/err") &&
    (cd "$ROOT" && env -u ATTNCAP_NAMING $core_env CORE_JSON="$T/$name.core" "$P" caption samples/*.jpg >/dev/null 2>>"$T/err")
  local rc=$?
  if [ $rc -ne 0 ]; then t_fail "$name: exit $rc: $(head -3 "$T/err")"; return 1
  elif cmp -s "$T/$name.cli" "$T/cli.json"; then t_fail "$name: $flags $cli_env changes no caption of samples/"; return 1
  else same_as_cli "$name" "$flags"; fi
}

t_begin set_precision_as_the_cli
# the shipped encoder is quantized: int8 runs it on its integers (other numbers than auto's f32)
if have_model; then setter_case int8 "CORE_PRECISION=int8" "--precision int8" && t_ok; fi

t_begin set_tags_and_naming_record_as_the_cli
# a naming record over the model's (ATTNCAP_NAMING for the CLI), with --tags auto; tags auto with the
# built-in settings (the shipped model has no naming record: its default is off); words
if have_model; then
  rec='{"threshold":0.05,"max_drop":5,"trust_logprob":0}'
  setter_case naming "CORE_TAGS=auto CORE_NAMING=$rec" "--tags auto" "ATTNCAP_NAMING=$rec" &&
    setter_case tags_words "CORE_TAGS=frisbee,grass" "--tags frisbee,grass" &&
    setter_case tags_auto "CORE_TAGS=auto" "--tags auto" && t_ok
fi

# ac_captioner_set_search = --allow-repeats / --allow-unk, where the flag changes the CLI's JSON lines:
# NAME "CORE_X=..." "CLI flags besides the one" FLAG PHOTO...
search_case() {
  local name=$1 core_env=$2 base=$3 flag=$4; shift 4
  (cd "$ROOT" && "$A" caption --json --attention $base "$@" >"$T/$name.base" 2>"$T/err" &&
    "$A" caption --json --attention $base $flag "$@" >"$T/$name.cli" 2>>"$T/err" &&
    env -u ATTNCAP_NAMING $core_env CORE_JSON="$T/$name.core" "$P" caption "$@" >/dev/null 2>>"$T/err")
  local rc=$?
  if [ $rc -ne 0 ]; then t_fail "$name: exit $rc: $(head -3 "$T/err")"; return 1
  elif cmp -s "$T/$name.base" "$T/$name.cli"; then t_fail "$name: $flag changes nothing here ($base)"; return 1
  else same_as_cli "$name" "$base $flag"; fi
}

t_begin set_search_as_the_cli
# greedy says "a red shirt and a red hat" of the parrot only when repeats are allowed; a
# runner-up of the horses (20 of a beam of 20) ends in <unk> only when <unk> is allowed
if ! have_model || ! need_data images/parrot.jpg; then :
elif ! "$PY" -c 'import PIL' 2>/dev/null; then t_skip "needs /usr/bin/python3 with PIL (python3-pil)"
else
  "$PY" -c 'import sys; from PIL import Image; Image.new("RGB", (224, 224), (120, 110, 90)).save(sys.argv[1])' "$T/flat.png"
  search_case repeats "CORE_SEARCH=2 CORE_TAGS=off CORE_BEAM=1" "--tags off --beam 1" --allow-repeats samples/*.jpg \
    "$DATA/images/parrot.jpg" &&
    search_case unk "CORE_SEARCH=1 CORE_TAGS=off CORE_BEAM=20 CORE_NBEST=20" "--tags off --beam 20 --nbest 20" \
      --allow-unk "$T/flat.png" samples/horses.jpg &&
    search_case both "CORE_SEARCH=3 CORE_TAGS=off CORE_BEAM=20 CORE_NBEST=20" "--tags off --beam 20 --nbest 20" \
      "--allow-unk --allow-repeats" "$T/flat.png" samples/giraffe.jpg && t_ok
fi

t_begin rgb_pixels_as_the_cli_on_the_same_pixels
# PIL (not our decoder) turns a photo into pixels, written once raw and once as a BMP, which the CLI reads
if ! have_model; then :
elif ! "$PY" -c 'import PIL' 2>/dev/null; then t_skip "needs /usr/bin/python3 with PIL (python3-pil)"
else
  "$PY" - "$ROOT/samples/giraffe.jpg" "$T/px" <<'PY'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert('RGB')
im = im.resize((im.width * 2 // 3, im.height * 2 // 3))
open(sys.argv[2] + '.rgb', 'wb').write(im.tobytes())
im.save(sys.argv[2] + '.bmp')
open(sys.argv[2] + '.size', 'w').write('%d %d' % (im.height, im.width))
PY
  read -r H W <"$T/px.size"
  want=$(cd "$ROOT" && "$A" caption "$T/px.bmp" 2>/dev/null | cut -f2-)
  got=$(cd "$ROOT" && "$P" rgb "$T/px.rgb" "$H" "$W" 2>"$T/err" | cut -f2-)
  if [ -z "$want" ] || [ "$got" != "$want" ]; then t_fail "pixels: '$got' ($(head -1 "$T/err")), the CLI on the BMP: '$want'"; else t_ok; fi
fi

t_begin classify_as_the_cli
# ac_classifier (1.2): the classes `attncap classify` prints, of files, bytes and PIL's pixels of a
# photo (the CLI reading the same pixels from a BMP); precision f32 as --precision f32, and int8
# refused as --precision int8 refuses it (the graph's softmax has no int8 kernel)
if ! have_model; then :
elif ! (cd "$ROOT" && "$A" classify samples/dog.jpg >/dev/null 2>"$T/err"); then t_skip "attncap classify cannot run here ($(head -1 "$T/err")): ../shared or ATTNCAP_DATA"
elif [ ! -f "$T/px.bmp" ]; then t_skip "needs the pixels of rgb_pixels_as_the_cli_on_the_same_pixels (PIL)"
else
  read -r H W <"$T/px.size"
  (cd "$ROOT" && "$A" classify samples/*.jpg "$T/px.bmp" >"$T/cls_cli.txt" 2>"$T/err" &&
    "$P" classify file samples/*.jpg >"$T/cls_file.txt" 2>>"$T/err" &&
    "$P" classify bytes samples/*.jpg >"$T/cls_bytes.txt" 2>>"$T/err" &&
    "$P" classify rgb "$T/px.rgb:$H:$W" >"$T/cls_rgb.txt" 2>>"$T/err" &&
    CORE_PRECISION=f32 "$P" classify file samples/*.jpg >"$T/cls_file32.txt" 2>>"$T/err"); rc=$?
  cli8=$(cd "$ROOT" && "$A" classify --precision int8 samples/dog.jpg 2>&1 >/dev/null | sed 's/^attncap classify: //')
  core8=$(cd "$ROOT" && CORE_PRECISION=int8 "$P" classify file samples/dog.jpg 2>&1 >/dev/null | sed 's/^classifier: //')
  n=$(ls "$ROOT"/samples/*.jpg | wc -l)
  head -$((6 * n)) "$T/cls_cli.txt" >"$T/cls_cli_jpg.txt"
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [ "$(wc -l <"$T/cls_cli_jpg.txt")" -ne $((6 * n)) ] || ! cmp -s "$T/cls_cli_jpg.txt" "$T/cls_file.txt"; then
    t_fail "files: $(diff "$T/cls_cli_jpg.txt" "$T/cls_file.txt" | head -4 | paste -sd' ')"
  elif ! cmp -s "$T/cls_file.txt" "$T/cls_bytes.txt"; then t_fail "bytes: $(diff "$T/cls_file.txt" "$T/cls_bytes.txt" | head -4 | paste -sd' ')"
  elif [ "$(tail -5 "$T/cls_cli.txt")" != "$(tail -5 "$T/cls_rgb.txt")" ]; then t_fail "pixels: $(tail -5 "$T/cls_rgb.txt" | paste -sd' ') vs the BMP's $(tail -5 "$T/cls_cli.txt" | paste -sd' ')"
  elif ! cmp -s "$T/cls_file.txt" "$T/cls_file32.txt"; then t_fail "f32: $(diff "$T/cls_file.txt" "$T/cls_file32.txt" | head -4 | paste -sd' ')"
  elif [ -z "$cli8" ] || [ "$cli8" != "$core8" ]; then t_fail "int8: the core says '$core8', the CLI '$cli8'"
  else t_ok; fi
fi

t_begin overlays_as_the_cli_byte_for_byte
if have_model; then
  (cd "$ROOT" && "$A" caption --quiet --overlays "$T/ov_cli" samples/dog.jpg samples/eagle.jpg >/dev/null 2>"$T/err") &&
    (cd "$ROOT" && "$P" overlays "$T/ov_core" samples/dog.jpg samples/eagle.jpg >"$T/ov.txt" 2>>"$T/err"); rc=$?
  # the PNGs (the CLI also keeps each photo's JSON line beside them, caption.json: a CLI feature)
  a=$(cd "$T/ov_cli" 2>/dev/null && find . -type f -name '*.png' | sort); b=$(cd "$T/ov_core" 2>/dev/null && find . -type f | sort)
  bad=""
  for f in $a; do cmp -s "$T/ov_cli/$f" "$T/ov_core/$f" || bad="$bad $f"; done
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif [ -z "$a" ] || [ "$a" != "$b" ]; then t_fail "files differ: CLI $(echo $a | wc -w), core $(echo $b | wc -w)"
  elif [ -n "$bad" ] && [ ${#san[@]} = 0 ]; then t_fail "differ:$bad"
  elif [ -n "$bad" ]; then echo "# $(echo $bad | wc -w) files differ under the sanitizers (san_note)"; t_ok
  else t_ok; fi
fi

# the 1.2 overlay flags and size = the CLI's: NAME FLAGS SIZE "CLI flags"; every file byte for byte, and
# the sheet unlike the default one (the previous test's)
overlay_case() {
  local name=$1 flags=$2 size=$3 cli=$4
  (cd "$ROOT" && "$A" caption --quiet --overlays "$T/ov_cli_$name" $cli samples/dog.jpg samples/eagle.jpg >/dev/null 2>"$T/err") &&
    (cd "$ROOT" && CORE_OVERLAY_FLAGS=$flags CORE_OVERLAY_SIZE=$size "$P" overlays "$T/ov_core_$name" samples/dog.jpg samples/eagle.jpg >/dev/null 2>>"$T/err")
  local rc=$? a b bad="" f
  a=$(cd "$T/ov_cli_$name" 2>/dev/null && find . -type f ! -name caption.json | sort); b=$(cd "$T/ov_core_$name" 2>/dev/null && find . -type f | sort)
  for f in $a; do cmp -s "$T/ov_cli_$name/$f" "$T/ov_core_$name/$f" || bad="$bad $f"; done
  if [ $rc -ne 0 ]; then t_fail "$name: exit $rc: $(head -3 "$T/err")"; return 1
  elif [ -z "$a" ] || [ "$a" != "$b" ]; then t_fail "$name: files differ: CLI $(echo $a), core $(echo $b)"; return 1
  elif cmp -s "$T/ov_cli/dog/sheet.png" "$T/ov_cli_$name/dog/sheet.png"; then t_fail "$name: $cli draws the default sheet"; return 1
  elif [ -n "$bad" ] && [ ${#san[@]} = 0 ]; then t_fail "$name: differ:$bad"; return 1
  elif [ -n "$bad" ]; then echo "# $name: $(echo $bad | wc -w) files differ under the sanitizers (san_note)"; fi
}

t_begin overlay_flags_and_size_as_the_cli
# AC_OVERLAY_STYLE_SPOT|FORMAT_JPEG (4|32) at 300 pixels; BASE_COLOUR|SCALE_ABSOLUTE|SHEET_ONLY (8|16|2)
# enlarged to 1400; FORCE over the first (1|4|32: the same files again)
if have_model; then
  overlay_case spot_jpg 36 300 "--style spot --format jpg --size 300" &&
    overlay_case colour_abs_sheet 26 1400 "--base colour --scale absolute --sheet-only --size 1400" &&
    overlay_case spot_jpg 37 300 "--style spot --format jpg --size 300 --force" && t_ok
fi

t_begin each_as_the_cli
# ac_caption_each and the result getters (1.3), what `attncap caption` relies on: the photos of a list
# handed over in order, the captions of ac_caption_file one by one (captions_json_...'s core.txt) and
# `--nbest`'s lines; each runner-up's ac_result_alternative_confidence = Platt's sigmoid(a x + b) of the
# model file's "confidence" record at x = its logprob / (words + 1), computed here from the file and the
# JSON line; overlays written from the callback = those written after ac_caption_file (overlays_as_the_
# cli's) byte for byte, and caption.json (ac_result_write_json) the result's JSON line and a newline,
# no temporary file left; same-named photos in folders x, x-2; ac_captioner_lanes as the rule says;
# the given caption's unknown words (ac_captioner_given_unknown) as tokenized
if have_model; then
  mkdir -p "$T/d1" "$T/d2" && cp "$ROOT/samples/dog.jpg" "$T/d1/x.jpg" && cp "$ROOT/samples/kite.jpg" "$T/d2/x.jpg"
  (cd "$ROOT" && "$P" each "" samples/*.jpg >"$T/each.txt" 2>"$T/err" &&
    "$A" caption --beam 4 --nbest 4 samples/*.jpg >"$T/nbest_cli.txt" 2>>"$T/err" &&
    CORE_BEAM=4 CORE_NBEST=4 CORE_ALTS="$T/alts.txt" CORE_JSON="$T/each_nbest.json" "$P" each "" samples/*.jpg >"$T/each_nbest.txt" 2>>"$T/err" &&
    "$P" each "$T/ov_each" samples/dog.jpg samples/eagle.jpg >/dev/null 2>>"$T/err" &&
    CORE_JSON="$T/each_dup.json" "$P" each "$T/ov_dup" "$T/d1/x.jpg" "$T/d2/x.jpg" samples/dog.jpg >/dev/null 2>>"$T/err" &&
    CORE_GIVEN="a cat on a Zebraish sofa, quux" "$P" each "" samples/dog.jpg >"$T/each_given.txt" 2>>"$T/err"); rc=$?
  lanes=""
  for tn in 1:1 1:6 2:1 2:6 3:2 4:6 4:3; do # THREADS:PHOTOS -> one lane with every thread for one photo or thread, else min(threads, photos) of threads/lanes
    th=${tn%:*} np=${tn#*:}; want_l=$(( th < np ? th : np )); [ $want_l -lt 2 ] && want_l=1
    want_t=$(( want_l > 1 ? th / want_l : th ))
    args=(); for _ in $(seq $np); do args+=(samples/dog.jpg); done
    got=$(cd "$ROOT" && CORE_THREADS=$th "$P" each "" "${args[@]}" 2>/dev/null | head -1)
    [ "$got" = "$(printf 'lanes\t%d\t%d' $want_l $want_t)" ] || lanes="$lanes $th threads, $np photos: '$got' (want $want_l x $want_t);"
  done
  pngs=$(cd "$T/ov_core" 2>/dev/null && find . -type f | sort); bad=""
  for f in $pngs; do cmp -s "$T/ov_core/$f" "$T/ov_each/$f" || bad="$bad $f"; done
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif ! cmp -s <(grep -v '^lanes' "$T/each.txt") "$T/core.txt"; then t_fail "captions: $(diff <(grep -v '^lanes' "$T/each.txt") "$T/core.txt" | head -4 | paste -sd' ')"
  elif ! cmp -s <(grep -v '^lanes' "$T/each_nbest.txt") "$T/nbest_cli.txt"; then t_fail "--nbest: $(diff <(grep -v '^lanes' "$T/each_nbest.txt") "$T/nbest_cli.txt" | head -4 | paste -sd' ')"
  elif [ -n "$lanes" ]; then t_fail "lanes:$lanes"
  elif [ -z "$pngs" ] || [ "$(cd "$T/ov_each" && find . -type f ! -name caption.json | sort)" != "$pngs" ]; then t_fail "overlay files: $(cd "$T/ov_each" && find . -type f | sort | paste -sd' ')"
  elif [ -n "$bad" ] && [ ${#san[@]} = 0 ]; then t_fail "overlays differ:$bad"
  elif [ "$(cd "$T/ov_dup" && ls | paste -sd' ')" != "dog x x-2" ]; then t_fail "folders of x.jpg, x.jpg, dog.jpg: $(ls "$T/ov_dup" | paste -sd' ')"
  elif ! cmp -s <(cat "$T/ov_dup/x/caption.json" "$T/ov_dup/x-2/caption.json" "$T/ov_dup/dog/caption.json") "$T/each_dup.json"; then
    t_fail "caption.json is not the JSON line: $(head -c 200 "$T/ov_dup/x-2/caption.json")"
  elif [ "$(grep '^unknown' "$T/each_given.txt" | cut -f2 | paste -sd' ')" != "zebraish quux" ]; then t_fail "unknown words: $(grep '^unknown' "$T/each_given.txt" | paste -sd' ')"
  elif ! "$PY" - "${ATTNCAP_MODEL:-$ROOT/models/attncap.safetensors}" "$T/each_nbest.json" "$T/alts.txt" "$T/ov_dup/x-2/caption.json" "$T/ov_dup/x/caption.json" <<'PY' 2>"$T/py.err"; then t_fail "$(tail -2 "$T/py.err")"; else t_ok; fi
import json, math, struct, sys
f = open(sys.argv[1], 'rb')
meta = json.loads(f.read(struct.unpack('<Q', f.read(8))[0]))['__metadata__']
cal = json.loads(meta['confidence'])
alts = [float(x) for x in open(sys.argv[3])]
k, differs = 0, 0
for line in open(sys.argv[2]):
    o = json.loads(line)
    for a in o.get('alternatives', []):
        want = 1 / (1 + math.exp(-(cal['a'] * a['logprob'] / (len(a['tokens']) + 1) + cal['b'])))
        assert abs(alts[k] - want) <= 1e-9, (o['image'], a['caption'], alts[k], want)
        differs += abs(want - o['confidence']) > 1e-6
        k += 1
assert k == len(alts) and k >= 6 and differs >= 3, (k, len(alts), differs)  # runners-up not the caption's own
kite, dog = json.loads(open(sys.argv[4]).read()), json.loads(open(sys.argv[5]).read())
assert kite['caption'] != dog['caption'] and kite['image'].endswith('d2/x.jpg'), (kite['image'], kite['caption'])
assert len(kite['overlays']) == len(kite['tokens']) + 1 and all('/x-2/' in p for p in kite['overlays']), kite['overlays']
PY
fi

t_begin regions_and_copied_as_the_cli
# 1.3's ac_result_regions, ac_result_region_attention and ac_result_copied on the shipped model (which
# attends to the detector's objects and copies their names) hold what `attncap caption --json
# --attention` prints: the labels, the scores and boxes (printed to 4 decimals), the attention on each
# region per word (4 significant digits), the copied shares (3 decimals), searched and with a given caption (which copies "giraffe" and "zebra"). Against
# the grid too: each region's weight is spread over the cells whose centres lie in its box
# (ac_result.attention), so those cells hold at least that weight.
if have_model; then
  photos=(samples/giraffe.jpg samples/horses.jpg)
  g="a giraffe standing next to a zebra"
  (cd "$ROOT" && "$A" caption --json --attention "${photos[@]}" >"$T/reg_cli.json" 2>"$T/err" &&
    "$A" caption --json --attention --given "$g" "${photos[@]}" >"$T/reg_cli_given.json" 2>>"$T/err" &&
    "$P" regions "${photos[@]}" >"$T/reg_core.json" 2>>"$T/err" &&
    CORE_GIVEN="$g" "$P" regions "${photos[@]}" >"$T/reg_core_given.json" 2>>"$T/err"); rc=$?
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -3 "$T/err")"
  elif ! "$PY" - "$T/reg_cli.json" "$T/reg_core.json" "$T/reg_cli_given.json" "$T/reg_core_given.json" <<'PY' 2>"$T/py.err"; then t_fail "$(tail -2 "$T/py.err")"; else t_ok; fi
import json, sys
import numpy as np
def near(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol(y) for x, y in zip(a, b))
copied = 0
for cli_f, core_f in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    clis, cores = [json.loads(l) for l in open(cli_f)], [json.loads(l) for l in open(core_f)]
    assert len(clis) == len(cores) == 2, (len(clis), len(cores))
    for want, got in zip(clis, cores):
        name = want['image']
        assert got['image'] == name and got['tokens'] == want['tokens'], (name, got['tokens'], want['tokens'])
        wr, gr = want.get('regions', []), got['regions']
        assert len(wr) >= 1 and [x['label'] for x in gr] == [x['label'] for x in wr], (name, gr, wr)
        for x, y in zip(gr, wr):  # rounded to 1e-4 by the JSON line
            assert near([x['score']] + x['box'], [y['score']] + y['box'], lambda v: 5.01e-5), (name, x, y)
            assert 0 <= x['box'][0] <= x['box'][2] <= 1 and 0 <= x['box'][1] <= x['box'][3] <= 1, (name, x)
        ra, wa = got['region_attention'], want['region_attention']
        assert len(ra) == len(wa) == len(want['tokens']), (name, len(ra), len(wa))
        for row, wrow in zip(ra, wa):  # %.4g: 4 significant digits
            assert near(row, wrow, lambda v: 5.01e-4 * abs(v) + 1e-9), (name, row, wrow)
            assert min(row) >= 0 and sum(row) <= 1 + 1e-6, (name, row)
        if 'copied' in want:
            assert got['copied'] is not None and near(got['copied'], want['copied'], lambda v: 5.01e-4), (name, got['copied'], want['copied'])
            assert all(0 <= v <= 1 for v in got['copied']), (name, got['copied'])
            copied += sum(v > 0.5 for v in got['copied'])
        else:
            assert got['copied'] is None, (name, 'copied shares the CLI does not print', got['copied'])
        # the grid: each region's weight lies on the cells whose centres are in its box (caption.c's rule)
        gh, gw = want['grid']
        att = np.asarray(want['attention'], np.float64).reshape(-1, gh, gw)
        for r, x in enumerate(gr):
            x0, y0, x1, y1 = (np.float32(v) for v in x['box'])
            ys = [i for i in range(gh) if y0 <= np.float32((i + 0.5) / gh) <= y1]
            xs = [j for j in range(gw) if x0 <= np.float32((j + 0.5) / gw) <= x1]
            if not ys or not xs:
                ys, xs = [min(int((y0 + y1) / 2 * gh), gh - 1)], [min(int((x0 + x1) / 2 * gw), gw - 1)]
            for w in range(len(ra)):
                inside = att[w][np.ix_(ys, xs)].sum()
                assert inside >= ra[w][r] - 5e-4 * inside - 1e-6, (name, w, x['label'], inside, ra[w][r])
assert copied >= 2, ('the given caption copied nothing', copied)  # its "giraffe" and "zebra" on giraffe.jpg
PY
fi

t_begin no_regions_for_a_grid_only_model
# A model trained without detections (a tiny one on ../shared's 100 COCO photos) has no regions, no
# attention on them and no copied shares; its results' getters say 0 and NULL.
if [ $built != 1 ]; then t_skip "core_api did not build"
elif need_data data/coco/images && need_data encoders/mobilenet_v1_0.25_128_quant.tflite && coco_features &&
     coco_train "$T/grid.safetensors"; then
  if ! ATTNCAP_MODEL="$T/grid.safetensors" ATTNCAP_ENCODER="$ENC" "$P" regions "$COCO/images/$photo" "$ROOT/samples/giraffe.jpg" \
      >"$T/grid_core.json" 2>"$T/err"; then t_fail "exit: $(head -3 "$T/err")"
  elif [ "$(grep -c '"regions":\[\],"region_attention":\[\],"copied":null}$' "$T/grid_core.json")" != 2 ]; then
    t_fail "regions of a grid-only model: $(head -c 300 "$T/grid_core.json")"
  else t_ok; fi
fi

t_begin evaluate_as_coco_caption
# coco-caption's own numbers for 24 small cases (BLEU-1..4, per-image ROUGE-L, CIDEr-D)
if [ $built = 1 ] && [ -x "$PY" ]; then
  if "$PY" - "$ROOT/tests/fixtures/metrics_ref.json" "$P" >"$T/ev.out" 2>&1 <<'PY'; then t_ok; else t_fail "$(tail -3 "$T/ev.out")"; fi
import json, subprocess, sys
cases = json.load(open(sys.argv[1]))
done = 0
for k, c in enumerate(cases):
    if any(not it['cand'].strip() for it in c['items']):
        continue  # an empty candidate: refused by the evaluator as by `attncap eval`
    lines = ''.join('cand\t%s\n' % it['cand'] + ''.join('ref\t%s\n' % r for r in it['refs']) for it in c['items'])
    out = subprocess.run([sys.argv[2], 'eval'], input=lines, capture_output=True, text=True)
    assert out.returncode == 0, (k, out.stderr)
    v = out.stdout.split()
    got = [float(x) for x in v[:6]]
    want = c['bleu'] + [sum(c['rouge_img']) / len(c['rouge_img']), c['cider']]
    for g, w, name in zip(got, want, ['BLEU-1', 'BLEU-2', 'BLEU-3', 'BLEU-4', 'ROUGE-L', 'CIDEr-D']):
        assert abs(g - w) <= 1e-9 * max(1, abs(w)), (k, name, g, w)
    assert int(v[6]) == len(c['items']) and v[7] == '1', (k, v)
    done += 1
assert done >= 10, done
print('%d cases' % done)
PY
else t_skip "needs the program and /usr/bin/python3"; fi

t_begin train_as_the_cli
# 1.4's trainer: the same options by key give the CLI's model byte for byte (training is deterministic:
# train.h), and its events come in order. The fixture of train_smoke.sh; keys with '-' or '_' alike.
FX="$ROOT/tests/fixtures/train"
if [ $built = 1 ]; then
  opts=(--embed 32 --hidden 32 --att 16 --min-count 1 --batch 5 --lr 0.01 --dropout 0 --lambda 0.1 --checkpoint-every 0
        --epochs 3 --no-flip --fp16)
  keys=(embed=32 hidden=32 att=16 min_count=1 batch=5 lr=0.01 dropout=0 lambda=0.1 checkpoint-every=0 epochs=3 flip=0 fp16)
  if ! "$A" train --data "$FX/captions.json" --features "$FX/features" --out "$T/cli.safetensors" --quiet "${opts[@]}" \
       >/dev/null 2>"$T/err"; then t_fail "attncap train: $(head -3 "$T/err")"
  elif ! "$P" train data="$FX/captions.json" features="$FX/features" out="$T/lib.safetensors" "${keys[@]}" \
       >"$T/train.txt" 2>"$T/err"; then t_fail "core_api train: $(head -3 "$T/err")"
  elif ! cmp -s "$T/cli.safetensors" "$T/lib.safetensors"; then t_fail "the library's model differs from the CLI's"
  elif ! grep -q '^start 1 epochs 3 evaluations 3 finished 1 best_step [0-9]* out_of_order 0 progress 1$' "$T/train.txt"
  then t_fail "events: $(cat "$T/train.txt")"
  else t_ok; fi
fi

t_begin features_as_the_cli
# 1.4's featurizer: the same photos and options by key give the CLI's cache byte for byte
if [ $built = 1 ] && need_data encoders/mobilenet_v1_0.25_128_quant.tflite; then
  ENC="$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite"
  photos=("$ROOT"/samples/*.jpg)
  if ! "$A" features --encoder "$ENC" --size 128 --fp16 --flip --shard-size 4 --quiet --out "$T/fc_cli" "${photos[@]}" \
       2>"$T/err"; then t_fail "attncap features: $(head -3 "$T/err")"
  elif ! "$P" features "$T/fc_lib" encoder="$ENC" size=128 fp16 flip shard-size=4 -- "${photos[@]}" >"$T/feat.txt" \
       2>"$T/err"; then t_fail "core_api features: $(head -3 "$T/err")"
  elif ! diff -r "$T/fc_cli" "$T/fc_lib" >/dev/null; then t_fail "the caches differ: $(diff -rq "$T/fc_cli" "$T/fc_lib" | head -2)"
  elif ! grep -q "^photos ${#photos[@]} encoded $((2 * ${#photos[@]})) skipped 0 failed 0 grid 4x4 x " "$T/feat.txt"; then
    t_fail "counts: $(cat "$T/feat.txt")"
  else t_ok; fi
fi

t_begin error_paths_one_line_each_no_leak
if have_model; then
  printf 'just some text\n' >"$T/notes.jpg"
  head -c 3000 "$ROOT/samples/dog.jpg" >"$T/trunc.jpg"
  (cd "$ROOT" && "$P" errors "$T" >"$T/errors.txt" 2>"$T/err"); rc=$?
  n_ok=$(grep -c '^ok ' "$T/errors.txt")
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(grep -v '^ok' "$T/errors.txt" | head -2) $(head -5 "$T/err")"
  elif grep -q '^bad ' "$T/errors.txt"; then t_fail "$(grep '^bad ' "$T/errors.txt" | head -3 | paste -sd' ')"
  elif grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T/err"; then t_fail "sanitizer: $(head -3 "$T/err")"
  elif [ "$n_ok" -lt 20 ]; then t_fail "only $n_ok error cases ran"
  else echo "# $n_ok error cases${san:+ under ASan/UBSan}"; t_ok; fi
fi
t_end
