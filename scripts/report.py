"""Snakemake entry point: render the HTML report and its figures from the run's tidy tables."""

from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.report import expected_figures, render_report  # noqa: E402  (registers every study's sections)
from xling.plan.code import planned_checkout_file  # noqa: E402
from xling.report.core import CHECKOUT  # noqa: E402
from xling.report.metadata import run_metadata  # noqa: E402

# every named Parquet input is a table, under its input name (rules/report.smk names them as xling.plan.tables)
tables = {
    key: Path(path) for key, path in snakemake.input.items() if isinstance(path, str) and path.endswith(".parquet")
}
# the per-query ranks of word retrieval: one file per retrieval job (the MRR table's intervals and flags)
if snakemake.input.get("word_retrieval_ranks"):
    tables["word_retrieval_ranks"] = [Path(p) for p in snakemake.input.get("word_retrieval_ranks")]
# the directories of the tables of files (xling.plan.tables): our BERTs', the fine-tunings', the aligned models'
for key, name in (
    ("bert_training_logs", "training_log.tsv"),
    ("finetune_logs", "finetune.json"),
    ("alignment_logs", "training_log.tsv"),
):
    if snakemake.input.get(key):
        tables[key] = [Path(d) / name for d in snakemake.input.get(key)]
figures = [f["name"] for f in expected_figures(snakemake.config, tables)]  # the rule's outputs, one call
# the checkout's files the rule versions by content (rules/report.smk), read from the checkout of this xling
checkout = {name: planned_checkout_file(entry, CHECKOUT) for name, entry in snakemake.params.checkout_files.items()}
config = snakemake.params.config  # what the rule declares, so a setting it does not show cannot go stale in it
protocol = {**config["protocol"], **{name: str(checkout[f"protocol_{name}"]) for name in ("table", "schema", "study")}}
render_report(
    tables,
    {**config, "protocol": protocol},
    Path(snakemake.output.html),
    Path(snakemake.output[figures[0]]).parent,
    paper_results=Path(snakemake.input.get("paper_results") or checkout["paper_results"]),
    expected=figures,
    # the first screen's commit, settings hash and cost: read when rendering, not inputs (nothing reruns for them)
    metadata=run_metadata(CHECKOUT, snakemake.params.benchmarks, config["protocol"]["run"]),
)
