"""Utility functions u_i(t̃_i − a_i): non-increasing in the training time.

* :class:`Sigmoid` — PD-ORS Sec. V: θ1 / (1 + e^{θ2 (t − θ3)}); θ1 priority,
  θ2 time-criticality (0 = insensitive), θ3 target completion time.
* :class:`InverseTime` — thesis Sec. 4.1: weight / (1 + t).
* :class:`Linear` — max(0, value − slope · t).

``t`` is the training time in slots (completion slot − arrival slot + 1 for a
job that finishes in the slot it arrived is *not* used: the papers take
t̃ − a, so a job that completes in its arrival slot has t = 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from dmlsched.errors import InvalidInput

__all__ = ["InverseTime", "Linear", "Sigmoid", "Utility", "utility_from_dict"]


@runtime_checkable
class Utility(Protocol):
    @property
    def kind(self) -> str: ...

    def __call__(self, t: float) -> float: ...


def _check(name: str, value: float, ok: bool, allowed: str) -> None:
    if not ok or not math.isfinite(value):
        raise InvalidInput(name, value, allowed)


@dataclass(frozen=True)
class Sigmoid:
    """θ1 / (1 + exp(θ2 (t − θ3))), PD-ORS Sec. V."""

    theta1: float
    theta2: float
    theta3: float
    kind: Literal["sigmoid"] = "sigmoid"

    def __post_init__(self) -> None:
        _check("utility.theta1", self.theta1, self.theta1 >= 0, ">= 0")
        _check("utility.theta2", self.theta2, self.theta2 >= 0, ">= 0")
        _check("utility.theta3", self.theta3, True, "finite")

    def __call__(self, t: float) -> float:
        z = self.theta2 * (t - self.theta3)
        if z > 700:  # exp overflow: the utility is 0 to double precision
            return 0.0
        return self.theta1 / (1.0 + math.exp(z))


@dataclass(frozen=True)
class InverseTime:
    """weight / (1 + t), thesis Sec. 4.1."""

    weight: float = 1.0
    kind: Literal["inverse"] = "inverse"

    def __post_init__(self) -> None:
        _check("utility.weight", self.weight, self.weight >= 0, ">= 0")

    def __call__(self, t: float) -> float:
        return self.weight / (1.0 + max(t, 0.0))


@dataclass(frozen=True)
class Linear:
    """max(0, value − slope · t)."""

    value: float
    slope: float
    kind: Literal["linear"] = "linear"

    def __post_init__(self) -> None:
        _check("utility.value", self.value, self.value >= 0, ">= 0")
        _check("utility.slope", self.slope, self.slope >= 0, ">= 0")

    def __call__(self, t: float) -> float:
        return max(0.0, self.value - self.slope * t)


_KINDS: dict[str, type] = {"sigmoid": Sigmoid, "inverse": InverseTime, "linear": Linear}


def utility_from_dict(d: dict[str, object]) -> Utility:
    """Build a utility from ``{"kind": ..., **params}`` (job-spec files)."""
    kind = str(d.get("kind", "sigmoid"))
    if kind not in _KINDS:
        raise InvalidInput("utility.kind", kind, " | ".join(_KINDS))
    params = {k: float(v) for k, v in d.items() if k != "kind"}  # type: ignore[arg-type]  # float() of a job-spec value; a bad one raises and is reported below
    try:
        return _KINDS[kind](**params)
    except TypeError as e:
        raise InvalidInput("utility", d, f"parameters of {kind}") from e
