"""Sentence splitting for the study's 15 languages, behind one function.

Why a wrapper: the corpus sizes of the papers are counted in sentences, so every language must be
split by rules that fit its script. `sentencex` (Wikimedia; rule-based, Rust core, fast) covers the
punctuation of 14 of them: Latin/Cyrillic/Greek `. ! ?` with per-language abbreviation lists,
Greek `;` as question mark, Chinese `。！？`, Hindi/Urdu danda `।` and `۔`, Arabic `؟`. Thai writes
no sentence punctuation (a space separates sentences and clauses), so Thai goes to PyThaiNLP's
CRF sentence segmenter ("crfcut", trained on Thai TED and ORCHID) instead.

Two guards around sentencex, both keep the text unchanged (they only change what the splitter
sees, character for character, and slice the original at its boundaries):
- U+037E GREEK QUESTION MARK is shown to it as `;` (NFC makes the same mapping later anyway);
- sentencex never splits inside quotes or brackets, so one unbalanced `"`, `«` or `(` can glue a
  whole paragraph into one "sentence"; a piece longer than `max_chars` is split again with those
  characters hidden. Pieces still too long are kept (counted in the debug log).
Unicode normalization is not done here (see corpus.prepare).
"""

from __future__ import annotations

import logging
from typing import Callable

logger = logging.getLogger(__name__)

#: language code -> splitter used (documented in spec/data.md)
SPLITTERS: dict[str, str] = {
    **{
        lang: "sentencex"
        for lang in ("en", "fr", "es", "de", "el", "bg", "ru", "tr", "ar", "vi", "zh", "hi", "sw", "ur")
    },
    "th": "pythainlp-crfcut",
}
LANGUAGES: tuple[str, ...] = tuple(SPLITTERS)

_SEEN = str.maketrans({"\u037e": ";"})
#: sentencex suppresses boundaries inside "...", '...' and paired brackets/quotes (« », “ ”, ( ) ...);
#: the fallback shows every such character as ’, which it neither pairs nor treats as an opener
_ENCLOSURES = "\"'“”„‘’«»‹›「」『』()[]{}（）"
_ENCLOSURES_HIDDEN = str.maketrans({"\u037e": ";", **{c: "\u2019" for c in _ENCLOSURES}})


def _check_lang(lang: str) -> None:
    if lang not in SPLITTERS:
        raise ValueError(f"no sentence splitter configured for language {lang!r} (known: {' '.join(LANGUAGES)})")


def _slices(original: str, pieces: list[str]) -> list[str]:
    """Cut `original` at the boundaries of `pieces` (a same-length, translated copy's split)."""
    out, start = [], 0
    for piece in pieces:
        out.append(original[start : start + len(piece)])
        start += len(piece)
    if start != len(original):  # the splitter must cover the whole text; never lose characters
        raise RuntimeError(f"sentence splitter dropped characters ({start} of {len(original)})")
    return out


def _sentencex(text: str, lang: str, table: dict) -> list[str]:
    from sentencex import segment

    return _slices(text, list(segment(lang, text.translate(table))))


def _thai(text: str) -> list[str]:
    from pythainlp.tokenize import sent_tokenize

    return sent_tokenize(text, engine="crfcut")


def _split_paragraph(paragraph: str, lang: str, max_chars: int, stats: dict) -> list[str]:
    if lang == "th":
        return [s.strip() for s in _thai(paragraph) if s.strip()]
    out = []
    for piece in _sentencex(paragraph, lang, _SEEN):
        piece = piece.strip()
        if len(piece) > max_chars:
            stats["resplit"] += 1
            parts = [p.strip() for p in _sentencex(piece, lang, _ENCLOSURES_HIDDEN)]
            stats["too_long"] += sum(len(p) > max_chars for p in parts)
            out.extend(parts)
        else:
            out.append(piece)
    return [s for s in out if s]


def split_sentences(text: str, lang: str, max_chars: int = 1000) -> list[str]:
    """Split `text` into sentences for `lang`; line breaks always end a sentence.

    Whitespace inside a line is collapsed to single spaces (sentences are written one per line).
    Raises ValueError for a language without a configured splitter.
    """
    _check_lang(lang)
    stats = {"resplit": 0, "too_long": 0}
    sentences: list[str] = []
    for line in text.splitlines():
        paragraph = " ".join(line.split())
        if paragraph:
            sentences.extend(_split_paragraph(paragraph, lang, max_chars, stats))
    if stats["resplit"]:
        logger.debug(
            "%s: %d over-long pieces re-split with quotes/brackets hidden, %d still > %d chars",
            lang,
            stats["resplit"],
            stats["too_long"],
            max_chars,
        )
    return sentences


def splitter(lang: str) -> Callable[[str], list[str]]:
    """Return `split_sentences` bound to `lang` (checked now, so a bad code fails early)."""
    _check_lang(lang)
    return lambda text: split_sentences(text, lang)


def check_sentence_count(lang: str, got: int, asked: int, min_fraction: float) -> None:
    """Raise ValueError when `lang` yielded fewer than `min_fraction` x `asked` sentences.

    A language that silently comes up short would make corpus-size comparisons meaningless;
    a small shortfall is only logged.
    """
    if not 0.0 <= min_fraction <= 1.0:
        raise ValueError(f"min_fraction must be in [0, 1], got {min_fraction}")
    if got < min_fraction * asked:
        raise ValueError(
            f"{lang}: got {got} sentences but {asked} were asked ({got / asked:.1%} < required {min_fraction:.0%})"
        )
    if got < asked:
        logger.warning("%s: got %d sentences, fewer than the %d asked (%.1f%%)", lang, got, asked, 100.0 * got / asked)
