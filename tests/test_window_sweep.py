"""The static models' window sweep (Liu et al. "What makes multilingual BERT multilingual?", Figure 4): its rows
are marked in the gathered word-retrieval table, and the report shows them in their own section, apart from
the grid's figures. The DAG side (config.yaml, the test preset, what a sweep change reruns) is checked in
test_workflow.py and test_reruns.py."""

from __future__ import annotations

import pandas as pd
import pytest
from test_report import make_config, rows_containing, word_retrieval_table

from xling.report.core import expected_figures, render_report
from xling.tables import gather

SWEEP_MRR = 0.7654  # word2vec, 200k, window 10, en-de -> "0.765" in the sweep's table


def test_gather_marks_the_rows_of_an_experiment(tmp_path):
    parts = []
    for window in (512, 20, 10):
        part = tmp_path / f"w{window}.parquet"
        pd.DataFrame({"window": [window, window], "mrr": [0.1, 0.2]}).to_parquet(part)
        parts.append(part)
    table = gather(
        parts, tmp_path / "all.parquet", tmp_path / "all.csv", marks={"window_sweep": [str(parts[0]), str(parts[2])]}
    )
    assert table["window_sweep"].tolist() == [True, True, False, False, True, True]
    assert pd.read_parquet(tmp_path / "all.parquet").equals(table)
    assert pd.read_csv(tmp_path / "all.csv")["window_sweep"].tolist() == table["window_sweep"].tolist()
    assert "window_sweep" not in gather(parts, tmp_path / "b.parquet", tmp_path / "b.csv")
    with pytest.raises(ValueError, match="not gathered.*elsewhere.parquet"):
        gather(
            parts, tmp_path / "c.parquet", tmp_path / "c.csv", marks={"window_sweep": [tmp_path / "elsewhere.parquet"]}
        )


def sweep_table() -> pd.DataFrame:
    """The grid (GloVe and Word2Vec, windows 512 and 20) and a Word2Vec sweep at 200k over windows 10 (its own
    model) and 512 (the grid's), marked as the workflow's gather marks them."""
    grid = word_retrieval_table(("glove", "word2vec"), metrics=("cosine",))
    extra = grid[(grid["model"] == "word2vec") & (grid["size"] == 200000) & (grid["window"] == 20)].assign(window=10)
    extra.loc[extra["pair"] == "en-de", "mrr"] = SWEEP_MRR
    table = pd.concat([grid, extra], ignore_index=True)
    table["window_sweep"] = (table["model"] == "word2vec") & (table["size"] == 200000) & table["window"].isin([10, 512])
    return table


def render(tmp_path, table, config):
    out = tmp_path / "report.html"
    saved = render_report(
        {"word_retrieval": table},
        config,
        out,
        tmp_path / "figures",
        paper_results=tmp_path / "absent.yaml",
        expected=[f["name"] for f in expected_figures(config, ["word_retrieval"])],
    )
    return out.read_text(encoding="utf-8"), saved


def sweep_config(**sweep):
    config = make_config(("glove", "word2vec"))
    config["window_sweep"] = {"models": ["word2vec"], "windows": [10, 512], "sizes": None, **sweep}
    return config


def section(html: str, name: str) -> str:
    return html.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def test_report_shows_the_sweep_apart_from_the_grid(tmp_path):
    html, saved = render(tmp_path, sweep_table(), sweep_config())
    assert set(saved) == {
        "word_retrieval_mrr_by_pair_w512",
        "word_retrieval_mrr_by_pair_w20",
        "word_retrieval_window_effect",
        "word_retrieval_window_sweep",
    }
    # the sweep's table: Word2Vec at 200k, one row per sweep window, the sweep model's planted MRR in its row
    sweep_rows = rows_containing(section(html, "window_sweep"), "Word2Vec")
    assert len(sweep_rows) == 2 and all("200k" in r for r in sweep_rows)
    assert [r for r in sweep_rows if ">10<" in r and ">0.765<" in r] and [r for r in sweep_rows if ">512<" in r]
    # the grid's main table has no row of the sweep's own window; the full table lists it, marked
    grid = section(html, "word_retrieval")
    main_table = grid.split("all numbers", 1)[0]
    assert not [r for r in rows_containing(main_table, "Word2Vec") if ">10<" in r]
    assert [r for r in rows_containing(main_table, ">0.432<") if "GloVe" in r]  # the grid keeps its numbers
    assert [r for r in rows_containing(grid, ">0.765<") if ">10<" in r and ">True<" in r]


def test_no_sweep_no_figure_and_a_declared_sweep_needs_its_rows(tmp_path):
    untrained = sweep_config(models=["glove"])
    untrained["models"] = ["word2vec"]  # the swept model is not trained: nothing to sweep
    for config in (sweep_config(windows=[]), untrained):
        assert "word_retrieval_window_sweep" not in {f["name"] for f in expected_figures(config, ["word_retrieval"])}
    table = sweep_table()
    html, saved = render(tmp_path, table[table["window"] != 10], sweep_config(windows=[]))
    assert "word_retrieval_window_sweep" not in saved and "This run sweeps no window" in html
    with pytest.raises(ValueError, match="no row has window_sweep true"):
        render(tmp_path, table.assign(window_sweep=False), sweep_config())
    with pytest.raises(ValueError, match="missing column.*window_sweep"):
        render(tmp_path, table.drop(columns="window_sweep"), sweep_config())
