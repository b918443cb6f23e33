"""Package hygiene: every ``__all__`` lists existing names, as strings."""

from __future__ import annotations

import importlib
import pkgutil

import dmlsched


def test_every_all_lists_existing_string_names() -> None:
    for mod in pkgutil.walk_packages(dmlsched.__path__, "dmlsched."):
        if mod.name.endswith("__main__"):
            continue
        m = importlib.import_module(mod.name)
        for name in getattr(m, "__all__", []):
            assert isinstance(name, str), (mod.name, name)
            assert hasattr(m, name), (mod.name, name)
