#!/usr/bin/env bash
# tools/imagenet_words: the WordNet walk against Debian's WordNet and the ../shared caption corpora
# gives the expected words for known classes (Egyptian cat -> cat, golden retriever -> dog, school bus
# -> bus, hotdog -> hot dog, the bird kite -> bird; the walk keeps an object: toilet seat stays toilet
# seat, not seat, and a moped may become the "motorcycle, bike" synset ...), regenerates the committed models/imagenet_words.tsv exactly (the
# table is not stale), and refuses bad input with one line and no output file.
. "$(dirname "$0")/lib.sh"
TOOL="$(dirname "$A")/tools/imagenet_words"
WN=/usr/share/wordnet
ROOT=${ATTNCAP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}

corpora() {
  echo "$DATA/data/text/flickr30k_captions.tsv $DATA/data/text/coco_captions.tsv $DATA/data/flickr8k" \
       "$DATA/data/coco/captions.json $DATA/data/coco_extra/captions.json $DATA/data/flickr30k/captions.tsv"
}

t_begin known_classes
if [ ! -e $WN/data.noun ]; then t_skip "needs Debian's wordnet-base ($WN)"
elif need_data encoders/imagenet_synsets.txt && need_data data/text/coco_captions.tsv && need_data data/flickr8k/Flickr8k.token.txt; then
  # shellcheck disable=SC2046
  "$TOOL" --synsets "$DATA/encoders/imagenet_synsets.txt" --wordnet $WN --out "$T/words.tsv" $(corpora) 2>"$T/err"; rc=$?
  got=$(awk -F'\t' '$1==22||$1==286||$1==208||$1==780||$1==935||$1==340||$1==282||$1==964||$1==621||$1==341||$1==89||$1==862||$1==666 {printf "%s=%s;", $1, $4}' "$T/words.tsv" 2>/dev/null)
  want="22=bird;89=bird;208=dog;282=cat;286=cat;340=horse;341=zebra;621=laptop;666=bike;780=bus;862=toilet seat;935=hot dog;964=pizza;"
  if [ $rc -ne 0 ]; then t_fail "exit $rc: $(head -2 "$T/err")"
  elif [ "$got" != "$want" ]; then t_fail "got $got"
  elif ! grep -qP '^286\tn02124075\tEgyptian cat\tcat\t[0-9]+\tcat\|cats\t0:egyptian cat=0 1:house cat=[0-9]+ ' "$T/words.tsv"; then
    t_fail "row 286: $(grep -P '^286\t' "$T/words.tsv" | cut -c1-200)"
  elif ! grep -qP '^935\t[^\t]*\t[^\t]*\thot dog\t[0-9]+\thot dog\|hot dogs\|' "$T/words.tsv"; then t_fail "row 935 forms"
  else t_ok; fi
fi

t_begin committed_table_current
if [ ! -s "$T/words.tsv" ]; then t_skip "needs the table generated above"
elif cmp -s "$T/words.tsv" "$ROOT/models/imagenet_words.tsv"; then t_ok
else t_fail "models/imagenet_words.tsv differs from what the tool writes now: run make imagenet-words"; fi

t_begin bad_input
printf 'background\nxyz\tnot a synset\n' >"$T/bad_synsets.txt"
ok=1
expect_error "missing synsets" "$TOOL" --synsets "$T/none.txt" --wordnet $WN --out "$T/o1.tsv" "$T/c.tsv" || ok=0
[ $ok = 1 ] && { expect_error "bad synset id" "$TOOL" --synsets "$T/bad_synsets.txt" --wordnet $WN --out "$T/o2.tsv" "$T/c.tsv" || ok=0; }
[ $ok = 1 ] && { expect_error "missing wordnet" "$TOOL" --synsets "$T/bad_synsets.txt" --wordnet "$T/nown" --out "$T/o3.tsv" "$T/c.tsv" || ok=0; }
if [ $ok = 1 ] && [ -e $WN/data.noun ]; then
  printf 'background\nn99999999\tno such synset\n' >"$T/missing_synset.txt"
  printf 'a\ta cat\n' >"$T/c.tsv"
  expect_error "synset not in WordNet" "$TOOL" --synsets "$T/missing_synset.txt" --wordnet $WN --out "$T/o4.tsv" "$T/c.tsv" || ok=0
fi
if [ $ok = 1 ]; then
  if ls "$T"/o[1-4].tsv* >/dev/null 2>&1; then t_fail "output written despite the error"; else t_ok; fi
fi
t_end
