"""Out-of-tree schedulers load without editing the package: ``--plugin FILE.py`` or
``--plugin MODULE`` on run, compare, reproduce, serve and testbed run (and in the
worker processes of a sweep, on a process pool or Ray), and installed distributions'
entry points of the group ``dmlsched.schedulers`` (a module or a class)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dmlsched.cli import main
from dmlsched.errors import InvalidInput
from dmlsched.schedulers.plugins import Plugin, load_plugin, load_plugins
from dmlsched.schedulers.protocols import make_scheduler, registry

PLUGIN = """
from typing import ClassVar

from dmlsched.model.cluster import ClusterDecision, Placement


class OneMachineEach:
    \"\"\"Admit each job on arrival: 1 worker + 1 PS on machine (job id mod H).\"\"\"

    name: ClassVar[str] = "one-machine-each"
    setting: ClassVar[str] = "cluster"

    def reset(self, cluster, horizon, rng):
        self.machines_ = cluster.machines

    def decide(self, view):
        jobs = (*view.active, *view.pending)
        return ClusterDecision({j: Placement((j % self.machines_,), (1,), (1,)) for j in jobs})
"""

EXPERIMENT = """
from dmlsched.experiments.catalogue import Experiment, register
from dmlsched.rng import make_rng, spawn
from dmlsched.workloads.registry import WorkloadParams, build_workload


def build(point, seed, quick):
    params = WorkloadParams(jobs=int(point), machines=3, slots=6)
    return build_workload("cluster", "synthetic", params, spawn(make_rng(seed), 2)[0])


register(
    Experiment(
        id="plugin-demo",
        setting="cluster",
        title="one-machine-each against FIFO",
        param="jobs",
        points=(4, 6),
        quick_points=(4, 6),
        schedulers=("one-machine-each", "fifo"),
        metrics=("total_utility",),
        build=build,
        default_seeds=2,
    )
)
"""

SIZE = ["--jobs", "6", "--machines", "3", "--slots", "6"]


def _write(path: Path, text: str) -> str:
    path.write_text(textwrap.dedent(text))
    return str(path)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_run_takes_a_scheduler_from_a_plugin_file(
    plugin_sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(plugin_sandbox / "my_sched.py", PLUGIN)
    assert main(["run", "--scheduler", "one-machine-each", *SIZE]) == 2
    assert "invalid scheduler='one-machine-each'" in _one_line_error(capsys)
    assert main(["run", "--plugin", path, "--scheduler", "one-machine-each", *SIZE]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["admitted_jobs"] > 0
    assert ("cluster", "one-machine-each") in registry("cluster")


def test_a_plugin_is_loaded_once_and_its_record_loads_it_elsewhere(plugin_sandbox: Path) -> None:
    path = _write(plugin_sandbox / "my_sched.py", PLUGIN)
    first = load_plugin(path)
    assert first == Plugin(str(Path(path).resolve()), "my_sched", Path(path).read_text())
    assert load_plugins([path, first]) == (first, first)  # the file, and the record of it
    assert type(make_scheduler("cluster", "one-machine-each")).__module__ == "my_sched"


def test_compare_loads_the_plugin_in_every_worker_and_records_it(
    plugin_sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(plugin_sandbox / "my_sched.py", PLUGIN)
    out = plugin_sandbox / "out"
    args = ["compare", "--plugin", path, "--schedulers", "one-machine-each,fifo", *SIZE]
    assert main([*args, "--seeds", "2", "--workers", "2", "--out", str(out)]) == 0
    rows = (out / "results.csv").read_text().splitlines()
    assert sum(",one-machine-each," in r for r in rows) == sum(",fifo," in r for r in rows) > 0
    config = json.loads((out / "config.json").read_text())
    assert config["plugins"] == [str(Path(path).resolve())]
    # in this process (one worker): the same file
    again = plugin_sandbox / "again"
    assert main([*args, "--seeds", "2", "--workers", "1", "--out", str(again)]) == 0
    assert (again / "results.csv").read_bytes() == (out / "results.csv").read_bytes()


def test_reproduce_runs_an_experiment_a_plugin_registers(
    plugin_sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(plugin_sandbox / "plugin_demo.py", PLUGIN + EXPERIMENT)
    out = plugin_sandbox / "demo"
    assert main(["reproduce", "plugin-demo", "--out", str(out)]) == 2
    assert "invalid experiment='plugin-demo'" in _one_line_error(capsys)
    args = ["reproduce", "plugin-demo", "--plugin", path, "--workers", "2", "--out", str(out)]
    assert main(args) == 0
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) > 1 and any(",one-machine-each," in r for r in rows)


def test_a_module_plugin_is_imported_by_name(
    plugin_sandbox: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = plugin_sandbox / "acme_sched"
    pkg.mkdir()
    _write(pkg / "__init__.py", "")
    _write(pkg / "policies.py", PLUGIN)
    monkeypatch.syspath_prepend(str(plugin_sandbox))
    args = ["run", "--plugin", "acme_sched.policies", "--scheduler", "one-machine-each", *SIZE]
    assert main(args) == 0
    assert load_plugin("acme_sched.policies") == Plugin(
        "acme_sched.policies", "acme_sched.policies"
    )


@pytest.mark.parametrize(
    ("file", "text", "error"),
    [
        ("missing.py", None, "FileNotFoundError"),
        ("broken.py", "import no_such_module_anywhere\n", "ModuleNotFoundError"),
        ("syntax.py", "def f(:\n", "SyntaxError"),
        ("raises.py", "x = 1\nraise RuntimeError('boom')\n", "RuntimeError: boom at line 2"),
        ("taken.py", PLUGIN.replace('"one-machine-each"', '"fifo"'), "already registered"),
        ("no.such.module", None, "ModuleNotFoundError"),
        ("bad-name.py", "", "identifier"),
    ],
)
@pytest.mark.parametrize("command", ["run", "compare", "reproduce", "serve", "testbed run"])
def test_a_bad_plugin_exits_2_with_one_line_naming_it_and_the_error(
    plugin_sandbox: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    file: str,
    text: str | None,
    error: str,
) -> None:
    spec = str(plugin_sandbox / file) if file.endswith(".py") else file
    if text is not None:
        _write(plugin_sandbox / file, text)
    out = str(plugin_sandbox / "out")
    args = {
        "run": ["run", "--scheduler", "fifo"],
        "compare": ["compare", "--schedulers", "fifo", "--out", out],
        "reproduce": ["reproduce", "pdors-fig6", "--out", out],
        "serve": ["serve", "--scheduler", "fifo", "--manual-clock", "--db", out + ".db"],
        "testbed run": ["testbed", "run", "--scheduler", "fifo", "--out", out],
    }[command]
    assert main([*args, "--plugin", spec]) == 2
    line = _one_line_error(capsys)
    assert line.startswith(f"dmlsched: invalid plugin='{spec}'") and error in line, line
    assert not Path(out).exists() and not Path(out + ".db").exists()


# ---------------------------------------------------------------- entry points


def _dist(site: Path, name: str, entry_points: str) -> None:
    """A throwaway installed distribution in ``site``: its .dist-info with entry points."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def _fresh_entry_points() -> None:
    from dmlsched.schedulers import plugins

    plugins._ENTRY_POINTS.clear()


def test_entry_points_naming_a_module_or_a_class_join_the_registry(
    plugin_sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = plugin_sandbox / "site"
    site.mkdir()
    _write(site / "ep_module_sched.py", PLUGIN)
    other = PLUGIN.replace("OneMachineEach", "Spread").replace('"one-machine-each"', '"spread"')
    _write(site / "ep_class_sched.py", other)
    _dist(
        site,
        "acme_schedulers",
        """
        [dmlsched.schedulers]
        module = ep_module_sched
        cls = ep_class_sched:Spread
        """,
    )
    monkeypatch.syspath_prepend(str(site))
    _fresh_entry_points()
    names = {n for _, n in registry("cluster")}
    assert {"one-machine-each", "spread"} <= names
    sched = make_scheduler("cluster", "spread")
    assert type(sched).__module__ == "ep_class_sched"


def test_a_broken_entry_point_is_invalid_input_naming_it(
    plugin_sandbox: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = plugin_sandbox / "site"
    _dist(site, "broken_schedulers", "[dmlsched.schedulers]\nbad = no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(site))
    _fresh_entry_points()
    with pytest.raises(InvalidInput, match=r"bad = no_such_module_anywhere \(broken_schedulers\)"):
        registry("cluster")
    assert main(["schedulers"]) == 2
    assert "ModuleNotFoundError" in _one_line_error(capsys)


def test_a_built_in_scheduler_is_made_without_scanning_installed_plugins(
    plugin_sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no plugin may take a built-in name, so a broken one stops only what needs the scan
    site = plugin_sandbox / "site"
    _dist(site, "broken_schedulers", "[dmlsched.schedulers]\nbad = no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(site))
    _fresh_entry_points()
    assert type(make_scheduler("cluster", "fifo")).name == "fifo"
    with pytest.raises(InvalidInput, match=r"bad = no_such_module_anywhere"):
        make_scheduler("cluster", "no-such-scheduler")


# ---------------------------------------------------------------- the service


def test_a_service_restarted_without_its_plugin_is_refused_naming_it(
    plugin_sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.store import open_store

    path = str(load_plugin(_write(plugin_sandbox / "my_sched.py", PLUGIN)).where)
    db = str(plugin_sandbox / "service.db")
    store = open_store(db)
    Core(ServiceConfig("one-machine-each", plugins=(path,)), store).open()
    store.close()
    store = open_store(db)  # one writer at a time: closed before serve opens it
    first = next(iter(store.records(limit=1)))
    store.close()
    assert first.kind == "config" and first.body["plugins"] == [path]
    from dmlsched.schedulers import registration

    registration._REGISTRY.pop(("cluster", "one-machine-each"))  # a new process: not loaded
    assert main(["serve", "--scheduler", "one-machine-each", "--manual-clock", "--db", db]) == 2
    line = _one_line_error(capsys)
    assert f"--plugin {path}: the log in {db} was made with its schedulers" in line, line
    # given, but another set of plugins than the log's: the core refuses it
    other = Core(ServiceConfig("one-machine-each"), open_store(db))
    with pytest.raises(InvalidInput, match="plugins") as err:
        other.open()
    other.store.close()
    assert err.value.value is None


def _config(**kw: Any) -> dict[str, Any]:
    from dmlsched.service.core import ServiceConfig

    return ServiceConfig("fifo", **kw).to_body()


def test_a_service_config_without_plugins_is_recorded_as_before() -> None:
    assert "plugins" not in _config()
    assert _config(plugins=("/x/my.py",))["plugins"] == ["/x/my.py"]
