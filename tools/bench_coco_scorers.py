#!/usr/bin/python3
"""Times the Python transcription of coco-caption's BLEU, ROUGE-L and CIDEr-D scorers
(tools/make_metrics_fixture.py) on an already tokenized set, as the peer of bench/eval.sh.
Input: the JSON written by `attncap eval --per-image FILE.json` (candidate + references per image).
Usage: /usr/bin/python3 tools/bench_coco_scorers.py PER_IMAGE.json
Prints one line: seconds and the three scores (which must equal ours)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_metrics_fixture as m  # noqa: E402

items = [(o["references"], o["candidate"]) for o in json.load(open(sys.argv[1]))]
t0 = time.process_time()
b, _, counts = m.bleu(items)
r = sum(m.rouge(c, refs) for refs, c in items) / len(items)
cd, _ = m.cider(items)
t1 = time.process_time()
print("python-coco-scorers cpu %.3f s  BLEU-4 %.6f ROUGE-L %.6f CIDEr-D %.6f" % (t1 - t0, b[3], r, cd))
