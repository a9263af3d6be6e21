"""The report's first screen says what the run is, read from its tables and files: data, models (depth, width,
steps, final MLM loss), seeds, the checkout, a settings hash and the cost from the benchmark files."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from xling.report.metadata import benchmark_cost, checkout_commit, run_metadata, settings_hash

import test_report as base
from test_report import settings_tables


def test_first_section_describes_the_run_before_the_findings(tmp_path):
    html, _, _ = base.render(tmp_path)
    first = re.findall(r'<section id="([^"]+)"', html)
    assert first[0] == "run"
    run = _first_table(html)
    assert run["data"].startswith("synthetic")
    assert "languages en, de, fr, ru" in run["data"] and "1M (1,000,000)" in run["data"]
    assert "BERT: 2 layers, 768 dimensions, 300 steps, seed 0" in run["models"]
    # the loss at the last logged step (290) of the four BERTs: 9 e^(-290/120) + 2 + 0.01 w/512
    losses = sorted(9.0 * 2.718281828459045 ** (-290 / 120) + 2 + 0.01 * w / 512 for w in base.WINDOWS)
    assert f"final MLM loss {losses[0]:.2f}\u2013{losses[-1]:.2f}" in run["models"]
    assert "The data are synthetic" in html[: html.index('id="findings"') if 'id="findings"' in html else None]


def _first_table(html: str) -> dict[str, str]:
    start = html.index('<section id="run"')
    return next(iter(settings_tables(html[start : html.index("</section>", start)]).values()))


def test_benchmark_cost_sums_job_time_and_spans_wall_time(tmp_path):
    for name, seconds, end in (("a.tsv", 100.0, 1_000_000), ("sub/b.tsv", 50.0, 1_000_030)):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:01:40\t10\n")
        os.utime(path, (end, end))
    cost = benchmark_cost(tmp_path)
    assert cost["jobs"] == 2 and cost["job_seconds"] == 150.0
    assert cost["wall_seconds"] == 1_000_030 - (1_000_000 - 100)  # first start to last end
    assert benchmark_cost(tmp_path / "absent") == {"jobs": 0}
    (tmp_path / "bad.tsv").write_text("x\n1\n")
    with pytest.raises(ValueError, match="bad.tsv: not a Snakemake benchmark table"):
        benchmark_cost(tmp_path)


def test_settings_hash_is_canonical_and_commit_names_the_checkout(tmp_path):
    assert settings_hash({"a": 1, "b": [2]}) == settings_hash({"b": [2], "a": 1})
    assert settings_hash({"a": 1}) != settings_hash({"a": 2})
    assert checkout_commit(tmp_path) is None
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("x")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_COMMITTER_DATE": "2024-01-02T00:00:00Z",
    }
    subprocess.run(["git", "-C", str(tmp_path), "add", "f"], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "c"], check=True, env=env)
    assert re.fullmatch(r"[0-9a-f]{12} of 2024-01-02", checkout_commit(tmp_path))
    (tmp_path / "f").write_text("y")
    assert checkout_commit(tmp_path).endswith(", with uncommitted changes")
    meta = run_metadata(tmp_path, tmp_path / "none", {"run": "x"})
    assert meta["config_hash"] == settings_hash({"run": "x"}) and meta["jobs"] == 0


def test_metadata_reaches_the_first_screen(tmp_path, monkeypatch):
    captured = {}
    original = base.render_report

    def with_metadata(*args, **kw):
        captured["done"] = True
        return original(
            *args,
            **kw,
            metadata={
                "commit": "abcdef123456 of 2024-01-02",
                "config_hash": "0123456789ab",
                "jobs": 3,
                "job_seconds": 7200.0,
                "wall_seconds": 5400.0,
                "finished": "2024-01-03 10:00 UTC",
            },
        )

    monkeypatch.setattr(base, "render_report", with_metadata)
    html, _, _ = base.render(tmp_path)
    run = _first_table(html)
    assert captured and run["checkout"] == "abcdef123456 of 2024-01-02" and run["settings hash"] == "0123456789ab"
    assert run["cost"].startswith("2.0 h of job time over 3 benchmarked jobs; 1.5 h from the first job")


def test_the_tables_row_names_each_folder_once_and_a_file_many_folders_hold_once():
    from xling.report.run import _tables_line

    line = _tables_line(
        {
            "tables": ["results/r/eval/a.parquet", "results/r/eval/b.parquet"],
            "logs": [f"results/r/finetuned/{task}/m/seed1/finetune.json" for task in ("xnli", "pos", "ner")],
            "models": ["results/r/models/bert/4000/training_log.tsv"],
        }
    )
    assert line == (
        "results/r/eval/ a.parquet, b.parquet; results/r/models/bert/4000/ training_log.tsv; "
        "finetune.json in 3 folders under results/r/finetuned/"
    )
