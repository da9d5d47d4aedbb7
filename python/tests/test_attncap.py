"""The attncap Python package against the attncap CLI (issue #34 section 3): captions, attention grids,
metrics and error messages equal the CLI's; the same photo as a path, bytes and pixels gives the same
caption; failures are exceptions carrying the library's message; two captioners caption at the same
time in two threads (the GIL is released); 200 captions do not grow the process.

Run through tests/python_cli.sh (make test), which sets ATTNCAP_BIN (the CLI), ATTNCAP_LIB (the
library of the same build), ATTNCAP_ROOT (the checkout) and ATTNCAP_DATA (../shared)."""
from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import attncap

ROOT = Path(os.environ.get("ATTNCAP_ROOT", Path(__file__).resolve().parents[2]))
CLI = os.environ.get("ATTNCAP_BIN", str(ROOT / "build" / "attncap"))
MODEL = ROOT / "models" / "attncap.safetensors"
SAMPLES = sorted((ROOT / "samples").glob("*.jpg"))
DATA = os.environ.get("ATTNCAP_DATA", "")
ENCODER = Path(DATA) / "encoders" / "mobilenet_v2_1.0_224_quant.tflite" if DATA else None

no_rss_under_asan = pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                                       reason="under ASan, whose quarantine keeps freed memory, RSS says nothing")
needs_encoder = pytest.mark.skipif(ENCODER is None or not ENCODER.is_file(),
                                   reason="needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite")
ENV = dict(os.environ, ATTNCAP_ENCODER=str(ENCODER) if ENCODER else "")
if ENCODER is not None:
    os.environ["ATTNCAP_ENCODER"] = str(ENCODER)  # the library and the CLI find the same encoder


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([CLI, *args], capture_output=True, text=True, env=ENV, cwd=ROOT)
    if check and p.returncode != 0:
        raise AssertionError(f"attncap {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


@pytest.fixture(scope="module")
def cap():
    if ENCODER is None or not ENCODER.is_file():
        pytest.skip("needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite")
    with attncap.Captioner(MODEL, threads=2) as c:
        yield c


def write_png(path: Path, rgb: np.ndarray) -> None:
    """An 8-bit RGB PNG written here (zlib, no filter): its pixels are exactly rgb's."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                     chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def photo_pixels() -> np.ndarray:
    """samples/dog.jpg's pixels as PIL decodes them, or (without PIL) a made-up photo."""
    try:
        from PIL import Image
        with Image.open(SAMPLES[0]) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()
    except ImportError:
        y, x = np.mgrid[0:240, 0:320]
        rng = np.random.default_rng(7)
        img = np.stack([x * 255 // 319, y * 255 // 239, (x + y) % 256], axis=2) + rng.integers(0, 30, (240, 320, 3))
        return np.clip(img, 0, 255).astype(np.uint8)


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


# ---- the library and its version -------------------------------------------------------------------

def test_version_is_the_headers():
    header = (ROOT / "include" / "attncap" / "attncap.h").read_text()
    want = next(l.split('"')[1] for l in header.splitlines() if l.startswith("#define AC_VERSION "))
    assert attncap.__version__ == want


def test_library_not_found_is_a_clear_error(tmp_path):
    # a fresh interpreter: ATTNCAP_LIB names a missing file; importing works, using the library says where
    code = ("import attncap\ntry:\n    attncap.Captioner()\nexcept attncap.LibraryNotFoundError as e:\n"
            "    print('not found:', e)\n")
    env = dict(os.environ, ATTNCAP_LIB=str(tmp_path / "nowhere" / "libattncap.so"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("not found: libattncap.so not found") and "nowhere/libattncap.so" in p.stdout


# ---- captions and attention equal the CLI's --------------------------------------------------------

@needs_encoder
def test_captions_equal_the_clis(cap):
    out = cli("caption", "--model", str(MODEL), *map(str, SAMPLES)).stdout.splitlines()
    assert len(out) == len(SAMPLES) >= 5
    for path, line in zip(SAMPLES, out):
        f = line.split("\t")
        assert f[0] == str(path)
        r = cap.caption(path)
        assert r.text == f[1], path.name
        if r.confidence is not None:
            assert f"{r.confidence:.2f}" == f[2]


@needs_encoder
def test_attention_equals_the_clis_json(cap):
    lines = cli("caption", "--model", str(MODEL), "--json", "--attention", *map(str, SAMPLES)).stdout.splitlines()
    assert len(lines) == len(SAMPLES)
    for path, line in zip(SAMPLES, lines):
        want = json.loads(line)
        r = cap.caption(str(path))
        assert r.tokens == want["tokens"] and r.text == want["caption"]
        gh, gw = want["grid"]
        att = np.asarray(want["attention"], dtype=np.float64)
        assert r.attention.dtype == np.float32 and r.attention.shape == (len(want["tokens"]), gh, gw)
        assert att.shape == (len(want["tokens"]), gh * gw)
        np.testing.assert_allclose(r.attention.reshape(len(r.tokens), -1), att, rtol=0, atol=1e-4)
        np.testing.assert_allclose(r.attention.sum(axis=(1, 2)), 1.0, atol=1e-4)
        assert r.logprob == pytest.approx(want["logprob"], abs=1e-9)
        np.testing.assert_allclose(r.token_logprobs, want["token_logprobs"], atol=1e-4)
        if "confidence" in want:
            assert r.confidence == pytest.approx(want["confidence"], abs=1e-12)
        assert [t.word for t in r.tags] == [t["word"] for t in want.get("tags", [])]
        regions_as_the_json(r, want)
        # the result's own JSON line is the CLI's, the path aside
        assert json.loads(r.json(attention=True, image=want["image"])) == want


def regions_as_the_json(r, want: dict) -> None:
    """r's regions, attention on them and copied shares are those of the JSON line `want` (printed with
    4 decimals, 4 significant digits and 3 decimals), and copied is None where the line has none."""
    wr = want.get("regions", [])
    assert [g.label for g in r.regions] == [g["label"] for g in wr]
    for g, w in zip(r.regions, wr):
        np.testing.assert_allclose([g.score, *g.box], [w["score"], *w["box"]], rtol=0, atol=5.01e-5)
    ra = r.region_attention
    assert ra.dtype == np.float32 and ra.shape == (len(r.tokens), len(r.regions))
    if wr:
        np.testing.assert_allclose(ra, want["region_attention"], rtol=5.01e-4, atol=1e-9)
    if "copied" in want:
        assert r.copied is not None and r.copied.dtype == np.float32 and r.copied.shape == (len(r.tokens) + 1,)
        np.testing.assert_allclose(r.copied, want["copied"], rtol=0, atol=5.01e-4)
        assert np.all((r.copied >= 0) & (r.copied <= 1))
    else:
        assert r.copied is None


@needs_encoder
def test_regions_and_copied_equal_the_clis(cap):
    # The shipped model attends to the detector's objects and copies their names: result.regions,
    # region_attention and copied hold what caption --json --attention prints, searched (the search
    # while naming makes no copied account: None) and with a given caption, which copies "giraffe"
    # and "zebra".
    photos = [str(ROOT / "samples" / f) for f in ("giraffe.jpg", "horses.jpg")]
    given = "a giraffe standing next to a zebra"
    for extra, kw in (((), {}), (("--given", given), {"given": given})):
        lines = cli("caption", "--model", str(MODEL), "--json", "--attention", *extra, *photos).stdout.splitlines()
        assert len(lines) == len(photos)
        for path, line in zip(photos, lines):
            want, r = json.loads(line), cap.caption(path, **kw)
            assert r.tokens == want["tokens"] and len(r.regions) >= 1, (path, r.tokens, r.regions)
            regions_as_the_json(r, want)
    g = cap.caption(photos[0], given=given)
    assert g.copied is not None and g.copied[g.tokens.index("giraffe")] > 0.5, g.copied


@needs_encoder
def test_runners_up_equal_the_clis():
    lines = cli("caption", "--model", str(MODEL), "--nbest", "3", "--json", *map(str, SAMPLES[:3])).stdout.splitlines()
    seen = 0
    with attncap.Captioner(MODEL, threads=2, nbest=3) as c:
        for path, line in zip(SAMPLES, lines):
            want, r = json.loads(line), c.caption(path)
            assert r.text == want["caption"]
            alts = want.get("alternatives", [])
            assert [a.text for a in r.alternatives] == [a["caption"] for a in alts]
            got = [v for a in r.alternatives for v in (a.logprob, a.score)]
            assert got == pytest.approx([v for a in alts for v in (a["logprob"], a["score"])], abs=1e-12)
            seen += len(r.alternatives)
    assert seen >= 2  # dog.jpg's runners-up at least (the search may find none for a photo)


@needs_encoder
def test_given_caption_scores_as_the_search_did(cap):
    # forcing the caption the search chose gives back its words and its log-probabilities
    r = cap.caption(SAMPLES[0])
    g = cap.caption(SAMPLES[0], given=r.text)
    assert g.tokens == r.tokens and g.logprob == pytest.approx(r.logprob, abs=1e-4)
    np.testing.assert_allclose(g.attention, r.attention, atol=1e-5)
    assert cap.caption(SAMPLES[0]).text == r.text  # the captioner searches again afterwards


REGIONS_MODEL = os.environ.get("ATTNCAP_TEST_REGIONS_MODEL", "")


@pytest.mark.skipif(not REGIONS_MODEL, reason="needs ATTNCAP_TEST_REGIONS_MODEL (tests/python_cli.sh trains one "
                    "from ../shared's COCO photos and detections)")
def test_regions_model_attention_and_regions_equal_the_clis():
    # A model that attends to detected objects: its result's attention is still [words, h, w] summing
    # to 1 (each region's weight spread over its box), as caption --json --attention prints it, and
    # its regions are the CLI's.
    photos = sorted(Path(DATA, "data", "coco", "images").glob("*.jpg"))[:4]
    tiny = str(Path(DATA, "encoders", "mobilenet_v1_0.25_128_quant.tflite"))
    lines = cli("caption", "--model", REGIONS_MODEL, "--encoder", tiny, "--json", "--attention",
                *map(str, photos)).stdout.splitlines()
    assert len(lines) == len(photos)
    with attncap.Captioner(REGIONS_MODEL, threads=2, encoder=tiny) as c:
        for path, line in zip(photos, lines):
            want, r = json.loads(line), c.caption(path)
            assert r.tokens == want["tokens"]
            assert want.get("regions")
            regions_as_the_json(r, want)
            gh, gw = want["grid"]
            assert r.attention.shape == (len(r.tokens), gh, gw)
            np.testing.assert_allclose(r.attention.sum(axis=(1, 2)), 1.0, atol=1e-5)
            np.testing.assert_allclose(r.attention.reshape(len(r.tokens), -1), want["attention"], atol=1e-4)


# ---- a path, bytes and pixels ----------------------------------------------------------------------

@needs_encoder
def test_bytes_give_the_paths_caption(cap):
    for path in SAMPLES:
        a, b = cap.caption(path), cap.caption(path.read_bytes())
        assert b.text == a.text and b.image is None and a.image == str(path)
        np.testing.assert_array_equal(b.attention, a.attention)
    assert cap.caption(bytearray(SAMPLES[0].read_bytes())).text == cap.caption(SAMPLES[0]).text


@needs_encoder
def test_pixels_give_the_pngs_caption(cap, tmp_path):
    # a PNG holds the pixels exactly: the file read by the library and the array give one caption
    px = photo_pixels()
    png = tmp_path / "photo.png"
    write_png(png, px)
    a, b = cap.caption(png), cap.caption(px)
    assert b.text == a.text
    np.testing.assert_array_equal(b.attention, a.attention)
    assert cli("caption", "--model", str(MODEL), str(png)).stdout.split("\t")[1] == b.text
    # a strided view (every other column) is copied to contiguous pixels first
    half = np.ascontiguousarray(px[:, ::2])
    write_png(tmp_path / "half.png", half)
    assert cap.caption(px[:, ::2]).text == cap.caption(tmp_path / "half.png").text


@needs_encoder
def test_caption_many_equals_one_by_one(cap, tmp_path):
    bad = tmp_path / "missing.jpg"
    got = cap.caption_many([SAMPLES[0], SAMPLES[1].read_bytes(), str(bad), SAMPLES[2]])
    assert [type(x).__name__ for x in got] == ["Result", "Result", "BadImageError", "Result"]
    assert [got[0].text, got[1].text, got[3].text] == [cap.caption(p).text for p in SAMPLES[:3]]
    assert str(got[2]) == f"{bad}: no such file or directory"


# ---- overlays ---------------------------------------------------------------------------------------

@needs_encoder
def test_overlays_equal_the_clis(cap, tmp_path):
    cli("caption", "--model", str(MODEL), "--overlays", str(tmp_path / "cli"), str(SAMPLES[0]))
    files = cap.overlay(SAMPLES[0], tmp_path / "py")
    stem = SAMPLES[0].stem
    want = sorted(p.name for p in (tmp_path / "cli" / stem).glob("*.png"))
    assert sorted(Path(f).name for f in files) == want and Path(files[-1]).name == "sheet.png"
    r = cap.caption(SAMPLES[0])
    assert len(files) == len(r.tokens) + 1
    for name in want:
        assert (tmp_path / "py" / stem / name).read_bytes() == (tmp_path / "cli" / stem / name).read_bytes(), name
    # an existing folder is refused, replaced with force; a result from bytes is read again
    with pytest.raises(attncap.OutputExistsError) as e:
        cap.overlay(r, tmp_path / "py")
    assert stem in str(e.value)
    assert cap.overlay(r, tmp_path / "py", force=True) == files == r.overlays
    rb = cap.caption(SAMPLES[0].read_bytes())
    assert [Path(f).name for f in cap.overlay(rb, tmp_path / "mem")] == [Path(f).name for f in files]
    assert (tmp_path / "mem" / "photo" / "sheet.png").is_file()
    with pytest.raises(ValueError):
        cap.overlay(cap.caption(photo_pixels()), tmp_path / "px")  # pixels: kept only when asked
    kept = cap.caption(photo_pixels(), keep_photo=True)
    assert len(cap.overlay(kept, tmp_path / "px", sheet_only=True)) == 1


# ---- metrics ------------------------------------------------------------------------------------------

REFS = [
    ["a dog runs on the grass", "a brown dog running across a lawn", "The dog is running."],
    ["two cats sleep on a bed", "cats sleeping on a blanket"],
    ["a man rides a surfboard on a wave", "a surfer riding a large wave", "a person surfing"],
]
CANDS = ["a dog is running on the grass", "a cat on a bed", "a man riding a wave on a surfboard"]


def test_evaluate_equals_attncap_eval(tmp_path):
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps([{"captions": r, "prediction": c} for r, c in zip(REFS, CANDS)]))
    want = json.loads(cli("eval", "--pairs", str(pairs), "--json").stdout)
    got = attncap.evaluate(REFS, CANDS)
    assert got["images"] == want["images"] == 3
    for k in ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr-D"):
        assert got[k] == pytest.approx(want[k], rel=1e-5, abs=1e-6), k  # the CLI prints 6 digits
    by_id = attncap.evaluate({f"im{i}": r for i, r in enumerate(REFS)}, {f"im{i}": c for i, c in enumerate(CANDS)})
    assert by_id == got
    no_meteor = attncap.evaluate(REFS, CANDS, meteor=False)
    assert no_meteor["METEOR"] is None and no_meteor["CIDEr-D"] == got["CIDEr-D"]


def test_evaluation_equals_attncap_eval(tmp_path):
    # 1.6's evaluator: attncap eval's JSON, for pairs and for references with two results files together
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps([{"captions": r, "prediction": c} for r, c in zip(REFS, CANDS)]))
    want = json.loads(cli("eval", "--pairs", str(pairs), "--json", "--per-category").stdout)
    assert attncap.evaluation(pairs=str(pairs), per_category=True) == want
    refs = tmp_path / "refs.tsv"
    refs.write_text("".join(f"im{i}.jpg\t{c}\n" for i, r in enumerate(REFS) for c in r))
    shares = [tmp_path / "a.json", tmp_path / "b.json"]
    shares[0].write_text(json.dumps([{"image_id": "im0.jpg", "caption": CANDS[0]}]))
    shares[1].write_text(json.dumps([{"image_id": f"im{i}.jpg", "caption": CANDS[i]} for i in (1, 2)]))
    want = json.loads(cli("eval", "--refs", str(refs), "--results", str(shares[0]), str(shares[1]), "--json",
                          "--no-meteor").stdout)
    got = attncap.evaluation(refs=refs, results=shares, meteor=False)
    assert got == want and got["images"] == 3
    assert got["CIDEr-D"] == pytest.approx(attncap.evaluate(REFS, CANDS, meteor=False)["CIDEr-D"], abs=1e-6)


@pytest.mark.skipif(not DATA or not (Path(DATA) / "metrics" / "magic_mscoco_result.json").is_file(),
                    reason="needs ../shared/metrics/magic_mscoco_result.json")
def test_evaluation_scores_coco_captions_example_as_published():
    got = attncap.evaluation(pairs=Path(DATA) / "metrics" / "magic_mscoco_result.json", meteor=False)
    assert got["bleu_counts"]["correct"] == [26801, 9496, 2857, 902] and got["bleu_counts"]["reflen"] == 47168
    for k, v in (("BLEU-1", 0.568), ("BLEU-4", 0.129), ("ROUGE-L", 0.399), ("CIDEr-D", 0.493)):
        assert got[k] == pytest.approx(v, abs=5e-4), k


@pytest.mark.skipif(not DATA or not (Path(DATA) / "data" / "flickr8k").is_dir(), reason="needs ../shared/data/flickr8k")
def test_evaluation_reports_progress_and_training_photos(cap):
    seen, warned = [], []
    f8k = str(Path(DATA) / "data" / "flickr8k")
    got = attncap.evaluation(data=f8k, model=MODEL, split="train", limit=2, meteor=False, on_warning=warned.append,
                             on_progress=lambda done, total: seen.append((done, total)))
    assert got is not None and got["images"] == 2
    assert seen == [(0, 2), (1, 2), (2, 2)]
    assert len(warned) == 1 and "2 of the 2 photos scored" in warned[0]


def test_evaluation_errors(tmp_path):
    with pytest.raises(attncap.OptionsError, match="need exactly one of"):
        attncap.evaluation(meteor=False)
    with pytest.raises(attncap.OptionsError, match="no_such_option"):
        attncap.evaluation(no_such_option=1)
    with pytest.raises(attncap.OptionsError, match="beam"):
        attncap.evaluation(beam=0)
    refs = tmp_path / "refs.tsv"
    refs.write_text("a.jpg\ta dog\n")
    with pytest.raises(attncap.Error, match="missing.json"):
        attncap.evaluation(refs=refs, results=tmp_path / "missing.json", meteor=False)

def test_tool_ground_equals_attncap_ground():
    # 1.6's tools: ground's report is what `attncap ground` prints, a missing photo a note (a problem)
    assert {"ground", "presence", "calibrate", "tune"} <= set(attncap.tools())
    boxes = str(ROOT / "tests" / "fixtures" / "grounding" / "samples.tsv")
    want = cli("ground", "--boxes", boxes, "--root", str(ROOT / "samples"), "--model", str(MODEL), "--json",
               "--quiet").stdout.splitlines()
    seen = []
    got = attncap.tool("ground", boxes=boxes, root=ROOT / "samples", model=MODEL, json=True,
                       on_progress=lambda done, total: seen.append((done, total)))
    assert got == want and len(got) >= 3 and seen[0][0] == 0 and seen[-1][0] == seen[-1][1]
    notes = []
    lines = attncap.tool("ground", boxes="detected", photos=[ROOT / "samples" / "dog.jpg", "/nonexistent/gone.jpg"],
                         model=MODEL, on_note=lambda line, problem: notes.append((line, problem)))
    assert lines and lines[-1].startswith("all ")
    assert len(notes) == 1 and "gone.jpg" in notes[0][0] and notes[0][1] is True


def test_tool_errors():
    with pytest.raises(attncap.OptionsError, match="no_such_tool"):
        attncap.tool("no_such_tool")
    with pytest.raises(attncap.OptionsError, match="beam"):
        attncap.tool("ground", beam=0)
    with pytest.raises(attncap.OptionsError, match="boxes"):
        attncap.tool("ground")

def test_train_equals_attncap_train(tmp_path):
    # 1.4's trainer: the CLI's model byte for byte on the training fixture (training is deterministic),
    # the events in order, the options' defaults as `attncap train --help` prints them
    fx = ROOT / "tests" / "fixtures" / "train"
    flags = ["--embed", "32", "--hidden", "32", "--att", "16", "--min-count", "1", "--batch", "5", "--lr", "0.01",
             "--dropout", "0", "--lambda", "0.1", "--checkpoint-every", "0", "--epochs", "2", "--no-flip"]
    cli("train", "--data", str(fx / "captions.json"), "--features", str(fx / "features"), "--out",
        str(tmp_path / "cli.safetensors"), "--quiet", *flags)
    events = []
    last = attncap.train(str(fx / "captions.json"), str(fx / "features"), str(tmp_path / "py.safetensors"),
                         embed=32, hidden=32, att=16, min_count=1, batch=5, lr=0.01, dropout=0, **{"lambda": 0.1},
                         checkpoint_every=0, epochs=2, flip=False, on_event=events.append)
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "finished" and kinds.count("evaluation") == 2
    assert last == events[-1] and last["finish"] == "all_epochs" and last["metric"] in ("cider", "loss")
    # 1.5's reward: self-critical training's alone, so NaN on these progress and evaluation events
    assert all(math.isnan(e["reward"]) for e in events if e["kind"] in ("progress", "evaluation"))
    opts = attncap.train_options()
    assert opts["epochs"] == "16" and opts["lr"] == "0.0004" and opts["data"] is None and "pointer" in opts
    with pytest.raises(attncap.OptionsError, match="'learning_rate'"):
        attncap.train(str(fx / "captions.json"), str(fx / "features"), str(tmp_path / "x.safetensors"),
                      learning_rate=0.1)
    with pytest.raises(attncap.OptionsError, match="'batch' wants a value in 1..4096"):
        attncap.train(str(fx / "captions.json"), str(fx / "features"), str(tmp_path / "x.safetensors"), batch=0)
    assert not (tmp_path / "x.safetensors").exists()


def test_features_equal_attncap_features(tmp_path):
    # 1.4's featurizer: the CLI's cache byte for byte; a photo that cannot be read is said and counted
    enc = Path(DATA) / "encoders" / "mobilenet_v1_0.25_128_quant.tflite"
    if not enc.is_file():
        pytest.skip("needs ../shared/encoders/mobilenet_v1_0.25_128_quant.tflite")
    photos = [str(p) for p in SAMPLES]
    cli("features", "--encoder", str(enc), "--size", "128", "--fp16", "--quiet", "--out", str(tmp_path / "cli"), *photos)
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a photo")
    errors = []
    st = attncap.features(photos + [str(bad)], str(tmp_path / "py"), encoder=str(enc), size=128, fp16=True,
                          on_error=errors.append)
    assert st["photos"] == len(photos) + 1 and st["encoded"] == len(photos) and st["failed"] == 1
    assert st["grid"] == (4, 4) and st["layer"] and len(errors) == 1 and "notes.jpg" in errors[0]
    cli_files = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert cli_files == sorted(p.name for p in (tmp_path / "py").iterdir())
    for name in cli_files:
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "py" / name).read_bytes(), name
    again = attncap.features(photos, str(tmp_path / "py"), encoder=str(enc), size=128, fp16=True)
    assert again["encoded"] == 0 and again["skipped"] == len(photos)
    with pytest.raises(attncap.OptionsError, match="'resize'"):
        attncap.features(photos, str(tmp_path / "x"), resize="sideways")


def test_evaluate_identical_captions_score_bleu_one():
    got = attncap.evaluate([["a black dog runs on the grass"]], ["A black dog runs on the grass."])
    for k in ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "ROUGE-L"):
        assert got[k] == pytest.approx(1.0, abs=1e-6), k


def test_evaluate_errors():
    with pytest.raises(attncap.Error, match="no captions given"):
        attncap.evaluate([], [])
    with pytest.raises(ValueError):
        attncap.evaluate([["a"]], ["a", "b"])
    with pytest.raises(KeyError):
        attncap.evaluate({"a": ["x"]}, {"b": "x"})


# ---- precision, naming and the classifier (libattncap 1.2) ----------------------------------------------

# samples/ and ../shared's photos: on samples/ alone the int8 encoder may caption as float32 does
SETTING_PHOTOS = SAMPLES + (sorted((Path(DATA) / "images").glob("*.jpg")) if DATA else [])


def cli_captions(*args: str, env: dict | None = None) -> list:
    p = subprocess.run([CLI, "caption", "--model", str(MODEL), *args, *map(str, SETTING_PHOTOS)], capture_output=True,
                       text=True, env=dict(ENV, **(env or {})), cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return [line.split("\t")[1] for line in p.stdout.splitlines()]


@needs_encoder
def test_precision_and_naming_equal_the_clis():
    plain = cli_captions()
    record = {"threshold": 0.05, "max_drop": 5, "trust_logprob": 0}
    cases = [({"precision": "int8"}, ["--precision", "int8"], None),
             ({"tags": "auto", "naming": record}, ["--tags", "auto"], {"ATTNCAP_NAMING": json.dumps(record)}),
             ({"tags": "auto", "naming": json.dumps(record)}, ["--tags", "auto"], {"ATTNCAP_NAMING": json.dumps(record)})]
    for kwargs, flags, env in cases:
        want = cli_captions(*flags, env=env)
        assert want != plain, (flags, "the setting changes no caption of these photos: the test could not fail")
        with attncap.Captioner(MODEL, threads=2, **kwargs) as c:
            assert [c.caption(p).text for p in SETTING_PHOTOS] == want, (kwargs, flags)
    with pytest.raises(attncap.Error, match="unknown precision 'f16'"):
        attncap.Captioner(MODEL, threads=1, precision="f16")
    with pytest.raises(attncap.Error, match="bogus"):
        attncap.Captioner(MODEL, threads=1, naming={"bogus": 1})
    with pytest.raises(attncap.Error, match="JSON"):
        attncap.Captioner(MODEL, threads=1, naming="{not json")


@pytest.mark.skipif(not DATA or not (Path(DATA) / "encoders" / "imagenet_labels.txt").is_file(),
                    reason="needs ../shared/encoders (the classifier and its labels)")
def test_classifier_equals_attncap_classify():
    p = cli("classify", "--json", "--top", "7", *map(str, SAMPLES))
    # the probabilities as float32, the graph's (cJSON prints a double that rounds back to within 1 ulp)
    want = [[(t["index"], t["label"], np.float32(t["prob"])) for t in json.loads(line)["top"]]
            for line in p.stdout.splitlines()]
    with attncap.Classifier(threads=2) as c:
        got = [[(s.index, s.label, np.float32(s.prob)) for s in c.classify(photo, top=7)] for photo in SAMPLES]
        assert got == want
        assert [(s.index, np.float32(s.prob)) for s in c.classify(SAMPLES[0].read_bytes(), top=7)] == \
            [w[::2] for w in want[0]]
        with pytest.raises(attncap.BadImageError, match="no such file"):
            c.classify(ROOT / "samples" / "missing.jpg")
    with pytest.raises(attncap.Error, match="int8"):
        attncap.Classifier(precision="int8")  # the graph's softmax has no int8 kernel, as the CLI says
    with pytest.raises(attncap.Error, match="nonexistent"):
        attncap.Classifier("/nonexistent/c.tflite")


# ---- errors ---------------------------------------------------------------------------------------------

def cli_message(*args: str) -> str:
    p = cli(*args, check=False)
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1, p.stderr
    return p.stderr.strip().split(": ", 1)[1]  # "attncap caption: <the library's message>"


@needs_encoder
def test_errors_are_exceptions_with_the_librarys_message(cap, tmp_path):
    missing, text = tmp_path / "missing.jpg", tmp_path / "notes.jpg"
    text.write_text("not a photo\n")
    for path in (missing, text):
        with pytest.raises(attncap.BadImageError) as e:
            cap.caption(path)
        assert str(e.value) == cli_message("caption", "--model", str(MODEL), str(path))
        assert str(path) in str(e.value) and e.value.code == 7
    with pytest.raises(attncap.BadImageError, match="not an image"):
        cap.caption(b"plain text, not a photo")
    with pytest.raises(attncap.BadImageError, match="no bytes given"):
        cap.caption(b"")
    bad_model = tmp_path / "no.safetensors"
    with pytest.raises(attncap.Error) as e:
        attncap.Captioner(bad_model)
    assert str(e.value) == cli_message("caption", "--model", str(bad_model), str(SAMPLES[0]))
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(attncap.Error) as e:
        attncap.Captioner(junk)
    assert str(junk) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError):
        cap.caption(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError):
        cap.caption(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(TypeError):
        cap.caption(42)


@needs_encoder
def test_closed_captioner_raises():
    c = attncap.Captioner(MODEL, threads=1)
    r = c.caption(SAMPLES[0])
    c.close()
    c.close()
    with pytest.raises(attncap.Error, match="closed"):
        c.caption(SAMPLES[0])
    with pytest.raises(attncap.Error, match="closed"):
        r.json()
    assert r.text and r.attention.shape[0] == len(r.tokens)  # the result's data stays


# ---- threads and memory ---------------------------------------------------------------------------

@needs_encoder
def test_two_threads_caption_at_once():
    # The library's captioning call is timed from Python just around the foreign call. With a switch
    # interval far beyond the test's length, Python hands the GIL over only when a thread blocks or
    # releases it: if the foreign call held the GIL (ctypes.PyDLL), no other Python code, the other
    # thread's timer included, could run during it, and no two calls would overlap in time.
    from attncap import _lib
    dll = _lib.lib()
    real = dll.ac_caption_file
    spans: dict = {}

    def timed(*args):
        t0 = time.perf_counter()
        rc = real(*args)
        spans.setdefault(threading.get_ident(), []).append((t0, time.perf_counter()))
        return rc

    caps = [attncap.Captioner(MODEL, threads=1) for _ in range(2)]
    photos = [SAMPLES[i % len(SAMPLES)] for i in range(6)]
    want = [caps[0].caption(p).text for p in photos]
    texts = [[], []]
    barrier = threading.Barrier(2)

    def work(i: int) -> None:
        barrier.wait()
        texts[i].extend(caps[i].caption(p).text for p in photos)

    old = sys.getswitchinterval()
    dll.ac_caption_file = timed
    sys.setswitchinterval(100.0)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
        dll.ac_caption_file = real
        for c in caps:
            c.close()
    assert texts[0] == want and texts[1] == want
    assert len(spans) == 2
    a, b = spans.values()
    overlap = sum(max(0.0, min(a1, b1) - max(a0, b0)) for a0, a1 in a for b0, b1 in b)
    busy = min(sum(y - x for x, y in s) for s in (a, b))
    assert overlap > 0.5 * busy, f"the threads' library calls overlapped {overlap:.3f} s of {busy:.3f} s"


@needs_encoder
def test_one_captioner_shared_by_threads(cap):
    # its calls take turns (a handle serves one thread at a time); each thread gets its photos' captions
    want = {p: cap.caption(p).text for p in SAMPLES[:3]}
    got: dict = {}

    def work(i: int) -> None:
        got[i] = [cap.caption(p).text for p in SAMPLES[:3]]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] == [want[p] for p in SAMPLES[:3]] for i in range(3))


@no_rss_under_asan
@needs_encoder
def test_no_leak_over_200_captions(cap):
    px = photo_pixels()
    data = SAMPLES[0].read_bytes()
    inputs = [SAMPLES[0], data, px]
    for i in range(30):  # warm up: pools, caches and the allocator's arenas reach their size
        cap.caption(inputs[i % 3])
    before = rss_kb()
    for i in range(200):
        r = cap.caption(inputs[i % 3])
        r.json(attention=True)
    del r
    grown = rss_kb() - before
    # measured here: 40-92 kB over 200 captions; results never freed (each ~11 kB:
    # words, log-probs, the attention rows) grew it 960 kB, photos kept and never freed 259 MB
    assert grown < 512, f"RSS grew {grown} kB over 200 captions"


@no_rss_under_asan
@needs_encoder
def test_no_leak_over_captioners_opened_and_closed():
    with attncap.Captioner(MODEL, threads=1) as c:
        c.caption(SAMPLES[0])
    before = rss_kb()
    for _ in range(5):
        with attncap.Captioner(MODEL, threads=1) as c:
            c.caption(SAMPLES[0])
    grown = rss_kb() - before
    # measured: 6.2 MB over 5 (6.1 MB at the first, then flat); captioners never closed grew it
    # 99 MB each (the model and the encoder)
    assert grown < 24 * 1024, f"RSS grew {grown} kB over 5 captioners opened and closed"
