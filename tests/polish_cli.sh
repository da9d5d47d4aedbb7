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

t_end
