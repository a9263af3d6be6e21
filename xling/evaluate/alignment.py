"""The contextual-alignment study's rows named as Cao, Kitaev and Klein (2020) name them, for the findings and
the report alike: an lm id aligned/{n}/{base} is its base BERT fine-tuned for alignment on n sentence pairs per
language; a base BERT's rows with transform (XNLI) or method (retrieval) rotation-word / rotation-sentence are its
rotation baselines; fasttext/{size} is the sentence-augmented fastText. Each gets the paper's setting name
(published_results.yaml) and the amount of parallel data it used. XNLI rows come from Cao et al.'s own fine-tunings
(variants f{k}-cao and f{k}-rot{kind}, xling.plan.transfer); the language experiments' tables leave those out
(`language_study_rows`).

Light on purpose (pandas only): the report's environment imports it.
"""

from __future__ import annotations

import json
import re

import pandas as pd

from xling.plan.transfer import is_alignment_variant, rotation_kind

ALIGNED_LM = re.compile(r"aligned/(\d+)(?:-[a-z][a-z0-9_]*)*/(.+)")  # xling.plan.models.ALIGNED_ID
FASTTEXT = "fasttext"
#: Cao et al.'s names of the settings (published_results.yaml), from our lm kind and transform / method
CAO_SETTINGS = {
    ("base", "none"): "base_bert",
    ("base", "rotation-word"): "word_aligned_rotation",
    ("base", "rotation-sentence"): "sentence_aligned_rotation",
    ("aligned", "none"): "word_aligned_finetuned",
    ("fasttext", "rotation-word"): "aligned_fasttext_sentence",
}


def aligned_lm(lm: str) -> tuple[str, int]:
    """(base lm, parallel sentences per language) of an lm id: aligned/{n}[-{lang}...]/{base} -> (base, n);
    else (lm, 0)."""
    match = ALIGNED_LM.fullmatch(lm)
    return (match[2], int(match[1])) if match else (lm, 0)


def cao_setting(lm: str, method: str) -> str | None:
    """Cao et al.'s name of one of our settings (None when the paper has no such setting)."""
    kind = FASTTEXT if lm.split("/", 1)[0] == FASTTEXT else ("aligned" if ALIGNED_LM.fullmatch(lm) else "base")
    return CAO_SETTINGS.get((kind, method))


def _parallel(rows: pd.DataFrame, lms: pd.Series) -> pd.Series:
    """Parallel sentences per row: an aligned model's n, else the rotation's (column parallel_sentences)."""
    from_lm = lms.map(lambda lm: aligned_lm(lm)[1])
    if "parallel_sentences" in rows:
        return from_lm.where(from_lm > 0, rows["parallel_sentences"].fillna(0)).astype(int)
    return from_lm


def cao_xnli(transfer: pd.DataFrame) -> pd.DataFrame:
    """Zero-shot XNLI test accuracy of the alignment study: the selected test rows of base and aligned BERTs,
    with `base` (the base lm), `parallel_sentences` (0: none) and `setting` (Cao et al.'s name, CAO_SETTINGS);
    a rotation's n is in its rows' shift_settings. Empty when the table has no such row (or no lm column)."""
    if "lm" not in transfer:
        return transfer.iloc[0:0]
    rows = transfer[
        (transfer["task"] == "xnli")
        & (transfer["split"] == "test")
        & (transfer["metric"] == "accuracy")
        & (transfer["train_transform"] == "none")
        & transfer["selected"].astype(bool)
    ]
    if "variant" in rows:  # Cao et al.'s fine-tunings only (tables written before variants: every row)
        rows = _rotation_pivot_rows(rows[rows["variant"].map(is_alignment_variant)])
    rows = rows.assign(
        base=rows["lm"].map(lambda lm: aligned_lm(lm)[0]),
        parallel_sentences=rows["lm"].map(lambda lm: aligned_lm(lm)[1]),
        setting=[cao_setting(lm, t) for lm, t in zip(rows["lm"], rows["transform"], strict=True)],
    )
    rows["setting"] = rows["setting"].replace("base_bert", "zero_shot_base_bert")  # Table 1's name of it
    rotated = rows["transform"].str.startswith("rotation")
    if "shift_settings" in rows:
        rotation_n = rows["shift_settings"].map(_rotation_sentences)
        rows["parallel_sentences"] = rotation_n.where(rotated, rows["parallel_sentences"]).astype(int)
    bases = set(rows.loc[(rows["parallel_sentences"] > 0) | rotated, "base"])
    return rows[rows["setting"].notna() & rows["base"].isin(bases)]


def _rotation_pivot_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """A rotation's fine-tuning (f{k}-rot{kind}) as its Table 1 row: its rotated languages and the languages it
    does not rotate (the pivot: "none" rows) under transform rotation-{kind}; its unrotated other languages left
    out."""
    kind = rows["variant"].map(rotation_kind)
    rotated = rows["transform"].str.startswith("rotation")
    keys = ["lm", "variant", "seed", "lang"]
    has_rotation = pd.MultiIndex.from_frame(rows[keys]).isin(pd.MultiIndex.from_frame(rows.loc[rotated, keys]))
    unrotated = kind.notna() & ~rotated & ~has_rotation
    rows = rows[kind.isna() | rotated | unrotated]
    return rows.assign(transform=rows["transform"].where(~unrotated[rows.index], "rotation-" + kind[rows.index]))


def language_study_rows(transfer: pd.DataFrame) -> pd.DataFrame:
    """The transfer rows of every study but Cao et al.'s: without the alignment study's own fine-tunings of a base
    BERT (f{k}-cao, f{k}-rot{kind}), which share its lm id with the language experiments'."""
    if "variant" not in transfer:
        return transfer
    return transfer[~transfer["variant"].map(is_alignment_variant)]


def _rotation_sentences(settings) -> int:
    """The parallel sentences of the rotations in a transfer row's shift_settings (JSON)."""
    if not isinstance(settings, str) or not settings:
        return 0
    return int((json.loads(settings).get("rotation") or {}).get("sentences") or 0)


def cao_retrieval(table: pd.DataFrame) -> pd.DataFrame:
    """Contextual word retrieval rows with `base`, `parallel_sentences`, `setting` (Cao et al.'s name) and
    `retrieval` (contextual / non_contextual), as Table 3 reads them."""
    rows = table.assign(
        base=table["lm"].map(lambda lm: aligned_lm(lm)[0]),
        setting=[cao_setting(lm, m) for lm, m in zip(table["lm"], table["method"], strict=True)],
        retrieval=table["contextual"].map(lambda c: "contextual" if c else "non_contextual"),
    )
    rows = rows.assign(parallel_sentences=_parallel(rows, rows["lm"]))
    return rows[rows["setting"].notna()]
