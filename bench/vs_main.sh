#!/usr/bin/env bash
# bench/vs_main.sh [REF]: this tree's `attncap caption` against a build of REF (default main), side by
# side in one run, rounds interleaved so that the machine's load hits both alike:
#   - throughput over the COCO photos of $ATTNCAP_DATA (data/coco + data/coco_extra: 408), 2 threads,
#     as shipped and with --tags off: photos/s as the CLI reports it (model loading excluded) and CPU
#     per photo; the captions of both builds must be identical;
#   - latency of one 640x480 photo (bench/latency.c, built against each tree's library).
# Prints median / best / worst per build and the ratio of the medians, with the load average.
# REF is checked out (detached) and built in ../attncap-bench-REF unless BASE_DIR names a built tree.
# env: ROUNDS (3), BENCH_RUNS (latency runs per round, 10), THIS_FLAGS (caption flags for this tree only),
# THIS_NAMING (naming settings for this tree only, as ATTNCAP_NAMING: e.g. '{"trust_logprob":0}' against a
# main from before the trust rule, so both do the same work and the captions compare). Not run by
# `make bench` (it builds a tree).
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${1:-main}
data=${ATTNCAP_DATA:-../shared}
rounds=${ROUNDS:-3}
base=${BASE_DIR:-../attncap-bench-$ref}
photos=("$data/data/coco/images" "$data/data/coco_extra/images")
for d in "${photos[@]}"; do [ -d "$d" ] || { echo "vs_main: $d not found (set ATTNCAP_DATA)"; exit 1; }; done
[ -x build/attncap ] && [ -x build/bench/latency ] || make -j2 all build/bench/latency >/dev/null
if [ ! -x "$base/build/attncap" ]; then
  [ -d "$base" ] || git worktree add --detach "$base" "$ref" >/dev/null
  cp -n models/*.tflite "$base/models/" 2>/dev/null || true
  make -C "$base" -j2 all >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# latency against the other tree's library (the public API it uses is unchanged)
libs="-lopenblas -lpng -lstb -lcjson -lstemmer -lpthread -lm"
grep -q turbojpeg "$base/Makefile" && libs="-lturbojpeg -lwebp -ltiff $libs"
grep -q ac_image_load_min "$base/include/attncap/image.h" && libs="-DAC_HAVE_IMAGE_LOAD_MIN=1 $libs" # read as its CLI reads
cc -O2 -march=native -std=c11 -D_GNU_SOURCE -I"$base/include" -I/usr/include/stb bench/latency.c \
   "$base/build/libattncap.a" $libs -o "$tmp/latency_base"
here=$(pwd)
echo "vs_main: $(git rev-parse --short HEAD) against $ref ($(git -C "$base" rev-parse --short HEAD)), $rounds rounds; $(uptime | sed 's/.*load/load/')"

# run NAME DIR TAGMODE ROUND: one throughput run, "photos/s cpu_ms" into $tmp/NAME.TAG
run() {
  local name=$1 dir=$2 tags=$3 r=$4 flag=() naming=
  [ "$name" = this ] && [ -n "${THIS_FLAGS:-}" ] && read -r -a flag <<<"$THIS_FLAGS"
  [ "$name" = this ] && naming=${THIS_NAMING:-}
  [ "$tags" = off ] && flag+=(--tags off)
  (cd "$dir" && ATTNCAP_NAMING=$naming ./build/attncap caption --quiet --verbose --threads 2 "${flag[@]}" "${photos[@]}") \
    >"$tmp/$name.$tags.$r.out" 2>"$tmp/$name.$tags.$r.err"
  sed -n 's/.* \([0-9.]*\) images\/s.*/\1/p' "$tmp/$name.$tags.$r.err" | head -1 | tr '\n' ' ' >>"$tmp/$name.$tags"
  sed -n 's/.*CPU \([0-9.]*\) ms per photo.*/\1/p' "$tmp/$name.$tags.$r.err" | head -1 >>"$tmp/$name.$tags"
}
for r in $(seq 1 "$rounds"); do
  for tags in auto off; do
    run main "$base" "$tags" "$r"
    run this "$here" "$tags" "$r"
    cmp -s "$tmp/main.$tags.$r.out" "$tmp/this.$tags.$r.out" || { echo "vs_main: the captions differ (tags $tags)"; exit 1; }
  done
  (cd "$base" && BENCH_RUNS=${BENCH_RUNS:-10} "$tmp/latency_base") | sed 's/.*best \([0-9.]*\) median \([0-9.]*\) worst \([0-9.]*\).*/\1 \2 \3/' >>"$tmp/main.lat"
  BENCH_RUNS=${BENCH_RUNS:-10} build/bench/latency | sed 's/.*best \([0-9.]*\) median \([0-9.]*\) worst \([0-9.]*\).*/\1 \2 \3/' >>"$tmp/this.lat"
done
# stats FILE COL HI: median best worst of a column (best = the highest if HI, else the lowest)
stats() {
  awk -v c="$2" '{print $c}' "$1" | sort -g | awk -v hi="$3" '{v[NR] = $1}
    END {n = NR; med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; if (hi) print med, v[n], v[1]; else print med, v[1], v[n]}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
line() { printf '%-34s %-26s %-26s %sx\n' "$@"; }
printf "%-34s %-26s %-26s %s\n" "" "main: median best worst" "this: median best worst" "ratio of medians"
for tags in auto off; do
  read -r m1 m2 m3 <<<"$(stats "$tmp/main.$tags" 1 1)"; read -r t1 t2 t3 <<<"$(stats "$tmp/this.$tags" 1 1)"
  line "photos/s, 408 photos, tags $tags" "$m1 $m2 $m3" "$t1 $t2 $t3" "$(ratio "$t1" "$m1")"
  read -r m1 m2 m3 <<<"$(stats "$tmp/main.$tags" 2 0)"; read -r t1 t2 t3 <<<"$(stats "$tmp/this.$tags" 2 0)"
  line "CPU ms per photo, tags $tags" "$m1 $m2 $m3" "$t1 $t2 $t3" "$(ratio "$m1" "$t1")"
done
# latency: the median of the rounds' medians, the best of their bests, the worst of their worsts
read -r m1 _ <<<"$(stats "$tmp/main.lat" 2 0)"; read -r t1 _ <<<"$(stats "$tmp/this.lat" 2 0)"
read -r _ m2 _ <<<"$(stats "$tmp/main.lat" 1 0)"; read -r _ t2 _ <<<"$(stats "$tmp/this.lat" 1 0)"
read -r _ _ m3 <<<"$(stats "$tmp/main.lat" 3 0)"; read -r _ _ t3 <<<"$(stats "$tmp/this.lat" 3 0)"
line "latency ms, one 640x480 photo" "$m1 $m2 $m3" "$t1 $t2 $t3" "$(ratio "$m1" "$t1")"
echo "captions identical in every round; $(uptime | sed 's/.*load/load/')"
