"""Results of the Conneau et al. (2020, Table 1) ablations (xling.models.ablation trains them): their rows of a
transfer table. Kept out of the training modules, so an edit here retrains no model."""

from __future__ import annotations

import pandas as pd

from xling.data.transfer_tasks import TASK_METRIC


def ablation_scores(table: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """Zero-shot test rows of the ablations (model ids ablation/{setting}/{pair}) of a transfer table, in each
    pair's other language and the task's Table 1 metric, with their setting and pair as columns."""
    rows = table[(table["split"] == "test") & (table["lang"] != pivot) & (table["transform"] == "none")
                 & table["selected"].astype(bool) & (table["metric"] == table["task"].map(TASK_METRIC))]
    parts = rows["lm"].str.split("/")
    return rows.assign(setting=parts.str[1], pair=parts.str[2])
