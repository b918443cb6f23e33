"""Validated user input (pydantic) turned into frozen model specs.

The job-spec file schema of the ``cluster`` setting (``docs/job-spec.md``):
JSON ``{"slots": T, "cluster": {...}, "jobs": [...]}`` or CSV with one job per
row.  Every error becomes one :class:`InvalidInput` naming the file, the
field and the value.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dmlsched.errors import InvalidInput
from dmlsched.limits import MAX_SIZE
from dmlsched.model.cluster import RESOURCES, ClusterJob
from dmlsched.model.utility import utility_from_dict

__all__ = ["MAX_SIZE", "ClusterSpec", "JobFile", "JobSpec", "raise_first"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class UtilitySpec(_Strict):
    kind: Literal["sigmoid", "inverse", "linear"] = "sigmoid"
    theta1: float | None = None
    theta2: float | None = None
    theta3: float | None = None
    weight: float | None = None
    value: float | None = None
    slope: float | None = None


class JobSpec(_Strict):
    id: int = Field(ge=0)
    arrival: int = Field(ge=0)
    epochs: int = Field(ge=1)
    samples: int = Field(ge=1)
    batch: int = Field(ge=1, default=1)
    grad_mb: float = Field(ge=0)
    tau: float = Field(gt=0)
    gamma: float = Field(gt=0, default=1.0)
    worker_demand: tuple[float, ...]
    ps_demand: tuple[float, ...]
    b_ext: float = Field(gt=0)
    b_int: float | None = Field(gt=0, default=None)
    utility: UtilitySpec = UtilitySpec(kind="sigmoid", theta1=1.0, theta2=0.0, theta3=0.0)
    mode: Literal["sync", "async"] = "sync"
    minibatches: int = Field(ge=1, default=1)
    ps_bandwidth: float = Field(gt=0, default=math.inf)

    def to_job(self) -> ClusterJob:
        u = {k: v for k, v in self.utility.model_dump().items() if v is not None}
        return ClusterJob(
            id=self.id,
            arrival=self.arrival,
            epochs=self.epochs,
            samples=self.samples,
            batch=self.batch,
            grad_mb=self.grad_mb,
            tau=self.tau,
            gamma=self.gamma,
            worker_demand=self.worker_demand,
            ps_demand=self.ps_demand,
            b_ext=self.b_ext,
            b_int=self.b_int if self.b_int is not None else 40.0 * self.b_ext,
            utility=utility_from_dict(u),
            mode=self.mode,
            minibatches=self.minibatches,
            ps_bandwidth=self.ps_bandwidth,
        )


class ClusterSpec(_Strict):
    machines: int = Field(ge=1, le=MAX_SIZE)
    capacity: tuple[float, ...] = Field(default=tuple(18.0 * x for x in (4, 10, 32, 10)))
    resources: tuple[str, ...] = RESOURCES


class JobFile(_Strict):
    slots: int = Field(ge=1, le=MAX_SIZE)
    cluster: ClusterSpec
    jobs: tuple[JobSpec, ...] = Field(min_length=1)


def raise_first(err: ValidationError, where: str) -> None:
    """Turn pydantic's first error into one InvalidInput line."""
    e = err.errors()[0]
    field = ".".join(str(x) for x in e["loc"]) or "document"
    if e["type"] == "missing":  # the input is then the whole enclosing object: not a value
        raise InvalidInput(field, None, "a value; the field is missing", where) from None
    raise InvalidInput(field, e.get("input"), e["msg"], where) from None
