"""dmlsched: online schedulers for parameter-server distributed ML training."""

from dmlsched.errors import InvalidDecision, InvalidInput, SolverFailed

__version__ = "0.1.0"
__all__ = ["InvalidDecision", "InvalidInput", "SolverFailed", "__version__"]
