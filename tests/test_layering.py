"""Dependencies point one way (DESIGN.md's architecture) and no module imports itself back.

Every ``import`` of a ``dmlsched`` module under ``src/`` is read with ``ast`` — at module
level or inside a function alike (a deferred import is still a dependency), but not under
``if TYPE_CHECKING:`` (annotations only, never executed).  Each top-level package or
module has a rank in :data:`LAYERS`; an import may only go to a lower rank (or stay in its
own package), and the module graph has no cycle.  The tests at the bottom run the same
checks on small made-up trees, so each check is shown to fail when it should.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# Lowest first.  A name may import names of lower ranks only; names of the same rank
# know nothing of each other.  (DESIGN.md: cli -> experiments -> sim -> schedulers ->
# solvers; experiments -> workloads -> model; model imports only the leaves above it; the
# service and the testbed drive sim's engine states; bench times everything.)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    (
        "limits",
        "rng",
        "numerics",
        "portable",
        "memo",
        "progress",
        "terminal",
        "version",
        "extras",
        "results",
    ),
    ("model", "solvers"),
    ("config",),
    ("schedulers", "workloads"),
    ("sim", "offline"),
    ("testbed",),
    ("drivers",),  # on branch engine: the three drivers of one engine state
    ("service", "experiments"),
    ("checks",),  # on branch engine: check_scheduler, against every driver
    ("bench", "cli_options"),
    ("cli",),
    ("console",),
    ("__main__",),
    ("",),  # the package itself: its public names
)


class Edge(NamedTuple):
    source: str  # importing module
    target: str  # imported module (or package)
    line: int


def _rank_of() -> dict[str, int]:
    return {name: r for r, names in enumerate(LAYERS) for name in names}


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, skipping the bodies of ``if TYPE_CHECKING:``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _edges(modules: Mapping[str, Path], top: str) -> list[Edge]:
    """Each module's imports of modules of ``top`` (``from pkg import mod`` names ``mod``)."""
    out = []
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = name.split(".")
                    base = base if is_pkg else base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [
                    f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module
                    for a in node.names
                ]
            for t in targets:
                while t and t not in modules:  # `import a.b.c` of a name inside a.b.c
                    t = t.rpartition(".")[0]
                if t == top or t.startswith(top + "."):
                    out.append(Edge(name, t, node.lineno))
    return out


def _unit(module: str) -> str:
    """The top-level package or module a module belongs to ('' for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_edges(edges: Iterable[Edge], rank: Mapping[str, int]) -> list[str]:
    bad = []
    for e in edges:
        a, b = _unit(e.source), _unit(e.target)
        if a == b:
            continue
        for u in (a, b):
            if u not in rank:
                bad.append(f"{u or '(package)'}: no rank in LAYERS (give it one)")
        if a in rank and b in rank and rank[b] >= rank[a]:
            what = f"{a or 'the package'} may not import {b or 'the package'}"
            bad.append(f"{e.source}:{e.line} imports {e.target} ({what})")
    return sorted(set(bad))


def cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.source != e.target:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _src_edges() -> list[Edge]:
    return _edges(_modules(SRC / "dmlsched"), "dmlsched")


def test_every_package_and_module_has_a_rank() -> None:
    units = {_unit(m) for m in _modules(SRC / "dmlsched")}
    assert units <= set(_rank_of()), f"not in LAYERS: {sorted(units - set(_rank_of()))}"


def test_no_package_imports_one_above_it() -> None:
    assert upward_edges(_src_edges(), _rank_of()) == []


def test_no_import_cycles() -> None:
    found = cycles(_src_edges())
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


# -- the checks fail when they should ---------------------------------------------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> list[Edge]:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return _edges(_modules(root), "pkg")


def test_an_upward_import_is_found_even_inside_a_function(tmp_path: Path) -> None:
    edges = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/a.py": "def f():\n    from pkg.high import b\n",
            "high/__init__.py": "",
            "high/b.py": "from pkg.low import a\n",
        },
    )
    bad = upward_edges(edges, {"low": 0, "high": 1, "": 2})
    assert bad == ["pkg.low.a:2 imports pkg.high.b (low may not import high)"]


def test_type_checking_imports_and_same_rank_imports(tmp_path: Path) -> None:
    edges = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.high\n",
            "high.py": "",
            "left.py": "from . import right\n",
            "right.py": "",
        },
    )
    bad = upward_edges(edges, {"low": 0, "high": 1, "left": 1, "right": 1, "": 2})
    assert bad == ["pkg.left:1 imports pkg.right (left may not import right)"]


def test_an_unranked_package_is_named(tmp_path: Path) -> None:
    edges = _tree(tmp_path, {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": ""})
    assert upward_edges(edges, {"a": 1, "": 2}) == ["b: no rank in LAYERS (give it one)"]


def test_a_cycle_through_three_modules_is_found(tmp_path: Path) -> None:
    edges = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "from pkg.c import x\n",
            "c.py": "def g():\n    import pkg.a\nx = 1\n",
            "d.py": "import pkg.a\n",
        },
    )
    assert cycles(edges) == [["pkg.a", "pkg.b", "pkg.c"]]


@pytest.mark.parametrize("text", ["from . import b\n", "from .b import x\n", "import pkg.b.c\n"])
def test_relative_and_dotted_imports_resolve(tmp_path: Path, text: str) -> None:
    edges = _tree(
        tmp_path,
        {"__init__.py": "", "a.py": text, "b/__init__.py": "x = 1\n", "b/c.py": ""},
    )
    assert {e.target for e in edges} <= {"pkg.b", "pkg.b.c"} and edges
