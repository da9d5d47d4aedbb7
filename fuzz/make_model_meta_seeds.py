"""fuzz/make_model_meta_seeds.py: the seed corpus of the `model_meta` fuzz target (fuzz/corpus/model_meta/):
record lists (one selector byte, the key's index in fuzz_model_meta.c's KEYS, then the value and a NUL)
that edit its tiny model's metadata: every key a model file may hold, valid (as the shipped model's,
for an 8-word vocabulary), one key at a time, and a few near misses. python3 fuzz/make_model_meta_seeds.py"""
import os
import sys

KEYS = ["format", "config", "vocab", "encoder", "training", "vocab_counts", "decode", "tag_precision", "naming",
        "confidence", "training_photos", "x_unknown"]


def fnv_low32(name):
    h = 1469598103934665603
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    return h & 0xffffffff


hashes = "".join(f"{h:08x}" for h in sorted({fnv_low32(n) for n in ("photo00.jpg", "photo01.jpg", "x.jpg")}))
VALID = {
    "training": '{"step":12,"epoch":2.000,"val_loss":3.0,"beam":3,"batch":64,"lr":0.0002}',
    "vocab_counts": '{"paired":[0,0,0,1,5,3,2,1]}',
    "decode": '{"beam":3,"len_alpha":0.4,"max_len":20,"chosen_by":"bleu4","repeatable":["a","on"]}',
    "tag_precision": '{"a":-0.91,"b":0.99,"lambda":1,"n":20,"words":{"dog":[2,1,0.07,0.88],"grass":[15,3,0.17,0.55]}}',
    "naming": '{"threshold":0.2,"max_tags":2,"max_drop":1.0,"absent":0.2,"absent_object":0.01,"trust_logprob":-1.035,'
              '"presence_absent":0.1,"presence_ratio":1,"trust_seen":300,"rare_max_drop":1.5,"tag_objects_only":1,'
              '"tag_min_precision":0.15}',
    "confidence": '{"a":1.1782957427924805,"b":3.0774546872016186,"n":450}',
    "training_photos": '{"hash":"fnv1a64-low32 of the file name","n":3,"hashes":"%s"}' % hashes,
}


def rec(key, value):
    return bytes([KEYS.index(key)]) + value.encode() + b"\0"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "model_meta")
    os.makedirs(out, exist_ok=True)
    seeds = {"base": b"", "all_valid": b"".join(rec(k, v) for k, v in VALID.items())}
    for k, v in VALID.items():
        seeds[f"only_{k}"] = rec(k, v)
    seeds["config_transformer"] = rec("config", '{"vocab":8,"embed":4,"hidden":8,"att":4,"dim":3,"n_ann":4,"grid_h":2,'
                                                '"grid_w":2,"dropout":0,"lambda":0,"decoder":"transformer","heads":2,"layers":1}')
    seeds["config_hard_regions"] = rec("config", '{"vocab":8,"embed":4,"hidden":4,"att":4,"dim":3,"n_ann":4,"grid_h":2,'
                                                 '"grid_w":2,"dropout":0,"lambda":1,"attention_mode":"hard","regions":2,'
                                                 '"region_scale":1,"region_min_score":0.1}')
    seeds["naming_out_of_range"] = rec("naming", '{"threshold":2,"max_tags":99}')
    seeds["decode_bad_word"] = rec("decode", '{"beam":0,"repeatable":["zebra"]}')
    tp = '{"hash":"fnv1a64-low32 of the file name","n":%d,"hashes":"%s"}'
    seeds["training_photos_unsorted"] = rec("training_photos", tp % (3, hashes[8:16] + hashes[:8] + hashes[16:]))
    seeds["training_photos_n_wrong"] = rec("training_photos", tp % (4, hashes))
    seeds["training_photos_space_hex"] = rec("training_photos", tp % (3, " " + hashes[1:]))
    seeds["training_photos_extra_key"] = rec("training_photos", tp[:-1] % (3, hashes) + ',"names":["x.jpg"]}')
    seeds["unknown_key"] = rec("x_unknown", "1")
    seeds["no_vocab"] = bytes([12 + KEYS.index("vocab")]) + b"\0"
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
