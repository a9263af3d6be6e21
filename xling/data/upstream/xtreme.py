"""Copies staged in XTREME's per-language layout -> the canonical files, where a split the study reads is not
staged and is cut from the staged dev sets (a stand-in, logged as one).

- XNLI (`dev-{lang}.tsv`: premise<TAB>hypothesis<TAB>label, no test, no MultiNLI): the dev sets are parallel (row i
  of every language is a translation of row i of English), so one split of the row indices serves every language:
  English training pairs (MultiNLI's stand-in) and every language's dev and test pairs never share a premise, and
  no test pair's translation is trained on.
- WikiAnn (`train-{pivot}.tsv`, `dev-{lang}.tsv`: token<TAB>tag, a blank line between sentences; the labelled test
  sets are not staged): the pivot's train is copied, each dev set is cut into dev and test sentences.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Iterable

from xling.data.formats import FormatError, PathLike, read_wikiann, read_xnli
from xling.data.upstream.archives import _log_counts
from xling.io import atomic_write

#: how the staged XNLI dev rows are shared out (by premise): MultiNLI's stand-in, then dev and test
XNLI_STAND_IN_SHARES = {"train": 0.6, "dev": 0.2, "test": 0.2}
#: the share of each staged WikiAnn dev set kept as dev; the rest stands in for the unstaged test set
WIKIANN_DEV_SHARE = 0.5
STAND_IN_SEED = 0


def xnli_parts(
    premises: list[str], shares: dict[str, float] = XNLI_STAND_IN_SHARES, seed: int = STAND_IN_SEED
) -> dict[str, list[int]]:
    """Row indices of each part: runs of rows with one premise go whole to one part, in a seeded order, until the
    part has its share of the rows. Indices are returned in file order."""
    groups: list[list[int]] = []
    for i, premise in enumerate(premises):
        if groups and premises[groups[-1][0]] == premise:
            groups[-1].append(i)
        else:
            groups.append([i])
    random.Random(seed).shuffle(groups)
    total, parts, done = sum(shares.values()), {}, 0
    bounds, acc = [], 0.0
    for name, share in shares.items():
        acc += share
        bounds.append((name, round(len(premises) * acc / total)))
    for name, bound in bounds:
        taken = []
        while groups and done < bound:
            group = groups.pop()
            taken.extend(group)
            done += len(group)
        parts[name] = sorted(taken)
    return parts


def xtreme_xnli_stand_in(
    folder: PathLike,
    outputs: dict[tuple[str, str], PathLike],
    pivot: str = "en",
    shares: dict[str, float] = XNLI_STAND_IN_SHARES,
    seed: int = STAND_IN_SEED,
) -> dict:
    """`{folder}/dev-{lang}.tsv` -> outputs[(part, lang)] for part in `shares` (e.g. ("train", "en"),
    ("test", "fr")). Every language's file must have the pivot's rows, labels in the same order (the parallel
    dev set); the first row that differs is named."""
    folder = Path(folder)
    pivot_rows = read_xnli(folder / f"dev-{pivot}.tsv")
    parts = xnli_parts([premise for premise, _, _ in pivot_rows], shares, seed)
    counts: dict[str, int] = {}
    for lang in dict.fromkeys(lang for _, lang in outputs):
        path = folder / f"dev-{lang}.tsv"
        rows = pivot_rows if lang == pivot else read_xnli(path)
        _check_parallel(path, rows, pivot_rows, folder / f"dev-{pivot}.tsv")
        for part, indices in parts.items():
            if (part, lang) in outputs:
                with atomic_write(outputs[part, lang]) as out:
                    out.writelines(f"{rows[i][0]}\t{rows[i][1]}\t{rows[i][2]}\n" for i in indices)
                counts[f"{part}-{lang}"] = len(indices)
    return _log_counts(f"XNLI stand-in from the staged dev sets in {folder} (seed {seed}, shares {shares})", counts)


def _check_parallel(path: Path, rows: list, pivot_rows: list, pivot_path: Path) -> None:
    if len(rows) != len(pivot_rows):
        raise FormatError(f"{path}: {len(rows)} rows, {pivot_path} has {len(pivot_rows)}: not the parallel dev set")
    for lineno, (row, pivot_row) in enumerate(zip(rows, pivot_rows, strict=True), start=1):
        if row[2] != pivot_row[2]:
            raise FormatError(
                f"{path}:{lineno}: label {row[2]!r}, {pivot_path} has {pivot_row[2]!r} on this line: "
                f"not the parallel dev set"
            )


def xtreme_wikiann_stand_in(
    folder: PathLike,
    out_dir: PathLike,
    languages: Iterable[str],
    pivot: str = "en",
    dev_share: float = WIKIANN_DEV_SHARE,
    seed: int = STAND_IN_SEED,
) -> dict:
    """`{folder}/train-{pivot}.tsv` -> `{out_dir}/{pivot}.train.tsv`; each `{folder}/dev-{lang}.tsv` -> a seeded
    `dev_share` of its sentences to `{lang}.dev.tsv`, the rest to `{lang}.test.tsv` (file order kept)."""
    folder, out_dir = Path(folder), Path(out_dir)
    counts: Counter = Counter()
    counts[f"{pivot}.train"] = _write_ner(read_wikiann(folder / f"train-{pivot}.tsv"), out_dir / f"{pivot}.train.tsv")
    for lang in languages:
        sentences = read_wikiann(folder / f"dev-{lang}.tsv")
        order = list(range(len(sentences)))
        random.Random(seed).shuffle(order)
        dev = set(order[: round(len(sentences) * dev_share)])
        for split, keep in (("dev", True), ("test", False)):
            chosen = [s for i, s in enumerate(sentences) if (i in dev) == keep]
            if not chosen:
                raise FormatError(
                    f"{folder / f'dev-{lang}.tsv'}: {len(sentences)} sentence(s), too few for dev and test"
                )
            counts[f"{lang}.{split}"] = _write_ner(chosen, out_dir / f"{lang}.{split}.tsv")
    return _log_counts(
        f"WikiAnn stand-in from the staged files in {folder} (sentences; seed {seed}, dev share {dev_share})",
        dict(counts),
    )


def _write_ner(sentences: list[tuple[list[str], list[str]]], path: Path) -> int:
    with atomic_write(path) as out:
        for tokens, tags in sentences:
            out.writelines(f"{token}\t{tag}\n" for token, tag in zip(tokens, tags, strict=True))
            out.write("\n")
    return len(sentences)
