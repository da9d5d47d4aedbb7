"""Training a model on captioned photos (attncap.h's featurizer and trainer, 1.4), as ``attncap features``
and ``attncap train`` do."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _lib

__all__ = ["features", "train", "train_options"]

_KINDS = ["start", "epoch", "progress", "validating", "evaluation", "resumed", "finished"]
_FINISH = ["all_epochs", "early_stop", "max_steps", "was_finished"]
# What each kind of event carries (attncap.h's ac_train_event), besides "kind".
_FIELDS = {
    "start": ["captions", "flipped", "text_captions", "text_batch", "val_photos", "vocab", "grouped",
              "mapped_features", "photos", "missing_photos", "held_out", "params"],
    "epoch": ["epoch", "epochs", "pos", "steps"],
    "progress": ["epoch", "epochs", "pos", "steps", "loss", "text_loss", "tok_per_s", "seconds"],
    "validating": [],
    "evaluation": ["step", "epoch_frac", "train_loss", "val_loss", "bleu4", "cider", "lr", "minutes",
                   "window_tok_per_s", "best", "stopping"],
    "resumed": ["step", "epoch", "pos", "steps", "note"],
    "finished": ["finish", "best_step", "best_score", "metric", "step", "epoch", "epochs", "stopping"],
}


def _event(ev: "_lib.ac_train_event") -> Dict[str, Any]:
    kind = _KINDS[ev.kind] if 0 <= ev.kind < len(_KINDS) else str(ev.kind)
    out: Dict[str, Any] = {"kind": kind}
    fields = _FIELDS.get(kind, [])
    if kind in ("progress", "evaluation") and _lib.version() >= (1, 5):  # (the struct grew in 1.5)
        fields = fields + ["reward"]
    for f in fields:
        v = getattr(ev, f)
        if f == "finish":
            v = _FINISH[v] if 0 <= v < len(_FINISH) else v
        elif isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        out[f] = v
    return out


def _set_options(set_fn: Any, handle: ctypes.c_void_p, options: Dict[str, Any], err: "_lib.ac_err") -> None:
    """Each option on a job (ac_trainer_set, ac_featurizer_set): a bool as a switch, anything else as text."""
    for key, value in options.items():
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        _lib.check(set_fn(handle, key.encode(), _lib.fs(text), ctypes.byref(err)), err)


def features(photos: Sequence[Union[str, "os.PathLike[str]"]], out: str, *,
             on_error: Optional[Callable[[str], None]] = None, **options: Any) -> Dict[str, Any]:
    """Caches the annotation vectors of ``photos`` (paths) in the directory ``out``, as ``attncap
    features --out OUT PHOTO...`` does: a rerun skips the photos already there. Options by key
    (``encoder=``, ``size=448``, ``fp16=True``, ``flip=True``, ``shard="0/4"``...; ``attncap features
    --help``). A photo that cannot be read goes to ``on_error`` (its one-line message) and is counted;
    the others go on. Returns ``{"photos", "encoded", "skipped", "failed", "shards", "grid": (h, w),
    "dim", "layer"}``; raises :class:`attncap.OptionsError` for a bad option, :class:`attncap.Error`
    for anything that stops it."""
    dll = _lib.lib()
    handle, err = ctypes.c_void_p(), _lib.ac_err()
    _lib.check(_lib.need("ac_featurizer_open")(ctypes.byref(handle), ctypes.byref(err)), err)

    def relay(ev_p: Any, _user: Any) -> None:
        ev = ev_p.contents
        if ev.error is not None and on_error is not None:
            on_error(ev.error.decode("utf-8", "replace"))

    try:
        _set_options(dll.ac_featurizer_set, handle, options, err)
        paths = [_lib.fs(p) for p in photos]
        arr = (ctypes.c_char_p * max(1, len(paths)))(*paths)
        st = _lib.ac_featurizer_stats()
        callback = _lib.FEATURIZER_FN(relay)
        _lib.check(dll.ac_featurizer_run(handle, _lib.fs(out), arr, len(paths), callback, None, ctypes.byref(st),
                                         ctypes.byref(err)), err)
        return {"photos": st.photos, "encoded": st.encoded, "skipped": st.skipped, "failed": st.failed,
                "shards": st.shards, "grid": (st.grid_h, st.grid_w), "dim": st.dim,
                "layer": dll.ac_featurizer_get(handle, b"layer").decode()}
    finally:
        dll.ac_featurizer_close(handle)


def train_options() -> Dict[str, Optional[str]]:
    """Every training option with its default, as text (``None`` for a text option with none): the
    keyword arguments :func:`train` takes (``attncap train --help`` says what each does)."""
    dll = _lib.lib()
    handle, err = ctypes.c_void_p(), _lib.ac_err()
    _lib.check(_lib.need("ac_trainer_open")(ctypes.byref(handle), ctypes.byref(err)), err)
    try:
        out: Dict[str, Optional[str]] = {}
        i = 0
        while True:
            key = dll.ac_trainer_option(i, None)
            if key is None:
                return out
            value = dll.ac_trainer_get(handle, key).decode()
            out[key.decode()] = value if value != "" else None
            i += 1
    finally:
        dll.ac_trainer_close(handle)


def train(data: str, features: str, out: str, *, on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
          **options: Any) -> Dict[str, Any]:
    """Trains a model on the captioned photos of ``data`` (a data set SPEC, as ``attncap train --data``)
    whose features are cached in ``features`` (``attncap features``), writing the best model to ``out``.
    Other options by their keys (:func:`train_options`; ``epochs=4``, ``lr=3e-4``, ``pointer=True``,
    ``resume=True``...): a bool is a switch, anything else its text. ``on_event`` receives each
    progress event as a dict (``{"kind": "evaluation", "val_loss": ..., ...}``) on the calling thread.

    Returns the last event, ``{"kind": "finished", "finish": "all_epochs", "best_step": ..., ...}``.
    Raises :class:`attncap.OptionsError` for an unknown option or a bad value (the model is left as it
    was), :class:`attncap.Error` with the library's message for anything else; an exception raised by
    ``on_event`` stops nothing but is raised when training returns."""
    dll = _lib.lib()
    handle, err = ctypes.c_void_p(), _lib.ac_err()
    _lib.check(_lib.need("ac_trainer_open")(ctypes.byref(handle), ctypes.byref(err)), err)
    last: List[Dict[str, Any]] = []
    raised: List[BaseException] = []

    def relay(ev_p: Any, _user: Any) -> None:
        ev = _event(ev_p.contents)
        last[:] = [ev]
        if on_event is not None and not raised:
            try:
                on_event(ev)
            except BaseException as e:  # noqa: BLE001 (kept, raised when the C call returns)
                raised.append(e)

    try:
        _set_options(dll.ac_trainer_set, handle, {"data": data, "features": features, "out": out, **options}, err)
        callback = _lib.TRAIN_FN(relay)
        _lib.check(dll.ac_trainer_run(handle, callback, None, ctypes.byref(err)), err)
    finally:
        dll.ac_trainer_close(handle)
    if raised:
        raise raised[0]
    return last[0] if last else {"kind": "finished"}
