#!/usr/bin/env python3
"""The COCO split of the shipped model's recipe (tools/train_coco.sh): of the 408 COCO photos with
references in ../shared, the 100 of data/coco and 50 of data/coco_extra (the 50 whose file names come
first by SHA-1) are the COCO dev set; the other 258 train. Writes OUT/coco_train.tsv
(name<TAB>caption), OUT/coco_dev.json (COCO captions format) and OUT/coco_photos.txt (the paths of all
408 photos, for `attncap features --list`). Standard library only; a data-preparation step of the
recipe, not part of attncap."""
import hashlib, json, os, sys

data, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
sets = {n: json.load(open(os.path.join(data, n, "captions.json"))) for n in ("coco", "coco_extra")}
extra = sorted(sets["coco_extra"]["images"], key=lambda im: hashlib.sha1(im["file_name"].encode()).hexdigest())
dev_extra = {im["id"] for im in extra[:50]}
dev = {"images": [], "annotations": []}
train = []
photos = []
for name, d in sets.items():
    caps = {}
    for a in d["annotations"]:
        caps.setdefault(a["image_id"], []).append(a)
    for im in d["images"]:
        photos.append(os.path.join(data, name, "images", im["file_name"]))
        is_dev = name == "coco" or im["id"] in dev_extra
        if is_dev:
            dev["images"].append({"id": im["id"], "file_name": im["file_name"]})
            dev["annotations"] += [{"id": a.get("id", 0), "image_id": a["image_id"], "caption": a["caption"]} for a in caps[im["id"]]]
        else:
            train += ["%s\t%s" % (im["file_name"], " ".join(a["caption"].split())) for a in caps[im["id"]]]
open(os.path.join(out, "coco_train.tsv"), "w").write("\n".join(train) + "\n")
json.dump(dev, open(os.path.join(out, "coco_dev.json"), "w"))
open(os.path.join(out, "coco_photos.txt"), "w").write("\n".join(photos) + "\n")
print("coco split: %d dev photos, %d train photos (%d captions)" % (len(dev["images"]), len(photos) - len(dev["images"]), len(train)))
