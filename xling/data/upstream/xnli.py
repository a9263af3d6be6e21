"""XNLI from upstream -> xnli/{split}-{lang}.tsv: XNLI 1.0's dev and test, MultiNLI's English train, and files
already in XTREME's layout.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Iterable

from xling.data.formats import FormatError, PathLike, parse_xnli_label, read_xnli
from xling.data.upstream.archives import (
    _display,
    _log_counts,
    _one_line,
    archive_errors,
    is_archive,
    iter_members,
    member_lines,
)
from xling.io import atomic_write


def xnli_to_canonical(
    source: PathLike, out_dir: PathLike, languages: Iterable[str], splits: Iterable[str] = ("dev", "test")
) -> dict:
    """XNLI 1.0 (`XNLI-1.0.zip`: `XNLI-1.0/xnli.{dev,test}.tsv`, a header row with columns
    language, gold_label, ..., sentence1, sentence2, ...) -> `{out_dir}/{split}-{lang}.tsv`.

    Columns are found by header name; `contradictory` is normalised to `contradiction`; rows of
    other languages are skipped (counted); a requested language without rows is an error.
    """
    languages = list(languages)
    out_dir = Path(out_dir)
    counts: dict[str, int] = {}
    for split in splits:
        member = f"xnli.{split}.tsv"
        seen = False
        with archive_errors(source), contextlib.ExitStack() as stack:
            outs = {lang: stack.enter_context(atomic_write(out_dir / f"{split}-{lang}.tsv")) for lang in languages}
            per_lang, skipped = Counter(), 0
            for name, handle in iter_members(source, lambda n, member=member: PurePosixPath(n).name == member):
                seen, display = True, _display(source, name)
                lines = member_lines(handle, display)
                _, header = next(lines, (0, ""))
                columns = header.split("\t")
                try:
                    i_lang, i_label, i_s1, i_s2 = (
                        columns.index(c) for c in ("language", "gold_label", "sentence1", "sentence2")
                    )
                except ValueError:
                    raise FormatError(
                        f"{display}:1: header lacks language/gold_label/sentence1/sentence2: {header[:200]!r}"
                    ) from None
                for lineno, line in lines:
                    fields = line.split("\t")
                    if len(fields) != len(columns):
                        raise FormatError(f"{display}:{lineno}: {len(fields)} fields, header has {len(columns)}")
                    lang = fields[i_lang]
                    if lang not in outs:
                        skipped += 1
                        continue
                    label = parse_xnli_label(display, lineno, fields[i_label])
                    s1, s2 = _one_line(fields[i_s1]), _one_line(fields[i_s2])
                    if not s1 or not s2:
                        raise FormatError(f"{display}:{lineno}: empty sentence")
                    outs[lang].write(f"{s1}\t{s2}\t{label}\n")
                    per_lang[lang] += 1
                break
            if not seen:
                raise FormatError(f"{source}: missing {member}")
            empty = [lang for lang in languages if not per_lang[lang]]
            if empty:
                raise FormatError(f"{source}: {member} has no rows for {', '.join(empty)}")
        counts.update({f"{split}-{lang}": per_lang[lang] for lang in languages})
        counts[f"{split}-other_languages_skipped"] = skipped
    return _log_counts(f"XNLI {source} -> {out_dir}", counts)


def multinli_to_train(source: PathLike, out_path: PathLike) -> dict:
    """MultiNLI 1.0 train (`multinli_1.0.zip`: `multinli_1.0/multinli_1.0_train.jsonl`, keys
    gold_label, sentence1, sentence2) -> xnli/train-en.tsv. Pairs without a gold label ("-") are
    skipped (counted)."""
    member = "multinli_1.0_train.jsonl"
    counts = Counter(pairs=0, no_gold_label=0)
    seen = False
    with archive_errors(source), atomic_write(out_path) as out:
        for name, handle in iter_members(
            source, lambda n: PurePosixPath(n).name == member or not is_archive(source) and not Path(source).is_dir()
        ):
            seen, display = True, _display(source, name)
            for lineno, line in member_lines(handle, display):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    label, s1, s2 = row["gold_label"], row["sentence1"], row["sentence2"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise FormatError(f"{display}:{lineno}: not a MultiNLI JSON row ({exc})") from None
                if label == "-":
                    counts["no_gold_label"] += 1
                    continue
                label = parse_xnli_label(display, lineno, label)
                s1, s2 = _one_line(s1), _one_line(s2)
                if not s1 or not s2:
                    raise FormatError(f"{display}:{lineno}: empty sentence")
                out.write(f"{s1}\t{s2}\t{label}\n")
                counts["pairs"] += 1
            break
        if not seen:
            raise FormatError(f"{source}: missing {member}")
        if not counts["pairs"]:
            raise FormatError(f"{source}: no labelled pairs")
    return _log_counts(f"MultiNLI {source} -> {out_path}", dict(counts))


def xtreme_xnli_copy(src_path: PathLike, out_path: PathLike) -> dict:
    """A file already in XTREME layout (premise, hypothesis, label): validated, labels normalised."""
    rows = read_xnli(src_path)
    with atomic_write(out_path) as out:
        out.writelines(f"{p}\t{h}\t{label}\n" for p, h, label in rows)
    return _log_counts(f"XNLI {src_path} -> {out_path}", {"pairs": len(rows)})
