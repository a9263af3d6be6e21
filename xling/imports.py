"""What a rule's code imports, found by reading it (`ast`), never by running it.

Snakemake's `code` trigger sees only a rule's script (or shell command). The workflow versions the
package modules a job executes with its script (xling.plan.code: each rule's `code` param), so an edit
to one reruns exactly the jobs that import it; tests/test_envs.py checks each rule's conda env against
the third-party packages its code imports. Every import counts, at any depth (imports inside functions
too), since a lazy import runs as soon as its function does. Imports built at run time
(`importlib.import_module(name)`) are not seen.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Imports:
    """The package files a job executes (its entry point included when it lies in the package, each
    package's __init__.py that importing runs) and the top-level names of the other, non-standard
    modules they import."""

    local: tuple[Path, ...]
    third_party: frozenset[str]


#: an import statement as the source states it: (module or None, level, names (None: `import m`), line)
Statement = tuple[str | None, int, tuple[str, ...] | None, int]


def analyse(
    entry: str | Path,
    root: str | Path,
    package: str = "xling",
    memo: dict[Path, list[tuple[str, int]]] | None = None,
    statements: Callable[[Path], list[Statement]] | None = None,
) -> Imports:
    """Follow the imports of `entry` (a script, or a module of `package`) through `package`, which
    lies in `root`; raises ImportError naming file and line for an import of a missing module. `memo`
    keeps each file's imports between calls on one checkout (the workflow's parse: every rule's entry
    point reaches the same modules), so each file is read once; `statements` reads a file's import
    statements (default `import_statements`; xling.plan.code caches them by content)."""
    memo = {} if memo is None else memo
    entry, root = Path(entry).resolve(), Path(root).resolve()
    module = _module_name(entry, root, package)  # `python -m module` runs its packages' __init__ first
    todo = [entry, *(_package_inits(module, root) if module else [])]
    seen, third_party = set(), set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path not in memo:
            memo[path] = _imported(path, root, package, statements)
        for name, line in memo[path]:
            top = name.partition(".")[0]
            if top != package:
                third_party.add(top)
                continue
            files = _files(name, root)
            if files is None:
                raise ImportError(f"{path}:{line}: imports {name}, which is not a module in {root / package}")
            todo += files
    local = sorted(path for path in seen if _module_name(path, root, package))
    return Imports(tuple(local), frozenset(third_party - {"__future__", *sys.stdlib_module_names}))


def import_statements(source: bytes, filename: str = "<source>") -> list[Statement]:
    """Every import statement of a source, at any depth, as written (a function of the text alone)."""
    found: list[Statement] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module, node.level, tuple(a.name for a in node.names), node.lineno))
    return found


def _imported(
    path: Path, root: Path, package: str, statements: Callable[[Path], list[Statement]] | None = None
) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in the file; for `from m import a`, also `m.a`
    where that is a module of the package."""
    here = _module_name(path, root, package)
    found = []
    for module, level, names, line in (statements or _read_statements)(path):
        if names is None:
            found.append((module, line))
            continue
        base = _absolute(module, level, line, path, here)
        found.append((base, line))
        if base.partition(".")[0] == package:  # `from xling.models import static` imports a module
            found += [(f"{base}.{name}", line) for name in names if name != "*" and _files(f"{base}.{name}", root)]
    return found


def _read_statements(path: Path) -> list[Statement]:
    return import_statements(path.read_bytes(), str(path))


def _absolute(module: str | None, level: int, line: int, path: Path, here: str | None) -> str:
    """The module a `from ... import` names, with a relative one resolved against the file's package."""
    if not level:
        return module
    if here is None:
        raise ImportError(f"{path}:{line}: relative import outside the package")
    parts = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
    if level - 1 >= len(parts):
        raise ImportError(f"{path}:{line}: relative import beyond the top-level package")
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def _module_name(path: Path, root: Path, package: str) -> str | None:
    """Dotted name of a file of the package under root, or None for a file outside it."""
    try:
        parts = path.relative_to(root).with_suffix("").parts
    except ValueError:
        return None
    if not parts or parts[0] != package or path.suffix != ".py":
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _files(name: str, root: Path) -> list[Path] | None:
    """The files importing `name` executes: every enclosing package's __init__.py and the module
    itself; None when it is not a module under root."""
    base = root.joinpath(*name.split("."))
    for module in (base.with_suffix(".py"), base / "__init__.py"):
        if module.is_file():
            return [module, *_package_inits(name, root)]
    return None


def _package_inits(name: str, root: Path) -> list[Path]:
    """The __init__.py of each package that encloses module `name`, outermost first."""
    parts = name.split(".")
    inits = [root.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts))]
    return [p for p in inits if p.is_file()]
