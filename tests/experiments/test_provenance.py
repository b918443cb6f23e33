"""Fingerprints: what they cover, and resumes that recompute cells whose code changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlsched.experiments import provenance
from dmlsched.experiments.catalogue import get
from dmlsched.experiments.runner import RunConfig, run_experiment
from dmlsched.results import PROVENANCE, read_provenance, read_results
from tests.experiments.tiny import tiny

EXP = tiny("test-provenance")
FIFO = "dmlsched.schedulers.cluster.fifo"


def test_a_cell_s_code_is_its_experiment_its_engine_and_its_scheduler() -> None:
    exp = get("pdors-fig8")
    mods = provenance.module_closure(provenance.cell_roots(exp, "pd-ors"))
    assert "dmlsched.schedulers.cluster.pdors" in mods
    assert "dmlsched.sim.cluster" in mods and "dmlsched.experiments.defs.pdors" in mods
    assert "dmlsched.schedulers.cluster.oasis" not in mods  # another series' code
    assert "dmlsched.sim.geo" not in mods  # another setting's engine
    assert "dmlsched.experiments.claims" not in mods  # claims read results, never make them
    assert FIFO in provenance.module_closure(provenance.cell_roots(EXP, "fifo"))


def test_an_engine_package_counts_every_module_of_it(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    # the cluster engine is a package whose __init__ only re-exports: the slot loop,
    # the referee and the work credit live in its submodules, and they compute numbers
    mods = provenance.module_closure(provenance.cell_roots(EXP, "fifo"))
    for sub in ("state", "work", "referee", "fast", "usage", "simulate", "metrics"):
        assert f"dmlsched.sim.cluster.{sub}" in mods
    before = provenance.cell_fingerprint(EXP, "fifo", 3, 0, True)
    monkeypatch.setattr(provenance, "_source_digest", _changed("dmlsched.sim.cluster.work"))
    provenance._code_digest.cache_clear()
    request.addfinalizer(provenance._code_digest.cache_clear)
    assert provenance.cell_fingerprint(EXP, "fifo", 3, 0, True) != before


def test_a_name_a_package_re_exports_is_followed_to_the_module_defining_it() -> None:
    assert provenance._provider("dmlsched.sim.cluster", "ClusterState") == (
        "dmlsched.sim.cluster.state"
    )
    assert provenance._provider("dmlsched.sim.cluster", "no_such_name") == "dmlsched.sim.cluster"
    # service.core imports ClusterState from the package: the module defining it counts
    assert "dmlsched.sim.cluster.state" in provenance.module_closure(["dmlsched.service.core"])


def test_fingerprints_are_stable_and_tell_inputs_apart() -> None:
    fp = provenance.cell_fingerprint
    assert fp(EXP, "fifo", 3, 0, True) == fp(EXP, "fifo", 3, 0, True)
    assert fp(EXP, "fifo", 3, 0, True) != fp(EXP, "fifo", 3, 1, True)
    assert fp(EXP, "fifo", 3, 0, True) != fp(EXP, "drf", 3, 0, True)
    assert fp(EXP, "fifo", 3, 0, True) != fp(EXP, "fifo", 3, 0, False)
    assert "0x" not in provenance.stable(EXP.build)  # no memory addresses


def _changed(module: str, real=provenance._source_digest):  # type: ignore[no-untyped-def]
    """``_source_digest`` as if ``module``'s source had been edited."""

    def digest(m: str) -> str:
        return ("edited " + real(m)) if m == module else real(m)

    return digest


def test_changing_a_scheduler_s_code_invalidates_its_cached_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    cfg = RunConfig(seeds=2, workers=1)
    first = run_experiment(EXP, tmp_path, cfg)
    before = first.read_bytes()
    prov = read_provenance(tmp_path / PROVENANCE)
    assert len(prov) == 4 and all(
        p.made == (FIFO,) for k, p in prov.items() if k.scheduler == "fifo"
    )
    progress: list[tuple[int, int]] = []
    warnings: list[str] = []
    run_experiment(EXP, tmp_path, cfg, lambda d, t: progress.append((d, t)), warnings.append)
    assert progress == [(4, 4)] and not warnings  # unchanged code: nothing recomputed

    # a new process would read the edited source; this one forgets what it read
    monkeypatch.setattr(provenance, "_source_digest", _changed(FIFO))
    provenance._code_digest.cache_clear()
    request.addfinalizer(provenance._code_digest.cache_clear)  # nothing edited lingers
    progress.clear()
    out = run_experiment(EXP, tmp_path, cfg, lambda d, t: progress.append((d, t)), warnings.append)
    assert progress[0] == (2, 4) and progress[-1] == (4, 4)  # fifo's 2 cells ran again, drf's kept
    assert "2 cell(s) were computed by other code" in warnings[0]
    assert out.read_bytes() == before  # same code behaviour: same numbers, same bytes
    after = read_provenance(tmp_path / PROVENANCE)
    changed = {k for k in after if after[k].fingerprint != prov[k].fingerprint}
    assert {k.scheduler for k in changed} == {"fifo"}


def test_a_cell_without_provenance_is_recomputed(tmp_path: Path) -> None:
    cfg = RunConfig(seeds=2, workers=1)
    run_experiment(EXP, tmp_path, cfg)
    (tmp_path / PROVENANCE).unlink()  # e.g. written before fingerprints existed
    progress: list[tuple[int, int]] = []
    run_experiment(EXP, tmp_path, cfg, lambda d, t: progress.append((d, t)))
    assert progress[0] == (0, 4)
    assert len(read_provenance(tmp_path / PROVENANCE)) == 4


def test_seed_base_runs_other_seeds_and_is_recorded(tmp_path: Path) -> None:
    out = run_experiment(EXP, tmp_path, RunConfig(seeds=2, workers=1, seed_base=100))
    assert sorted(set(read_results(out)["seed"])) == [100, 101]
    assert '"seed_base": 100' in (tmp_path / "config.json").read_text()
