"""The synthetic analogue of Liu et al. (short, §5.2)'s low-resource parsing languages
(transfer.parsing.low_resource.synthetic): test-only synthetic languages without pretraining text, whose treebank
has train and test splits and no dev split; planned like the real six, their rows judged by liu2020_short.parsing.mds.
"""

import itertools
from pathlib import Path

import pandas as pd
import pytest
import yaml

from plan_configs import HELPERS, REPO, SCHEMA, make_config, merged, wildcards
from xling.data import synthetic
from xling.data.formats import read_conllu
from xling.evaluate.findings import FAILS, HOLDS, NOT_MEASURED, judge_claims
from xling.plan.data import SYNTHETIC_LOW_RESOURCE, SyntheticData, synthetic_low_resource
from xling.plan.study import Plan
from synthetic_specs import small_spec

SPEC = small_spec(
    seed=5,
    sentences=300,
    concepts=100,
    topics=5,
    dictionary=(0, 40, 80),
    parallel_sentences=10,
    ud_sentences={"train": 30, "dev": 10, "test": 40},
    languages={"xa": {"script": "cyrillic", "anchors": 0.3}},
)
LANGS = ["en", "xa"]
LOW = {"xd": {"script": "cyrillic", "anchors": 0.1, "order": "SOV"}, "xf": {"script": "latin", "anchors": 0.05}}
SENTENCES = {"train": 12, "test": 25}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("low")
    synthetic.generate(SPEC, LANGS, root)
    synthetic.low_resource_treebanks(SPEC, LANGS, LOW, SENTENCES, root)
    return root


def test_train_and_test_only_the_run_languages_sentences_in_their_own_words(written):
    """No dev split; each split the first sentences of the run languages' split of that name (the same trees as
    English's where the word order is English's), in a lexicon of the language's own."""
    ud = written / "ud"
    assert sorted(p.name for p in ud.glob("x[df].*")) == [
        "xd.test.conllu",
        "xd.train.conllu",
        "xf.test.conllu",
        "xf.train.conllu",
    ]
    for split, n in SENTENCES.items():
        english = read_conllu(ud / f"en.{split}.conllu")[:n]
        for lang in LOW:
            sentences = read_conllu(ud / f"{lang}.{split}.conllu")
            assert len(sentences) == n
            assert [len(s) for s in sentences] == [len(s) for s in english]
        same_order = read_conllu(ud / f"xf.{split}.conllu")
        assert [[(t["upos"], t["head"], t["deprel"]) for t in s] for s in same_order] == [
            [(t["upos"], t["head"], t["deprel"]) for t in s] for s in english
        ]
    words = {lang: {t["form"] for s in read_conllu(ud / f"{lang}.test.conllu") for t in s} for lang in ("en", "xf")}
    assert 0 < len(words["en"] & words["xf"]) < len(words["xf"]) / 2, "the anchors shared, the rest its own"


def test_the_run_languages_files_do_not_depend_on_them(written, tmp_path):
    synthetic.generate(SPEC, LANGS, tmp_path)
    for path in sorted(tmp_path.rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (written / path.relative_to(tmp_path)).read_bytes(), path


def test_same_seed_same_bytes(written, tmp_path):
    synthetic.low_resource_treebanks(SPEC, LANGS, LOW, SENTENCES, tmp_path)
    for path in sorted((tmp_path / "ud").iterdir()):
        assert path.read_bytes() == (written / "ud" / path.name).read_bytes()


@pytest.mark.parametrize(
    "low, sentences, message",
    [
        ({"xa": {}}, SENTENCES, r"synthetic\.languages: xa also in `languages`"),
        (LOW, {"train": 5, "dev": 5, "test": 5}, r"synthetic\.sentences: expected train and test \(no dev split\)"),
        ({"xd": {"script": "greek"}}, SENTENCES, r"synthetic\.languages\.xd\.script: greek is the script of no run "),
        ({"xd": {"order": "XYZ"}}, SENTENCES, r"low_resource\.synthetic: synthetic\.languages\.xd\.order"),
    ],
)
def test_bad_settings_name_the_key(low, sentences, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        synthetic.low_resource_treebanks(SPEC, LANGS, low, sentences, tmp_path)


def demo_plan(**overrides):
    """The demo's plan without the preset's own three low-resource languages (these tests plant theirs), with
    `overrides`."""
    config = yaml.safe_load((REPO / "presets" / "demo.yaml").read_text(encoding="utf-8"))
    config["transfer"]["parsing"].pop("low_resource", None)
    config = make_config(**merged(config, overrides))
    return Plan(config, SyntheticData.from_config(config), SCHEMA, HELPERS)


KNOBS = {"xd": {"script": "cyrillic", "anchors": 0.2, "order": "SOV"}, "xe": {"script": "greek", "anchors": 0.1}}
SYNTHETIC_LOW = {"transfer": {"parsing": {"low_resource": {"synthetic": {"languages": KNOBS}}}}}


def test_the_demo_plans_them_as_the_real_low_resource_treebanks():
    """Parsing of the language experiments' BERT is also tested on them, test split only, their mean from their own
    train split, MDS's alpha by the rule; POS and the epoch selection never read them; by default there are none."""
    plan = demo_plan(**SYNTHETIC_LOW)
    assert plan.source.low_resource == {"xd": [SYNTHETIC_LOW_RESOURCE], "xe": [SYNTHETIC_LOW_RESOURCE]}
    assert plan.transfer_langs("parsing") == ["en", "xa", "xb", "xc", "xd", "xe"]
    assert plan.transfer_langs("pos") == ["en", "xa", "xb", "xc"]
    assert plan.task_splits("parsing", "xd") == ["test"]
    run = wildcards(task="parsing", lm="bert/12000-w128", variant="f1", seed="1")
    assert not {"xd", "xe"} & set(plan.selection_langs("parsing", run.lm, run.variant)), "no dev: never selects"
    inputs = plan.finetune_inputs(run)
    assert inputs["data"][-2:] == ["results/demo/data/ud/xd.test.conllu", "results/demo/data/ud/xe.test.conllu"]
    assert inputs["corpora"][-2:] == ["results/demo/data/ud/xd.train.conllu", "results/demo/data/ud/xe.train.conllu"]
    params = plan.transfer_eval_params(run)
    assert params["low_resource"] == dict(langs=["xd", "xe"], mean_text="treebank train split", alpha="dev_languages")
    assert plan.transfer_params(run) == demo_plan().transfer_params(run), "the weights do not depend on them"
    assert demo_plan().transfer_langs("parsing") == ["en", "xa", "xb", "xc"], "none by default"
    assert demo_plan().source.low_resource == {}


def test_none_without_parsing_and_never_a_run_language():
    plan = demo_plan(**SYNTHETIC_LOW)
    assert synthetic_low_resource({**plan.config, "transfer": {**plan.config["transfer"], "tasks": ["xnli"]}}) == {}
    with pytest.raises(ValueError, match="xa also in `languages`"):
        synthetic_low_resource(
            {
                **plan.config,
                "transfer": {
                    **plan.config["transfer"],
                    "parsing": {
                        **plan.config["transfer"]["parsing"],
                        "low_resource": {"synthetic": {"languages": {"xa": {}}}},
                    },
                },
            }
        )
    assert SyntheticData.from_config(plan.config).ud_splits("xa") == ["train", "dev", "test"]


def _parsing_rows(plan, mds_gain: float) -> pd.DataFrame:
    """Parsing rows as the planned fine-tuning writes them: every tested language with and without MDS, its rows
    marked low_resource where the plan lists it as such; the low-resource ones gain `mds_gain` LAS from MDS; three
    seeds spread by +-0.4 (the findings' interval over seeds)."""
    low = plan.low_resource_langs("parsing")
    rows = []
    for (seed, spread), lang in itertools.product(((1, 0.0), (2, 0.4), (3, -0.4)), plan.transfer_langs("parsing")):
        for split in plan.task_splits("parsing", lang):
            for transform in ("none", "mds") if lang != "en" else ("none",):
                gain = (mds_gain if lang in low else 1.0) if transform == "mds" else 0.0
                rows.append(
                    dict(
                        task="parsing",
                        model="bert",
                        size=12000,
                        window=128,
                        freeze=1,
                        lang=lang,
                        split=split,
                        train_transform="none",
                        transform=transform,
                        selected=True,
                        alpha=1.0 if transform == "mds" else float("nan"),
                        metric="las",
                        seed=seed,
                        n=3000,
                        value=40.0 + gain + spread,
                        flag=None,
                        low_resource=lang in low,
                    )
                )
    return pd.DataFrame(rows)


def _outcome(rows: pd.DataFrame) -> str:
    return (
        judge_claims({"transfer": rows}, "en", resamples=200)
        .set_index("id")
        .loc["liu2020_short.parsing.mds", "outcome"]
    )


def test_the_claim_is_judged_on_the_synthetic_low_resource_rows():
    """Planted LAS: MDS lifts the test-only languages by 5 points -> holds; lowers them -> does not hold; the demo
    without them: not measured."""
    plan = demo_plan(**SYNTHETIC_LOW)
    assert _outcome(_parsing_rows(plan, 5.0)) == HOLDS
    assert _outcome(_parsing_rows(plan, -5.0)) == FAILS
    assert _outcome(_parsing_rows(demo_plan(), 5.0)) == NOT_MEASURED
