"""The engines driven as states stay small: a driver of ≤ 100 lines, no function over 120."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parents[2] / "src" / "dmlsched" / "sim"
SETTINGS = ["edge_cloud", "geo", "interval"]
STATE_MODULES = [*SETTINGS, *(f"{m}_referee" for m in SETTINGS), "drive"]


def _functions(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text(), str(path))
    return {
        node.name: node.end_lineno - node.lineno + 1  # type: ignore[operator]
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


@pytest.mark.parametrize("mod", STATE_MODULES)
def test_no_function_of_a_state_engine_is_longer_than_120_lines(mod: str) -> None:
    long = {f: n for f, n in _functions(SIM / f"{mod}.py").items() if n > 120}
    assert not long


@pytest.mark.parametrize("mod", SETTINGS)
def test_each_simulate_is_a_driver_of_at_most_100_lines(mod: str) -> None:
    assert _functions(SIM / f"{mod}.py")[f"simulate_{mod}"] <= 100
