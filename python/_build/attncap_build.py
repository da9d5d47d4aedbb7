"""The build backend pip runs for `pip install ./python` (pyproject.toml: requires = [], backend-path):
setuptools' own (setuptools.build_meta), imported from the interpreter's site-packages when pip's build
isolation hides them, so that building the package needs nothing from an index: offline, Debian's
python3-setuptools and python3-wheel serve. What setuptools asks pip to fetch first (get_requires_*:
"wheel") is asked only when this interpreter cannot import it."""
import importlib.util
import re
import site
import sys

try:
    import setuptools.build_meta as _meta
except ImportError:  # pip's isolated build environment: the interpreter's own site-packages, after pip's
    sys.path.extend(p for p in site.getsitepackages() if p not in sys.path)
    import setuptools.build_meta as _meta


def _missing(requirements):
    """The requirements whose module this interpreter cannot import (those pip has to fetch)."""
    return [r for r in requirements if importlib.util.find_spec(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) is None]


def get_requires_for_build_wheel(config_settings=None):
    return _missing(_meta.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_sdist(config_settings=None):
    return _missing(_meta.get_requires_for_build_sdist(config_settings))


def get_requires_for_build_editable(config_settings=None):
    return _missing(_meta.get_requires_for_build_editable(config_settings))


prepare_metadata_for_build_wheel = _meta.prepare_metadata_for_build_wheel
build_wheel = _meta.build_wheel
build_sdist = _meta.build_sdist
prepare_metadata_for_build_editable = _meta.prepare_metadata_for_build_editable
build_editable = _meta.build_editable
