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
# The small encoder over ../shared's 100 COCO photos: coco_features sets ENC, COCO, photo and stem (the
# first photo) and writes the features to $T/feat (once per script); coco_train OUT [flags...] trains a
# tiny model on them (6 epochs). Each fails the current test with the tool's first error lines.
coco_features() {
  ENC="$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite" COCO="$DATA/data/coco"
  photo=$(ls "$COCO/images" | head -1) && stem=${photo%.*}
  [ -d "$T/feat" ] && return 0
  "$A" features --encoder "$ENC" --size 128 --quiet --out "$T/feat" "$COCO"/images/* >/dev/null 2>"$T/err" ||
    { t_fail "features: $(head -2 "$T/err")"; return 1; }
}
coco_train() {
  local out=$1; shift
  "$A" train --data "$COCO/captions.json" --features "$T/feat" --out "$out" --min-count 3 --batch 20 --epochs 6 \
    --lr 0.01 --max-val 4 --val-metric loss --quiet --checkpoint-every 0 "$@" >/dev/null 2>"$T/err" ||
    { t_fail "train: $(head -2 "$T/err")"; return 1; }
}
