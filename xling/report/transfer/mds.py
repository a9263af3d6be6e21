"""Report section 3 of zero-shot transfer: XNLI with MDS and zero-mean (Liu et al. 2020, arXiv:2004.09205
Table 4), with the published numbers beside ours; its variant rows serve the task sections too.
"""

from __future__ import annotations

import pandas as pd

from xling.report.blocks import (
    DASH,
    MODEL_KEYS,
    Block,
    empty_block,
    fmt_setting,
    model_groups,
    model_name,
    table_block,
    text,
)
from xling.report.core import ReportContext, register_section
from xling.report.published import Matching
from xling.report.transfer.common import (
    IDENTITY,
    TABLE,
    _check_table,
    _group_rows,
    _num_layers,
    _stats_index,
    average_stats,
    freeze_cell,
    lang_columns,
    score_cell,
    seed_stats,
    selection_label,
    selection_title,
    selections,
    shown_line,
    variant_label,
)


def _chosen_alpha(rows: pd.DataFrame) -> str:
    """The alpha each seed chose on dev ('1.5' when they agree; else per seed, in seed order)."""
    values = rows.sort_values("seed")["alpha"].tolist()
    if not values:
        return DASH
    if len(set(values)) == 1:
        return fmt_setting("alpha", values[0])
    return " / ".join(fmt_setting("alpha", v) for v in values)


def variant_rows(part: pd.DataFrame) -> list[tuple[tuple, pd.DataFrame]]:
    """The (freeze, train_transform, transform, layer) variants of one model's rows, in the papers' order:
    by freeze, then none, MDS, zero-mean, anything else."""
    rank = {("none", "none"): 0, ("none", "mds"): 1, ("zero_mean", "zero_mean"): 2}
    keys = part[["freeze", "train_transform", "transform", "layer"]].drop_duplicates()
    ordered = sorted(keys.itertuples(index=False), key=lambda r: (r[0], rank.get((r[1], r[2]), 3), r[1], r[2], r[3]))
    out = []
    for freeze, train_transform, transform, layer in ordered:
        mask = (
            (part["freeze"] == freeze)
            & (part["train_transform"] == train_transform)
            & (part["transform"] == transform)
            & (part["layer"] == layer)
        )
        out.append(((freeze, train_transform, transform, layer), part[mask]))
    return out


def reported_rows(df: pd.DataFrame, task: str, metric: str, selection: str) -> pd.DataFrame:
    """Test rows of one task, metric and checkpoint selection as reported: MDS at the alpha chosen on dev
    (selected), every other transform as it is."""
    return df[
        (df["task"] == task)
        & (df["metric"] == metric)
        & (df["split"] == "test")
        & (df["selection"] == selection)
        & df["selected"].astype(bool)
    ]


def mds_table(rows: pd.DataFrame, pivot: str, where: str, title: str, note: str) -> Block:
    """Liu et al. Table 4: per fine-tuned encoder, 'fine-tune all layers' (k = 0), 'fine-tune last n-k layers'
    (k > 0), '+ MDS' (alpha chosen on dev), '+ zero-mean', and the chosen alpha; languages and the average
    without the pivot as columns."""
    keys = [*MODEL_KEYS, "freeze", "train_transform", "transform", "layer"]
    langs, header = lang_columns(rows["lang"], pivot)
    stats = _stats_index(seed_stats(rows, [*keys, "lang"], where, free=("alpha",)), [*keys, "lang"])
    averages = _stats_index(average_stats(rows, keys, pivot), keys)
    table = []
    for key in model_groups(rows):
        part = _group_rows(rows, key)
        n_layers = _num_layers(part)
        name = model_name(dict(zip(MODEL_KEYS, key, strict=True)))
        for variant, cells in variant_rows(part):
            freeze, train_transform, transform, layer = variant
            if (train_transform, transform) == ("none", "none"):
                label = (
                    "fine-tune all layers"
                    if freeze == 0
                    else f"fine-tune last n\u2212k layers (k = {int(freeze)}"
                    + (f", n = {n_layers})" if n_layers else ")")
                )
            elif (train_transform, transform) == ("none", "mds"):
                label = "+ MDS"
            elif (train_transform, transform) == ("zero_mean", "zero_mean"):
                label = "+ zero-mean"
            else:
                label = variant_label(train_transform, transform, layer)
            full = (*key, *variant)
            table.append(
                [name, label, freeze_cell(freeze), fmt_setting("layer", layer) if layer >= 0 else DASH]
                + [score_cell(stats.get((*full, lang))) for lang in langs]
                + [score_cell(averages.get(full))]
            )
            if transform == "mds":
                table.append(
                    [name, "chosen \u03b1 (on dev)", freeze_cell(freeze), fmt_setting("layer", layer)]
                    + [_chosen_alpha(cells[cells["lang"] == lang]) for lang in langs]
                    + [DASH]
                )
    columns = ["model", "", "frozen (k)", "layer", *header, f"avg w/o {pivot}"]
    return table_block(title, columns, table, note=note, numeric=range(4, len(columns)))


def published_ours(df: pd.DataFrame) -> pd.DataFrame:
    """Our rows that published numbers are compared with: test split, MDS at its chosen alpha, fine-tuned
    encoders only (freeze >= 0: the papers' models are BERTs)."""
    return df[(df["split"] == "test") & df["selected"].astype(bool) & (df["freeze"] >= 0)]


@register_section("transfer_mds", "Zero-shot transfer: XNLI with MDS and zero-mean", required=(TABLE,))
def render_mds(ctx: ReportContext) -> list[Block]:
    df, where = _check_table(ctx)
    pivot = ctx.pivot
    encoders = df[(df["task"] == "xnli") & (df["freeze"] >= 0)]
    blocks = [
        text(
            "Liu et al. (2020, arXiv:2004.09205) Table 4: a BERT fine-tuned on English MultiNLI with all "
            "layers trained (k = 0) or with the embeddings and layers 1..k frozen; at test time MDS adds "
            "\u03b1 (R_en \u2212 R_xx) to layer l, with \u03b1 chosen per language on that language's XNLI "
            "dev split (row 'chosen \u03b1'; one value per seed when the seeds chose differently) and then "
            "applied to its test split. Zero-mean subtracts each language's mean at layer l while "
            "fine-tuning on English and at test time. Means of language: MDS from the fine-tuned model, "
            "zero-mean from the pretrained model, on the run's corpus."
        )
    ]
    if encoders.empty:
        blocks.append(
            empty_block("XNLI with MDS", f"The transfer table ({where}) has no XNLI rows of a fine-tuned encoder.")
        )
    for selection in selections(encoders):
        rows = reported_rows(encoders, "xnli", "accuracy", selection)
        blocks.append(
            mds_table(
                rows,
                pivot,
                where,
                "XNLI test accuracy (%) with MDS and zero-mean, " + selection_title(selection),
                f"Settings: {shown_line(rows, ['test split', selection_label(selection)])}.",
            )
        )
    if len(encoders):
        main = selections(encoders)[0]
        ours = published_ours(df)
        ours = ours[ours["selection"] == main]
        blocks += ctx.published_blocks(
            "transfer_mds",
            ours,
            Matching(
                identity=IDENTITY, defaults={"freeze": int(ours["freeze"].max()) if len(ours) else 0, "selection": main}
            ),
        )
    return blocks
