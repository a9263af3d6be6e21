"""XNLI's classifier input (transfer.xnli.pooling): [CLS] as the papers, or the mean of the pair's vectors, and the
case it is for: the synthetic study's window-128 BERT, whose English-trained [CLS] classifier answers one class
outside English, transfers with mean pooling (docs/transfer.md)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from scipy.stats import binomtest

from plan_configs import make_plan, wildcards
from xling.data.synthetic.language import build, realize, surface
from xling.data.synthetic.write import xnli_pairs
from xling.evaluate import transfer
from xling.tune import finetune as ft
from xling.tune.heads import Backbone, PairClassifier, build_model, load_bert

FIXTURE = Path(__file__).parent / "data" / "xnli_collapse"

pytestmark = pytest.mark.usefixtures("torch_one_thread")


class _States(torch.nn.Module):
    """An encoder whose states are given: position p of row b holds `states[b, p]`."""

    hidden_size = 2

    def __init__(self, states):
        super().__init__()
        self.states = states

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        return self.states


def _classifier(pooling: str, states: torch.Tensor) -> PairClassifier:
    model = PairClassifier(_States(states), 2, 0.0, pooling)
    with torch.no_grad():  # logits = the pooled vector itself
        model.out.weight.copy_(torch.eye(2))
        model.out.bias.zero_()
    return model.eval()


def test_cls_reads_the_first_position_and_mean_the_non_pad_positions_by_hand():
    states = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[0.0, 0.0], [2.0, 2.0], [4.0, -2.0]]])
    batch = {"input_ids": torch.zeros(2, 3, dtype=torch.long), "attention_mask": torch.tensor([[1, 1, 0], [1, 1, 1]])}
    assert _classifier("cls", states).logits(batch).tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert _classifier("mean", states).logits(batch).tolist() == [[2.0, 3.0], [2.0, 0.0]]  # the pad row left out


def test_an_unknown_pooling_is_refused_and_a_record_without_it_is_cls():
    encoder = _States(torch.zeros(1, 1, 2))
    with pytest.raises(ValueError, match="pooling must be one of cls, mean, got 'max'"):
        PairClassifier(encoder, 3, 0.1, "max")
    backbone = Backbone("bert", encoder, None, {})
    assert build_model("xnli", backbone, 3, {"dropout": 0.1}).pooling == "cls"
    assert build_model("xnli", backbone, 3, {"dropout": 0.1, "pooling": "mean"}).pooling == "mean"


def test_the_setting_reaches_xnli_fine_tunings_only():
    plan = make_plan(transfer={"xnli": {"pooling": "mean"}, "tasks": ["xnli", "pos"]}, language={"sizes": [200]})
    params = plan.transfer_params(wildcards(task="xnli", lm="bert/200-w5", variant="f0", seed="1"))
    assert params["settings"]["pooling"] == "mean"
    assert (
        "pooling"
        not in plan.transfer_params(wildcards(task="pos", lm="bert/200-w5", variant="f0", seed="1"))["settings"]
    )
    static = plan.transfer_params(wildcards(task="xnli", lm="glove/200-w5", variant="static", seed="1"))
    assert "pooling" not in static["settings"], "InferSent pools its own way: the setting reruns no static model"
    cao = plan.cao_settings
    assert cao["pooling"] == "mean", "Cao et al.'s fine-tunings pool as the grid's"
    assert make_plan().finetune_settings["xnli"]["pooling"] == "cls", "the papers' [CLS] is the default"


# ------------------------------------------------------------------------------- the case that collapsed


def _synthetic_xnli(split: str, n: int) -> dict[str, list[tuple[str, str, str]]]:
    """The study preset's synthetic XNLI (the spec the fixture BERT was pretrained with), {lang: examples}."""
    spec = json.loads((FIXTURE / "synthetic.json").read_text())
    cfg, world, langs = build({**spec["synthetic"], "xnli_pairs": {split: n}}, spec["languages"])
    pairs = xnli_pairs(cfg, world, split, n)
    neg = world.fid["NOT"]
    return {
        code: [
            (" ".join(surface(lang, realize(lang, p, neg))), " ".join(surface(lang, realize(lang, h, neg))), label)
            for p, h, label in pairs
        ]
        for code, lang in langs.items()
    }


@pytest.fixture(scope="module")
def study_xnli():
    data = {split: _synthetic_xnli(split, n) for split, n in (("train", 12000), ("dev", 300), ("test", 300))}
    text = "".join("\t".join(example) + "\n" for example in data["dev"]["xa"])
    recorded = json.loads((FIXTURE / "synthetic.json").read_text())["dev_xa_sha256"]
    assert hashlib.sha256(text.encode()).hexdigest() == recorded, (
        "the synthetic generator no longer writes the study run's dev-xa.tsv the fixture BERT was pretrained "
        "beside: regenerate tests/data/xnli_collapse from a presets/study.yaml run"
    )
    return data


def _finetune_and_test(tmp_path: Path, data: dict, pooling: str, n_train: int):
    """Fine-tune the fixture BERT on the first n_train English pairs as a transfer job does and score every
    language's test pairs with the pipeline's scoring: the accuracy rows (value, flag) by language."""
    settings = {
        "epochs": 2,
        "batch_size": 32,
        "learning_rate": 5e-4,
        "warmup": 0.1,
        "weight_decay": 0.01,
        "dropout": 0.1,
        "max_length": 64,
        "max_train": None,
        "pooling": pooling,
    }
    ft.finetune(
        "xnli",
        load_bert(FIXTURE),
        data["train"]["en"][:n_train],
        {"en": data["dev"]["en"]},
        tmp_path / "model",
        tmp_path / "ckpt",
        settings,
        ft.FinetuneRun(seed=1, checkpoint_every=10_000),
        score=transfer.score,
    )
    table = transfer.evaluate(
        tmp_path / "model",
        {lang: {"dev": data["dev"][lang], "test": data["test"][lang]} for lang in data["test"]},
        transfer.TransferTest(pivot="en", layer=2, alphas=[1.0], positions="all", mds=False, batch_size=64),
    )
    rows = table[(table["split"] == "test") & (table["metric"] == "accuracy")]
    return {row.lang: (row.value, row.flag if isinstance(row.flag, str) else None) for row in rows.itertuples()}


@pytest.mark.slow
def test_the_study_bert_collapses_on_cls_and_transfers_with_mean_pooling(study_xnli, tmp_path):
    before = _finetune_and_test(tmp_path / "cls", study_xnli, "cls", 3000)  # the study's recipe before the fix
    assert before["en"][0] > 50, "English is learned"
    assert any("constant predictions" in (flag or "") for lang, (_, flag) in before.items() if lang != "en"), (
        f"one class in some other language, the collapse: {before}"
    )

    after = _finetune_and_test(tmp_path / "mean", study_xnli, "mean", 12000)
    n = len(study_xnli["test"]["en"])
    for lang, (accuracy, flag) in after.items():
        assert binomtest(round(accuracy * n / 100), n, 1 / 3, alternative="greater").pvalue < 0.001, (
            f"{lang}: {accuracy:.1f} % is not above chance"
        )
        assert flag is None, f"{lang}: {flag}"
