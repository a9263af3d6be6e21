"""The report's core: the registry of sections and their figures, the context a section renders from, and
`render_report`, which writes one self-contained HTML file from the run's tidy tables.

A study module registers each section with `@register_section(name, title, required=(table keys))`:
`render(ctx) -> list[block]` (xling.report.blocks). A section whose tables were not given is skipped. The PNGs
each section writes for a config are listed in the table registry (xling.plan.tables, re-exported here as
`expected_figures`), the one call that both the Snakemake rule (to declare each PNG with its caption) and the
report script use; `render_report` checks it wrote exactly those. Figures are saved as
PNG in `figure_dir` and embedded as base64 in the HTML, which therefore opens offline.

Settings come from the tables, never from the live config: every table carries the settings that
produced it as columns (xling.tables), so a report rendered after a config edit cannot claim settings its
numbers did not use. The config only chooses what to show (report.*, the report layer).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import jinja2
import pandas as pd

from xling import __version__
from xling.io import atomic_path, atomic_write
from xling.plan.tables import expected_figures  # noqa: F401  (the figures each section draws, declared once)
from xling.report import figures
from xling.report.blocks import Block
from xling.report.downloads import download_links, with_downloads
from xling.report.published import DEFAULT_PAPER_RESULTS, Matching, load_paper_results, published_blocks

logger = logging.getLogger(__name__)

CHECKOUT = Path(__file__).resolve().parents[2]  # the checkout this xling is imported from
REPORTS_DIR = CHECKOUT / "reports"
TEMPLATE = "report.html.j2"


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a tidy table from Parquet, TSV or CSV (by suffix)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: table not found")
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix in (".tsv", ".tsv.gz"):
        return pd.read_csv(path, sep="\t")
    if suffix in (".csv", ".csv.gz"):
        return pd.read_csv(path)
    raise ValueError(f"{path}: unknown table format {suffix!r} (expected .parquet, .tsv or .csv)")


def require_columns(df: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}; has {', '.join(map(str, df.columns))}")


def table_with_rows(ctx: ReportContext, name: str, columns: Iterable[str], what: str) -> tuple[pd.DataFrame, str]:
    """(table, its path) of a section's table, checked: every column present and at least one row."""
    where = ctx.table_paths[name]
    df = ctx.tables[name]
    require_columns(df, columns, where)
    if df.empty:
        raise ValueError(f"{where}: the {what} table has no rows")
    return df, where


# ---------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Section:
    """A report section: rendered only when every table in `required` was given to `render_report`."""

    name: str
    title: str
    required: tuple[str, ...]
    render: Callable[["ReportContext"], list[Block]]
    results: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # table key -> its result columns
    sources: tuple[str, ...] | None = None  # the tables its tables are drawn from (None: required and results)

    @property
    def drawn_from(self) -> tuple[str, ...]:
        """The tables whose files its tables link to (xling.report.downloads)."""
        return self.sources if self.sources is not None else (*self.required, *self.results)


SECTIONS: dict[str, Section] = {}
# Table keys whose value is a list of files loaded into one table: key -> (table name, loader).
LIST_TABLES: dict[str, tuple[str, Callable]] = {}


def register_section(
    name: str,
    title: str,
    required: Iterable[str] = (),
    results: Mapping[str, Iterable[str]] | None = None,
    sources: Iterable[str] | None = None,
):
    """Decorator: add `render(ctx) -> list[block]` as a section (in registration order), with the result
    columns of its tables (every other column is a setting, listed in the Settings section) and, where a table it
    requires only to be shown is not one its tables are drawn from, the `sources` its tables link to."""

    def decorate(render):
        SECTIONS[name] = Section(
            name,
            title,
            tuple(required),
            render,
            {k: tuple(v) for k, v in (results or {}).items()},
            None if sources is None else tuple(sources),
        )
        return render

    return decorate


@dataclass(frozen=True)
class Extra:
    """Blocks another module adds at the end of a section, when every table in `required` was given too; `name`
    identifies it as a section's name does (the table registry's figures name the one that draws them)."""

    name: str
    required: tuple[str, ...]
    render: Callable[["ReportContext"], list[Block]]


EXTRAS: dict[str, list[Extra]] = {}


def register_extra(name: str, section: str, required: Iterable[str] = ()):
    """Decorator: add `render(ctx) -> list[block]` at the end of the section `section` (behind its "More" summary:
    a training curve beside the results it trained), when the tables in `required` were given too."""

    def decorate(render):
        EXTRAS.setdefault(section, []).append(Extra(name, tuple(required), render))
        return render

    return decorate


def register_list_table(key: str, name: str, loader: Callable) -> None:
    """`render_report(tables={key: [paths]})` loads the files with `loader` into the table `name`."""
    LIST_TABLES[key] = (name, loader)


# ---------------------------------------------------------------------------------------------- context


@dataclass
class ReportContext:
    """What a section's render function gets: the loaded tables, the config and figure/caption helpers."""

    config: dict
    tables: dict[str, pd.DataFrame]
    table_paths: dict[str, str]
    figure_dir: Path
    captions_dir: Path
    published: dict[str, list[dict]]
    published_path: Path | None
    saved: dict[str, Path] = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)  # commit, settings hash, cost (xling.report.metadata)

    @property
    def report_config(self) -> dict:
        return self.config.get("report") or {}

    @property
    def pivot(self) -> str:
        return (self.config.get("languages") or ["en"])[0]

    def figure(self, name: str, fig, caption: str, settings: str, title: str) -> Block:
        """Save `fig` as figure_dir/<name>.png and return a figure block embedding the same PNG."""
        buffer = io.BytesIO()
        figures.fit_width(fig)
        fig.savefig(buffer, format="png", dpi=figures.DPI, metadata={"Software": None})
        data = buffer.getvalue()
        path = self.figure_dir / f"{name}.png"
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
        self.saved[name] = path
        return {
            "kind": "figure",
            "name": name,
            "title": title,
            "src": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
            "caption": self.caption(caption),
            "settings": settings,
        }

    def caption(self, name: str) -> str:
        """The plain text of reports/<name>.rst, the same caption `snakemake --report` shows."""
        path = self.captions_dir / f"{name}.rst"
        if not path.exists():
            raise FileNotFoundError(f"{path}: figure caption missing")
        return " ".join(path.read_text(encoding="utf-8").split())

    def published_blocks(self, table: str, ours: pd.DataFrame, matching: Matching) -> list[Block]:
        """The published numbers recorded for `table`, beside ours (xling.report.published)."""
        where = shown_path(self.published_path or DEFAULT_PAPER_RESULTS)
        return published_blocks(table, ours, self.published, where, matching)

    def recorded(self, column: str, model: str | None = None) -> dict[str, list[str]]:
        """The values of a settings column over every loaded table (rows of `model` only, if given):
        {value: [table keys]}. Several values mean the tables were made with different settings."""
        values: dict[str, list[str]] = {}
        for key, df in self.tables.items():
            if column not in df:
                continue
            rows = df if model is None or "model" not in df else df[df["model"] == model]
            for value in rows[column].dropna().unique():
                values.setdefault(value, []).append(key)
        return values


def recorded_json(value: Any) -> dict:
    """A JSON settings cell (hparams, data_settings, ...) as a dict; {} for a missing cell."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return {}
    return json.loads(value) if isinstance(value, str) else dict(value)


# ---------------------------------------------------------------------------------------------- render


def _run_name(config: Mapping) -> str:
    run = config.get("run")
    if isinstance(run, Mapping):
        run = run.get("name")
    return str(run) if run else "unnamed run"


def shown_path(path: str | Path) -> str:
    """A file as the report names it: relative to the run's working directory (from `results/` on), a file of the
    checkout relative to the checkout (resources/paper_results.yaml, also when the run's directory lies elsewhere),
    else its name alone: never a path of the machine that built it."""
    path = Path(path)
    parts = path.parts
    if not path.is_absolute() and ".." not in parts:
        return path.as_posix()
    if "results" in parts:
        return Path(*parts[parts.index("results") :]).as_posix()
    try:
        return Path(os.path.abspath(path)).relative_to(CHECKOUT).as_posix()
    except ValueError:
        return path.name


def _load_tables(tables: Mapping[str, Any]) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    loaded, paths = {}, {}
    for key, value in tables.items():
        if value is None:
            continue
        if isinstance(value, pd.DataFrame):  # a list table's too (its name: the one its sections know)
            name = LIST_TABLES.get(key, (key,))[0]
            loaded[name], paths[name] = value, f"<{key} table>"
            continue
        if key in LIST_TABLES:  # several files that make one table; an empty list means no such table
            name, loader = LIST_TABLES[key]
            if len(value):
                loaded[name], paths[name] = loader(value), ", ".join(shown_path(v) for v in value)
            continue
        loaded[key], paths[key] = read_table(value), shown_path(value)
    return loaded, paths


#: sections shown first (the results) and last (the appendix, collapsed behind a summary line), whatever their
#: registration order
LEAD, APPENDIX = ("run", "findings"), ("protocol", "settings")


def _report_order(sections: Iterable[Section]) -> list[Section]:
    sections = list(sections)
    rank = {name: i for i, name in enumerate(LEAD)}
    last = {name: i for i, name in enumerate(APPENDIX)}
    return sorted(
        sections, key=lambda s: (0, rank[s.name]) if s.name in rank else (2, last[s.name]) if s.name in last else (1, 0)
    )


def _shown_blocks(section: Section, blocks: list[Block]) -> list[Block]:
    """The findings whole, the appendix as rendered (it is collapsed as a whole), any other section's lead."""
    return blocks if section.name in LEAD or section.name in APPENDIX else _lead_open(blocks)


def _lead_open(blocks: list[Block]) -> list[Block]:
    """A section as first shown: its text up to and including its first table or figure shown open (its headline
    result; a collapsed table before it stays the one line it is), else its first table or figure; every block
    after that goes behind one <details> summary that counts what it holds. The report as first shown stays
    short (issue 22: at most 25 screens for the demo), and every table and figure is one click away."""
    results = [i for i, block in enumerate(blocks) if block["kind"] != "text"]
    if not results:
        return blocks
    end = next((i for i in results if not blocks[i].get("collapsed")), results[0])
    lead, rest = blocks[: end + 1], blocks[end + 1 :]
    if not any(b["kind"] != "text" for b in rest):
        return blocks
    kinds = [b["kind"] for b in rest]
    counts = [
        f"{n} {what}{'' if n == 1 else 's'}"
        for what, n in (
            ("table", kinds.count("table")),
            ("figure", kinds.count("figure")),
            ("settings list", kinds.count("group") + kinds.count("settings")),
            ("published-numbers note", kinds.count("published")),
        )
        if n
    ]
    return lead + [{"kind": "more", "title": "More of this section: " + ", ".join(counts), "blocks": rest}]


def _section_blocks(section: Section, ctx: ReportContext, links: Mapping[str, list]) -> list[Block]:
    """A section's blocks, then those other modules add to it (`register_extra`), each table linked to the run's
    file of the tables it shows (xling.report.downloads; the appendix's tables are not the run's)."""
    blocks = section.render(ctx)
    if section.name in APPENDIX:
        return blocks
    blocks = with_downloads(blocks, section.drawn_from, links)
    for extra in EXTRAS.get(section.name, ()):
        if all(name in ctx.tables for name in extra.required):
            blocks += with_downloads(extra.render(ctx), extra.required, links)
    return blocks


def render_report(
    tables: Mapping[str, str | Path | pd.DataFrame | list],
    config: dict,
    out_html: str | Path,
    figure_dir: str | Path,
    paper_results: str | Path | None = None,
    template_dir: str | Path | None = None,
    expected: Iterable[str] | None = None,
    metadata: Mapping | None = None,
) -> dict[str, Path]:
    """Render the report to `out_html` (one self-contained file) and the figures to figure_dir/<name>.png.

    tables: table key -> Parquet/TSV path (or DataFrame), or a list of files for a key registered with
    `register_list_table` (bert_training_logs). paper_results: published numbers (default config
    report.paper_results, else resources/paper_results.yaml; a missing file means none). expected: the
    figure names the caller declared (`expected_figures`); a difference is an error naming the figures.
    metadata: the run's commit, settings hash and cost for the first screen (xling.report.metadata.run_metadata).
    Returns figure name -> PNG path.
    """
    template_dir = Path(template_dir) if template_dir else REPORTS_DIR
    report_config = config.get("report") or {}
    if paper_results is None:
        paper_results = report_config.get("paper_results") or DEFAULT_PAPER_RESULTS
    paper_results = Path(paper_results)
    if not paper_results.exists():
        logger.info("%s not found: the report says no published numbers are recorded", paper_results)
    loaded, paths = _load_tables(tables)
    figure_dir = Path(figure_dir)
    figure_dir.mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(
        config=config,
        tables=loaded,
        table_paths=paths,
        figure_dir=figure_dir,
        captions_dir=template_dir,
        published=load_paper_results(paper_results),
        published_path=paper_results,
        metadata=dict(metadata or {}),
    )
    links = download_links(tables, {key: name for key, (name, _) in LIST_TABLES.items()}, out_html)
    sections = []
    for section in _report_order(SECTIONS.values()):
        missing = [t for t in section.required if t not in loaded]
        if missing:
            logger.info("report: skipping section %s (no %s table)", section.name, ", ".join(missing))
            continue
        logger.info("report: rendering section %s", section.name)
        sections.append(
            {
                "id": section.name,
                "title": section.title,
                "blocks": _shown_blocks(section, _section_blocks(section, ctx, links)),
                "collapsed": section.name in APPENDIX,
            }
        )
    if expected is not None and set(expected) != set(ctx.saved):
        raise ValueError(
            f"report figures differ from the declared ones: not written "
            f"{sorted(set(expected) - set(ctx.saved))}, "
            f"not declared {sorted(set(ctx.saved) - set(expected))}"
        )
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    title = report_config.get("title") or f"xling report \u2014 {_run_name(config)}"
    html = env.get_template(TEMPLATE).render(title=title, run=_run_name(config), sections=sections, version=__version__)
    with atomic_write(out_html) as handle:
        handle.write(html)
    logger.info("report: wrote %s with %d figures", out_html, len(ctx.saved))
    return dict(ctx.saved)
