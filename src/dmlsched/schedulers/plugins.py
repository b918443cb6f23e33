"""Out-of-tree schedulers: ``--plugin MODULE_OR_FILE.py`` and the ``dmlsched.schedulers``
entry points.

A plugin is a module (``mypkg.sched``, importable) or a Python file
(``my_sched.py``, imported as the module named after its stem).  Loading it
imports it — its ``@register`` decorators run — and registers every class
it defines (``cls.__module__`` is the plugin's) that declares its own
``name`` and a ``setting`` ClassVar and has a ``decide`` method, so that a
scheduler written for ``check_scheduler`` needs nothing more to be named on
the command line.  Installed distributions offer plugins through the entry
point group ``dmlsched.schedulers``: each entry point names a module (loaded
as above) or a class (registered); the registry loads them all the first
time it is asked (:func:`dmlsched.schedulers.protocols.registry`, :func:`load_installed`).

A plugin that cannot be found, fails to import or registers a name another
class holds is an :class:`~dmlsched.errors.InvalidInput` naming the plugin
and the error, on one line (the CLI: exit 2).

Worker processes — the experiments' process pool, Ray workers — and a
restarted service load the same plugins: a :class:`Plugin` carries a file
plugin's source, so a worker needs neither the file nor the caller's
working directory (:func:`load_plugins` again, from the records).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from dmlsched.errors import InvalidInput
from dmlsched.schedulers.registration import SETTINGS, load_builtin, register

#: ``--plugin``'s help, on every command that takes it
PLUGIN_HELP = (
    "A scheduler plugin: MODULE or FILE.py whose schedulers join the registry (repeatable)."
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "Plugin",
    "load_entry_points",
    "load_installed",
    "load_plugin",
    "load_plugins",
]

ENTRY_POINT_GROUP = "dmlsched.schedulers"


@dataclass(frozen=True)
class Plugin:
    """A loaded plugin: ``where`` is its module's name, or a file plugin's absolute path;
    ``module`` the name it is imported as; ``source`` a file plugin's text."""

    where: str
    module: str
    source: str | None = None


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _refuse(spec: str, why: str) -> InvalidInput:
    return InvalidInput("plugin", spec, why)


def load_plugin(spec: str | Plugin) -> Plugin:
    """Import the plugin ``spec`` (a module name, a ``.py`` file, or a :class:`Plugin`
    record from another process) once, and register the schedulers it defines."""
    if isinstance(spec, Plugin):
        if spec.source is None:
            return _module_plugin(spec.where)
        return _file_plugin(spec.where, spec.where, spec.source)
    if spec.endswith(".py") or "/" in spec or Path(spec).is_file():
        path = Path(spec).expanduser()
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise _refuse(spec, f"a readable Python file ({_one_line(e)})") from None
        return _file_plugin(spec, str(path.resolve()), source)
    return _module_plugin(spec)


def load_plugins(specs: Iterable[str | Plugin] | None) -> tuple[Plugin, ...]:
    """:func:`load_plugin` for each, in order (none: nothing)."""
    return tuple(load_plugin(s) for s in specs or ())


def _module_plugin(name: str) -> Plugin:
    try:
        module = importlib.import_module(name)
    except Exception as e:
        raise _refuse(name, f"an importable module or a .py file ({_one_line(e)})") from None
    _register_own(name, module)
    return Plugin(name, name)


def _file_plugin(spec: str, path: str, source: str) -> Plugin:
    name = Path(path).stem
    if not name.isidentifier():
        raise _refuse(spec, "a file whose name is a Python identifier (my_sched.py)")
    loaded = sys.modules.get(name)
    if loaded is not None:  # loaded before, or imported from sys.path: the same file?
        where = getattr(loaded, "__file__", None)
        if where is None or Path(where).resolve() != Path(path):
            raise _refuse(spec, f"a file not named as the module {name} already imported ({where})")
        _register_own(spec, loaded)
        return Plugin(path, name, source)
    module = ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module  # as import does: pickles and dataclasses look it up by name
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    except Exception as e:
        del sys.modules[name]
        where = ""
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None and tb.tb_frame.f_code.co_filename == path:
            where = f" at line {tb.tb_lineno}"
        raise _refuse(spec, f"a file that imports cleanly ({_one_line(e)}{where})") from None
    _register_own(spec, module)
    return Plugin(path, name, source)


def _looks_like_scheduler(cls: Any, module: str) -> bool:
    return (
        inspect.isclass(cls)
        and cls.__module__ == module
        and isinstance(cls.__dict__.get("name"), str)
        and isinstance(getattr(cls, "setting", None), str)
        and callable(getattr(cls, "decide", None))
    )


def _register_own(spec: str, module: ModuleType) -> None:
    for cls in list(vars(module).values()):
        if _looks_like_scheduler(cls, module.__name__):
            _register(spec, cls)


def _register(spec: str, cls: type) -> None:
    try:
        setting = getattr(cls, "setting", None)
        if setting in SETTINGS:  # the built-in and installed names first: a plugin cannot take one
            load_builtin(setting)
            load_installed()
        register(cls)
    except TypeError as e:
        raise _refuse(spec, f"a plugin whose schedulers register ({e})") from None


_ENTRY_POINTS: list[bool] = []  # [True] once the installed plugins are loaded


def load_installed() -> None:
    """:func:`load_entry_points` once per process (again after one failed)."""
    if _ENTRY_POINTS:
        return
    _ENTRY_POINTS.append(True)  # first: the plugins' own registrations come back here
    try:
        load_entry_points()
    except BaseException:
        _ENTRY_POINTS.clear()  # a broken one raises here and on the next call
        raise


def load_entry_points() -> None:
    """Load every entry point of :data:`ENTRY_POINT_GROUP` (a module or a class)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        label = f"{ep.name} = {ep.value}" + (f" ({ep.dist.name})" if ep.dist else "")
        try:
            obj = ep.load()
        except Exception as e:
            raise _refuse(label, f"an entry point that loads ({_one_line(e)})") from None
        if inspect.ismodule(obj):
            _register_own(label, obj)
        elif inspect.isclass(obj):
            _register(label, obj)
        else:
            raise _refuse(
                label, f"an entry point naming a module or a class, not {type(obj).__name__}"
            )
