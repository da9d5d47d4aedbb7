#!/usr/bin/env bash
# Runs one fuzz target for SECONDS (default 300) at low priority, seeded from fuzz/corpus/TARGET.
# usage: fuzz/run.sh TARGET [SECONDS]
# The growing corpus lives in build-fuzz/corpus/TARGET; crashes go to build-fuzz/crashes/TARGET/.
# To keep a crash as a regression test, copy it into fuzz/crashes/TARGET/ (replayed by
# tests/test_fuzz_regress.c under ASan/UBSan in `make test-asan`).
set -eu
cd "$(dirname "$0")/.."
t=$1 secs=${2:-300}
OUT=${FUZZ_OUT:-build-fuzz} # FUZZ_OUT=DIR: build and run in DIR (build.sh)
bash fuzz/build.sh "$t" >/dev/null
mkdir -p "$OUT/corpus/$t" "$OUT/crashes/$t"
cp -n fuzz/corpus/"$t"/* "$OUT/corpus/$t/" 2>/dev/null || true
[ "$t" = tflite ] && { cp -n tests/fixtures/cnn/*.tflite "$OUT/corpus/$t/" 2>/dev/null || true; }
nice -n "${FUZZ_NICE:-19}" "$OUT/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 \
  -artifact_prefix="$OUT/crashes/$t/" "$OUT/corpus/$t" 2>&1 | tee "$OUT/$t.log" | grep -E '^(#[0-9]+.*(DONE|pulse)|stat::|==[0-9]+==ERROR|SUMMARY)' || true
