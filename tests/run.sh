#!/usr/bin/env bash
# Runs every test binary in $BUILD/tests and every tests/*.sh script, and sums their results.
# Each prints "ok/FAIL/skip NAME" lines and a final "# passed P failed F skipped S".
# Shell tests source tests/lib.sh. ATTNCAP_TEST_WRAPPER (e.g. valgrind) prefixes test binaries,
# ATTNCAP_CLI_WRAPPER the attncap CLI that the shell tests run.
# ATTNCAP_TEST_FILTER=regex runs only matching tests.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${BUILD:-build}
export ATTNCAP_BIN="$ROOT/$BUILD/attncap"
export ATTNCAP_ROOT="$ROOT"
if [ -z "${ATTNCAP_DATA:-}" ] && [ -d "$ROOT/../shared" ]; then
  export ATTNCAP_DATA=$(cd "$ROOT/../shared" && pwd)
fi
[ -n "${ATTNCAP_DATA:-}" ] || echo "note: ../shared not found; tests that need it will be skipped"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-2}
filter=${ATTNCAP_TEST_FILTER:-.}
total_p=0 total_f=0 total_s=0
failed_names=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
run_one() {
  local name=$1; shift
  local tmp="$log/tmp.$name"; mkdir -p "$tmp"
  local t0=$(date +%s.%N)
  ATTNCAP_TEST_TMP="$tmp" "$@" >"$log/$name.out" 2>"$log/$name.err"
  local rc=$?
  local t1=$(date +%s.%N)
  local line p f s
  line=$(grep -E '^# passed [0-9]+ failed [0-9]+ skipped [0-9]+' "$log/$name.out" | tail -1)
  if [ -z "$line" ]; then
    p=0 f=1 s=0
    echo "FAIL $name: exited $rc without a summary line"; tail -20 "$log/$name.err"; tail -5 "$log/$name.out"
  else
    read -r _ _ p _ f _ s <<<"$line"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $name: exit code $rc"; tail -20 "$log/$name.err"; fi
  fi
  grep -E '^(FAIL|skip) ' "$log/$name.out"
  if [ "$f" -gt 0 ]; then failed_names+=("$name"); grep -vE '^(ok|FAIL|skip|#) ' "$log/$name.out" | tail -20; tail -20 "$log/$name.err"; fi
  printf '%-28s %3d passed %2d failed %2d skipped  %5.1fs\n' "$name" "$p" "$f" "$s" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')"
  total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
  rm -rf "$tmp"
}
for bin in "$BUILD"/tests/test_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  [[ $name =~ $filter ]] || continue
  run_one "$name" ${ATTNCAP_TEST_WRAPPER:-} "$bin"
done
# ATTNCAP_CLI_WRAPPER (e.g. valgrind) prefixes the CLI the shell tests run: ATTNCAP_BIN becomes a
# script beside links to the test binaries and the tools (caption_cli finds test_captioner next to
# the CLI, imagenet_words tools/imagenet_words).
if [ -n "${ATTNCAP_CLI_WRAPPER:-}" ]; then
  mkdir -p "$log/cli"
  ln -s "$ROOT/$BUILD/tests" "$log/cli/tests"
  ln -s "$ROOT/$BUILD/tools" "$log/cli/tools"
  printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$ATTNCAP_CLI_WRAPPER" "$ATTNCAP_BIN" >"$log/cli/attncap"
  chmod +x "$log/cli/attncap"
  export ATTNCAP_BIN="$log/cli/attncap"
fi
for sh in tests/*.sh; do
  name=$(basename "$sh" .sh)
  [ "$name" = run ] || [ "$name" = lib ] && continue
  [[ $name =~ $filter ]] || continue
  run_one "$name" bash "$sh"
done
echo
[ ${#failed_names[@]} -gt 0 ] && echo "failing: ${failed_names[*]}"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
