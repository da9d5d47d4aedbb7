#!/usr/bin/env bash
# The whole caption pipeline against the build of issue #33's reference (BENCH_BASE, default 05a555b),
# side by side in one run, rounds interleaved so that the machine's load hits both alike (`make bench`):
#   - latency of one photo in process (bench/latency.c built against each tree's library, after loading,
#     BENCH_RUNS runs a round): a 12-megapixel phone photo (a COCO photo upscaled with Pillow to 3024x4032,
#     stored as 4032x3024 with EXIF orientation 6, quality 90, made once into bench/.cache) and a 640x480 one;
#   - the 12 MP photo through `attncap caption --threads 2 PHOTO`, a process of its own: the whole process
#     (model loading included) and the photo after loading (the CLI's "in X s", 10 ms steps);
#   - throughput of `attncap caption --verbose --threads 2` over the 408 COCO photos of $ATTNCAP_DATA,
#     photos/s (model loading excluded) and CPU per photo, and this tree's split per photo; and this
#     tree's with --precision int8 (the encoder's and the detector's products on integers).
# Each tree runs its own shipped model (models/*.safetensors) as it ships it: this tree's attends to
# the detector's regions (the detector runs on every photo) and copies through its pointer, the
# reference's is grid-only with no naming; the encoder is the same. Their captions differ and are not
# compared (bench/vs_main.sh compares identical work).
# The reference is checked out (detached) and built in ../attncap-bench-REF unless BASE_DIR names a built
# tree; BENCH_BASE= (empty) leaves it out. Prints median / best / worst per build, the ratio of the
# medians and the load average.
# env: ROUNDS (3), BENCH_RUNS (10), BENCH_BASE (05a555b), BASE_DIR, BUILD (build), ATTNCAP_DATA (../shared)
set -euo pipefail
cd "$(dirname "$0")/.."
data=$(cd "${ATTNCAP_DATA:-../shared}" 2>/dev/null && pwd) || { echo "pipeline: skipped (no ${ATTNCAP_DATA:-../shared}; set ATTNCAP_DATA)"; exit 0; }
rounds=${ROUNDS:-3}
runs=${BENCH_RUNS:-10}
build=${BUILD:-build}
ref=${BENCH_BASE-05a555b}
model=$(pwd)/models/attncap.safetensors
photos=("$data/data/coco/images" "$data/data/coco_extra/images")
for d in "${photos[@]}"; do [ -d "$d" ] || { echo "pipeline: skipped ($d not found; set ATTNCAP_DATA)"; exit 0; }; done
[ -f "$model" ] || { echo "pipeline: skipped (no $model)"; exit 0; }
[ -x "$build/attncap" ] && [ -x "$build/bench/latency" ] || { echo "pipeline: skipped (build $build/attncap and $build/bench/latency first)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The 12 MP photo (Pillow, from Debian's python3-pil)
big=$(pwd)/bench/.cache/photo12mp_exif6.jpg
if [ ! -f "$big" ]; then
  mkdir -p bench/.cache
  /usr/bin/python3 - "$data/data/coco/images/000000000802.jpg" "$big" <<'EOF' || { echo "pipeline: skipped (cannot make the 12 MP photo: /usr/bin/python3 with Pillow)"; exit 0; }
import os, sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
up = im.resize((3024, 4032) if im.width <= im.height else (4032, 3024), Image.LANCZOS)
exif = Image.Exif()
exif[0x0112] = 6  # stored turned a quarter counter-clockwise: the viewer turns it clockwise
up.rotate(90, expand=True).save(sys.argv[2] + ".tmp", "JPEG", quality=90, exif=exif.tobytes())
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
EOF
fi

base=
if [ -n "$ref" ]; then
  base=${BASE_DIR:-../attncap-bench-$ref}
  if [ ! -x "$base/build/attncap" ]; then
    echo "pipeline: building $ref in $base (once)"
    [ -d "$base" ] || git worktree add --detach "$base" "$ref" >/dev/null
    cp -n models/*.tflite "$base/models/" 2>/dev/null || true
    make -C "$base" -j2 all >/dev/null
  fi
  libs="-lopenblas -lpng -lstb -lcjson -lstemmer -lpthread -lm"
  extra=$(grep -q turbojpeg "$base/Makefile" && echo "-lturbojpeg -lwebp -ltiff" || true)
  # a tree with the reduced read from before its feature macro reads as its CLI does too
  grep -q ac_image_load_min "$base/include/attncap/image.h" && extra="$extra -DAC_HAVE_IMAGE_LOAD_MIN=1"
  cc -O2 -march=native -std=c11 -D_GNU_SOURCE -I"$base/include" -I/usr/include/stb bench/latency.c \
     "$base/build/libattncap.a" $extra $libs -o "$tmp/latency_base"
fi
here=$(pwd)
# the reference's own shipped model: models/attncap.safetensors, or at 05a555b attncap-flickr8k.safetensors
base_model=
if [ -n "$base" ]; then
  base_model=$(cd "$base" && pwd)/models/attncap.safetensors
  [ -f "$base_model" ] || base_model=$(ls "$(cd "$base" && pwd)"/models/*.safetensors | head -1)
fi
echo "pipeline: $(git rev-parse --short HEAD)${base:+ against $ref ($(git -C "$base" rev-parse --short HEAD))}, $rounds rounds, 2 threads; $(uptime | sed 's/.*load/load/')"

# lat NAME PHOTO TAG: one latency round, "best median worst" appended to $tmp/NAME.TAG
lat() {
  local exe=$here/$build/bench/latency dir=$here m=$model
  [ "$1" = base ] && exe=$tmp/latency_base dir=$base m=$base_model
  (cd "$dir" && BENCH_MODEL=$m BENCH_RUNS=$runs BENCH_THREADS=2 "$exe" "$2") >"$tmp/$1.$3.last"
  sed 's/.*runs: best \([0-9.]*\) median \([0-9.]*\) worst \([0-9.]*\).*/\1 \2 \3/' "$tmp/$1.$3.last" >>"$tmp/$1.$3"
  sed 's/.*CPU (all threads) best \([0-9.]*\) median \([0-9.]*\) ms.*/\1 \2/' "$tmp/$1.$3.last" >>"$tmp/$1.$3cpu"
}
# thr NAME ROUND: one throughput run, "photos/s cpu_ms" appended to $tmp/NAME.thr (NAME int8: this tree
# with --precision int8, both CNNs on integers)
thr() {
  local dir=$here exe=$here/$build/attncap m=$model flags=()
  [ "$1" = base ] && dir=$base exe=$base/build/attncap m=$base_model
  [ "$1" = int8 ] && flags=(--precision int8)
  (cd "$dir" && "$exe" caption --quiet --verbose --threads 2 --model "$m" "${flags[@]}" "${photos[@]}") >/dev/null 2>"$tmp/$1.thr.$2.err"
  sed -n 's/.* \([0-9.]*\) images\/s.*/\1/p' "$tmp/$1.thr.$2.err" | head -1 | tr '\n' ' ' >>"$tmp/$1.thr"
  sed -n 's/.*CPU \([0-9.]*\) ms per photo.*/\1/p' "$tmp/$1.thr.$2.err" | head -1 >>"$tmp/$1.thr"
}
# cli NAME: `attncap caption` on the 12 MP photo, "process_ms after_loading_ms" appended to $tmp/NAME.cli
cli() {
  local dir=$here exe=$here/$build/attncap m=$model
  [ "$1" = base ] && dir=$base exe=$base/build/attncap m=$base_model
  local t0 t1
  t0=$(date +%s%N)
  (cd "$dir" && "$exe" caption --verbose --threads 2 --model "$m" "$big") >/dev/null 2>"$tmp/$1.cli.err"
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000000 )) $(sed -n 's/.* in \([0-9.]*\) s:.*/\1/p' "$tmp/$1.cli.err" | awk '{print $1 * 1000}')" >>"$tmp/$1.cli"
}
small=$(sed -n 's/^latency: \([^ ]*\) .*/\1/p' <(ATTNCAP_DATA=$data BENCH_RUNS=1 "$build/bench/latency"))
names=(this); [ -n "$base" ] && names=(base this)
for r in $(seq 1 "$rounds"); do
  for n in "${names[@]}"; do lat "$n" "$big" big; lat "$n" "$small" small; cli "$n"; cli "$n"; thr "$n" "$r"; done
  thr int8 "$r"
done
# stats FILE COL HI: median best worst of a column (best = the highest if HI, else the lowest)
stats() {
  awk -v c="$2" '{print $c}' "$1" | sort -g | awk -v hi="$3" '{v[NR] = $1}
    END {n = NR; med = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; if (hi) print med, v[n], v[1]; else print med, v[1], v[n]}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
row() { # row LABEL FILE-SUFFIX latency|thr|cpu [THIS: the name of this tree's runs, default this]
  local t b=(- - -) col=1 hi=0 how=$3 label=$1 this=${4:-this}
  case $how in lat) col=2;; thr) col=1 hi=1;; cpu|cli2) col=2;; cli1) col=1;; esac
  if [ "$how" = lat ]; then # the median of the rounds' medians, the best of their bests, the worst of their worsts
    t="$(stats "$tmp/this.$2" 2 0 | cut -d' ' -f1) $(stats "$tmp/this.$2" 1 0 | cut -d' ' -f2) $(stats "$tmp/this.$2" 3 0 | cut -d' ' -f3)"
    [ -n "$base" ] && read -r -a b <<<"$(stats "$tmp/base.$2" 2 0 | cut -d' ' -f1) $(stats "$tmp/base.$2" 1 0 | cut -d' ' -f2) $(stats "$tmp/base.$2" 3 0 | cut -d' ' -f3)"
  else
    t=$(stats "$tmp/$this.$2" "$col" "$hi")
    [ -n "$base" ] && read -r -a b <<<"$(stats "$tmp/base.$2" "$col" "$hi")"
  fi
  local tm=${t%% *} r=-
  if [ -n "$base" ]; then if [ "$how" = thr ]; then r=$(ratio "$tm" "${b[0]}"); else r=$(ratio "${b[0]}" "$tm"); fi; fi
  printf '| %s | %s | %s | %s |\n' "$label" "$(echo "$t" | sed 's# # / #g')" "${b[0]} / ${b[1]} / ${b[2]}" "$r"
}
echo
echo "| median / best / worst | this tree | $ref | speed-up (medians) |"
echo "| --- | --- | --- | --- |"
row "latency ms, 12 MP JPEG (4032x3024, EXIF 6)" big lat
row "latency ms, 640x480 JPEG" small lat
row "CPU ms (all threads) per run, 12 MP" bigcpu cpu
row "CPU ms (all threads) per run, 640x480" smallcpu cpu
row "attncap caption 12 MP JPEG: process ms" cli cli1
row "attncap caption 12 MP JPEG: after loading ms" cli cli2
row "photos/s, 408 COCO photos" thr thr
row "CPU ms per photo, 408 COCO photos" thr cpu
row "photos/s, 408 COCO photos, --precision int8" thr thr int8
row "CPU ms per photo, 408 COCO photos, --precision int8" thr cpu int8
echo
echo "this tree, 12 MP: $(sed 's/^latency: [^ ]* //' "$tmp/this.big.last")"
[ -n "$base" ] && echo "$ref, 12 MP: $(sed 's/^latency: [^ ]* //' "$tmp/base.big.last")"
echo "this tree, 408 photos (last round): $(grep 'per photo' "$tmp/this.thr.$rounds.err" | sed 's/^ *//')"
[ -n "$base" ] && echo "$ref, 408 photos (last round): $(grep 'per photo' "$tmp/base.thr.$rounds.err" | sed 's/^ *//')"
echo "$(uptime | sed 's/.*load/load/')"
