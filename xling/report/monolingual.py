"""Report sections for monolingual BERTs (Conneau et al. 2020, section 5): Procrustes alignment at word level
(Figure 4), contextual word level (zero-shot NER and parsing through the map, Figure 5) and sentence level
(Figure 6), and linear CKA by layer (Figure 7).

The paper gives these as figures only: no published number is recorded for them, and each section says so.
Every number shown carries its models (lm_src, lm_tgt) and settings in the full tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from xling.data.transfer_tasks import TASK_METRIC
from xling.report import figures
from xling.report.blocks import Block, fmt_count, fmt_num, fmt_percent, table_block, text
from xling.report.core import ReportContext, register_section, require_columns
from xling.report.published import Matching

WORD_RESULTS = ("p_at_1", "p_at_5", "n_train_pairs", "n_test_pairs", "coverage", "n_queries", "n_src_words",
                "n_tgt_words")
SENTENCE_RESULTS = ("p_at_1", "n_map_sentences", "n_test_sentences")
CKA_RESULTS = ("cka", "n_sentences")
CONTEXTUAL_RESULTS = ("value", "n", "pivot_value", "pivot_n", "n_map_pairs", "n_map_sentences", "best_epoch",
                      "trainable_parameters")
CONTEXTUAL_KINDS = {"mlm-align": "MLM align", "bimlm": "biMLM"}
WORD_LEVELS = {"embedding": "BERT embeddings", "fasttext": "fastText (same words)",
               "fasttext_all": "fastText (all words)", "contextual": "BERT contextual means"}
COMPARISONS = {"monolingual": "monolingual BERTs", "multilingual": "one multilingual BERT",
               "random": "random encoder (lower bound)"}
XTREME_DIRECTION = "en->xx"


def _models_line(df: pd.DataFrame) -> str:
    models = sorted(set(df["lm_src"]) | set(df["lm_tgt"]))
    return "models " + ", ".join(models)


def _check(ctx: ReportContext, key: str, columns) -> tuple[pd.DataFrame, str]:
    df, where = ctx.tables[key], ctx.table_paths[key]
    require_columns(df, columns, where)
    if df.empty:
        raise ValueError(f"{where}: the table has no rows")
    return df, where


# ---------------------------------------------------------------------------------------------- word level

def word_alignment_figure(df: pd.DataFrame, settings: str) -> "figures.Figure":
    """Figure 4's two panels: (a) the embedding layer's single-piece words, BERT vs fastText per pair; (b) the
    contextual means by layer, one line per pair, fastText on all words as a dashed line of the same colour."""
    top = 100 * figures._ylim_top(df["p_at_1"])
    df = df.assign(p_at_1=100 * df["p_at_1"])  # in percent, as the tables
    pairs = sorted(df["pair"].unique())
    fig = figures._new_figure(11, 4.2)
    left, right = fig.subplots(1, 2)
    x = np.arange(len(pairs))
    for i, level in enumerate(("embedding", "fasttext")):
        values = [df[(df["pair"] == p) & (df["level"] == level)]["p_at_1"].mean() for p in pairs]
        left.bar(x + (i - 0.5) * 0.38, values, 0.38, label=WORD_LEVELS[level], color=figures.PALETTE[i])
    left.set_xticks(x, pairs)
    left.set_ylabel("P@1 (%, CSLS)")
    left.set_title("(a) embedding layer, single-piece words", fontsize=10)
    left.legend(fontsize=8)
    for i, pair in enumerate(pairs):
        color = figures.PALETTE[i % len(figures.PALETTE)]
        rows = df[(df["pair"] == pair) & (df["level"] == "contextual")].sort_values("layer")
        right.plot(rows["layer"], rows["p_at_1"], marker="o", color=color, label=f"{pair} BERT")
        static = df[(df["pair"] == pair) & (df["level"] == "fasttext_all")]["p_at_1"]
        if len(static):
            right.axhline(static.iloc[0], color=color, linestyle="--", linewidth=1, label=f"{pair} fastText")
    right.set_xticks(sorted(df[df["level"] == "contextual"]["layer"].unique()))
    right.set_xlabel("layer (0 = embedding output)")
    right.set_ylabel("P@1 (%, CSLS)")
    right.set_title("(b) contextual word means by layer", fontsize=10)
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.set_ylim(0, top)
    figures._title(fig, "Word translation through a Procrustes map between monolingual BERTs", settings)
    return fig


@register_section("monolingual_words", "Monolingual BERTs aligned at word level (Conneau et al. Figure 4)",
                  required=("monolingual_words",), results={"monolingual_words": WORD_RESULTS})
def render_words(ctx: ReportContext) -> list[Block]:
    df, _ = _check(ctx, "monolingual_words", ("pair", "level", "layer", "lm_src", "lm_tgt", "csls_k",
                                             "normalize_iterations", *WORD_RESULTS))
    settings = (f"{_models_line(df)}; iterative normalisation x{df['normalize_iterations'].iloc[0]}, Procrustes on "
                f"the train dictionary, CSLS k={df['csls_k'].iloc[0]} among the whole target vocabulary")
    blocks = [text(
        "Each language has its own BERT, trained on its own sample only (no parameter is shared). Each space is "
        "normalised (unit length and mean centring, repeated; Zhang et al. 2019), an orthogonal map from the "
        "target space onto the pivot's is learned on the train dictionary's pairs (Procrustes), and the test "
        "dictionary is translated pivot\u2192target by CSLS. Embedding level: the rows of the input-embedding "
        "matrix of the words that are one wordpiece, with fastText trained on each language alone as the "
        "baseline on the same words; contextual level: each word's vector at a layer is the mean of its "
        "contextual vectors over the language's sample. Conneau et al. find the embeddings align slightly "
        "better than fastText, the contextual means worse than fastText and better at higher layers.")]
    blocks.append(ctx.figure("monolingual_words", word_alignment_figure(df, settings), "monolingual_words", settings,
                             "Word translation between monolingual BERTs"))
    blocks += ctx.published_blocks("monolingual_words", df, Matching(identity=("pair", "level", "layer")))
    rows = [[r["pair"], WORD_LEVELS.get(r["level"], r["level"]), str(r["layer"]), fmt_percent(r["p_at_1"]),
             fmt_percent(r["p_at_5"]), fmt_count(r["n_train_pairs"]), fmt_count(r["n_queries"]),
             fmt_percent(r["coverage"]),
             f"{fmt_count(r['n_src_words'])} / {fmt_count(r['n_tgt_words'])}"]
            for r in df.sort_values(["pair", "level", "layer"]).to_dict("records")]
    blocks.append(table_block("Word translation: all numbers",
                              ["pair", "vectors", "layer", "P@1 (%)", "P@5 (%)", "train pairs", "queries", "coverage (%)",
                               "words (pivot / target)"], rows, numeric=range(2, 9)))
    return blocks


# ---------------------------------------------------------------------------------------------- contextual words

def contextual_alignment_figure(df: pd.DataFrame, settings: str) -> "figures.Figure":
    """Figure 5's layout: one panel per task and pair, the target's score by layer i for MLM align and biMLM
    (the pivot's own score dotted in the same colour)."""
    panels = sorted({(task, pair) for task, pair in zip(df["task"], df["pair"], strict=True)})
    fig = figures._new_figure(max(4.0, 3.6 * len(panels)) + 0.5, 4.2)
    axes = np.atleast_1d(fig.subplots(1, len(panels), squeeze=False)[0])
    for ax, (task, pair) in zip(axes, panels, strict=True):
        metric = TASK_METRIC[task]
        for i, kind in enumerate(k for k in CONTEXTUAL_KINDS if k in set(df["kind"])):
            rows = df[(df["task"] == task) & (df["pair"] == pair) & (df["kind"] == kind)
                      & (df["metric"] == metric)].sort_values("layer")
            color = figures.PALETTE[i]
            ax.plot(rows["layer"], rows["value"], marker="o", color=color,
                    label=f"{CONTEXTUAL_KINDS[kind]} ({pair[3:]})")
            ax.plot(rows["layer"], rows["pivot_value"], linestyle=":", color=color,
                    label=f"{CONTEXTUAL_KINDS[kind]} ({pair[:2]})")
        ax.set_xticks(sorted(df["layer"].unique()))
        ax.set_xlabel("layer i (0 = embedding output)")
        ax.set_ylabel(metric.upper() if metric != "f1" else "span F1")
        ax.set_ylim(0, 100)
        ax.set_title(f"{task}, {pair}", fontsize=10)
        ax.legend(fontsize=8)
    figures._title(fig, "Zero-shot transfer through a map at layer i between monolingual BERTs", settings)
    return fig


@register_section("monolingual_contextual",
                  "Monolingual BERTs aligned at contextual word level (Conneau et al. Figure 5)",
                  required=("monolingual_contextual",),
                  results={"monolingual_contextual": CONTEXTUAL_RESULTS})
def render_contextual(ctx: ReportContext) -> list[Block]:
    df, _ = _check(ctx, "monolingual_contextual", ("pair", "task", "kind", "layer", "metric", "lm_src", "lm_tgt",
                                                  "task_layers", "map_split", "normalize_iterations",
                                                  *CONTEXTUAL_RESULTS))
    aligner = df["aligner"].iloc[0] if "aligner" in df else "eflomal"  # tables before the aligner was a setting
    settings = (f"{_models_line(df)}; maps learned on {aligner} word pairs of XNLI {df['map_split'].iloc[0]} "
                f"({fmt_count(df['n_map_sentences'].max())} sentence pairs); {df['task_layers'].iloc[0]} task "
                "layers trained on the pivot above its frozen layers 0..i")
    blocks = [text(
        "Each language's own BERT is cut after layer i. Words of XNLI's parallel sentences are linked by "
        f"{aligner} (both directions, one-to-one intersection), each linked word's vector at layer i (its last "
        "subword's) is "
        "taken from both models, both spaces are normalised (iterative normalisation, fitted on the sentences' "
        "words and applied to every state at layer i) and an orthogonal map W_i from the target's layer i onto "
        "the pivot's is learned (Procrustes). New Transformer layers and the task head are trained on the pivot's "
        "training set above the pivot's frozen layers 0..i; a target sentence runs through the target's own "
        "layers, its normaliser and W_i, then through those task layers (MLM align). biMLM: the same task layers "
        "on the first i layers of a bilingual MLM (the pair's Default-setting MLM, as the paper's; or the run's "
        "BERT: monolingual.contextual.bimlm), tested on the target as it is. Dotted: the pivot's own "
        "test score. Conneau et al. find MLM align somewhat below biMLM (the gap larger for NER than parsing) and "
        "the middle layers best.")]
    blocks.append(ctx.figure("monolingual_contextual", contextual_alignment_figure(df, settings),
                             "monolingual_contextual", settings, "Transfer through a map between monolingual BERTs"))
    blocks += ctx.published_blocks("monolingual_contextual", df,
                                   Matching(identity=("pair", "task", "kind", "layer", "metric")))
    shown = df[df["metric"].isin(("f1", "uas", "las"))]
    table = shown.pivot_table(index=["pair", "task", "metric", "layer"], columns="kind",
                              values=["value", "pivot_value"]).reset_index()
    kinds = [k for k in CONTEXTUAL_KINDS if k in set(df["kind"])]
    rows = [[r[("pair", "")], r[("task", "")], r[("metric", "")], str(r[("layer", "")]),
             *(fmt_num(r.get((column, kind)), 1) for kind in kinds for column in ("value", "pivot_value"))]
            for _, r in table.iterrows()]
    header = [f"{CONTEXTUAL_KINDS[k]} ({side})" for k in kinds for side in ("target", "pivot")]
    blocks.append(table_block("Transfer through the map: all numbers", ["pair", "task", "metric", "layer", *header],
                              rows, numeric=range(3, 4 + len(header))))
    return blocks


# ---------------------------------------------------------------------------------------------- sentence level

def sentence_alignment_figure(df: pd.DataFrame, settings: str) -> "figures.Figure":
    """Figure 6's layout: Tatoeba P@1 by layer, one line per pair through the map (dashed: without it)."""
    top = 100 * figures._ylim_top(df["p_at_1"])
    df = df.assign(p_at_1=100 * df["p_at_1"])  # in percent, as the tables
    fig = figures._new_figure(7, 4.2)
    ax = fig.subplots()
    for i, pair in enumerate(sorted(df["pair"].unique())):
        color = figures.PALETTE[i % len(figures.PALETTE)]
        for method, style in (("procrustes", "-"), ("none", ":")):
            rows = df[(df["pair"] == pair) & (df["method"] == method)].sort_values("layer")
            ax.plot(rows["layer"], rows["p_at_1"], marker="o" if method == "procrustes" else None, linestyle=style,
                    color=color, label=f"{pair}" + (" (no map)" if method == "none" else ""))
    ax.set_xticks(sorted(df["layer"].unique()))
    ax.set_xlabel("layer (0 = embedding output)")
    ax.set_ylabel(f"Tatoeba P@1 (%, {XTREME_DIRECTION})")
    ax.set_ylim(0, top)
    ax.legend(fontsize=8)
    figures._title(fig, "Sentence retrieval through a Procrustes map between monolingual BERTs", settings)
    return fig


@register_section("monolingual_sentences", "Monolingual BERTs aligned at sentence level (Conneau et al. Figure 6)",
                  required=("monolingual_sentences",),
                  results={"monolingual_sentences": SENTENCE_RESULTS})
def render_sentences(ctx: ReportContext) -> list[Block]:
    df, _ = _check(ctx, "monolingual_sentences", ("pair", "layer", "method", "direction", "lm_src", "lm_tgt",
                                                 "map_split", "normalize_iterations", *SENTENCE_RESULTS))
    settings = (f"{_models_line(df)}; map learned on XNLI {df['map_split'].iloc[0]} "
                f"({fmt_count(df['n_map_sentences'].max())} sentence pairs), mean-pooled wordpieces")
    shown = df[df["direction"] == XTREME_DIRECTION]
    blocks = [text(
        "Sentence vectors are the mean of a sentence's wordpiece vectors at a layer ([CLS] and [SEP] left out), "
        "from each language's own BERT. Both spaces are normalised, an orthogonal map is learned on XNLI's "
        "parallel sentences, and Tatoeba's English sentences retrieve their translations among all target "
        "sentences by cosine (P@1). Without a map the two models' spaces are unrelated (chance: 1 / the "
        "number of sentences). Conneau et al. find the lower layers align best.")]
    blocks.append(ctx.figure("monolingual_sentences", sentence_alignment_figure(shown, settings),
                             "monolingual_sentences", settings, "Tatoeba through a map between monolingual BERTs"))
    blocks += ctx.published_blocks("monolingual_sentences", df, Matching(identity=("pair", "layer", "method")))
    table = df.pivot_table(index=["pair", "direction", "layer"], columns="method", values="p_at_1").reset_index()
    rows = [[r["pair"], r["direction"], str(r["layer"]), fmt_percent(r.get("none")), fmt_percent(r.get("procrustes"))]
            for r in table.to_dict("records")]
    blocks.append(table_block("Tatoeba P@1 (%): all numbers", ["pair", "direction", "layer", "no map", "Procrustes"],
                              rows, numeric=(2, 3, 4)))
    return blocks


# ---------------------------------------------------------------------------------------------- CKA

def cka_figure(df: pd.DataFrame, settings: str) -> "figures.Figure":
    """Figure 7's layout: one heatmap per comparison, rows the layers and their average, columns the pairs; under
    it, when the table has the intervals, one panel per pair: CKA by layer, a line per comparison in its shaded
    jackknife interval (a heatmap cell cannot show one)."""
    comparisons = [c for c in COMPARISONS if c in set(df["comparison"])]
    pairs = sorted(df["pair"].unique())
    layers = sorted(df["layer"].unique())
    with_bands = {"ci_low", "ci_high"} <= set(df.columns)
    height = 0.45 * len(layers) + 2.2
    fig = figures._new_figure(3.2 * len(comparisons) + 1, height + (2.6 if with_bands else 0))
    top, bottom = fig.subfigures(2, 1, height_ratios=[height, 2.6]) if with_bands else (fig, None)
    axes = np.atleast_1d(top.subplots(1, len(comparisons)))
    for ax, comparison in zip(axes, comparisons, strict=True):
        grid = (df[df["comparison"] == comparison].pivot_table(index="layer", columns="pair", values="cka")
                .reindex(index=layers, columns=pairs))
        matrix = np.vstack([grid.to_numpy(), grid.mean(axis=0).to_numpy()])
        image = ax.imshow(matrix, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for (row, col), value in np.ndenumerate(matrix):
            if np.isfinite(value):
                ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if value < 0.6 else "black")
        ax.set_xticks(range(len(pairs)), pairs, rotation=45, fontsize=8)
        ax.set_yticks(range(len(layers) + 1), [f"L{layer}" for layer in layers] + ["average"], fontsize=8)
        ax.set_title(COMPARISONS[comparison], fontsize=10)
    top.colorbar(image, ax=list(axes), shrink=0.8, label="linear CKA")
    if bottom is not None:
        _cka_bands(bottom, df, comparisons, pairs)
    figures._title(fig, "CKA of mean-pooled parallel sentence representations", settings)
    return fig


def _cka_bands(panel, df: pd.DataFrame, comparisons: list[str], pairs: list[str]) -> None:
    """One axis per pair: each comparison's CKA by layer and its interval as a band (fill_between), of the
    debiased CKA the intervals surround (the heatmaps above: the table's `cka`, the paper's estimator)."""
    value = "cka_debiased" if "cka_debiased" in df else "cka"
    axes = np.atleast_1d(panel.subplots(1, len(pairs), sharey=True))
    colours = {comparison: f"C{i}" for i, comparison in enumerate(COMPARISONS)}  # the same in every panel
    for ax, pair in zip(axes, pairs, strict=True):
        for comparison in comparisons:
            rows = df[(df["pair"] == pair) & (df["comparison"] == comparison)].sort_values("layer")
            if rows.empty:
                continue
            ax.plot(rows["layer"], rows[value], marker="o", markersize=3, color=colours[comparison],
                    label=COMPARISONS[comparison])
            ax.fill_between(rows["layer"], rows["ci_low"], rows["ci_high"], color=colours[comparison], alpha=0.25,
                            linewidth=0)
        ax.set_title(pair, fontsize=9)
        ax.set_xlabel("layer", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_xticks(sorted(df["layer"].unique()))
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("linear CKA, debiased" if value == "cka_debiased" else "linear CKA", fontsize=8)
    level = f"{df['ci_level'].iloc[0]:.0%} " if "ci_level" in df else ""
    handles = [Line2D([], [], color=colours[c], marker="o", markersize=3, label=COMPARISONS[c]) for c in comparisons]
    panel.legend(handles=handles, fontsize=8, loc="outside right center", title=f"band: {level}interval",
                 title_fontsize=8)


def _with_interval(value, low=None, high=None) -> str:
    """"0.830 [0.800, 0.860]": a number and its interval (the number alone without one)."""
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return fmt_num(value)
    return f"{fmt_num(value)} [{fmt_num(low)}, {fmt_num(high)}]"


@register_section("cka", "Linear CKA by layer (Conneau et al. Figure 7)", required=("cka",),
                  results={"cka": CKA_RESULTS})
def render_cka(ctx: ReportContext) -> list[Block]:
    df, _ = _check(ctx, "cka", ("pair", "comparison", "layer", "lm_src", "lm_tgt", "lm_multilingual", "debiased",
                               "split", *CKA_RESULTS))
    estimator = "debiased (unbiased HSIC)" if df["debiased"].all() else "biased, the paper's formula"
    if "cka_debiased" in df and not df["debiased"].all():
        estimator += "; the bands and the claims: the debiased CKA, which the biased one overstates at these sizes"
    settings = (f"{_models_line(df)}; XNLI {df['split'].iloc[0]}, {fmt_count(df['n_sentences'].max())} parallel "
                f"sentences, mean-pooled wordpieces; CKA {estimator}")
    multilingual = sorted(m for m in df["lm_multilingual"].unique() if m)
    blocks = [text(
        "Linear CKA (Kornblith et al. 2019) between two models' sentence vectors (the mean of the wordpiece "
        "vectors at a layer) of the same parallel XNLI sentences: invariant to rotations and isotropic scaling "
        "of either space, so it measures how far the two spaces are alike up to such a map. Monolingual: the "
        "pivot's BERT on the pivot's sentences vs the target's BERT on their translations; en' is the pivot's "
        "BERT trained again with another seed, on the same sentences. Multilingual: one bilingual model (the "
        "Default-setting MLM of the pair, as the paper's; cka.bilingual) or multilingual BERT on both sides "
        f"({', '.join(multilingual) or 'none in this run'}). Random encoder: the pivot's BERT vs an untrained "
        "BERT of the same architecture on the target side, the lower bound. Conneau et al. find the bilingual "
        "models slightly above the monolingual ones, both far above the random encoder, and the first layers "
        "the most similar.")]
    blocks.append(ctx.figure("cka_layers", cka_figure(df, settings), "cka_layers", settings, "CKA by layer"))
    blocks += ctx.published_blocks("cka", df, Matching(identity=("pair", "comparison", "layer")))
    bounds = [c for c in ("ci_low", "ci_high") if c in df]  # none in a table drawn before the intervals
    table = df.pivot_table(index=["pair", "layer"], columns="comparison", values=["cka", *bounds]).reset_index()
    shown = [c for c in COMPARISONS if ("cka", c) in table]
    rows = [[r[("pair", "")], str(r[("layer", "")]),
             *(_with_interval(r[("cka", c)], *(r.get((b, c)) for b in bounds)) for c in shown)]
            for _, r in table.iterrows()]
    title = f"CKA: all numbers ({df['ci_level'].iloc[0]:.0%} jackknife interval over the sentences)" if bounds \
        else "CKA: all numbers"
    blocks.append(table_block(title, ["pair", "layer", *(COMPARISONS[c] for c in shown)], rows,
                              numeric=range(1, 2 + len(shown))))
    return blocks
