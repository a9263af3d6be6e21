"""Readers for the canonical data formats (spec: "Canonical data layout").

Synthetic and real sources write the same files, and every consumer reads them through these
functions, so a malformed input fails here, loudly, with the file and line — never later as a
silently wrong number. Whatever a reader legitimately skips (blank lines, CoNLL-U comments,
multiword tokens, empty nodes, possible alignment links) is counted in the log.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import zlib
from collections import Counter
from typing import Iterable, Iterator

import conllu
from conllu.exceptions import ParseException
from conllu.parser import (
    DEFAULT_FIELD_PARSERS,
    DEFAULT_FIELDS,
    parse_comment_line,
    parse_dict_value,
    parse_nullable_value,
    parse_paired_list_value,
)

from xling.io import first_bad_utf8_line, read_lines

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike
Lines = Iterable[tuple[int, str]]

UPOS_TAGS = frozenset("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X"
                      .split())
XNLI_LABELS = ("entailment", "neutral", "contradiction")
#: XTREME/XNLI-1.0 spelling -> canonical label
XNLI_LABEL_ALIASES = {"contradictory": "contradiction"}
NER_TYPES = ("PER", "ORG", "LOC")
#: WikiAnn's IOB2 tag set
NER_TAGS = frozenset(["O"] + [f"{p}-{t}" for t in NER_TYPES for p in "BI"])


class FormatError(ValueError):
    """Malformed input; the message starts with "<path>:<line>: " (or "<path>: " for whole files)."""


def _fail(path: PathLike, lineno: int | None, message: str) -> FormatError:
    where = f"{path}:{lineno}" if lineno is not None else f"{path}"
    return FormatError(f"{where}: {message}")


def _log_skipped(path: PathLike, what: str, counts: Counter) -> None:
    skipped = {k: v for k, v in counts.items() if v}
    if skipped:
        logger.info("%s: %s; skipped %s", path, what, ", ".join(f"{v} {k}" for k, v in skipped.items()))
    else:
        logger.info("%s: %s", path, what)


def numbered_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """xling.io.read_lines, with undecodable or truncated input reported as a FormatError."""
    lineno = 0
    try:
        for lineno, line in read_lines(path):
            yield lineno, line
    except UnicodeDecodeError as exc:
        bad = first_bad_utf8_line(path)
        where, reason = bad if bad is not None else (lineno + 1, exc.reason)
        raise _fail(path, where, f"not valid UTF-8 ({reason})") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # truncated or corrupt .gz
        raise _fail(path, lineno + 1, f"cannot read the file: {exc}") from None


# --------------------------------------------------------------------------- corpus
def iter_corpus_documents(path: PathLike) -> Iterator[list[str]]:
    """Yield documents (lists of sentences); documents are separated by one empty line.

    Extra consecutive empty lines (and leading/trailing ones) are tolerated and counted.
    Raises FormatError if the file holds no sentence at all.
    """
    doc: list[str] = []
    n_docs = n_sents = 0
    extra_blank = 0
    for _, line in numbered_lines(path):
        if line.strip():
            doc.append(line)
            continue
        if doc:
            n_docs += 1
            n_sents += len(doc)
            yield doc
            doc = []
        else:
            extra_blank += 1
    if doc:
        n_docs += 1
        n_sents += len(doc)
        yield doc
    if n_sents == 0:
        raise _fail(path, None, "empty corpus (no sentences)")
    _log_skipped(path, f"{n_docs} documents, {n_sents} sentences",
                 Counter({"extra empty lines": extra_blank}))


def read_corpus(path: PathLike) -> list[list[str]]:
    """All documents of a corpus file (see iter_corpus_documents)."""
    return list(iter_corpus_documents(path))


# --------------------------------------------------------------------------- dictionary
_DICT_SPLIT = re.compile(r"[ \t]+")


def parse_dictionary_line(path: PathLike, lineno: int, line: str) -> tuple[str, str]:
    """One MUSE line -> (source, target); exactly two fields separated by spaces and/or a tab."""
    fields = _DICT_SPLIT.split(line.strip(" \t"))
    if len(fields) != 2 or not all(fields):
        raise _fail(path, lineno, f"expected 2 fields (source target), got {len(fields)}: {line!r}")
    return fields[0], fields[1]


def read_dictionary(path: PathLike) -> list[tuple[str, str]]:
    """MUSE bilingual dictionary: `src_word<space or tab>tgt_word` per line (repeats allowed)."""
    pairs, blank = [], 0
    for lineno, line in numbered_lines(path):
        if not line.strip():
            blank += 1
            continue
        pairs.append(parse_dictionary_line(path, lineno, line))
    if not pairs:
        raise _fail(path, None, "empty dictionary")
    _log_skipped(path, f"{len(pairs)} pairs", Counter({"empty lines": blank}))
    return pairs


# --------------------------------------------------------------------------- parallel text
def _read_aligned(src_path: PathLike, tgt_path: PathLike) -> list[tuple[str, str]]:
    src = [line for _, line in numbered_lines(src_path)]
    tgt = [line for _, line in numbered_lines(tgt_path)]
    if len(src) != len(tgt):
        raise FormatError(f"{src_path}: {len(src)} lines, but {tgt_path}: {len(tgt)} lines; "
                          f"line-aligned files must have the same number of lines")
    return list(zip(src, tgt, strict=True))


def read_parallel(src_path: PathLike, tgt_path: PathLike) -> list[tuple[str, str]]:
    """Line-aligned sentence pairs; FormatError if the two files differ in length."""
    pairs = _read_aligned(src_path, tgt_path)
    if not pairs:
        raise _fail(src_path, None, f"no sentence pairs (nor in {tgt_path})")
    empty = sum(1 for s, t in pairs if not s.strip() or not t.strip())
    if empty:
        logger.warning("%s / %s: %d pairs with an empty side", src_path, tgt_path, empty)
    logger.info("%s / %s: %d pairs", src_path, tgt_path, len(pairs))
    return pairs


def read_tatoeba(src_path: PathLike, eng_path: PathLike) -> list[tuple[str, str]]:
    """Tatoeba (LASER v1 layout): line i of the two files are translations of each other."""
    return read_parallel(src_path, eng_path)


_LINK = re.compile(r"([0-9]+)([-p])([0-9]+)")


def read_alignments(path: PathLike, possible: bool = True) -> list[set[tuple[int, int]]]:
    """Pharaoh alignments, one line per sentence pair: `i-j` (sure) and `ipj` (possible) links.

    With possible=False the `ipj` links are dropped (and counted). An empty line is a sentence
    pair without links.
    """
    out: list[set[tuple[int, int]]] = []
    dropped = 0
    for lineno, line in numbered_lines(path):
        links: set[tuple[int, int]] = set()
        for token in line.split():
            m = _LINK.fullmatch(token)
            if m is None:
                raise _fail(path, lineno, f"malformed alignment link {token!r} "
                                          f"(expected i-j or ipj with non-negative integers)")
            if m.group(2) == "p" and not possible:
                dropped += 1
                continue
            links.add((int(m.group(1)), int(m.group(3))))
        out.append(links)
    if not out:
        raise _fail(path, None, "no alignment lines (one per sentence pair expected)")
    _log_skipped(path, f"{len(out)} sentence pairs", Counter({"possible links": dropped}))
    return out


# --------------------------------------------------------------------------- CoNLL-U
_ID_WORD = re.compile(r"[1-9][0-9]*")
_ID_RANGE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_ID_EMPTY = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)")
_HEAD = re.compile(r"0|[1-9][0-9]*")


def _token(fields: list[str], path: PathLike, lineno: int) -> conllu.Token:
    """A conllu.Token built with the conllu package's own field parsers."""
    token = conllu.Token()
    for i, name in enumerate(DEFAULT_FIELDS):
        try:
            token[name] = DEFAULT_FIELD_PARSERS[name](fields, i) if name in DEFAULT_FIELD_PARSERS \
                else fields[i]
        except (ParseException, IndexError, ValueError) as exc:
            raise _fail(path, lineno, f"bad {name.upper()} field {fields[i]!r}: {exc}") from None
    return token


def _word(f: list[str]) -> conllu.Token:
    """Fast path for an already validated word line (the same values as _token)."""
    return conllu.Token(id=int(f[0]), form=f[1], lemma=f[2], upos=f[3], xpos=parse_nullable_value(f[4]),
                        feats=parse_dict_value(f[5]), head=int(f[6]), deprel=f[7],
                        deps=parse_paired_list_value(f[8]) if f[8] != "_" else None,
                        misc=parse_dict_value(f[9]))


def iter_conllu(lines: Lines, path: PathLike, keep_multiword: bool = False,
                keep_empty: bool = False, first: int | None = None) -> Iterator[conllu.TokenList]:
    """Parse CoNLL-U from (lineno, line) pairs; `path` only names the source in errors. With `first`, stop after
    that many sentences (the log's counts then say so).

    Strict where the canonical layout needs it: 10 tab-separated columns; word IDs 1, 2, 3, ...;
    UPOS one of the 17 UD tags; HEAD an integer within the sentence; DEPREL filled. Multiword
    token lines (`1-2`) and empty nodes (`1.1`) are legitimate: they are left out of the
    TokenList unless asked for, and counted.
    """
    counts: Counter = Counter()
    tokens: list[conllu.Token] = []
    metadata = conllu.models.Metadata()
    heads: list[tuple[int, int]] = []  # (lineno, head) checked once the sentence is complete
    start = None
    n_sent = n_words = 0

    def finish(n: int) -> conllu.TokenList:
        nonlocal tokens, metadata, heads, start
        for head_line, head in heads:
            if head > n:
                raise _fail(path, head_line, f"HEAD {head} points outside the sentence ({n} words)")
        if n == 0:
            raise _fail(path, start, "sentence without words")
        sentence = conllu.TokenList(tokens, metadata, default_fields=DEFAULT_FIELDS)
        tokens, metadata, heads, start = [], conllu.models.Metadata(), [], None
        return sentence

    expected = 1
    for lineno, line in lines:
        if not line.strip():
            if start is not None:
                n_sent += 1
                yield finish(expected - 1)
                expected = 1
                if n_sent == first:
                    break
            continue
        if start is None:
            start = lineno
        if line.startswith("#"):
            if expected != 1 or tokens:
                raise _fail(path, lineno, "comment line after the token lines of a sentence")
            counts["comment lines"] += 1
            for key, value in parse_comment_line(line):
                metadata[key] = value
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise _fail(path, lineno, f"expected 10 tab-separated columns, got {len(fields)}")
        tid = fields[0]
        if _ID_RANGE.fullmatch(tid):
            counts["multiword tokens"] += 1
            if keep_multiword:
                tokens.append(_token(fields, path, lineno))
            continue
        if _ID_EMPTY.fullmatch(tid):
            counts["empty nodes"] += 1
            if keep_empty:
                tokens.append(_token(fields, path, lineno))
            continue
        if not _ID_WORD.fullmatch(tid):
            raise _fail(path, lineno, f"bad ID {tid!r} (expected an integer, a range a-b or a "
                                      f"decimal a.b)")
        if int(tid) != expected:
            raise _fail(path, lineno, f"word ID {tid} out of sequence (expected {expected})")
        expected += 1
        if fields[3] not in UPOS_TAGS:
            raise _fail(path, lineno, f"unknown UPOS {fields[3]!r}")
        if not _HEAD.fullmatch(fields[6]):
            raise _fail(path, lineno, f"HEAD {fields[6]!r} is not a non-negative integer")
        if fields[7] in ("", "_"):
            raise _fail(path, lineno, "DEPREL is empty")
        heads.append((lineno, int(fields[6])))
        tokens.append(_word(fields))
        n_words += 1
    else:
        if start is not None:
            n_sent += 1
            yield finish(expected - 1)
    read = "" if first is None or n_sent < first else f" (the first {first}: read no further)"
    _log_skipped(path, f"{n_sent} sentences, {n_words} words{read}", counts)


def read_conllu(path: PathLike, keep_multiword: bool = False, keep_empty: bool = False,
                first: int | None = None) -> list[conllu.TokenList]:
    """The sentences of a CoNLL-U file (see iter_conllu), all or the `first` N (the file is parsed no further:
    EWT's training file holds 12,544 sentences, of which a small run fine-tunes on hundreds); malformed line ->
    FormatError."""
    sentences = list(iter_conllu(numbered_lines(path), path, keep_multiword, keep_empty, first))
    if not sentences:
        raise _fail(path, None, "no sentences")
    return sentences


def universal_relation(deprel: str) -> str:
    """The universal part of a DEPREL (`nmod:poss` -> `nmod`): what LAS compares and what the parser predicts."""
    return deprel.split(":", 1)[0]


def syntactic_words(sentence: conllu.TokenList) -> list[conllu.Token]:
    """The words of a sentence, which UAS and LAS score: multiword token lines (`1-2`) and empty nodes (`1.1`)
    left out, whether or not the sentence was read with them (read_conllu keeps them only
    when asked)."""
    return [token for token in sentence if isinstance(token["id"], int)]


# --------------------------------------------------------------------------- XNLI
def parse_xnli_label(path: PathLike, lineno: int, label: str) -> str:
    """Canonical label, accepting XNLI-1.0's `contradictory` for `contradiction`."""
    label = XNLI_LABEL_ALIASES.get(label, label)
    if label not in XNLI_LABELS:
        raise _fail(path, lineno, f"unknown label {label!r} (expected one of {', '.join(XNLI_LABELS)})")
    return label


def read_xnli(path: PathLike) -> list[tuple[str, str, str]]:
    """XTREME layout `premise<TAB>hypothesis<TAB>label`, no header."""
    rows = []
    for lineno, line in numbered_lines(path):
        fields = line.split("\t")
        if len(fields) != 3:
            raise _fail(path, lineno, f"expected 3 tab-separated fields (premise, hypothesis, "
                                      f"label), got {len(fields)}")
        premise, hypothesis, label = fields
        rows.append((premise, hypothesis, parse_xnli_label(path, lineno, label)))
    if not rows:
        raise _fail(path, None, "no examples")
    logger.info("%s: %d examples %s", path, len(rows), dict(Counter(r[2] for r in rows)))
    return rows


# --------------------------------------------------------------------------- WikiAnn
def parse_ner_tag(path: PathLike, lineno: int, tag: str) -> str:
    """One IOB2 tag of WikiAnn's set (O, B-/I- of PER, ORG, LOC)."""
    if tag not in NER_TAGS:
        raise _fail(path, lineno, f"unknown tag {tag!r} (expected O or B-/I- of {', '.join(NER_TYPES)})")
    return tag


def read_wikiann(path: PathLike) -> list[tuple[list[str], list[str]]]:
    """XTREME PAN-X layout: `token<TAB>tag` per line, a blank line between sentences -> [(tokens, tags)].

    Tags are IOB2; an I- tag that starts a span (after O or another type) is kept, since silver data
    has it and the span metric decides what it means; the log counts spans per type and such tags.
    """
    sentences: list[tuple[list[str], list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []
    spans: Counter = Counter()
    extra_blank = 0
    for lineno, line in numbered_lines(path):
        if not line.strip():
            if tokens:
                sentences.append((tokens, tags))
                tokens, tags = [], []
            else:
                extra_blank += 1
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise _fail(path, lineno, f"expected 2 tab-separated fields (token, tag), got {len(fields)}")
        if not fields[0].strip():
            raise _fail(path, lineno, "empty token")
        tag = parse_ner_tag(path, lineno, fields[1])
        if tag != "O" and (tag[0] == "B" or not tags or tags[-1][2:] != tag[2:]):
            spans[tag[2:]] += 1
            spans["starting with I-"] += tag[0] == "I"
        tokens.append(fields[0])
        tags.append(tag)
    if tokens:
        sentences.append((tokens, tags))
    if not sentences:
        raise _fail(path, None, "no sentences")
    logger.info("%s: %d sentences, %d tokens, spans %s (%d starting with I-)%s", path, len(sentences),
                sum(len(t) for t, _ in sentences), ", ".join(f"{t} {spans[t]}" for t in NER_TYPES),
                spans["starting with I-"], f"; skipped {extra_blank} extra empty lines" if extra_blank else "")
    return sentences


# --------------------------------------------------------------------------- BUCC
def read_bucc_sentences(path: PathLike) -> dict[str, str]:
    """`id<TAB>sentence` lines -> {id: sentence}; duplicate ids are an error."""
    out: dict[str, str] = {}
    for lineno, line in numbered_lines(path):
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0]:
            raise _fail(path, lineno, f"expected 'id<TAB>sentence', got {len(fields)} fields")
        if fields[0] in out:
            raise _fail(path, lineno, f"duplicate id {fields[0]!r}")
        out[fields[0]] = fields[1]
    if not out:
        raise _fail(path, None, "no sentences")
    return out


def read_bucc(src_path: PathLike, en_path: PathLike, gold_path: PathLike | None = None
              ) -> tuple[dict[str, str], dict[str, str], set[tuple[str, str]]]:
    """BUCC 2018 (XTREME layout): sentences by id for both sides and gold (src_id, en_id) pairs."""
    src = read_bucc_sentences(src_path)
    en = read_bucc_sentences(en_path)
    gold: set[tuple[str, str]] = set()
    if gold_path is not None:
        for lineno, line in numbered_lines(gold_path):
            fields = line.split("\t")
            if len(fields) != 2:
                raise _fail(gold_path, lineno, f"expected 'src_id<TAB>en_id', got {len(fields)} fields")
            if fields[0] not in src:
                raise _fail(gold_path, lineno, f"unknown id {fields[0]!r} (not in {src_path})")
            if fields[1] not in en:
                raise _fail(gold_path, lineno, f"unknown id {fields[1]!r} (not in {en_path})")
            gold.add((fields[0], fields[1]))
        if not gold:
            raise _fail(gold_path, None, "no gold pairs (an F1 against an empty gold would be 0, not a result)")
    logger.info("%s / %s: %d and %d sentences, %d gold pairs", src_path, en_path, len(src), len(en),
                len(gold))
    return src, en, gold
