"""Export to Pollux/Gavel formats and back: the job list round-trips."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.cli import main
from dmlsched.errors import InvalidInput
from dmlsched.rng import make_rng
from dmlsched.workloads.export import export_workload, nearest_application
from dmlsched.workloads.peers import GAVEL_MODELS, build_peer_workload, read_gavel, read_pollux
from dmlsched.workloads.profiles import APPLICATIONS
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.model.test_measured_speed import toy_profile

# one toy profile for every application: the applications then differ by g alone
TOY = {a: toy_profile() for a in APPLICATIONS}

pollux_rows = st.lists(
    st.tuples(
        st.integers(0, 10**6),  # time (s)
        st.sampled_from(sorted(APPLICATIONS)),
        st.integers(1, 16),  # replicas
        st.integers(0, 4096),  # extra batch above replicas
    ),
    min_size=1,
    max_size=12,
)
gavel_lines = st.lists(
    st.tuples(
        st.sampled_from(sorted(GAVEL_MODELS)),
        st.integers(1, 512),  # per-worker batch
        st.integers(1, 10**7),  # steps
        st.integers(0, 10**6),  # arrival (s)
        st.sampled_from([1, 2, 4, 8, 16, 32]),
    ),
    min_size=1,
    max_size=12,
)
SLOTS = st.sampled_from([1.0, 30.0, 60.0, 3600.0])


def _pollux_text(rows: list[tuple[int, str, int, int]]) -> str:
    body = "".join(f"j{i},{t},{a},{r},{r + extra}\n" for i, (t, a, r, extra) in enumerate(rows))
    return "name,time,application,num_replicas,batch_size\n" + body


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=pollux_rows, slot=SLOTS)
def test_pollux_export_then_import_gives_the_same_jobs(rows: list, slot: float) -> None:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.csv"
        src.write_text(_pollux_text(rows))
        first = build_peer_workload(read_pollux(src), source="x", slot_seconds=slot, profiles=TOY)
        out = Path(d) / "out.csv"
        export_workload(first, "pollux", out, slot, profiles=TOY)
        again = build_peer_workload(read_pollux(out), source="x", slot_seconds=slot, profiles=TOY)
    assert again.jobs == first.jobs and again.horizon == first.horizon


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=gavel_lines, slot=SLOTS)
def test_gavel_export_then_import_gives_the_same_jobs(lines: list, slot: float) -> None:
    text = "".join(
        f"{m} (batch size {b})\tcmd\t-n\t1\t{steps}\t{t}.000000\t{w}\n"
        for m, b, steps, t, w in lines
    )
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.trace"
        src.write_text(text)
        first = build_peer_workload(read_gavel(src), source="x", slot_seconds=slot, profiles=TOY)
        out = Path(d) / "out.trace"
        export_workload(first, "gavel", out, slot, profiles=TOY)
        again = build_peer_workload(read_gavel(out), source="x", slot_seconds=slot, profiles=TOY)
    assert again.jobs == first.jobs


def test_imported_job_maps_back_to_its_own_application() -> None:
    from dmlsched.workloads.peers import PeerRow

    rows = [PeerRow(0.0, a, 2, 64, 1, 100) for a in sorted(APPLICATIONS)]
    wl = build_peer_workload(rows, source="x", slot_seconds=60.0, profiles=TOY)
    for job, row in zip(sorted(wl.jobs, key=lambda j: j.id), rows, strict=True):
        assert nearest_application(job, 60.0, TOY) == row.application


def test_synthetic_jobs_export_with_arrival_seconds_and_default_gang(tmp_path: Path) -> None:
    wl = synthetic_cluster(6, 3, 10, make_rng(0))
    out = tmp_path / "s.csv"
    export_workload(wl, "pollux", out, 3600.0, profiles=TOY)
    rows = read_pollux(out)
    jobs = sorted(wl.jobs, key=lambda j: j.id)
    assert [r.time for r in rows] == [j.arrival * 3600.0 for j in jobs]
    assert [r.workers for r in rows] == [min(j.batch, 4) for j in jobs]


def test_unknown_format_is_invalid_input(tmp_path: Path) -> None:
    wl = synthetic_cluster(2, 3, 10, make_rng(0))
    with pytest.raises(InvalidInput, match="format"):
        export_workload(wl, "slurm", tmp_path / "x", 60.0, profiles=TOY)


def test_cli_export_rejects_a_bad_format_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "export",
            "--workload",
            "synthetic",
            "--jobs",
            "3",
            "--format",
            "slurm",
            "--out",
            str(tmp_path / "x"),
        ]
    )
    assert code == 2 and "format" in capsys.readouterr().err
