# Helpers shared by the workflow: paths of the run, code versions, and the plan (xling.plan: each study's planning).
#
# How a setting reaches a job decides what reruns when it changes (Snakemake's default rerun triggers):
#   params:     only settings that change a number the job writes; a change reruns the job and all
#               downstream of it. Presentation settings (report.*, retrieval.report_layer) are params of
#               the report alone.
#   threads:, resources:
#               every setting that changes no number (xling.runtime.RUNTIME: threads, mem_mb, device,
#               inference batch sizes, query blocks, checkpoint and log intervals); a change reruns nothing.
#               Scripts read snakemake.threads and snakemake.resources.<name>, shell commands {threads} and
#               {resources.<name>}; a profile may override them per rule (set-threads, set-resources).
#               Resources hold no null: a null device is "auto".
#   the DAG:    languages, sizes, windows, models and data locations are wildcards and file lists; the
#               fetch jobs read data.* from the config to know where a file comes from (checksum-verified).
import json
import os
import posixpath
import re
import shlex
import sys
from types import SimpleNamespace

import yaml

sys.path.insert(0, workflow.basedir)  # xling from this checkout, also when parsing the workflow
from xling.plan import tables as table_registry  # noqa: E402
from xling.plan.alignment import check_parallel_text  # noqa: E402
from xling.plan.code import CodeVersions  # noqa: E402
from xling.plan.data import LOW_RESOURCE_SPLITS, Layout, SyntheticData  # noqa: E402
from xling.plan.models import ANY_LM, BERT_LM, LANG, aligned_base, hf_slug, parse_grid  # noqa: E402

# Scripts and `python -m xling...` commands import the package from this checkout, in any environment
# (venv, --sdm conda, or a SLURM job step that re-evaluates this file).
os.environ.update(PYTHONPATH=os.pathsep.join(p for p in (workflow.basedir, os.environ.get("PYTHONPATH")) if p))
# Jobs never reach the Hugging Face hub: its checkpoints are staged by a local rule (rules/checkpoints.smk), which
# alone goes online. Inherited by every job, locally and through sbatch --export=ALL; `HF_HUB_OFFLINE=0` overrides.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from xling.runtime import computed, without_runtime  # noqa: E402

with open(os.path.join(workflow.basedir, "schemas", "config.schema.yaml"), encoding="utf-8") as handle:
    SCHEMA = yaml.load(handle, Loader=yaml.CSafeLoader)  # libyaml: 0.14 s of every parse in pure Python
RUN = config["run"]
RESULTS = f"results/{RUN}"
DATA = f"{RESULTS}/data"
LOGS = f"logs/{RUN}"
BENCH = f"benchmarks/{RUN}"

LANGS = config["languages"]
PIVOT = LANGS[0]
TARGETS = LANGS[1:]
SIZES = config["corpus"]["sizes"]
WINDOWS = config["windows"]
MODELS = config["models"]
# the canonical files under DATA; which languages have which of them: DATA_SOURCE (rules/data.smk, xling.plan.data)
LAYOUT = Layout(DATA, PIVOT)

CODE_VERSIONS = CodeVersions(workflow.basedir)  # each file hashed once per parse


def code_version(entry, shell=""):
    """The `code` param of a rule: a version of `entry` (its script, or the module it runs with `python -m`;
    a path in this checkout) and of the xling modules it imports, by content (xling.plan.code); `shell` is
    the rule's shell command, when it has one. Snakemake compares params by value, so a code change reruns
    the job and what follows, and a moved, cloned or touched checkout reruns nothing."""
    return CODE_VERSIONS(entry, shell)


def grid(pattern, **extra):
    """Expand `pattern` over the models x sizes x windows grid of the study."""
    return expand(pattern, model=MODELS, size=SIZES, window=WINDOWS, **extra)


# Each study's planning (xling.plan): which languages, models and variants, the input functions and params. Its
# DataSource is set by rules/data.smk, the one place that asks which source the run uses.
from xling.plan.ablation import PAIR as ABLATION_PAIR, SETTING as ABLATION_SETTING  # noqa: E402
from xling.plan.alignment import ANALYSIS_BY, FINETUNE_SETTINGS as ALIGN_SETTINGS  # noqa: E402
from xling.plan.study import Plan  # noqa: E402

PLAN = Plan(config, None, SCHEMA, SimpleNamespace(computed=computed))
HF_MODELS = PLAN.hf_models
LANGUAGE, SENT, POS = PLAN.language, PLAN.sent, PLAN.pos
TRANSFER, FINETUNE_SETTINGS, TRANSFER_ROTATIONS = PLAN.transfer, PLAN.finetune_settings, PLAN.transfer_rotations
ALIGN, ALIGN_FT, ROTATION, FASTTEXT = PLAN.align, PLAN.align_ft, PLAN.rotation, PLAN.fasttext
ALIGN_RETRIEVAL, ALIGN_ANALYSIS = ALIGN["retrieval"], ALIGN["analysis"]
# the chosen aligner's settings only: the other aligner's settings rerun no word-pair job
ALIGNER_SETTINGS = ALIGN["fast_align"] if ALIGN["aligner"] == "fast_align" else ALIGN["eflomal"]
CONTEXTUAL_ROTATIONS = PLAN.contextual_rotations
ABLATION = PLAN.ablation
MONO, CKA, MONO_CONTEXTUAL = PLAN.mono, PLAN.cka, PLAN.mono_contextual
MONO_SIZE, MONO_WINDOW, MONO_GRID, EN_PRIME = PLAN.mono_size, PLAN.mono_window, PLAN.mono_grid, PLAN.en_prime

# The plan's functions that rule all and the report call.
window_sweep, model_dir = PLAN.window_sweep, PLAN.model_dir
align_finetune_targets, align_baselines_targets = PLAN.align_finetune_targets, PLAN.align_baselines_targets
ablation_targets = PLAN.ablation_targets  # rule all


def report_config():
    """The report's params: the settings it reads (xling.plan.grid), runtime settings left out."""
    return without_runtime(PLAN.report_config())


def table_plan():
    """What the table registry (xling.plan.tables) reads of this run's plan: the attributes its docstring lists."""
    return SimpleNamespace(
        results=RESULTS,
        pivot=PIVOT,
        models=MODELS,
        sizes=SIZES,
        windows=WINDOWS,
        hf_slugs=list(HF_MODELS),
        window_sweep=PLAN.window_sweep,
        language_models=PLAN.language_models,
        translation_langs=PLAN.translation_langs,
        tatoeba_langs=PLAN.tatoeba_langs,
        bucc_langs=PLAN.bucc_langs,
        transfer_runs=PLAN.transfer_runs,
        seeds=TRANSFER["seeds"],
        freeze=TRANSFER["freeze"],
        align_pair_langs=PLAN.align_pair_langs,
        contextual_retrieval_lms=PLAN.contextual_retrieval_lms,
        ablation_runs=PLAN.ablation_runs,
        ablation_seeds=PLAN.ablation_seeds,
        mono_targets=PLAN.mono_targets,
        retrieval_targets=PLAN.retrieval_targets,
        mono_contextual_langs=PLAN.mono_contextual_langs,
        mono_grid=MONO_GRID,
        en_prime=EN_PRIME,
        pos_splits=POS["splits"],
    )


def table_inputs(consumer):
    """{table: Parquet path (the training logs: our BERTs' directories)} of the run's tables that `consumer`
    (findings, report) reads: a table the run does not make is left out (its claims are "not measured", its
    report sections skipped)."""
    return table_registry.inputs(consumer, table_plan())


def table_targets():
    """Every result table the run makes, Parquet and CSV (rule all). On synthetic data the alignment splits must
    fit its parallel text: a plan that needs more stops here, not in the word_pairs jobs."""
    if PLAN.align_pair_langs():
        check_parallel_text(
            ALIGN["test_sentences"], ALIGN["dev_sentences"], ALIGN["train_sentences"], PLAN.source.parallel_sentences
        )
    return table_registry.targets(table_plan())
