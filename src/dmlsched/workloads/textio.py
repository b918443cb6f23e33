"""Reading a user's text file: UTF-8 (with or without a byte-order mark) or a clear error.

Spreadsheet programs save "CSV UTF-8" with a byte-order mark; it is not part
of the first header name.  Bytes that are not UTF-8, or a file that cannot be
read, are :class:`~dmlsched.errors.InvalidInput` naming the path (and the line
of the first bad byte), so the CLI exits 2 with one line instead of a
traceback.
"""

from __future__ import annotations

from pathlib import Path

from dmlsched.errors import InvalidInput

__all__ = ["read_text"]


def read_text(path: Path, field: str = "file") -> str:
    """The text of ``path``, BOM removed; unreadable or undecodable → InvalidInput."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InvalidInput(field, str(path), f"a readable file ({e.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        bad = data[e.start : e.start + 8]
        raise InvalidInput(field, bad, "UTF-8 text", f"{path}:{line}") from None
