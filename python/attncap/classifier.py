"""attncap.Classifier: a photo's ImageNet classes, as ``attncap classify`` prints them (attncap.h's
ac_classifier, libattncap 1.2)."""
from __future__ import annotations

import ctypes
import os
import threading
import weakref
from dataclasses import dataclass
from typing import List, Optional

from . import _lib
from ._lib import ac_err
from .captioner import Photo, _as_input
from .errors import Error


@dataclass(frozen=True)
class ClassScore:
    """One of a photo's most probable classes."""
    index: int     # the class, 0 .. classes-1
    label: str     # its line of the labels file ("" past its end)
    prob: float    # its probability (the graph's float32)


class Classifier:
    """An ImageNet classifier: a TFLite graph whose output is the classes' probabilities, run as
    ``attncap classify`` runs it.

    Args:
        path: the .tflite; None: encoders/mobilenet_v2_1.0_224_quant.tflite in the data directory
            ($ATTNCAP_DATA, else ../shared; :class:`attncap.NoEncoderError` when there is none).
        labels: one class name a line; None: encoders/imagenet_labels.txt there.
        threads: 0: $ATTNCAP_THREADS, else every core.
        precision: "auto", "f32", "bf16x2" or "int8"; None: $ATTNCAP_PRECISION, else auto.
    """

    def __init__(self, path: "Optional[str | os.PathLike[str]]" = None,
                 labels: "Optional[str | os.PathLike[str]]" = None, threads: int = 0, *,
                 precision: Optional[str] = None) -> None:
        self._lock = threading.RLock()
        self._handle: Optional[int] = None
        h, err = ctypes.c_void_p(), ac_err()
        _lib.check(_lib.need("ac_classifier_open")(_lib.fs(path) if path is not None else None,
                                                   _lib.fs(labels) if labels is not None else None, threads,
                                                   ctypes.byref(h), ctypes.byref(err)), err)
        self._handle = h.value
        self._finalizer = weakref.finalize(self, _lib.need("ac_classifier_close"), h.value)
        if precision is not None:
            try:
                _lib.check(_lib.need("ac_classifier_set_precision")(h.value, precision.encode(),
                                                                    ctypes.byref(err)), err)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        """Frees the graph and the labels. Closing twice is fine."""
        with self._lock:
            self._finalizer()
            self._handle = None

    def __enter__(self) -> "Classifier":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def classify(self, photo: Photo, top: int = 5) -> List[ClassScore]:
        """The top most probable classes of a photo (a path, an encoded photo's bytes or RGB pixels,
        HxWx3 uint8), best first (equal ones: the lower index first). Raises
        :class:`attncap.BadImageError` when the photo cannot be read or decoded."""
        inp, keep, _ = _as_input(photo)  # keep: the bytes or pixels inp points into, alive to the end
        out, err = ctypes.POINTER(_lib.ac_classify_result)(), ac_err()
        with self._lock:
            if self._handle is None:
                raise Error("classifier: it is closed")
            _lib.check(_lib.need("ac_classify")(self._handle, ctypes.byref(inp), top, ctypes.byref(out),
                                                ctypes.byref(err)), err)
            try:
                r = out.contents
                label = _lib.need("ac_classifier_label")
                return [ClassScore(r.top[j], _lib.text(label(self._handle, r.top[j])), float(r.probs[r.top[j]]))
                        for j in range(r.n_top)]
            finally:
                _lib.need("ac_classify_result_free")(out)

    def __repr__(self) -> str:
        return f"<attncap.Classifier {'closed' if self._handle is None else 'open'}>"
