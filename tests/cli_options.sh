#!/usr/bin/env bash
# Every subcommand parses its flags through src/cli/options.c: --help goes to stdout with exit 0;
# an unknown option, a missing value, a malformed number or one out of range is refused with
# exactly one line naming the flag, exit 2, and nothing on stdout.
. "$(dirname "$0")/lib.sh"

# command, a numeric flag it takes, an accepted value, a value below its range
cases=(
  "caption --beam 3 0"
  "classify --top 5 0"
  "eval --limit 10 0"
  "features --size 224 8"
  "ground --threads 2 0"
  "info - -"
  "serve --queue 8 0"
  "train --batch 8 0"
  "tune --max-len 20 0"
)

t_begin help_on_stdout
ok=1
for c in "${cases[@]}"; do
  set -- $c
  "$A" "$1" --help >"$T/out" 2>"$T/err"; rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$T/out" ] || [ -s "$T/err" ] || ! grep -q "usage: attncap $1" "$T/out"; then
    t_fail "$1 --help: exit $rc, stdout $(wc -c <"$T/out") bytes, stderr '$(head -1 "$T/err")'"; ok=0; break
  fi
done
[ $ok = 1 ] && t_ok

# expect_usage_error WHAT PATTERN CMD...: exit 2, one line on stderr matching PATTERN, empty stdout.
expect_usage_error() {
  local what=$1 pattern=$2; shift 2
  expect_error "$what" "$@" || return 1
  local rc; "$@" >/dev/null 2>&1; rc=$?
  if [ $rc -ne 2 ]; then t_fail "$what: exit $rc, expected 2"; return 1; fi
  if [ -s "$T/out" ]; then t_fail "$what: wrote to stdout: $(head -1 "$T/out")"; return 1; fi
  if ! grep -q -e "$pattern" "$T/err"; then t_fail "$what: '$(cat "$T/err")' does not say '$pattern'"; return 1; fi
}

t_begin unknown_option_and_missing_value
ok=1
for c in "${cases[@]}"; do
  set -- $c
  expect_usage_error "$1 --bogus" "attncap $1: unknown option '--bogus'" "$A" "$1" --bogus x || { ok=0; break; }
  [ "$2" = - ] && continue
  expect_usage_error "$1 $2 at the end" "attncap $1: $2 needs a value" "$A" "$1" "$2" || { ok=0; break; }
done
[ $ok = 1 ] && t_ok

t_begin malformed_and_out_of_range_numbers
ok=1
for c in "${cases[@]}"; do
  set -- $c
  [ "$2" = - ] && continue
  for bad in abc "" 3x 2.5 1e400 nan; do
    expect_usage_error "$1 $2 '$bad'" "attncap $1: $2 wants a whole number, got '$bad'" "$A" "$1" "$2" "$bad" ||
      { ok=0; break 2; }
  done
  expect_usage_error "$1 $2 $4" "attncap $1: $2 wants a value in" "$A" "$1" "$2" "$4" || { ok=0; break; }
  expect_usage_error "$1 $2 999999999999" "attncap $1: $2 wants a value in" "$A" "$1" "$2" 999999999999 ||
    { ok=0; break; }
done
expect_usage_error "caption --len-alpha 11" "attncap caption: --len-alpha wants a value in 0..10, got '11'" \
  "$A" caption --len-alpha 11 x.jpg || ok=0
expect_usage_error "caption --len-alpha x" "attncap caption: --len-alpha wants a number, got 'x'" \
  "$A" caption --len-alpha x x.jpg || ok=0
expect_usage_error "train --seed -1" "attncap train: --seed wants a value in" "$A" train --seed -1 || ok=0
expect_usage_error "caption --style" "attncap caption: --style is heat or spot, got 'warm'" \
  "$A" caption --style warm x.jpg || ok=0
[ $ok = 1 ] && t_ok

t_begin unexpected_arguments
ok=1
expect_usage_error "info with two models" "attncap info: unexpected argument 'b.tflite'" "$A" info a.tflite b.tflite ||
  ok=0
expect_usage_error "tune with an argument" "attncap tune: unexpected argument 'extra'" "$A" tune extra || ok=0
[ $ok = 1 ] && t_ok

t_end
