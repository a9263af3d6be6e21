"""Tests of the HTML report: self-contained, every figure embedded and saved, numbers shown with the settings
the tables recorded (not the live config)."""

from __future__ import annotations

import copy
import html as html_lib
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from xling.report import core as report
from xling.report import figures
from xling.report.blocks import LONG_TABLE, fmt_num, text
from xling.report.core import expected_figures, render_report
from xling.report.figures import size_label
from xling.report.pretraining import load_training_logs
from xling.report.published import NO_PUBLISHED, load_paper_results
from xling.tables import data_settings, run_settings

PAIRS = ["en-de", "en-fr", "en-ru"]
SIZES = [200000, 1000000]
WINDOWS = [512, 20]
BERT_LAYERS = [0, 1, 2]
PLANTED_MRR = 0.4321  # glove, 200k, window 512, en-fr, cosine -> must appear as "0.432"
PLANTED_CHANCE = 0.0123  # chance for every en-ru row -> "0.012"
# The config the tables were computed with (their settings columns come from it through run_settings).
TABLE_CONFIG = {
    "run": "unit-test-run",
    "languages": ["en", "de", "fr", "ru"],
    "data": {"source": "synthetic", "cache": "results/downloads", "corpus": "wikipedia"},
    "synthetic": {"seed": 3, "concepts": 600},
    "corpus": {"sizes": SIZES, "normalization": "NFC", "seed": 0},
    "tokenizer": {"vocab": "train", "vocab_size": 8000, "min_frequency": 2, "lowercase": False},
    "models": ["glove", "word2vec", "bert"],
    "windows": WINDOWS,
    "glove": {"dim": 300, "epochs": 15, "learning_rate": 0.05, "seed": 0, "threads": 8},
    "word2vec": {"dim": 300, "epochs": 5, "sg": 1, "negative": 10, "seed": 0},
    "bert": {
        "hidden_size": 768,
        "num_layers": 2,
        "learning_rate": 0.0001,
        "batch_size": 32,
        "max_steps": 300,
        "seed": 0,
    },
    "represent": {"max_documents": 500, "batch_size": 64, "shards": 2, "threads": 4},
    "retrieval": {"min_count": 5},
}


def harmonic_chance(n: int) -> float:
    return sum(1.0 / k for k in range(1, n + 1)) / n


def word_retrieval_table(
    models=("glove", "word2vec", "bert"), metrics=("cosine", "csls"), config=TABLE_CONFIG
) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for model in models:
        for size in SIZES:
            for window in WINDOWS:
                for layer in BERT_LAYERS if model == "bert" else [0]:
                    for metric in metrics:
                        for pair in PAIRS:
                            src, tgt = pair.split("-")
                            n_candidates = 400 + 10 * len(tgt)
                            chance = PLANTED_CHANCE if tgt == "ru" else harmonic_chance(n_candidates)
                            mrr = round(float(rng.uniform(0.05, 0.35)), 4)
                            if (model, size, window, pair, metric) == ("glove", 200000, 512, "en-fr", "cosine"):
                                mrr = PLANTED_MRR
                            rows.append(
                                dict(
                                    model=model,
                                    size=size,
                                    window=window,
                                    layer=layer,
                                    src=src,
                                    tgt=tgt,
                                    pair=pair,
                                    mrr=mrr,
                                    p_at_1=mrr * 0.7,
                                    p_at_5=min(1.0, mrr * 1.4),
                                    coverage=0.9,
                                    n_pairs=500,
                                    n_covered_pairs=450,
                                    n_queries=300,
                                    n_candidates=n_candidates,
                                    chance_mrr=chance,
                                    metric=metric,
                                    dictionary_split="test",
                                    csls_k=10,
                                    min_count=config["retrieval"]["min_count"],
                                    **run_settings(config, model),
                                )
                            )
    return pd.DataFrame(rows)


def training_log_table() -> pd.DataFrame:
    rows = []
    for size in SIZES:
        for window in WINDOWS:
            for step in range(0, 300, 10):
                rows.append(
                    dict(
                        model="bert",
                        size=size,
                        window=window,
                        step=step,
                        loss=9.0 * math.exp(-step / 120) + 2 + 0.01 * window / 512,
                        lr=1e-4 * min(1, step / 50),
                        tokens_per_s=12000.0,
                    )
                )
    return pd.DataFrame(rows)


def make_config(models=("glove", "word2vec", "bert"), **report_settings) -> dict:
    """The live config at render time: the tables' config plus the report's selection."""
    config = copy.deepcopy(TABLE_CONFIG)
    config["models"] = list(models)
    config["report"] = {"layer": 2, "metric": "cosine", "dictionary_split": "test", **report_settings}
    return config


def render(tmp_path: Path, models=("glove", "word2vec", "bert"), paper_results=None, with_log=True, config=None, **kw):
    table = word_retrieval_table(models)
    tables = {"word_retrieval": tmp_path / "word_retrieval.parquet"}
    table.to_parquet(tables["word_retrieval"], index=False)
    if with_log and "bert" in models:
        tables["bert_training"] = tmp_path / "bert_training.parquet"
        training_log_table().to_parquet(tables["bert_training"], index=False)
    config = config or make_config(models, **kw)
    out = tmp_path / "report.html"
    saved = render_report(
        tables,
        config,
        out,
        tmp_path / "figures",
        paper_results=paper_results if paper_results else tmp_path / "absent.yaml",
        expected=[f["name"] for f in expected_figures(config, tables)],
    )
    return out.read_text(encoding="utf-8"), saved, config


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """The full example (3 models, 2 sizes, 2 windows, 3 pairs, BERT with 3 layers), rendered once."""
    tmp_path = tmp_path_factory.mktemp("full")
    html, saved, config = render(tmp_path)
    return html, saved, config, tmp_path


def rows_containing(html: str, needle: str) -> list[str]:
    return [row for row in re.findall(r"<tr>.*?</tr>", html, flags=re.S) if needle in row]


def settings_tables(html: str) -> dict[str, dict[str, str]]:
    """{caption: {setting: value}} of every settings (key-value) table of the report."""
    out = {}
    for caption, body in re.findall(r'<table class="kv">\s*<caption>(.*?)</caption>(.*?)</table>', html, flags=re.S):
        rows = re.findall(r'<th scope="row">(.*?)</th><td>(.*?)</td>', body, flags=re.S)
        out[html_lib.unescape(caption)] = {html_lib.unescape(k): html_lib.unescape(v) for k, v in rows}
    return out


def test_report_is_self_contained_with_every_figure(full_report):
    html, saved, config, tmp_path = full_report
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html and "<link" not in html and "url(" not in html and "@import" not in html
    expected = {f["name"] for f in expected_figures(config, ["word_retrieval", "bert_training"])}
    assert expected == {
        "word_retrieval_mrr_by_pair_w512",
        "word_retrieval_mrr_by_pair_w20",
        "word_retrieval_window_effect",
        "word_retrieval_bert_layers",
        "bert_pretraining_loss",
    }
    assert set(saved) == expected
    assert html.count('src="data:image/png;base64,') == len(expected)
    for name, path in saved.items():
        assert path == tmp_path / "figures" / f"{name}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f'id="fig-{name}"' in html


def _sections(html: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', html, flags=re.S))


def test_report_as_first_shown_is_short_and_loses_nothing(full_report):
    """Issue 22: the settings appendix sits behind one <details>; a result section shows its text and its
    headline table or figure, the rest (further figures, the long "all numbers" table) behind a <details>
    summary that counts it; every long table is collapsed; no figure is wider than the page's column."""
    html, saved, config, tmp_path = full_report
    sections = _sections(html)
    assert list(sections)[-1] == "settings"
    settings = sections["settings"]
    assert re.match(r'\s*<h2>[^<]*</h2>\s*<details class="appendix"><summary>', settings)
    assert settings.rstrip().endswith("</details>") and settings.count('<table class="kv">') > 1
    retrieval = sections["word_retrieval"]
    shown, more = retrieval.split('<details class="more"><summary>', 1)
    assert shown.count("<table") == 1 and "<figure" not in shown  # the headline table only
    assert more.startswith("More of this section: ") and more.count("<figure") == 4
    shown_tables = re.findall(r'<h3>([^<]*)</h3><div class="table-wrap">(.*?)</table>', html, flags=re.S)
    assert shown_tables
    for title, body in shown_tables:
        assert body.count("<tr>") - 1 <= LONG_TABLE, f"{title}: a long table shown open"
    assert re.search(r"<details><summary>Word retrieval: all numbers \(\d+ rows\)</summary>", retrieval)
    for name, path in saved.items():
        with Image.open(path) as image:
            assert image.width <= figures.MAX_WIDTH_IN * figures.DPI + 1, name
    assert "max-height" not in html  # no inner scroll box


def test_figure_list_comes_from_every_registered_study():
    """One call lists each study's figures, with the caption file each `snakemake --report` entry needs."""
    config = make_config()
    config["language"] = {"sentence_retrieval": {"all_layers": True}}
    tables = ["word_retrieval", "bert_training_logs", "token_translation", "tatoeba"]
    figures = expected_figures(config, tables)
    names = [f["name"] for f in figures]
    assert names == [
        "word_retrieval_mrr_by_pair_w512",
        "word_retrieval_mrr_by_pair_w20",
        "word_retrieval_window_effect",
        "word_retrieval_bert_layers",
        "bert_pretraining_loss",
        "language_translation_convert_rate",
        "language_translation_bleu1",
        "language_translation_alpha",
        "language_tatoeba_layers",
    ]
    for figure in figures:
        assert (report.REPORTS_DIR / figure["caption"]).is_file() and figure["category"] and figure["labels"]
    # a study whose table the run does not make writes no figure
    assert not {
        n
        for n in [f["name"] for f in expected_figures(config, ["word_retrieval"])]
        if n.startswith(("language_", "bert_pretraining"))
    }
    config["language"]["sentence_retrieval"]["all_layers"] = False
    assert "language_tatoeba_layers" not in [f["name"] for f in expected_figures(config, tables)]


def test_declared_figures_that_are_not_written_stop_the_report(tmp_path):
    table = word_retrieval_table(("glove",), metrics=("cosine",))
    with pytest.raises(ValueError, match=r"not written \['bert_pretraining_loss'\]"):
        render_report(
            {"word_retrieval": table},
            make_config(("glove",)),
            tmp_path / "r.html",
            tmp_path / "f",
            expected=[
                "word_retrieval_mrr_by_pair_w512",
                "word_retrieval_mrr_by_pair_w20",
                "word_retrieval_window_effect",
                "bert_pretraining_loss",
            ],
        )


def test_numbers_are_shown_with_their_settings(full_report):
    html = full_report[0]
    for pair in PAIRS:
        assert pair in html
    # the planted MRR appears, formatted, in the full table's row that names its settings
    planted = [r for r in rows_containing(html, ">0.432<") if "GloVe" in r and "en-fr" in r]
    assert planted and any("200k" in r and ">512<" in r and "cosine" in r for r in planted)
    assert "metric cosine" in html and "dictionary split test" in html and "BERT layer 2" in html
    # chance MRR: one row per data size (every model of a size has the same candidates), the planted one for en-ru
    assert "chance MRR" in html and any("random ranking" in r for r in rows_containing(html, ">0.012<"))
    assert "min_count" in html and "unit-test-run" in html
    assert "&#34;epochs&#34;" not in html  # the per-model JSON column stays out of the per-row table
    settings = settings_tables(html)
    assert settings["GloVe"]["learning_rate"] == "0.05" and settings["Word2Vec"]["negative"] == "10"
    assert settings["BERT"]["num_layers"] == "2" and "threads" not in settings["GloVe"]  # resources are no setting
    # shards stay: they set the extraction jobs and the order of the float sums
    assert settings["BERT: representation store"] == {"max_documents": "500", "shards": "2"}


def test_settings_are_those_the_tables_recorded(tmp_path):
    """Rendered after a config edit: the report shows the settings that produced the tables' numbers."""
    live = make_config()
    live["glove"]["epochs"] = 99
    live["bert"]["learning_rate"] = 0.5
    live["synthetic"]["seed"] = 42
    live["corpus"]["normalization"] = "NFKC"
    live["retrieval"]["min_count"] = 77
    live["represent"]["max_documents"] = 9
    html, _, _ = render(tmp_path, config=live)
    settings = settings_tables(html)
    assert settings["GloVe"]["epochs"] == "15"
    assert settings["BERT"]["learning_rate"] == "0.0001"
    data = settings["Data, corpus and tokenizer"]
    assert data["synthetic.seed"] == "3" and data["corpus.normalization"] == "NFC"
    assert settings["word_retrieval"]["min_count"] == "5"
    assert settings["BERT: representation store"]["max_documents"] == "500"
    for edited in (">99<", ">0.5<", ">42<", "NFKC", ">77<"):
        assert edited not in html, edited
    # the loss figure's title and the pretraining summary name the recorded hyper-parameters
    assert "learning_rate 0.0001" in html and "learning_rate 0.5" not in html


def test_synthetic_run_shows_no_real_data_keys(full_report):
    data = settings_tables(full_report[0])["Data, corpus and tokenizer"]
    assert data["data.source"] == "synthetic" and data["synthetic.concepts"] == "600"
    assert not [k for k in data if k.startswith("data.") and k != "data.source"]  # no cache, no corpus choice
    assert data["languages"] == "en, de, fr, ru" and data["tokenizer.vocab_size"] == "8000"


def test_data_settings_keep_only_what_applies():
    real = {
        **copy.deepcopy(TABLE_CONFIG),
        "data": {
            "source": "real",
            "corpus": "leipzig",
            "staged": "/somewhere",
            "cache": "c",
            "download": {"retries": 3},
            "wikipedia": {"dump": 1},
            "paths": {"muse": {"sha256": "ab"}},
        },
    }
    real["tokenizer"] = {"vocab": "mbert", "vocab_size": 119547, "min_frequency": 2, "lowercase": False}
    recorded = data_settings(real)
    assert recorded["data"] == {"source": "real", "corpus": "leipzig"}  # where copies come from is no setting
    assert "synthetic" not in recorded
    assert recorded["tokenizer"] == {"vocab": "mbert", "lowercase": False}  # no training keys for a given vocab
    synthetic = data_settings(TABLE_CONFIG)
    assert synthetic["data"] == {"source": "synthetic"} and synthetic["synthetic"] == TABLE_CONFIG["synthetic"]
    columns = run_settings(TABLE_CONFIG, "glove")
    assert json.loads(columns["hparams"]) == {"dim": 300, "epochs": 15, "learning_rate": 0.05, "seed": 0}
    assert json.loads(columns["data_settings"]) == json.loads(json.dumps(synthetic))
    assert "represent_settings" not in columns
    assert json.loads(run_settings(TABLE_CONFIG, "bert")["represent_settings"]) == {"max_documents": 500, "shards": 2}


def test_static_models_only_render_without_bert(tmp_path):
    html, saved, config = render(tmp_path, models=("glove", "word2vec"))
    assert "word_retrieval_bert_layers" not in saved and "bert_pretraining_loss" not in saved
    assert set(saved) == {f["name"] for f in expected_figures(config, ["word_retrieval"])}
    assert "BERT pretraining" not in html and "BERT layer" not in html and "by layer" not in html
    assert "GloVe" in html and "Word2Vec" in html
    assert "BERT" not in settings_tables(html)  # no block for a model that is not in the tables


def test_model_missing_from_tables_has_no_settings_block(tmp_path):
    """The live config lists three models; the tables hold GloVe only: only GloVe's settings are shown."""
    table = word_retrieval_table(("glove",), metrics=("cosine",))
    render_report({"word_retrieval": table}, make_config(), tmp_path / "r.html", tmp_path / "f")
    settings = settings_tables((tmp_path / "r.html").read_text())
    assert "GloVe" in settings and "Word2Vec" not in settings and "BERT" not in settings


def test_missing_paper_results_says_so(full_report):
    html = full_report[0]
    assert NO_PUBLISHED in html


def test_paper_results_are_shown_beside_ours(tmp_path):
    published = tmp_path / "paper_results.yaml"
    # test input only: a made-up source name and values, to check layout and matching
    published.write_text(
        "word_retrieval:\n"
        "  - source: Test et al. (1999)\n"
        "    id: Figure 9\n"
        "    metric: mrr\n"
        "    model: glove\n"
        "    settings: {size: 200000, window: 512, metric: cosine}\n"
        "    rows:\n"
        "      - {lang: fr, value: 0.512}\n"
        "      - {lang: xx, value: 0.25}\n",
        encoding="utf-8",
    )
    html, _, _ = render(tmp_path, models=("glove",), paper_results=published)
    assert NO_PUBLISHED not in html
    assert "Published: Test et al. (1999), Figure 9" in html
    (row,) = [r for r in rows_containing(html, ">0.512<") if ">fr<" in r]
    # the paper's model, size and window are in the run: one column, ours = the planted MRR (3 decimals, as
    # the paper printed), and their difference
    assert ">0.432<" in row and "\u0394 -0.080" in row and "as in the paper" in html
    assert "Not in this run: language xx" in html


def test_paper_results_without_entry_for_table(tmp_path):
    published = tmp_path / "paper_results.yaml"
    published.write_text("xnli: []\n", encoding="utf-8")
    html, _, _ = render(tmp_path, models=("glove",), paper_results=published)
    assert NO_PUBLISHED in html


def test_bad_paper_results_name_the_entry(tmp_path):
    published = tmp_path / "paper_results.yaml"
    published.write_text("word_retrieval:\n  - {source: S, id: T1, metric: mrr, rows: [{model: glove, lang: fr}]}\n")
    with pytest.raises(ValueError, match=r"word_retrieval\[0\]\.rows\[0\]: needs a value"):
        load_paper_results(published)
    published.write_text("tatoeba:\n  - {source: S, id: T1, metric: accuracy, rows: [{lang: fr, value: 1}]}\n")
    with pytest.raises(ValueError, match=r"tatoeba\[0\]: give one model"):
        load_paper_results(published)
    published.write_text("tatoeba:\n  - {source: S, id: T1, metric: accuracy, model: m, setings: {}, rows: []}\n")
    with pytest.raises(ValueError, match=r"tatoeba\[0\]: unknown key\(s\) \['setings'\]"):
        load_paper_results(published)


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
    log.write_text(
        "step\tloss\tlr\ttokens/s\n10\t9.0\t1e-4\t1000\n20\t8.0\t1e-4\t1000\n30\t7.5\t1e-4\t1000\n"
        "20\t8.1\t1e-4\t900\n30\t7.4\t1e-4\t900\n",
        encoding="utf-8",
    )
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
    tables = {"word_retrieval": table, "bert_training_logs": logs}
    saved = render_report(
        tables,
        config,
        tmp_path / "r.html",
        tmp_path / "figures",
        expected=[f["name"] for f in expected_figures(config, tables)],
    )
    html = (tmp_path / "r.html").read_text()
    assert "Settings: metric csls" in html and "BERT layer 1" in html  # the selection, under the main table
    assert "MRR by language pair (metric cosine" not in html
    assert "bert_pretraining_loss" in saved and "BERT pretraining" in html
    summary = rows_containing(html, "1M</td><td>20</td>")
    assert any(">6.020<" in row for row in summary)  # last loss of the 1M, window-20 log: 9 - 3 + 0.02
    static = render_report(
        {"word_retrieval": word_retrieval_table(("glove",)), "bert_training_logs": []},
        make_config(("glove",)),
        tmp_path / "s.html",
        tmp_path / "sf",
    )
    assert "bert_pretraining_loss" not in static


def test_registered_section_is_skipped_without_its_table(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "SECTIONS", dict(report.SECTIONS))
    report.register_section("extra", "Extra study", required=("extra_table",))(
        lambda ctx: [text(f"extra rows: {len(ctx.tables['extra_table'])}")]
    )
    table = word_retrieval_table(("glove",), metrics=("cosine",))
    config = make_config(("glove",))
    render_report({"word_retrieval": table}, config, tmp_path / "a.html", tmp_path / "f")
    assert "Extra study" not in (tmp_path / "a.html").read_text()
    render_report({"word_retrieval": table, "extra_table": table.head(3)}, config, tmp_path / "b.html", tmp_path / "f")
    assert "Extra study" in (tmp_path / "b.html").read_text() and "extra rows: 3" in (tmp_path / "b.html").read_text()


def test_number_formatting():
    assert fmt_num(0.4321) == "0.432"
    assert fmt_num(1.0) == "1.000"
    assert fmt_num(0.000512) == "0.000512"
    assert fmt_num(float("nan")) == "\u2014"
    assert fmt_num(np.int64(12345)) == "12,345"
    assert size_label(200000) == "200k" and size_label(1500000) == "1.5M"
    assert size_label(12345) == "12,345"


def test_overview_data_source_ignores_the_translation_samples_sentences(tmp_path):
    from xling.report.core import ReportContext
    from xling.report.run import render_overview

    tables = {
        "word_retrieval": pd.DataFrame({"source": ["synthetic"], "run": ["t"]}),
        "token_translation_samples": pd.DataFrame({"source": ["the cat sleeps"], "run": ["t"]}),
    }
    ctx = ReportContext(
        config=make_config(),
        tables=tables,
        table_paths={},
        figure_dir=tmp_path,
        captions_dir=tmp_path,
        published={},
        published_path=None,
    )
    shown = repr(render_overview(ctx))
    assert "the cat sleeps" not in shown and "synthetic" in shown


def test_overview_says_which_real_data_are_stand_ins(tmp_path):
    from xling.report.core import ReportContext
    from xling.report.run import render_overview

    tables = {"word_retrieval": pd.DataFrame({"source": ["real"], "run": ["r"]})}
    config = {**make_config(), "stand_ins": {"xnli": "the dev sets cut in three"}}
    ctx = ReportContext(
        config=config,
        tables=tables,
        table_paths={},
        figure_dir=tmp_path,
        captions_dir=tmp_path,
        published={},
        published_path=None,
    )
    assert "Stand-ins" in repr(render_overview(ctx)) and "xnli: the dev sets cut in three" in repr(render_overview(ctx))
    ctx.config.pop("stand_ins")
    assert "Stand-ins" not in repr(render_overview(ctx))


def test_overview_tells_each_model_s_windows_apart(tmp_path):
    """The grid's windows, the window sweep's (Word2Vec) and fastText's own are not one mixed list."""
    from xling.report.core import ReportContext
    from xling.report.run import render_overview

    tables = {
        "word_retrieval": pd.DataFrame(
            {"model": ["bert", "bert", "word2vec", "word2vec", "word2vec"], "window": [32, 8, 32, 8, 4]}
        ),
        "contextual_retrieval": pd.DataFrame({"model": ["fasttext"], "window": [5]}),
    }
    ctx = ReportContext(
        config=make_config(),
        tables=tables,
        table_paths={},
        figure_dir=tmp_path,
        captions_dir=tmp_path,
        published={},
        published_path=None,
    )
    shown = repr(render_overview(ctx))
    assert "Word2Vec 32, 8, 4; BERT 32, 8; fasttext 5" in shown


def test_loss_figure_title_names_only_the_plotted_berts_settings(tmp_path):
    """The ablations' BERTs (model bert in the ablation table) are not in the loss figure: not in its title."""
    from xling.report.core import ReportContext
    from xling.report.pretraining import hparams_line

    grid = json.dumps({"hidden_size": 32, "max_steps": 60, "batch_tokens": None})  # a batch in blocks: not named
    tables = {
        "word_retrieval": pd.DataFrame({"model": ["bert"], "hparams": [grid]}),
        "transfer": pd.DataFrame({"model": ["bert"], "hparams": [grid]}),
        "ablation": pd.DataFrame(
            {
                "model": ["bert", "bert"],
                "hparams": [
                    json.dumps({"hidden_size": 32, "max_steps": 60, "ablation": {"anchors": "extra"}}),
                    json.dumps({"hidden_size": 32, "max_steps": 90, "ablation": {"anchors": "none"}}),
                ],
            }
        ),
    }
    ctx = ReportContext(
        config=make_config(),
        tables=tables,
        table_paths={},
        figure_dir=tmp_path,
        captions_dir=tmp_path,
        published={},
        published_path=None,
    )
    assert hparams_line(ctx) == "hidden_size 32, max_steps 60"
    tables = {
        "word_retrieval": pd.DataFrame(
            {"model": ["bert"], "hparams": [json.dumps({"hidden_size": 32, "batch_size": 256, "batch_tokens": 131072})]}
        )
    }
    ctx = ReportContext(
        config=make_config(),
        tables=tables,
        table_paths={},
        figure_dir=tmp_path,
        captions_dir=tmp_path,
        published={},
        published_path=None,
    )
    assert hparams_line(ctx) == "hidden_size 32, batch_size 256, batch_tokens 131072"  # the batch in tokens


def test_files_are_named_without_the_machine_s_paths(tmp_path, monkeypatch):
    """A run outside the checkout reaches resources/ by `../..`: the report names the checkout's file, never the
    way there; run files from results/ on; anything else by its name."""
    checkout = report.CHECKOUT
    monkeypatch.chdir(tmp_path)
    relative = Path(*[".."] * len(tmp_path.parts)) / checkout.relative_to("/") / "resources/paper_results.yaml"
    assert report.shown_path(relative) == "resources/paper_results.yaml"
    assert report.shown_path(checkout / "resources/paper_results.yaml") == "resources/paper_results.yaml"
    assert report.shown_path("results/demo/eval/x.parquet") == "results/demo/eval/x.parquet"
    assert report.shown_path(tmp_path / "w/results/demo/eval/x.parquet") == "results/demo/eval/x.parquet"
    assert report.shown_path("/elsewhere/data/table.yaml") == "table.yaml"


def test_a_section_leads_with_its_first_block_shown_open():
    """A collapsed table before the first figure stays one line: the figure is the section's headline, not folded
    away behind "More"; with nothing open the first table or figure leads."""
    text_block, collapsed = text("Intro."), {"kind": "table", "title": "Dev scores", "collapsed": True}
    figure, table = {"kind": "figure", "title": "Alpha"}, {"kind": "table", "title": "Numbers", "collapsed": False}
    shown = report._lead_open([text_block, collapsed, figure, table])
    assert shown[:3] == [text_block, collapsed, figure]
    assert shown[3]["kind"] == "more" and shown[3]["blocks"] == [table] and shown[3]["title"].endswith("1 table")
    only_collapsed = report._lead_open([text_block, collapsed, dict(collapsed, title="Other")])
    assert only_collapsed[:2] == [text_block, collapsed] and only_collapsed[2]["kind"] == "more"


def test_fractions_are_shown_in_percent_with_their_unit():
    """One unit per metric: a fraction-stored accuracy, F1, P@k or convert rate is shown in percent; MRR and CKA
    stay 0-1; a tiny non-zero value stays visible."""
    from xling.report.blocks import fmt_metric, fmt_percent, metric_header
    from xling.report.findings import measure_text, metric_unit

    assert fmt_percent(0.0567) == "5.7" and fmt_percent(0.0) == "0.0" and fmt_percent(0.00024) == "0.024"
    assert fmt_percent(float("nan")) == "\u2014"
    assert fmt_metric("accuracy", 0.25) == "25.0" and fmt_metric("mrr", 0.25) == "0.250"
    assert metric_header("f1") == "f1 (%)" and metric_header("mrr") == "mrr"
    measure = {"label": "BERT", "value": 0.05, "low": 0.04, "high": 0.061}
    assert measure_text({"label": "BERT", "value": 5.0, "low": 4.0, "high": 6.1}, percent=True) == "BERT 5.0 [4.0, 6.1]"
    assert measure_text({"label": "BERT", "value": 34.8667}, percent=True) == "BERT 34.9"  # stored in percent
    assert measure_text(measure) == "BERT 0.050 [0.040, 0.061]"
    assert metric_unit("accuracy (CSLS)") == "%" and metric_unit("xnli accuracy") == "%"
    assert metric_unit("mrr") == "0-1"


def test_settings_list_how_intervals_were_drawn_not_the_rows_numbers(tmp_path):
    """Each row's interval bounds, chance level and flag are numbers of that row, not settings: the appendix
    lists the bootstrap's level and resamples, never 43 values of ci_low."""
    table = word_retrieval_table(("glove",))
    table = table.assign(
        ci_low=table["mrr"] - 0.01,
        ci_high=table["mrr"] + 0.01,
        ci_level=0.95,
        ci_resamples=1000,
        n_items=100,
        chance=0.05,
        flag=None,
    )
    path = tmp_path / "word_retrieval.parquet"
    table.to_parquet(path, index=False)
    config = make_config(("glove",))
    render_report(
        {"word_retrieval": path},
        config,
        tmp_path / "r.html",
        tmp_path / "figures",
        paper_results=tmp_path / "absent.yaml",
        expected=[f["name"] for f in expected_figures(config, {"word_retrieval": path})],
    )
    shown = settings_tables((tmp_path / "r.html").read_text())["word_retrieval"]
    assert shown["ci_level"] == "0.95" and shown["ci_resamples"] == "1000"
    assert not {"ci_low", "ci_high", "n_items", "chance", "flag"} & set(shown)


def test_overview_s_run_table_stands_behind_one_summary_line(full_report):
    """The first screen says what the run is: the overview's table of the run (each model's windows, the files
    read) is one click away, not a second screen of it (the demo's page within its screens)."""
    html = full_report[0]
    section = html[html.index('<section id="overview">') :]
    section = section[: section.index("</section>")]
    assert re.search(
        r"<details><summary>The run: [^<]*</summary>\s*<div class=\"group\">\s*<table class=\"kv\">", section
    ), section[:600]
