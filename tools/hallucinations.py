#!/usr/bin/env python3
"""Where a model's made-up objects come from: each object a caption names that no reference names
(`attncap eval --per-image`'s "hallucinated"), split by whether the detector had a region of that
category on the photo (`attncap caption --json`'s "regions") and by its score. A made-up object with a
region is the decoder saying what the detector saw (the detector wrong, or right about an object no
reference bothers to name); one without is the decoder's language alone.

Usage: tools/hallucinations.py PER_IMAGE.json CAPTIONS.jsonl [--list]
  PER_IMAGE.json  attncap eval --refs ... --results CAPTIONS.jsonl --per-image PER_IMAGE.json
  CAPTIONS.jsonl  attncap caption --json (the same captions)
  --list          also print each made-up object with its caption and regions
Standard library only."""
import json
import os
import sys
from collections import Counter, defaultdict


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__.split("\n\n")[1].strip() if "\n\n" in __doc__ else __doc__)
    per_image, captions, show = argv[1], argv[2], "--list" in argv[3:]
    try:
        rows = json.load(open(per_image))
        regions = {}
        for n, line in enumerate(open(captions), 1):
            if line.strip():
                j = json.loads(line)
                best = {}
                for r in j.get("regions", []):
                    best[r["label"]] = max(best.get(r["label"], 0.0), r["score"])
                regions[os.path.basename(j["image"])] = (j["caption"], best)
    except (OSError, ValueError, KeyError) as e:
        sys.exit("hallucinations: %s" % e)
    by_source, by_category, named = Counter(), defaultdict(Counter), 0
    for r in rows:
        key = os.path.basename(str(r["image_id"]))
        if key not in regions:
            sys.exit("hallucinations: %s: photo %s is not in %s" % (per_image, key, captions))
        caption, best = regions[key]
        named += len(r["objects"]["candidate"])
        for obj in r["objects"]["hallucinated"]:
            s = best.get(obj)
            source = "no region" if s is None else "region >= 0.5" if s >= 0.5 else "region < 0.5"
            by_source[source] += 1
            by_category[obj][source] += 1
            if show:
                print("%s\t%s\t%s\t%s" % (key, obj, "-" if s is None else "%.2f" % s, caption))
    total = sum(by_source.values())
    print("made-up objects: %d of %d named (CHAIR-i %.4f)" % (total, named, total / named if named else 0))
    for source in ("no region", "region < 0.5", "region >= 0.5"):
        print("  %-14s %4d" % (source, by_source[source]))
    print("by category (no region / < 0.5 / >= 0.5):")
    for obj, c in sorted(by_category.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        print("  %-14s %3d / %3d / %3d" % (obj, c["no region"], c["region < 0.5"], c["region >= 0.5"]))


if __name__ == "__main__":
    main(sys.argv)
