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
import sys
from types import SimpleNamespace

import yaml

sys.path.insert(0, workflow.basedir)  # xling from this checkout, also when parsing the workflow
from xling.plan.code import CodeVersions  # noqa: E402
from xling.plan.data import Layout, SyntheticData  # noqa: E402
from xling.plan.models import ANY_LM, BERT_LM, aligned_base, hf_slug, parse_grid  # noqa: E402

# Scripts and `python -m xling...` commands import the package from this checkout, in any environment
# (venv, --sdm conda, or a SLURM job step that re-evaluates this file).
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in (workflow.basedir, os.environ.get("PYTHONPATH")) if p)
)
from xling.data.alignment import pairs_needed  # noqa: E402
from xling.evaluate.findings import TABLES as FINDINGS_TABLES  # noqa: E402
from xling.models.ablation import parse_setting  # noqa: E402
from xling.runtime import computed, without_runtime  # noqa: E402

with open(os.path.join(workflow.basedir, "schemas", "config.schema.yaml"), encoding="utf-8") as handle:
    SCHEMA = yaml.safe_load(handle)
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


def _seed_of(*parts):
    from xling.models.mlm_data import seed_of  # torch: imported when a monolingual job is planned, not at parse

    return seed_of(*parts)


# Each study's planning (xling.plan): which languages, models and variants, the input functions and params. Its
# DataSource is set by rules/data.smk, the one place that asks which source the run uses.
from xling.plan.ablation import PAIR as ABLATION_PAIR, SETTING as ABLATION_SETTING  # noqa: E402
from xling.plan.alignment import ANALYSIS_BY, FINETUNE_SETTINGS as ALIGN_SETTINGS  # noqa: E402
from xling.plan.study import Plan  # noqa: E402

PLAN = Plan(config, None, SCHEMA,
            SimpleNamespace(computed=computed, parse_setting=parse_setting, seed_of=_seed_of))
HF_MODELS = PLAN.hf_models
LANGUAGE, SENT, POS = PLAN.language, PLAN.sent, PLAN.pos
TRANSFER, FINETUNE_SETTINGS, TRANSFER_ROTATIONS = PLAN.transfer, PLAN.finetune_settings, PLAN.transfer_rotations
ALIGN, ALIGN_FT, ROTATION, FASTTEXT = PLAN.align, PLAN.align_ft, PLAN.rotation, PLAN.fasttext
ALIGN_RETRIEVAL, ALIGN_ANALYSIS = ALIGN["retrieval"], ALIGN["analysis"]
CONTEXTUAL_ROTATIONS = PLAN.contextual_rotations
ABLATION = PLAN.ablation
MONO, CKA, MONO_CONTEXTUAL = PLAN.mono, PLAN.cka, PLAN.mono_contextual
MONO_SIZE, MONO_WINDOW, MONO_GRID, EN_PRIME = PLAN.mono_size, PLAN.mono_window, PLAN.mono_grid, PLAN.en_prime

# The plan's functions that rule all, rules/report.smk, the gather rules and the table functions below call (the
# table registry replaces them).
window_sweep, model_dir = PLAN.window_sweep, PLAN.model_dir
retrieval_targets = PLAN.retrieval_targets
language_models, translation_langs, tatoeba_langs, bucc_langs = (
    PLAN.language_models, PLAN.translation_langs, PLAN.tatoeba_langs, PLAN.bucc_langs)
_translation_parts, _retrieval_parts = PLAN.translation_parts, PLAN.retrieval_parts
transfer_parts, ablation_transfer_parts = PLAN.transfer_parts, PLAN.ablation_transfer_parts
align_pair_langs, contextual_retrieval_lms = PLAN.align_pair_langs, PLAN.contextual_retrieval_lms
mono_targets, mono_contextual_langs = PLAN.mono_targets, PLAN.mono_contextual_langs
align_finetune_targets, align_baselines_targets = PLAN.align_finetune_targets, PLAN.align_baselines_targets
ablation_targets = PLAN.ablation_targets  # rule all


def report_config():
    """The report's params: the settings it reads (xling.plan.grid), runtime settings left out."""
    return without_runtime(PLAN.report_config())


def window_sweep_tables():
    return [f"{RESULTS}/eval/retrieval/{model}/{size}-w{window}.parquet" for model, size, window in window_sweep()]


def retrieval_tables():
    """The word-retrieval tables the run gathers: the models x sizes x windows grid, the window sweep's that are
    not in it, then each Hugging Face checkpoint's."""
    tables = grid(f"{RESULTS}/eval/retrieval/{{model}}/{{size}}-w{{window}}.parquet")
    tables += [table for table in window_sweep_tables() if table not in tables]
    return tables + [f"{RESULTS}/eval/retrieval/hf/{slug}.parquet" for slug in HF_MODELS]


def ablation_report_tables():
    """{"ablation": its Parquet} when the run trains ablations (report and findings input)."""
    return {"ablation": f"{RESULTS}/eval/ablation.parquet"} if ablation_transfer_parts() else {}


def language_table_specs():
    """Final table key -> (inputs, output stem); a table without inputs is not built."""
    return {
        "token_translation": (_translation_parts("table"), f"{RESULTS}/eval/token_translation"),
        "token_translation_samples": (_translation_parts("samples"), f"{RESULTS}/eval/token_translation_samples"),
        "tatoeba": (_retrieval_parts("tatoeba"), f"{RESULTS}/eval/tatoeba"),
        "bucc": (_retrieval_parts("bucc"), f"{RESULTS}/eval/bucc"),
        "transfer": (transfer_parts(), f"{RESULTS}/eval/transfer"),
    }


def language_report_tables():
    """{report table key: Parquet path} of the language and transfer tables this run builds (report inputs)."""
    return {key: f"{stem}.parquet" for key, (parts, stem) in language_table_specs().items() if parts}


def findings_tables():
    """{table key: Parquet path} of the run's tables the findings are judged on (xling.evaluate.findings.TABLES;
    one the run does not build makes its claims "not measured")."""
    tables = {"word_retrieval": f"{RESULTS}/eval/word_retrieval.parquet", **language_report_tables(),
              **alignment_report_tables(), **ablation_report_tables(), **monolingual_report_tables()}
    if POS["splits"]:
        tables["word_retrieval_pos"] = f"{RESULTS}/eval/word_retrieval_pos.parquet"
    return {key: path for key, path in tables.items() if key in FINDINGS_TABLES}


def language_tables():
    """Every final language table (Parquet and CSV) this run builds, for rule all."""
    return [f"{stem}.{ext}" for _, (parts, stem) in language_table_specs().items() if parts for ext in ("parquet", "csv")]


def alignment_tables():
    """Every final table of the alignment study this run builds (Parquet and CSV), for rule all. On synthetic data
    the splits must fit its parallel text: a plan that needs more stops here, not in the word_pairs jobs."""
    if not align_pair_langs():
        return []
    need = pairs_needed(ALIGN["test_sentences"], ALIGN["dev_sentences"], ALIGN["train_sentences"])
    have = DATA_SOURCE.parallel_sentences
    if have is not None and need > have:
        raise ValueError(f"alignment.test_sentences + dev_sentences + max(train_sentences) = {need} sentence pairs, "
                         f"but synthetic.parallel_sentences is {have}: lower the "
                         "alignment splits (presets/demo.yaml: 200 + 100 + 700) or raise the synthetic pairs")
    stems = ["word_pairs"]
    if contextual_retrieval_lms():
        stems += ["contextual_retrieval", "contextual_retrieval_frequency"]
        if POS["splits"]:
            stems.append("contextual_retrieval_pos")
    return [f"{RESULTS}/eval/{stem}.{ext}" for stem in stems for ext in ("parquet", "csv")]


def alignment_report_tables():
    """{report table key: Parquet path} of the alignment study's gathered tables this run builds (rules/align.smk's
    alignment_tables; the fastText baseline's rows are among contextual retrieval's)."""
    tables = {os.path.basename(path)[: -len(".parquet")]: path for path in alignment_tables() if path.endswith(".parquet")}
    return {key: path for key, path in tables.items() if key.startswith("contextual_retrieval")}


def monolingual_table_specs():
    """Final table key -> (inputs, output stem), as language_table_specs."""
    words = [lang for lang in mono_targets() if lang in retrieval_targets()]
    sentences = [lang for lang in mono_targets() if lang in tatoeba_langs()]
    return {
        "monolingual_words": ([f"{RESULTS}/eval/monolingual/words/{MONO_GRID}/{lang}.parquet" for lang in words],
                              f"{RESULTS}/eval/monolingual_words"),
        "monolingual_sentences": (
            [f"{RESULTS}/eval/monolingual/sentences/{MONO_GRID}/{lang}.parquet" for lang in sentences],
            f"{RESULTS}/eval/monolingual_sentences"),
        "cka": ([f"{RESULTS}/eval/cka/{MONO_GRID}/{mono}.parquet" for mono in [EN_PRIME, *mono_targets()]]
                if mono_targets() else [], f"{RESULTS}/eval/cka"),
        "monolingual_contextual": (
            [f"{RESULTS}/eval/monolingual/contextual/{MONO_GRID}/{lang}.parquet" for lang in mono_contextual_langs()],
            f"{RESULTS}/eval/monolingual_contextual"),
    }


def monolingual_report_tables():
    """{report table key: Parquet path} of the tables this run builds (report inputs)."""
    return {key: f"{stem}.parquet" for key, (parts, stem) in monolingual_table_specs().items() if parts}


def monolingual_tables():
    """Every final table (Parquet and CSV) of this file, for rule all."""
    return [f"{stem}.{ext}" for parts, stem in monolingual_table_specs().values() if parts for ext in ("parquet", "csv")]
