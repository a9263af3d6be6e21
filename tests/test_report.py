"""Tests of the HTML report: self-contained, every figure embedded and saved, numbers shown with settings."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xling.report import core as report
from xling.report.core import expected_figures, fmt_num, load_training_logs, render_report

PAIRS = ["en-de", "en-fr", "en-ru"]
SIZES = [200000, 1000000]
WINDOWS = [512, 20]
BERT_LAYERS = [0, 1, 2]
PLANTED_MRR = 0.4321          # glove, 200k, window 512, en-fr, cosine -> must appear as "0.432"
PLANTED_CHANCE = 0.0123       # chance for every en-ru row -> "0.012"


def harmonic_chance(n: int) -> float:
    return sum(1.0 / k for k in range(1, n + 1)) / n


def word_retrieval_table(models=("glove", "word2vec", "bert"), metrics=("cosine", "csls")) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for model in models:
        for size in SIZES:
            for window in WINDOWS:
                for layer in (BERT_LAYERS if model == "bert" else [0]):
                    for metric in metrics:
                        for pair in PAIRS:
                            src, tgt = pair.split("-")
                            n_candidates = 400 + 10 * len(tgt)
                            chance = PLANTED_CHANCE if tgt == "ru" else harmonic_chance(n_candidates)
                            mrr = round(float(rng.uniform(0.05, 0.35)), 4)
                            if (model, size, window, pair, metric) == ("glove", 200000, 512, "en-fr", "cosine"):
                                mrr = PLANTED_MRR
                            rows.append(dict(
                                model=model, size=size, window=window, layer=layer, src=src, tgt=tgt, pair=pair,
                                mrr=mrr, p_at_1=mrr * 0.7, p_at_5=min(1.0, mrr * 1.4), coverage=0.9,
                                n_pairs=500, n_covered_pairs=450, n_queries=300, n_candidates=n_candidates,
                                chance_mrr=chance, metric=metric, dictionary_split="test", min_count=5, seed=0,
                                dim=768 if model == "bert" else 300, source="synthetic", vocab="trained",
                                csls_k=10, run="unit-test-run", hparams=json.dumps({"model": model, "epochs": 5})))
    return pd.DataFrame(rows)


def training_log_table() -> pd.DataFrame:
    rows = []
    for size in SIZES:
        for window in WINDOWS:
            for step in range(0, 300, 10):
                rows.append(dict(model="bert", size=size, window=window, step=step,
                                 loss=9.0 * math.exp(-step / 120) + 2 + 0.01 * window / 512,
                                 lr=1e-4 * min(1, step / 50), tokens_per_s=12000.0))
    return pd.DataFrame(rows)


def make_config(models=("glove", "word2vec", "bert"), **report_settings) -> dict:
    return {
        "run": "unit-test-run",
        "languages": ["en", "de", "fr", "ru"],
        "data": {"source": "synthetic"},
        "synthetic": {"seed": 3, "vocab_size": 1000},
        "corpus": {"sizes": SIZES, "normalization": "NFC", "seed": 0},
        "tokenizer": {"vocab": "train", "vocab_size": 8000, "min_frequency": 2, "lowercase": False},
        "models": list(models),
        "windows": WINDOWS,
        "glove": {"dim": 300, "epochs": 15, "learning_rate": 0.05},
        "word2vec": {"dim": 300, "epochs": 5, "sg": 1, "negative": 10},
        "bert": {"hidden_size": 768, "num_hidden_layers": 2, "learning_rate": 1e-4, "batch_size": 32},
        "retrieval": {"min_count": 5},
        "report": {"layer": 2, "metric": "cosine", "dictionary_split": "test", **report_settings},
    }


def render(tmp_path: Path, models=("glove", "word2vec", "bert"), paper_results=None, with_log=True, **kw):
    table = word_retrieval_table(models)
    tables = {"word_retrieval": tmp_path / "word_retrieval.parquet"}
    table.to_parquet(tables["word_retrieval"], index=False)
    if with_log and "bert" in models:
        tables["bert_training"] = tmp_path / "bert_training.parquet"
        training_log_table().to_parquet(tables["bert_training"], index=False)
    config = make_config(models, **kw)
    out = tmp_path / "report.html"
    saved = render_report(tables, config, out, tmp_path / "figures",
                          paper_results=paper_results if paper_results else tmp_path / "absent.yaml")
    return out.read_text(encoding="utf-8"), saved, config


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """The full example (3 models, 2 sizes, 2 windows, 3 pairs, BERT with 3 layers), rendered once."""
    tmp_path = tmp_path_factory.mktemp("full")
    html, saved, config = render(tmp_path)
    return html, saved, config, tmp_path


def rows_containing(html: str, needle: str) -> list[str]:
    return [row for row in re.findall(r"<tr>.*?</tr>", html, flags=re.S) if needle in row]


def test_report_is_self_contained_with_every_figure(full_report):
    html, saved, config, tmp_path = full_report
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html and "<link" not in html and "url(" not in html and "@import" not in html
    expected = {f["name"] for f in expected_figures(config)}
    assert set(saved) == expected
    assert html.count('src="data:image/png;base64,') == len(expected)
    for name, path in saved.items():
        assert path == tmp_path / "figures" / f"{name}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f'id="fig-{name}"' in html


def test_numbers_are_shown_with_their_settings(full_report):
    html = full_report[0]
    for pair in PAIRS:
        assert pair in html
    # the planted MRR appears, formatted, in the full table's row that names its settings
    planted = [r for r in rows_containing(html, ">0.432<") if "GloVe" in r and "en-fr" in r]
    assert planted and any("200k" in r and ">512<" in r and "cosine" in r for r in planted)
    assert "metric cosine" in html and "dictionary split test" in html and "BERT layer 2" in html
    assert "chance MRR" in html and "chance 0.012" in html
    assert "min_count" in html and "unit-test-run" in html
    assert "&#34;epochs&#34;" not in html  # the per-model JSON column stays out of the per-row table
    # settings per model, from the config
    for value in ("learning_rate", "num_hidden_layers", "negative"):
        assert value in html


def test_static_models_only_render_without_bert(tmp_path):
    html, saved, config = render(tmp_path, models=("glove", "word2vec"))
    assert "word_retrieval_bert_layers" not in saved and "bert_pretraining_loss" not in saved
    assert set(saved) == {f["name"] for f in expected_figures(config)}
    assert "BERT pretraining" not in html and "BERT layer" not in html and "by layer" not in html
    assert "GloVe" in html and "Word2Vec" in html


def test_missing_paper_results_says_so(full_report):
    html = full_report[0]
    assert report.NO_PUBLISHED in html


def test_paper_results_are_shown_beside_ours(tmp_path):
    published = tmp_path / "paper_results.yaml"
    # test input only: a made-up source name and values, to check layout and matching
    published.write_text(
        "word_retrieval:\n"
        "  - source: Test et al. (1999)\n"
        "    id: Figure 9\n"
        "    metric: mrr\n"
        "    settings: {size: 200000, window: 512}\n"
        "    rows:\n"
        "      - {model: glove, lang: fr, value: 0.5}\n"
        "      - {model: bert, lang: xx, value: 0.25}\n", encoding="utf-8")
    html, _, _ = render(tmp_path, models=("glove",), paper_results=published)
    assert report.NO_PUBLISHED not in html
    (row,) = rows_containing(html, "Test et al. (1999)")[:1]
    assert "0.500" in row and "0.432" in row and "window 512" in row and "-0.068" in row
    assert rows_containing(html, "no matching run")


def test_paper_results_without_entry_for_table(tmp_path):
    published = tmp_path / "paper_results.yaml"
    published.write_text("xnli: []\n", encoding="utf-8")
    html, _, _ = render(tmp_path, models=("glove",), paper_results=published)
    assert report.NO_PUBLISHED in html


def test_bad_paper_results_name_the_entry(tmp_path):
    published = tmp_path / "paper_results.yaml"
    published.write_text("word_retrieval:\n  - {source: S, id: T1, metric: mrr, rows: [{model: glove, lang: fr}]}\n")
    with pytest.raises(ValueError, match=r"word_retrieval\[0\]\.rows\[0\]"):
        report.load_paper_results(published)


def test_two_values_of_a_setting_are_not_averaged(tmp_path):
    table = word_retrieval_table(("glove",), metrics=("cosine",))
    table = pd.concat([table, table.assign(min_count=10, mrr=0.9)])
    path = tmp_path / "wr.tsv"
    table.to_csv(path, sep="\t", index=False)
    config = make_config(("glove",))
    with pytest.raises(ValueError, match=r"min_count.*report\.select\.min_count"):
        render_report({"word_retrieval": path}, config, tmp_path / "r.html", tmp_path / "f")
    config["report"]["select"] = {"min_count": 10}
    render_report({"word_retrieval": path}, config, tmp_path / "r.html", tmp_path / "f")
    assert "0.900" in (tmp_path / "r.html").read_text()


def test_layer_not_in_table_is_an_error(tmp_path):
    with pytest.raises(ValueError, match=r"BERT layer 7 .*layers \[0, 1, 2\]"):
        render(tmp_path, layer=7)


def test_training_logs_loader(tmp_path):
    log = tmp_path / "training_log.tsv"
    # a resumed run: steps 20 and 30 logged twice, the later rows win
    log.write_text("step\tloss\tlr\ttokens/s\n10\t9.0\t1e-4\t1000\n20\t8.0\t1e-4\t1000\n30\t7.5\t1e-4\t1000\n"
                   "20\t8.1\t1e-4\t900\n30\t7.4\t1e-4\t900\n", encoding="utf-8")
    frame = load_training_logs([(log, 200000, 512), {"path": log, "size": 200000, "window": 20}])
    assert list(frame.columns[:3]) == ["model", "size", "window"] and "tokens_per_s" in frame
    first = frame[frame["window"] == 512]
    assert first["step"].tolist() == [10, 20, 30] and first["loss"].tolist() == [9.0, 8.1, 7.4]
    bad = tmp_path / "bad.tsv"
    bad.write_text("step\tloss\n1\t2.0\n2\tnan?\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tsv:3: loss"):
        load_training_logs([(bad, 1000, 20)])


def test_workflow_inputs_log_paths_and_retrieval_settings(tmp_path):
    """As the Snakemake rule calls it: bare training_log.tsv paths in {size}-w{window} directories, the
    selection from config.retrieval (metric, dictionary_split, report_layer)."""
    logs = []
    for size in SIZES:
        for window in WINDOWS:
            path = tmp_path / "models" / "bert" / f"{size}-w{window}" / "training_log.tsv"
            path.parent.mkdir(parents=True)
            lines = [f"{s}\t0.1\t{9 - s / 100 + window / 1000}\t1e-4\t500\t1\n" for s in range(0, 400, 100)]
            path.write_text("step\tepoch\tloss\tlr\ttokens_per_s\telapsed_s\n" + "".join(lines))
            logs.append(str(path))
    config = make_config(("glove", "bert"))
    del config["report"]
    config["retrieval"] = {"metric": "csls", "dictionary_split": "test", "report_layer": 1, "min_count": 5}
    table = word_retrieval_table(("glove", "bert"))
    saved = render_report({"word_retrieval": table, "bert_training_logs": logs}, config, tmp_path / "r.html",
                          tmp_path / "figures")
    html = (tmp_path / "r.html").read_text()
    assert "metric csls" in html and "BERT layer 1" in html and "metric cosine" not in html
    assert "bert_pretraining_loss" in saved and "BERT pretraining" in html
    summary = rows_containing(html, "1M</td><td>20</td>")
    assert any(">6.020<" in row for row in summary)  # last loss of the 1M, window-20 log: 9 - 3 + 0.02
    static = render_report({"word_retrieval": word_retrieval_table(("glove",)), "bert_training_logs": []},
                           make_config(("glove",)), tmp_path / "s.html", tmp_path / "sf")
    assert "bert_pretraining_loss" not in static


def test_registered_section_is_skipped_without_its_table(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "SECTIONS", dict(report.SECTIONS))
    report.register_section("extra", "Extra study", required=("extra_table",))(
        lambda ctx: [report.text(f"extra rows: {len(ctx.tables['extra_table'])}")])
    table = word_retrieval_table(("glove",), metrics=("cosine",))
    config = make_config(("glove",))
    render_report({"word_retrieval": table}, config, tmp_path / "a.html", tmp_path / "f")
    assert "Extra study" not in (tmp_path / "a.html").read_text()
    render_report({"word_retrieval": table, "extra_table": table.head(3)}, config, tmp_path / "b.html",
                  tmp_path / "f")
    assert "Extra study" in (tmp_path / "b.html").read_text() and "extra rows: 3" in (tmp_path / "b.html").read_text()


def test_number_formatting():
    assert fmt_num(0.4321) == "0.432"
    assert fmt_num(1.0) == "1.000"
    assert fmt_num(0.000512) == "0.000512"
    assert fmt_num(float("nan")) == "\u2014"
    assert fmt_num(np.int64(12345)) == "12,345"
    assert report.size_label(200000) == "200k" and report.size_label(1500000) == "1.5M"
    assert report.size_label(12345) == "12,345"

