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
import json
import os
import sys
import tempfile
from pathlib import Path

from xling.imports import Statement, analyse, import_statements

PREFIX = "code-sha256:"  # marks the code param among a job's recorded params (xling.plan.accept_code)
#: what a file's cache entry depends on besides its text: this format, and Python's (its `ast` and ast.dump)
CACHE_KEY = f"xling-code-1 python-{sys.version_info[0]}.{sys.version_info[1]}"


def cache_dir() -> Path | None:
    """Where each file's parse (its import statements and syntax hash) is kept between parses of the workflow,
    keyed by the file's text: $XLING_CODE_CACHE, else $XDG_CACHE_HOME/xling/code (~/.cache/xling/code); None
    when XLING_CODE_CACHE is "off". Why: reading every module's syntax tree was most of a dry run's time."""
    chosen = os.environ.get("XLING_CODE_CACHE")
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xling" / "code"


class CodeVersions:
    """The code versions of the entry points in one checkout, each file read and hashed once: one instance
    per parse of the workflow (rules/common.smk), so an edit between two parses is seen."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self._versions: dict[tuple[str, str], str] = {}
        self._hashes: dict[str, str] = {}  # path in the checkout -> syntax hash
        self._imports: dict[Path, list] = {}  # file -> its imports (xling.imports.analyse's memo)
        self._parsed: dict[Path, tuple[list[Statement], str]] = {}  # file -> its statements, syntax hash
        self._cache = cache_dir()

    def __call__(self, entry: str, extra: str = "") -> str:
        """The version of `entry` (a path relative to the checkout) and the modules it imports; `extra` is
        more text the job runs (a rule's shell command)."""
        key = (str(entry), extra)
        if key not in self._versions:
            files = {
                self.root / entry,
                *analyse(
                    self.root / entry, self.root, memo=self._imports, statements=lambda path: self.parse(path)[0]
                ).local,
            }
            digest = hashlib.sha256()
            for path in sorted(path.resolve().relative_to(self.root).as_posix() for path in files):
                if path not in self._hashes:
                    self._hashes[path] = self.parse((self.root / path).resolve())[1]
                digest.update(f"{path}\0{self._hashes[path]}\0".encode())
            digest.update(extra.encode())
            self._versions[key] = PREFIX + digest.hexdigest()
        return self._versions[key]

    def parse(self, path: Path) -> tuple[list[Statement], str]:
        """The file's import statements and syntax hash: from the cache when its text was parsed before (by
        any checkout), else parsed once and stored (an unwritable cache is skipped)."""
        path = path.resolve()
        if path not in self._parsed:
            source = path.read_bytes()
            key = hashlib.sha256(CACHE_KEY.encode() + b"\0" + source).hexdigest()
            entry = self._cache / key[:2] / f"{key}.json" if self._cache else None
            try:
                found = json.loads(entry.read_text("utf-8")) if entry else None
                parsed = (
                    [tuple(s[:2]) + (tuple(s[2]) if s[2] is not None else None, s[3]) for s in found["statements"]],
                    found["syntax"],
                )
            except (OSError, ValueError, KeyError, TypeError, IndexError):
                parsed = import_statements(source, str(path)), _syntax_hash(source, str(path))
                if entry:
                    _store(entry, {"statements": parsed[0], "syntax": parsed[1]})
            self._parsed[path] = parsed
        return self._parsed[path]


def _store(entry: Path, value: dict) -> None:
    """Write a cache entry atomically (a temporary file renamed), or skip it when the cache is unwritable."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=entry.parent, suffix=".tmp", delete=False, encoding="utf-8"
        ) as handle:
            json.dump(value, handle)
        os.replace(handle.name, entry)
    except OSError:
        pass


def code_version(entry: str, root: str | Path, extra: str = "") -> str:
    """The version of `entry` in the checkout at `root`, computed afresh."""
    return CodeVersions(root)(entry, extra)


def checkout_file(root: str | Path, path: str) -> dict[str, str]:
    """A data file of the checkout that a job reads (the report's protocol table, schema, study config and the
    papers' numbers), as a param: its path in the checkout and a sha256 of its bytes. An edit changes it; a clone,
    a move or a touch does not, where the file as an input would change with its path from the working directory."""
    return {"path": path, "sha256": hashlib.sha256((Path(root) / path).read_bytes()).hexdigest()}


def planned_checkout_file(entry: dict[str, str], root: str | Path) -> Path:
    """The file a `checkout_file` param names, in the checkout at `root` (the job's own); an error naming it when its
    content is not the one the job was planned with (an edit since, or xling imported from another checkout), so
    the job never reads other numbers than its params record."""
    path = Path(root) / entry["path"]
    found = checkout_file(root, entry["path"])["sha256"]
    if found != entry["sha256"]:
        raise ValueError(
            f"{path}: sha256 {found[:12]}... is not the {entry['sha256'][:12]}... the job was planned "
            "with: it changed since the plan, or this xling is another checkout's; run Snakemake again"
        )
    return path


def syntax_hash(path: Path) -> str:
    """sha256 of the file's syntax tree with docstrings removed and no line or column numbers."""
    return _syntax_hash(path.read_bytes(), str(path))


def _syntax_hash(source: bytes, filename: str) -> str:
    tree = ast.parse(source, filename=filename)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and _docstring(node):
            node.body = node.body[1:]
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def _docstring(node: ast.AST) -> bool:
    first = node.body[0] if node.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
