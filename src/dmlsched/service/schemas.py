"""Request bodies of the service's HTTP API (pydantic; they give the OpenAPI schema).

A submitted job is the job-spec schema of :class:`dmlsched.config.JobSpec`
(``docs/job-spec.md``) without ``id`` and ``arrival`` — the service assigns
the id and reveals the job to the scheduler at the next slot — plus either a
``utility`` (as in job-spec files) or a ``deadline`` in slots after arrival.

A deadline d is PD-ORS's own sigmoid utility (Sec. V, θ3 = "target
completion time") made a step at slot granularity: θ1 = ``value``, θ2 = 20,
θ3 = d + 0.5, so u(d) = 0.99995·value and u(d + 1) = 4.5e-5·value.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from dmlsched.config import JobSpec, UtilitySpec
from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import RESOURCES, ClusterJob

__all__ = [
    "DEADLINE_STEEPNESS",
    "MACHINE_NAME",
    "MAX_CAPACITY",
    "JobRequest",
    "MachineRequest",
    "ProgressReport",
    "job_from_request",
]

DEADLINE_STEEPNESS = 20.0


class _Strict(BaseModel):
    # no NaN/Infinity from clients: the log and the API are standard JSON
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


_JOB_FIELDS: dict[str, Any] = {
    name: (f.annotation, f)
    for name, f in JobSpec.model_fields.items()
    if name not in ("id", "arrival", "utility")
}

_JobFields = create_model("_JobFields", __base__=_Strict, **_JOB_FIELDS)


class JobRequest(_JobFields):  # type: ignore[misc,valid-type]  # a base class made by pydantic's create_model
    """A PS job to run: the job-spec fields (no id/arrival) + a utility or a deadline."""

    name: str | None = Field(default=None, max_length=100)
    utility: UtilitySpec | None = None
    deadline: int | None = Field(default=None, ge=0, le=10**6)
    value: float = Field(default=1.0, ge=0, le=1e12)
    # slots the job may hold a placement; then the service cancels it (as Slurm's --time)
    max_runtime: int | None = Field(default=None, ge=1, le=10**6)


# a machine's capacity per resource is at most this (GPUs, vCPUs, GB, GB): no machine has a
# million of any, and a bound keeps a declaration's sums and products finite
MAX_CAPACITY = 1e6

Capacity = Annotated[float, Field(ge=0, le=MAX_CAPACITY)]

# a machine's name: a URL path segment and a file name as it is (no "/", never "." or "..")
MACHINE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class MachineRequest(_Strict):
    """A machine and its capacity per resource (GPUs, vCPUs, GB memory, GB storage).

    An admin declares it (``capacity`` required); its agent joins it with at most the
    declared capacity (``capacity`` omitted: the declared one)."""

    name: str = Field(min_length=1, max_length=64, pattern=MACHINE_NAME)
    capacity: tuple[Capacity, ...] | None = Field(
        default=None, min_length=len(RESOURCES), max_length=len(RESOURCES)
    )
    agent: bool = False  # run by a `dmlsched agent`: it heartbeats and may time out


class ProgressReport(_Strict):
    """Work measured for one job by the agent holding its PS 0: the job's absolute work
    counter in the incarnation its placement was handed out with (a monotonic counter:
    the service credits what is new of it, within what the placement can do)."""

    job: int = Field(ge=0)
    incarnation: int = Field(ge=0)
    work: float = Field(ge=0, le=1e15)
    loss: float | None = None
    resumed: float | None = Field(default=None, ge=0, le=1e15)  # the checkpoint's counter


def job_from_request(req: JobRequest, job_id: int, arrival: int) -> ClusterJob:
    """The engine's job for a request (raises InvalidInput naming the field)."""
    d = req.model_dump(
        exclude={"name", "utility", "deadline", "value", "max_runtime"}, exclude_none=True
    )
    if req.deadline is not None and req.utility is not None:
        raise InvalidInput("deadline", req.deadline, "either a deadline or a utility, not both")
    if req.deadline is not None:
        d["utility"] = {
            "kind": "sigmoid",
            "theta1": req.value,
            "theta2": DEADLINE_STEEPNESS,
            "theta3": req.deadline + 0.5,
        }
    elif req.utility is not None:
        d["utility"] = req.utility.model_dump(exclude_none=True)
    try:
        spec = JobSpec.model_validate({**d, "id": job_id, "arrival": arrival})
    except ValidationError as e:  # pragma: no cover - the request was validated already
        err = e.errors()[0]
        raise InvalidInput(".".join(map(str, err["loc"])), err.get("input"), err["msg"]) from None
    return spec.to_job()
