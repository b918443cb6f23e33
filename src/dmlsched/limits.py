"""Limits on sizes a user may give (no imports: read by the CLI before anything heavy)."""

from __future__ import annotations

__all__ = ["MAX_SIZE"]

# Largest jobs / machines / slots count accepted anywhere a user gives one (a
# flag, a job file, a computed horizon): far beyond any experiment here, small
# enough that a typo (an extra run of zeros) is refused instead of exhausting memory.
MAX_SIZE = 1_000_000
