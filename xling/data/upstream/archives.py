"""Parsers from each upstream release format into the canonical layout (spec: "Canonical data layout").

One function per upstream format: `(input file / archive / directory, output paths, options) ->
counts dict`. Each streams its input, validates it with the canonical readers' rules
(xling.data.formats), writes its outputs atomically and logs what it kept and what it skipped, so a
truncated download or a changed upstream layout fails with the file (and line) named instead of
producing a silently smaller dataset. Upstream layouts are documented in spec/data.md.

Sources may be a release archive (tar of any compression, or zip; members are read by name in
one streaming pass), a directory holding the files (an unpacked release or pre-staged copies;
`x.gz` is read as `x`), or, where one file is enough, that file.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import json
import logging
import lzma
import os
import re
import shutil
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import IO, Callable, Iterable, Iterator

from xling.data.formats import (
    FormatError,
    PathLike,
    iter_conllu,
    numbered_lines,
    parse_dictionary_line,
    parse_ner_tag,
    parse_xnli_label,
    read_xnli,
)
from xling.io import atomic_write
from xling.data.sentences import check_sentence_count, splitter

logger = logging.getLogger(__name__)

# ============================================================================ archives
_ARCHIVE = re.compile(r"\.(tar|tgz|tbz2?|txz|tar\.(gz|bz2|xz)|zip)$", re.IGNORECASE)
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError,
                   gzip.BadGzipFile)


def is_archive(path: PathLike) -> bool:
    return bool(_ARCHIVE.search(str(path)))


@contextlib.contextmanager
def archive_errors(source: PathLike) -> Iterator[None]:
    """Turn a truncated or corrupt archive (any error while reading it) into a FormatError naming it."""
    try:
        yield
    except FormatError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise FormatError(f"{source}: truncated or corrupt archive ({type(exc).__name__}: {exc}); "
                          f"delete it and download it again") from None
    except OSError as exc:
        # bz2 reports a damaged stream as a bare OSError; keep real I/O errors (missing file) as they are
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise
        raise FormatError(f"{source}: truncated or corrupt archive ({exc}); delete it and download it "
                          f"again") from None


def _clean(name: str) -> str:
    return str(PurePosixPath(name.removeprefix("./")))


def iter_members(source: PathLike, want: Callable[[str], bool]) -> Iterator[tuple[str, IO[bytes]]]:
    """Yield (member name, binary stream) for each file of `source` whose name `want` accepts.

    `source`: a tar (any compression; read as a stream, once) or zip archive, a directory (names
    relative to it, walked in sorted order; `x.gz` is yielded as `x`, decompressed), or one
    file (named by its base name). Use inside `archive_errors(source)`.
    """
    source = Path(source)
    if source.is_dir() or not is_archive(source):
        paths = [Path(root, f) for root, dirs, files in os.walk(source) for f in files] \
            if source.is_dir() else [source]
        for path in sorted(paths):
            name = path.relative_to(source).as_posix() if source.is_dir() else path.name
            opener: Callable = open
            if name.endswith(".gz") and not is_archive(name):
                name, opener = name[:-3], gzip.open
            if want(name):
                with opener(path, "rb") as handle:
                    yield name, handle
    elif source.suffix.lower() == ".zip":
        with zipfile.ZipFile(source) as zf:
            for info in zf.infolist():
                name = _clean(info.filename)
                if not info.is_dir() and want(name):
                    with zf.open(info) as handle:
                        yield name, handle
    else:
        with tarfile.open(source, "r|*") as tf:
            for member in tf:
                name = _clean(member.name)
                if member.isfile() and want(name):
                    yield name, tf.extractfile(member)


def member_lines(handle: IO[bytes], display: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) from a binary stream, decoded as UTF-8 (errors name the line).

    Decodes by hand rather than with io.TextIOWrapper, which needs seekable streams that tar's
    stream mode does not provide.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    lineno, rest = 0, ""
    while True:
        chunk = handle.read(1 << 20)
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            line = lineno + 1 + rest.count("\n") + chunk[:max(exc.start, 0)].count(b"\n")
            raise FormatError(f"{display}:{line}: not valid UTF-8 ({exc.reason})") from None
        lines = (rest + text).split("\n")
        rest = lines.pop()
        for line in lines:
            lineno += 1
            line = line.removesuffix("\r")
            yield lineno, line.removeprefix("\ufeff") if lineno == 1 else line
        if not chunk:
            break
    if rest:
        lineno += 1
        rest = rest.removesuffix("\r")
        yield lineno, rest.removeprefix("\ufeff") if lineno == 1 else rest


def _display(source: PathLike, name: str) -> str:
    """How errors name a member: the file itself, or `archive[member]`."""
    source = Path(source)
    if source.is_dir():
        return str(source / name)
    if not is_archive(source):
        return str(source)
    return f"{source}[{name}]"


def _read_members(source: PathLike, names: Iterable[str], *, by_basename: bool = True,
                  optional: Iterable[str] = ()) -> dict[str, list[str]]:
    """Read whole (small) members by name into lists of lines; a missing required one is an error."""
    names, optional = set(names), set(optional)
    key = (lambda n: PurePosixPath(n).name) if by_basename else (lambda n: n)
    found: dict[str, list[str]] = {}
    with archive_errors(source):
        for name, handle in iter_members(source, lambda n: key(n) in names and key(n) not in found):
            found[key(name)] = [line for _, line in member_lines(handle, _display(source, name))]
            if set(found) == names:
                break
    missing = sorted(names - set(found) - optional)
    if missing:
        raise FormatError(f"{source}: missing {', '.join(missing)}")
    return found


def _log_counts(what: str, counts: dict) -> dict:
    logger.info("%s: %s", what, ", ".join(f"{k}={v}" for k, v in counts.items()))
    return counts


def _one_line(text: str) -> str:
    """Collapse any whitespace run (tabs, newlines) to one space: fields of line formats."""
    return " ".join(text.split())


# ============================================================================ corpora
#: characters that end a sentence-final paragraph line (after closing quotes/brackets are removed)
TERMINALS = ".!?。！？।॥۔؟…"
_CLOSERS = "\"'”’»)]）」』›"


def wikipedia_to_corpus(shards: Iterable[PathLike], out_path: PathLike, lang: str,
                        n_sentences: int | None, *, min_line_chars: int | None = None,
                        min_sentence_chars: int = 5, min_fraction: float = 0.9,
                        batch_size: int = 64) -> dict:
    """wikimedia/wikipedia Parquet shards (columns id, url, title, text) -> corpus/{lang}.txt.

    Each article is one document; reading stops after the article that reaches `n_sentences`
    (None: read everything), so only the first shards/row groups are read. Filters, per line of
    an article's text (all counted): empty lines; lines shorter than `min_line_chars` (default
    10, Thai 40) — section headings, captions; for every language but Thai (which has no sentence
    punctuation) lines that do not end in sentence-final punctuation — headings, list items and
    table residue. Kept lines are split with xling.data.sentences; sentences shorter than
    `min_sentence_chars` are dropped. Articles left empty are skipped. Fewer than
    `min_fraction` x `n_sentences` sentences in all shards is an error.
    """
    if min_line_chars is None:
        min_line_chars = 40 if lang == "th" else 10
    split = splitter(lang)  # unknown language -> ValueError before any reading
    counts = Counter(articles=0, documents=0, sentences=0, empty_lines=0, short_lines=0,
                     unpunctuated_lines=0, short_sentences=0, empty_articles=0)
    start = last = time.monotonic()
    with atomic_write(out_path) as out:
        for text in (t for shard in shards for t in _parquet_texts(shard, batch_size)):
            counts["articles"] += 1
            doc = _article_sentences(text, lang, split, min_line_chars, min_sentence_chars, counts)
            if not doc:
                counts["empty_articles"] += 1
                continue
            out.write(("\n" if counts["documents"] else "") + "\n".join(doc) + "\n")
            counts["documents"] += 1
            counts["sentences"] += len(doc)
            if n_sentences is not None and counts["sentences"] >= n_sentences:
                break
            if time.monotonic() - last > 30:
                last = time.monotonic()
                rate = counts["sentences"] / (last - start)
                eta = f", ETA {(n_sentences - counts['sentences']) / rate / 60:.0f} min" \
                    if n_sentences and rate else ""
                logger.info("%s: %d articles, %d sentences (%.0f sentences/s%s)", lang,
                            counts["articles"], counts["sentences"], rate, eta)
        if n_sentences is not None:
            check_sentence_count(lang, counts["sentences"], n_sentences, min_fraction)
        if counts["sentences"] == 0:
            raise FormatError(f"{out_path}: no sentences from {lang} Wikipedia (empty corpus)")
    return _log_counts(f"wikipedia {lang} -> {out_path}", dict(counts))


def _parquet_texts(shard: PathLike, batch_size: int) -> Iterator[str]:
    """The `text` column of one shard, batch by batch (only the batches actually consumed are read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pfile = pq.ParquetFile(shard)
        columns = pfile.schema_arrow.names
        if "text" not in columns:
            raise FormatError(f"{shard}: no 'text' column (columns: {', '.join(columns)}); "
                              f"not a wikimedia/wikipedia shard")
        for batch in pfile.iter_batches(batch_size=batch_size, columns=["text"]):
            for text in batch.column(0).to_pylist():
                yield text or ""
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise FormatError(f"{shard}: cannot read Parquet ({exc}); truncated download?") from None


def _article_sentences(text: str, lang: str, split: Callable[[str], list[str]], min_line_chars: int,
                       min_sentence_chars: int, counts: Counter) -> list[str]:
    sentences = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            counts["empty_lines"] += 1
        elif len(line) < min_line_chars:
            counts["short_lines"] += 1
        elif lang != "th" and line.rstrip(_CLOSERS)[-1:] not in TERMINALS:
            counts["unpunctuated_lines"] += 1
        else:
            for sentence in split(line):
                if len(sentence) < min_sentence_chars:
                    counts["short_sentences"] += 1
                else:
                    sentences.append(sentence)
    return sentences


def leipzig_to_corpus(source: PathLike, out_path: PathLike, n_sentences: int | None = None) -> dict:
    """Leipzig Corpora Collection `*-sentences.txt` (`id<TAB>sentence`; plain or inside its
    .tar.gz) -> corpus file with each sentence its own document (Leipzig keeps no documents)."""
    counts = Counter(sentences=0, empty=0)
    found = False
    with archive_errors(source), atomic_write(out_path) as out:
        single = Path(source).is_file() and not is_archive(source)
        for name, handle in iter_members(source, lambda n: single or n.endswith("-sentences.txt")):
            found = True
            display = _display(source, name)
            for lineno, line in member_lines(handle, display):
                sid, sep, sentence = line.partition("\t")
                if not sep or not sid.strip().isdigit():
                    raise FormatError(f"{display}:{lineno}: expected 'id<TAB>sentence' with an "
                                      f"integer id")
                sentence = _one_line(sentence)
                if not sentence:
                    counts["empty"] += 1
                    continue
                out.write(("\n" if counts["sentences"] else "") + sentence + "\n")
                counts["sentences"] += 1
                if n_sentences is not None and counts["sentences"] >= n_sentences:
                    break
            break
        if not found:
            raise FormatError(f"{source}: no *-sentences.txt member")
        if counts["sentences"] == 0:
            raise FormatError(f"{source}: empty corpus (no sentences)")
        if n_sentences is not None and counts["sentences"] < n_sentences:
            logger.warning("%s: only %d sentences, %d asked", source, counts["sentences"], n_sentences)
    return _log_counts(f"leipzig {source} -> {out_path}", dict(counts))


# ============================================================================ Europarl and OPUS (MultiUN, Tanzil)
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


def europarl_to_parallel(source: PathLike | tuple[PathLike, PathLike], lang: str, out_en: PathLike,
                         out_xx: PathLike, *, tokenize: str | None = "13a",
                         corpus_out: dict[str, PathLike] | None = None, doc_lines: int = 1,
                         max_pairs: int | None = None) -> dict:
    """Europarl v7 `europarl-v7.{xx}-en.{en,xx}` -> parallel/en-{xx}.en / .{xx}.

    `source`: the release's `{xx}-en.tgz`, a directory holding the two files, or a tuple
    (en_path, xx_path). Different line counts are an error; pairs with an empty side are dropped
    (counted). The parallel files are whitespace-tokenized with sacrebleu's `13a` tokenizer
    (`intl`, or None to only collapse whitespace). `corpus_out` (side -> path) also writes the
    untokenized sentences of that side as a corpus, `doc_lines` consecutive lines per document
    (the aligned files keep no document boundaries).
    """
    names = {f"europarl-v7.{lang}-en.en": "en", f"europarl-v7.{lang}-en.{lang}": lang}
    if corpus_out and set(corpus_out) - {"en", lang}:
        raise ValueError(f"corpus_out sides must be 'en' or {lang!r}, got {sorted(corpus_out)}")
    tok = _tokenizer(tokenize)
    return _pair_to_parallel(source, names, "europarl", lang, out_en, out_xx, {"en": tok, lang: tok},
                             corpus_out or {}, doc_lines, max_pairs)


def opus_to_parallel(source: PathLike | tuple[PathLike, PathLike], corpus: str, lang: str, out_en: PathLike,
                     out_xx: PathLike, *, tokenize: str | None = "13a", tokenize_xx: str | None = "13a",
                     max_pairs: int | None = None) -> dict:
    """An OPUS corpus in its Moses download (`{a}-{b}.txt.zip`, the two codes in alphabetical order, with members
    `{corpus}.{a}-{b}.{a}` and `.{b}` beside a README and LICENSE; MultiUN and Tanzil for Cao et al.'s Table 5)
    -> parallel/en-{lang}.en / .{lang}, as `europarl_to_parallel` does (line-aligned sides, empty pairs dropped),
    tokenized by sacrebleu: English with `tokenize`, the other side with `tokenize_xx` (`zh` splits Chinese
    characters, as BERT's basic tokenizer does, so each character is a word)."""
    pair = "-".join(sorted(("en", lang)))
    names = {f"{corpus}.{pair}.en": "en", f"{corpus}.{pair}.{lang}": lang}
    return _pair_to_parallel(source, names, corpus, lang, out_en, out_xx,
                             {"en": _tokenizer(tokenize), lang: _tokenizer(tokenize_xx)}, {}, 1, max_pairs)


def _pair_to_parallel(source: PathLike | tuple[PathLike, PathLike], names: dict[str, str], label: str, lang: str,
                      out_en: PathLike, out_xx: PathLike, tok: dict[str, Callable[[str], str]],
                      corpus_out: dict[str, PathLike], doc_lines: int, max_pairs: int | None) -> dict:
    """The two sides (members named `names`: file name -> side) of an archive or directory, or a tuple of
    (en, xx) paths, extracted beside the outputs and written by `_write_parallel` (tok: side -> tokenizer)."""
    Path(out_en).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(out_en).parent, prefix=f".{label.lower()}.") as tmp:
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
            1 if path.stat().st_size and not _ends_with_newline(path) else 0)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _write_parallel(paths: dict[str, Path], labels: dict[str, str], lang: str, out_en: PathLike,
                    out_xx: PathLike, tok: dict[str, Callable[[str], str]], corpus_out: dict[str, PathLike],
                    doc_lines: int, max_pairs: int | None, source: str) -> dict:
    en_path, xx_path = paths["en"], paths[lang]
    n_en, n_xx = _count_lines(en_path), _count_lines(xx_path)
    if n_en != n_xx:
        raise FormatError(f"{labels['en']}: {n_en} lines, but {labels[lang]}: {n_xx} lines; "
                          f"the two sides must be line-aligned")
    counts = Counter(pairs=0, empty_pairs=0)
    with contextlib.ExitStack() as stack:
        f_en = stack.enter_context(atomic_write(out_en))
        f_xx = stack.enter_context(atomic_write(out_xx))
        corpora = {side: stack.enter_context(atomic_write(path)) for side, path in corpus_out.items()}
        for (_, en), (_, xx) in zip(numbered_lines(en_path), numbered_lines(xx_path)):
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


# ============================================================================ UD
_UD_FILE = re.compile(r"[a-z_]+-ud-(train|dev|test)\.conllu")


def ud_to_canonical(source: PathLike, out_dir: PathLike, treebanks: dict[str, str | list[str]],
                    splits: Iterable[str] | dict[str, Iterable[str]] = ("train", "dev", "test")
                    ) -> dict:
    """UD release (`ud-treebanks-v2.x.tgz`: `ud-treebanks-v2.x/UD_<Lang>-<TB>/<code>_<tb>-ud-<split>.conllu`,
    or a directory of treebank folders) -> `{out_dir}/{lang}.{split}.conllu`.

    `treebanks` maps a language to a treebank folder name (or a list, concatenated in order);
    `splits` is the splits to write, for all languages or per language (PUD treebanks have only
    test). A requested split that no listed treebank has is an error. Files are copied verbatim
    and validated on the way with formats.iter_conllu.
    """
    tb_lists = {lang: [tb] if isinstance(tb, str) else list(tb) for lang, tb in treebanks.items()}
    split_of = {lang: tuple(splits[lang] if isinstance(splits, dict) else splits) for lang in tb_lists}
    wanted = {tb: lang for lang, tbs in tb_lists.items() for tb in tbs}
    parts: dict[tuple[str, str], dict[str, Path]] = {}  # (lang, split) -> treebank -> temp file
    counts: dict[str, int] = {}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def want(name: str) -> bool:
        path = PurePosixPath(name)
        m = _UD_FILE.fullmatch(path.name)
        return (m is not None and len(path.parts) >= 2 and path.parts[-2] in wanted
                and m.group(1) in split_of[wanted[path.parts[-2]]])

    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".ud.") as tmp:
        with archive_errors(source):
            for name, handle in iter_members(source, want):
                path = PurePosixPath(name)
                tb, split = path.parts[-2], _UD_FILE.fullmatch(path.name).group(1)
                lang = wanted[tb]
                part = Path(tmp, f"{tb}.{split}.conllu")
                with open(part, "w", encoding="utf-8") as dest:
                    lines = _tee(member_lines(handle, _display(source, name)), dest)
                    n = sum(1 for _ in iter_conllu(lines, _display(source, name)))
                parts.setdefault((lang, split), {})[tb] = part
                counts[f"{tb}.{split}"] = n
        for lang, tbs in tb_lists.items():
            for split in split_of[lang]:
                found = parts.get((lang, split), {})
                if not found:
                    have = sorted(k for k in counts if k.split(".")[0] in tbs)
                    raise FormatError(f"{source}: no {split} file for {lang} in {', '.join(tbs)} "
                                      f"(found: {', '.join(have) or 'nothing'})")
                with atomic_write(out_dir / f"{lang}.{split}.conllu") as out:
                    for tb in tbs:  # configured order, whatever the archive order
                        if tb in found:
                            with open(found[tb], encoding="utf-8") as part:
                                shutil.copyfileobj(part, out)
                counts[f"{lang}.{split}"] = sum(counts[f"{tb}.{split}"] for tb in found)
    return _log_counts(f"UD {source} -> {out_dir} (sentences)", counts)


def _tee(lines: Iterator[tuple[int, str]], dest: IO[str]) -> Iterator[tuple[int, str]]:
    """Pass lines through while copying them; ends the copy with a blank line (the CoNLL-U sentence
    terminator) if the source lacks it, so concatenated treebanks never merge two sentences."""
    line = ""
    for lineno, line in lines:
        dest.write(line + "\n")
        yield lineno, line
    if line.strip():
        dest.write("\n")


# ============================================================================ MUSE
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


def muse_annotated_to_test(source: PathLike, lang: str, out_path: PathLike,
                           categories: Iterable[str] = MUSE_CATEGORIES) -> dict:
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


# ============================================================================ XNLI
def xnli_to_canonical(source: PathLike, out_dir: PathLike, languages: Iterable[str],
                      splits: Iterable[str] = ("dev", "test")) -> dict:
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
            outs = {lang: stack.enter_context(atomic_write(out_dir / f"{split}-{lang}.tsv"))
                    for lang in languages}
            per_lang, skipped = Counter(), 0
            for name, handle in iter_members(source, lambda n: PurePosixPath(n).name == member):
                seen, display = True, _display(source, name)
                lines = member_lines(handle, display)
                _, header = next(lines, (0, ""))
                columns = header.split("\t")
                try:
                    i_lang, i_label, i_s1, i_s2 = (columns.index(c) for c in
                                                   ("language", "gold_label", "sentence1", "sentence2"))
                except ValueError:
                    raise FormatError(f"{display}:1: header lacks language/gold_label/sentence1/sentence2: "
                                      f"{header[:200]!r}") from None
                for lineno, line in lines:
                    fields = line.split("\t")
                    if len(fields) != len(columns):
                        raise FormatError(f"{display}:{lineno}: {len(fields)} fields, header has "
                                          f"{len(columns)}")
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
        for name, handle in iter_members(source, lambda n: PurePosixPath(n).name == member
                                         or not is_archive(source) and not Path(source).is_dir()):
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


# ============================================================================ WikiAnn
WIKIANN_SPLITS = ("train", "dev", "test")


def wikiann_to_canonical(source: PathLike, out_dir: PathLike, languages: Iterable[str],
                         splits: Iterable[str] = WIKIANN_SPLITS) -> dict:
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
            raise FormatError(f"{source}[{lang}.tar.gz]: no {', '.join(absent)} member "
                              f"(found: {', '.join(found) or 'nothing'})")
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
            raise FormatError(f"{display}:{lineno}: expected 2 tab-separated fields ({prefix}token, tag), "
                              f"got {len(fields)}")
        if not fields[0].startswith(prefix):
            raise FormatError(f"{display}:{lineno}: token {fields[0][:50]!r} lacks the {prefix!r} prefix")
        token = fields[0][len(prefix):]
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


# ============================================================================ Tatoeba
#: study language code -> ISO 639-3 code of the LASER v1 Tatoeba files (as XTREME's utils_preprocess)
TATOEBA_CODES = {"ar": "ara", "bg": "bul", "de": "deu", "el": "ell", "es": "spa", "fr": "fra",
                 "hi": "hin", "ru": "rus", "sw": "swh", "th": "tha", "tr": "tur", "ur": "urd",
                 "vi": "vie", "zh": "cmn"}


def tatoeba_code(lang: str) -> str:
    try:
        return TATOEBA_CODES[lang]
    except KeyError:
        raise ValueError(f"no Tatoeba code for language {lang!r} (known: "
                         f"{', '.join(f'{k}={v}' for k, v in TATOEBA_CODES.items())})") from None


def tatoeba_to_canonical(source: PathLike, lang: str, out_dir: PathLike) -> dict:
    """LASER v1 `tatoeba.{xxx}-eng.{xxx}` + `.eng` (directory, or LASER's repository zip) ->
    `{out_dir}/tatoeba.{lang}-eng.{lang}` and `.eng`, renamed to the study's 2-letter code.

    The order is kept (line i of both files is a pair; XTREME shuffles the English side, we do not).
    """
    code = tatoeba_code(lang)
    src_name, eng_name = f"tatoeba.{code}-eng.{code}", f"tatoeba.{code}-eng.eng"
    found = _read_members(source, [src_name, eng_name])
    src, eng = found[src_name], found[eng_name]
    if len(src) != len(eng):
        raise FormatError(f"{_display(source, src_name)}: {len(src)} lines, but "
                          f"{_display(source, eng_name)}: {len(eng)} lines")
    empty = sum(1 for a, b in zip(src, eng) if not a.strip() or not b.strip())
    if empty:
        logger.warning("%s: %d Tatoeba pairs with an empty side (kept, to keep the alignment)",
                       source, empty)
    out_dir = Path(out_dir)
    for side, lines in ((lang, src), ("eng", eng)):
        with atomic_write(out_dir / f"tatoeba.{lang}-eng.{side}") as out:
            out.writelines(line + "\n" for line in lines)
    return _log_counts(f"Tatoeba {code}-eng -> {lang}", {"pairs": len(src), "empty_pairs": empty})


# ============================================================================ BUCC
#: BUCC 2018 upstream split -> our split (as XTREME: sample is the dev set, training the test set)
BUCC_SPLITS = {"sample": "dev", "training": "test"}


def _bucc_ids(lines: list[str], display: str, prefix: str) -> list[str]:
    ids, seen = [], set()
    for lineno, line in enumerate(lines, start=1):
        sid, sep, sentence = line.partition("\t")
        if not sep or "\t" in sentence or not sid.startswith(prefix):
            raise FormatError(f"{display}:{lineno}: expected '{prefix}<number><TAB>sentence'")
        if sid in seen:
            raise FormatError(f"{display}:{lineno}: duplicate id {sid!r}")
        seen.add(sid)
        ids.append(sid)
    return ids


def bucc_to_canonical(source: PathLike, lang: str, out_dir: PathLike,
                      splits: dict[str, str] = BUCC_SPLITS) -> dict:
    """BUCC 2018 archive (`bucc2018-{xx}-en.{sample,training}-gold.tar.bz2`, members
    `bucc2018/{xx}-en/{xx}-en.{split}.{xx,en,gold}`) or directory -> `{out_dir}/{xx}-en.{split}.*`.

    Upstream splits are renamed by `splits` (default as XTREME: sample -> dev, training -> test).
    Ids must carry the language prefix (`de-000000001`), be unique, and every gold id must exist.
    Only the blind `test` split may lack a gold file.
    """
    exts = (lang, "en", "gold")
    pattern = re.compile(rf"{lang}-en\.({'|'.join(map(re.escape, splits))})\.({'|'.join(exts)})")
    found: dict[str, dict[str, list[str]]] = {}
    with archive_errors(source):
        for name, handle in iter_members(source, lambda n: bool(pattern.fullmatch(PurePosixPath(n).name))):
            split, ext = pattern.fullmatch(PurePosixPath(name).name).groups()
            found.setdefault(split, {})[ext] = [line for _, line in
                                                member_lines(handle, _display(source, name))]
    if not found:
        raise FormatError(f"{source}: no BUCC {lang}-en files of splits {', '.join(splits)}")
    counts = {}
    out_dir = Path(out_dir)
    for split, files in found.items():
        missing = [ext for ext in exts if ext not in files and not (ext == "gold" and split == "test")]
        if missing:
            raise FormatError(f"{source}: BUCC {lang}-en {split} lacks its {', '.join(missing)} file")
        disp = {ext: _display(source, f"{lang}-en.{split}.{ext}") for ext in exts}
        src_ids = set(_bucc_ids(files[lang], disp[lang], f"{lang}-"))
        en_ids = set(_bucc_ids(files["en"], disp["en"], "en-"))
        for lineno, line in enumerate(files.get("gold", []), start=1):
            fields = line.split("\t")
            if len(fields) != 2:
                raise FormatError(f"{disp['gold']}:{lineno}: expected 'src_id<TAB>en_id'")
            for sid, ids in zip(fields, (src_ids, en_ids)):
                if sid not in ids:
                    raise FormatError(f"{disp['gold']}:{lineno}: unknown id {sid!r}")
        ours = splits[split]
        for ext, lines in files.items():
            with atomic_write(out_dir / f"{lang}-en.{ours}.{ext}") as out:
                out.writelines(line + "\n" for line in lines)
        counts.update({f"{ours}.{lang}": len(src_ids), f"{ours}.en": len(en_ids),
                       f"{ours}.gold": len(files.get("gold", []))})
    return _log_counts(f"BUCC {lang}-en {source} -> {out_dir}", counts)


# ============================================================================ mBERT vocabulary
MBERT_CASED_VOCAB_SIZE = 119547
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def mbert_vocab(source: PathLike, out_path: PathLike, expected_size: int | None = MBERT_CASED_VOCAB_SIZE,
                strict: bool = True) -> dict:
    """mBERT cased vocab: Google's `multi_cased_L-12_H-768_A-12.zip` (member
    `multi_cased_L-12_H-768_A-12/vocab.txt`) or a plain vocab file -> `out_path`, copied verbatim.

    Checks one token per line, BERT's special tokens present, and `expected_size` lines
    (119,547 for the 2018-11-23 cased model): a different size raises (strict) or warns.
    """
    want = (lambda n: PurePosixPath(n).name == "vocab.txt") if is_archive(source) or Path(source).is_dir() \
        else (lambda n: True)
    tokens: list[str] = []
    display = str(source)
    with archive_errors(source):
        for name, handle in iter_members(source, want):
            display = _display(source, name)
            tokens = [line for _, line in member_lines(handle, display)]
            break
    if not tokens:
        raise FormatError(f"{source}: no vocab.txt (or it is empty)")
    for lineno, token in enumerate(tokens, start=1):
        if not token or token != token.strip():
            raise FormatError(f"{display}:{lineno}: empty token or surrounding whitespace: {token!r}")
    missing = [t for t in _SPECIAL if t not in set(tokens)]
    if missing:
        raise FormatError(f"{display}: special tokens missing: {' '.join(missing)}")
    duplicates = len(tokens) - len(set(tokens))
    if duplicates:
        logger.warning("%s: %d duplicate tokens", display, duplicates)
    if expected_size is not None and len(tokens) != expected_size:
        message = f"{display}: {len(tokens)} tokens, expected {expected_size} (wrong or truncated file?)"
        if strict:
            raise FormatError(message)
        logger.warning(message)
    with atomic_write(out_path) as out:
        out.writelines(token + "\n" for token in tokens)
    return _log_counts(f"vocab {display} -> {out_path}", {"tokens": len(tokens), "duplicates": duplicates})


__all__ = [
    "archive_errors", "iter_members", "member_lines", "is_archive",
    "wikipedia_to_corpus", "leipzig_to_corpus", "europarl_to_parallel", "opus_to_parallel", "ud_to_canonical",
    "muse_to_canonical", "muse_annotated_to_test", "xnli_to_canonical", "multinli_to_train",
    "xtreme_xnli_copy", "wikiann_to_canonical", "WIKIANN_SPLITS", "tatoeba_to_canonical", "tatoeba_code",
    "TATOEBA_CODES", "bucc_to_canonical", "BUCC_SPLITS", "mbert_vocab", "MBERT_CASED_VOCAB_SIZE",
]
