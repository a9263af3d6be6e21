"""Monolingual corpora from upstream -> corpus/{lang}.txt: Wikipedia (Parquet shards of articles, split into
sentences, one article a document) and the Leipzig Corpora Collection (one sentence a document).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Iterator

from xling.data.formats import FormatError, PathLike
from xling.data.sentences import check_sentence_count, splitter
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

logger = logging.getLogger(__name__)

#: characters that end a sentence-final paragraph line (after closing quotes/brackets are removed)
TERMINALS = ".!?。！？।॥۔؟…"
_CLOSERS = "\"'”’»)]）」』›"


def wikipedia_to_corpus(
    shards: Iterable[PathLike],
    out_path: PathLike,
    lang: str,
    n_sentences: int | None,
    *,
    min_line_chars: int | None = None,
    min_sentence_chars: int = 5,
    min_fraction: float = 0.9,
    batch_size: int = 64,
) -> dict:
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
    counts = Counter(
        articles=0,
        documents=0,
        sentences=0,
        empty_lines=0,
        short_lines=0,
        unpunctuated_lines=0,
        short_sentences=0,
        empty_articles=0,
    )
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
                eta = f", ETA {(n_sentences - counts['sentences']) / rate / 60:.0f} min" if n_sentences and rate else ""
                logger.info(
                    "%s: %d articles, %d sentences (%.0f sentences/s%s)",
                    lang,
                    counts["articles"],
                    counts["sentences"],
                    rate,
                    eta,
                )
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
            raise FormatError(
                f"{shard}: no 'text' column (columns: {', '.join(columns)}); not a wikimedia/wikipedia shard"
            )
        for batch in pfile.iter_batches(batch_size=batch_size, columns=["text"]):
            for text in batch.column(0).to_pylist():
                yield text or ""
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise FormatError(f"{shard}: cannot read Parquet ({exc}); truncated download?") from None


def _article_sentences(
    text: str,
    lang: str,
    split: Callable[[str], list[str]],
    min_line_chars: int,
    min_sentence_chars: int,
    counts: Counter,
) -> list[str]:
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
                    raise FormatError(f"{display}:{lineno}: expected 'id<TAB>sentence' with an integer id")
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
