"""Pollux's row domain: the bounds as data match the files, and rows inside it run."""

from __future__ import annotations

import csv

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmlsched.workloads.pollux_domain import (
    MAX_REPLICAS,
    POLLUX_DOMAIN,
    clamp_to_domain,
    domain_violations,
    pollux_local_batch,
)
from dmlsched.workloads.profiles import load_profiles
from tests.workloads.test_peers import POLLUX, needs_peers


def test_bert_on_4_gpus_with_batch_11_is_outside_for_both_lower_bounds() -> None:
    why = domain_violations("bert", 4, 11)
    assert len(why) == 2 and "smallest validated" in why[0] and "local batch" in why[1]
    assert clamp_to_domain("bert", 4, 11) == (4, 16)


@given(
    app=st.sampled_from(sorted(POLLUX_DOMAIN)),
    r=st.integers(1, 200),
    b=st.integers(1, 100_000),
)
def test_clamping_lands_inside_and_keeps_rows_already_inside(app: str, r: int, b: int) -> None:
    r2, b2 = clamp_to_domain(app, r, b)
    assert domain_violations(app, r2, b2) == []
    if not domain_violations(app, r, b):
        assert (r2, b2) == (r, b)


@needs_peers
def test_smallest_local_batch_is_the_profiles() -> None:
    profs = load_profiles(POLLUX / "profiles")
    for app, d in POLLUX_DOMAIN.items():
        assert d.min_local == profs[app].min_local_bsz, app


@needs_peers
def test_the_artifacts_own_rows_are_inside_the_domain() -> None:
    for i in range(1, 9):
        with (POLLUX / "workloads" / f"workload-{i}.csv").open() as f:
            for row in csv.DictReader(f):
                app, r, b = row["application"], int(row["num_replicas"]), int(row["batch_size"])
                assert domain_violations(app, r, b) == [], (i, row)


@needs_peers
@pytest.mark.parametrize("app", sorted(POLLUX_DOMAIN))
def test_inside_the_domain_the_local_batch_stays_in_every_measured_range(app: str) -> None:
    """What makes Pollux crash (interp1d out of range) cannot happen inside the domain."""
    prof = load_profiles(POLLUX / "profiles")[app]
    d = POLLUX_DOMAIN[app]
    for r in range(1, MAX_REPLICAS + 1):
        measured = [v[0] for k, v in prof.placements.items() if sum(k) == r]
        lo_b = max(d.min_batch, r * d.min_local)
        for b in sorted({lo_b, (lo_b + d.max_batch) // 2, d.max_batch}):
            if domain_violations(app, r, b):
                continue
            atomic, _ = pollux_local_batch(app, r, b, prof.max_local_bsz)
            assert atomic >= d.min_local, (r, b, atomic)
            for lbs in measured:
                assert lbs[0] <= atomic <= lbs[-1], (r, b, atomic, lbs[0], lbs[-1])
