"""Imports run down the layers only and close no package cycle (DESIGN.md, "Layers"), read from the code with
`ast` (xling.imports), so an import inside a function counts as much as one at the top of a module.

A module moved to a layer below what it imports, or a new package placed in no layer, fails here; so does
xling/plan/ importing anything of xling but itself and xling.imports, or torch, pandas or matplotlib (the rules
import the plan when the workflow is parsed).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xling.imports import _imported, _module_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "xling"
# Lowest first, above the top level (the modules directly in xling/: io, logs, runtime, imports, tables; and
# xling/plan/). A module may import its own layer and the ones below.
LAYERS = ("data", "models", "encode", "represent", "tune", "evaluate", "report", "cost")
PLAN = "xling.plan"
PLAN_MAY_IMPORT = frozenset({PLAN, "xling.imports"})
PLAN_NEVER_IMPORTS = frozenset({"torch", "pandas", "matplotlib"})


def _unit(module: str) -> str:
    """The package a module belongs to (xling.data.formats -> xling.data); a top-level module is its own unit."""
    return ".".join(module.split(".")[:2])


def _layer(unit: str, root: Path) -> int | None:
    """0 for the top level and the plan, 1.. for LAYERS; None for a package placed in no layer."""
    name = unit.partition(".")[2]
    if name in LAYERS:
        return LAYERS.index(name) + 1
    if name and name != "plan" and (root / PACKAGE / name).is_dir():
        return None
    return 0


def _package_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles among units: each strongly connected component of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for other in sorted(edges.get(unit, ())):
            if other not in index:
                visit(other)
                low[unit] = min(low[unit], low[other])
            elif other in stack:
                low[unit] = min(low[unit], index[other])
        if low[unit] == index[unit]:
            component = []
            while not component or component[-1] != unit:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for unit in sorted(edges):
        if unit not in index:
            visit(unit)
    return cycles


def layer_violations(root: Path) -> list[str]:
    """Every import of the package under `root` that breaks the layering, as 'file:line: why'."""
    problems, edges = [], {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        module = _module_name(path, root, PACKAGE)
        source = _unit(module)
        where = path.relative_to(root)
        if _layer(source, root) is None:
            problems.append(f"{where}: package {source} is in no layer of tests/test_layers.py's LAYERS")
            continue
        for name, line in _imported(path, root, PACKAGE):
            if name.partition(".")[0] != PACKAGE:
                if source == PLAN and name.partition(".")[0] in PLAN_NEVER_IMPORTS:
                    problems.append(f"{where}:{line}: the plan imports {name}")
                continue
            target = _unit(name)
            edges.setdefault(source, set()).add(target)
            if source == PLAN and target not in PLAN_MAY_IMPORT:
                problems.append(f"{where}:{line}: the plan imports {name} (only xling.plan and xling.imports)")
            elif target != PACKAGE and (_layer(target, root) or 0) > _layer(source, root):
                problems.append(f"{where}:{line}: {module} imports {name}, a layer above")
    for unit in edges:
        edges[unit].discard(unit)
        edges[unit].discard(PACKAGE)  # xling/__init__.py, which every module's import runs anyway
    problems += [f"package cycle: {' <-> '.join(cycle)}" for cycle in _package_cycles(edges)]
    return problems


def test_imports_run_down_the_layers_without_cycles():
    assert layer_violations(ROOT) == []


PLANTED = {
    "upward, inside a function": (
        "xling/data/words.py",
        "\n\ndef _planted():\n    from xling.report import core\n",
        "xling/data/words.py:",
    ),
    "a cycle in the top level": (
        "xling/io.py",
        "\nfrom xling.tables import gather\n",
        "package cycle: xling.io <-> xling.tables",
    ),
    "a package in no layer": ("xling/newpackage/__init__.py", "", "package xling.newpackage is in no layer"),
    "the plan importing the data layer": (
        "xling/plan/__init__.py",
        "from xling.data.formats import read_conllu\n",
        "the plan imports xling.data",
    ),
    "the plan importing pandas": ("xling/plan/__init__.py", "import pandas\n", "the plan imports pandas"),
}


@pytest.mark.parametrize("case", PLANTED)
def test_a_planted_import_fails(tmp_path, case):
    """Each rule fails on a copy of the package with one offending import planted."""
    file, code, expected = PLANTED[case]
    shutil.copytree(ROOT / PACKAGE, tmp_path / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    planted = tmp_path / file
    planted.parent.mkdir(parents=True, exist_ok=True)
    with planted.open("a", encoding="utf-8") as handle:
        handle.write(code)
    problems = layer_violations(tmp_path)
    assert problems and expected in problems[0], problems
