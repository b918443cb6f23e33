"""Fingerprints of the code and inputs that compute a result.

A fingerprint is a SHA-256 (hex, 16 characters) over

* **code** — the source of every ``dmlsched`` module the computation can
  reach (:func:`module_closure`: the roots and, transitively, every
  ``import dmlsched...`` / ``from dmlsched... import`` in them, deferred
  imports inside functions included; ``from package import name`` follows
  ``name`` to the module that defines it, past the package's re-export), and
  the versions of Python and of the
  numerical libraries that compute (:data:`LIBRARIES`);
* **data** — every file under the data folders a workload may read (the
  trace root in use, ``../shared/peers``, ``../shared/profiles``);
* **inputs** — whatever the caller passes (point, seed, parameters, …),
  described by :func:`stable` (no memory addresses, no set order).

What is left out, and why: modules that only *read* results (claims,
reports, plots, the runner's bookkeeping: :data:`EVALUATION`) — a new claim
or a new sentence in a report does not change a number; the imports of a
package's ``__init__`` (those load a whole registry, e.g. every cluster
scheduler) and of :data:`NO_FOLLOW` (``sim.engine`` imports every setting's engine
to pick one) — their own source still counts.

Experiment cells (:func:`cell_fingerprint`) start from the modules defining
the experiment's ``build`` and ``cell``, the setting's engine (every module of
it, when it is a package), the scheduler
of the cell's series and every scheduler the cell made while running (a cell
may run a reference, e.g. OASiS for a gain: the runner records what
:func:`dmlsched.schedulers.protocols.make_scheduler` made, see
:func:`recording`).  The runner stores a cell's fingerprint beside its rows
and recomputes, on a resume, every cell whose fingerprint changed.  Any
other cache of results (shared reference runs) can key on :func:`fingerprint`
the same way.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dmlsched.experiments.catalogue import Experiment, Point

__all__ = [
    "EVALUATION",
    "LIBRARIES",
    "NO_FOLLOW",
    "cell_fingerprint",
    "cell_roots",
    "code_digest",
    "data_digest",
    "fingerprint",
    "module_closure",
    "note_made",
    "recording",
    "stable",
]

_PKG = "dmlsched"
_ROOT = Path(__file__).resolve().parents[1]  # src/dmlsched
#: modules that only read or present results: never part of a fingerprint
EVALUATION = frozenset(
    f"{_PKG}.experiments.{m}"
    for m in (
        "claims",
        "report",
        "reproduction",
        "plots",
        "results",
        "runner",
        "lock",
        "pool",
        "provenance",
    )
) | {f"{_PKG}.cli", f"{_PKG}.progress", f"{_PKG}.console"}
#: modules whose imports are loaders, not dependencies (their own source counts)
NO_FOLLOW = frozenset({f"{_PKG}.sim.engine", f"{_PKG}.schedulers.protocols"})
#: libraries whose version can change a computed number
LIBRARIES = ("numpy", "scipy", "highspy", "numba", "cvxpy", "pandas")
_FP_CHARS = 16


def _path(module: str) -> Path | None:
    """The source file of ``module`` inside the package, if it is one."""
    if module != _PKG and not module.startswith(_PKG + "."):
        return None
    parts = module.split(".")[1:]
    if not parts:
        return _ROOT / "__init__.py"
    rel = Path(*parts)
    for p in (_ROOT / rel.with_suffix(".py"), _ROOT / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def _is_package(module: str) -> bool:
    p = _path(module)
    return p is not None and p.name == "__init__.py"


@functools.cache
def _imports(module: str) -> tuple[str, ...]:
    """``dmlsched`` modules ``module`` imports anywhere in its source (sorted)."""
    path = _path(module)
    if path is None:
        return ()
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith(_PKG))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not (node.module == _PKG or node.module.startswith(_PKG + ".")):
                continue
            out.add(node.module)
            for a in node.names:  # ``from pkg import submodule`` or a name ``pkg`` re-exports
                sub = f"{node.module}.{a.name}"
                out.add(sub if _path(sub) is not None else _provider(node.module, a.name))
    return tuple(sorted(m for m in out if _path(m) is not None))


@functools.cache
def _provider(module: str, name: str) -> str:
    """The module that defines ``name`` for ``from module import name``: a package's
    ``__init__`` usually re-exports it from a submodule, whose code is what runs."""
    if not _is_package(module):
        return module
    path = _path(module)
    assert path is not None
    for node in ast.parse(path.read_bytes(), str(path)).body:
        if not (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.startswith(_PKG + ".")
        ):
            continue
        for a in node.names:
            if (a.asname or a.name) == name:
                sub = f"{node.module}.{a.name}"
                return sub if _path(sub) is not None else _provider(node.module, a.name)
    return module


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def module_closure(roots: Iterable[str]) -> tuple[str, ...]:
    """Every ``dmlsched`` module reachable from ``roots`` (module docstring), sorted."""
    seen: set[str] = set()
    todo = [r for r in roots if _path(r) is not None]
    while todo:
        m = todo.pop()
        if m in seen or m in EVALUATION:
            continue
        seen.add(m)
        seen.update(p for p in _parents(m) if _path(p) is not None)  # their inits run
        if m in NO_FOLLOW or _is_package(m):
            continue
        todo.extend(_imports(m))
    return tuple(sorted(seen - EVALUATION))


@functools.cache
def _source_digest(module: str) -> str:
    path = _path(module)
    return hashlib.sha256(path.read_bytes() if path else b"").hexdigest()


@functools.lru_cache(maxsize=1)
def _libraries() -> str:
    parts = [f"python {sys.version_info.major}.{sys.version_info.minor}"]
    for lib in LIBRARIES:
        try:
            parts.append(f"{lib} {metadata.version(lib)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{lib} absent")
    return "; ".join(parts)


def code_digest(roots: Iterable[str]) -> str:
    """SHA-256 over the sources of :func:`module_closure` (``roots``) and :data:`LIBRARIES`."""
    return _code_digest(tuple(sorted(set(roots))))


@functools.lru_cache(maxsize=256)
def _code_digest(roots: tuple[str, ...]) -> str:
    h = hashlib.sha256(_libraries().encode())
    for m in module_closure(roots):
        h.update(f"\n{m} {_source_digest(m)}".encode())
    return h.hexdigest()


def _data_folders(traces: Path | None) -> list[Path]:
    from dmlsched.workloads.traces import traces_root

    root = Path(traces) if traces is not None else traces_root()
    shared = traces_root().parent
    return [p for p in (root, shared / "peers", shared / "profiles") if p.is_dir()]


@functools.lru_cache(maxsize=8)
def _folder_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(f"\n{p.relative_to(folder).as_posix()} ".encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def data_digest(traces: Path | None = None) -> str:
    """SHA-256 over every file of the data folders (module docstring)."""
    h = hashlib.sha256()
    for folder in _data_folders(traces):
        h.update(f"\n{folder.name} {_folder_digest(folder.resolve())}".encode())
    return h.hexdigest()


def stable(obj: Any) -> str:
    """A description of ``obj`` that is the same in every process (for hashing)."""
    if obj is None or isinstance(obj, bool | int | str):
        return repr(obj)
    if isinstance(obj, float):
        return repr(float(obj))
    if isinstance(obj, Path):
        return f"Path({obj.as_posix()!r})"
    if isinstance(obj, Mapping):
        items = sorted((stable(k), stable(v)) for k, v in obj.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(obj, set | frozenset):
        return "{" + ", ".join(sorted(stable(x) for x in obj)) + "}"
    if isinstance(obj, list | tuple):
        return "[" + ", ".join(stable(x) for x in obj) + "]"
    if isinstance(obj, functools.partial):
        return f"partial({stable(obj.func)}, {stable(obj.args)}, {stable(obj.keywords)})"
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return f"{type(obj).__qualname__}{stable(fields)}"
    if hasattr(obj, "tobytes") and hasattr(obj, "dtype"):  # a numpy array
        return f"array({obj.dtype}, {obj.shape}, {hashlib.sha256(obj.tobytes()).hexdigest()})"
    if callable(obj):
        return (
            f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"
        )
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def fingerprint(roots: Iterable[str], inputs: Any, traces: Path | None = None) -> str:
    """The fingerprint of computing ``inputs`` with the code reachable from ``roots``."""
    h = hashlib.sha256()
    h.update(code_digest(roots).encode())
    h.update(data_digest(traces).encode())
    h.update(stable(inputs).encode())
    return h.hexdigest()[:_FP_CHARS]


# -- experiment cells ------------------------------------------------------------------
_MADE: list[list[str]] = []  # recording() stack: modules of the schedulers made


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the modules of the schedulers made (by ``make_scheduler``) in the body."""
    from dmlsched.schedulers.protocols import on_make

    on_make(note_made)
    made: list[str] = []
    _MADE.append(made)
    try:
        yield made
    finally:
        _MADE.pop()


def note_made(cls: type) -> None:
    """Called by ``make_scheduler``: record ``cls``'s module in every open recording."""
    for made in _MADE:
        if cls.__module__ not in made:
            made.append(cls.__module__)


def _engine_modules(setting: str) -> tuple[str, ...]:
    """The setting's engine: its module, or every module of its package (an engine
    package's ``__init__`` re-exports; the slot loop lives in its submodules)."""
    engine = f"{_PKG}.sim.{setting.replace('-', '_')}"
    init = _path(engine)
    if init is None or init.name != "__init__.py":
        return (engine,)
    folder = init.parent
    subs = (
        ".".join((engine, *p.relative_to(folder).with_suffix("").parts))
        for p in folder.rglob("*.py")
        if p.name != "__init__.py"
    )
    return (engine, *sorted(subs))


def cell_roots(exp: Experiment, label: str) -> tuple[str, ...]:
    """Where a cell's code starts: its experiment's build and cell functions, the
    setting's engine and the scheduler of the series ``label`` (if it is one)."""
    from dmlsched.experiments.catalogue import default_cell

    roots = {
        *_engine_modules(exp.setting),
        getattr(exp.build, "__module__", None) or "",
        getattr(exp.cell or default_cell, "__module__", None) or "",
    }
    if isinstance(exp.build, functools.partial):
        roots.add(getattr(exp.build.func, "__module__", "") or "")
    try:
        from dmlsched.schedulers.protocols import registry

        name, _ = exp.resolve(label)
        cls = registry(exp.setting).get((exp.setting, name))
        if cls is not None:
            roots.update(c.__module__ for c in cls.__mro__ if c.__module__.startswith(_PKG))
    except Exception:  # a label only the cell understands (e.g. "opt"): its module says
        pass
    return tuple(sorted(r for r in roots if r))


def cell_fingerprint(
    exp: Experiment,
    label: str,
    point: Point,
    seed: int,
    quick: bool,
    traces: Path | None = None,
    made: Iterable[str] = (),
) -> str:
    """The fingerprint of one (series, point, seed) cell of ``exp`` (module docstring);
    ``made``: modules of the schedulers the cell made while it ran."""
    try:
        resolved: Any = exp.resolve(label)
    except Exception:
        resolved = label
    inputs = {
        "experiment": exp.id,
        "setting": exp.setting,
        "param": exp.param,
        "point": str(point),
        "seed": int(seed),
        "quick": bool(quick),
        "series": label,
        "resolved": resolved,
        "build": exp.build,
        "cell": exp.cell,
        "metrics": exp.metrics,
    }
    return fingerprint((*cell_roots(exp, label), *made), inputs, traces)
