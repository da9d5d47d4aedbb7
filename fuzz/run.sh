#!/usr/bin/env bash
# Runs one fuzz target for SECONDS (default 300) at low priority, seeded from fuzz/corpus/TARGET.
# usage: fuzz/run.sh TARGET [SECONDS]
# The growing corpus lives in build-fuzz/corpus/TARGET; crashes go to build-fuzz/crashes/TARGET/.
# To keep a crash as a regression test, copy it into fuzz/crashes/TARGET/ (replayed by
# tests/test_fuzz_regress.c under ASan/UBSan in `make test-asan`).
set -eu
cd "$(dirname "$0")/.."
t=$1 secs=${2:-300}
bash fuzz/build.sh "$t" >/dev/null
mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
cp -n fuzz/corpus/"$t"/* "build-fuzz/corpus/$t/" 2>/dev/null || true
[ "$t" = tflite ] && { cp -n tests/fixtures/cnn/*.tflite "build-fuzz/corpus/$t/" 2>/dev/null || true; }
nice -n 19 "build-fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 \
  -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" 2>&1 | tee "build-fuzz/$t.log" | grep -E '^(#[0-9]+.*(DONE|pulse)|stat::|==[0-9]+==ERROR|SUMMARY)' || true
