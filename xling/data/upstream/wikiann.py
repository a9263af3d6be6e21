"""WikiAnn NER as Rahimi et al. (2019) split it -> wikiann/{lang}.{split}.tsv."""

from __future__ import annotations

import tarfile
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import IO, Iterable, Iterator

from xling.data.formats import FormatError, PathLike, parse_ner_tag
from xling.data.upstream.archives import _display, _log_counts, archive_errors, iter_members, member_lines
from xling.io import atomic_write

WIKIANN_SPLITS = ("train", "dev", "test")


def wikiann_to_canonical(
    source: PathLike, out_dir: PathLike, languages: Iterable[str], splits: Iterable[str] = WIKIANN_SPLITS
) -> dict:
    """WikiAnn as Rahimi et al. (2019) split it (`panx_dataset.zip`, or a directory or tar holding its
    `{lang}.tar.gz` files; each has members `train`, `dev`, `test` of `{lang}:token<TAB>tag` lines,
    a blank line between sentences) -> `{out_dir}/{lang}.{split}.tsv` (XTREME PAN-X layout).

    The `{lang}:` prefix must be there and is stripped (the token may hold more colons); tags are
    checked against the IOB2 set of PER/ORG/LOC; an empty token is an error. Other members (Rahimi's
    `extra`) are skipped and counted; a missing language or split is an error.
    """
    languages, splits = list(languages), list(splits)
    archives = {f"{lang}.tar.gz": lang for lang in languages}
    out_dir = Path(out_dir)
    counts: Counter = Counter()
    written: dict[str, list[str]] = {}
    with archive_errors(source):
        for name, handle in iter_members(source, lambda n: PurePosixPath(n).name in archives):
            lang = archives[PurePosixPath(name).name]
            if lang in written:
                raise FormatError(f"{source}: more than one {lang}.tar.gz (the second: {name})")
            display = _display(source, name)
            written[lang] = []
            with archive_errors(display), tarfile.open(fileobj=handle, mode="r|*") as tf:
                for member in tf:
                    split = PurePosixPath(member.name).name
                    if not member.isfile():
                        continue
                    if split not in splits:
                        counts[f"{lang}.other_members_skipped"] += 1
                        continue
                    lines = member_lines(tf.extractfile(member), f"{display}[{member.name}]")
                    with atomic_write(out_dir / f"{lang}.{split}.tsv") as out:
                        counts[f"{lang}.{split}"] = _panx_copy(lines, f"{display}[{member.name}]", lang, out)
                    written[lang].append(split)
    missing = [lang for lang in languages if lang not in written]
    if missing:
        raise FormatError(f"{source}: no {', '.join(f'{lang}.tar.gz' for lang in missing)}")
    for lang, found in written.items():
        absent = [split for split in splits if split not in found]
        if absent:
            raise FormatError(
                f"{source}[{lang}.tar.gz]: no {', '.join(absent)} member (found: {', '.join(found) or 'nothing'})"
            )
    return _log_counts(f"WikiAnn {source} -> {out_dir} (sentences)", dict(counts))


def _panx_copy(lines: Iterator[tuple[int, str]], display: str, lang: str, out: IO[str]) -> int:
    """Copy one PAN-X member in the canonical layout; returns its number of sentences."""
    prefix, n_sentences, in_sentence = f"{lang}:", 0, False
    for lineno, line in lines:
        if not line.strip():
            if in_sentence:
                out.write("\n")
                n_sentences, in_sentence = n_sentences + 1, False
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise FormatError(
                f"{display}:{lineno}: expected 2 tab-separated fields ({prefix}token, tag), got {len(fields)}"
            )
        if not fields[0].startswith(prefix):
            raise FormatError(f"{display}:{lineno}: token {fields[0][:50]!r} lacks the {prefix!r} prefix")
        token = fields[0][len(prefix) :]
        if not token.strip():
            raise FormatError(f"{display}:{lineno}: empty token")
        out.write(f"{token}\t{parse_ner_tag(display, lineno, fields[1])}\n")
        in_sentence = True
    if in_sentence:
        out.write("\n")
        n_sentences += 1
    if not n_sentences:
        raise FormatError(f"{display}: no sentences")
    return n_sentences
