"""attncap's exceptions: one class per ``ac_err_code`` of attncap.h, all subclasses of :class:`Error`."""
from __future__ import annotations

from typing import Dict, Type

__all__ = [
    "Error", "NoModelError", "NoEncoderError", "OutputExistsError", "OtherEncoderError",
    "NotFeaturesError", "ResumeOptionsError", "BadImageError", "OptionsError", "LibraryNotFoundError",
]


class Error(Exception):
    """A failure reported by libattncap: ``str(e)`` is the library's one-line message (it names the
    file and the problem), ``e.code`` the ``ac_err_code`` (0, ``AC_ERR_FAILED``, for anything else)."""

    code: int = 0

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class NoModelError(Error):
    """No model path was given and none was found where the search looks (``AC_ERR_NO_MODEL``)."""
    code = 1


class NoEncoderError(Error):
    """The model's encoder was not found, or the model does not name it (``AC_ERR_NO_ENCODER``)."""
    code = 2


class OutputExistsError(Error):
    """An output exists and replacing it was not asked for (``AC_ERR_EXISTS``; ``force=True``)."""
    code = 3


class OtherEncoderError(Error):
    """A feature directory holds another encoder's features (``AC_ERR_OTHER_ENCODER``)."""
    code = 4


class NotFeaturesError(Error):
    """A directory that should hold features does not (``AC_ERR_NOT_FEATURES``)."""
    code = 5


class ResumeOptionsError(Error):
    """Resuming training with options other than the checkpoint's (``AC_ERR_RESUME_OPTIONS``)."""
    code = 6


class BadImageError(Error):
    """The photo cannot be read or decoded: the caller's input, not the model (``AC_ERR_BAD_IMAGE``)."""
    code = 7


class OptionsError(Error, ValueError):
    """An option is unknown, or its value is out of range or does not go with another's
    (``AC_ERR_OPTIONS``)."""
    code = 8


class LibraryNotFoundError(Error, ImportError):
    """libattncap.so was not found (see :func:`attncap.library_path` for where it is looked for)."""


_BY_CODE: Dict[int, Type[Error]] = {c.code: c for c in (
    NoModelError, NoEncoderError, OutputExistsError, OtherEncoderError, NotFeaturesError,
    ResumeOptionsError, BadImageError, OptionsError)}


def from_code(message: str, code: int) -> Error:
    """The exception for an ``ac_err``: its code's class (``Error`` for a code this package does not know)."""
    cls = _BY_CODE.get(code, Error)
    return cls(message, code)
