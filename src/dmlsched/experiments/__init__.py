"""See the package docstring of dmlsched."""
