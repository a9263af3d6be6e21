"""Wordpieces -> words: the one definition, used by the store, word counts, translation and retrieval.

A word is a maximal run of pieces in which every piece after the first starts with "##" (BERT's
continuation marker): "Un ##beli ##eva ##bly" is one word. Its text is its pieces concatenated with
every "##" removed ("Unbelievably"). A "##" piece with no word before it (the first piece of a
sequence, which a tokenizer never emits but a model's output may) starts a word, and its marker is
removed like any other: "##a ##b" is the word "ab".

That is our tokenizer's convention (WORDPIECE; the module functions use it). A Hugging Face checkpoint
brings its own (`Subwords`, read from its tokenizer by xling.models.pretrained.subwords_of): WordPiece
marks a continuation ("##", mBERT, DistilmBERT), SentencePiece marks a word START ("▁", XLM-R:
"▁Un beli eva bly" is one word; a piece without the mark continues the word before, and the first piece
of a sequence starts one whatever it is).

Pure Python (no torch), so the data-preparation rules can count words with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

PREFIX = "##"  # our WordPiece vocabularies' continuation marker (xling.data.wordpiece)
Span = tuple[int, int]  # [start, end) piece indices of one word


@dataclass(frozen=True)
class Subwords:
    """How a tokenizer's pieces mark word boundaries: `marker` opens a word (starts_word, SentencePiece's
    "▁") or continues one (WordPiece's "##")."""

    marker: str
    starts_word: bool

    def spans(self, pieces: Sequence[str]) -> list[Span]:
        """The words of a piece sequence, as [start, end) spans in order."""
        spans: list[Span] = []
        for i, piece in enumerate(pieces):
            if spans and piece.startswith(self.marker) != self.starts_word:
                spans[-1] = (spans[-1][0], i + 1)
            else:
                spans.append((i, i + 1))
        return spans

    def text(self, pieces: Sequence[str]) -> str:
        """The text a word's pieces spell: the markers removed."""
        return "".join(p.removeprefix(self.marker) for p in pieces)

    def detokenize(self, pieces: Sequence[str]) -> str:
        """Pieces -> text: the words' texts joined by single spaces."""
        return " ".join(self.text(pieces[start:end]) for start, end in self.spans(pieces))

    def whole_word(self, word: str) -> str:
        """The piece that spells `word` alone, as a word of its own ("cat"; SentencePiece: "▁cat")."""
        return self.marker + word if self.starts_word else word

    def is_continuation(self, piece: str) -> bool:
        """Whether `piece` can only continue a word (never start one after another word)."""
        return piece.startswith(self.marker) != self.starts_word


WORDPIECE = Subwords(PREFIX, starts_word=False)
SENTENCEPIECE = Subwords("\u2581", starts_word=True)


def word_spans(pieces: Sequence[str]) -> list[Span]:
    """The words of a piece sequence of our WordPiece vocabulary, as [start, end) spans in order."""
    return WORDPIECE.spans(pieces)


def word_text(pieces: Sequence[str]) -> str:
    """The text a word's pieces spell: "##" markers removed."""
    return WORDPIECE.text(pieces)


def detokenize(pieces: Sequence[str]) -> str:
    """Pieces -> text: the words' texts joined by single spaces."""
    return WORDPIECE.detokenize(pieces)


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
