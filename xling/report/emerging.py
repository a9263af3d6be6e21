"""Report section: Conneau et al. (2020), "Emerging Cross-lingual Structure in Pretrained Language Models",
Table 1 — zero-shot transfer of bilingual masked LMs trained with one ingredient of multilinguality removed
(xling.models.ablation), as the change of each task's mean against the default model, with the published
table beside ours."""

from __future__ import annotations

import pandas as pd

from xling.data.transfer_tasks import TASK_METRIC
from xling.evaluate.ablation import POINT_COLUMNS, ablation_scores
from xling.plan.ablation import parse_setting
from xling.report.blocks import DASH, Block, table_block, text
from xling.report.core import ReportContext, register_section, require_columns, shown_path
from xling.report.flags import flagged_cell
from xling.report.transfer.common import DIGITS as SCORE_DIGITS
from xling.report.transfer.common import check_cells, fmt_score, seed_stats

TABLE = "ablation"
REQUIRED = ("lm", "task", "lang", "split", "transform", "selected", "metric", "seed", "value")
TASKS = ("xnli", "ner", "parsing", "pos")
TASK_LABEL = {"xnli": "XNLI", "ner": "NER", "parsing": "parsing", "pos": "POS"}
DIGITS = 1  # as the paper prints Table 1 (ours: as the transfer sections print scores)
KEYS = ["setting", "pair", "task", "lang"]


def setting_order(setting: str) -> tuple:
    """The paper's row order: default, domain, anchors, then separated parameters (embeddings, then layers)."""
    spec = parse_setting(setting)
    group = {"default": 0, "wiki-cc": 1, "no-anchors": 2, "default-anchors": 3, "extra-anchors": 4}.get(setting, 5)
    return group, spec["separate_embeddings"] and spec["separate_layers"] > 0, spec["separate_layers"]


def describe(setting: str) -> list[str]:
    """The paper's columns for a setting of ours: domain, vocabulary (anchors), shared parameters, softmax."""
    spec = parse_setting(setting)
    k = spec["separate_layers"]
    separate = [
        part
        for part, on in (("embeddings", spec["separate_embeddings"]), ("layer 1" if k == 1 else f"layers 1-{k}", k))
        if on
    ]
    anchors = {
        "default": "joint (all shared)",
        "none": "language-prefixed (none shared)",
        "union": "per language, their union (a shared string one id)",
        "extra": "joint + code-switching",
    }[spec["anchors"]]
    if spec["separate_embeddings"]:
        anchors = "joint ids, a vector per language (none shared)"
    return [
        "other for the 2nd language" if spec["domain"] == "other" else "same",
        anchors,
        " + ".join(separate) or "all shared",
        "language-specific" if spec["separate_embeddings"] else "shared",
    ]


def cell_flags(scores: pd.DataFrame) -> dict[tuple, str]:
    """(setting, task, lang) -> the degenerate reasons of that cell's rows (the gather's: at chance by the row's
    interval, constant predictions, a fine-tuning that did not learn the pivot), joined; cells without any left out."""
    if "flag" not in scores:
        return {}
    found: dict[tuple, list[str]] = {}
    for row in scores.to_dict("records"):
        if isinstance(row["flag"], str) and row["flag"]:
            found.setdefault((row["setting"], row["task"], row["lang"]), []).append(row["flag"])
    return {cell: "; ".join(dict.fromkeys(reasons)) for cell, reasons in found.items()}


def table1(scores: pd.DataFrame, where: str) -> tuple[list, list[list], list[str]]:
    """Our Table 1: a row per setting, per task a column per target language (mean ± sd over seeds) and the
    change of the task's mean over those languages against default (Δ)."""
    check_cells(scores, KEYS, where, free=POINT_COLUMNS)  # each seed's search may pick other grid points
    stats = seed_stats(scores, KEYS, where, free=POINT_COLUMNS)
    tasks = [t for t in TASKS if (stats["task"] == t).any()]
    langs = {t: sorted(stats[stats["task"] == t]["lang"].unique()) for t in tasks}
    means = stats.groupby(["setting", "task"])["mean"].mean()
    settings = sorted(stats["setting"].unique(), key=setting_order)
    cell = {(r["setting"], r["task"], r["lang"]): r for r in stats.to_dict("records")}
    flagged = cell_flags(scores)
    columns = ["setting", "domain", "vocabulary", "language-specific", "softmax"]
    for t in tasks:
        columns += [{"text": lang, "sub": f"{TASK_LABEL[t]} {TASK_METRIC[t]}"} for lang in langs[t]]
        columns.append({"text": "\u0394", "sub": TASK_LABEL[t]})
    rows = []
    for setting in settings:
        line = [setting, *describe(setting)]
        for t in tasks:
            for lang in langs[t]:
                r = cell.get((setting, t, lang))
                shown = fmt_score(r["mean"], r["sd"], r["n_seeds"]) if r else DASH
                line.append(flagged_cell(shown, flagged.get((setting, t, lang))) if r else shown)
            if (setting, t) in means and ("default", t) in means:
                line.append(f"{means[setting, t] - means['default', t]:+.{SCORE_DIGITS}f}")
            else:
                line.append(DASH)
        rows.append(line)
    return columns, rows, tasks


def _points_note(scores: pd.DataFrame) -> str:
    """How many grid points (ablation.finetune) each number averages: the paper's best two on English dev."""
    if "points" not in scores:
        return ""
    counts = sorted(scores["points"].str.count(", ").add(1).unique())
    return (
        f"Each seed's score is the mean over the {' or '.join(map(str, counts))} point(s) of the task's "
        "fine-tuning grid (the ablation's fine-tuning settings) with the best pivot dev score of their selected "
        'epoch (the paper: "the average of best two set of hyperparameters").'
    )


def published_table1(entries: list[dict]) -> tuple[list, list[list]]:
    """The paper's Table 1 from its entries in paper_results.yaml (one per setting and task)."""
    by_setting: dict[str, dict] = {}
    for entry in entries:
        setting, task = entry["in_source"]["setting"], entry["settings"]["task"]
        row = by_setting.setdefault(setting, {"in_source": entry["in_source"]})
        row[task] = {r["lang"]: r["value"] for r in entry["rows"]}
    tasks = [t for t in TASKS if any(t in row for row in by_setting.values())]
    langs = {t: [lang for lang in next(r[t] for r in by_setting.values() if t in r) if lang != "delta"] for t in tasks}
    # the paper's five setting columns in one cell, so the table fits the page beside its 12 numbers
    columns = ["paper's row", "ours", "domain; BPE; anchors; separate; softmax"]
    for t in tasks:
        columns += [{"text": lang, "sub": f"{TASK_LABEL[t]} {TASK_METRIC[t]}"} for lang in langs[t]]
        columns.append({"text": "\u0394", "sub": TASK_LABEL[t]})
    rows = []
    for setting, row in by_setting.items():
        ours = setting.replace("_l1_", "-l").replace("_", "-")
        try:
            parse_setting(ours)
        except ValueError:
            ours = DASH  # 40k/40k BPE merged with its anchors: no setting of ours
        source = row["in_source"]
        line = [setting, ours, "; ".join(str(source[k]) for k in ("domain", "bpe", "anchors", "separate", "softmax"))]
        for t in tasks:
            values = row.get(t, {})
            line += [f"{values[lang]:.{DIGITS}f}" if lang in values else DASH for lang in langs[t]]
            line.append(f"{values['delta']:+.{DIGITS}f}" if "delta" in values else DASH)
        rows.append(line)
    return columns, rows


@register_section(
    "emerging_table1",
    "Ablations of a bilingual MLM (Conneau et al. 2020, Table 1)",
    required=(TABLE,),
    results={TABLE: ("value", "n", "best_epoch")},
)
def render_table1(ctx: ReportContext) -> list[Block]:
    where, df = ctx.table_paths[TABLE], ctx.tables[TABLE]
    require_columns(df, REQUIRED, where)
    scores = ablation_scores(df, ctx.pivot)
    if scores.empty:
        raise ValueError(f"{where}: no zero-shot test scores of any ablation")
    columns, rows, tasks = table1(scores, where)
    pairs = sorted(scores["pair"].unique())
    n_seeds = sorted(scores.groupby(KEYS)["seed"].nunique().unique())
    freeze = ", ".join(str(f) for f in sorted(df["freeze"].unique())) if "freeze" in df else DASH
    blocks = [
        text(
            "A bilingual masked LM of the pivot with each pair's other language ("
            + ", ".join(pairs)
            + ") per setting, all trained by the one BERT trainer on the same token files in batches "
            "of one language (drawn by its share raised to the sampling exponent, both in the settings): default "
            "shares everything; "
            "wiki-cc gives the second language text from another domain; no-anchors prefixes every piece with its "
            "language, so no id is shared (the paper merges two 40k BPE vocabularies; ours is the run's joint "
            "vocabulary split by language, so the segmentation stays the default's); extra-anchors code-switches "
            "dictionary words; sep-emb gives each language its own embeddings and MLM head, sep-l<k> its own layers "
            "1..k. Each is fine-tuned on English with its language-specific parameters frozen and tested zero-shot "
            "on the other language's view (its own embeddings and layers, the shared ones fine-tuned).",
            f"Test scores in percent ({', '.join(f'{TASK_LABEL[t]} {TASK_METRIC[t]}' for t in tasks)}), mean "
            f"{'± sd ' if n_seeds != [1] else ''}over {', '.join(map(str, n_seeds))} fine-tuning seed(s); "
            "\u0394 = the task's mean over the target languages minus default's, as the paper's \u0394 (the "
            f"change of the average over fr, ru and zh). Frozen encoder layers while fine-tuning: {freeze} (plus "
            "each model's language-specific ones). " + _points_note(scores),
        )
    ]
    # a flagged cell carries the page's label, its reason lettered under the table (xling.report.flags)
    note = (
        (
            "\u2020: a separated model at chance is the paper's finding for some settings; a default at chance "
            "makes the row's \u0394 carry no signal."
        )
        if cell_flags(scores)
        else ""
    )
    blocks.append(
        table_block("Table 1 (ours)", columns, rows, note=note, numeric=range(5, len(columns)), wrap=(1, 2, 3))
    )
    entries = (ctx.published or {}).get(TABLE) or []
    if entries:
        published_columns, published_rows = published_table1(entries)
        blocks.append(
            table_block(
                f"Published: {entries[0]['source']}, {entries[0]['id']}",
                published_columns,
                published_rows,
                numeric=range(3, len(published_columns)),
                wrap=(2,),
                collapsed=True,
                note="Bilingual MLMs of 8 layers (hidden 768, 12 heads, streams of 256 tokens) on Wikipedia for en-fr, "
                "en-ru, en-zh; XNLI accuracy, NER span F1 (WikiAnn; zh: Levow 2006), parsing LAS (UD v2.3). The "
                "languages differ from ours, so the numbers stand beside ours for the pattern of \u0394, not "
                f"as a comparison. From {shown_path(ctx.published_path)}.",
            )
        )
    return blocks
