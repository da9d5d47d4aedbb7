# Sourced by tests/*.sh: the same ok/FAIL/skip protocol as tests/test.h.
# Use: t_begin NAME; ...; t_ok | t_fail "why" | t_skip "why"; and t_end at the end of the script.
set -u
_p=0 _f=0 _s=0 _name=""
A=${ATTNCAP_BIN:?ATTNCAP_BIN not set; run through tests/run.sh}
T=${ATTNCAP_TEST_TMP:-$(mktemp -d)}
DATA=${ATTNCAP_DATA:-}
t_begin() { _name=$1; }
t_ok() { echo "ok $_name"; _p=$((_p + 1)); }
t_fail() { echo "FAIL $_name: $*"; _f=$((_f + 1)); }
t_skip() { echo "skip $_name: $*"; _s=$((_s + 1)); }
t_end() { echo "# passed $_p failed $_f skipped $_s"; [ "$_f" -eq 0 ]; }
# need_data REL: skip the current test (return 1) if $DATA/REL is missing.
need_data() { if [ -z "$DATA" ] || [ ! -e "$DATA/$1" ]; then t_skip "needs ../shared/$1"; return 1; fi; }
# expect_error "what" CMD...: the command must fail with exactly one line on stderr and no crash.
expect_error() {
  local what=$1; shift
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  local n; n=$(wc -l <"$T/err")
  if [ $rc -eq 0 ]; then t_fail "$what: exit 0, expected failure"; return 1; fi
  if [ $rc -ge 128 ]; then t_fail "$what: crashed with signal $((rc - 128))"; return 1; fi
  if grep -q -E 'AddressSanitizer|runtime error|LeakSanitizer' "$T/err"; then t_fail "$what: sanitizer: $(head -3 "$T/err")"; return 1; fi
  if [ "$n" -ne 1 ]; then t_fail "$what: expected one error line, got $n: $(head -3 "$T/err")"; return 1; fi
  return 0
}
