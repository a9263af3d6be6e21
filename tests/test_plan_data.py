"""The plan's data layout, data sources and model ids (xling.plan): plain values in, paths and lists out."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from xling.plan.data import Layout, RealData, SyntheticData
from xling.plan.models import ANY_LM, BERT_LM, aligned_base, grid_id, hf_slug, parse_grid

LAYOUT = Layout("results/x/data", "en")
REAL = RealData(
    datasets={"muse": ["de"], "tatoeba": ["de", "sw"], "bucc": ["de"], "xnli": ["en", "de", "sw"], "wikiann": ["en"]},
    parallel={"de": "europarl", "sw": "tanzil"},
    treebanks={"en": ["EWT"], "de": ["GSD"], "th": ["PUD"]},
    splits={"th": ["test"]},
)


def test_layout_paths_of_each_dataset():
    assert LAYOUT.file("dictionary", lang="de", split="test") == "results/x/data/dict/en-de.test.txt"
    assert LAYOUT.task_file("xnli", "de", "dev") == "results/x/data/xnli/dev-de.tsv"
    assert (
        LAYOUT.task_file("pos", "de", "dev")
        == LAYOUT.task_file("parsing", "de", "dev")
        == "results/x/data/ud/de.dev.conllu"
    )
    assert LAYOUT.task_file("ner", "de", "test") == "results/x/data/wikiann/de.test.tsv"
    assert LAYOUT.word_pairs("de", "train100") == [
        f"results/x/data/align/en-de/train100.{ext}" for ext in ("en", "de", "align")
    ]
    assert (
        LAYOUT.file("bucc", lang="{lang}", split="{bucc_split}", ext="gold")
        == "results/x/data/bucc/{lang}-en.{bucc_split}.gold"
    )
    assert LAYOUT.file("mbert_vocab") == "results/x/data/vocab/mbert-cased.txt"


def test_synthetic_layout_has_every_file_once():
    files = LAYOUT.synthetic(["en", "de", "xa"])
    assert len(files) == len(set(files))
    per_language = 1 + 3 + 2 + 3  # corpus, treebank splits, XNLI dev and test, WikiANN splits
    per_target = 3 + 3 + 2 + 6  # dictionary splits, parallel text and links, Tatoeba, BUCC
    assert len(files) == 1 + 3 * per_language + 2 * per_target
    assert LAYOUT.file("parallel", lang="xa", ext="align") in files
    assert LAYOUT.file("dictionary", lang="en", split="test") not in files, "the pivot has no dictionary with itself"


def test_synthetic_data_has_everything():
    data = SyntheticData(parallel_sentences=1000)
    assert data.available("muse", ["de", "sw"]) == ["de", "sw"]
    assert data.task_languages("pos", ["en", "sw"]) == ["en", "sw"]
    assert data.task_splits("parsing", "sw") == ["dev", "test"]
    assert data.gold_links and data.other_domain and data.config_keys == ("synthetic",)
    assert data.treebank_name("en") == "synthetic gold"


def test_real_data_has_what_its_sources_list():
    assert REAL.available("muse", ["sw", "de"]) == ["de"]
    assert REAL.available("parallel", ["sw", "de", "ur"]) == ["sw", "de"]
    assert REAL.available("unknown", ["de"]) == []
    assert REAL.task_languages("pos", ["en", "de", "sw", "th"]) == ["en", "de", "th"], "a treebank with a test split"
    assert REAL.task_languages("ner", ["en", "de"]) == ["en"]
    assert REAL.task_splits("pos", "th") == ["test"], "PUD: test only"
    assert REAL.task_splits("xnli", "th") == ["dev", "test"]
    assert REAL.treebank_name("de") == "GSD" and REAL.treebank_name("sw") == ""
    assert not REAL.gold_links and not REAL.other_domain and REAL.config_keys == () and REAL.parallel_sentences is None


@pytest.mark.parametrize(
    "named, expected",
    [
        (["de", "fr", "ru", "zh"], {"synthetic": ["xa", "xb"], "real": []}),  # the schema's default list
        (["xb"], {"synthetic": ["xb"], "real": ["xb"]}),
        ([], {"synthetic": [], "real": []}),
    ],
)
def test_bucc_languages_named(named, expected):
    default, targets = ["de", "fr", "ru", "zh"], ["xa", "xb"]
    assert SyntheticData().bucc_named(named, default, targets) == expected["synthetic"]
    assert REAL.bucc_named(named, default, targets) == expected["real"]


@pytest.mark.parametrize(
    "lm, bert",
    [
        ("bert/1000-w128", True),
        ("hf/bert-base-multilingual-cased", True),
        ("aligned/250/bert/1000-w128", True),
        ("aligned/10/hf/x", True),
        ("ablation/sep-l2/en-de", True),
        ("glove/1000-w8", False),
        ("word2vec/10-w2", False),
        ("mono/en/1000-w8", None),
        ("aligned/10/glove/1-w1", None),
        ("bert/1000", None),
    ],
)
def test_model_id_grammar(lm, bert):
    """bert: a BERT's id; False: another model's; None: no model id."""
    assert bool(re.fullmatch(BERT_LM, lm)) == bool(bert)
    assert bool(re.fullmatch(ANY_LM, lm)) == (bert is not None)


def test_model_id_parts():
    assert aligned_base("aligned/250/hf/x") == (250, "hf/x") and aligned_base("bert/1-w2") is None
    assert parse_grid("1000-w128") == (1000, 128) and grid_id("glove", 1000, 8) == "glove/1000-w8"
    assert hf_slug("google/bert base") == "google--bert_base"


def test_the_plan_imports_no_heavy_package():
    """Parsing the workflow imports the plan: never torch, pandas, pyarrow or matplotlib."""
    code = (
        "import sys, xling.plan.code, xling.plan.data, xling.plan.models, xling.plan.accept_code; "
        "print(sorted(m for m in ('torch', 'pandas', 'pyarrow', 'matplotlib', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_report_config_carries_a_real_source_s_stand_ins_and_nothing_otherwise():
    from plan_configs import make_plan

    stand_in = RealData(datasets={}, parallel={}, treebanks={}, stand_ins={"xnli": "dev sets cut in three"})
    assert make_plan(source=stand_in).report_config()["stand_ins"] == {"xnli": "dev sets cut in three"}
    assert "stand_ins" not in make_plan().report_config()  # the synthetic runs' report params are unchanged
