#!/usr/bin/env bash
# attncap serve under load (bench/serve_load.py) over the 408 shared COCO photos: 5,000 requests from
# 32 clients with 2 % hostile, then 1,000 good requests from 8 clients (issue 34: throughput with 8
# clients >= 0.9x `attncap caption` over the same photos). Each run times the CLI over the photos
# first, in the same run. Appends nothing: copy the lines into bench/HISTORY.md.
# usage: bash bench/serve_load.sh [BUILD]   (default build)
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SHARED=${ATTNCAP_DATA:-../shared}
photos=$(ls "$SHARED"/data/coco*/images/*.jpg 2>/dev/null)
[ -n "$photos" ] || { echo "serve_load: no photos in $SHARED/data/coco*/images: skipped"; exit 0; }
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(echo "$photos" | wc -l) photos"
rc=0
/usr/bin/python3 bench/serve_load.py --bin "$BUILD/attncap" --requests 5000 --clients 32 --hostile 0.02 $photos || rc=1
/usr/bin/python3 bench/serve_load.py --bin "$BUILD/attncap" --requests 1000 --clients 8 --hostile 0 $photos || rc=1
exit $rc
