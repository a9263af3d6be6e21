"""MUSE bilingual dictionaries -> dict/en-{lang}.{full,train,test}.txt, and the union of the POS-annotated MUSE
test files (Kementchedjhieva et al. 2019) as one test dictionary.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Iterable

from xling.data.formats import FormatError, PathLike, parse_dictionary_line
from xling.data.upstream.archives import _display, _log_counts, _read_members
from xling.io import atomic_write

logger = logging.getLogger(__name__)

MUSE_SPLITS = {"full": "{lang}.txt", "train": "{lang}.0-5000.txt", "test": "{lang}.5000-6500.txt"}
MUSE_CATEGORIES = ("a", "n", "nw", "o", "pn", "v")


def _write_dictionary(lines: list[str], display: str, out_path: PathLike) -> int:
    pairs = []
    for lineno, line in enumerate(lines, start=1):
        if line.strip():
            pairs.append(parse_dictionary_line(display, lineno, line))
    if not pairs:
        raise FormatError(f"{display}: empty dictionary")
    with atomic_write(out_path) as out:
        out.writelines(f"{src} {tgt}\n" for src, tgt in pairs)
    return len(pairs)


def muse_to_canonical(source: PathLike, lang: str, out: dict[str, PathLike]) -> dict:
    """MUSE `en-{xx}.txt` / `.0-5000.txt` / `.5000-6500.txt` -> dict/en-{xx}.{full,train,test}.txt.

    `source`: directory, archive (e.g. MUSE's dictionaries.tar.gz) or one of the files' folder;
    `out` maps split (full/train/test) to the output path, only those splits are read. Lines are
    written as `src tgt` (one space); a line without exactly two fields is an error.
    """
    unknown = set(out) - set(MUSE_SPLITS)
    if unknown:
        raise ValueError(f"unknown MUSE split(s) {sorted(unknown)} (known: {', '.join(MUSE_SPLITS)})")
    names = {MUSE_SPLITS[split].format(lang=f"en-{lang}"): split for split in out}
    found = _read_members(source, names)
    counts = {}
    for name, split in names.items():
        counts[split] = _write_dictionary(found[name], _display(source, name), out[split])
    return _log_counts(f"MUSE en-{lang} {source} (pairs)", counts)


def muse_annotated_to_test(
    source: PathLike, lang: str, out_path: PathLike, categories: Iterable[str] = MUSE_CATEGORIES
) -> dict:
    """Union of the POS-annotated MUSE test files (Kementchedjhieva et al. 2019:
    `en-{xx}.5000-6500.{a,n,nw,o,pn,v}.txt`) -> one test dictionary.

    Categories are concatenated in the order given, repeated pairs kept once (counted): the
    original line order of the MUSE test dictionary is lost. Missing categories are logged
    (some languages have only a few); none at all is an error.
    """
    names = {f"en-{lang}.5000-6500.{cat}.txt": cat for cat in categories}
    found = _read_members(source, names, optional=names)
    if not found:
        raise FormatError(f"{source}: none of {', '.join(names)}")
    missing = [names[n] for n in names if n not in found]
    if missing:
        logger.warning("%s: en-%s has no categories %s", source, lang, ", ".join(missing))
    pairs, seen, counts = [], set(), Counter(pairs=0, repeated=0)
    for name in names:
        for lineno, line in enumerate(found.get(name, []), start=1):
            if not line.strip():
                continue
            pair = parse_dictionary_line(_display(source, name), lineno, line)
            if pair in seen:
                counts["repeated"] += 1
                continue
            seen.add(pair)
            pairs.append(pair)
        counts[f"category_{names[name]}"] = len(found.get(name, []))
    with atomic_write(out_path) as out:
        out.writelines(f"{src} {tgt}\n" for src, tgt in pairs)
    counts["pairs"] = len(pairs)
    return _log_counts(f"MUSE annotated en-{lang} -> {out_path}", dict(counts))


#: MUSE's train and test dictionaries are the source words of these frequency ranks (0-5000, 5000-6500)
MUSE_RANKS = {"train": (0, 5000), "test": (5000, 6500)}


def muse_full_to_split(source: PathLike, lang: str, split: str, out_path: PathLike) -> dict:
    """A stand-in for MUSE's train or test dictionary where only the full `en-{xx}.txt` is staged: the pairs of its
    source words of that split's frequency ranks (MUSE_RANKS), the full file listing source words by descending
    English frequency as MUSE's own splits do. A source word whose pairs are not contiguous is an error (the file
    would not be in that order)."""
    name = MUSE_SPLITS["full"].format(lang=f"en-{lang}")
    lines = _read_members(source, [name])[name]
    display = _display(source, name)
    first, last = MUSE_RANKS[split]
    words: dict[str, int] = {}
    kept, previous = [], None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        src, _ = parse_dictionary_line(display, lineno, line)
        if src != previous:
            if src in words:
                raise FormatError(
                    f"{display}:{lineno}: source word {src!r} seen before line {lineno} with other "
                    f"words between: not in frequency order"
                )
            words[src], previous = len(words), src
        if first <= words[src] < last:
            kept.append(line)
    if len(words) <= first:
        raise FormatError(f"{display}: {len(words)} source words, none of ranks {first}-{last} ({split})")
    return {split: _write_dictionary(kept, f"{display} (ranks {first}-{last})", out_path)}
