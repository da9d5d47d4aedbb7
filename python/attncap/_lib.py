"""libattncap.so found, loaded and declared for ctypes: the core API of include/attncap/attncap.h and
nothing else (the only names the shared library exports).

The library is loaded with ctypes.CDLL, which releases the GIL for the duration of every foreign call:
other Python threads run while a photo is captioned."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_size_t, c_uint,
                    c_ubyte, c_void_p)
from pathlib import Path
from typing import List, Optional, Tuple

from . import _where
from .errors import Error, LibraryNotFoundError, from_code

# The layouts below are attncap.h's at this major version (its ABI: the SONAME libattncap.so.1).
ABI_MAJOR = 1

AC_KEEP_PHOTO = 1
AC_OVERLAY_FORCE = 1
AC_OVERLAY_SHEET_ONLY = 2
AC_JSON_ATTENTION = 1
AC_EVAL_NO_METEOR = 1


class ac_err(Structure):
    _fields_ = [("msg", c_char * 1024), ("code", c_int)]

    def raise_(self) -> None:
        raise from_code(self.msg.decode("utf-8", "replace") or "attncap: unknown error", self.code)


class ac_captioner_opts(Structure):
    _fields_ = [("encoder", c_char_p), ("threads", c_int), ("beam", c_int), ("max_len", c_int),
                ("len_alpha", c_float), ("nbest", c_int), ("tags", c_char_p), ("tag_table", c_char_p)]


class ac_alternative(Structure):
    _fields_ = [("text", c_char_p), ("logprob", c_double), ("score", c_double)]


class ac_result_tag(Structure):
    _fields_ = [("word", c_char_p), ("cls", c_char_p), ("prob", c_float), ("precision", c_float),
                ("in_vocab", c_int), ("forced", c_int), ("named", c_int)]


class ac_result(Structure):
    _fields_ = [("error", c_char_p), ("error_code", c_int), ("image", c_char_p), ("text", c_char_p),
                ("n_words", c_int), ("words", POINTER(c_char_p)), ("word_logprobs", POINTER(c_float)),
                ("logprob", c_double), ("score", c_double), ("confidence", c_double), ("described", c_int),
                ("grid_h", c_int), ("grid_w", c_int), ("attention", POINTER(c_float)),
                ("n_alternatives", c_int), ("alternatives", POINTER(ac_alternative)),
                ("n_tags", c_int), ("tags", POINTER(ac_result_tag)),
                ("n_overlays", c_int), ("overlays", POINTER(c_char_p))]


class ac_result_region(Structure):
    _fields_ = [("label", c_char_p), ("score", c_float), ("x0", c_float), ("y0", c_float), ("x1", c_float),
                ("y1", c_float)]


class ac_input(Structure):
    _fields_ = [("path", c_char_p), ("data", c_void_p), ("size", c_size_t), ("rgb", POINTER(c_ubyte)),
                ("height", c_int), ("width", c_int)]


class ac_metrics(Structure):
    _fields_ = [("n", c_int), ("bleu", c_double * 4), ("meteor", c_double), ("rouge_l", c_double),
                ("cider_d", c_double)]


class ac_classify_result(Structure):
    _fields_ = [("image", c_char_p), ("n_classes", c_int), ("probs", POINTER(c_float)), ("n_top", c_int),
                ("top", POINTER(c_int))]


_RESULT_P = POINTER(ac_result)
_ERR_P = POINTER(ac_err)

# name: (restype, argtypes)
_PROTOTYPES = {
    "ac_version": (c_char_p, []),
    "ac_free": (None, [c_void_p]),
    "ac_captioner_opts_init": (None, [POINTER(ac_captioner_opts)]),
    "ac_captioner_open": (c_int, [c_char_p, POINTER(ac_captioner_opts), POINTER(c_void_p), _ERR_P]),
    "ac_captioner_close": (None, [c_void_p]),
    "ac_captioner_model": (c_void_p, [c_void_p]),
    "ac_captioner_set_given": (c_int, [c_void_p, c_char_p, _ERR_P]),
    "ac_model_path": (c_char_p, [c_void_p]),
    "ac_model_words": (c_int, [c_void_p]),
    "ac_model_word": (c_char_p, [c_void_p, c_int]),
    "ac_caption_file": (c_int, [c_void_p, c_char_p, c_uint, POINTER(_RESULT_P), _ERR_P]),
    "ac_caption_bytes": (c_int, [c_void_p, c_char_p, c_size_t, c_uint, POINTER(_RESULT_P), _ERR_P]),
    "ac_caption_rgb": (c_int, [c_void_p, c_void_p, c_int, c_int, c_uint, POINTER(_RESULT_P), _ERR_P]),
    "ac_caption_batch": (c_int, [c_void_p, POINTER(ac_input), c_int, c_uint, POINTER(_RESULT_P), _ERR_P]),
    "ac_result_free": (None, [_RESULT_P]),
    "ac_result_write_overlays": (c_int, [c_void_p, _RESULT_P, c_char_p, c_char_p, c_uint, _ERR_P]),
    "ac_result_json": (c_void_p, [c_void_p, _RESULT_P, c_char_p, c_uint]),
    "ac_evaluate": (c_int, [c_int, POINTER(c_char_p), POINTER(POINTER(c_char_p)), POINTER(c_int), c_uint,
                            POINTER(ac_metrics), _ERR_P]),
}

# Those 1.2 added (version node ATTNCAP_1.2): declared when the library has them; need() says which
# release a missing one wants, so a 1.1 library still captions.
_PROTOTYPES_1_2 = {
    "ac_captioner_set_precision": (c_int, [c_void_p, c_char_p, _ERR_P]),
    "ac_captioner_set_naming_record": (c_int, [c_void_p, c_char_p, _ERR_P]),
    "ac_classifier_open": (c_int, [c_char_p, c_char_p, c_int, POINTER(c_void_p), _ERR_P]),
    "ac_classifier_close": (None, [c_void_p]),
    "ac_classifier_label": (c_char_p, [c_void_p, c_int]),
    "ac_classifier_set_precision": (c_int, [c_void_p, c_char_p, _ERR_P]),
    "ac_classify": (c_int, [c_void_p, POINTER(ac_input), c_int, POINTER(POINTER(ac_classify_result)), _ERR_P]),
    "ac_classify_result_free": (None, [POINTER(ac_classify_result)]),
}

# Those 1.3 added (version node ATTNCAP_1.3) that the package uses: a result's regions, the attention on
# them and the copied shares; declared when the library has them (has() says whether it does).
_PROTOTYPES_1_3 = {
    "ac_result_regions": (c_int, [_RESULT_P, POINTER(POINTER(ac_result_region))]),
    "ac_result_region_attention": (c_int, [_RESULT_P, POINTER(POINTER(c_float))]),
    "ac_result_copied": (c_int, [_RESULT_P, POINTER(POINTER(c_float))]),
}


class ac_train_event(Structure):
    _fields_ = [("kind", c_int), ("captions", c_int), ("flipped", c_int), ("text_captions", c_int),
                ("text_batch", c_int), ("val_photos", c_int), ("vocab", c_int), ("grouped", c_int),
                ("mapped_features", c_int), ("photos", c_int), ("missing_photos", c_int), ("held_out", c_int),
                ("params", c_size_t), ("epoch", c_int), ("epochs", c_int), ("pos", c_int), ("steps", c_int),
                ("loss", c_double), ("text_loss", c_double), ("tok_per_s", c_double), ("seconds", c_double),
                ("step", ctypes.c_long), ("epoch_frac", c_double), ("train_loss", c_double), ("val_loss", c_double),
                ("bleu4", c_double), ("cider", c_double), ("lr", c_double), ("minutes", c_double),
                ("window_tok_per_s", c_double), ("best", c_int), ("stopping", c_int), ("note", c_char_p),
                ("finish", c_int), ("best_step", ctypes.c_long), ("best_score", c_double), ("metric", c_char_p),
                ("reward", c_double)]  # since 1.5: read only from a library that has it (train.py)


TRAIN_FN = ctypes.CFUNCTYPE(None, POINTER(ac_train_event), c_void_p)

class ac_featurizer_event(Structure):
    _fields_ = [("done", c_int), ("total", c_int), ("error", c_char_p)]


class ac_featurizer_stats(Structure):
    _fields_ = [("photos", c_int), ("encoded", c_int), ("skipped", c_int), ("failed", c_int), ("shards", c_int),
                ("inputs", c_int), ("grid_h", c_int), ("grid_w", c_int), ("dim", c_int), ("shard_index", c_int),
                ("shard_count", c_int)]


FEATURIZER_FN = ctypes.CFUNCTYPE(None, POINTER(ac_featurizer_event), c_void_p)

# Those 1.4 added (version node ATTNCAP_1.4): the trainer and the featurizer.
_PROTOTYPES_1_4 = {
    "ac_trainer_open": (c_int, [POINTER(c_void_p), _ERR_P]),
    "ac_trainer_close": (None, [c_void_p]),
    "ac_trainer_set": (c_int, [c_void_p, c_char_p, c_char_p, _ERR_P]),
    "ac_trainer_get": (c_char_p, [c_void_p, c_char_p]),
    "ac_trainer_option": (c_char_p, [c_int, POINTER(c_int)]),
    "ac_trainer_run": (c_int, [c_void_p, TRAIN_FN, c_void_p, _ERR_P]),
    "ac_featurizer_open": (c_int, [POINTER(c_void_p), _ERR_P]),
    "ac_featurizer_close": (None, [c_void_p]),
    "ac_featurizer_set": (c_int, [c_void_p, c_char_p, c_char_p, _ERR_P]),
    "ac_featurizer_get": (c_char_p, [c_void_p, c_char_p]),
    "ac_featurizer_option": (c_char_p, [c_int, POINTER(c_int)]),
    "ac_featurizer_run": (c_int, [c_void_p, c_char_p, POINTER(c_char_p), c_int, FEATURIZER_FN, c_void_p,
                                  POINTER(ac_featurizer_stats), _ERR_P]),
}


class ac_eval_event(Structure):
    _fields_ = [("done", c_int), ("total", c_int), ("warning", c_char_p)]


EVAL_FN = ctypes.CFUNCTYPE(None, POINTER(ac_eval_event), c_void_p)

# Those 1.6 added (version node ATTNCAP_1.6): the evaluator.
_PROTOTYPES_1_6 = {
    "ac_evaluator_open": (c_int, [POINTER(c_void_p), _ERR_P]),
    "ac_evaluator_close": (None, [c_void_p]),
    "ac_evaluator_set": (c_int, [c_void_p, c_char_p, c_char_p, _ERR_P]),
    "ac_evaluator_get": (c_char_p, [c_void_p, c_char_p]),
    "ac_evaluator_option": (c_char_p, [c_int, POINTER(c_int)]),
    "ac_evaluator_run": (c_int, [c_void_p, EVAL_FN, c_void_p, _ERR_P]),
    "ac_evaluator_images": (c_int, [c_void_p]),
    "ac_evaluator_metrics": (c_int, [c_void_p, POINTER(ac_metrics)]),
    "ac_evaluator_json": (c_void_p, [c_void_p, c_uint]),
    "ac_evaluator_text": (c_void_p, [c_void_p, c_uint]),
}
AC_EVAL_PER_CATEGORY = 2


class ac_tool_event(Structure):
    _fields_ = [("done", c_int), ("total", c_int), ("line", c_char_p), ("note", c_char_p), ("problem", c_int),
                ("status", c_char_p)]


TOOL_FN = ctypes.CFUNCTYPE(None, POINTER(ac_tool_event), c_void_p)
_PROTOTYPES_1_6.update({
    "ac_tool_name": (c_char_p, [c_int]),
    "ac_tool_open": (c_int, [c_char_p, POINTER(c_void_p), _ERR_P]),
    "ac_tool_close": (None, [c_void_p]),
    "ac_tool_set": (c_int, [c_void_p, c_char_p, c_char_p, _ERR_P]),
    "ac_tool_get": (c_char_p, [c_void_p, c_char_p]),
    "ac_tool_option": (c_char_p, [c_void_p, c_int, POINTER(c_int)]),
    "ac_tool_run": (c_int, [c_void_p, TOOL_FN, c_void_p, _ERR_P]),
})


def _checkout_of_package() -> Optional[Path]:
    """The repository this package's source sits in (python/attncap/ of a checkout), if it does."""
    root = Path(__file__).resolve().parent.parent.parent
    return root if (root / "include" / "attncap" / "attncap.h").is_file() else None


def library_candidates() -> List[Tuple[str, str]]:
    """Where libattncap is looked for, in order, as (why, path or name) pairs:
    $ATTNCAP_LIB alone when it is set; else the library `make install` recorded beside this package;
    ctypes.util.find_library("attncap") (the system's library path); the build/ folder of the checkout
    this package runs from (or was built from by pip)."""
    env = os.environ.get("ATTNCAP_LIB")
    if env:
        return [("$ATTNCAP_LIB", env)]
    out: List[Tuple[str, str]] = []
    if _where.LIBRARY:
        out.append(("recorded by make install", _where.LIBRARY))
    found = ctypes.util.find_library("attncap")
    if found:
        out.append(("the system's library path", found))
    for why, root in (("this checkout", _checkout_of_package()),
                      ("the checkout pip built from", Path(_where.CHECKOUT) if _where.CHECKOUT else None)):
        if root is not None:
            out.append(("build/ of " + why, str(root / "build" / "libattncap.so")))
    return out


class _Library:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dll: Optional[ctypes.CDLL] = None
        self.path: Optional[str] = None

    def get(self) -> ctypes.CDLL:
        dll = self._dll
        if dll is not None:
            return dll
        with self._lock:
            if self._dll is None:
                self._dll, self.path = _load()
            return self._dll


def _load() -> Tuple[ctypes.CDLL, str]:
    tried = []
    for why, path in library_candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} ({why}): no such file")
            continue
        try:
            dll = ctypes.CDLL(path)  # CDLL: the GIL is released during each call
        except OSError as e:
            tried.append(f"{path} ({why}): {e}")
            continue
        missing = [n for n in _PROTOTYPES if not hasattr(dll, n)]
        if missing:
            tried.append(f"{path} ({why}): not attncap's core library (no {missing[0]})")
            continue
        for name, (res, args) in (list(_PROTOTYPES.items()) + list(_PROTOTYPES_1_2.items()) +
                                  list(_PROTOTYPES_1_3.items()) + list(_PROTOTYPES_1_4.items()) +
                                  list(_PROTOTYPES_1_6.items())):
            if hasattr(dll, name):
                f = getattr(dll, name)
                f.restype, f.argtypes = res, args
        version = dll.ac_version().decode()
        if int(version.split(".")[0]) != ABI_MAJOR:
            raise LibraryNotFoundError(
                f"{path}: libattncap {version}, this package speaks the ABI of {ABI_MAJOR}.x "
                "(install the package of the same release)")
        return dll, path
    if not tried:
        tried.append("no candidate: set ATTNCAP_LIB, run `make install`, or `make shared` in a checkout")
    raise LibraryNotFoundError("libattncap.so not found; tried: " + "; ".join(tried))


LIB = _Library()


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use; :class:`LibraryNotFoundError` when it cannot be)."""
    return LIB.get()


def need(name: str):  # type: ignore[no-untyped-def]
    """The loaded library's 1.2 function `name` (:class:`Error` when the library is older)."""
    dll = lib()
    if not hasattr(dll, name):
        raise Error(f"{LIB.path}: libattncap {dll.ac_version().decode()} has no {name} (1.2 added it)")
    return getattr(dll, name)


def version() -> "tuple[int, int]":
    """The loaded library's (major, minor) version."""
    major, minor = lib().ac_version().decode().split(".")[:2]
    return int(major), int(minor)


def has(name: str) -> bool:
    """Whether the loaded library has function `name` (one a later release added)."""
    return hasattr(lib(), name)


def check(rc: int, err: ac_err) -> None:
    """Raises the error an ``ac_*`` call reported by returning non-zero."""
    if rc != 0:
        err.raise_()


def fs(path: "os.PathLike[str] | str | bytes") -> bytes:
    """A path as the C library takes it (the file system's bytes)."""
    return os.fsencode(path)


def text(b: Optional[bytes]) -> str:
    return b.decode("utf-8", "replace") if b is not None else ""


__all__ = ["lib", "library_candidates", "check", "Error"]
