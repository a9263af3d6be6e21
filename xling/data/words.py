"""Wordpieces -> words: the one definition, used by the store, word counts, translation and retrieval.

A word is a maximal run of pieces in which every piece after the first starts with "##" (BERT's
continuation marker): "Un ##beli ##eva ##bly" is one word. Its text is its pieces concatenated with
every "##" removed ("Unbelievably"). A "##" piece with no word before it (the first piece of a
sequence, which a tokenizer never emits but a model's output may) starts a word, and its marker is
removed like any other: "##a ##b" is the word "ab".

Pure Python (no torch), so the data-preparation rules can count words with it.
"""

from __future__ import annotations

from typing import Sequence

PREFIX = "##"
Span = tuple[int, int]  # [start, end) piece indices of one word


def word_spans(pieces: Sequence[str]) -> list[Span]:
    """The words of a piece sequence, as [start, end) spans in order."""
    spans: list[Span] = []
    for i, piece in enumerate(pieces):
        if piece.startswith(PREFIX) and spans:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
    return spans


def word_text(pieces: Sequence[str]) -> str:
    """The text a word's pieces spell: "##" markers removed."""
    return "".join(p[len(PREFIX):] if p.startswith(PREFIX) else p for p in pieces)


def detokenize(pieces: Sequence[str]) -> str:
    """Pieces -> text: the words' texts joined by single spaces."""
    return " ".join(word_text(pieces[start:end]) for start, end in word_spans(pieces))


def chunk_words(spans: Sequence[Span], max_pieces: int, long_words: str = "drop") -> tuple[list[list[Span]], int]:
    """Pack consecutive words greedily into chunks of at most `max_pieces` pieces (a model's input sequences).

    A word is never split across chunks when it fits one. A word longer than `max_pieces` is either left
    out (long_words="drop": a vector made from two unrelated contexts would be wrong) or cut into parts of
    max_pieces pieces, each starting a chunk, its remainder packed with the following words
    (long_words="split": every piece gets an output, as token translation needs).
    Returns (chunks, number of words longer than max_pieces).
    """
    if max_pieces < 1:
        raise ValueError(f"max_pieces must be >= 1, got {max_pieces}")
    if long_words not in ("drop", "split"):
        raise ValueError(f"long_words must be 'drop' or 'split', got {long_words!r}")
    chunks: list[list[Span]] = []
    current: list[Span] = []
    size = n_long = 0
    for start, end in spans:
        if end - start > max_pieces:
            n_long += 1
            if long_words == "drop":
                continue
            if current:
                chunks.append(current)
                current, size = [], 0
            while end - start > max_pieces:
                chunks.append([(start, start + max_pieces)])
                start += max_pieces
        if size + end - start > max_pieces:
            chunks.append(current)
            current, size = [], 0
        current.append((start, end))
        size += end - start
    if current:
        chunks.append(current)
    return chunks, n_long
