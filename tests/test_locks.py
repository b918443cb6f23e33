"""The pins: pyproject.toml's extras and requirements/<part>.lock agree, every lock is
exact and consistent with the others, each part's locks hold everything it pulls in
(checked against the installed packages' own requirements), and the core — what
`make demo` installs — holds no PyTorch, FastAPI or Ray."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ROOT / "requirements"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PARTS = ["core", *PYPROJECT["project"]["optional-dependencies"]]
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)$")


def _lock(part: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for i, line in enumerate((LOCKS / f"{part}.lock").read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _PIN.match(line)
        assert m, f"{part}.lock:{i}: not an exact pin: {line!r}"
        name = canonicalize_name(m.group(1))
        assert name not in pins, f"{part}.lock:{i}: {name} pinned twice"
        pins[name] = m.group(2)
    return pins


def _declared(part: str) -> list[Requirement]:
    proj = PYPROJECT["project"]
    deps = proj["dependencies"] if part == "core" else proj["optional-dependencies"][part]
    return [Requirement(d) for d in deps]


def test_there_is_one_lock_per_part_and_no_other() -> None:
    assert sorted(p.stem for p in LOCKS.glob("*.lock")) == sorted(PARTS)
    assert not (ROOT / "requirements.lock").exists()


def test_every_lock_pins_exactly_and_a_package_has_one_version_everywhere() -> None:
    seen: dict[str, tuple[str, str]] = {}
    for part in PARTS:
        for name, version in _lock(part).items():
            if name in seen:
                assert seen[name][1] == version, f"{name}: {seen[name]} vs {part} {version}"
            seen[name] = (part, version)


@pytest.mark.parametrize("part", PARTS)
def test_pyproject_pins_what_the_lock_pins(part: str) -> None:
    pins = {**_lock("core"), **_lock(part)}
    for req in _declared(part):
        spec = str(req.specifier)
        assert spec.startswith("==") and "," not in spec, f"{req}: not an exact pin"
        assert pins.get(canonicalize_name(req.name)) == spec[2:], f"{req} vs {part}.lock"


def _closure(reqs: list[Requirement]) -> dict[str, str]:
    """Every installed distribution ``reqs`` pull in (markers and extras evaluated)."""
    out: dict[str, str] = {}
    extras_of: dict[str, set[str]] = {}
    todo = list(reqs)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        extras = set(req.extras)
        if name in extras_of and extras <= extras_of[name]:
            continue
        extras_of[name] = extras_of.get(name, set()) | extras
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            pytest.skip(f"{name} is not installed here (make install installs every part)")
        out[name] = dist.version
        for text in dist.requires or []:
            r = Requirement(text)
            envs = [{"extra": e} for e in (extras_of[name] or {""})]
            if r.marker is None or any(r.marker.evaluate(e) for e in envs):
                todo.append(r)
    return out


@pytest.mark.parametrize("part", PARTS)
def test_a_parts_locks_hold_everything_it_pulls_in(part: str) -> None:
    pins = {**_lock("core"), **_lock(part)}
    needed = _closure(_declared("core") + (_declared(part) if part != "core" else []))
    missing = sorted(set(needed) - set(pins))
    assert not missing, f"{part}: pulled in but not pinned: {missing}"
    for name, version in needed.items():  # the environment is the one the locks describe
        assert version.split("+")[0] == pins[name].split("+")[0], (name, version, pins[name])


def test_the_core_that_make_demo_installs_holds_no_optional_part() -> None:
    core = _lock("core")
    for heavy in ("torch", "ray", "fastapi", "uvicorn", "pytest", "selenium", "pyarrow"):
        assert heavy not in core, heavy
    assert {"torch"} <= set(_lock("testbed")) and {"ray"} <= set(_lock("ray"))
