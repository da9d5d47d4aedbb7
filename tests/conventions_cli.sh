#!/usr/bin/env bash
# Command-line conventions (issue #16 item 9): attncap --version, --opt=value, attncap help CMD, and
# the man page and bash completion that `make install` puts in place.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}

# the commands `attncap --help` lists
commands() { "$A" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'; }

t_begin version
want=$(sed -n 's/^#define AC_VERSION "\(.*\)"$/\1/p' "$ROOT/include/attncap/attncap.h")
got=$("$A" --version 2>"$T/err"); rc=$?
if [ -z "$want" ]; then t_fail "no AC_VERSION in include/attncap/attncap.h"
elif [ $rc -ne 0 ] || [ "$got" != "attncap $want" ] || [ -s "$T/err" ]; then t_fail "exit $rc, '$got', want 'attncap $want'"
elif ! "$A" --help | head -1 | grep -qF "attncap $want:"; then t_fail "--help does not name the version"
else t_ok; fi

t_begin opt_equals_value
ok=1
# the same refusals with "=" as with a separate value, and a value that contains '='
for pair in "caption --beam 0" "caption --len-alpha 11" "train --seed -1" "features --size 8"; do
  set -- $pair
  "$A" "$1" "$2" "$3" x.jpg >/dev/null 2>"$T/e1"
  "$A" "$1" "$2=$3" x.jpg >/dev/null 2>"$T/e2"; rc=$?
  if [ $rc -ne 2 ] || ! cmp -s "$T/e1" "$T/e2"; then t_fail "$1 $2=$3: exit $rc, '$(cat "$T/e2")' vs '$(cat "$T/e1")'"; ok=0; break; fi
done
if [ $ok = 1 ]; then
  expect_error "flag with a value" "$A" caption --json=1 x.jpg && ! grep -q "takes no value" "$T/err" &&
    { t_fail "--json=1: $(cat "$T/err")"; ok=0; }
  expect_error "unknown --x=y" "$A" caption --bogus=3 x.jpg && ! grep -qF "unknown option '--bogus'" "$T/err" &&
    { t_fail "--bogus=3: $(cat "$T/err")"; ok=0; }
  expect_error "empty value" "$A" caption --beam= x.jpg && ! grep -qF "got ''" "$T/err" && { t_fail "--beam=: $(cat "$T/err")"; ok=0; }
  # a string value keeps everything after the first '=': the missing model is named with its '='
  "$A" caption --model=a=b.safetensors x.jpg >/dev/null 2>"$T/err"
  grep -qF "a=b.safetensors" "$T/err" || { t_fail "--model=a=b.safetensors: $(cat "$T/err")"; ok=0; }
fi
[ $ok = 1 ] && t_ok

t_begin help_command
ok=1
n=0
for c in $(commands); do
  n=$((n + 1))
  "$A" help "$c" >"$T/h1" 2>"$T/err"; rc=$?
  "$A" "$c" --help >"$T/h2"
  if [ $rc -ne 0 ] || [ -s "$T/err" ] || ! cmp -s "$T/h1" "$T/h2" || ! grep -q "usage: attncap $c" "$T/h1"; then
    t_fail "attncap help $c: exit $rc, differs from $c --help"; ok=0; break
  fi
done
[ $n -lt 8 ] && { t_fail "attncap --help lists $n commands"; ok=0; }
if [ $ok = 1 ]; then
  expect_error "help of an unknown command" "$A" help nope && { "$A" help nope 2>/dev/null; [ $? -eq 2 ]; } ||
    { t_fail "attncap help nope: $(cat "$T/err")"; ok=0; }
fi
[ $ok = 1 ] && t_ok

t_begin same_score_in_every_output
# caption's score is logprob / (words + 1)^alpha in --json (every line) and in --nbest's lines
MK="$(dirname "$A")/tests/test_captioner"
py=$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)
if [ -z "$py" ]; then t_skip "needs python3"
elif need_data encoders/mobilenet_v1_0.25_128_quant.tflite; then
  if [ ! -x "$MK" ]; then t_skip "needs $MK (make tests)"
  elif ! "$MK" --make-model "$T/tiny.safetensors" >/dev/null 2>&1; then t_fail "cannot make the tiny model"
  else
    S="$ROOT/samples"
    "$A" caption --model "$T/tiny.safetensors" --quiet --beam 3 --len-alpha 0.5 --json "$S/dog.jpg" "$S/kite.jpg" >"$T/j" &&
      "$A" caption --model "$T/tiny.safetensors" --quiet --beam 3 --len-alpha 0.5 --nbest 2 "$S/dog.jpg" "$S/kite.jpg" >"$T/nb"
    msg=$("$py" - "$T/j" "$T/nb" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
nb = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
best = {}
for path, cap, conf, score in nb:
    best.setdefault(path, (cap, float(score)))
for o in rows:
    assert "score" in o, "no score in %s" % sorted(o)
    want = o["logprob"] / (len(o["tokens"]) + 1) ** 0.5
    assert abs(o["score"] - want) < 1e-4, (o["score"], want)
    cap, s = best[o["image"]]
    assert cap == o["caption"] and abs(s - o["score"]) < 1e-3, (cap, s, o["caption"], o["score"])
print("ok")
PY
)
    [ "$msg" = ok ] && t_ok || t_fail "$msg"
  fi
fi

t_begin man_page_and_completion_installed
P="$T/prefix"
if ! command -v make >/dev/null; then t_skip "needs make"
elif [ "${BUILD:-build}" != build ]; then t_skip "runs on the default build only (BUILD=${BUILD})"
elif ! make -s -C "$ROOT" BUILD="${BUILD:-build}" install PREFIX="$P" >"$T/make.log" 2>&1; then t_fail "make install: $(tail -3 "$T/make.log")"
else
  man1="$P/share/man/man1/attncap.1" comp="$P/share/bash-completion/completions/attncap"
  ok=1
  [ -x "$P/bin/attncap" ] || { t_fail "no $P/bin/attncap"; ok=0; }
  if [ $ok = 1 ] && [ ! -f "$man1" ]; then t_fail "no man page installed"; ok=0; fi
  if [ $ok = 1 ] && command -v man >/dev/null; then
    MANWIDTH=200 man --warnings -l "$man1" >"$T/man.txt" 2>"$T/man.err"
    if [ -s "$T/man.err" ]; then t_fail "man warns: $(head -3 "$T/man.err")"; ok=0; fi
    # every command and every option its --help names is in the page
    for c in $(commands); do
      [ $ok = 1 ] || break
      grep -qE "^   $c\$" "$T/man.txt" || { t_fail "man page has no section for $c"; ok=0; break; }
      for o in $("$A" help "$c" | grep -oE '(^|[ [(])--[a-z0-9][a-z0-9-]*' | sed 's/^[ [(]//' | sort -u); do
        grep -qF -- "$o" "$T/man.txt" || { t_fail "man page lacks $c $o"; ok=0; break; }
      done
    done
    [ $ok = 1 ] && ! grep -qF "attncap $("$A" --version | cut -d' ' -f2)" "$T/man.txt" && { t_fail "man page has no version"; ok=0; }
  fi
  if [ $ok = 1 ] && [ ! -f "$comp" ]; then t_fail "no bash completion installed"; ok=0; fi
  if [ $ok = 1 ]; then
    got=$(bash -c '. "$1"; complete -p attncap >/dev/null || exit 3
      c() { COMP_WORDS=("$2" "${@:3}"); COMP_CWORD=$(( $# - 2 )); _attncap; echo "${COMPREPLY[*]}"; }
      c x "$2" cap; c x "$2" caption --ov; c x "$2" eval --ref; c x "$2" help tr; c x "$2" caption --style s' _ "$comp" "$P/bin/attncap")
    want=$(printf '%s\n' caption --overlays --refs "train" spot)
    [ "$got" = "$want" ] || { t_fail "completion gave '$got'"; ok=0; }
  fi
  [ $ok = 1 ] && t_ok
fi

t_end
