"""Captioners and their results: attncap.h's ac_captioner and ac_result for Python.

Every call into the library goes through ctypes.CDLL, which releases the GIL while the call runs: two
threads, each with its own :class:`Captioner`, caption at the same time. One captioner used from
several threads is safe too (its calls take turns: a handle serves one thread at a time)."""
from __future__ import annotations

import ctypes
import json as _json
import math
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._lib import AC_JSON_ATTENTION, AC_KEEP_PHOTO, AC_OVERLAY_FORCE, AC_OVERLAY_SHEET_ONLY, ac_err
from .errors import BadImageError, Error, from_code

__all__ = ["Captioner", "Result", "Region", "Tag", "Alternative", "Photo"]

#: What :meth:`Captioner.caption` takes: a path, an encoded photo (JPEG, PNG, WebP, TIFF ... bytes) or
#: RGB pixels (a NumPy ``uint8`` array of shape ``(height, width, 3)``, or anything ``numpy.asarray``
#: turns into one, such as a PIL RGB image).
Photo = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, np.ndarray]


@dataclass(frozen=True)
class Region:
    """A detected object the decoder attended to (models trained with detections)."""
    label: str                               #: its COCO category, "dog"
    score: float                             #: the detector's score
    box: Tuple[float, float, float, float]   #: x0, y0, x1, y1 as fractions of the photo's width and height


@dataclass(frozen=True)
class Tag:
    """A word for what the encoder's ImageNet classes see in the photo."""
    word: str                 #: "cat"
    cls: str                  #: the ImageNet class it comes from ("" when none)
    prob: float               #: its score
    precision: Optional[float]  #: how often training references named it at this score; None: unknown
    in_vocab: bool            #: the model can say it
    forced: bool              #: the search was constrained to say it
    named: bool               #: the caption names it


@dataclass(frozen=True)
class Alternative:
    """A runner-up caption (``Captioner(nbest=N)``)."""
    text: str
    logprob: float
    score: float


class Result:
    """One photo's caption, with where the model looked for each word.

    Attributes:
        text: the caption, its words joined by single spaces.
        tokens: its words.
        confidence: the calibrated probability that the caption is right; None when the model has no
            calibration.
        logprob: the sum of the words' (and <end>'s) log-probabilities; ``score`` the ranking score.
        token_logprobs: float32 ``[len(tokens) + 1]``: each word's log-probability given the words
            before it, then <end>'s (None when not known).
        attention: float32 ``[len(tokens), h, w]``: each word's weights over the encoder's grid (each
            sums to 1); with regions, each region's weight spread over the cells of its box, as the
            overlays draw it.
        regions: the detected objects the model attended to, best first ([] for a model without
            detections).
        region_attention: float32 ``[len(tokens), len(regions)]``: the weight each word gave each
            region, the same weights ``attention`` spreads over the cells of each region's box (as
            ``--json --attention`` prints "region_attention").
        copied: float32 ``[len(tokens) + 1]`` or None: a copy model's share of each word's (then
            <end>'s) probability that came from copying a region's category, 0..1; None for a model
            without copy or a photo without regions (whose JSON line has no "copied" either).
        tags, alternatives, described: the photo's tags, the runners-up, whether a description of
            the best tag replaced an unsure caption.
        image: the photo's path (None for one in memory); overlays: the files :meth:`Captioner.overlay`
            wrote for it.
    """

    text: str
    tokens: List[str]
    confidence: Optional[float]
    logprob: float
    score: float
    token_logprobs: Optional[np.ndarray]
    attention: np.ndarray
    regions: List[Region]
    region_attention: np.ndarray
    copied: Optional[np.ndarray]
    tags: List[Tag]
    alternatives: List[Alternative]
    described: bool
    image: Optional[str]
    overlays: List[str]

    def __init__(self, captioner: "Captioner", ptr: "ctypes._Pointer[_lib.ac_result]", source: Any,
                 kept_photo: bool) -> None:
        self._captioner = captioner
        self._ptr = ptr
        self._source = source          # a path or bytes: what overlay() captions again
        self._kept_photo = kept_photo  # the C result holds the photo (AC_KEEP_PHOTO)
        self._free = weakref.finalize(self, _lib.lib().ac_result_free, ptr)
        r = ptr.contents
        n, gh, gw = r.n_words, r.grid_h, r.grid_w
        self.text = _lib.text(r.text)
        self.tokens = [_lib.text(r.words[k]) for k in range(n)]
        self.confidence = None if math.isnan(r.confidence) else float(r.confidence)
        self.logprob, self.score, self.described = float(r.logprob), float(r.score), bool(r.described)
        self.token_logprobs = (np.ctypeslib.as_array(r.word_logprobs, shape=(n + 1,)).copy()
                               if r.word_logprobs else None)
        self.image = os.fsdecode(r.image) if r.image else None
        self.alternatives = [Alternative(_lib.text(a.text), a.logprob, a.score)
                             for a in r.alternatives[:r.n_alternatives]]
        self.tags = [Tag(_lib.text(t.word), _lib.text(t.cls), float(t.prob),
                         None if math.isnan(t.precision) else float(t.precision),
                         bool(t.in_vocab), bool(t.forced), bool(t.named)) for t in r.tags[:r.n_tags]]
        self.overlays = []
        self._read_regions(ptr, n)
        if n and r.attention:
            self.attention = np.ctypeslib.as_array(r.attention, shape=(n * gh * gw,)).copy().reshape(n, gh, gw)
        else:
            self.attention = np.zeros((n, gh, gw), np.float32)

    def _read_regions(self, ptr: "ctypes._Pointer[_lib.ac_result]", n: int) -> None:
        """regions, region_attention and copied from libattncap 1.3's getters; from an older library
        the regions of the JSON line (4 decimals), no attention on them, copied from the line."""
        L = _lib.lib()
        if not _lib.has("ac_result_regions"):
            line = _json.loads(self.json(attention=True))
            self.regions = [Region(x["label"], float(x["score"]), tuple(x["box"])) for x in line.get("regions", [])]
            self.region_attention = np.asarray(line.get("region_attention", np.zeros((n, 0))), np.float32)
            self.copied = np.asarray(line["copied"], np.float32) if "copied" in line else None
            return
        g = ctypes.POINTER(_lib.ac_result_region)()
        k = L.ac_result_regions(ptr, ctypes.byref(g))
        self.regions = [Region(_lib.text(x.label), float(x.score),
                               (float(x.x0), float(x.y0), float(x.x1), float(x.y1))) for x in g[:k]]
        a = ctypes.POINTER(ctypes.c_float)()
        k = L.ac_result_region_attention(ptr, ctypes.byref(a))
        self.region_attention = (np.ctypeslib.as_array(a, shape=(n * k,)).copy().reshape(n, k) if k and n and a
                                 else np.zeros((n, k), np.float32))
        c = ctypes.POINTER(ctypes.c_float)()
        k = L.ac_result_copied(ptr, ctypes.byref(c))
        self.copied = np.ctypeslib.as_array(c, shape=(k,)).copy() if k and c else None

    @property
    def grid(self) -> Tuple[int, int]:
        """The attention grid's (height, width)."""
        return self.attention.shape[1], self.attention.shape[2]

    def json(self, attention: bool = False, image: Optional[str] = None) -> str:
        """The result as the one line ``attncap caption --json`` prints (``attention``: also each word's
        weights and the grid, as ``--attention``; ``image``: the name to print, default the path)."""
        c = self._captioner
        with c._lock:
            handle = c._handle_or_raise()
            p = _lib.lib().ac_result_json(handle, self._ptr, image.encode() if image is not None else None,
                                          AC_JSON_ATTENTION if attention else 0)
        if not p:
            raise Error("result: cannot print it as JSON (out of memory)")
        try:
            return ctypes.string_at(p).decode("utf-8", "replace")
        finally:
            _lib.lib().ac_free(p)

    def __repr__(self) -> str:
        conf = "" if self.confidence is None else f", confidence={self.confidence:.3f}"
        return f"<attncap.Result {self.text!r}{conf}, attention {tuple(self.attention.shape)}>"


def _as_input(x: Photo) -> Tuple[_lib.ac_input, Any, Any]:
    """The ac_input for x, what must stay alive while it is used, and what overlay() may caption again."""
    if isinstance(x, (str, os.PathLike)):
        p = _lib.fs(x)
        return _lib.ac_input(path=p), p, os.fspath(x)
    if isinstance(x, (bytes, bytearray, memoryview)):
        b = bytes(x)
        if not b:
            raise BadImageError("photo in memory: no bytes given", 7)  # the library's words for it
        return _lib.ac_input(data=ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p), size=len(b)), b, b
    if isinstance(x, np.ndarray) or hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        a = np.ascontiguousarray(np.asarray(x))
        if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3 or not a.shape[0] or not a.shape[1]:
            raise ValueError(f"pixels: expected a uint8 array of shape (height, width, 3), got {a.dtype} "
                             f"{tuple(a.shape)}")
        rgb = a.ctypes.data_as(ctypes.POINTER(ctypes.c_ubyte))
        return _lib.ac_input(rgb=rgb, height=a.shape[0], width=a.shape[1]), a, None
    raise TypeError(f"a photo is a path, bytes or a uint8 (height, width, 3) array, not {type(x).__name__}")


class Captioner:
    """A model with its encoder, loaded once, ready to caption photos (attncap.h's ac_captioner).

    ``Captioner()`` finds the model as ``attncap caption`` does ($ATTNCAP_MODEL, else
    models/attncap.safetensors here or in the installed data folder) and, with the default options,
    captions each photo exactly as ``attncap caption`` does.

    Args:
        model: the model file (.safetensors); None searches.
        threads: threads for the CNN and the search; 0: $ATTNCAP_THREADS, else every core.
        encoder: the TFLite encoder; None: the one the model records.
        beam: beam size (1 greedy); 0 the model's. max_len: most words; 0 the model's.
        len_alpha: length normalisation; None the model's. nbest: > 1 keeps up to nbest - 1 runners-up.
        tags: "auto", "off", "word,word" (words the caption must say), or None for the model's setting.
        tag_table: the ImageNet class -> word table; None: imagenet_words.tsv beside the model.
        precision: the CNN's arithmetic, as ``attncap caption --precision``: "auto", "f32", "bf16x2" or
            "int8"; None: $ATTNCAP_PRECISION, else auto (libattncap 1.2).
        naming: a naming record (a dict, or its JSON text) laid over the model's, as ``attncap
            caption`` lays $ATTNCAP_NAMING over it: threshold, max_tags, max_drop, ... (libattncap 1.2).

    Raises :class:`attncap.Error` (a subclass per cause: NoModelError, NoEncoderError, ...) with the
    library's message. Use it as a context manager or call :meth:`close`; the GIL is released while it
    works (ctypes.CDLL), so captioners in different threads run in parallel.
    """

    def __init__(self, model: "Optional[str | os.PathLike[str]]" = None, threads: int = 0, *,
                 encoder: "Optional[str | os.PathLike[str]]" = None, beam: int = 0, max_len: int = 0,
                 len_alpha: Optional[float] = None, nbest: int = 0, tags: Optional[str] = None,
                 tag_table: "Optional[str | os.PathLike[str]]" = None, precision: Optional[str] = None,
                 naming: "Optional[str | dict]" = None) -> None:
        L = _lib.lib()
        self._lock = threading.RLock()
        self._handle: Optional[int] = None
        opts = _lib.ac_captioner_opts()
        L.ac_captioner_opts_init(ctypes.byref(opts))
        opts.threads, opts.beam, opts.max_len, opts.nbest = threads, beam, max_len, nbest
        if len_alpha is not None:
            opts.len_alpha = len_alpha
        opts.encoder = _lib.fs(encoder) if encoder is not None else None
        opts.tags = tags.encode() if tags is not None else None
        opts.tag_table = _lib.fs(tag_table) if tag_table is not None else None
        h, err = ctypes.c_void_p(), ac_err()
        _lib.check(L.ac_captioner_open(_lib.fs(model) if model is not None else None, ctypes.byref(opts),
                                       ctypes.byref(h), ctypes.byref(err)), err)
        self._handle = h.value
        self._finalizer = weakref.finalize(self, L.ac_captioner_close, h.value)
        try:
            if precision is not None:
                _lib.check(_lib.need("ac_captioner_set_precision")(h.value, precision.encode(),
                                                                   ctypes.byref(err)), err)
            if naming is not None:
                record = naming if isinstance(naming, str) else _json.dumps(naming)
                _lib.check(_lib.need("ac_captioner_set_naming_record")(h.value, record.encode(),
                                                                       ctypes.byref(err)), err)
        except BaseException:
            self.close()
            raise

    # ---- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the model and the encoder (results already made keep their data; their json() and
        overlays need the captioner open). Closing twice is fine."""
        with self._lock:
            self._finalizer()
            self._handle = None

    def __enter__(self) -> "Captioner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handle_or_raise(self) -> int:
        if self._handle is None:
            raise Error("captioner: it is closed")
        return self._handle

    # ---- the model ------------------------------------------------------------------------------
    @property
    def model_path(self) -> str:
        """Where the model was found."""
        with self._lock:
            L = _lib.lib()
            return os.fsdecode(L.ac_model_path(L.ac_captioner_model(self._handle_or_raise())))

    @property
    def vocabulary(self) -> List[str]:
        """The model's words, the special tokens (<pad>, <start>, <end>, <unk>) included."""
        with self._lock:
            L = _lib.lib()
            m = L.ac_captioner_model(self._handle_or_raise())
            return [_lib.text(L.ac_model_word(m, i)) for i in range(L.ac_model_words(m))]

    # ---- captioning -----------------------------------------------------------------------------
    def caption(self, photo: Photo, *, given: Optional[str] = None, keep_photo: bool = False) -> Result:
        """Captions one photo: a path, an encoded photo's bytes or RGB pixels (HxWx3 uint8).

        given: instead of searching, show where the model looks for each word of this caption and its
        log-probabilities. keep_photo: the result keeps the photo as read, for :meth:`overlay` (a
        result from a path or bytes is read again instead).
        Raises :class:`attncap.BadImageError` when the photo cannot be read or decoded."""
        inp, keep, source = _as_input(photo)
        flags = AC_KEEP_PHOTO if keep_photo else 0
        out, err, L = ctypes.POINTER(_lib.ac_result)(), ac_err(), _lib.lib()
        with self._lock:
            h = self._handle_or_raise()
            if given is not None:
                _lib.check(L.ac_captioner_set_given(h, given.encode(), ctypes.byref(err)), err)
            try:
                if inp.path is not None:
                    rc = L.ac_caption_file(h, inp.path, flags, ctypes.byref(out), ctypes.byref(err))
                elif inp.data is not None:
                    rc = L.ac_caption_bytes(h, keep, len(keep), flags, ctypes.byref(out), ctypes.byref(err))
                else:
                    rc = L.ac_caption_rgb(h, keep.ctypes.data, keep.shape[0], keep.shape[1], flags,
                                          ctypes.byref(out), ctypes.byref(err))
            finally:
                if given is not None:
                    L.ac_captioner_set_given(h, None, None)
        _lib.check(rc, err)
        return Result(self, out, source, keep_photo)

    def caption_many(self, photos: Sequence[Photo], *, keep_photo: bool = False) -> List[Union[Result, Error]]:
        """Captions many photos together (read, encoded and searched at once with the captioner's
        threads: the captions are :meth:`caption`'s, bit for bit). Each item is a Result, or the
        :class:`attncap.Error` saying why that photo has no caption (not raised)."""
        prepared = [_as_input(p) for p in photos]
        n = len(prepared)
        if not n:
            return []
        arr = (_lib.ac_input * n)(*[p[0] for p in prepared])
        outs, err, L = (ctypes.POINTER(_lib.ac_result) * n)(), ac_err(), _lib.lib()
        with self._lock:
            _lib.check(L.ac_caption_batch(self._handle_or_raise(), arr, n, AC_KEEP_PHOTO if keep_photo else 0,
                                          outs, ctypes.byref(err)), err)
        results: List[Union[Result, Error]] = []
        for i in range(n):
            r = outs[i]
            if r.contents.error:
                e = from_code(_lib.text(r.contents.error), r.contents.error_code)
                L.ac_result_free(r)
                results.append(e)
            else:
                results.append(Result(self, r, prepared[i][2], keep_photo))
        return results

    # ---- overlays -------------------------------------------------------------------------------
    def overlay(self, photo_or_result: Union[Result, Photo], directory: "str | os.PathLike[str]", *,
                stem: Optional[str] = None, force: bool = False, sheet_only: bool = False) -> List[str]:
        """Writes DIR/STEM/NN_<word>.png per word and DIR/STEM/sheet.png, as ``attncap caption
        --overlays DIR`` does, and returns their paths (words, then the sheet).

        photo_or_result: a photo (captioned here) or a :class:`Result` (captioned with keep_photo=True,
        or from a path or bytes, which are read again). stem: default the photo's file name without its
        extension ("photo" for one in memory). An existing DIR/STEM raises
        :class:`attncap.OutputExistsError` unless force=True; DIR/STEM appears whole or not at all."""
        if isinstance(photo_or_result, Result):
            res = photo_or_result
            if res._captioner is not self:
                raise ValueError("overlay: the result comes from another captioner")
            if not res._kept_photo:
                if res._source is None:
                    raise ValueError("overlay: the result keeps no photo; caption the pixels with keep_photo=True")
                res = self.caption(res._source, keep_photo=True)
        else:
            res = self.caption(photo_or_result, keep_photo=True)
        flags = (AC_OVERLAY_FORCE if force else 0) | (AC_OVERLAY_SHEET_ONLY if sheet_only else 0)
        err, L = ac_err(), _lib.lib()
        with self._lock:
            _lib.check(L.ac_result_write_overlays(self._handle_or_raise(), res._ptr, _lib.fs(directory),
                                                  stem.encode() if stem is not None else None, flags,
                                                  ctypes.byref(err)), err)
        r = res._ptr.contents
        files = [os.fsdecode(r.overlays[k]) for k in range(r.n_overlays)]
        res.overlays = files
        if res is not photo_or_result and isinstance(photo_or_result, Result):
            photo_or_result.overlays = files
        return files

    def __repr__(self) -> str:
        return f"<attncap.Captioner {'closed' if self._handle is None else self.model_path}>"
