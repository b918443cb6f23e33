"""Paths as the records show them: relative to the checkout, never this machine's.

``config.json`` and ``summary.md`` are shared and committed; an absolute path
in them (``/home/me/work/shared/traces/...``) says where one person's files
were, not what was read.  :func:`portable_paths` rewrites every absolute path
in a text that lies inside the checkout's parent folder — the checkout
itself and ``../shared`` beside it, where the data lives — relative to the
checkout (``../shared/traces/philly-pollux/...``).  A path elsewhere was
given by the user (``--trace /data/x.csv``) and is kept as given.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["CHECKOUT", "portable_paths"]

#: the folder holding ``src/dmlsched`` (the checkout, for an editable install)
CHECKOUT = Path(__file__).resolve().parents[2]
_ABSOLUTE = re.compile(r"(?<![\w.~/])/[^\s,;()'\"]+")


def portable_paths(text: str, checkout: Path = CHECKOUT) -> str:
    """``text`` with absolute paths under ``checkout``'s parent made relative to it."""
    parent = checkout.parent

    def shown(m: re.Match[str]) -> str:
        path = Path(m.group(0))
        if not path.is_relative_to(parent) or parent == Path(parent.anchor):
            return m.group(0)
        return os.path.relpath(path, checkout)

    return _ABSOLUTE.sub(shown, text)
