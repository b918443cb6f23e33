"""dmlsched: online schedulers for parameter-server distributed ML training."""

from dmlsched.errors import InvalidDecision, InvalidInput, SolverFailed
from dmlsched.version import __version__

__all__ = ["InvalidDecision", "InvalidInput", "SolverFailed", "__version__"]
