"""Modules that tests use as reference or tool but that take seconds to import (ppi_py, openai, pingouin,
scipy.stats, pyreadstat): imported on first use instead of when pytest collects the test files, so that collecting the
suite (in every xdist worker) stays short. ``pg = lazy("pingouin")`` reads as ``import pingouin as pg``."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest


class LazyModule:
    def __init__(self, name: str, skip_when_missing: bool = False):
        self._name = name
        self._skip = skip_when_missing
        self._module: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._module is None:
            self._module = (pytest.importorskip(self._name) if self._skip
                            else importlib.import_module(self._name))
        return self._module

    def __getattr__(self, attribute: str) -> Any:
        # pytest looks at every name of a test module while collecting it (``_pytestfixturefunction``, ``__test__``,
        # ...): private names do not import the module, public ones do.
        if attribute.startswith("_") and attribute not in ("__version__", "__file__"):
            raise AttributeError(attribute)
        return getattr(self._load(), attribute)


def lazy(name: str, skip_when_missing: bool = False) -> Any:
    """``name`` imported when an attribute is first read; with ``skip_when_missing`` the test reading it is skipped
    when the module is not installed (``pytest.importorskip``)."""
    return LazyModule(name, skip_when_missing)
