"""Report section for the language-specific-information studies' token translation by the mean-difference
shift (Liu et al. 2020), and the helpers it shares with sentence retrieval (xling.report.sentence_retrieval:
original / zero-mean / MDS vectors, Libovický et al. 2020; XTREME's Tatoeba and BUCC). Importing this module
registers the section with xling.report.core.

Table keys (render_report(tables=...)): token_translation, token_translation_samples (optional). Published
numbers (xling.report.published): the same keys in resources/paper_results.yaml, and token_sets (the sizes of
the token sets V_s, V_t) shown with token translation. 'a->b' means source sentences in a, outputs in b.

Degenerate results are named: an undefined convert rate shows the counts of output pieces per vocabulary,
averages over layers say how many layers they dropped, and a model whose MLM predicts one piece whatever
the input, whose predictions do not move with alpha, or whose sentence vectors collapse onto one direction
(vector_spread < COLLAPSED_SPREAD) is flagged beside its numbers.
"""

from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from xling.report import figures
from xling.report.blocks import (
    MODEL_KEYS,
    PERCENT_METRICS,
    fmt_metric,
    fmt_num,
    fmt_percent,
    fmt_setting,
    metric_header,
    model_groups,
    model_name,
    table_block,
    text,
)
from xling.report.core import ReportContext, register_section
from xling.report.flags import (cell_reason, figure_note, flagged_cell, label, reason_parts, with_figure_note,
                                 with_flags)
from xling.report.published import BEST, Matching

COLLAPSED_SPREAD = 1e-3       # vector_spread below this: the sentence vectors are (nearly) one direction
TRANSLATION_RESULTS = ("bleu1", "convert_rate", "n_sentences", "n_tokens", "n_tgt_only", "n_src_only", "n_shared",
                       "n_neither", "distinct_predictions", "changed_share", "src_vocab_size", "tgt_vocab_size",
                       "shared_vocab_size")
TRANSLATION_DESCRIPTION = (
    "Unsupervised token translation (Liu et al. 2020, arXiv:2004.09205): a source-language sentence is fed to "
    "the masked-LM BERT, alpha (R_tgt \u2212 R_src) is added to the hidden states of layer l (R = the language "
    "means of that layer), the remaining layers and the MLM head run, and every position is decoded by argmax "
    "(no masking). BLEU-1 = sacrebleu corpus BLEU with unigrams only (0\u2013100) against the reference "
    "translation, in the unit the run's settings name (wordpieces: the output pieces against the reference's "
    "pieces, as the papers; words: detokenized output against the raw reference). Convert rate = #(output pieces only in the target vocabulary) / (#output pieces \u2212 "
    "#pieces in both vocabularies); vocabularies are the wordpieces of each language's corpus with count "
    "\u2265 the run's minimum count. alpha = 0 is the unshifted model; a negative alpha pushes away from the "
    "target language."
)


def select_key(df: pd.DataFrame, key: tuple) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for column, value in zip(MODEL_KEYS, key, strict=True):
        mask &= (df[column] == value).to_numpy()
    return df[mask]


def short_mean_line(df: pd.DataFrame) -> str:
    """The means used, briefly (figure titles)."""
    stats = "/".join(sorted(df["mean_stat"].astype(str).unique())) if "mean_stat" in df else "?"
    sources = {"store": "run's corpus", "eval": "evaluation sentences"}
    where = ", ".join(sources.get(s, s) for s in sorted(df["mean_source"].unique())) if "mean_source" in df else ""
    return f"{stats} means" + (f" from the {where}" if where else "")


def wrap_line(line: str, width_in: float) -> str:
    return textwrap.fill(line, max(40, int(width_in * 13)))


def mean_line(df: pd.DataFrame) -> str:
    parts = []
    if "mean_stat" in df:
        parts.append("language means: " + ", ".join(sorted(df["mean_stat"].astype(str).unique()))
                     + " (token = mean over all wordpieces, sentence = mean of per-sentence means)")
    if "mean_source" in df:
        sources = {"store": "the run's corpus (representation store)", "eval": "the evaluation sentences"}
        parts.append("computed on " + " and ".join(sources.get(s, s) for s in sorted(df["mean_source"].unique())))
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------- degenerate results

def translation_flags(df: pd.DataFrame) -> str:
    """Why a model's token translation says nothing, from its rows ('' when nothing is wrong): one output
    piece whatever the input (distinct_predictions), or outputs that no alpha changes (changed_share)."""
    flags = []
    if "distinct_predictions" in df and len(df) and (df["distinct_predictions"] <= 1).all():
        flags.append("constant predictions: one output piece whatever the input")
    if "changed_share" in df:
        shifted = df[df["alpha"] != 0]
        if len(shifted) and (shifted["changed_share"] == 0).all():
            flags.append("predictions do not depend on \u03b1: no shift changes an output piece")
    return "; ".join(flags)


def vector_flags(df: pd.DataFrame) -> str:
    """'collapsed vectors' when a model's sentence vectors (original, at the rows' layers) point one way."""
    if "vector_spread" in df and len(df) and (df["vector_spread"] < COLLAPSED_SPREAD).all():
        return (f"collapsed vectors: spread {fmt_num(df['vector_spread'].max())} < {COLLAPSED_SPREAD:g} "
                "(different sentences, near-identical vectors)")
    return ""


def undefined_counts(row: Mapping) -> str:
    """Why a convert rate is undefined: the output pieces per vocabulary (none language-specific)."""
    counts = [f"{int(row[c]):,} {label}" for c, label in (("n_src_only", "source-only"), ("n_tgt_only", "target-only"),
                                                          ("n_shared", "shared")) if c in row and pd.notna(row[c])]
    return f"{', '.join(counts)} output pieces" if counts else ""


def undefined_rate(row: Mapping) -> str:
    counts = undefined_counts(row)
    return "undefined" + (f": {counts}" if counts else "")


def convert_rate_by_alpha(table: pd.DataFrame, layers: Sequence[int] | None = None) -> pd.DataFrame:
    """Convert rate and BLEU-1 per model x size x window x src x tgt x alpha, averaged over layers (all, or
    `layers`): the curve behind "the convert rate rises with alpha". n_layers counts the layers averaged,
    n_layers_undefined those left out of the convert rate because it is undefined there (NaN)."""
    if layers is not None:
        table = table[table["layer"].isin(list(layers))]
    keys = [c for c in ("model", "size", "window", "src", "tgt") if c in table] + ["alpha"]
    table = table.assign(_undefined=table["convert_rate"].isna())
    return (table.groupby(keys, dropna=False, as_index=False)
            .agg(convert_rate=("convert_rate", "mean"), bleu1=("bleu1", "mean"), n_layers=("layer", "nunique"),
                 n_layers_undefined=("_undefined", "sum")))


def alpha_table(df: pd.DataFrame) -> dict:
    """The numbers of the alpha curves, with the layers each mean used and dropped."""
    summary = convert_rate_by_alpha(df)
    rows = []
    for r in summary.sort_values(MODEL_KEYS + ["src", "tgt", "alpha"]).to_dict("records"):
        used = int(r["n_layers"]) - int(r["n_layers_undefined"])
        rate = fmt_percent(r["convert_rate"]) if used else "undefined at every layer"
        rows.append([model_name(r), f"{r['src']}\u2192{r['tgt']}", fmt_setting("alpha", r["alpha"]), rate,
                     f"{used} of {int(r['n_layers'])}", fmt_num(r["bleu1"], 1)])
    columns = ["model", "direction", "\u03b1", "convert rate (%)", "layers in the mean", "BLEU-1"]
    return table_block("Convert rate and BLEU-1 against \u03b1 (mean over layers)", columns, rows, collapsed=True,
                       numeric=range(2, len(columns)),
                       note="A layer whose convert rate is undefined (no output piece in only one vocabulary) is "
                            "left out of that mean; 'layers in the mean' counts the rest. BLEU-1 uses every layer.")


# ---------------------------------------------------------------------------------------------- token translation

def best_settings(df: pd.DataFrame, by: str = "bleu1") -> pd.DataFrame:
    """Per model x pair x direction, the (layer, alpha > 0) with the highest `by` (ties: lower layer, alpha)."""
    positive = df[df["alpha"] > 0].sort_values(MODEL_KEYS + ["pair", "direction", by, "layer", "alpha"],
                                               ascending=[True] * 5 + [False, True, True], kind="stable")
    return positive.groupby(MODEL_KEYS + ["pair", "direction"], as_index=False, sort=False).head(1)


def _rate(row: Mapping) -> str:
    return fmt_percent(row["convert_rate"]) if pd.notna(row["convert_rate"]) else undefined_rate(row)


def _cell_rate(row: Mapping):
    """A convert-rate cell: the rate, or 'undefined' over the output pieces per vocabulary in small print."""
    if pd.notna(row["convert_rate"]):
        return fmt_percent(row["convert_rate"])
    return {"text": "undefined", "sub": undefined_counts(row)} if undefined_counts(row) else "undefined"


def _cell(row: Mapping, sub=""):
    """'BLEU-1 / convert rate'; an undefined rate's counts go to the small print, which wraps in a narrow column;
    a row the findings flag carries the mark and their reason."""
    if pd.isna(row["convert_rate"]):
        sub = "; ".join(s for s in (sub, f"undefined: {undefined_counts(row)}" if undefined_counts(row) else "") if s)
        value = f"{fmt_num(row['bleu1'], 1)} / undefined"
    else:
        value = f"{fmt_num(row['bleu1'], 1)} / {_rate(row)}"
    return flagged_cell(value, cell_reason([row.get("flag")]), sub)


def _unit(df: pd.DataFrame) -> str:
    return ", ".join(sorted(df["bleu_unit"].astype(str).unique())) if "bleu_unit" in df else "words"


def _cell_flags(cells: pd.DataFrame, model_flags: str) -> str:
    """The model's flags and the degenerate cells shown (the gather's `flag`: one token repeated, at chance),
    each reason once with the alphas it marks: 'α 1, 2: one token repeated'."""
    by_reason: dict[str, set[float]] = {}
    if "flag" in cells:
        for alpha, flag in cells["flag"].dropna().items():
            for reason in reason_parts(str(flag)):  # the page's one flag vocabulary (xling.report.flags.label)
                by_reason.setdefault(label(reason), set()).add(float(alpha))
    every = set(map(float, cells.index))

    def which(alphas: set[float]) -> str:  # the alphas in order, whatever layer won each cell
        if alphas == every and len(every) > 1:
            return "every α"
        return "α " + ", ".join(fmt_setting("alpha", a) for a in sorted(alphas))
    shown = [f"{which(alphas)}: {reason}" for reason, alphas in by_reason.items()]
    return "; ".join(filter(None, [model_flags, *shown]))


def translation_table1(df: pd.DataFrame) -> dict:
    """Table 1 layout: rows model x pair x direction, a column per alpha: 'BLEU-1 / convert rate' at the
    layer with the best BLEU-1 for that alpha (the layer in small print), the BLEU-1 unit and the model's
    flags (translation_flags) beside them."""
    alphas = sorted(df["alpha"].unique())
    best = (df.sort_values(["bleu1", "layer"], ascending=[False, True], kind="stable")
            .groupby(MODEL_KEYS + ["pair", "direction", "alpha"], as_index=False, sort=False).head(1))
    rows = []
    for key in model_groups(df):
        part, every = select_key(best, key), select_key(df, key)
        for (pair, direction), cell in part.groupby(["pair", "direction"]):
            flags = translation_flags(every[(every["pair"] == pair) & (every["direction"] == direction)])
            cell = cell.set_index("alpha")
            src, tgt = cell["src"].iloc[0], cell["tgt"].iloc[0]
            row = [model_name(dict(zip(MODEL_KEYS, key, strict=True))), f"{src}\u2192{tgt}", _unit(cell)]
            for alpha in alphas:
                if alpha in cell.index:
                    sub = "no shift" if alpha == 0 else f"layer {int(cell.at[alpha, 'layer'])}"
                    row.append(_cell(cell.loc[alpha], sub))
                else:
                    row.append("\u2014")
            rows.append(row + [_cell_flags(cell, flags) or "none"])
    columns = (["model", "direction", "BLEU-1 unit"] + [f"\u03b1 = {fmt_setting('alpha', a)}" for a in alphas]
               + ["flags"])
    units = {row[2] for row in rows}
    if len(units) == 1:  # one unit for every row: said in the note, not in a column
        columns, rows = columns[:2] + columns[3:], [row[:2] + row[3:] for row in rows]
    return table_block("Token translation: BLEU-1 / convert rate per language pair and \u03b1", columns, rows,
                       note="Each cell: BLEU-1 (0\u2013100" + (f", over {units.pop()}" if len(units) == 1 else "")
                            + ") / convert rate (%) at the layer with the best BLEU-1 for that \u03b1 (small "
                            "print); an undefined convert rate shows the output pieces per vocabulary. "
                            + mean_line(df) + ".",
                       numeric=range(len(columns) - 1 - len(alphas), len(columns) - 1),
                       wrap=range(len(columns) - 1 - len(alphas), len(columns)))


def translation_table2(df: pd.DataFrame) -> dict:
    """Table 2 layout: the best layer and alpha per pair and direction (by BLEU-1, and by convert rate)."""
    by_bleu, by_rate = best_settings(df, "bleu1"), best_settings(df, "convert_rate")
    base = df[df["alpha"] == 0].drop_duplicates(MODEL_KEYS + ["pair", "direction"]).set_index(
        MODEL_KEYS + ["pair", "direction"])
    rate_index = by_rate.set_index(MODEL_KEYS + ["pair", "direction"])
    rows = []
    for r in by_bleu.to_dict("records"):
        key = tuple(r[c] for c in MODEL_KEYS + ["pair", "direction"])
        row = [model_name(r), r["pair"], f"{r['src']}\u2192{r['tgt']}", str(int(r["layer"])),
               fmt_setting("alpha", r["alpha"]), flagged_cell(fmt_num(r["bleu1"], 1), cell_reason([r.get("flag")])),
               r.get("bleu_unit", "words"), _cell_rate(r)]
        if key in rate_index.index and pd.notna(rate_index.loc[key, "convert_rate"]):
            q = rate_index.loc[key]
            row += [f"{int(q['layer'])} / {fmt_setting('alpha', q['alpha'])}",
                    flagged_cell(fmt_percent(q["convert_rate"]), cell_reason([q.get("flag")]))]
        else:
            row += ["\u2014", "\u2014"]
        row += ([fmt_num(base.loc[key, "bleu1"], 1), _cell_rate(base.loc[key])] if key in base.index
                else ["\u2014", "\u2014"])
        rows.append(row)
    columns = ["model", "pair", "direction", "best layer", "best \u03b1", "BLEU-1", "BLEU-1 unit", "convert rate (%)",
               "best by convert rate: layer / \u03b1", "its convert rate (%)", "BLEU-1 at \u03b1 = 0",
               "convert rate at \u03b1 = 0 (%)"]
    return table_block("Best layer and \u03b1 (by BLEU-1, \u03b1 > 0)", columns, rows, numeric=range(3, len(columns)),
                       wrap=(7, 11),
                       note="Ties go to the lower layer and the smaller \u03b1. \u03b1 = 0 columns: the unshifted "
                            "model (shown when \u03b1 = 0 is among language.alphas).")


def heatmaps(df: pd.DataFrame, metric: str, label: str, settings: str) -> Figure:
    """One heatmap (layer x alpha) per model and direction, the mean over language pairs."""
    panels = [(key, direction) for key in model_groups(df) for direction in sorted(df["direction"].unique())]
    ncols = min(len(panels), 4)
    nrows = int(np.ceil(len(panels) / ncols))
    fig = Figure(figsize=(3.2 * ncols + 0.8, 2.8 * nrows + 0.9), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    scale = 100.0 if metric in PERCENT_METRICS else 1.0  # one unit per metric: a percent metric in percent
    finite = df[metric].replace([np.inf, -np.inf], np.nan).dropna() * scale
    top = float(finite.max()) if len(finite) else 1.0
    vmin, vmax = (0.0, 100.0) if metric == "convert_rate" else (0.0, max(top, 1e-9))
    image = None
    for ax, (key, direction) in zip(axes, panels, strict=False):
        part = select_key(df, key)
        part = part[part["direction"] == direction]
        grid = part.pivot_table(index="layer", columns="alpha", values=metric, aggfunc="mean")
        image = ax.imshow(grid.to_numpy(dtype=float) * scale, origin="lower", aspect="auto", cmap="viridis", vmin=vmin,
                          vmax=vmax)
        ax.set_xticks(range(grid.shape[1]), [fmt_setting("alpha", a) for a in grid.columns])
        ax.set_yticks(range(grid.shape[0]), [str(int(l)) for l in grid.index])
        ax.set_xlabel("\u03b1")
        ax.set_ylabel("layer")
        ax.set_title(f"{model_name(dict(zip(MODEL_KEYS, key, strict=True)))}, {direction}", fontsize=9)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes[: len(panels)]), label=label, shrink=0.8)
    fig.suptitle(f"{label} by layer and \u03b1 (mean over language pairs)\n"
                 + wrap_line(settings, fig.get_figwidth()), fontsize=10)
    return fig


def alpha_curves(df: pd.DataFrame, settings: str) -> Figure:
    """Convert rate and BLEU-1 against alpha (mean over layers and pairs), a line per model x direction."""
    # src/tgt replaced by the direction: the mean runs over layers AND language pairs
    summary = convert_rate_by_alpha(df.assign(src=df["direction"], tgt=df["direction"]))
    fig = Figure(figsize=(10, 3.8), dpi=figures.DPI, layout="constrained")
    axes = fig.subplots(1, 2)
    for i, ((model, size, window, direction), part) in enumerate(summary.groupby(MODEL_KEYS + ["src"])):
        key = (model, size, window)
        style = dict(color=figures.PALETTE[i % len(figures.PALETTE)], marker=figures.MARKERS[i % len(figures.MARKERS)],
                     label=f"{model_name(dict(zip(MODEL_KEYS, key, strict=True)))}, {direction}")
        axes[0].plot(part["alpha"], 100 * part["convert_rate"], **style)
        axes[1].plot(part["alpha"], part["bleu1"], **style)
    axes[0].set_ylabel("convert rate (%)")
    axes[0].set_ylim(0, 102)
    axes[1].set_ylabel("BLEU-1")
    for ax in axes:
        ax.set_xlabel("\u03b1")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="best")
    fig.suptitle("Token translation against \u03b1 (mean over layers and language pairs)\n"
                 + wrap_line(settings, fig.get_figwidth()), fontsize=10)
    return fig


def samples_table(samples: pd.DataFrame) -> dict:
    rows = [[model_name(r), f"{r['src']}\u2192{r['tgt']}", f"{int(r['layer'])} / {fmt_setting('alpha', r['alpha'])}",
             str(r["source"]), str(r["reference"]), str(r["output"]), str(r["unshifted"])]
            for r in samples.sort_values(MODEL_KEYS + ["pair", "direction", "sample"]).to_dict("records")]
    columns = ["model", "direction", "layer / \u03b1", "source", "reference", "output (MDS)", "output (\u03b1 = 0)"]
    return table_block(f"Sample outputs at the best layer and \u03b1 ({len(rows)} sentences)", columns, rows,
                       wrap=(3, 4, 5, 6),
                       note="Layer and \u03b1 with the best BLEU-1 for that model, pair and direction.")


@register_section("token_translation", "Token translation by the mean-difference shift",
                  required=("token_translation",),
                  results={"token_translation": TRANSLATION_RESULTS})
def render_token_translation(ctx: ReportContext) -> list[dict]:
    where = ctx.table_paths["token_translation"]
    df = ctx.tables["token_translation"]
    missing = [c for c in MODEL_KEYS + ["pair", "direction", "src", "tgt", "layer", "alpha", "bleu1", "convert_rate"]
               if c not in df]
    if missing:
        raise ValueError(f"{where}: columns {missing} missing from the token-translation table")
    if df.empty:
        raise ValueError(f"{where}: the token-translation table has no rows")
    df = with_flags("token_translation", df, ctx.pivot)  # the findings' flags, shown where their numbers are
    settings = mean_line(df)
    tokenizers = (f", BLEU-1 unit {_unit(df)}, sacrebleu tokenizer "
                  + ", ".join(sorted(df["bleu_tokenize"].astype(str).unique())) if "bleu_tokenize" in df else "")
    blocks = [text(TRANSLATION_DESCRIPTION, f"Settings: {settings}{tokenizers}.")]
    blocks.append(translation_table1(df))
    blocks.append(translation_table2(df))
    short = short_mean_line(df)
    cells = figure_note(df, df["flag"], MODEL_KEYS + ["direction", "layer", "alpha"])
    blocks.append(with_figure_note(ctx.figure(
        "language_translation_convert_rate", heatmaps(df, "convert_rate", "convert rate (%)", short),
        "language_translation_heatmap", settings, "Convert rate by layer and \u03b1"), cells))
    blocks.append(with_figure_note(ctx.figure("language_translation_bleu1", heatmaps(df, "bleu1", "BLEU-1", short),
                                              "language_translation_heatmap", settings, "BLEU-1 by layer and \u03b1"),
                                   cells))
    blocks.append(with_figure_note(ctx.figure(
        "language_translation_alpha", alpha_curves(df, short), "language_translation_alpha", settings,
        "Convert rate and BLEU-1 against \u03b1"), figure_note(df, df["flag"], MODEL_KEYS + ["direction", "alpha"])))
    blocks.append(alpha_table(df))
    samples = ctx.tables.get("token_translation_samples")
    if samples is not None and len(samples):
        blocks.append(samples_table(samples))
    blocks += ctx.published_blocks("token_translation", df, Matching(
        identity=("src", "tgt"), defaults={"layer": BEST, "alpha": BEST}))
    blocks += ctx.published_blocks("token_sets", token_sets(df), Matching(identity=("lang",)))
    blocks.append(full_table(df, "Token translation: all numbers",
                             ["model", "size", "window", "pair", "direction", "bleu_unit", "layer", "alpha"],
                             list(TRANSLATION_RESULTS)))
    return blocks


def token_sets(df: pd.DataFrame) -> pd.DataFrame:
    """Token-set sizes per model x language (the paper's Table 3): vocab_size = |V_lang|,
    vocab_shared_with_pivot = |V_pivot & V_lang| (the pivot's own size for the pivot). Empty without the
    translation table's vocabulary columns."""
    sizes = ("src_vocab_size", "tgt_vocab_size", "shared_vocab_size")
    if not all(c in df for c in sizes):
        return df.drop(columns=[c for c in sizes if c in df])
    settings = [c for c in ("data", "vocab_min_count") if c in df]
    rows = {}
    for r in df.to_dict("records"):
        pivot_is_src = r["direction"] == "en->xx"
        pivot, other = (r["src"], r["tgt"]) if pivot_is_src else (r["tgt"], r["src"])
        pivot_size, other_size = ((r["src_vocab_size"], r["tgt_vocab_size"]) if pivot_is_src
                                  else (r["tgt_vocab_size"], r["src_vocab_size"]))
        base = {c: r[c] for c in MODEL_KEYS + settings}
        for lang, size, shared in ((pivot, pivot_size, pivot_size), (other, other_size, r["shared_vocab_size"])):
            rows[tuple(base.values()) + (lang,)] = dict(base, lang=lang, vocab_size=int(size),
                                                        vocab_shared_with_pivot=int(shared))
    return pd.DataFrame(list(rows.values()))


# ---------------------------------------------------------------------------------------------- shared

def full_table(df: pd.DataFrame, title: str, keys: list[str], results: list[str]) -> dict:
    keys = [k for k in keys if k in df]
    results = [r for r in results if r in df]
    df = df.sort_values(keys, kind="stable")
    rows = [[fmt_setting(k, r[k]) for k in keys] + [fmt_metric(c, r[c]) if not c.startswith("n_") else f"{int(r[c]):,}"
                                                     for c in results] for r in df[keys + results].to_dict("records")]
    return table_block(f"{title} ({len(rows)} rows)", keys + [metric_header(c) for c in results], rows, collapsed=True,
                       numeric=range(len(keys), len(keys) + len(results)))
