"""attncap: photo -> caption with visual attention ("Show, Attend and Tell", Xu et al. 2015), over
libattncap's stable core API (include/attncap/attncap.h) through ctypes.

    >>> import attncap
    >>> with attncap.Captioner() as cap:
    ...     r = cap.caption("samples/dog.jpg")
    >>> r.text, r.attention.shape          # the caption, and where it looked: [words, h, w]

The library is found as :func:`library_candidates` lists ($ATTNCAP_LIB, the one `make install` put
beside this package, the system's, a checkout's build/). ``attncap.__version__`` is the running
library's version (ac_version). Every foreign call releases the GIL (ctypes.CDLL): captioners in
different threads caption in parallel. Failures raise :class:`Error` (a subclass per ``ac_err_code``)
carrying the library's one-line message."""
from __future__ import annotations

from ._lib import library_candidates
from .captioner import Alternative, Captioner, Photo, Region, Result, Tag
from .classifier import ClassScore, Classifier
from .errors import (BadImageError, Error, LibraryNotFoundError, NoEncoderError, NoModelError,
                     NotFeaturesError, OptionsError, OtherEncoderError, OutputExistsError, ResumeOptionsError)
from .evaluate import evaluate, evaluation
from .tools import tool, tools
from .train import features, train, train_options

__all__ = [
    "Captioner", "Result", "Region", "Tag", "Alternative", "Photo", "Classifier", "ClassScore", "evaluate", "evaluation",
    "features", "train", "train_options", "tool", "tools", "library_path",
    "library_candidates", "Error", "BadImageError", "NoModelError", "NoEncoderError", "OutputExistsError",
    "OtherEncoderError", "NotFeaturesError", "ResumeOptionsError", "OptionsError", "LibraryNotFoundError",
    "__version__",
]


def library_path() -> str:
    """The path of the libattncap loaded (loading it if not yet)."""
    from . import _lib
    _lib.lib()
    return str(_lib.LIB.path)


def __getattr__(name: str) -> str:
    # __version__ is the library's (ac_version), read when first asked: importing attncap never fails
    # for want of the library; using it says where it was looked for.
    if name == "__version__":
        from . import _lib
        return _lib.lib().ac_version().decode()
    raise AttributeError(f"module 'attncap' has no attribute {name!r}")
