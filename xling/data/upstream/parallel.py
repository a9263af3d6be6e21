"""Parallel text from upstream -> parallel/en-{lang}.{en,lang}: Europarl and OPUS (MultiUN, Tanzil) in their
Moses downloads, line-aligned pairs checked side by side, optionally tokenized.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Callable

from xling.data.formats import FormatError, PathLike, numbered_lines
from xling.data.upstream.archives import _display, _log_counts, _one_line, archive_errors, is_archive, iter_members
from xling.io import atomic_write, scratch


def _tokenizer(name: str | None) -> Callable[[str], str]:
    if name is None:
        return _one_line
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International
    from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

    tokenizers = {"13a": Tokenizer13a, "intl": TokenizerV14International, "zh": TokenizerZh}
    if name not in tokenizers:
        raise ValueError(f"unknown tokenizer {name!r} (known: {', '.join(tokenizers)}, or None)")
    tok = tokenizers[name]()
    return lambda text: _one_line(tok(_one_line(text)))


def europarl_to_parallel(
    source: PathLike | tuple[PathLike, PathLike],
    lang: str,
    out_en: PathLike,
    out_xx: PathLike,
    *,
    tokenize: str | None = "13a",
    corpus_out: dict[str, PathLike] | None = None,
    doc_lines: int = 1,
    max_pairs: int | None = None,
) -> dict:
    """Europarl v7 `europarl-v7.{xx}-en.{en,xx}` -> parallel/en-{xx}.en / .{xx}.

    `source`: the release's `{xx}-en.tgz`, a directory holding the two files, a tuple (en_path, xx_path), or
    one side of a sample staged under its own name (`<name>.{xx}`, or a link to it: data.paths.europarl.{xx}),
    read with the English side beside it (`<name>.en`). Different line counts are an error; pairs with an empty side are dropped
    (counted). The parallel files are whitespace-tokenized with sacrebleu's `13a` tokenizer
    (`intl`, or None to only collapse whitespace). `corpus_out` (side -> path) also writes the
    untokenized sentences of that side as a corpus, `doc_lines` consecutive lines per document
    (the aligned files keep no document boundaries).
    """
    names = {f"europarl-v7.{lang}-en.en": "en", f"europarl-v7.{lang}-en.{lang}": lang}
    if corpus_out and set(corpus_out) - {"en", lang}:
        raise ValueError(f"corpus_out sides must be 'en' or {lang!r}, got {sorted(corpus_out)}")
    tok = _tokenizer(tokenize)
    if not isinstance(source, tuple) and Path(source).is_file() and not is_archive(source):
        source = _english_beside(Path(source), lang)
    return _pair_to_parallel(
        source, names, "europarl", lang, out_en, out_xx, {"en": tok, lang: tok}, corpus_out or {}, doc_lines, max_pairs
    )


def opus_to_parallel(
    source: PathLike | tuple[PathLike, PathLike],
    corpus: str,
    lang: str,
    out_en: PathLike,
    out_xx: PathLike,
    *,
    tokenize: str | None = "13a",
    tokenize_xx: str | None = "13a",
    max_pairs: int | None = None,
) -> dict:
    """An OPUS corpus in its Moses download (`{a}-{b}.txt.zip`, the two codes in alphabetical order, with members
    `{corpus}.{a}-{b}.{a}` and `.{b}` beside a README and LICENSE; MultiUN and Tanzil for Cao et al.'s Table 5)
    -> parallel/en-{lang}.en / .{lang}, as `europarl_to_parallel` does (line-aligned sides, empty pairs dropped),
    tokenized by sacrebleu: English with `tokenize`, the other side with `tokenize_xx` (`zh` splits Chinese
    characters, as BERT's basic tokenizer does, so each character is a word)."""
    pair = "-".join(sorted(("en", lang)))
    names = {f"{corpus}.{pair}.en": "en", f"{corpus}.{pair}.{lang}": lang}
    return _pair_to_parallel(
        source,
        names,
        corpus,
        lang,
        out_en,
        out_xx,
        {"en": _tokenizer(tokenize), lang: _tokenizer(tokenize_xx)},
        {},
        1,
        max_pairs,
    )


def _english_beside(xx_side: Path, lang: str) -> tuple[Path, Path]:
    """(English side, `xx_side`) of a sample staged as two files `<name>.en` and `<name>.{lang}`: the staged
    copies have other names than the release's (europarl-v7.fr-en.head3000.fr, es-en-sample/train.es)."""
    real = xx_side.resolve()
    if real.suffix != f".{lang}":
        raise FormatError(f"{xx_side}: a staged Europarl side must end in .{lang} (its English side: .en)")
    english = real.with_suffix(".en")
    if not english.is_file():
        raise FormatError(f"{xx_side}: no English side {english} beside it")
    return english, real


def _pair_to_parallel(
    source: PathLike | tuple[PathLike, PathLike],
    names: dict[str, str],
    label: str,
    lang: str,
    out_en: PathLike,
    out_xx: PathLike,
    tok: dict[str, Callable[[str], str]],
    corpus_out: dict[str, PathLike],
    doc_lines: int,
    max_pairs: int | None,
) -> dict:
    """The two sides (members named `names`: file name -> side) of an archive or directory, or a tuple of
    (en, xx) paths, extracted beside the outputs and written by `_write_parallel` (tok: side -> tokenizer)."""
    Path(out_en).parent.mkdir(parents=True, exist_ok=True)
    with scratch(Path(out_en).parent / f"{label.lower()}-extracted") as tmp:
        if isinstance(source, tuple):
            paths = {"en": Path(source[0]), lang: Path(source[1])}
            labels = {side: str(path) for side, path in paths.items()}
        else:
            paths, labels = {}, {}
            with archive_errors(source):
                for name, handle in iter_members(source, lambda n: PurePosixPath(n).name in names):
                    side = names[PurePosixPath(name).name]
                    paths[side], labels[side] = Path(tmp, side), _display(source, name)
                    with open(paths[side], "wb") as dest:  # two members can only be zipped from disk
                        shutil.copyfileobj(handle, dest, 1 << 20)
            missing = [n for n, side in names.items() if side not in paths]
            if missing:
                raise FormatError(f"{source}: missing {', '.join(missing)}")
        return _write_parallel(paths, labels, lang, out_en, out_xx, tok, corpus_out, doc_lines, max_pairs, label)


def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b"")) + (
            1 if path.stat().st_size and not _ends_with_newline(path) else 0
        )


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _write_parallel(
    paths: dict[str, Path],
    labels: dict[str, str],
    lang: str,
    out_en: PathLike,
    out_xx: PathLike,
    tok: dict[str, Callable[[str], str]],
    corpus_out: dict[str, PathLike],
    doc_lines: int,
    max_pairs: int | None,
    source: str,
) -> dict:
    en_path, xx_path = paths["en"], paths[lang]
    n_en, n_xx = _count_lines(en_path), _count_lines(xx_path)
    if n_en != n_xx:
        raise FormatError(
            f"{labels['en']}: {n_en} lines, but {labels[lang]}: {n_xx} lines; the two sides must be line-aligned"
        )
    counts = Counter(pairs=0, empty_pairs=0)
    with contextlib.ExitStack() as stack:
        f_en = stack.enter_context(atomic_write(out_en))
        f_xx = stack.enter_context(atomic_write(out_xx))
        corpora = {side: stack.enter_context(atomic_write(path)) for side, path in corpus_out.items()}
        for (_, en), (_, xx) in zip(numbered_lines(en_path), numbered_lines(xx_path), strict=True):
            if not en.strip() or not xx.strip():
                counts["empty_pairs"] += 1
                continue
            f_en.write(tok["en"](en) + "\n")
            f_xx.write(tok[lang](xx) + "\n")
            for side, handle in corpora.items():
                if counts["pairs"] and counts["pairs"] % doc_lines == 0:
                    handle.write("\n")
                handle.write(_one_line(en if side == "en" else xx) + "\n")
            counts["pairs"] += 1
            if max_pairs is not None and counts["pairs"] >= max_pairs:
                break
        if counts["pairs"] == 0:
            raise FormatError(f"{labels['en']}: no non-empty sentence pairs")
    return _log_counts(f"{source} en-{lang} -> {out_en}, {out_xx}", dict(counts))
