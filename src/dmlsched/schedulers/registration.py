"""The table every scheduler joins, below everything that adds to it or reads it.

:func:`register` (the class decorator of every built-in scheduler) and
:mod:`dmlsched.schedulers.plugins` (out-of-tree schedulers) add to the table;
:func:`dmlsched.schedulers.protocols.registry` reads it after loading the
built-in schedulers (:func:`load_builtin`) and the installed plugins.  This
module imports none of them, so that the dependencies point one way.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from pkgutil import iter_modules
from typing import TypeVar

__all__ = ["SETTINGS", "load_builtin", "load_named", "register", "registered"]

SETTINGS: tuple[str, ...] = ("cluster", "interval", "edge-cloud", "geo")

_REGISTRY: dict[tuple[str, str], type] = {}
T = TypeVar("T", bound=type)


def register(cls: T) -> T:
    """Class decorator: declare ``name`` and ``setting`` once, as ClassVars."""
    name = cls.__dict__.get("name")
    setting = getattr(cls, "setting", None)
    if not isinstance(name, str) or setting not in SETTINGS:
        raise TypeError(f"{cls.__name__} needs ClassVars name and setting in {SETTINGS}")
    key = (setting, name)
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise TypeError(f"scheduler {name!r} already registered for {setting}")
    _REGISTRY[key] = cls
    return cls


def _package(setting: str) -> str:
    return f"dmlsched.schedulers.{setting.replace('-', '_')}"


def load_builtin(setting: str | None = None) -> None:
    """Register the built-in schedulers of ``setting`` (all settings: ``None``)."""
    # Importing a scheduler's module runs its @register decorator; one setting's
    # schedulers only need that package (the others import solvers a command may
    # never use, a large share of a short command's start-up)
    for s in SETTINGS if setting is None else (setting,):
        package = import_module(_package(s))
        for m in iter_modules(package.__path__):
            import_module(f"{package.__name__}.{m.name}")


def load_named(setting: str, name: str) -> None:
    """Import the built-in module named like scheduler ``name`` (``fifo``: the setting's
    ``fifo`` module), if there is one, and none of the setting's others: a run of one
    scheduler does not pay for importing every other (and the solvers some import).
    :func:`load_builtin` still loads them all (a name in another module, a listing)."""
    module = name.replace("-", "_").replace("+", "_plus")
    if module.isidentifier() and find_spec(f"{_package(setting)}.{module}") is not None:
        import_module(f"{_package(setting)}.{module}")


def registered(setting: str | None = None) -> dict[tuple[str, str], type]:
    """What the table holds now, by (setting, name): all, or one setting's (sorted)."""
    return dict(sorted((k, v) for k, v in _REGISTRY.items() if setting in (None, k[0])))
