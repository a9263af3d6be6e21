"""The registry of result tables, written once: each table's name, the per-job Parquet files gathered into it (its
parts, as a function of the run's plan), the columns the findings require of it, who reads it (the findings, the
report) and the figures the report draws from it. From it come the one gather rule, the findings' and the report's
inputs, the report's declared figures and rule all's tables. Standard library only: the Snakefile imports it.

A table lies at {results}/eval/{name}.parquet (and .csv). A gathered table is written by the gather rule from its
parts and exists when it has parts; one written by a rule of its own (`made`) exists when `made(plan)` says so.

The plan a table reads (`plan`, rules/common.smk's `table_plan()`) is any object with these attributes:
    results, pivot                                      where the run writes, its pivot language
    models, sizes, windows, hf_slugs                    the models x sizes x windows grid, the checkpoints
    window_sweep()                                      (model, size, window) of the static models' window sweep
    language_models(), translation_langs(), tatoeba_langs(), bucc_langs()     the language experiments
    transfer_runs(), seeds, freeze                      (task, lm, variant) fine-tunings, their seeds, freeze depths
    align_pair_langs(), contextual_retrieval_lms()      the alignment study
    ablation_runs(), ablation_seeds()                   (task, lm, variant) of Conneau et al.'s ablations, their seeds
    mono_targets(), retrieval_targets(), mono_contextual_langs(), mono_grid, en_prime     monolingual BERTs, CKA
    pos_splits                                          the pivot's treebank splits tagging words (none: no POS)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from xling.plan import figures as fig

FINDINGS, REPORT = "findings", "report"
Plan = Any  # the attributes listed in the module docstring


@dataclass(frozen=True)
class Figures:
    """PNGs one report section draws (`figures(config)`), when the report has this table and those in `needs`
    (`section`: its name, or the name of the blocks a module adds to another's section, xling.report.core.EXTRAS)."""

    section: str
    figures: Callable[[Mapping], list[dict]]
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    """A result table. `parts(plan)`: the Parquet files the gather rule concatenates (None: a rule of its own
    writes it, and `made(plan)` says whether the run has it); `marks(plan)`: {column: parts} of the gather's
    boolean columns; `columns`: what the findings require of it (given: they read it); `report`: whether the report
    reads it; `files(plan)`: for a table read from other files (training logs, per-query scores), those files;
    `loaded_as`: the name the report's sections know it by, when not its own (a table of files); `item_scale`: for a
    table whose parts each have a per-item table beside them (`<part stem>.items.parquet`), the factor from the items'
    fractions to the table's unit (100: percent), from which the gather adds each row's interval."""

    name: str
    parts: Callable[[Plan], list[str]] | None = None
    made: Callable[[Plan], bool] | None = None
    columns: tuple[str, ...] = ()
    report: bool = True
    figures: tuple[Figures, ...] = ()
    marks: Callable[[Plan], dict[str, list[str]]] | None = None
    files: Callable[[Plan], list[str]] | None = None
    loaded_as: str | None = None
    item_scale: float | None = None

    @property
    def consumers(self) -> tuple[str, ...]:
        return tuple(name for name, reads in ((FINDINGS, bool(self.columns)), (REPORT, self.report)) if reads)

    def path(self, plan: Plan, ext: str = "parquet") -> str:
        return f"{plan.results}/eval/{self.name}.{ext}"

    def built(self, plan: Plan) -> bool:
        """Whether the run makes this table."""
        if self.parts is not None:
            return bool(self.parts(plan))
        if self.files is not None:
            return bool(self.files(plan))
        return self.made(plan)


# ---------------------------------------------------------------------------------------------- parts


def _eval(plan: Plan, part: str) -> str:
    return f"{plan.results}/eval/{part}.parquet"


def window_sweep_parts(plan: Plan) -> list[str]:
    return [_eval(plan, f"retrieval/{model}/{size}-w{window}") for model, size, window in plan.window_sweep()]


def word_retrieval_parts(plan: Plan) -> list[str]:
    """The models x sizes x windows grid, the window sweep's models that are not in it, each checkpoint."""
    parts = [
        _eval(plan, f"retrieval/{model}/{size}-w{window}")
        for model in plan.models
        for size in plan.sizes
        for window in plan.windows
    ]
    parts += [part for part in window_sweep_parts(plan) if part not in parts]
    return parts + [_eval(plan, f"retrieval/hf/{slug}") for slug in plan.hf_slugs]


def _translation_parts(suffix: str) -> Callable[[Plan], list[str]]:
    return lambda plan: [
        _eval(plan, f"token_translation/{lm}/{plan.pivot}-{lang}{suffix}")
        for lm in plan.language_models()
        for lang in plan.translation_langs()
    ]


def _sentence_parts(task: str) -> Callable[[Plan], list[str]]:
    def parts(plan: Plan) -> list[str]:
        langs = plan.tatoeba_langs() if task == "tatoeba" else plan.bucc_langs()
        return [
            _eval(plan, f"sentence_retrieval/{task}/{lm}/{lang}") for lm in plan.language_models() for lang in langs
        ]

    return parts


def transfer_parts(plan: Plan) -> list[str]:
    return [
        _eval(plan, f"transfer/{task}/{lm}/{variant}/seed{seed}")
        for task, lm, variant in plan.transfer_runs()
        for seed in plan.seeds
    ]


def ablation_parts(plan: Plan) -> list[str]:
    """Each ablation's transfer tables: each task of ablation.tasks, each point of its fine-tuning grid, every
    seed."""
    return [
        _eval(plan, f"transfer/{task}/{lm}/{variant}/seed{seed}")
        for task, lm, variant in plan.ablation_runs()
        for seed in plan.ablation_seeds()
    ]


def _aligned(plan: Plan) -> bool:
    """Whether the run has contextual retrieval: a language with parallel text and a model to retrieve with."""
    return bool(plan.align_pair_langs() and plan.contextual_retrieval_lms())


def _mono_parts(level: str, langs: Callable[[Plan], list[str]]) -> Callable[[Plan], list[str]]:
    return lambda plan: [_eval(plan, f"monolingual/{level}/{plan.mono_grid}/{lang}") for lang in langs(plan)]


def _mono_words(plan: Plan) -> list[str]:
    return [lang for lang in plan.mono_targets() if lang in plan.retrieval_targets()]


def _mono_sentences(plan: Plan) -> list[str]:
    return [lang for lang in plan.mono_targets() if lang in plan.tatoeba_langs()]


def _cka_parts(plan: Plan) -> list[str]:
    targets = plan.mono_targets()
    return [_eval(plan, f"cka/{plan.mono_grid}/{mono}") for mono in [plan.en_prime, *targets]] if targets else []


def _bert_models(plan: Plan) -> list[str]:
    """Our BERTs' directories, whose training logs the report plots."""
    if "bert" not in plan.models:
        return []
    return [f"{plan.results}/models/bert/{size}-w{window}" for size in plan.sizes for window in plan.windows]


def _finetuned(plan: Plan) -> list[str]:
    """Each fine-tuning's directory, whose finetune.json the report draws the fine-tuning curves from."""
    return [
        f"{plan.results}/finetuned/{task}/{lm}/{variant}/seed{seed}"
        for task, lm, variant in plan.transfer_runs()
        for seed in plan.seeds
    ]


def _aligned_models(plan: Plan) -> list[str]:
    """The models fine-tuned for alignment (aligned/{n}/{base}), whose training logs the report plots."""
    return (
        [f"{plan.results}/models/{lm}" for lm in plan.contextual_retrieval_lms() if lm.startswith("aligned/")]
        if plan.align_pair_langs()
        else []
    )


# ---------------------------------------------------------------------------------------------- the registry

_LM = ("model", "size", "window")
REGISTRY: tuple[Table, ...] = (  # in the report's order of sections, so the figures are declared in it
    Table(
        "word_retrieval",
        parts=word_retrieval_parts,
        marks=lambda plan: {"window_sweep": window_sweep_parts(plan)},
        columns=(*_LM, "layer", "pair", "mrr"),
        figures=(Figures("word_retrieval", fig.word_retrieval), Figures("window_sweep", fig.window_sweep)),
    ),
    Table("findings", made=lambda plan: True),
    Table(
        "word_retrieval_ranks",
        files=lambda plan: [part.removesuffix(".parquet") + ".ranks.parquet" for part in word_retrieval_parts(plan)],
        # per query: the intervals of the findings and of the report's MRR table, which flags what they flag
        columns=(*_LM, "layer", "pair", "word", "target", "reciprocal_rank"),
    ),
    Table("word_retrieval_pos", made=lambda plan: bool(plan.pos_splits), columns=(*_LM, "layer", "pair", "pos", "mrr")),
    Table(
        "bert_training_logs",
        files=_bert_models,
        loaded_as="bert_training",
        figures=(Figures("bert_training", fig.pretraining),),
    ),
    Table(
        "token_translation",
        parts=_translation_parts(""),
        columns=(*_LM, "layer", "pair", "direction", "alpha", "convert_rate"),
        figures=(Figures("token_translation", fig.translation),),
        item_scale=1.0,
    ),  # convert_rate's interval
    Table("token_translation_samples", parts=_translation_parts(".samples")),
    Table(
        "tatoeba",
        parts=_sentence_parts("tatoeba"),
        columns=(*_LM, "layer", "report_layer", "lang", "direction", "variant", "accuracy"),
        figures=(Figures("sentence_retrieval", fig.sentence_retrieval),),
        item_scale=1.0,
    ),
    Table(
        "bucc",
        parts=_sentence_parts("bucc"),
        columns=(*_LM, "layer", "report_layer", "lang", "variant", "f1"),
        item_scale=1.0,
    ),  # the interval of f1
    Table(
        "transfer",
        parts=transfer_parts,
        columns=(
            *_LM,
            "task",
            "lang",
            "split",
            "freeze",
            "train_transform",
            "transform",
            "selected",
            "metric",
            "value",
        ),
        figures=(Figures("transfer_xnli", fig.transfer),),
        item_scale=100.0,
    ),
    # per item of each fine-tuning, the ablations' too: the findings' intervals over seeds and items
    Table(
        "transfer_items",
        report=False,
        files=lambda plan: [items_of(part) for part in (*transfer_parts(plan), *ablation_parts(plan))],
        columns=("lang", "split", "transform", "alpha", "metric", "item", "numerator", "denominator"),
    ),
    Table(
        "finetune_logs",
        files=_finetuned,
        loaded_as="finetuning",
        figures=(Figures("finetuning_curves", fig.finetuning_curves, needs=("transfer",)),),
    ),
    Table(
        "word_pairs",
        parts=lambda plan: [_eval(plan, f"word_pairs/{plan.pivot}-{lang}") for lang in plan.align_pair_langs()],
    ),
    Table(
        "alignment_logs",
        files=_aligned_models,
        loaded_as="alignment_training",
        figures=(Figures("alignment_curves", fig.alignment_curves, needs=("contextual_retrieval",)),),
    ),
    Table(
        "contextual_retrieval",
        parts=lambda plan: (
            [_eval(plan, f"contextual_retrieval/{lm}") for lm in plan.contextual_retrieval_lms()]
            if plan.align_pair_langs()
            else []
        ),
        columns=("lm", "lang", "contextual", "method", "accuracy"),
        figures=(Figures("alignment_xnli_retrieval", fig.alignment_xnli_retrieval, needs=("transfer",)),),
    ),
    Table(
        "contextual_retrieval_queries",
        report=False,  # per query: the findings' intervals
        files=lambda plan: (
            [
                _eval(plan, f"contextual_retrieval/{lm}").removesuffix(".parquet") + ".queries.parquet"
                for lm in plan.contextual_retrieval_lms()
            ]
            if plan.align_pair_langs()
            else []
        ),
        columns=(
            "lm",
            "lang",
            "contextual",
            "method",
            "parallel_sentences",
            "direction",
            "sentence",
            "position",
            "hit",
        ),
    ),
    Table(
        "contextual_retrieval_pos",
        made=lambda plan: _aligned(plan) and bool(plan.pos_splits),
        columns=("lm", "lang", "method", "parallel_sentences", "group", "pos", "accuracy"),
    ),
    Table(
        "contextual_retrieval_frequency",
        made=_aligned,
        columns=("lm", "lang", "method", "parallel_sentences", "rank_bin", "rank_difference", "accuracy"),
        figures=(Figures("alignment_frequency", fig.alignment_frequency),),
    ),
    Table(
        "ablation",
        parts=ablation_parts,
        columns=("lm", "task", "lang", "split", "transform", "selected", "metric", "seed", "value"),
        item_scale=100.0,
    ),
    Table(
        "monolingual_words",
        parts=_mono_parts("words", _mono_words),
        columns=("pair", "level", "layer", "lm_src", "lm_tgt", "p_at_1"),
        item_scale=1.0,
        figures=(Figures("monolingual_words", fig.monolingual_words),),
    ),
    Table(
        "monolingual_contextual",
        parts=_mono_parts("contextual", lambda plan: plan.mono_contextual_langs()),
        figures=(Figures("monolingual_contextual", fig.monolingual_contextual),),
    ),
    Table(
        "monolingual_sentences",
        parts=_mono_parts("sentences", _mono_sentences),
        columns=("pair", "layer", "method", "direction", "lm_src", "lm_tgt", "p_at_1"),
        item_scale=1.0,
        figures=(Figures("monolingual_sentences", fig.monolingual_sentences),),
    ),
    Table(
        "cka",
        parts=_cka_parts,
        columns=("pair", "comparison", "layer", "lm_src", "lm_tgt", "cka"),
        figures=(Figures("cka", fig.cka),),
    ),
)
TABLES: dict[str, Table] = {table.name: table for table in REGISTRY}
#: the columns each table the findings read must have, keyed as their inputs
FINDINGS_COLUMNS: dict[str, tuple[str, ...]] = {table.name: table.columns for table in REGISTRY if table.columns}


# ---------------------------------------------------------------------------------------------- what the rules use


def gathered(plan: Plan) -> dict[str, list[str]]:
    """{table: its parts} of every table the gather rule writes in this run."""
    return {table.name: table.parts(plan) for table in REGISTRY if table.parts is not None and table.built(plan)}


def marks(name: str, plan: Plan) -> dict[str, list[str]] | None:
    """{column: parts} of the boolean columns the gather of `name` adds (None: it adds none)."""
    table = TABLES[name]
    return table.marks(plan) if table.marks else None


def items_of(part: str) -> str:
    """The per-item table beside a part: `<part stem>.items.parquet`."""
    return part.removesuffix(".parquet") + ".items.parquet"


def items(name: str, plan: Plan) -> list[str]:
    """The per-item tables of `name`'s parts, in the parts' order (none: its rows get no interval)."""
    table = TABLES[name]
    return [items_of(part) for part in table.parts(plan)] if table.item_scale is not None else []


def inputs(consumer: str, plan: Plan) -> dict[str, str | list[str]]:
    """{table: Parquet path (the training logs: the model directories)} of the tables this run makes that
    `consumer` (FINDINGS or REPORT) reads."""
    return {
        table.name: table.files(plan) if table.files else table.path(plan)
        for table in REGISTRY
        if consumer in table.consumers and table.built(plan)
    }


def targets(plan: Plan) -> list[str]:
    """Parquet and CSV of every table the run makes (rule all)."""
    return [
        table.path(plan, ext)
        for table in REGISTRY
        if table.files is None and table.built(plan)
        for ext in ("parquet", "csv")
    ]


def expected_figures(config: Mapping, tables: Iterable[str]) -> list[dict]:
    """The PNGs the report draws for this config from these tables (their names, or the names the report's
    sections know them by), in the report's order: each table's figures whose section has every table it needs."""
    present = set(tables) | {TABLES[name].loaded_as for name in tables if name in TABLES and TABLES[name].loaded_as}
    present |= {table.name for table in REGISTRY if table.loaded_as in present}
    return [
        figure
        for table in REGISTRY
        if table.name in present
        for group in table.figures
        if set(group.needs) <= present
        for figure in group.figures(config)
    ]
