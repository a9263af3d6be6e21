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
from pathlib import Path

from xling.imports import analyse

PREFIX = "code-sha256:"  # marks the code param among a job's recorded params (xling.plan.accept_code)


class CodeVersions:
    """The code versions of the entry points in one checkout, each file read and hashed once: one instance
    per parse of the workflow (rules/common.smk), so an edit between two parses is seen."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self._versions: dict[tuple[str, str], str] = {}
        self._hashes: dict[str, str] = {}  # path in the checkout -> syntax hash
        self._imports: dict[Path, list] = {}  # file -> its imports (xling.imports.analyse's memo)

    def __call__(self, entry: str, extra: str = "") -> str:
        """The version of `entry` (a path relative to the checkout) and the modules it imports; `extra` is
        more text the job runs (a rule's shell command)."""
        key = (str(entry), extra)
        if key not in self._versions:
            files = {self.root / entry, *analyse(self.root / entry, self.root, memo=self._imports).local}
            digest = hashlib.sha256()
            for path in sorted(path.resolve().relative_to(self.root).as_posix() for path in files):
                if path not in self._hashes:
                    self._hashes[path] = syntax_hash(self.root / path)
                digest.update(f"{path}\0{self._hashes[path]}\0".encode())
            digest.update(extra.encode())
            self._versions[key] = PREFIX + digest.hexdigest()
        return self._versions[key]


def code_version(entry: str, root: str | Path, extra: str = "") -> str:
    """The version of `entry` in the checkout at `root`, computed afresh."""
    return CodeVersions(root)(entry, extra)


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
