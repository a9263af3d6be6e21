"""Report sections of the monolingual BERTs (xling.report.monolingual) on small tables built here, with the
columns the analysis scripts write: every figure is declared and written, the numbers appear, the
paper's figures are said to have no recorded numbers."""

from __future__ import annotations

import html as html_lib

import pandas as pd
import pytest

from xling.report import expected_figures, render_report

PAIRS = ("en-xa", "en-xb")


def models(pair):
    return dict(lm_src="mono/en/100-w8", lm_tgt=f"mono/{pair[3:]}/100-w8")


def word_table() -> pd.DataFrame:
    rows = []
    for k, pair in enumerate(PAIRS):
        counts = dict(n_train_pairs=50, n_test_pairs=20, coverage=1.0, n_queries=20, n_src_words=300, n_tgt_words=280)
        rows += [
            dict(pair=pair, level=level, layer=0, p_at_1=0.1 * (i + 1) + k / 100, p_at_5=0.5, **counts)
            for i, level in enumerate(("embedding", "fasttext", "fasttext_all"))
        ]
        rows += [
            dict(pair=pair, level="contextual", layer=layer, p_at_1=0.05 * layer + k / 100, p_at_5=0.4, **counts)
            for layer in range(3)
        ]
    return pd.DataFrame(rows).assign(csls_k=10, normalize_iterations=5, **models("en-xa"))


def sentence_table() -> pd.DataFrame:
    rows = [
        dict(
            pair=pair,
            layer=layer,
            method=method,
            direction=direction,
            p_at_1=(0.6 - 0.1 * layer if method == "procrustes" else 0.01),
            **models(pair),
        )
        for pair in PAIRS
        for layer in range(3)
        for method in ("none", "procrustes")
        for direction in ("en->xx", "xx->en")
    ]
    return pd.DataFrame(rows).assign(n_map_sentences=400, n_test_sentences=100, map_split="dev", normalize_iterations=5)


def cka_table() -> pd.DataFrame:
    rows = [
        dict(
            pair=pair,
            comparison=comparison,
            layer=layer,
            cka=value - 0.1 * layer,
            **models(pair),
            lm_multilingual="" if pair == "en-en'" else "results/x/models/bert/100-w8",
        )
        for pair in (*PAIRS, "en-en'")
        for comparison, value in (("monolingual", 0.7), ("multilingual", 0.8), ("random", 0.2))
        if not (pair == "en-en'" and comparison == "multilingual")
        for layer in range(3)
    ]
    table = pd.DataFrame(rows).assign(debiased=False, split="test", n_sentences=500)
    return table.assign(ci_low=table["cka"] - 0.03, ci_high=table["cka"] + 0.02, ci_level=0.95)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    tables = {"monolingual_words": word_table(), "monolingual_sentences": sentence_table(), "cka": cka_table()}
    config = {"run": "t", "languages": ["en", "xa", "xb"]}
    expected = [f["name"] for f in expected_figures(config, tables)]
    saved = render_report(
        tables, config, out / "report.html", out / "figures", paper_results=out / "none.yaml", expected=expected
    )
    return expected, saved, html_lib.unescape((out / "report.html").read_text(encoding="utf-8"))


def test_every_declared_figure_is_written(rendered):
    expected, saved, _ = rendered
    assert sorted(expected) == ["cka_layers", "monolingual_sentences", "monolingual_words"]
    assert set(saved) == set(expected) and all(path.stat().st_size > 1000 for path in saved.values())


def test_sections_show_the_numbers(rendered):
    _, _, page = rendered
    for title in ("Word translation: all numbers", "Tatoeba P@1 (%): all numbers", "CKA: all numbers"):
        assert title in page
    assert "<td>21.0</td>" in page.replace(' class="num"', "")  # en-xb fastText (same words): 0.2 + 0.01, in %
    assert "<td>50.0</td>" in page.replace(' class="num"', "")  # Tatoeba through the map at layer 1, in %
    assert "en-en'" in page and "0.600 [0.570, 0.620]" in page  # en' CKA at layer 1 (0.7 - 0.1), its interval
    assert "CKA: all numbers (95% jackknife interval over the sentences)" in page
    assert page.count("No published numbers recorded") == 3  # the paper gives these as figures only


def test_a_missing_column_names_the_table(tmp_path):
    with pytest.raises(ValueError, match="<cka table>: missing column.*cka"):
        render_report({"cka": cka_table().drop(columns="cka")}, {"run": "t"}, tmp_path / "r.html", tmp_path)


def test_cka_figure_shades_each_comparison_s_interval():
    """With the interval columns: one panel per pair under the heatmaps, each comparison's line in a band from
    ci_low to ci_high; without them, the heatmaps alone."""
    from matplotlib.collections import PolyCollection

    from xling.report.monolingual import cka_figure

    table = cka_table()
    fig = cka_figure(table, "settings")
    panels = {ax.get_title(): ax for ax in fig.subfigs[1].axes}
    assert sorted(panels) == ["en-en'", "en-xa", "en-xb"]
    bands = [c for c in panels["en-en'"].collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2  # monolingual and random: en-en' has no multilingual model
    corners = bands[0].get_paths()[0].vertices
    rows = table[(table["pair"] == "en-en'") & (table["comparison"] == "monolingual")]
    assert corners[:, 1].min() == pytest.approx(rows["ci_low"].min())
    assert corners[:, 1].max() == pytest.approx(rows["ci_high"].max())
    assert len([c for c in panels["en-xa"].collections if isinstance(c, PolyCollection)]) == 3
    bare = cka_figure(table.drop(columns=["ci_low", "ci_high"]), "settings")
    assert not bare.subfigs and len(bare.axes) == 3 + 1  # three heatmaps and the colour bar
