#!/usr/bin/env bash
# attncap serve under load (bench/serve_load.py) over the 408 shared COCO photos: 5,000 requests from
# 32 clients with 2 % hostile, then 1,000 good requests from 8 clients (issue 34: throughput with 8
# clients >= 0.9x `attncap caption` over the same photos). Each run times the CLI over the photos
# before and after the server, in the same run. Appends nothing: copy the lines into bench/HISTORY.md.
# usage: bash bench/serve_load.sh [BUILD]            (default build)
#        RUNS=5 bash bench/serve_load.sh BUILD OTHER_BIN...
#   the second form: only the 8-client run, RUNS times for each binary (BUILD/attncap, then each OTHER_BIN),
#   interleaved (new, old, new, old, ...) so that a shared machine's load falls on all alike; prints
#   each run's serve/CLI ratio and, per binary, the median, best and worst ratio (and of the CPU seconds
#   per photo, CLI over server: above 1, the server spends less per photo).
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift $(($# > 0 ? 1 : 0))
SHARED=${ATTNCAP_DATA:-../shared}
photos=$(ls "$SHARED"/data/coco*/images/*.jpg 2>/dev/null)
[ -n "$photos" ] || { echo "serve_load: no photos in $SHARED/data/coco*/images: skipped"; exit 0; }
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(echo "$photos" | wc -l) photos"
rc=0
if [ $# -eq 0 ]; then
  /usr/bin/python3 bench/serve_load.py --bin "$BUILD/attncap" --requests 5000 --clients 32 --hostile 0.02 $photos || rc=1
  /usr/bin/python3 bench/serve_load.py --bin "$BUILD/attncap" --requests 1000 --clients 8 --hostile 0 $photos || rc=1
  exit $rc
fi
bins=("$BUILD/attncap" "$@")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "${RUNS:-5}"); do
  for b in "${bins[@]}"; do
    line=$(/usr/bin/python3 bench/serve_load.py --bin "$b" --requests "${REQUESTS:-1000}" --clients 8 --hostile 0 $photos) || rc=1
    echo "$b $line" | tee -a "$out"
  done
done
/usr/bin/python3 - "$out" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    b, j = line.split(" ", 1)
    runs.setdefault(b, []).append(json.loads(j))
for b, rs in runs.items():
    r = [x["serve_vs_cli"] for x in rs]
    c = [x["cpu_ms_per_photo"]["cli"] / x["cpu_ms_per_photo"]["serve"] for x in rs if "cpu_ms_per_photo" in x]
    print("%s: serve/CLI photos/s median %.3f, best %.3f, worst %.3f over %d runs (serve %s photos/s; load %s)" % (
        b, statistics.median(r), max(r), min(r), len(r), " ".join("%.1f" % x["serve_photos_per_s"] for x in rs),
        " ".join("%.1f" % x["load"] for x in rs)))
    if c:
        print("%s: CLI/serve CPU per photo median %.3f, best %.3f, worst %.3f" % (b, statistics.median(c), max(c), min(c)))
EOF
exit $rc
