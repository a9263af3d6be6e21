"""A job's code version by content: the `code` param of every rule (rules/common.smk).

The version is a sha256 over the rule's entry point (its script, or the module it runs with `python -m`)
and every xling module that imports, each keyed by its path relative to the checkout and hashed as its
syntax tree without docstrings. So a move, a clone, a touch, a comment, a docstring or a reformatting
changes nothing, while an edit to a function changes the version of exactly the rules whose code imports
its module. Snakemake compares params by value, so a changed version reruns the job and what follows.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

from xling.imports import analyse

PREFIX = "code-sha256:"  # marks the code param among a job's recorded params (xling.plan.accept_code)


def code_version(entry: str, root: str | Path, extra: str = "") -> str:
    """The version of `entry` (a path relative to `root`, the checkout) and the modules it imports;
    `extra` is more text the job runs (a rule's shell command)."""
    return _version(str(entry), str(Path(root).resolve()), extra)


@lru_cache(maxsize=None)
def _version(entry: str, root: str, extra: str) -> str:
    base = Path(root)
    files = {base / entry, *analyse(base / entry, base).local}
    digest = hashlib.sha256()
    for path in sorted(path.resolve().relative_to(base).as_posix() for path in files):
        digest.update(f"{path}\0{syntax_hash(base / path)}\0".encode())
    digest.update(extra.encode())
    return PREFIX + digest.hexdigest()


@lru_cache(maxsize=None)
def syntax_hash(path: Path) -> str:
    """sha256 of the file's syntax tree with docstrings removed and no line or column numbers."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and _docstring(node):
            node.body = node.body[1:]
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def _docstring(node: ast.AST) -> bool:
    first = node.body[0] if node.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
