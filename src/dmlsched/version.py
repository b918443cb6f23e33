"""The package version (pyproject.toml's), importable from any layer."""

__version__ = "0.1.0"
