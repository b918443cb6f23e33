"""A_online speed model: processing capacity n_j of Eq. (1).

    n_j = 1 / (m_j + G_j + 2 q_j / b_j)   if ζ_j = 0   (workers and PS apart)
    n_j = 1 / (m_j + G_j)                 if ζ_j = 1   (whole job in the cloud)

in mini-batches per slot (one slot = one hour).  q_j/b_j, the time to send
the gradients (or receive the parameters), is q MB · 8 / b Mbps seconds.
ζ_j = 1 only when every chunk *and* the PS of job j are in the cloud
((2g)–(2h)); an edge server never gives ζ_j = 1.

Speed augmentation (Definition 1) multiplies n_j by (1 + ε).  A worker
trains whole slots (y ∈ {0, 1}), so a chunk needs ⌈E_j B_j / n_j⌉ slots.
"""

from __future__ import annotations

import math

from dmlsched.model.edge_cloud import EdgeJob

__all__ = ["SLOT_SECONDS", "chunk_slots", "comm_slots", "processing_capacity"]

SLOT_SECONDS = 3600.0
_CEIL_TOL = 1e-9


def comm_slots(job: EdgeJob) -> float:
    """2 q_j / b_j in slots (push gradients + pull parameters)."""
    return 2.0 * job.q_mb * 8.0 / job.b_mbps / SLOT_SECONDS


def processing_capacity(job: EdgeJob, zeta: int, speedup: float = 1.0) -> float:
    """Eq. (1): n_j mini-batches per slot for one qualified worker."""
    if zeta not in (0, 1):
        raise ValueError(f"zeta must be 0 or 1, got {zeta!r}")
    per_batch = job.m + job.G + (0.0 if zeta else comm_slots(job))
    return speedup / per_batch


def chunk_slots(job: EdgeJob, zeta: int, speedup: float = 1.0) -> int:
    """⌈E_j B_j / n_j⌉: whole slots one worker needs for one chunk."""
    exact = job.work_per_chunk / processing_capacity(job, zeta, speedup)
    return max(1, math.ceil(exact - _CEIL_TOL))
