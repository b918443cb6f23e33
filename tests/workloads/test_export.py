"""Export to Pollux/Gavel formats: rows the peers accept, and the job list round-trips."""

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
from dmlsched.workloads.gavel_table import GAVEL_JOB_TYPES, job_type_name, load_gavel_table
from dmlsched.workloads.peers import (
    PeerRow,
    build_gavel_workload,
    build_pollux_workload,
    read_gavel,
    read_pollux,
)
from dmlsched.workloads.pollux_domain import POLLUX_DOMAIN, domain_violations
from dmlsched.workloads.profiles import APPLICATIONS
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.model.test_measured_speed import toy_profile
from tests.workloads.test_peers import GAVEL, needs_peers

# one toy profile for every application: the applications then differ by g alone
TOY = {a: toy_profile() for a in APPLICATIONS}
# every job type of Gavel's grid, 10 steps/s per GPU (enough to build and export)
TOY_TABLE = {
    (job_type_name(m, b), s): 10.0 * s
    for m, g in GAVEL_JOB_TYPES.items()
    for b in (g.batches or (g.default_batch,))
    for s in g.scales
}
GRID = set(TOY_TABLE)


@st.composite
def domain_row(draw: st.DrawFn) -> tuple[int, str, int, int]:
    """(time s, app, replicas, batch) inside Pollux's domain."""
    app = draw(st.sampled_from(sorted(POLLUX_DOMAIN)))
    d = POLLUX_DOMAIN[app]
    r = draw(st.integers(1, d.max_replicas))
    b = draw(st.integers(max(d.min_batch, r * d.min_local), d.max_batch))
    return draw(st.integers(0, 10**6)), app, r, b


@st.composite
def gavel_line(draw: st.DrawFn) -> tuple[str, int, int, int]:
    """(job type, steps, arrival s, scale) of Gavel's grid."""
    model = draw(st.sampled_from(sorted(GAVEL_JOB_TYPES)))
    g = GAVEL_JOB_TYPES[model]
    b = draw(st.sampled_from(g.batches or (g.default_batch,)))
    return (
        job_type_name(model, b),
        draw(st.integers(1, 10**7)),
        draw(st.integers(0, 10**6)),
        draw(st.sampled_from(g.scales)),
    )


SLOTS = st.sampled_from([1.0, 30.0, 60.0, 3600.0])


def _pollux_text(rows: list[tuple[int, str, int, int]]) -> str:
    body = "".join(f"j{i},{t},{a},{r},{b}\n" for i, (t, a, r, b) in enumerate(rows))
    return "name,time,application,num_replicas,batch_size\n" + body


def _gavel_text(lines: list[tuple[str, int, int, int]], ten: bool) -> str:
    out = []
    for jt, steps, t, w in lines:
        if ten:
            out.append(f"{jt}\tcmd\tdir\t-n\t1\t{steps}\t{w}\t1\t-1\t{t}.000000")
        else:
            out.append(f"{jt}\tcmd\t-n\t1\t{steps}\t{t}.000000\t{w}")
    return "\n".join(out) + "\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(domain_row(), min_size=1, max_size=12), slot=SLOTS)
def test_pollux_export_then_import_gives_the_same_jobs(rows: list, slot: float) -> None:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.csv"
        src.write_text(_pollux_text(rows))
        first = build_pollux_workload(read_pollux(src), source="x", slot_seconds=slot, profiles=TOY)
        out = Path(d) / "out.csv"
        rep = export_workload(first, "pollux", out, profiles=TOY)
        again = build_pollux_workload(read_pollux(out), source="x", slot_seconds=slot, profiles=TOY)
    assert rep.clamped == 0
    assert again.jobs == first.jobs and again.horizon == first.horizon
    assert again.kinds == first.kinds


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(gavel_line(), min_size=1, max_size=12), slot=SLOTS, ten=st.booleans())
def test_gavel_export_then_import_gives_the_same_jobs(lines: list, slot: float, ten: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.trace"
        src.write_text(_gavel_text(lines, ten))
        kw = dict(source="x", slot_seconds=slot, table=TOY_TABLE)
        first = build_gavel_workload(read_gavel(src), **kw)
        out = Path(d) / "out.trace"
        export_workload(first, "gavel", out)
        again = build_gavel_workload(read_gavel(out), **kw)
    assert again.jobs == first.jobs and again.kinds == first.kinds


def test_seven_and_ten_field_lines_read_the_same(tmp_path: Path) -> None:
    lines = [("ResNet-50 (batch size 64)", 1000, 7200, 8), ("A3C", 10, 0, 1)]
    seven, ten = tmp_path / "a.trace", tmp_path / "b.trace"
    seven.write_text(_gavel_text(lines, ten=False))
    ten.write_text(_gavel_text(lines, ten=True))
    assert read_gavel(seven) == read_gavel(ten)


def test_a_row_outside_the_domain_is_moved_inside_and_counted(tmp_path: Path) -> None:
    rows = [PeerRow(0.0, "bert", 4, 11, 2, 100, "bert"), PeerRow(0.0, "cifar10", 2, 512, 1, 9)]
    # build from rows the reader would refuse to keep the point: export clamps them
    wl = build_pollux_workload(rows, source="x", profiles=TOY)
    rep = export_workload(wl, "pollux", tmp_path / "o.csv", profiles=TOY)
    got = read_pollux(tmp_path / "o.csv")
    assert rep.clamped == 1
    assert (got[0].workers, got[0].batch) == (4, 16)  # 4 GPUs × bert's smallest local batch 4
    assert (got[1].workers, got[1].batch) == (2, 512)


@pytest.mark.parametrize("seed", [0, 1])
def test_200_synthetic_jobs_export_to_pollux_inside_every_domain(tmp_path: Path, seed: int) -> None:
    wl = synthetic_cluster(200, 10, 20, make_rng(seed))
    export_workload(wl, "pollux", tmp_path / "s.csv", profiles=TOY)
    rows = read_pollux(tmp_path / "s.csv")
    assert len(rows) == 200
    for r in rows:
        assert domain_violations(r.application, r.workers, r.batch) == [], r


@pytest.mark.parametrize("seed", [0, 1])
def test_200_synthetic_jobs_export_to_gavel_with_ten_fields_and_table_types(
    tmp_path: Path, seed: int
) -> None:
    wl = synthetic_cluster(200, 10, 20, make_rng(seed))
    out = tmp_path / "s.trace"
    export_workload(wl, "gavel", out, profiles=TOY)
    lines = out.read_text().splitlines()
    assert len(lines) == 200
    for line in lines:
        f = line.split("\t")
        assert len(f) == 10
        assert (f[0], int(f[6])) in GRID, line
    assert {(r.kind, r.workers) for r in read_gavel(out)} <= GRID


@needs_peers
def test_gavel_export_uses_only_types_and_scales_of_gavels_own_table(tmp_path: Path) -> None:
    table = load_gavel_table(GAVEL.parent / "simulation_throughputs.json")
    assert set(table) == GRID  # the grid kept as data is the file's
    wl = synthetic_cluster(200, 10, 20, make_rng(3))
    export_workload(wl, "gavel", tmp_path / "s.trace", profiles=TOY)
    for line in (tmp_path / "s.trace").read_text().splitlines():
        f = line.split("\t")
        assert (f[0], int(f[6])) in table


def test_imported_job_maps_back_to_its_own_application() -> None:
    rows = [PeerRow(0.0, a, 2, 64, 1, 100) for a in sorted(APPLICATIONS)]
    wl = build_pollux_workload(rows, source="x", slot_seconds=60.0, profiles=TOY)
    for job, row in zip(sorted(wl.jobs, key=lambda j: j.id), rows, strict=True):
        assert nearest_application(job, 60.0, TOY) == row.application


def test_synthetic_jobs_export_with_arrival_seconds_and_default_gang(tmp_path: Path) -> None:
    wl = synthetic_cluster(6, 3, 10, make_rng(0))
    out = tmp_path / "s.csv"
    export_workload(wl, "pollux", out, profiles=TOY)
    rows = read_pollux(out)
    jobs = sorted(wl.jobs, key=lambda j: j.id)
    assert [r.time for r in rows] == [j.arrival * 3600.0 for j in jobs]
    assert all(r.workers <= 4 for r in rows)


def test_unknown_format_is_invalid_input(tmp_path: Path) -> None:
    wl = synthetic_cluster(2, 3, 10, make_rng(0))
    with pytest.raises(InvalidInput, match="format"):
        export_workload(wl, "slurm", tmp_path / "x", profiles=TOY)


def test_cli_export_rejects_a_bad_format_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["export", "--workload", "synthetic", "--jobs", "3", "--format", "slurm"]
    code = main([*args, "--out", str(tmp_path / "x")])
    assert code == 2 and "format" in capsys.readouterr().err


def test_cli_export_without_shared_profiles_says_to_pass_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dmlsched.workloads.profiles as profiles

    monkeypatch.setattr(profiles, "default_profile_dir", lambda: None)
    args = ["export", "--workload", "synthetic", "--jobs", "3", "--format", "pollux"]
    code = main([*args, "--out", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "--profiles PATH" in err and err.count("\n") == 1


def test_cli_export_slot_seconds_on_a_synthetic_workload_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["export", "--workload", "synthetic", "--jobs", "3", "--format", "pollux"]
    code = main([*args, "--slot-seconds", "60", "--out", str(tmp_path / "x.csv")])
    assert code == 2 and "slot-seconds" in capsys.readouterr().err
