"""The study's HTML report: one self-contained file rendered from the tidy evaluation tables.

The report is a list of registered *sections* (name, title, required table keys, render function). A
section whose tables were not given is skipped, so later studies (XNLI, token translation, Tatoeba/BUCC)
plug in by registering one more function with `@register_section`. A render function returns *blocks*
(plain dicts: text, settings, table, figure) that the generic template `reports/report.html.j2` lays out,
so a new section needs no template change. Figures are saved as PNG in `figure_dir` (for
`snakemake --report`) and embedded as base64 in the HTML, which therefore opens offline.

Every number is printed next to its settings: varying settings are table columns, constant ones are
listed with the table, and figure titles and captions name the selection (metric, dictionary split,
layer). Published numbers come only from `resources/paper_results.yaml`; none are ever made up here.
"""

from __future__ import annotations

import base64
import io
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import jinja2
import numpy as np
import pandas as pd
import yaml

from xling import __version__

from xling.report import figures
from xling.report.figures import model_label, ordered_models, size_label
from xling.io import atomic_path, atomic_write

logger = logging.getLogger(__name__)

REPORTS_DIR = Path(__file__).resolve().parents[2] / "reports"
TEMPLATE = "report.html.j2"
DEFAULT_PAPER_RESULTS = Path("resources/paper_results.yaml")
NO_PUBLISHED = "No published numbers recorded"

# Columns of the word-retrieval table: settings (each a column, one row per setting × pair) and results.
WR_REQUIRED = ("model", "size", "window", "layer", "pair", "mrr", "chance_mrr", "metric", "dictionary_split")
WR_SETTINGS = ("model", "size", "window", "layer", "metric", "dictionary_split", "min_count", "seed", "dim",
               "source", "vocab")
WR_RESULTS = ("mrr", "p_at_1", "p_at_5", "coverage", "n_pairs", "n_covered_pairs", "n_queries", "n_candidates",
              "chance_mrr")
NOT_SETTINGS = ("pair", "src", "tgt")
LONG_COLUMNS = ("hparams",)    # a model's whole hyper-parameter block as JSON: in Settings, not per row
COLUMN_LABELS = {
    "model": "model", "size": "size (sentences/lang)", "window": "window", "layer": "layer",
    "metric": "metric", "dictionary_split": "dictionary split", "min_count": "min_count", "seed": "seed",
    "dim": "dim", "source": "data", "vocab": "vocab", "pair": "pair", "mrr": "MRR", "p_at_1": "P@1",
    "p_at_5": "P@5", "coverage": "coverage", "n_pairs": "n dict pairs", "n_covered_pairs": "n covered pairs",
    "n_queries": "n queries", "n_candidates": "n candidates", "chance_mrr": "chance MRR",
}
# BERT hyper-parameters named in the loss figure's title (all of them are in the Settings section).
BERT_TITLE_KEYS = ("hidden_size", "num_hidden_layers", "num_layers", "layers", "num_attention_heads", "num_heads",
                   "intermediate_size", "learning_rate", "lr", "batch_size", "steps", "max_steps", "warmup_steps",
                   "mlm_probability", "mask_prob", "seed")
LOG_COLUMN_ALIASES = {"tokens/s": "tokens_per_s", "tokens_per_sec": "tokens_per_s", "tok/s": "tokens_per_s",
                      "learning_rate": "lr"}
STUDY_DESCRIPTION = (
    "Why is multilingual BERT multilingual? Following Liu, Hsu, Chuang and Lee (2020, \u201cA Study of "
    "Cross-Lingual Ability and Language-specific Information in Multilingual BERT\u201d, arXiv:2004.09205), "
    "static word embeddings (GloVe, Word2Vec) and a BERT are trained from scratch on the same multilingual "
    "corpus, with no cross-lingual signal, for each data size and context window. Cross-lingual alignment is "
    "then measured without any mapping by word retrieval: each source word of a bilingual dictionary is "
    "compared with every candidate word of the other language, and the rank of its translation is scored."
)


# ---------------------------------------------------------------------------------------------- formatting

def fmt_num(value: Any, digits: int = 3) -> str:
    """0.4321 -> '0.432'; tiny values keep 3 significant digits (a chance MRR of 0.000512 stays visible)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return fmt_count(value)
    if value is None or pd.isna(value):
        return "\u2014"
    value = float(value)
    if value == 0 or abs(value) >= 0.01:
        return f"{value:.{digits}f}"
    return f"{value:.3g}"


def fmt_count(value: Any) -> str:
    if value is None or pd.isna(value):
        return "\u2014"
    return f"{int(value):,}"


def fmt_setting(column: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "\u2014"
    if column == "size":
        return size_label(value)
    if column == "model":
        return model_label(str(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def flatten(mapping: Mapping, prefix: str = "") -> list[tuple[str, str]]:
    """Nested config dict -> [('a.b', 'value'), ...]; lists are joined so one setting is one table row."""
    rows = []
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            rows.extend(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            rows.append((name, ", ".join(str(v) for v in value)))
        else:
            rows.append((name, "\u2014" if value is None else str(value)))
    return rows


# ---------------------------------------------------------------------------------------------- tables

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


def _require_columns(df: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}; has {', '.join(map(str, df.columns))}")


MODEL_DIR_NAME = re.compile(r"^(?P<size>\d+)-w(?P<window>\d+)$")


def load_training_logs(logs: Iterable[str | Path | tuple[str | Path, int, int] | Mapping[str, Any]]) -> pd.DataFrame:
    """Concatenate BERT training logs (TSV with a header: step, loss, lr, tokens_per_s) into one tidy frame.

    `logs`: (path, size, window) tuples, dicts with path, size, window and optional model (default bert),
    or bare paths inside the workflow's model directory `.../{model}/{size}-w{window}/training_log.tsv`.
    Should a log repeat steps (a resume that appended), the later row wins: it led to the saved model.
    Bad rows raise ValueError naming the file and line.
    """
    frames = []
    for item in logs:
        if isinstance(item, Mapping):
            path, size, window, model = item["path"], item["size"], item["window"], item.get("model", "bert")
        elif isinstance(item, (str, Path)):
            path = Path(item)
            match = MODEL_DIR_NAME.match(path.parent.name)
            if not match:
                raise ValueError(f"{path}: cannot tell size and window from the directory name "
                                 f"{path.parent.name!r} (expected '<size>-w<window>'); pass (path, size, window)")
            size, window, model = int(match["size"]), int(match["window"]), "bert"
        else:
            (path, size, window), model = item, "bert"
        path = Path(path)
        frame = read_table(path) if path.suffix == ".parquet" else pd.read_csv(path, sep="\t")
        frame.columns = [LOG_COLUMN_ALIASES.get(str(c).strip().lower(), str(c).strip().lower())
                         for c in frame.columns]
        _require_columns(frame, ("step", "loss"), str(path))
        if frame.empty:
            raise ValueError(f"{path}: training log has a header but no rows")
        for column in [c for c in ("step", "loss", "lr", "tokens_per_s") if c in frame]:
            numeric = pd.to_numeric(frame[column], errors="coerce")
            bad = numeric.isna() & frame[column].notna()
            if bad.any():
                row = int(bad.to_numpy().nonzero()[0][0])
                raise ValueError(f"{path}:{row + 2}: {column} is not a number: {frame[column].iloc[row]!r}")
            frame[column] = numeric
        frame = frame.drop_duplicates("step", keep="last").sort_values("step")
        frame.insert(0, "window", int(window))
        frame.insert(0, "size", int(size))
        frame.insert(0, "model", model)
        frames.append(frame)
    if not frames:
        raise ValueError("load_training_logs: no logs given")
    return pd.concat(frames, ignore_index=True)


def write_training_table(logs, out_path: str | Path) -> None:
    """`load_training_logs` written atomically as Parquet (the report's `bert_training` table)."""
    table = load_training_logs(logs)
    with atomic_path(out_path) as tmp:
        table.to_parquet(tmp, index=False)


# ---------------------------------------------------------------------------------------------- published

def load_paper_results(path: str | Path | None) -> dict[str, list[dict]]:
    """Read resources/paper_results.yaml: {table key: [entry, ...]}; an absent file means no entries.

    Entry: source (citation), id (table/figure in the source), metric (our column: mrr, p_at_1, ...),
    optional settings (our setting columns the numbers correspond to), scale (ours × scale = published
    unit, e.g. 100 for percent), note, and rows [{model, lang, value, ...optional setting columns}].
    """
    if path is None or not Path(path).exists():
        return {}
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: expected a mapping of table key -> list of entries")
    for table, entries in data.items():
        if entries is None:
            data[table] = []
            continue
        if not isinstance(entries, list):
            raise ValueError(f"{path}: {table}: expected a list of entries")
        for i, entry in enumerate(entries):
            where = f"{path}: {table}[{i}]"
            if not isinstance(entry, Mapping):
                raise ValueError(f"{where}: expected a mapping")
            for key in ("source", "id", "metric", "rows"):
                if key not in entry:
                    raise ValueError(f"{where}: missing '{key}'")
            if not isinstance(entry.get("settings", {}), Mapping):
                raise ValueError(f"{where}: 'settings' must be a mapping of setting column -> value")
            for j, row in enumerate(entry["rows"] or []):
                if not isinstance(row, Mapping) or not {"model", "lang", "value"} <= set(row):
                    raise ValueError(f"{where}.rows[{j}]: needs model, lang and value")
                if not isinstance(row["value"], (int, float)) or isinstance(row["value"], bool):
                    raise ValueError(f"{where}.rows[{j}]: value must be a number, got {row['value']!r}")
    return dict(data)


# ---------------------------------------------------------------------------------------------- sections

Block = dict


@dataclass(frozen=True)
class Section:
    """A report section: rendered only when every table in `required` was given to `render_report`."""

    name: str
    title: str
    required: tuple[str, ...]
    render: Callable[["ReportContext"], list[Block]]


SECTIONS: dict[str, Section] = {}


def register_section(name: str, title: str, required: Iterable[str] = ()):
    """Decorator: add `render(ctx) -> list[block]` as a section (in registration order)."""
    def decorate(render):
        SECTIONS[name] = Section(name, title, tuple(required), render)
        return render
    return decorate


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

    @property
    def report_config(self) -> dict:
        return self.config.get("report") or {}

    def figure(self, name: str, fig, caption: str, settings: str, title: str) -> Block:
        """Save `fig` as figure_dir/<name>.png and return a figure block embedding the same PNG."""
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=figures.DPI, metadata={"Software": None})
        data = buffer.getvalue()
        path = self.figure_dir / f"{name}.png"
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
        self.saved[name] = path
        return {"kind": "figure", "name": name, "title": title,
                "src": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
                "caption": self.caption(caption), "settings": settings}

    def caption(self, name: str) -> str:
        """The plain text of reports/<name>.rst, the same caption `snakemake --report` shows."""
        path = self.captions_dir / f"{name}.rst"
        if not path.exists():
            raise FileNotFoundError(f"{path}: figure caption missing")
        return " ".join(path.read_text(encoding="utf-8").split())


def text(*paragraphs: str) -> Block:
    return {"kind": "text", "paragraphs": [p for p in paragraphs if p]}


def settings_block(title: str, rows: list[tuple[str, str]]) -> Block:
    return {"kind": "settings", "title": title, "rows": rows}


def table_block(title: str, columns: list[str], rows: list[list], note: str = "", collapsed: bool = False,
                numeric: Iterable[int] = (), wrap: Iterable[int] = ()) -> Block:
    """rows: lists of cells; a cell is a string or {'text': str, 'sub': str} (second, smaller line).

    numeric: column indices right-aligned; wrap: columns of prose allowed to wrap (others stay on one line).
    """
    return {"kind": "table", "title": title, "columns": columns, "rows": rows, "note": note,
            "collapsed": collapsed, "numeric": set(numeric), "wrap": set(wrap)}


# ---------------------------------------------------------------------------------------------- selection

@dataclass(frozen=True)
class Selection:
    """The settings the figures and the main table show (the full table shows all)."""

    metric: str
    dictionary_split: str
    layer: int | None          # BERT layer shown beside the static models; None when there is no BERT
    select: tuple = ()         # extra (column, value) filters from report.select

    def describe(self) -> str:
        parts = [f"metric {self.metric}", f"dictionary split {self.dictionary_split}"]
        if self.layer is not None:
            parts.append(f"BERT layer {self.layer}")
        parts += [f"{c} {v}" for c, v in self.select]
        return ", ".join(parts)


def _choose(df: pd.DataFrame, column: str, wanted, preferred: str | None, where: str):
    present = sorted(df[column].dropna().unique().tolist())
    if wanted is not None:
        if wanted not in present:
            raise ValueError(f"{where}: {column} {wanted!r} asked for (report.{column} or retrieval.{column}) "
                             f"is not in the table (has {present})")
        return wanted
    if preferred in present:
        return preferred
    return present[0]


def selection_config(config: Mapping) -> dict:
    """report.{metric, dictionary_split, layer, select}, falling back on retrieval.{metric,
    dictionary_split, report_layer}; None means the default (cosine / test / the last BERT layer)."""
    report_cfg, retrieval = config.get("report") or {}, config.get("retrieval") or {}

    def pick(key, fallback):
        value = report_cfg[key] if report_cfg.get(key) is not None else retrieval.get(fallback)
        return (value[0] if value else None) if isinstance(value, (list, tuple)) else value  # first = main
    return {"metric": pick("metric", "metric"), "dictionary_split": pick("dictionary_split", "dictionary_split"),
            "layer": pick("layer", "report_layer"), "select": report_cfg.get("select") or {}}


def select_word_retrieval(df: pd.DataFrame, report_config: Mapping, where: str) -> tuple[Selection, pd.DataFrame]:
    """Pick metric, dictionary split and BERT layer (config, else a default) and filter the table to them.

    Returns the selection and the table filtered by metric, split and report.select — all layers kept.
    """
    select = tuple(sorted((report_config.get("select") or {}).items()))
    for column, value in select:
        if column not in df:
            raise ValueError(f"{where}: report.select names {column!r}, not a column of the table")
        df = df[df[column] == value]
        if df.empty:
            raise ValueError(f"{where}: no rows with {column} = {value!r} (report.select)")
    metric = _choose(df, "metric", report_config.get("metric"), "cosine", where)
    split = _choose(df, "dictionary_split", report_config.get("dictionary_split"), "test", where)
    df = df[(df["metric"] == metric) & (df["dictionary_split"] == split)]
    layer = None
    bert_layers = sorted(df.loc[df["model"] == "bert", "layer"].unique().tolist())
    if bert_layers:
        wanted = report_config.get("layer")
        if wanted is None:
            layer = int(bert_layers[-1])
        else:
            wanted = int(wanted)
            layer = int(bert_layers[-1]) + 1 + wanted if wanted < 0 else wanted
            if layer not in bert_layers:
                raise ValueError(f"{where}: BERT layer {wanted} asked for (report.layer or retrieval.report_layer) "
                                 f"but the BERT rows have layers {bert_layers}; use one of them, -1 for the last, "
                                 "or null")
    return Selection(str(metric), str(split), layer, select), df


def _check_single_setting(df: pd.DataFrame, keys: list[str], where: str) -> None:
    """Refuse to average over a setting silently: within a figure cell only `seed` may vary, once each."""
    others = [c for c in setting_columns(df) if c not in keys and c != "seed"]
    if others:
        counts = df.groupby(keys, dropna=False)[others].nunique(dropna=False)
        bad = counts[(counts > 1).any(axis=1)]
        if not bad.empty:
            cell = dict(zip(keys, bad.index[0] if isinstance(bad.index[0], tuple) else (bad.index[0],)))
            column = bad.columns[(bad.iloc[0] > 1).to_numpy()][0]
            mask = pd.Series(True, index=df.index)
            for k, v in cell.items():
                mask &= df[k] == v
            values = sorted(df.loc[mask, column].astype(str).unique())
            raise ValueError(f"{where}: several values of {column} ({', '.join(values)}) for "
                             + ", ".join(f"{k}={v}" for k, v in cell.items())
                             + f"; choose one with report.select.{column}")
    unique = keys + (["seed"] if "seed" in df else [])
    duplicated = df.duplicated(unique, keep=False)
    if duplicated.any():
        row = df[duplicated].iloc[0]
        raise ValueError(f"{where}: {int(duplicated.sum())} duplicate rows, e.g. "
                         + ", ".join(f"{k}={row[k]}" for k in unique))


def setting_columns(df: pd.DataFrame) -> list[str]:
    """The table's setting columns: the known ones first, then any other column that is not a result."""
    known = [c for c in WR_SETTINGS if c in df]
    return known + [c for c in df.columns if c not in WR_SETTINGS and c not in WR_RESULTS
                    and c not in NOT_SETTINGS and not str(c).startswith("_")]


def summarize(df: pd.DataFrame, keys: list[str], where: str) -> pd.DataFrame:
    """Mean over seeds per cell (with the seeds' standard deviation), after checking nothing else varies."""
    _check_single_setting(df, keys, where)
    agg = dict(mrr=("mrr", "mean"), mrr_sd=("mrr", "std"), chance_mrr=("chance_mrr", "mean"))
    if "seed" in df:
        agg["n_seeds"] = ("seed", "nunique")
    return df.groupby(keys, as_index=False).agg(**agg)


def _constant_settings(df: pd.DataFrame, columns: Iterable[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Split setting columns into those that vary (shown as columns) and constants (listed once)."""
    varying, constant = [], []
    for column in columns:
        if column not in df:
            continue
        values = df[column].dropna().unique()
        if len(values) == 1 and df[column].notna().all():
            constant.append((COLUMN_LABELS.get(column, column), fmt_setting(column, values[0])))
        else:
            varying.append(column)
    return varying, constant


def _per_model(df: pd.DataFrame, column: str) -> str:
    """'5' when one value; 'GloVe 300, Word2Vec 300, BERT 768' when it differs by model."""
    if column not in df:
        return ""
    values = df[column].dropna().unique()
    if len(values) == 1:
        return fmt_setting(column, values[0])
    parts = []
    for model in ordered_models(df["model"]):
        vals = sorted(df.loc[df["model"] == model, column].dropna().unique().tolist())
        parts.append(f"{model_label(model)} {'/'.join(fmt_setting(column, v) for v in vals)}")
    return ", ".join(parts)


def _settings_line(df: pd.DataFrame, selection: Selection, extra: str = "") -> str:
    parts = [selection.describe()]
    for column, label in (("min_count", "min_count"), ("dim", "dim"), ("vocab", "vocab"), ("source", "data")):
        value = _per_model(df, column)
        if value:
            parts.append(f"{label} {value}")
    if "seed" in df:
        seeds = sorted(df["seed"].dropna().unique().tolist())
        parts.append(("seed " if len(seeds) == 1 else "mean over seeds ") + ", ".join(map(str, seeds)))
    if extra:
        parts.append(extra)
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------- overview

def _run_name(config: Mapping) -> str:
    run = config.get("run")
    if isinstance(run, Mapping):
        run = run.get("name")
    return str(run) if run else "unnamed run"


@register_section("overview", "Study and data")
def render_overview(ctx: ReportContext) -> list[Block]:
    config = ctx.config
    data = config.get("data") or {}
    corpus = config.get("corpus") or {}
    rows = [("run", _run_name(config)),
            ("data source", str(data.get("source", "\u2014"))),
            ("languages (first = pivot)", ", ".join(config.get("languages") or []) or "\u2014"),
            ("corpus sizes (sentences per language)",
             ", ".join(f"{size_label(s)} ({int(s):,})" for s in corpus.get("sizes") or []) or "\u2014"),
            ("context windows (tokens)", ", ".join(str(w) for w in config.get("windows") or []) or "\u2014"),
            ("models", ", ".join(model_label(m) for m in config.get("models") or []) or "\u2014"),
            ("tables", ", ".join(f"{k}: {v}" for k, v in ctx.table_paths.items()))]
    blocks = [text(STUDY_DESCRIPTION, ctx.report_config.get("description", "")), settings_block("The run", rows)]
    if data.get("source") == "synthetic":
        blocks.append(text("The data are synthetic: generated languages with known translation dictionaries, "
                           "so the numbers test the pipeline and the effect of the settings, not real "
                           "languages."))
    return blocks


@register_section("settings", "Settings")
def render_settings(ctx: ReportContext) -> list[Block]:
    """Every hyper-parameter in the config that changes a number: shared ones, then one table per model."""
    config = ctx.config
    shared = []
    for key in ("data", "synthetic" if (config.get("data") or {}).get("source") == "synthetic" else None,
                "corpus", "tokenizer", "represent", "retrieval"):
        if key and isinstance(config.get(key), Mapping):
            shared += flatten(config[key], f"{key}.")
    shared.append(("windows", ", ".join(str(w) for w in config.get("windows") or [])))
    blocks = [settings_block("Shared by all models", shared)]
    wr = ctx.tables.get("word_retrieval")
    per_model = []
    for model in ordered_models(config.get("models") or []):
        rows = flatten(config.get(model) or {})
        if wr is not None and model in set(wr["model"]):
            sub = wr[wr["model"] == model]
            for column in ("dim", "min_count", "metric", "dictionary_split", "seed", "layer", "vocab"):
                if column in sub:
                    values = sorted(sub[column].dropna().unique().tolist())
                    rows.append((f"retrieval table: {COLUMN_LABELS[column]}",
                                 ", ".join(fmt_setting(column, v) for v in values)))
        per_model.append(settings_block(model_label(model), rows or [("\u2014", "no settings in config")]))
    blocks.append({"kind": "group", "blocks": per_model})
    return blocks


# ---------------------------------------------------------------------------------------------- word retrieval

@register_section("word_retrieval", "Word retrieval", required=("word_retrieval",))
def render_word_retrieval(ctx: ReportContext) -> list[Block]:
    where = ctx.table_paths["word_retrieval"]
    full = ctx.tables["word_retrieval"]
    _require_columns(full, WR_REQUIRED, where)
    if full.empty:
        raise ValueError(f"{where}: the word-retrieval table has no rows")
    selection, df = select_word_retrieval(full, selection_config(ctx.config), where)
    static = df[df["model"] != "bert"]
    bert = df[df["model"] == "bert"]
    shown = pd.concat([static, bert[bert["layer"] == selection.layer]]) if len(bert) else static
    keys = ["model", "size", "window", "layer", "pair"]
    summary = summarize(shown, keys, where)
    line = _settings_line(shown, selection)
    windows = sorted(summary["window"].unique(), reverse=True)

    blocks = [text(
        "Each query is a source-language word of the bilingual dictionary that the model represents (static "
        "vectors; for BERT the mean of its in-context vectors over the corpus at one layer). It is compared "
        "with every candidate target-language word; the reciprocal rank of its best-ranked gold translation "
        "is averaged into the MRR. Chance MRR = the expected MRR of a random ranking (H(n)/n for n candidates "
        "when each word has one translation; higher for words with several); coverage = share of dictionary pairs with both words represented.",
        f"Figures and the main table show: {line}. The full table at the end lists every setting.")]
    blocks.append(_main_table(summary, selection, line))
    for window in windows:
        part = summary[summary["window"] == window]
        fig = figures.mrr_by_pair(part, settings=selection.describe(),
                                  title=f"Word retrieval by language pair, context window {window}")
        blocks.append(ctx.figure(f"word_retrieval_mrr_by_pair_w{window}", fig, "word_retrieval_mrr_by_pair",
                                 f"window {window}; {line}", f"MRR by language pair, window {window}"))
    fig = figures.window_effect(summary, settings=selection.describe())
    blocks.append(ctx.figure("word_retrieval_window_effect", fig, "word_retrieval_window_effect", line,
                             "Effect of the context window"))
    if len(bert):
        bsum = summarize(bert, keys, where)
        bline = _settings_line(bert, Selection(selection.metric, selection.dictionary_split, None,
                                               selection.select), "all layers")
        fig = figures.bert_layers(bsum, settings=f"metric {selection.metric}, dictionary split "
                                  f"{selection.dictionary_split}", highlight_layer=selection.layer)
        blocks.append(ctx.figure("word_retrieval_bert_layers", fig, "word_retrieval_bert_layers", bline,
                                 "BERT word retrieval by layer"))
    blocks += published_blocks(ctx, "word_retrieval", full, selection)
    blocks.append(_full_table(full, "Word retrieval: all numbers"))
    return blocks


def _main_table(summary: pd.DataFrame, selection: Selection, line: str) -> Block:
    """The papers' table: rows model × size × window, columns language pairs + mean; chance under each MRR."""
    pairs = sorted(summary["pair"].unique())
    rows = []
    for model in ordered_models(summary["model"]):
        rows_of_model = summary[summary["model"] == model].sort_values(["size", "window"], ascending=[True, False])
        for (size, window), cell in rows_of_model.groupby(["size", "window"], sort=False):
            cell = cell.set_index("pair")
            row = [model_label(model), size_label(size), str(window), str(int(cell["layer"].iloc[0]))]
            for pair in pairs:
                if pair in cell.index:
                    row.append({"text": fmt_num(cell.at[pair, "mrr"]),
                                "sub": f"chance {fmt_num(cell.at[pair, 'chance_mrr'])}"})
                else:
                    row.append("\u2014")
            row.append({"text": fmt_num(cell["mrr"].mean()), "sub": f"chance {fmt_num(cell['chance_mrr'].mean())}"})
            rows.append(row)
    columns = ["model", COLUMN_LABELS["size"], "window", "layer"] + pairs + ["mean"]
    return table_block(f"MRR by language pair ({selection.describe()})", columns, rows,
                       note=f"Settings: {line}. Small grey number: chance MRR for the same candidates.",
                       numeric=range(4, len(columns)))


def _full_table(df: pd.DataFrame, title: str) -> Block:
    """Every row of the table, settings first; settings constant over the table are listed above it."""
    order = {m: i for i, m in enumerate(ordered_models(df["model"]))}
    df = df.assign(_m=df["model"].map(order))
    sort = ["_m"] + [c for c in ("size", "window", "metric", "dictionary_split", "layer", "pair", "seed") if c in df]
    df = df.sort_values(sort, ascending=[c != "window" for c in sort], kind="stable")  # windows large first
    settings = [c for c in setting_columns(df) if c not in LONG_COLUMNS]
    varying, constant = _constant_settings(df, settings)
    results = [c for c in WR_RESULTS if c in df]
    columns = varying + ["pair"] + results
    rows = [[fmt_setting(c, r[c]) for c in varying] + [str(r["pair"])]
            + [fmt_count(r[c]) if c.startswith("n_") else fmt_num(r[c]) for c in results]
            for r in df[columns].to_dict("records")]
    note = "Same settings for every row: " + "; ".join(f"{k} {v}" for k, v in constant) + ". " if constant else ""
    if any(c in df for c in LONG_COLUMNS):
        note += "Each model's hyper-parameters are in Settings (and as JSON in the table's hparams column)."
    return table_block(f"{title} ({len(rows)} rows)", [COLUMN_LABELS.get(c, c) for c in columns], rows, note=note,
                       collapsed=len(rows) > 40, numeric=range(len(varying) + 1, len(columns)))


def published_matches(ctx: ReportContext, table: str, ours: pd.DataFrame, wanted) -> tuple[str, list, list]:
    """The published rows recorded for `table`, each with our rows that match it: same model, same pair
    (a bare language code means pivot-lang) and the setting values `wanted(entry, row)` names.

    Returns (where the numbers come from, the entries, [(entry, row, pair, settings, our rows)]); every
    study's section renders these its own way, the matching is the same everywhere."""
    entries = ctx.published.get(table) or []
    where = str(ctx.published_path) if ctx.published_path else str(DEFAULT_PAPER_RESULTS)
    pivot = (ctx.config.get("languages") or ["en"])[0]
    matches = []
    for entry in entries:
        if entry["metric"] not in ours:
            raise ValueError(f"{where}: {table}: metric {entry['metric']!r} is not a column of our table")
        for prow in entry["rows"] or []:
            lang = str(prow["lang"])
            pair = lang if "-" in lang else f"{pivot}-{lang}"
            settings = wanted(entry, prow)
            mask = (ours["model"] == prow["model"]) & (ours["pair"] == pair)
            for column, value in settings.items():
                if column in ours:
                    mask &= ours[column] == value
            matches.append((entry, prow, pair, settings, ours[mask]))
    return where, entries, matches


def published_table(title_columns: list[str], rows: list, where: str, entries: list, table: str,
                    numeric, wrap) -> list[Block]:
    """The "Published numbers beside ours" block, or the "none recorded" line when `table` has no entry."""
    if not entries:
        return [{"kind": "published", "title": "Published numbers",
                 "empty": f"{NO_PUBLISHED} for this table ({table}) in {where}."}]
    notes = "; ".join(f"{e['source']} {e['id']}: {e['note']}" for e in entries if e.get("note"))
    return [table_block("Published numbers beside ours", title_columns, rows,
                        note=f"From {where}. " + (notes + "." if notes else ""), numeric=numeric, wrap=wrap)]


def published_blocks(ctx: ReportContext, table: str, ours: pd.DataFrame, selection: Selection) -> list[Block]:
    """Published numbers for `table` beside ours, matched on model, pair and the entry's settings."""
    def wanted(entry, prow):
        settings = {"metric": selection.metric, "dictionary_split": selection.dictionary_split,
                    **dict(selection.select)}
        if prow["model"] == "bert" and selection.layer is not None:
            settings["layer"] = selection.layer
        settings.update(entry.get("settings") or {})
        settings.update({k: v for k, v in prow.items() if k in WR_SETTINGS and k != "model"})
        return settings

    where, entries, matches = published_matches(ctx, table, ours, wanted)
    rows = []
    for entry, prow, pair, _, match in matches:
        metric, scale = entry["metric"], float(entry.get("scale", 1))
        base = [f"{entry['source']} \u2014 {entry['id']}", model_label(str(prow["model"])), pair,
                COLUMN_LABELS.get(metric, metric), fmt_num(prow["value"])]
        if match.empty:
            rows.append(base + ["\u2014", "no matching run", "\u2014"])
            continue
        group = [c for c in ("size", "window", "layer", "metric", "dictionary_split") if c in match]
        for key, cell in match.groupby(group):
            value = cell[metric].mean() * scale
            settings = ", ".join(f"{COLUMN_LABELS.get(c, c)} {fmt_setting(c, v)}" for c, v in zip(group, key))
            rows.append(base + [fmt_num(value), settings, fmt_num(value - prow["value"])])
    columns = ["source", "model", "pair", "metric", "published", "ours", "our settings", "ours \u2212 published"]
    return published_table(columns, rows, where, entries, table, numeric=(4, 5, 7), wrap=(0, 6))


# ---------------------------------------------------------------------------------------------- BERT training

@register_section("bert_training", "BERT pretraining", required=("bert_training",))
def render_bert_training(ctx: ReportContext) -> list[Block]:
    where = ctx.table_paths["bert_training"]
    log = ctx.tables["bert_training"]
    _require_columns(log, ("size", "window", "step", "loss"), where)
    if "model" in log:
        log = log[log["model"] == "bert"]
    if log.empty:
        raise ValueError(f"{where}: no BERT training-log rows")
    hparams = ctx.config.get("bert") or {}
    line = ", ".join(f"{k} {v}" for k, v in flatten(hparams)
                     if k.split(".")[-1] in BERT_TITLE_KEYS)
    fig = figures.pretraining_loss(log, settings=line)
    block = ctx.figure("bert_pretraining_loss", fig, "bert_pretraining_loss", line or "see Settings",
                       "BERT pretraining loss")
    rows = []
    log = log.sort_values(["size", "window", "step"], ascending=[True, False, True])
    for (size, window), run in log.groupby(["size", "window"], sort=False):
        rate = run["tokens_per_s"].mean() if "tokens_per_s" in run else float("nan")
        rows.append([size_label(size), str(window), fmt_count(run["step"].iloc[-1]), fmt_num(run["loss"].iloc[0]),
                     fmt_num(run["loss"].iloc[-1]), fmt_num(run["loss"].min()),
                     "\u2014" if math.isnan(rate) else f"{rate:,.0f}"])
    columns = [COLUMN_LABELS["size"], "window", "last step", "first loss", "last loss", "min loss",
               "mean tokens/s"]
    table = table_block("Pretraining summary", columns, rows, numeric=range(2, 7),
                        note="Loss is the training masked-LM loss as logged (one batch per logged step). "
                        + (f"Settings: {line}; the full list is in Settings." if line else "Settings: see Settings."))
    return [block, table]


# ---------------------------------------------------------------------------------------------- figures list

# Table keys whose value is a list of files, loaded into one table: key -> (table name, loader).
LIST_TABLES: dict[str, tuple[str, Callable]] = {"bert_training_logs": ("bert_training", load_training_logs)}


def expected_figures(config: Mapping) -> list[dict]:
    """The PNGs `render_report` writes for this config, with caption file and labels for Snakemake's report().

    `caption` is the file name under reports/. BERT figures are listed when 'bert' is in config['models'];
    the loss curve needs the `bert_training` table.
    """
    out = [{"name": f"word_retrieval_mrr_by_pair_w{w}", "caption": "word_retrieval_mrr_by_pair.rst",
            "category": "Word retrieval", "labels": {"figure": "MRR by language pair", "window": str(w)}}
           for w in sorted(config.get("windows") or [], reverse=True)]
    out.append({"name": "word_retrieval_window_effect", "caption": "word_retrieval_window_effect.rst",
                "category": "Word retrieval", "labels": {"figure": "window effect", "window": "all"}})
    if "bert" in (config.get("models") or []):
        out.append({"name": "word_retrieval_bert_layers", "caption": "word_retrieval_bert_layers.rst",
                    "category": "Word retrieval", "labels": {"figure": "BERT by layer", "window": "all"}})
        out.append({"name": "bert_pretraining_loss", "caption": "bert_pretraining_loss.rst",
                    "category": "BERT pretraining", "labels": {"figure": "pretraining loss", "window": "all"}})
    return out


# ---------------------------------------------------------------------------------------------- render

def render_report(tables: Mapping[str, str | Path | pd.DataFrame], config: dict, out_html: str | Path,
                  figure_dir: str | Path, paper_results: str | Path | None = None,
                  template_dir: str | Path | None = None) -> dict[str, Path]:
    """Render the report to `out_html` (one self-contained file) and the figures to figure_dir/<name>.png.

    tables: table key -> Parquet/TSV path (or DataFrame); keys used now: word_retrieval, bert_training
    (one table), or bert_training_logs (a list of training_log.tsv paths, see `load_training_logs`).
    paper_results: published numbers (default config report.paper_results, else
    resources/paper_results.yaml; a missing file means none). Returns figure name -> PNG path.
    """
    template_dir = Path(template_dir) if template_dir else REPORTS_DIR
    report_config = config.get("report") or {}
    if paper_results is None:
        paper_results = report_config.get("paper_results", DEFAULT_PAPER_RESULTS)
    paper_results = Path(paper_results)
    if not paper_results.exists():
        logger.info("%s not found: the report says no published numbers are recorded", paper_results)
    loaded, paths = {}, {}
    for key, value in tables.items():
        if value is None:
            continue
        if key in LIST_TABLES:  # several files that make one table; an empty list means no such table
            name, loader = LIST_TABLES[key]
            if len(value):
                loaded[name], paths[name] = loader(value), ", ".join(str(v) for v in value)
            continue
        if isinstance(value, pd.DataFrame):
            loaded[key], paths[key] = value, f"<{key} table>"
        else:
            loaded[key], paths[key] = read_table(value), str(value)
    figure_dir = Path(figure_dir)
    figure_dir.mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(config=config, tables=loaded, table_paths=paths, figure_dir=figure_dir,
                        captions_dir=template_dir, published=load_paper_results(paper_results),
                        published_path=paper_results)
    sections = []
    for section in SECTIONS.values():
        missing = [t for t in section.required if t not in loaded]
        if missing:
            logger.info("report: skipping section %s (no %s table)", section.name, ", ".join(missing))
            continue
        logger.info("report: rendering section %s", section.name)
        sections.append({"id": section.name, "title": section.title, "blocks": section.render(ctx)})
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir)), undefined=jinja2.StrictUndefined,
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    title = report_config.get("title") or f"xling report \u2014 {_run_name(config)}"
    html = env.get_template(TEMPLATE).render(title=title, run=_run_name(config), sections=sections,
                                             version=__version__)
    with atomic_write(out_html) as handle:
        handle.write(html)
    logger.info("report: wrote %s with %d figures", out_html, len(ctx.saved))
    return dict(ctx.saved)
