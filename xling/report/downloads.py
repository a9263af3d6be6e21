"""Each table of the report linked to the run's file it is drawn from: the CSV the gather (or the findings) wrote
beside each Parquet table, or the training logs a table summarises, as a path relative to the report's HTML.

Why: a reader who doubts a cell, or wants every digit and column the page leaves out, downloads the table from
where it stands. The links are relative, so they work wherever the run's results folder is copied whole; the
report stays one self-contained file (a link that does not resolve only fails to download).

A table block names the tables it shows in `sources` (table keys), else it shows its section's tables (its
required and result tables). Tables of the appendix (the protocol, the settings) are drawn from the checkout's
files and the run's config, not from a table of the run, and get no link.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from xling.report.blocks import Block

DOWNLOADABLE = (".csv", ".tsv")


def _href(path: Path, html_dir: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(html_dir))).as_posix()


def _label(path: Path, name: str) -> str:
    """The link's words: the table's name (its file's), a training log by its model's directory."""
    kind = path.suffix.lstrip(".").upper()
    if path.suffix == ".csv":
        return f"{name.replace('_', ' ')} ({kind})"
    return f"{name.replace('_', ' ')}, {path.parent.name} ({kind})"


def download_links(
    tables: Mapping[str, Any], loaded_as: Mapping[str, str], html: str | Path
) -> dict[str, list[tuple[str, str]]]:
    """{table name as the sections know it: [(label, href relative to the HTML)]} of the run's files behind each
    table given to the report: a Parquet table's CSV beside it (when it exists: a link never points at nothing), a
    CSV or TSV table itself, each file of a list of files (the training logs). A DataFrame has no file."""
    html_dir = Path(html).parent
    links: dict[str, list[tuple[str, str]]] = {}
    for key, value in tables.items():
        if value is None or hasattr(value, "columns"):
            continue
        name = loaded_as.get(key, key)
        files = [Path(v) for v in value] if isinstance(value, (list, tuple)) else [Path(value)]
        found = []
        for path in files:
            path = path.with_suffix(".csv") if path.suffix == ".parquet" else path
            if path.suffix in DOWNLOADABLE and path.is_file():
                found.append((_label(path, key), _href(path, html_dir)))
        if found:
            links[name] = found
    return links


def with_downloads(
    blocks: list[Block], sources: Iterable[str], links: Mapping[str, list[tuple[str, str]]]
) -> list[Block]:
    """The blocks with each table's `csv` links: those of its own `sources`, else of the section's."""
    sources = list(dict.fromkeys(sources))
    out = []
    for block in blocks:
        if block.get("blocks"):  # a group or a "more" block: its tables too
            block = {**block, "blocks": with_downloads(block["blocks"], sources, links)}
        if block.get("kind") == "table" and "csv" not in block:
            names = block.get("sources") or sources
            block = {**block, "csv": [link for name in names for link in links.get(name, [])]}
        out.append(block)
    return out
