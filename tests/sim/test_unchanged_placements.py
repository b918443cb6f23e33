"""The cluster engine's fast path for placements it has read before.

A placement whose three field tuples are the very objects the engine last
read and checked for that job is not read again (``sim.cluster.fast.unchanged``:
by identity; the engine keeps those tuples alive, so their ids cannot be
reused, and a tuple cannot change).  Every way of changing what a returned
placement holds must go around that path: each cheat below is refused, and
skipping the read must give the bytes of a run that reads every placement.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest

from dmlsched.checks.replay import result_bytes
from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.rng import make_rng
from dmlsched.sim.cluster import state as engine
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import engine_test_scheduler, make_job

# Two long jobs on two machines (F = 10 workers each; 4 GPUs and 8 CPUs a machine).
WL = ClusterWorkload(
    (make_job(0, epochs=10_000), make_job(1, epochs=10_000)),
    Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0)),
    6,
)


class _Keeper:
    """Returns the same Placement objects every slot; from slot 2 on, ``cheat`` may
    change them (or the decision) the way a scheduler could."""

    name = "keeper"
    setting = "cluster"

    def __init__(self, cheat: Callable[[dict[int, Placement], int], None]) -> None:
        self.cheat = cheat

    def reset(self, *a: Any) -> None:
        self.kept = {0: Placement((0,), (2,), (1,)), 1: Placement((1,), (2,), (1,))}

    def decide(self, view: Any) -> ClusterDecision:
        if view.slot >= 2:
            self.cheat(self.kept, view.slot)
        return ClusterDecision(dict(self.kept))


def _set(field: str, value: Any) -> Callable[[dict[int, Placement], int], None]:
    return lambda kept, slot: object.__setattr__(kept[0], field, value)


def _new_dict(kept: dict[int, Placement], slot: int) -> None:
    object.__setattr__(kept[0], "__dict__", {"machines": (0,), "workers": (40,), "ps": (20,)})


def _delete_ps(kept: dict[int, Placement], slot: int) -> None:
    if "ps" in vars(kept[0]):
        object.__delattr__(kept[0], "ps")


def _grow_a_list(kept: dict[int, Placement], slot: int) -> None:
    """A list field (valid when read at slot 2), grown in place at slot 3."""
    if slot == 2:
        object.__setattr__(kept[0], "workers", [2])
    else:
        kept[0].workers[0] = 40  # type: ignore[index]


def _other_jobs_tuples(kept: dict[int, Placement], slot: int) -> None:
    """Job 0 keeps its object but takes job 1's (already checked) tuples: two jobs on
    machine 1 then need 8 GPUs of its 4."""
    p, q = kept[0], kept[1]
    for f in ("machines", "workers", "ps"):
        object.__setattr__(p, f, getattr(q, f))


class _Ones(tuple):  # type: ignore[type-arg]
    """A tuple subclass that iterates as ones."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter([1] * len(self))


CHEATS = {
    "workers-grown-with-setattr": _set("workers", (40,)),
    "workers-over-F-with-setattr": _set("workers", (11,)),
    "ps-removed-with-setattr": _set("ps", (0,)),
    "dict-replaced": _new_dict,
    "field-deleted": _delete_ps,
    "list-field-grown-in-place": _grow_a_list,
    "another-jobs-checked-tuples": _other_jobs_tuples,
    "tuple-subclass-swapped-in": _set("workers", _Ones((40,))),
    "placement-type-changed": lambda kept, slot: object.__setattr__(
        kept[0], "__class__", type("Sub", (Placement,), {})
    ),
}


def test_the_honest_keeper_is_read_once_per_job() -> None:
    """The fast path is taken: two reads for six slots of two jobs."""
    with mock.patch.object(engine, "read_placement", wraps=engine.read_placement) as read:
        res = simulate("cluster", WL, _Keeper(lambda kept, slot: None), make_rng(0))
    assert res.metrics["admitted_jobs"] == 2
    assert read.call_count == 2


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_changing_a_returned_placement_is_read_again_and_refused(name: str) -> None:
    with pytest.raises(InvalidDecision) as err:
        simulate("cluster", WL, _Keeper(CHEATS[name]), make_rng(0))
    assert err.value.slot in (2, 3)


class _Fresh:
    """Wraps a scheduler and returns fresh copies of its placements (the engine then
    reads every one, every slot)."""

    name = "fresh"
    setting = "cluster"

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def reset(self, *a: Any) -> None:
        self.inner.reset(*a)

    def decide(self, view: Any) -> ClusterDecision:
        d = self.inner.decide(view)
        alloc = {
            j: Placement(tuple(p.machines), tuple(p.workers), tuple(p.ps))
            for j, p in d.allocations.items()
        }
        return dataclasses.replace(d, allocations=alloc)


@pytest.mark.parametrize("name", ["fifo", "tiresias", "srtf", "drf", "dorm"])
@pytest.mark.parametrize("seed", [0, 1])
def test_skipping_unchanged_placements_gives_the_bytes_of_reading_every_one(
    name: str, seed: int
) -> None:
    wl = synthetic_cluster(30, 5, 25, make_rng(seed))
    kept = simulate("cluster", wl, engine_test_scheduler("cluster", name), make_rng(seed + 1))
    fresh = simulate(
        "cluster", wl, _Fresh(engine_test_scheduler("cluster", name)), make_rng(seed + 1)
    )
    assert result_bytes(kept) == result_bytes(fresh)
