#!/usr/bin/env bash
# attncap serve under load (bench/serve_load.py) over the 408 shared COCO photos: 5,000 requests from
# 32 clients with 2 % hostile, then 1,000 good requests from 8 clients (issue 34: throughput with 8
# clients >= 0.9x `attncap caption` over the same photos). Each run times the CLI over the photos
# before and after the server, in the same run. Appends nothing: copy the lines into bench/HISTORY.md.
# usage: bash bench/serve_load.sh [BUILD]            (default build)
#        RUNS=5 PAIRS=2 bash bench/serve_load.sh BUILD [OTHER_BIN...]   (with no OTHER_BIN: BUILD -)
#   the second form: only serve_load.py --pairs (8 clients; a CLI run and a server run over the same
#   100 photos, PAIRS times in turn, in each of RUNS rounds), for BUILD/attncap and then each OTHER_BIN
#   in every round, so that a shared machine's load falls on all alike; prints each pair's serve/CLI
#   ratio and, per binary, the median, best and worst over all its pairs.
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
bins=("$BUILD/attncap")
for b in "$@"; do [ "$b" = - ] || bins+=("$b"); done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "${RUNS:-5}"); do
  for b in "${bins[@]}"; do
    /usr/bin/python3 bench/serve_load.py --bin "$b" --pairs "${PAIRS:-2}" --pair-photos "${PAIR_PHOTOS:-100}" --clients 8 \
      $photos >"$out.one" || rc=1
    sed "s|^|$b |" "$out.one" | tee -a "$out"
  done
done
rm -f "$out.one"
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    b, j = line.split(" ", 1)
    j = json.loads(j)
    if "pair" in j:
        runs.setdefault(b, []).append(j)
for b, rs in runs.items():
    r = [x["ratio"] for x in rs]
    print("%s: serve/CLI photos/s median %.3f, best %.3f, worst %.3f over %d pairs of %d photos, 8 clients "
          "(load %.1f to %.1f)" % (b, statistics.median(r), max(r), min(r), len(r), rs[0]["photos"],
                                   min(x["load"] for x in rs), max(x["load"] for x in rs)))
PY
exit $rc
