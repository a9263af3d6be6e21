"""Report sections of the contextual-alignment study (Cao, Kitaev and Klein 2020): contextual word retrieval in the
layout of their Table 3, zero-shot XNLI after alignment in the layouts of Tables 1, 2 and 5, with the published
numbers beside ours.

Tables read: `contextual_retrieval` (results/<run>/eval/contextual_retrieval.parquet: one row per lm, language,
contextual or not, layer and method, accuracy a fraction) and `transfer` (its XNLI test rows of the base BERTs,
as they are and with a rotation at test time, and of the aligned models aligned/{n}/{base}). Each of our settings
is named as the paper names it (xling.evaluate.alignment.CAO_SETTINGS): base BERT; word- and sentence-aligned
rotation (Procrustes on word pairs / mean word vectors of sentence pairs, applied to the non-English vectors);
fine-tuned alignment on n sentence pairs per language; the sentence-augmented fastText (rotated on the same word
pairs). A rotation and a fine-tuned model carry the amount of parallel data they used; the tables show every
amount the run has, the paper's Table 1 and 3 used 250K, Table 5 20K.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from matplotlib.figure import Figure

from xling.evaluate.alignment import cao_retrieval, cao_xnli
from xling.evaluate.findings.cao import frequency_label, pos_label
from xling.evaluate.findings.core import transfer_flags, with_table_flags
from xling.plan.figures import FREQUENCY_CAPTION, FREQUENCY_FIGURE, XNLI_RETRIEVAL_FIGURE
from xling.report import figures
from xling.report.alignment_analyses import analysis_flags, analysis_rows, recorded_values
from xling.report.blocks import DASH, MODEL_KEYS, Block, fmt_count, fmt_percent, model_name, table_block, text
from xling.report.core import ReportContext, register_section, require_columns
from xling.report.flags import cell_reason, figure_note, flagged_cell, in_percent, is_degenerate, with_figure_note
from xling.report.published import Matching
from xling.report.transfer.common import SELECTION_LABELS

RETRIEVAL_REQUIRED = ("lm", "lang", "contextual", "method", "accuracy", "n_queries")
RETRIEVAL_RESULTS = ("accuracy", "accuracy_src_tgt", "accuracy_tgt_src", "n_queries", "n_seen", "n_exact", "chance")
ANALYSIS_REQUIRED = ("lm", "lang", "method", "parallel_sentences", "accuracy", "n_queries")
POS_REQUIRED = (*ANALYSIS_REQUIRED, "group", "pos")
FREQUENCY_REQUIRED = (*ANALYSIS_REQUIRED, "rank_bin", "rank_difference")
# Table 4's columns (published_results.yaml) by universal POS tag, and each group's average by its tags' group;
# the paper's one "Conjunction" is compared with the mean of our two conjunction tags
PAPER_POS = {"NUM": "numeral", "PUNCT": "punctuation", "PROPN": "proper_noun", "DET": "determiner",
             "ADP": "preposition", "CCONJ": "conjunction", "SCONJ": "conjunction", "PRON": "pronoun",
             "AUX": "auxiliary", "NOUN": "noun", "ADV": "adverb", "ADJ": "adjective", "VERB": "verb"}
PAPER_GROUP_AVERAGE = {"lexical_overlap": "lexical_overlap_avg", "closed_class": "closed_class_avg",
                       "open_class": "open_class_avg"}
SETTING_LABELS = {"aligned_fasttext_sentence": "Aligned fastText + sentence", "base_bert": "Base BERT",
                  "zero_shot_base_bert": "Base BERT (zero-shot)",
                  "sentence_aligned_rotation": "Sentence-aligned BERT (rotation)",
                  "word_aligned_rotation": "Word-aligned BERT (rotation)",
                  "word_aligned_finetuned": "Word-aligned BERT (fine-tuned)"}
RETRIEVAL_ORDER = ("aligned_fasttext_sentence", "base_bert", "word_aligned_rotation", "sentence_aligned_rotation",
                   "word_aligned_finetuned")
XNLI_ORDER = ("zero_shot_base_bert", "sentence_aligned_rotation", "word_aligned_rotation", "word_aligned_finetuned")
TABLE5_PARALLEL = 20000  # Cao et al.'s Table 5: 20K sentence pairs per language
DESCRIPTION = (
    "Contextual alignment (Cao, Kitaev and Klein 2020). Word pairs are the one-to-one intersection of the two "
    "directions of the run's aligner (alignment.aligner: fast_align, the paper's, by default) on parallel "
    "sentences. Contextual word retrieval: each linked word of a test sentence is a "
    "query among all words of all test sentences of the other language (CSLS, k = 10); a hit is the exact sentence "
    "and position, and the accuracy is the mean of both directions, without the pairs seen in training and exact "
    "string matches. Non-contextual: the first occurrence of each word type only. Base BERT is compared with its "
    "rotations (orthogonal maps of the other language onto English, learned on the train word pairs or on the "
    "sentence pairs' mean word vectors), with the BERT fine-tuned for alignment on n sentence pairs per language, "
    "and with fastText vectors rotated on the same word pairs and augmented with the sentence's mean, max and min.")


def _label(setting: str, n: int) -> str:
    label = SETTING_LABELS.get(setting, setting)
    return f"{label}, {n:,} pairs" if n else label


def _base_groups(rows: pd.DataFrame) -> list[tuple[str, dict]]:
    """(base lm, its model columns) in lm order: the BERT each row block is about."""
    out = []
    for base in sorted(rows["base"].unique()):
        first = rows[(rows["base"] == base) & (rows["lm"] == base)]
        first = first if len(first) else rows[rows["base"] == base]
        out.append((base, {k: first[k].iloc[0] for k in MODEL_KEYS if k in first}))
    return out


def _selections(values: pd.Series) -> str:
    """The checkpoint selections of a cell in words (Cao et al.'s fine-tunings and the transfer grid's differ)."""
    return ", ".join(SELECTION_LABELS.get(s, str(s)) for s in sorted(set(values.dropna().astype(str)))) or "not recorded"


def _flagged(value: float, reason: str | None) -> dict | str:
    return DASH if value is None or pd.isna(value) else flagged_cell(f"{value:.1f}", cell_reason([reason]))


def _cell(value: float, digits: int = 1, sub: str = "") -> dict | str:
    if value is None or pd.isna(value):
        return DASH
    return {"text": f"{value:.{digits}f}", "sub": sub} if sub else f"{value:.{digits}f}"


# ---------------------------------------------------------------------------------------------- retrieval

def _retrieval_layers(rows: pd.DataFrame) -> pd.DataFrame:
    """BERT's rows at the layer retrieval ran at: the highest layer of each lm when the table has several."""
    if "layer" not in rows:
        return rows
    return rows[rows["layer"] == rows.groupby("lm")["layer"].transform("max")]


@register_section("alignment_retrieval", "Contextual word retrieval (Cao et al. 2020, Table 3)",
                  required=("contextual_retrieval",), results={"contextual_retrieval": RETRIEVAL_RESULTS})
def render_alignment_retrieval(ctx: ReportContext) -> list[Block]:
    where = ctx.table_paths["contextual_retrieval"]
    table = ctx.tables["contextual_retrieval"]
    require_columns(table, RETRIEVAL_REQUIRED, where)
    rows = _retrieval_layers(cao_retrieval(table))
    if rows.empty:
        return [text(DESCRIPTION, f"{where} has no row of a setting of the paper.")]
    pivot = ctx.pivot
    langs = sorted(rows["lang"].unique())
    fasttext = rows[rows["setting"] == "aligned_fasttext_sentence"]
    bert = rows[rows["setting"] != "aligned_fasttext_sentence"]
    blocks = [text(DESCRIPTION)]
    ours = []
    for base, model in _base_groups(bert) or [(None, {})]:
        part = pd.concat([bert[bert["base"] == base], fasttext]) if base else fasttext
        lines = []
        for retrieval in ("contextual", "non_contextual"):
            at = part[part["retrieval"] == retrieval]
            keys = sorted({(s, int(n)) for s, n in zip(at["setting"], at["parallel_sentences"], strict=True)},
                          key=lambda k: (RETRIEVAL_ORDER.index(k[0]), k[1]))
            shared = not at.empty and bool((at.groupby("lang")["n_queries"].nunique() == 1).all())  # n: one row
            for setting, n in keys:
                cell = at[(at["setting"] == setting) & (at["parallel_sentences"] == n)].set_index("lang")
                values = [100 * cell.at[lang, "accuracy"] if lang in cell.index else np.nan for lang in langs]
                line = [retrieval.replace("_", "-"), _label(setting, n)]
                line += [flagged_cell(f"{v:.1f}", in_percent(cell_reason([cell.at[lang, "flag"]] if "flag" in cell else [])),
                                      "" if shared else f"n {fmt_count(cell.at[lang, 'n_queries'])}")
                         if lang in cell.index else DASH for v, lang in zip(values, langs, strict=True)]
                line.append(_cell(np.mean(values)) if not np.isnan(values).any() else DASH)
                lines.append(line)
            n_queries = at.groupby("lang")["n_queries"].first().map(fmt_count).reindex(langs, fill_value=DASH)
            lines += [[retrieval.replace("_", "-"), "queries scored (n)", *n_queries, DASH]] if shared else []
        title = f"Word retrieval accuracy (%), {model_name(model) if model else 'fastText only'}"
        blocks.append(table_block(title, ["retrieval", "setting", *[f"{lang}-{pivot}" for lang in langs], "average"],
                                  lines, numeric=range(2, 3 + len(langs)),
                                  note="The layout of Cao et al.'s Table 3 (they use 250K sentence pairs for every "
                                       "rotation and fine-tuning, mBERT's output layer, fastText of dimension 300). "
                                       "Queries scored (both directions): each retrieval's 'queries scored' row, or "
                                       "the small grey number under each accuracy." + _layer_note(part)
                                       + _chance_note(part)))
        ours.append(part.assign(**{k: v for k, v in model.items()}) if model else part)
    frame = pd.concat(ours, ignore_index=True)
    frame = frame.assign(src=frame["lang"], tgt=pivot)
    blocks += ctx.published_blocks("contextual_retrieval", frame,
                                   Matching(identity=("src", "tgt", "retrieval", "setting"),
                                            defaults={"parallel_sentences": int(frame["parallel_sentences"].max())}))
    return blocks


def _chance_note(rows: pd.DataFrame) -> str:
    """The accuracy of a random pick among the other language's words (the table's `chance`), per kind."""
    if "chance" not in rows or rows["chance"].isna().all():
        return ""
    levels = rows.groupby("retrieval")["chance"].mean()
    return " Chance (a random pick among the other language's words): " + ", ".join(
        f"{kind.replace('_', '-')} {100 * level:.2g} %" for kind, level in levels.items()) + "."


def _layer_note(rows: pd.DataFrame) -> str:
    if "layer" not in rows:
        return ""
    layers = rows[rows["setting"] != "aligned_fasttext_sentence"].groupby("lm")["layer"].max()
    shown = sorted({int(v) for v in layers})
    return f" BERT layer: {', '.join(map(str, shown))}." if shown else ""


# ---------------------------------------------------------------------------------------------- XNLI

def alignment_xnli(transfer: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Mean over seeds of the alignment study's XNLI test accuracy: one row per base model, setting, amount of
    parallel data and language, with the base's model columns, at the smallest freeze depth, and the reasons the
    findings flag its rows with (`flag`, as xling.evaluate.findings.cao flags them)."""
    rows = cao_xnli(transfer.assign(flag=with_table_flags(transfer, transfer_flags(transfer, pivot))))
    if rows.empty:
        return pd.DataFrame()
    rows = rows[rows["freeze"] == rows["freeze"].min()]
    model = rows[rows["lm"] == rows["base"]].groupby("base")[MODEL_KEYS].first()
    keys = ["base", "setting", "parallel_sentences", "lang", "freeze"]
    rows = rows.assign(selection=rows["selection"] if "selection" in rows else None)
    out = rows.groupby(keys, as_index=False).agg(value=("value", "mean"), n_seeds=("seed", "nunique"),
                                                 flag=("flag", cell_reason), selection=("selection", _selections))
    for column in MODEL_KEYS:  # an aligned model is shown under its base
        out[column] = out["base"].map(model[column]) if len(model) else np.nan
    return out.assign(task="xnli", metric="accuracy", split="test")


def _xnli_table(df: pd.DataFrame, title: str, keys: list[tuple[str, int]], langs: list[str], label, note: str
                ) -> Block:
    lines = []
    for setting, n in keys:
        cell = df[(df["setting"] == setting) & (df["parallel_sentences"] == n)].set_index("lang")
        values = [cell.at[lang, "value"] if lang in cell.index else np.nan for lang in langs]
        reasons = [cell.at[lang, "flag"] if lang in cell.index else None for lang in langs]
        named = cell_reason(f"{lang}: {r}" for lang, r in zip(langs, reasons, strict=True) if is_degenerate(r))  # the average's
        lines.append([label(setting, n)] + [_flagged(v, r) for v, r in zip(values, reasons, strict=True)]
                     + [_flagged(np.mean(values), named) if not np.isnan(values).any() else DASH])
    return table_block(title, ["setting", *langs, "average"], lines, numeric=range(1, 2 + len(langs)), note=note)


@register_section("alignment_xnli", "Zero-shot XNLI after alignment (Cao et al. 2020, Tables 1, 2 and 5)",
                  required=("contextual_retrieval", "transfer"), sources=("transfer",))  # its tables: XNLI only
def render_alignment_xnli(ctx: ReportContext) -> list[Block]:
    pivot = ctx.pivot
    df = alignment_xnli(ctx.tables["transfer"], pivot)
    if df.empty:  # the published numbers still stand for reference
        return [text(f"No XNLI of an aligned or rotated BERT in {ctx.table_paths['transfer']}.")] + [
            block for key in ("alignment_xnli", "alignment_xnli_data", "alignment_xnli_languages")
            for block in ctx.published_blocks(key, pd.DataFrame(), Matching(identity=("lang",)))]
    langs = sorted(df["lang"].unique(), key=lambda lang: (lang != pivot, lang))
    blocks = [text("Each model is fine-tuned on English XNLI training data and tested on every language; a "
                   "rotation multiplies the other language's vectors at the rotation layer by its map while "
                   "testing. Accuracy in percent, the mean over fine-tuning seeds; average: over every column, the "
                   "pivot included, as the paper averages.")]
    for base, model in _base_groups(df.assign(lm=df["base"])):
        part = df[df["base"] == base]
        largest = int(part["parallel_sentences"].max())
        table1 = [(s, n) for s in XNLI_ORDER for n in sorted(part.loc[part["setting"] == s, "parallel_sentences"]
                                                             .unique()) if s == XNLI_ORDER[0] or n == largest]
        name = model_name(model)
        blocks.append(_xnli_table(part, f"Table 1 layout: XNLI test accuracy (%), {name}", table1, langs, _label,
                                  f"The settings with the most parallel data of this run ({largest:,} sentence "
                                  f"pairs per language; the paper's 250K). Frozen up to layer "
                                  f"{int(part['freeze'].iloc[0])} while fine-tuning on English. Checkpoint chosen "
                                  f"on {_selections(part['selection'])}; the transfer section's tables of the same "
                                  "BERT use their own fine-tunings and selection, so their numbers differ."))
        table2 = [(s, int(n)) for s, n in part[part["setting"].isin(["zero_shot_base_bert", "word_aligned_finetuned"])]
                  [["setting", "parallel_sentences"]].drop_duplicates().sort_values("parallel_sentences")
                  .itertuples(index=False)]
        blocks.append(_xnli_table(part, f"Tables 2 and 5 layout: XNLI test accuracy (%) by parallel data, {name}",
                                  table2, langs, lambda s, n: f"{n:,}" if n else "None",
                                  "Sentence pairs per language the model was aligned on (None: the base model). "
                                  "The paper's Table 2: 10K, 50K, 250K; its Table 5: 20K, with ar, zh, ur."))
    in_paper = df[df["setting"] != "word_aligned_finetuned"]
    aligned = df[df["setting"] == "word_aligned_finetuned"]
    largest = aligned[aligned["parallel_sentences"] == aligned.groupby("base")["parallel_sentences"]
                      .transform("max")]
    blocks += ctx.published_blocks("alignment_xnli", pd.concat([in_paper, largest]),
                                   Matching(identity=("task", "metric", "lang", "setting")))
    by_data = df[df["setting"].isin(["zero_shot_base_bert", "word_aligned_finetuned"])]
    blocks += ctx.published_blocks("alignment_xnli_data", by_data,
                                   Matching(identity=("task", "metric", "lang", "parallel_sentences")))
    near = aligned.assign(_d=(np.log(aligned["parallel_sentences"]) - np.log(TABLE5_PARALLEL)).abs())
    near = near[near["_d"] == near.groupby("base")["_d"].transform("min")].drop(columns="_d")
    table5 = pd.concat([df[df["setting"] == "zero_shot_base_bert"],
                        near.assign(setting="word_aligned_finetuned_20k")])
    blocks += ctx.published_blocks("alignment_xnli_languages", table5,
                                   Matching(identity=("task", "metric", "lang", "setting")))
    return blocks


# ---------------------------------------------------------------------------------------------- Figure 2

def retrieval_and_xnli(retrieval: pd.DataFrame, transfer: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Cao et al.'s Figure 2 points: one row per base BERT and language paired with the pivot, its contextual word
    retrieval accuracy and its zero-shot XNLI test accuracy (both in %, XNLI the mean over seeds). A (base, language)
    that the run measured one way only keeps a row with the other side NaN, so the report can name it."""
    found = _retrieval_layers(cao_retrieval(retrieval))
    found = found[(found["setting"] == "base_bert") & (found["retrieval"] == "contextual")]
    found = found.assign(flag=found["flag"] if "flag" in found else None).groupby(["base", "lang"], as_index=False).agg(
        retrieval=("accuracy", "mean"), retrieval_flag=("flag", lambda f: in_percent(cell_reason(f))))
    xnli = alignment_xnli(transfer, pivot)
    if xnli.empty or found.empty:
        return pd.DataFrame(columns=["base", "lang", "retrieval", "xnli", "flag"])
    xnli = xnli[(xnli["setting"] == "zero_shot_base_bert") & (xnli["lang"] != pivot)]
    points = found.merge(xnli[["base", "lang", "value", "flag"]].rename(columns={"value": "xnli"}),
                         on=["base", "lang"], how="outer")
    flags = [cell_reason([a, b]) for a, b in zip(points["retrieval_flag"], points["flag"], strict=True)]
    return (points.assign(retrieval=100 * points["retrieval"], flag=flags).drop(columns="retrieval_flag")
            .sort_values(["base", "lang"], ignore_index=True))


def one_sided(points: pd.DataFrame) -> str:
    """The (base, language) rows of retrieval_and_xnli measured one way only, named for the report's note."""
    missing = points[points[["retrieval", "xnli"]].isna().any(axis=1)]
    return ", ".join(f"{base} {lang} ({'XNLI' if pd.notna(retrieval) else 'retrieval'} missing)"
                     for base, lang, retrieval in missing[["base", "lang", "retrieval"]].itertuples(index=False))


def pearson(points: pd.DataFrame) -> float:
    """Pearson's r of retrieval and XNLI accuracy (scipy); NaN below three points or with a constant column."""
    from scipy.stats import pearsonr

    if len(points) < 3 or points["retrieval"].nunique() < 2 or points["xnli"].nunique() < 2:
        return float("nan")
    return float(pearsonr(points["retrieval"], points["xnli"]).statistic)


def xnli_retrieval_figure(points: pd.DataFrame, settings: str) -> Figure:
    """A point per language (labelled), a colour per base BERT, Pearson's r in the legend."""
    fig = figures._new_figure(5.0, 4.0)
    ax = fig.subplots()
    if points.empty:
        ax.text(0.5, 0.5, "no base BERT with both contextual retrieval and XNLI in this run", ha="center",
                va="center", transform=ax.transAxes)
    for i, (base, part) in enumerate(points.groupby("base", sort=True)):
        r = pearson(part)
        ax.scatter(part["retrieval"], part["xnli"], color=figures.PALETTE[i % len(figures.PALETTE)],
                   marker=figures.MARKERS[i % len(figures.MARKERS)],
                   label=f"{base} (r = {r:.2f}, n = {len(part)})" if r == r else f"{base} (n = {len(part)}: no r)")
        for x, y, lang in zip(part["retrieval"], part["xnli"], part["lang"], strict=True):
            ax.annotate(lang, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
        ax.legend(fontsize=8)
    ax.set_xlabel("contextual word retrieval accuracy (%)")
    ax.set_ylabel("zero-shot XNLI accuracy (%)")
    figures._title(fig, "XNLI against word retrieval, base BERT", settings)
    return fig


@register_section("alignment_xnli_retrieval", "XNLI against word retrieval (Cao et al. 2020, Figure 2)",
                  required=("contextual_retrieval", "transfer"))
def render_alignment_xnli_retrieval(ctx: ReportContext) -> list[Block]:
    measured = retrieval_and_xnli(ctx.tables["contextual_retrieval"], ctx.tables["transfer"], ctx.pivot)
    points, left_out = measured.dropna(subset=["retrieval", "xnli"]), one_sided(measured)
    seen = recorded_values(ctx.tables["contextual_retrieval"], "exclude_seen", {True: "left out", False: "kept"})
    settings = (f"base BERTs of the alignment study; retrieval: contextual, pairs seen in training and exact matches "
                f"{seen}; XNLI: test accuracy, fine-tuned on English, the smallest freeze depth, mean over seeds")
    lines = [[base, lang, f"{x:.1f}", _flagged(y, reason)] for base, lang, x, y, reason in
             points[["base", "lang", "retrieval", "xnli", "flag"]].itertuples(index=False)]
    correlation = "; ".join(f"{base}: r = {pearson(part):.2f} over {len(part)} languages"
                            for base, part in points.groupby("base", sort=True)) or "no points"
    figure = ctx.figure(XNLI_RETRIEVAL_FIGURE, xnli_retrieval_figure(points, settings), XNLI_RETRIEVAL_FIGURE,
                        settings, "XNLI against contextual word retrieval")
    return [with_figure_note(figure, figure_note(points, points["flag"], ["base", "lang"])),
            table_block("XNLI against word retrieval: the points", ["base model", "language", "retrieval (%)",
                        "XNLI (%)"], lines, numeric=(2, 3), collapsed=True,
                        note=f"Pearson's r (scipy.stats.pearsonr): {correlation}. "
                             + (f"Left out, measured one way only: {left_out}. " if left_out else "")
                             + "The paper plots mBERT's 8 languages and reads a strong correlation; it prints no "
                               "number.")]


# ---------------------------------------------------------------------------------------------- analyses

@register_section("alignment_pos", "Contextual word retrieval by part of speech (Cao et al. 2020, Table 4)",
                  required=("contextual_retrieval_pos",), results={"contextual_retrieval_pos": ("accuracy", "n_queries")})
def render_alignment_pos(ctx: ReportContext) -> list[Block]:
    where = ctx.table_paths["contextual_retrieval_pos"]
    table = ctx.tables["contextual_retrieval_pos"]
    require_columns(table, POS_REQUIRED, where)
    rows = analysis_rows(table)
    groups = list(dict.fromkeys(rows["group"]))
    tags = {g: [t for t in PAPER_POS if ((rows["group"] == g) & (rows["pos"] == t)).any()]
            + sorted(set(rows.loc[(rows["group"] == g) & (rows["pos"] != "average"), "pos"]) - set(PAPER_POS))
            for g in groups}
    columns = [(g, t) for g in groups for t in [*tags[g], "average"]]
    keys = ["base", "setting", "parallel_sentences", "group", "pos"]
    mean = rows.groupby(keys, as_index=False).agg(accuracy=("accuracy", "mean"), n_queries=("n_queries", "sum"))
    flags = analysis_flags("contextual_retrieval_pos", rows, keys,  # a group's average named as the findings name it
                           lambda c: pos_label(c[1], c[3] if c[4] == "average" else c[4]))
    blocks = [text("Accuracy of word retrieval by the universal POS tag of the pivot word, grouped as Cao et al. "
                   "group them (a group's average is the mean of its tags'); the mean over the language pairs. "
                   f"Retrieval: {recorded_values(table, 'contextual', {True: 'contextual', False: 'non-contextual'})}"
                   "; pairs seen in training "
                   f"{recorded_values(table, 'exclude_seen', {True: 'left out', False: 'kept'})}; "
                   f"tags from {recorded_values(table, 'pos_treebank')}.")]
    models = pd.DataFrame.from_dict(dict(_base_groups(rows)), orient="index")  # each base BERT's own columns
    for base in sorted(mean["base"].unique()):
        model = {k: models.at[base, k] for k in MODEL_KEYS if k in models}
        part = mean[mean["base"] == base]
        lines = []
        for setting, n in part[["setting", "parallel_sentences"]].drop_duplicates().itertuples(index=False):
            cell = part[(part["setting"] == setting) & (part["parallel_sentences"] == n)].set_index(["group", "pos"])
            lines.append([_label(setting, int(n))] + [
                flagged_cell(fmt_percent(cell.at[key, "accuracy"]), flags[(base, setting, n, *key)],
                             f"n {fmt_count(cell.at[key, 'n_queries'])}") if key in cell.index else DASH
                for key in columns])
        header = [{"text": t, "sub": g.replace("_", " ")} for g, t in columns]
        blocks.append(table_block(f"Accuracy (%) by part of speech, {model_name(model)}", ["setting", *header], lines,
                                  numeric=range(1, 1 + len(columns)),
                                  note="The layout of Cao et al.'s Table 4 (non-contextual retrieval, pairs seen in "
                                       "training kept, mBERT before and after alignment on 250K pairs). Small grey "
                                       "number: queries (both directions, all pairs)."))
    ours = mean.assign(pos=[PAPER_GROUP_AVERAGE.get(g) if p == "average" else PAPER_POS.get(p, p)
                            for g, p in zip(mean["group"], mean["pos"], strict=True)])
    for column in MODEL_KEYS:
        ours[column] = ours["base"].map(models[column]) if column in models else np.nan
    blocks += ctx.published_blocks("contextual_retrieval_pos", ours.dropna(subset=["pos"]),
                                   Matching(identity=("pos", "setting")))
    return blocks


def frequency_figure(curves: pd.DataFrame, settings: str) -> Figure:
    """Cao et al.'s Figure 3: accuracy (mean over the language pairs) against the bin of the frequency-rank
    difference, a line per setting, a panel per base BERT."""
    bases = list(dict.fromkeys(curves["base"])) or ["(none)"]
    fig = figures._new_figure(5.0 * min(len(bases), 2) + 0.6, 3.4 * -(-len(bases) // 2) + 0.6)
    axes = fig.subplots(-(-len(bases) // 2), min(len(bases), 2), squeeze=False).ravel()  # two panels a row
    bins = curves[["rank_bin", "rank_difference"]].drop_duplicates().sort_values("rank_bin")
    for ax, base in zip(axes, bases, strict=False):
        part = curves[curves["base"] == base]
        if part.empty:
            ax.text(0.5, 0.5, "no frequency-rank analysis in this run", ha="center", va="center",
                    transform=ax.transAxes)
        for i, ((setting, n), line) in enumerate(part.groupby(["setting", "parallel_sentences"], sort=False)):
            line = line.sort_values("rank_bin")
            ax.plot(line["rank_bin"], 100 * line["accuracy"], marker=figures.MARKERS[i % len(figures.MARKERS)],
                    color=figures.PALETTE[i % len(figures.PALETTE)], label=_label(setting, int(n)))
        ax.set_xticks(bins["rank_bin"], bins["rank_difference"], rotation=30)
        ax.set_ylim(0, 105)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(str(base), fontsize=10)
        if not part.empty:
            ax.legend(fontsize=8)
    for ax in axes[len(bases):]:
        ax.set_visible(False)
    for ax in axes[: len(bases)]:
        ax.set_xlabel("difference in frequency rank of the two words")
    figures._title(fig, "Contextual word retrieval by frequency-rank difference", settings)
    return fig


@register_section("alignment_frequency", "Retrieval against the frequency-rank difference (Cao et al. 2020, "
                  "Figure 3)", required=("contextual_retrieval_frequency",),
                  results={"contextual_retrieval_frequency": ("accuracy", "n_queries")})
def render_alignment_frequency(ctx: ReportContext) -> list[Block]:
    where = ctx.table_paths["contextual_retrieval_frequency"]
    table = ctx.tables["contextual_retrieval_frequency"]
    require_columns(table, FREQUENCY_REQUIRED, where)
    rows = analysis_rows(table)
    curves = rows.groupby(["base", "setting", "parallel_sentences", "rank_bin", "rank_difference"], as_index=False,
                          sort=False).agg(accuracy=("accuracy", "mean"), n_queries=("n_queries", "sum"))
    order = {s: i for i, s in enumerate(RETRIEVAL_ORDER)}
    curves = curves.sort_values(["base", "setting", "parallel_sentences", "rank_bin"],
                                key=lambda c: c.map(order) if c.name == "setting" else c, kind="stable")
    settings = (f"mean over {rows['lang'].nunique()} language pairs; rank bins {recorded_values(table, 'rank_bins')}; "
                "pairs seen in training and exact matches "
                f"{recorded_values(table, 'exclude_seen', {True: 'left out', False: 'kept'})}")
    point = ["base", "setting", "parallel_sentences", "rank_bin"]
    flags = analysis_flags("contextual_retrieval_frequency", rows, [*point, "rank_difference"],
                           lambda c: frequency_label(c[1], c[4]))  # each point named as the findings name it
    lines = [[str(b), _label(s, int(n)), r, flagged_cell(fmt_percent(a), flags[(b, s, n, k, r)]), fmt_count(q)]
             for b, s, n, k, r, a, q in curves.itertuples(index=False)]
    shown = pd.Series([flags[c] for c in curves[[*point, "rank_difference"]].itertuples(index=False)], curves.index)
    return [with_figure_note(ctx.figure(FREQUENCY_FIGURE, frequency_figure(curves, settings), FREQUENCY_CAPTION,
                                        settings, "Accuracy by frequency-rank difference"),
                             figure_note(curves, shown, point)),
            table_block("Accuracy by frequency-rank difference: the numbers", ["base model", "setting",
                        "rank difference", "accuracy (%)", "queries"], lines, numeric=(3, 4), collapsed=True)]
