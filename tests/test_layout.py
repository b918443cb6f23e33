"""The layout the design promises: dependencies point one way, and the README's
"Plugging in a scheduler" example runs as written.

Layers of the core (``../shared/DESIGN.md``): ``sim -> schedulers -> solvers``,
``workloads -> model``; ``model`` imports nothing of ours but itself and
``errors``.  A core package may import only core packages of a lower layer
(or itself) — so nothing in the core reaches up into ``experiments``, the CLI,
the testbed or the service.  How the packages above the core import one
another is theirs to arrange and not checked here.
"""

from __future__ import annotations

import ast
import contextlib
import csv
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "dmlsched"

CORE_LAYER = {
    "errors": 0,
    "rng": 0,
    "limits": 0,
    "portable": 0,
    "memo": 0,  # imports nothing of ours: a cache any layer may use
    "numerics": 0,  # likewise: products without BLAS
    "model": 1,
    "solvers": 1,
    "config": 2,
    "schedulers": 2,
    "workloads": 3,
    "sim": 3,
    "offline": 3,
}


def _package(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> set[str]:
    """Top-level dmlsched packages a module imports (anywhere in it, lazily or not)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "dmlsched" and len(parts) > 1:
                out.add(parts[1])
    return out


def test_every_import_of_the_core_points_down_its_layers() -> None:
    upward = []
    for path in sorted(PKG.rglob("*.py")):
        src = _package(path)
        if src not in CORE_LAYER:
            continue
        for dst in _imports(path) - {src}:
            if dst not in CORE_LAYER or CORE_LAYER[dst] >= CORE_LAYER[src]:
                upward.append(f"{path.relative_to(ROOT)} imports dmlsched.{dst}")
    assert not upward, "upward or sideways imports:\n" + "\n".join(upward)


@pytest.mark.parametrize("pkg", ["model", "solvers", "schedulers"])
def test_nothing_below_the_engine_imports_sim(pkg: str) -> None:
    for path in (PKG / pkg).rglob("*.py"):
        assert "sim" not in _imports(path), path


def test_model_imports_nothing_of_ours_but_itself_and_errors() -> None:
    for path in (PKG / "model").rglob("*.py"):
        assert _imports(path) <= {"model", "errors"}, path


def test_the_readme_plugging_in_steps_run_as_written(
    plugin_sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Write the scheduler in its own file, check_scheduler it (the report as shown, but
    for the time), then compare --plugin it: the README's blocks, as they are; the example
    completes most jobs."""
    from dmlsched.cli import main

    section = (ROOT / "README.md").read_text().split("## Plugging in a scheduler", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    assert [lang for lang, _ in blocks] == ["python", "python", "text", "bash", "toml"]
    (_, scheduler), (_, check), (_, shown), (_, command), _ = blocks
    (plugin_sandbox / "my_sched.py").write_text(scheduler)
    monkeypatch.chdir(plugin_sandbox)
    monkeypatch.syspath_prepend(str(plugin_sandbox))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(check, "README.md", "exec"), {"__name__": "readme_example"})

    def untimed(text: str) -> str:
        return re.sub(r"; [0-9.]+ s\)", "; T s)", text.strip())

    assert untimed(out.getvalue()) == untimed(shown)
    args = shlex.split(command.replace("\\\n", " "))
    assert args[0] == "dmlsched" and main(args[1:]) == 0
    results = plugin_sandbox / "results" / "mine" / "results.csv"
    completed = [
        float(r["metric_value"])
        for r in csv.DictReader(results.open())
        if r["scheduler"] == "four-workers-each" and r["metric"] == "completed_jobs"
    ]
    assert completed, results.read_text()
    jobs = int(re.findall(r"--jobs (\d+)", command)[0])
    assert sum(completed) / len(completed) > jobs / 2  # the example completes most jobs


@pytest.mark.parametrize("mod", ["cluster", "interval", "edge_cloud", "geo"])
def test_every_setting_has_the_same_shape(mod: str) -> None:
    """Jobs/system/decision in model/<setting>.py, a view in model/views.py, an engine
    with its boundary reader in sim/<setting>.py."""
    model = importlib.import_module(f"dmlsched.model.{mod}")
    engine = importlib.import_module(f"dmlsched.sim.{mod}")
    views = importlib.import_module("dmlsched.model.views")
    assert any(n.endswith("Workload") for n in model.__all__)
    assert any(n.endswith("Decision") for n in model.__all__)
    assert {"read_decision", f"simulate_{mod}"} <= set(engine.__all__)
    camel = "".join(p.capitalize() for p in mod.split("_"))
    assert f"{camel}View" in views.__all__
