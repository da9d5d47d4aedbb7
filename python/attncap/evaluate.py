"""coco-caption's metrics over captions (attncap.h's ac_evaluate), as ``attncap eval`` computes them, and
whole evaluations as ``attncap eval`` runs them (its evaluator, 1.6)."""
from __future__ import annotations

import ctypes
import json
import math
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _lib

__all__ = ["evaluate", "evaluation"]

References = Union[Sequence[Union[str, Sequence[str]]], Mapping[object, Union[str, Sequence[str]]]]
Candidates = Union[Sequence[str], Mapping[object, str]]


def _refs(r: Union[str, Sequence[str]]) -> List[str]:
    return [r] if isinstance(r, str) else list(r)


def evaluate(references: References, candidates: Candidates, *, meteor: bool = True) -> Dict[str, Optional[float]]:
    """Scores candidate captions against reference captions exactly as coco-caption does (PTB
    tokenization: lowercased, punctuation removed; then BLEU-1..4, METEOR, ROUGE-L, CIDEr-D), as
    ``attncap eval --pairs`` prints them.

    references, candidates: either aligned sequences (``references[i]``, a list of reference captions
    or one caption, for ``candidates[i]``), or mappings from the same image ids (every candidate's id
    must have references; references of images without a candidate are not scored, as coco-caption
    scores the images of the results). meteor=False skips METEOR (the slowest; needs WordNet).

    Returns ``{"BLEU-1": .., "BLEU-2": .., "BLEU-3": .., "BLEU-4": .., "METEOR": .. (None when skipped),
    "ROUGE-L": .., "CIDEr-D": .., "images": n}``. Raises :class:`attncap.Error` with the library's
    message (e.g. no captions given)."""
    if isinstance(candidates, Mapping):
        if not isinstance(references, Mapping):
            raise TypeError("evaluate: candidates by image id need references by image id (a mapping)")
        missing = [k for k in candidates if k not in references]
        if missing:
            raise KeyError(f"evaluate: image {missing[0]!r} has a candidate but no references")
        cands = [candidates[k] for k in candidates]
        refs = [_refs(references[k]) for k in candidates]
    else:
        if isinstance(references, Mapping):
            raise TypeError("evaluate: references by image id need candidates by image id (a mapping)")
        cands, refs = list(candidates), [_refs(r) for r in references]
        if len(cands) != len(refs):
            raise ValueError(f"evaluate: {len(cands)} candidates but {len(refs)} reference lists")
    for c in cands:
        if not isinstance(c, str):
            raise TypeError(f"evaluate: a candidate caption is a str, not {type(c).__name__}")
    n = len(cands)
    c_cands = (ctypes.c_char_p * max(n, 1))(*[c.encode() for c in cands])
    rows = [(ctypes.c_char_p * max(len(r), 1))(*[s.encode() for s in r]) for r in refs]
    c_refs = (ctypes.POINTER(ctypes.c_char_p) * max(n, 1))(
        *[ctypes.cast(row, ctypes.POINTER(ctypes.c_char_p)) for row in rows])
    c_nref = (ctypes.c_int * max(n, 1))(*[len(r) for r in refs])
    out, err = _lib.ac_metrics(), _lib.ac_err()
    _lib.check(_lib.lib().ac_evaluate(n, c_cands, c_refs, c_nref, 0 if meteor else _lib.AC_EVAL_NO_METEOR,
                                      ctypes.byref(out), ctypes.byref(err)), err)
    scores: Dict[str, Optional[float]] = {f"BLEU-{k + 1}": out.bleu[k] for k in range(4)}
    scores["METEOR"] = None if not meteor or math.isnan(out.meteor) else out.meteor
    scores["ROUGE-L"], scores["CIDEr-D"] = out.rouge_l, out.cider_d
    scores["images"] = out.n
    return scores


def evaluation(*, on_progress: Optional[Callable[[int, int], None]] = None,
               on_warning: Optional[Callable[[str], None]] = None, per_category: bool = False,
               **options: Any) -> Optional[Dict[str, Any]]:
    """Runs an evaluation as ``attncap eval`` does, its flags as keywords without the dashes: what is
    scored is ``refs=`` with ``results=`` (a file, or a list of files scored together), ``pairs=``, or
    ``data=`` captioned first (``model=``, ``split="val"``, ``limit=``, ``beam=``, ``features=``...); beside
    them ``meteor=False``, ``novel_from=``, ``per_image=``, ``results_out=``, ``report=``, ``compare=``
    (``attncap eval --help``). ``on_progress(done, total)`` as photos are captioned, ``on_warning(line)``
    for photos the model was trained on. Returns the scores as ``attncap eval --json`` prints them
    (``per_category``: with each category's counts), or None when this task's ``shard`` share is empty.
    Raises :class:`attncap.OptionsError` for options that are unknown, out of range or do not go
    together, :class:`attncap.Error` for anything else."""
    dll = _lib.lib()
    handle, err = ctypes.c_void_p(), _lib.ac_err()
    _lib.check(_lib.need("ac_evaluator_open")(ctypes.byref(handle), ctypes.byref(err)), err)

    def relay(ev_p: Any, _user: Any) -> None:
        ev = ev_p.contents
        if ev.warning is not None:
            if on_warning is not None:
                on_warning(ev.warning.decode("utf-8", "replace"))
        elif on_progress is not None:
            on_progress(ev.done, ev.total)

    try:
        for key, value in options.items():
            values = value if key == "results" and not isinstance(value, (str, bytes, os.PathLike)) else [value]
            for v in values:
                text = ("1" if v else "0") if isinstance(v, bool) else v if isinstance(v, (bytes, os.PathLike)) else str(v)
                _lib.check(dll.ac_evaluator_set(handle, key.encode(), _lib.fs(text), ctypes.byref(err)), err)
        callback = _lib.EVAL_FN(relay)
        _lib.check(dll.ac_evaluator_run(handle, callback, None, ctypes.byref(err)), err)
        if dll.ac_evaluator_images(handle) == 0:
            return None
        p = dll.ac_evaluator_json(handle, _lib.AC_EVAL_PER_CATEGORY if per_category else 0)
        if not p:
            raise MemoryError("attncap: out of memory")
        try:
            scores: Dict[str, Any] = json.loads(ctypes.string_at(p).decode())
        finally:
            dll.ac_free(p)
        return scores
    finally:
        dll.ac_evaluator_close(handle)
