"""The optional parts of dmlsched (the extras of ``pyproject.toml``) and the one line a
command prints when the part it needs is not installed.

The core (``make install-core``, what ``make demo`` installs) runs the engine,
every scheduler, the experiments and the plots.  The testbed's real training
processes need PyTorch (``dmlsched[testbed]``), the live service FastAPI and
friends (``dmlsched[service]``), ``--ray`` Ray (``dmlsched[ray]``).  Those
libraries are imported only inside the commands that use them; a command
whose part is missing exits with status 2 and :class:`MissingExtra`'s line
before doing any work (:func:`require`), and an import that still fails later
is mapped to the same line by :func:`extra_of`.
"""

from __future__ import annotations

import importlib.util
import re

from dmlsched.errors import DmlschedError

__all__ = ["PARTS", "MissingExtra", "extra_of", "require"]

#: extra -> the top-level modules it provides that dmlsched imports
PARTS: dict[str, tuple[str, ...]] = {
    "testbed": ("torch", "sklearn"),
    "service": (
        "fastapi",
        "starlette",
        "uvicorn",
        "httpx",
        "prometheus_client",
        "psycopg",
        "yaml",
        "kubernetes",
    ),
    "ray": ("ray",),
}
_EXTRA_OF = {module: extra for extra, modules in PARTS.items() for module in modules}


class MissingExtra(DmlschedError):
    """``what`` needs the extra ``extra``, and its module ``module`` is not installed."""

    def __init__(self, extra: str, module: str, what: str) -> None:
        self.extra = extra
        self.module = module
        super().__init__(
            f"{what} needs the {extra} extra ({module} is not installed): "
            f"`make install-{extra}` in the checkout, or `pip install 'dmlsched[{extra}]'`"
        )


def require(extra: str, what: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be imported."""
    for module in PARTS[extra]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(extra, module, what)


def extra_of(error: ModuleNotFoundError) -> tuple[str, str] | None:
    """(extra, module) when ``error`` is a module of an extra failing to import.

    An error re-raised from a worker process has lost its ``name``; its message
    ("No module named 'torch'") still has it.
    """
    name = error.name
    if name is None:
        found = re.search(r"No module named '([^']+)'", str(error))
        name = found.group(1) if found else None
    if name is None:
        return None
    top = name.split(".")[0]
    extra = _EXTRA_OF.get(top)
    return (extra, top) if extra else None
