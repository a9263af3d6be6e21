"""An edit to the code of an xling module reruns the jobs whose code imports it, and nothing else; a move, a
touch, a comment or a docstring reruns nothing; the switch that accepts code changes (xling.plan.accept_code).

The suite's shared run of presets/test.yaml (the test_run fixture) is copied with a copy of the repository (the
edits are planted in the copy, never in this checkout), and continued cut to one data size (SMALL: the rules are
the same, the plans half as long): only the tables, findings and report that the cut changes run again. Then one
module at a time is edited and `snakemake -n` must plan exactly its users and what depends on their outputs.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from plan_configs import language_berts, preset_plan
from workflow_helpers import REPO, copy_run, environment, job_counts
from workflow_helpers import snakemake as run_snakemake

WORKFLOW_FILES = [
    "Snakefile",
    "config.yaml",
    "rules",
    "scripts",
    "xling",
    "schemas",
    "envs",
    "resources",
    "reports",
    "presets",
    "profiles",
]
BODY_EDIT = b"_planted_edit = None\n"  # a statement: the module's code changes
pytestmark = pytest.mark.workflow
# the shared run at its larger size (its language experiments' BERTs, its aligned model's base); XNLI is the one
# transfer task kept: its rules are the other tasks' rules; no window sweep and no ablations (the grid's rules)
SMALL = {
    "corpus": {"sizes": [1500]},
    "window_sweep": {"windows": []},
    "transfer": {"tasks": ["xnli"]},
    "ablation": {"settings": []},
    "cka": {"bilingual": "study"},
}  # so no ablation BERT for the CKA either


def snakemake(repo: Path, workdir: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """Snakemake on the copy's Snakefile, the test preset and SMALL."""
    return run_snakemake(
        "--configfile",
        str(repo / "presets/test.yaml"),
        str(repo / "small.yaml"),
        *args,
        cwd=workdir,
        timeout=timeout,
        repo=repo,
    )


def planned(repo: Path, workdir: Path) -> dict[str, int]:
    """{rule: jobs} that a dry run plans; empty when there is nothing to do."""
    dry = snakemake(repo, workdir, "-n")
    assert dry.returncode == 0, dry.stderr[-3000:]
    return job_counts(dry.stdout + dry.stderr)


@pytest.fixture(scope="module")
def finished(test_run, tmp_path_factory) -> tuple[Path, Path, dict[str, int]]:
    """(repository copy, working directory, the jobs of the whole run) after the shared run, copied, is continued
    under SMALL."""
    root = tmp_path_factory.mktemp("code-reruns")
    repo, workdir, empty = root / "repo", root / "work", root / "empty"
    for name in WORKFLOW_FILES:
        source = REPO / name
        if source.is_dir():  # copies keep their times, so the run's outputs are newer than every module
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            repo.mkdir(exist_ok=True)
            shutil.copy2(source, repo / name)
    (repo / "small.yaml").write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    empty.mkdir()
    whole = planned(repo, empty)
    copy_run(test_run, workdir)
    done = snakemake(repo, workdir, "--cores", "2", timeout=1200)
    assert done.returncode == 0, done.stderr[-5000:]
    assert planned(repo, workdir) == {}, "a finished run has nothing to redo"
    return repo, workdir, whole


def plan_after_edit(finished, module: str, edit: bool = True, addition: bytes = BODY_EDIT) -> dict[str, int]:
    """The dry run's plan once `module` (in the copy) ends with `addition` (or, edit=False, only has a new
    time); the file is restored after, bytes and times."""
    repo, workdir, _ = finished
    path = repo / module
    before, text = path.stat(), path.read_bytes()
    try:
        if edit:
            path.write_bytes(text + addition)
        os.utime(path)  # now: after every output of the run
        return planned(repo, workdir)
    finally:
        path.write_bytes(text)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def grid() -> int:
    """Models of each kind: SMALL's size at each window of the test preset."""
    return len(SMALL["corpus"]["sizes"]) * len(yaml.safe_load((REPO / "presets/test.yaml").read_text())["windows"])


def test_metrics_edit_reruns_word_retrieval_only(finished):
    """Word retrieval, contextual retrieval (fastText's too, not its training), and the monolingual BERTs'
    alignments that rank with it (not their CKA): the chance levels that transfer scoring and the gathers import
    are in xling.evaluate.ranks, not there."""
    plan = plan_after_edit(finished, "xling/evaluate/metrics.py")
    assert plan == {
        "word_retrieval": 3 * grid(),
        "word_retrieval_table": 1,
        "word_retrieval_pos": 1,
        "findings": 1,
        "mono_word_alignment": 1,
        "monolingual_words_table": 1,
        "mono_sentence_alignment": 1,
        "monolingual_sentences_table": 1,
        "report": 1,
        "all": 1,
        **contextual_retrieval(),
        "fasttext_retrieval": 1,
    }


def aligned() -> int:
    """Aligned models of the run: one base BERT, each amount of parallel data."""
    preset = yaml.safe_load((REPO / "presets/test.yaml").read_text())
    return len(preset["alignment"]["finetune"]["sizes"])


def contextual_retrieval() -> dict[str, int]:
    """Contextual retrieval of the language experiments' BERTs and the aligned models, its table and analyses (their
    code imports xling.evaluate.metrics)."""
    return {
        "contextual_retrieval": len(language_berts(preset_plan("test", **SMALL))) + aligned(),
        "contextual_retrieval_table": 1,
        "contextual_retrieval_frequency": 1,
        "contextual_retrieval_pos": 1,
    }


def test_synthetic_generator_edit_reruns_everything_downstream(finished):
    """Every job of the run descends from the synthetic data."""
    assert plan_after_edit(finished, "xling/data/synthetic/world.py") == finished[2]


def bert_branch(whole: dict[str, int]) -> dict[str, int]:
    """The jobs of the BERT pretraining rules and everything downstream of them; not the static models."""
    return {
        "bert_pretrain": grid(), "bert_extract": whole["bert_extract"], "bert_reduce": grid(),
        "word_retrieval": grid(),  # the BERT rows only
        "word_retrieval_table": 1, "word_retrieval_pos": 1,
        "token_translation": whole["token_translation"], "token_translation_table": 1,
        "token_translation_samples_table": 1,
        "sentence_retrieval": whole["sentence_retrieval"], "tatoeba_table": 1, "bucc_table": 1,
        "finetune": whole["finetune"] - 2 * grid(),  # not GloVe's, Word2Vec's
        "transfer_table": 1, "findings": 1, "report": 1, "all": 1, **contextual_retrieval(),
        # the aligned model (fine-tuned from the BERT) and the rotations learned on the BERT, one per language
        "align_finetune": aligned(), "rotation": whole["rotation"],
        # the monolingual BERTs (the pivot, xa, en') and every comparison of them
        "mono_pretrain": 3, "mono_word_means": 2, "mono_word_alignment": 1, "mono_sentence_alignment": 1, "cka": 2,
        "monolingual_words_table": 1, "monolingual_sentences_table": 1, "cka_table": 1,
    }  # fmt: skip


def test_bert_trainer_edit_reruns_the_bert_branch(finished):
    """The `python -m xling.models.bert` rules: their code version covers that module and its imports."""
    assert plan_after_edit(finished, "xling/models/bert.py") == bert_branch(finished[2])


def test_masking_edit_reruns_the_pretraining_and_what_follows(finished):
    """The masking code is imported by the trainer alone: every BERT pretraining reruns, and what follows."""
    assert plan_after_edit(finished, "xling/models/mlm_data.py") == bert_branch(finished[2])


def test_findings_edit_reruns_the_findings_and_the_report(finished):
    assert plan_after_edit(finished, "xling/evaluate/findings/core.py") == {"findings": 1, "report": 1, "all": 1}


def test_report_figures_edit_reruns_the_report_only(finished):
    assert plan_after_edit(finished, "xling/report/figures.py") == {"report": 1, "all": 1}


def test_touched_but_unchanged_module_reruns_nothing(finished):
    """A new time alone (a git checkout) reruns nothing: code versions are by content."""
    assert plan_after_edit(finished, "xling/evaluate/metrics.py", edit=False) == {}


def test_module_no_rule_of_the_run_imports_reruns_nothing(finished):
    """Sentence splitting serves the real-data parsers only: the synthetic run does not use it."""
    assert plan_after_edit(finished, "xling/data/sentences.py") == {}


# --- what changes no code reruns nothing (a-c) ----------------------------------------------------------------


def test_comment_edit_reruns_nothing(finished):
    """A module every rule imports, with a comment line more."""
    assert plan_after_edit(finished, "xling/logs.py", addition=b"# a planted comment\n") == {}


def test_docstring_edit_reruns_nothing(finished):
    """The trainer's module docstring rewritten: the BERTs stay."""
    repo = finished[0]
    text = (repo / "xling/models/mlm_data.py").read_text()
    docstring = ast.get_docstring(ast.parse(text), clean=False)
    assert docstring, "the planted edit needs a module docstring"
    rewritten = text.replace(docstring, docstring + "\n\nA planted paragraph.", 1).encode()
    path = repo / "xling/models/mlm_data.py"
    before = path.read_bytes()
    try:
        path.write_bytes(rewritten)
        assert planned(repo, finished[1]) == {}
    finally:
        path.write_bytes(before)


def test_touching_every_file_of_the_checkout_reruns_nothing(finished):
    """A checkout, a pull or a copy gives every file a new time: Snakemake's script-time trigger is off (the
    workflow profile) and the code versions are by content."""
    repo, workdir, _ = finished
    times = {path: path.stat() for path in repo.rglob("*") if path.is_file()}
    try:
        for path in times:
            os.utime(path)
        assert planned(repo, workdir) == {}
    finally:
        for path, stat in times.items():
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_finished_run_in_a_fresh_copy_at_another_path_plans_nothing(finished, tmp_path):
    """The checkout copied anew (new times, as a clone gives) to another path, the run's results and
    .snakemake beside it: nothing is planned, since no input or param holds a path of the checkout."""
    repo, workdir, _ = finished
    moved_repo, moved_workdir = tmp_path / "elsewhere" / "repo", tmp_path / "elsewhere" / "work"
    shutil.copytree(repo, moved_repo, copy_function=shutil.copy)  # shutil.copy: new times
    shutil.copytree(workdir, moved_workdir, symlinks=True)  # the results keep theirs, as `cp -a` or rsync
    assert planned(moved_repo, moved_workdir) == {}


def test_finished_run_planned_from_another_checkout_plans_nothing(finished, tmp_path):
    """A working directory outside the checkout, and a second clone of the same code elsewhere (a path of another
    depth): nothing is planned. The report reads files of the checkout (the protocol table, the papers' numbers),
    whose paths from the working directory change with the clone: they are params by content, not inputs."""
    repo, workdir, _ = finished
    clone = tmp_path / "a" / "second" / "clone"
    shutil.copytree(repo, clone, copy_function=shutil.copy)  # new times, as a clone gives
    assert planned(clone, workdir) == {}


def test_protocol_table_edit_rerenders_the_report_only(finished):
    """The report's files of the checkout are versioned by content: an edit of one re-renders the report."""
    assert plan_after_edit(finished, "resources/protocol.yaml", addition=b"\n# planted\n") == {"report": 1, "all": 1}


# --- the switch: code changes rerun nothing this time (f) -----------------------------------------------------


def accept_code(finished, *configs: str) -> subprocess.CompletedProcess:
    """`python -m xling.plan.accept_code` on the run, from the copy's package."""
    repo, workdir, _ = finished
    return subprocess.run(
        [sys.executable, "-m", "xling.plan.accept_code", "--snakefile", str(repo / "Snakefile"),
         "--configfile", str(repo / "presets/test.yaml"), str(repo / "small.yaml"), *configs],
        cwd=workdir, env=environment(PYTHONPATH=str(repo)), capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_accepted_code_change_reruns_nothing_but_a_setting_still_does(finished, tmp_path):
    """A refactor of metrics: the switch marks its users current without running them; the next ordinary
    run plans nothing; a real settings change still reruns; the switch refuses when one is pending and
    touches nothing then. Last in this file: it restores the run's state by accepting the original code."""
    repo, workdir, _ = finished
    path = repo / "xling/evaluate/metrics.py"
    text = path.read_bytes()
    setting = tmp_path / "setting.yaml"
    setting.write_text(yaml.safe_dump({"retrieval": {"min_count": 3}}))
    try:
        path.write_bytes(text + BODY_EDIT)
        edited = planned(repo, workdir)
        assert edited, "the edit is a code change"
        refused = accept_code(finished, str(setting))
        assert refused.returncode == 1 and "word_retrieval" in refused.stderr, refused.stderr[-3000:]
        assert planned(repo, workdir) == edited, "a refused switch touches nothing"
        accepted = accept_code(finished)
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr[-3000:]
        assert planned(repo, workdir) == {}, "the accepted code is current"
        dry = snakemake(
            repo, workdir, "-n", "--configfile", str(repo / "presets/test.yaml"), str(repo / "small.yaml"), str(setting)
        )
        assert dry.returncode == 0 and "word_retrieval" in dry.stdout, "a settings change still reruns"
    finally:
        path.write_bytes(text)
        restored = accept_code(finished)
        assert restored.returncode == 0, restored.stderr[-3000:]
    assert planned(repo, workdir) == {}
