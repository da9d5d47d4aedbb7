#!/usr/bin/env bash
# Resumable runs and their outputs (issue #32, 3): eval --report DIR is checked before any captioning.
. "$(dirname "$0")/lib.sh"
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
ENCNAME=mobilenet_v2_1.0_224_quant.tflite
# the shipped model and its encoder (models/ or ../shared)
shipped() {
  if [ -f "$ROOT/models/$ENCNAME" ] || { [ -n "$DATA" ] && [ -f "$DATA/encoders/$ENCNAME" ]; }; then return 0; fi
  t_skip "needs the encoder $ENCNAME (make models, or ../shared)"; return 1
}

t_begin eval_report_dir_checked_before_captioning
# a report under a file, or on a file system nobody writes (/proc): one line naming it, exit 1, and
# nothing captioned (--results-out, written after the captioning, is not there)
if shipped; then
  echo x >"$T/file"
  ok=1
  for bad in "$T/file/report" "/proc/attncap-report-$$"; do
    expect_error "--report $bad" "$A" eval --model "$ROOT/models/attncap.safetensors" --data "$ROOT/samples/captions.tsv" --images "$ROOT/samples" \
      --split all --results-out "$T/res.jsonl" --report "$bad" || { ok=0; break; }
    if ! grep -q -- "--report: $bad: cannot be written" "$T/err"; then t_fail "$bad: $(cat "$T/err")"; ok=0; break; fi
    if [ -e "$T/res.jsonl" ]; then t_fail "$bad: captioned before refusing the report"; ok=0; break; fi
  done
  # a new report directory under a writable one is fine (made by the report)
  if [ $ok = 1 ] && ! "$A" eval --model "$ROOT/models/attncap.safetensors" --data "$ROOT/samples/captions.tsv" --images "$ROOT/samples" --split all \
       --quiet --no-sheets --report "$T/new/deeper/report" >/dev/null 2>"$T/err"; then t_fail "writable: $(cat "$T/err")"; ok=0; fi
  [ $ok = 1 ] && { [ -f "$T/new/deeper/report/index.html" ] && t_ok || t_fail "no report written"; }
fi

t_end
