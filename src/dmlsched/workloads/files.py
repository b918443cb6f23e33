"""An operator's own ``cluster`` jobs from a JSON or CSV job-spec file.

JSON: ``{"slots": T, "cluster": {"machines": H, "capacity": [gpu, cpu, mem,
storage]}, "jobs": [{...}, ...]}`` with the job fields of
:class:`dmlsched.config.JobSpec`.

CSV: one job per row; columns are the JobSpec fields, with
``worker_demand``/``ps_demand`` split into ``worker_<resource>`` /
``ps_<resource>`` and the utility into ``utility`` (kind) and ``theta1``,
``theta2``, ``theta3`` (or ``weight``, ``value``, ``slope``).  The cluster and
horizon come from the caller (``--machines``, ``--slots``).

Files are UTF-8, with or without a byte-order mark (:mod:`.textio`).
See ``docs/job-spec.md`` for examples.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dmlsched.config import ClusterSpec, JobFile, JobSpec, raise_first
from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import RESOURCES, Cluster, ClusterWorkload
from dmlsched.workloads.textio import read_text

__all__ = ["load_job_file"]

_UTIL_KEYS = ("theta1", "theta2", "theta3", "weight", "value", "slope")


def _from_json(path: Path) -> JobFile:
    try:
        raw = json.loads(read_text(path, "workload"))
    except json.JSONDecodeError as e:
        raise InvalidInput("json", e.msg, "valid JSON", f"{path}:{e.lineno}:{e.colno}") from None
    except RecursionError:
        raise InvalidInput("json", "nested too deeply", "a job-spec document", str(path)) from None
    try:
        return JobFile.model_validate(raw)
    except ValidationError as e:
        raise_first(e, str(path))
        raise  # unreachable


def _csv_job(row: dict[str, str], line: int, path: Path) -> JobSpec:
    d: dict[str, Any] = {}
    util: dict[str, Any] = {}
    wd, pd_ = {}, {}
    for k, v in row.items():
        if k is None:
            raise InvalidInput(
                "columns", "extra values", "one value per header column", f"{path}:{line}"
            )
        if v is None or v == "":
            continue
        if k.startswith("worker_"):
            wd[k[7:]] = v
        elif k.startswith("ps_") and k != "ps_bandwidth":
            pd_[k[3:]] = v
        elif k == "utility":
            util["kind"] = v
        elif k in _UTIL_KEYS:
            util[k] = v
        else:
            d[k] = v
    for name, vals in (("worker", wd), ("ps", pd_)):
        unknown = set(vals) - set(RESOURCES)
        if unknown:
            raise InvalidInput(
                f"{name}_{sorted(unknown)[0]}",
                "column",
                f"{name}_<{'|'.join(RESOURCES)}>",
                f"{path}:{line}",
            )
    d["worker_demand"] = [wd.get(r, 0) for r in RESOURCES]
    d["ps_demand"] = [pd_.get(r, 0) for r in RESOURCES]
    if util:
        d["utility"] = util
    try:
        return JobSpec.model_validate(d)
    except ValidationError as e:
        raise_first(e, f"{path}:{line}")
        raise


def load_job_file(path: Path, machines: int | None, slots: int | None) -> ClusterWorkload:
    """Validated workload from ``path`` (.json or .csv)."""
    if not path.is_file():
        raise InvalidInput(
            "workload", str(path), "synthetic | a trace name | an existing .json/.csv file"
        )
    if path.suffix.lower() == ".json":
        spec = _from_json(path)
        cl, horizon, jobs = spec.cluster, slots or spec.slots, spec.jobs
        if machines:
            cl = ClusterSpec(machines=machines, capacity=cl.capacity, resources=cl.resources)
    elif path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(read_text(path, "workload"), newline=""))
        try:
            jobs = tuple(_csv_job(row, reader.line_num, path) for row in reader)
        except csv.Error as e:
            raise InvalidInput("row", str(e), "a CSV record", f"{path}:{reader.line_num}") from None
        if not jobs:
            raise InvalidInput("jobs", 0, ">= 1 row", str(path))
        cl = ClusterSpec(machines=machines or 30)
        horizon = slots or 20
    else:
        raise InvalidInput("workload", str(path), "a .json or .csv job-spec file")
    if len(cl.capacity) != len(cl.resources):
        raise InvalidInput(
            "cluster.capacity", cl.capacity, f"{len(cl.resources)} values", str(path)
        )
    want = f"{len(cl.resources)} values ({', '.join(cl.resources)})"
    for i, j in enumerate(jobs):  # name the list that is short, not the one that is right
        for name in ("worker_demand", "ps_demand"):
            if len(getattr(j, name)) != len(cl.resources):
                raise InvalidInput(f"jobs.{i}.{name}", list(getattr(j, name)), want, str(path))
    try:
        built = tuple(j.to_job() for j in jobs)
        return ClusterWorkload(
            jobs=tuple(sorted(built, key=lambda j: (j.arrival, j.id))),
            cluster=Cluster.uniform(cl.machines, cl.capacity)
            if cl.resources == RESOURCES
            else Cluster(Cluster.uniform(cl.machines, cl.capacity).capacity, cl.resources),
            horizon=horizon,
            source=path.name,
        )
    except InvalidInput as e:
        raise InvalidInput(
            e.field, e.value, e.allowed, f"{path}{': ' + e.where if e.where else ''}"
        ) from None
