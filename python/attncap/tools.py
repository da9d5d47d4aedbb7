"""The maintainers' tools of ``attncap ground``, ``presence``, ``calibrate`` and ``tune`` (attncap.h's
ac_tool, 1.6): one call each, the command's flags as keywords without the dashes."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Callable, List, Optional

from . import _lib

__all__ = ["tool", "tools"]


def tools() -> List[str]:
    """The tools' names (ac_tool_name)."""
    dll = _lib.lib()
    _lib.need("ac_tool_name")
    out, i = [], 0
    while True:
        name = dll.ac_tool_name(i)
        if name is None:
            return out
        out.append(name.decode())
        i += 1


def tool(name: str, *, on_note: Optional[Callable[[str, bool], None]] = None,
         on_progress: Optional[Callable[[int, int], None]] = None, **options: Any) -> List[str]:
    """Runs the tool ``name`` as ``attncap NAME`` does and returns its report, the lines the command
    prints on stdout. Options as keywords (``boxes="detected"``, ``json=True``...); a list option
    (ground's ``photos``, presence's ``data``, calibrate's ``refs`` and ``results``) takes a list.
    ``on_note(line, problem)`` for each line said beside the report (``problem``: something could not
    be done, such as a photo left out), ``on_progress(done, total)`` as it goes. Raises
    :class:`attncap.OptionsError` for an unknown tool or option, a bad value or options that do not go
    together, :class:`attncap.Error` for anything else."""
    dll = _lib.lib()
    handle, err = ctypes.c_void_p(), _lib.ac_err()
    _lib.check(_lib.need("ac_tool_open")(name.encode(), ctypes.byref(handle), ctypes.byref(err)), err)
    lines: List[str] = []

    def relay(ev_p: Any, _user: Any) -> None:
        ev = ev_p.contents
        if ev.line is not None:
            lines.append(ev.line.decode("utf-8", "replace"))
        elif ev.note is not None:
            if on_note is not None:
                on_note(ev.note.decode("utf-8", "replace"), bool(ev.problem))
        elif on_progress is not None:
            on_progress(ev.done, ev.total)

    try:
        for key, value in options.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                text = ("1" if v else "0") if isinstance(v, bool) else v if isinstance(v, (bytes, os.PathLike)) else str(v)
                _lib.check(dll.ac_tool_set(handle, key.encode(), _lib.fs(text), ctypes.byref(err)), err)
        callback = _lib.TOOL_FN(relay)
        _lib.check(dll.ac_tool_run(handle, callback, None, ctypes.byref(err)), err)
        return lines
    finally:
        dll.ac_tool_close(handle)
