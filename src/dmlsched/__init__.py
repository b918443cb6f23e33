"""dmlsched: online schedulers for parameter-server distributed ML training."""

from dmlsched.errors import InvalidDecision, InvalidInput, SolverFailed
from dmlsched.version import __version__

__all__ = ["InvalidDecision", "InvalidInput", "SolverFailed", "__version__", "check_scheduler"]


def __getattr__(name: str) -> object:
    # the checker's package is imported on first use: `import dmlsched` stays cheap
    if name == "check_scheduler":
        from dmlsched.checks import check_scheduler

        return check_scheduler
    raise AttributeError(f"module 'dmlsched' has no attribute {name!r}")
