#!/usr/bin/env bash
# The CLI's small courtesies (issue #32, 5): "did you mean" for a mistyped command or option, error
# texts in one case style and one hint style.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}

t_begin did_you_mean_command_and_option
ok=1
for c in "captoin|caption" "evl|eval" "trian|train" "calibrat|calibrate" "featurse|features"; do
  expect_error "command ${c%%|*}" "$A" "${c%%|*}" x || { ok=0; break; }
  grep -qF "unknown command '${c%%|*}' (did you mean ${c#*|}? try attncap --help)" "$T/err" || { t_fail "${c%%|*}: $(cat "$T/err")"; ok=0; break; }
done
if [ $ok = 1 ]; then
  expect_error "far command" "$A" zzzzzz && ! grep -q "did you mean" "$T/err" || { t_fail "zzzzzz: $(cat "$T/err")"; ok=0; }
fi
if [ $ok = 1 ]; then
  expect_error "help captoin" "$A" help captoin && grep -qF "did you mean caption?" "$T/err" || { t_fail "help captoin: $(cat "$T/err")"; ok=0; }
fi
for c in "caption|--beem|--beam" "caption|--josn|--json" "eval|--result|--results" "train|--epoch|--epochs" \
         "calibrate|--refz|--refs" "features|--ot|--out"; do
  [ $ok = 1 ] || break
  IFS='|' read -r cmd bad good <<<"$c"
  expect_error "$cmd $bad" "$A" "$cmd" "$bad" 1 || { ok=0; break; }
  grep -qF "unknown option '$bad' (did you mean $good? try --help)" "$T/err" || { t_fail "$cmd $bad: $(cat "$T/err")"; ok=0; }
done
if [ $ok = 1 ]; then
  expect_error "far option" "$A" caption --zzzzzzzz x && grep -qF "unknown option '--zzzzzzzz' (try --help)" "$T/err" ||
    { t_fail "--zzzzzzzz: $(cat "$T/err")"; ok=0; }
fi
[ $ok = 1 ] && t_ok

t_begin errors_in_one_case_style
# a system error (strerror's "No such file or directory") reads as the rest: lowercase after "path: "
ok=1
for args in "caption --model $T/none.safetensors $ROOT/samples/dog.jpg" "info $T/none.tflite" \
            "eval --refs $T/none.tsv --results $T/none.jsonl"; do
  expect_error "$args" "$A" $args || { ok=0; break; }
  if ! grep -qE "^attncap [a-z]+: " "$T/err" || grep -qE ': [A-Z][a-z]+ [a-z]' "$T/err"; then t_fail "$args: $(cat "$T/err")"; ok=0; break; fi
done
if [ $ok = 1 ] && grep -rn "see --help\|try attncap [a-z]* --help" "$ROOT"/src/cli/*.c >"$T/grep"; then
  t_fail "hints in another style: $(head -2 "$T/grep")"; ok=0
fi
[ $ok = 1 ] && t_ok

t_begin completion_offers_values
# the repository's completion script over this binary: --tags, --precision and --split offer their
# values, train --out offers files (a model), features --out directories
mkdir -p "$T/c/dir1" && touch "$T/c/model.safetensors"
got=$(cd "$T/c" && bash -c '. "$1"
  c() { COMP_WORDS=("$2" "${@:3}"); COMP_CWORD=$(( $# - 2 )); _attncap; echo "${COMPREPLY[*]}"; }
  c x "$2" caption --tags ""; c x "$2" eval --precision ""; c x "$2" eval --split ""; c x "$2" tune --split v
  c x "$2" train --out mo; c x "$2" features --out ""' _ "$ROOT/completions/attncap.bash" "$A" 2>&1)
want=$(printf '%s\n' "auto off" "PREC" "train val test all" "val" "model.safetensors" "dir1")
precs=$("$A" caption --precision . 2>&1 | grep -oE "\(auto, .*\)" | tr -d '(),' | sed 's/ or / /')
want=${want/PREC/$precs}
if [ -z "$precs" ]; then t_fail "the binary names no precisions: $("$A" caption --precision . 2>&1)"
elif [ "$got" != "$want" ]; then t_fail "completion gave '$got', want '$want'"
else t_ok; fi

t_begin nbest_given_and_fallback_columns
# with the shipped model (calibrated): --nbest's lines put the confidence third as the plain line does
# (each runner-up its own: the model's Platt fit of its mean log-probability, recomputed here from the
# JSON), the score fourth; --given's plain line carries the log-probability (the sum of the JSON's
# token log-probabilities); the description of a caption below the naming's min_confidence (set through
# ATTNCAP_NAMING, with --tags auto) gets its own confidence, not the one of the caption it replaced
ENCNAME=mobilenet_v2_1.0_224_quant.tflite
py=$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)
if [ -z "$py" ]; then t_skip "needs python3"
elif [ ! -f "$ROOT/models/$ENCNAME" ] && { [ -z "$DATA" ] || [ ! -f "$DATA/encoders/$ENCNAME" ]; }; then t_skip "needs the encoder $ENCNAME"
else
  cd "$ROOT"
  plain=$("$A" caption samples/dog.jpg 2>"$T/err")
  "$A" caption --nbest 3 samples/dog.jpg >"$T/nb" 2>>"$T/err"
  "$A" caption --nbest 3 --json samples/dog.jpg >"$T/nb.json" 2>>"$T/err"
  "$A" caption --given "a dog with a orange toy" samples/dog.jpg >"$T/g" 2>>"$T/err"
  "$A" caption --given "a dog with a orange toy" --json samples/dog.jpg >"$T/g.json" 2>>"$T/err"
  ATTNCAP_NAMING='{"min_confidence":0.999}' "$A" caption --tags auto --quiet --json samples/kite.jpg samples/eagle.jpg samples/dog.jpg >"$T/mc.json" 2>>"$T/err"
  cd - >/dev/null
  msg=$("$py" - "$ROOT/models/attncap.safetensors" "$plain" "$T/nb" "$T/nb.json" "$T/g" "$T/g.json" "$T/mc.json" <<'PY' 2>&1
import json, math, struct, sys
model, plain, nb, nbj, g, gj, mc = sys.argv[1:]
f = open(model, 'rb'); n = struct.unpack('<Q', f.read(8))[0]
conf = json.loads(json.loads(f.read(n))['__metadata__']['confidence'])
def platt(logprob, words): return 1 / (1 + math.exp(-(conf['a'] * logprob / (words + 1) + conf['b'])))
p = plain.split('\t'); assert len(p) == 3, plain
lines = [l.rstrip('\n').split('\t') for l in open(nb)]
assert all(len(l) == 4 for l in lines), lines
assert lines[0][:3] == p, (lines[0], p)
j = json.loads(open(nbj).read())
alts = j['alternatives']; assert len(alts) == len(lines) - 1 >= 1, (alts, lines)
for l, a in zip(lines[1:], alts):
    assert l[1] == a['caption'] and abs(float(l[3]) - a['score']) < 1e-3, (l, a)
    want = platt(a['logprob'], len(a['tokens']))
    assert abs(float(l[2]) - want) < 0.006, ('runner-up confidence', l, want)
gl = open(g).read().rstrip('\n').split('\t'); go = json.loads(open(gj).read())
assert len(gl) == 3 and gl[1] == go['caption'] == 'a dog with an orange toy', (gl, go['caption'])
assert abs(float(gl[2]) - sum(go['token_logprobs'])) < 1e-2, (gl, sum(go['token_logprobs']))
described = [json.loads(l) for l in open(mc) if json.loads(l).get('described')]
assert described, 'no photo described at min_confidence 0.999'
for o in described:
    want = platt(o['logprob'], len(o['tokens']))
    assert abs(o['confidence'] - want) < 1e-3, ('description confidence', o['caption'], o['confidence'], want)
print('ok')
PY
)
  if [ "$msg" = ok ]; then t_ok; else t_fail "$(echo "$msg" | tail -1) ($(head -2 "$T/err"))"; fi
fi

t_begin help_and_man_page_true_and_80_columns
# the man page as `make man` writes it (tools/gen_man.sh over this binary) renders within 80 columns;
# the top-level summaries of info and train say what their own --help says they do; the FILES
# section names the model files that exist
ok=1
bash "$ROOT/tools/gen_man.sh" "$A" "$ROOT/doc/attncap.1.in" >"$T/attncap.1" 2>"$T/err" || { t_fail "gen_man: $(head -2 "$T/err")"; ok=0; }
if [ $ok = 1 ] && command -v man >/dev/null; then
  MANWIDTH=80 man -l "$T/attncap.1" 2>/dev/null >"$T/man.txt"
  wide=$(wc -L <"$T/man.txt")
  [ "$wide" -le 80 ] || { t_fail "man page $wide columns wide: $(awk 'length > 80' "$T/man.txt" | head -1)"; ok=0; }
fi
if [ $ok = 1 ]; then
  info=$("$A" --help | awk '$1 == "info"') train=$("$A" --help | awk '$1 == "train"')
  if "$A" help info | grep -q safetensors && ! grep -q safetensors <<<"$info"; then t_fail "info's summary: $info"; ok=0
  elif "$A" help train | grep -q transformer && ! grep -q transformer <<<"$train"; then t_fail "train's summary: $train"; ok=0
  elif "$A" help train | grep -q -- "--init" && ! grep -q -- "--init" <<<"$train"; then t_fail "train's summary: $train"; ok=0; fi
fi
if [ $ok = 1 ]; then
  for f in $(sed -n '/^\.SH FILES/,/^\.SH/p' "$ROOT/doc/attncap.1.in" | sed -n 's/^\.I \(models\/[^ ]*[^/ ]\)$/\1/p' | sed 's/\\-/-/g'); do
    case $f in *.tflite) continue;; esac # fetched by make models, not committed
    [ -f "$ROOT/$f" ] || { t_fail "the man page's FILES names $f, which does not exist"; ok=0; break; }
  done
fi
[ $ok = 1 ] && t_ok

t_end
