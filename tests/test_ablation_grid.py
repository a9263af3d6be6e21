"""Conneau et al.'s fine-tuning search for the ablations (§3.2): a classifier learning rate beside the encoder's
and a fixed rate in the one fine-tuning loop (xling.tune.finetune), and Table 1's number, the mean test score of
the two grid points with the best English dev score (xling.evaluate.ablation), by hand."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from xling.evaluate.ablation import ablation_scores, best_points
from xling.tune.finetune import linear_schedule, optimizer_for


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3))
        self.out = nn.Linear(3, 2)


def test_the_head_trains_at_the_classifier_rate_the_encoder_at_its_own():
    model = Toy()
    groups = optimizer_for(model, 1e-6, 0.01, classifier_learning_rate=1e-4).param_groups
    by_params = {id(p): (g["lr"], g["weight_decay"]) for g in groups for p in g["params"]}
    assert by_params[id(model.encoder[0].weight)] == (1e-6, 0.01)
    assert by_params[id(model.encoder[1].weight)] == (1e-6, 0.0)  # LayerNorm: no decay
    assert by_params[id(model.out.weight)] == (1e-4, 0.01) and by_params[id(model.out.bias)] == (1e-4, 0.0)
    plain = optimizer_for(model, 1e-6, 0.01).param_groups
    assert [(g["lr"], g["weight_decay"], len(g["params"])) for g in plain] == [(1e-6, 0.01, 2), (1e-6, 0.0, 4)]


@pytest.mark.parametrize(
    "schedule, factors", [("linear", [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]), ("constant", [0.5, 1.0, 1.0, 1.0, 1.0, 1.0])]
)
def test_warm_up_then_linear_decay_or_a_fixed_rate(schedule, factors):
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = linear_schedule(optimizer, 2, 6, schedule)
    seen = []
    for _ in range(6):
        seen.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx(factors)
    with pytest.raises(ValueError, match="schedule"):
        linear_schedule(optimizer, 2, 6, "cosine")


def rows(variant: str, seed: int, en_dev: float, fr_test: float, flag=None) -> list[dict]:
    base = dict(
        lm="ablation/default/en-fr",
        task="xnli",
        variant=variant,
        seed=seed,
        transform="none",
        selected=True,
        metric="accuracy",
        n=100,
    )
    return [
        {**base, "lang": "en", "split": "dev", "value": en_dev, "flag": None},
        {**base, "lang": "fr", "split": "test", "value": fr_test, "flag": flag},
        {**base, "lang": "fr", "split": "dev", "value": 99.0, "flag": None},
    ]  # fr dev never chooses


def test_table1_is_the_mean_of_the_two_points_best_on_english_dev():
    table = pd.DataFrame(
        rows("f0-b4-lr1e-06", 1, 70.0, 40.0)
        + rows("f0-b8-lr1e-06", 1, 72.0, 50.0, "one class")
        + rows("f0-b4-lr2e-06", 1, 71.0, 60.0)
        + rows("f0-b8-lr2e-06", 1, 71.0, 80.0)
        + rows("f0-b4-lr1e-06", 2, 60.0, 30.0)
        + rows("f0-b8-lr1e-06", 2, 50.0, 20.0)
    )
    scores = ablation_scores(table, "en").set_index("seed")
    # seed 1: b8-lr1e-06 (72) and, of the two at 71, b4-lr2e-06 (named first); seed 2: both its points
    assert scores.loc[1, "value"] == pytest.approx((50.0 + 60.0) / 2)
    assert scores.loc[1, "points"] == "f0-b8-lr1e-06, f0-b4-lr2e-06" and scores.loc[1, "flag"] == "one class"
    assert scores.loc[2, "value"] == pytest.approx(25.0) and pd.isna(scores.loc[2, "flag"])
    assert set(scores["setting"]) == {"default"} and set(scores["lang"]) == {"fr"}
    one = best_points(
        table[(table["split"] == "test")], table[(table["split"] == "dev") & (table["lang"] == "en")], best=1
    )
    assert one.set_index("seed")["value"].to_dict() == {1: 50.0, 2: 30.0}
    # a table without grid points (no variant column): every selected test row as it is
    legacy = ablation_scores(table[table["variant"] == "f0-b4-lr1e-06"].drop(columns="variant"), "en")
    assert sorted(legacy["value"]) == [30.0, 40.0]


def test_table1_averages_seeds_whose_searches_picked_other_points():
    """Each seed's best two may differ (and with them their settings): Table 1 still averages the seeds, and says
    how many points each number is the mean of."""
    from xling.report.emerging import _points_note, table1

    table = pd.DataFrame(
        rows("f0-b4-lr1e-06", 1, 70.0, 40.0)
        + rows("f0-b8-lr1e-06", 1, 72.0, 50.0)
        + rows("f0-b4-lr2e-06", 1, 71.0, 60.0)
        + rows("f0-b4-lr1e-06", 2, 60.0, 30.0)
        + rows("f0-b8-lr1e-06", 2, 50.0, 20.0)
        + rows("f0-b4-lr2e-06", 2, 40.0, 10.0)
    )
    table = table.assign(finetune_settings=table["variant"])
    scores = ablation_scores(table, "en")
    assert sorted(scores["points"]) == ["f0-b4-lr1e-06, f0-b8-lr1e-06", "f0-b8-lr1e-06, f0-b4-lr2e-06"]
    columns, lines, tasks = table1(scores, "t")
    assert tasks == ["xnli"] and lines[0][0] == "default"
    assert "40.00" in lines[0][5]  # the seeds' means 55 and 25 averaged
    assert "mean over the 2 point(s)" in _points_note(scores)
