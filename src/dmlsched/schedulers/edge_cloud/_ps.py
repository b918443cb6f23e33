"""A_ps (Wang et al., Alg. 5): one PS per training job, shared by every policy here.

At slot t a job gets a PS only if it trains.  A job that also trained at
t − 1 keeps its PS (no switching overhead); otherwise one PS is drawn
uniformly at random among the free PSs qualified for it (o_jsp = 1).

Where Alg. 2 leaves the PS location (Sec. IV-D: "its worker allocation
determines whether its PS is placed on the cloud or on edge servers"): an
all-cloud job (ζ_j = 1) takes a cloud PS; any other job draws among free
qualified *edge* PSs and falls back to a cloud PS when none is free — its
rate is the ζ_j = 0 rate either way, so the fallback costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from dmlsched.model.edge_cloud import EdgeCloud, Slot
from dmlsched.model.views import EdgeCloudView

__all__ = ["assign_ps", "cloud_runs", "ps_pools"]


def cloud_runs(cloud: Mapping[int, int], view: EdgeCloudView) -> dict[int, tuple[int, ...]]:
    """The chunks all-cloud jobs train at ``view``'s slot: every job of ``cloud`` (job →
    the slot its data reaches the cloud) that has arrived there, with its chunks that
    have work left (all of them before the engine reports any)."""
    run: dict[int, tuple[int, ...]] = {}
    for j, ready in cloud.items():
        if ready <= view.slot:
            rem_j = view.remaining.get(j)
            if rem_j is None:
                run[j] = tuple(range(view.jobs[j].chunks))
            else:
                run[j] = tuple(np.flatnonzero(rem_j > 0).tolist())
    return run


def ps_pools(system: EdgeCloud) -> dict[int, list[Slot]]:
    """Edge PSs by type: type → [(s, p)]."""
    pools: dict[int, list[Slot]] = {}
    for s, row in enumerate(system.ps_types):
        for p, k in enumerate(row):
            pools.setdefault(int(k), []).append((s, p))
    return pools


def assign_ps(
    system: EdgeCloud,
    pools: Mapping[int, list[Slot]],
    running: Iterable[int],
    ps_type: Mapping[int, int],
    zeta: Mapping[int, int],
    last_ps: Mapping[int, Slot],
    rng: np.random.Generator,
) -> dict[int, Slot]:
    """Alg. 5 for the jobs in ``running`` (iterated in the given order)."""
    running = list(running)
    cloud: Slot = (system.cloud, 0)
    out: dict[int, Slot] = {}
    taken: set[Slot] = set()
    for j in running:  # line 3: continuing jobs keep their PS first
        prev = last_ps.get(j)
        if prev is not None and (prev[0] == system.cloud or prev not in taken):
            out[j] = prev
            if prev[0] != system.cloud:
                taken.add(prev)
    for j in running:  # line 6: a random free qualified PS
        if j in out:
            continue
        if zeta.get(j, 0) == 1:
            out[j] = cloud
            continue
        sp = _draw_free(pools.get(ps_type[j], []), taken, rng)
        out[j] = cloud if sp is None else sp
        if sp is not None:
            taken.add(sp)
    return out


def _draw_free(pool: list[Slot], taken: set[Slot], rng: np.random.Generator) -> Slot | None:
    """Uniform draw among ``pool`` minus ``taken`` (rejection first: pools are large)."""
    if not pool:
        return None
    for _ in range(8):
        sp = pool[int(rng.integers(len(pool)))]
        if sp not in taken:
            return sp
    free = [sp for sp in pool if sp not in taken]
    return free[int(rng.integers(len(free)))] if free else None
