"""Results of the Conneau et al. (2020, Table 1) ablations (xling.models.ablation trains them): their rows of a
transfer table. Kept out of the training modules, so an edit here retrains no model.

Each ablation is fine-tuned once per point of its task's grid (ablation.finetune, variants
f{k}-b{batch}-lr{rate}[-clr{rate}]); the paper reports "the result on average of best two set of
hyperparameters", chosen with the English dev set (§3.2): per model, task and seed, the BEST_POINTS points with
the highest pivot dev score of their selected epoch, and each language's test score the mean over them.
"""

from __future__ import annotations

import pandas as pd

from xling.data.transfer_tasks import TASK_METRIC

BEST_POINTS = 2  # Conneau et al. §3.2: the mean of the best two settings of the search
RUN = ["lm", "task", "seed"]  # one search: a model's fine-tunings of a task with one seed
#: the columns in which one search's best points may differ from another seed's (not settings of the cell)
POINT_COLUMNS = ("variant", "points", "finetune_settings")


def ablation_scores(table: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Zero-shot test rows of the ablations (model ids ablation/{setting}/{pair}) of a transfer table, in each
    pair's other language and the task's Table 1 metric, with their setting and pair as columns; with grid
    points (a `variant` column), one row per language: the mean over the best points (`best_points`), which the
    `points` column names."""
    task_metric = table["metric"] == table["task"].map(TASK_METRIC)
    rows = table[
        (table["split"] == "test")
        & (table["lang"] != pivot)
        & (table["transform"] == "none")
        & table["selected"].astype(bool)
        & task_metric
    ]
    if "variant" in table and len(rows):
        rows = best_points(
            rows,
            table[(table["split"] == "dev") & (table["lang"] == pivot) & (table["transform"] == "none") & task_metric],
        )
    parts = rows["lm"].str.split("/")
    return rows.assign(setting=parts.str[1], pair=parts.str[2])


def best_points(test: pd.DataFrame, pivot_dev: pd.DataFrame, best: int = BEST_POINTS) -> pd.DataFrame:
    """Per search (RUN), the test rows averaged over the `best` variants of the highest pivot dev score (ties:
    the variant named first); `value` the mean, `flag` the points' flags joined, the other columns the best
    point's, `points` the variants averaged."""
    dev = pivot_dev.groupby([*RUN, "variant"], as_index=False)["value"].mean()
    dev = dev.sort_values([*RUN, "value", "variant"], ascending=[True] * len(RUN) + [False, True])
    chosen = dev.groupby(RUN).head(best)
    chosen = chosen.assign(rank=chosen.groupby(RUN).cumcount())[[*RUN, "variant", "rank"]]
    rows = test.merge(chosen, on=[*RUN, "variant"]).sort_values([*RUN, "lang", "rank"])
    keys = [*RUN, "lang", "metric"]
    grouped = rows.groupby(keys, sort=False)
    out = grouped.first().reset_index()
    out["value"] = grouped["value"].mean().to_numpy()
    out["points"] = grouped["variant"].agg(", ".join).to_numpy()
    if "flag" in rows:
        out["flag"] = (
            grouped["flag"]
            .agg(lambda flags: "; ".join(dict.fromkeys(f for f in flags if isinstance(f, str))) or None)
            .to_numpy()
        )
    return out.drop(columns="rank")
