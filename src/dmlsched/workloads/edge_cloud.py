"""``edge-cloud`` workloads with A_online's Sec. V simulator settings.

Servers: S edge servers whose worker count W_s = the GPUs and PS count P_s
= the CPU cores of nodes drawn (with replacement) from the Alibaba GPU node
list (``../shared/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv`` via
:func:`dmlsched.workloads.traces.load_trace`, read in place) — "for each
server, the number of workers, and PSs corresponds to that of GPUs and CPUs
in the trace" (``extra["nodes"]``, the CLI's ``--nodes``, names another node
list).  If the default trace folder is absent (and no node list is named)
the counts come from documented synthetic ranges that mimic it: W_s ∈
{1, 2, 4, 8} with probabilities (0.02, 0.43, 0.04, 0.51) and P_s ∈ {8, 16,
32, 64, 96, 104, 128} cores with (0.02, 0.09, 0.02, 0.02, 0.48, 0.32, 0.05);
the workload's ``notes`` say which was used, the fallback as a warning
(printed on stderr by the CLI).  A node list that is named or present but
malformed is an error, never a silent fallback.  8–10 worker/PS types, the type
of every worker and PS drawn uniformly.

Jobs (Sec. V-A): a model of Table II uniformly (D_j/B_j = 27/58, 115/58,
60/58), E_j ∈ [20, 60], m_j ∈ [0.001, 0.05] h, G_j ∈ [10, 100] ms, q_j ∈
[30, 575] MB, b_j ∈ [100, 5120] Mbps, Δ_js ∈ [1, 4] slots per edge server
and [10, 15] for the cloud; worker and PS types uniform among those present
on the edge (so v_jsw is never all-zero); chunk size u_j = dataset size /
D_j (CIFAR10 163 MB, Caltech101 131 MB, ImageNet-12 102 MB).  One slot =
one hour.  Optional storage U_s (GB) for Sec. VI via ``extra["storage_gb"]``.

Arrivals: ``synthetic`` draws them uniformly over ``slots``; ``philly``
scales the Philly trace's submission times onto ``slots`` with
:func:`dmlsched.workloads.traces.trace_arrivals` ("we expand the number of
DL jobs to 300 by scaling up the submission times"); ``extra["skip_bad_rows"]``
skips malformed trace rows (node list and Philly file) and counts them in the
notes.  ``slots`` is the arrival span; the horizon cap T is far beyond it (a run ends when every job
is done).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudWorkload, EdgeJob
from dmlsched.model.speed.aonline import chunk_slots
from dmlsched.workloads.builders import WorkloadParams, register_workload

__all__ = ["MODELS", "M_RANGE", "edge_cloud_workload", "node_list_path", "server_shapes"]

# Table II: (model, dataset, D_j, B_j, dataset MB)
MODELS: tuple[tuple[str, str, int, int, float], ...] = (
    ("ResNet-50", "CIFAR10", 27, 58, 163.0),
    ("ResNet-101", "CIFAR10", 27, 58, 163.0),
    ("GoogLeNet", "Caltech101", 115, 58, 131.0),
    ("LeNet", "Caltech101", 115, 58, 131.0),
    ("AlexNet", "ImageNet-12", 60, 58, 101.8),
    ("Inception-BN", "ImageNet-12", 60, 58, 101.8),
)
M_RANGE = (0.001, 0.05)  # m_j, hours per mini-batch (Sec. V-A)
_W_CHOICES = (1, 2, 4, 8)
_W_PROBS = (0.02, 0.43, 0.04, 0.51)
_P_CHOICES = (8, 16, 32, 64, 96, 104, 128)
_P_PROBS = (0.02, 0.09, 0.02, 0.02, 0.48, 0.32, 0.05)


def node_list_path() -> Path | None:
    """The Alibaba GPU-trace folder (:func:`~dmlsched.workloads.traces.default_trace_dir`)."""
    from dmlsched.workloads.traces import default_trace_dir

    return default_trace_dir("alibaba")


def server_shapes(
    n: int, rng: np.random.Generator, path: Path | None = None, *, skip_bad_rows: bool = False
) -> tuple[np.ndarray, np.ndarray, str]:
    """(W_s, P_s, source note) for ``n`` servers, nodes drawn with replacement.

    ``path`` (a node-list file or its folder) overrides the trace folder and
    must exist; without it an absent trace folder means synthetic ranges.
    """
    from dmlsched.workloads.builders import WARNING
    from dmlsched.workloads.traces import load_nodes

    if path is None:
        path = node_list_path()
    elif not Path(path).exists():
        raise InvalidInput("nodes", str(path), "an existing node-list file or folder")
    if path is not None:
        nodes_list, skipped, f = load_nodes(path, skip_bad_rows=skip_bad_rows)
        nodes = np.asarray(nodes_list, dtype=float)
        pick = nodes[rng.integers(len(nodes), size=n)]
        return (
            pick[:, 0].astype(np.int64),
            pick[:, 1].astype(np.int64),
            f"servers from the Alibaba GPU node list {f} ({len(nodes)} nodes, "
            f"{skipped} bad rows skipped)",
        )
    w = rng.choice(_W_CHOICES, size=n, p=_W_PROBS)
    p = rng.choice(_P_CHOICES, size=n, p=_P_PROBS)
    return w, p, f"{WARNING}servers from synthetic ranges (Alibaba node list absent)"


def edge_cloud_workload(
    n_jobs: int,
    servers: int,
    slots: int,
    rng: np.random.Generator,
    *,
    arrivals: np.ndarray | None = None,
    storage_gb: float | None = None,
    node_path: Path | None = None,
    source: str = "synthetic",
    notes: tuple[str, ...] = (),
    skip_bad_rows: bool = False,
    m_range: tuple[float, float] = M_RANGE,
) -> EdgeCloudWorkload:
    """Sec. V instance; ``arrivals`` (sorted slots) default to uniform over ``slots``;
    ``m_range``: the hours per mini-batch m_j are drawn from (default Sec. V's)."""
    if not 0 < m_range[0] <= m_range[1]:
        raise InvalidInput("m_range", m_range, "0 < low <= high")
    if n_jobs < 1:
        raise InvalidInput("jobs", n_jobs, ">= 1")
    if servers < 1:
        raise InvalidInput("machines", servers, ">= 1 edge server")
    if slots < 1:
        raise InvalidInput("slots", slots, ">= 1")
    w_cnt, p_cnt, note = server_shapes(servers, rng, node_path, skip_bad_rows=skip_bad_rows)
    n_types = int(rng.integers(8, 11))
    worker_types = tuple(tuple(int(k) for k in rng.integers(n_types, size=int(c))) for c in w_cnt)
    ps_types = tuple(tuple(int(k) for k in rng.integers(n_types, size=int(c))) for c in p_cnt)
    w_present = sorted({k for r in worker_types for k in r})
    p_present = sorted({k for r in ps_types for k in r})
    if not w_present or not p_present:
        raise InvalidInput("servers", servers, "at least one worker and one PS on the edge")
    storage = None if storage_gb is None else tuple(float(storage_gb) for _ in range(servers))
    system = EdgeCloud(worker_types, ps_types, n_types, storage)
    if arrivals is None:
        arrivals = np.sort(rng.integers(slots, size=n_jobs))
    arrivals = np.asarray(arrivals, dtype=np.int64)
    if len(arrivals) != n_jobs:
        raise InvalidInput("arrivals", len(arrivals), f"{n_jobs} values")
    jobs = []
    tail = 0
    for i, r in enumerate(arrivals):
        model, _, D, B, mb = MODELS[int(rng.integers(len(MODELS)))]
        delay = (
            *tuple(int(x) for x in rng.integers(1, 5, size=servers)),
            int(rng.integers(10, 16)),
        )
        job = EdgeJob(
            id=i,
            arrival=int(r),
            chunks=D,
            minibatches=B,
            epochs=int(rng.integers(20, 61)),
            m=float(rng.uniform(*m_range)),
            G=float(rng.uniform(10, 100)) / 3.6e6,
            q_mb=float(rng.uniform(30, 575)),
            b_mbps=float(rng.uniform(100, 5120)),
            worker_type=int(w_present[int(rng.integers(len(w_present)))]),
            ps_type=int(p_present[int(rng.integers(len(p_present)))]),
            delay=delay,
            chunk_gb=mb / D / 1024.0,
            model=model,
        )
        jobs.append(job)
        tail += max(delay) + D * chunk_slots(job, 0)  # serial on one worker: a safe cap
    horizon = int(arrivals.max()) + 1 + tail
    return EdgeCloudWorkload(tuple(jobs), system, horizon, source, (note, *notes))


def _storage(p: WorkloadParams) -> float | None:
    v = p.extra.get("storage_gb")
    if v is None:
        return None
    if not (isinstance(v, int | float) and v >= 0):
        raise InvalidInput("storage_gb", v, "a number >= 0")
    return float(v)


def _nodes(p: WorkloadParams) -> Path | None:
    v = p.extra.get("nodes")
    return None if v is None else Path(v)


@register_workload("edge-cloud", "synthetic")
def _synthetic(p: WorkloadParams, rng: np.random.Generator) -> EdgeCloudWorkload:
    return edge_cloud_workload(
        p.jobs or 300,
        p.machines or 100,
        p.slots or 1000,
        rng,
        storage_gb=_storage(p),
        node_path=_nodes(p),
        skip_bad_rows=bool(p.extra.get("skip_bad_rows", False)),
    )


def philly_arrivals(
    n_jobs: int,
    slots: int,
    rng: np.random.Generator,
    path: Path | None = None,
    *,
    skip_bad_rows: bool = False,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Philly submission times scaled onto ``slots``, and notes on the trace read."""
    from dmlsched.workloads.traces import arrivals_with_notes

    arr, notes = arrivals_with_notes(
        "philly", n_jobs, slots, rng, path, skip_bad_rows=skip_bad_rows
    )
    return np.asarray(arr, dtype=np.int64), notes


@register_workload("edge-cloud", "philly")
def _philly(p: WorkloadParams, rng: np.random.Generator) -> EdgeCloudWorkload:
    n, slots = p.jobs or 300, p.slots or 1000
    skip = bool(p.extra.get("skip_bad_rows", False))
    arr_rng, wl_rng = rng.spawn(2)
    arrivals, notes = philly_arrivals(n, slots, arr_rng, p.trace, skip_bad_rows=skip)
    return edge_cloud_workload(
        n,
        p.machines or 100,
        slots,
        wl_rng,
        arrivals=arrivals,
        storage_gb=_storage(p),
        node_path=_nodes(p),
        source="philly",
        notes=notes,
        skip_bad_rows=skip,
    )
