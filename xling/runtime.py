"""Settings that change no number: how a job runs (threads, memory, device, inference batch sizes,
checkpoint and log intervals, where data files are cached), not what it computes.

One table, read by the workflow (these settings reach jobs as `threads:`/`resources:`, never as
`params:`, so changing one reruns nothing), by the BERT trainer (a checkpoint resumes across a change
of them) and by the result tables and the report (which record and show only the settings that
produced their numbers). Deliberately free of heavy imports: the Snakefile imports it when it parses.
"""

from __future__ import annotations

from collections.abc import Mapping

#: config block (dotted path) -> its keys that change no number
RUNTIME: dict[str, frozenset[str]] = {
    "data": frozenset({"cache", "lock", "mirror", "staged", "paths", "stage_mode", "download"}),
    "glove": frozenset({"threads", "mem_mb"}),
    "word2vec": frozenset({"threads"}),
    # not micro_batch_size: with dropout, the masks of a step depend on how its batch is split
    "bert": frozenset({"threads", "device", "checkpoint_every", "keep_checkpoints", "log_every"}),
    "represent": frozenset({"threads", "device", "batch_size"}),
    "retrieval": frozenset({"block"}),
    "language": frozenset({"threads", "device", "batch_size"}),
    "language.sentence_retrieval": frozenset({"block"}),
    "transfer": frozenset({"threads", "device", "batch_size", "checkpoint_every"}),
    "alignment": frozenset({"threads", "device", "batch_size"}),
    "alignment.retrieval": frozenset({"block"}),
    "alignment.finetune": frozenset({"threads", "device", "checkpoint_every"}),
    "alignment.rotation": frozenset({"block"}),
    "alignment.fasttext": frozenset({"threads"}),
}


def computed(block: str, settings: Mapping) -> dict:
    """The settings of config block `block` (dotted path) that change numbers: its runtime keys left out."""
    runtime = RUNTIME.get(block, frozenset())
    return {key: value for key, value in settings.items() if key not in runtime}


def without_runtime(config: Mapping, block: str = "") -> dict:
    """A copy of `config` (the block at dotted path `block`) without any runtime setting, at any depth."""
    out = {}
    for key, value in computed(block, config).items():
        path = f"{block}.{key}" if block else key
        out[key] = without_runtime(value, path) if isinstance(value, Mapping) else value
    return out
