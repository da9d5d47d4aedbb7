"""coco-caption's metrics over captions (attncap.h's ac_evaluate), as ``attncap eval`` computes them."""
from __future__ import annotations

import ctypes
import math
from typing import Dict, List, Mapping, Optional, Sequence, Union

from . import _lib

__all__ = ["evaluate"]

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
