"""Report sections 4 and 5 of zero-shot transfer: UD POS tagging and dependency parsing (Liu et al. 2020,
arXiv:2010.10041 §5) and WikiAnn NER (beside Conneau et al. 2020 Table 1), a table per task, metric
and checkpoint selection.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from xling.report.blocks import MODEL_KEYS, Block, empty_block, model_groups, model_name, table_block, text
from xling.report.core import ReportContext, register_section
from xling.report.published import Matching
from xling.report.transfer.common import (
    IDENTITY,
    METRIC_LABELS,
    TABLE,
    TASK_LABELS,
    _check_table,
    _group_rows,
    _stats_index,
    average_stats,
    finetune_blocks,
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
from xling.report.transfer.mds import _chosen_alpha, published_ours, reported_rows, variant_rows


def variant_table(rows: pd.DataFrame, task: str, metric: str, pivot: str, where: str, title: str, note: str) -> Block:
    """Rows model x freeze x variant (none / zero-mean / MDS at its layer), columns languages and the average
    over the target languages; the alpha chosen on dev under each MDS number."""
    keys = [*MODEL_KEYS, "freeze", "train_transform", "transform", "layer"]
    langs, header = lang_columns(rows["lang"], pivot)
    stats = _stats_index(seed_stats(rows, [*keys, "lang"], where, free=("alpha",)), [*keys, "lang"])
    averages = _stats_index(average_stats(rows, keys, pivot), keys)
    table = []
    for key in model_groups(rows):
        part = _group_rows(rows, key)
        for variant, cells in variant_rows(part):
            freeze, train_transform, transform, layer = variant
            full = (*key, *variant)
            line = [
                model_name(dict(zip(MODEL_KEYS, key, strict=True))),
                freeze_cell(freeze),
                variant_label(train_transform, transform, layer),
            ]
            for lang in langs:
                extra = (
                    f"\u03b1 {_chosen_alpha(cells[cells['lang'] == lang])}"
                    if transform == "mds" and lang != pivot
                    else ""
                )
                line.append(score_cell(stats.get((*full, lang)), extra))
            table.append(line + [score_cell(averages.get(full))])
    columns = ["model", "frozen (k)", "vectors", *header, f"avg w/o {pivot}"]
    return table_block(title, columns, table, note=note, numeric=range(3, len(columns)))


def _task_tables(ctx: ReportContext, df: pd.DataFrame, where: str, task: str, metrics: Iterable[str]) -> list[Block]:
    rows = df[df["task"] == task]
    if rows.empty:
        return [
            empty_block(
                TASK_LABELS[task],
                f"The transfer table ({where}) has no {TASK_LABELS[task]} rows: this run does not fine-tune this task.",
            )
        ]
    blocks = []
    for selection in selections(rows):
        for metric in metrics:
            shown = reported_rows(rows, task, metric, selection)
            if shown.empty:
                continue
            choices = ["test split", selection_label(selection)]
            blocks.append(
                variant_table(
                    shown,
                    task,
                    metric,
                    ctx.pivot,
                    where,
                    f"{TASK_LABELS[task]}: {METRIC_LABELS.get(metric, metric)} (%), {selection_title(selection)}",
                    f"Settings: {shown_line(shown, choices)}. Under each MDS number: the "
                    "\u03b1 chosen on that language's dev split.",
                )
            )
    return blocks


@register_section("transfer_ud", "Zero-shot transfer: UD POS tagging and dependency parsing", required=(TABLE,))
def render_ud(ctx: ReportContext) -> list[Block]:
    return _task_section(
        ctx,
        text(
            "Liu et al. (2020, arXiv:2010.10041) \u00a75: a BERT fine-tuned on English UD, tested on the "
            "other languages' treebanks; without a transform, with zero-mean (in fine-tuning and at test "
            "time) and with MDS (at test time, \u03b1 chosen on each language's dev split) at layer l. POS: "
            "UPOS accuracy over words (each word labelled on its first subword). Parsing: a biaffine parser "
            "(Dozat & Manning) with maximum-spanning-tree decoding, UAS and LAS with the CoNLL 2018 shared "
            "task's semantics (multiword tokens expanded, punctuation scored, relation subtypes ignored). "
            "The paper prints its Tables 4 and 5 without numbers in the text copy we hold, so no published "
            "numbers stand beside these."
        ),
        {"pos": ["upos"], "parsing": ["uas", "las"]},
    )[0]


def _task_section(ctx: ReportContext, intro: Block, metrics: dict[str, list[str]]) -> tuple[list[Block], pd.DataFrame]:
    """A section of word-level tasks: its introduction, each task's tables of its metrics, the fine-tunings
    behind them; and the transfer table, for what the section adds."""
    df, where = _check_table(ctx)
    blocks = [intro]
    for task, task_metrics in metrics.items():
        blocks += _task_tables(ctx, df, where, task, task_metrics)
    blocks += finetune_blocks(df, [task for task in metrics if (df["task"] == task).any()])
    return blocks, df


@register_section("transfer_ner", "Zero-shot transfer: WikiAnn NER", required=(TABLE,))
def render_ner(ctx: ReportContext) -> list[Block]:
    blocks, df = _task_section(
        ctx,
        text(
            "Named-entity recognition on WikiAnn (IOB2 tags, one label per word on its first subword), "
            "fine-tuned on English and tested on the other languages; span F1 with seqeval (precision and "
            "recall in the full table). Beside ours: Conneau et al. (2020) Table 1, Default row, for XNLI, "
            "NER and parsing in fr, ru and zh \u2014 a bilingual MLM trained per language pair, not one "
            "multilingual model, so its numbers are a reference, not the same setting."
        ),
        {"ner": ["f1"]},
    )
    ours = published_ours(df)
    if len(ours):
        main = selections(ours)[0]
        ours = ours[ours["selection"] == main]
        blocks += ctx.published_blocks(
            "transfer_bilingual_mlm", ours, Matching(identity=IDENTITY, defaults={"selection": main})
        )
    return blocks
