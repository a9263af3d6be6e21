"""The mBERT cased vocabulary from Google's release zip or a plain file, copied verbatim and checked."""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath

from xling.data.formats import FormatError, PathLike
from xling.data.upstream.archives import _display, _log_counts, archive_errors, is_archive, iter_members, member_lines
from xling.io import atomic_write

logger = logging.getLogger(__name__)

MBERT_CASED_VOCAB_SIZE = 119547
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def mbert_vocab(
    source: PathLike, out_path: PathLike, expected_size: int | None = MBERT_CASED_VOCAB_SIZE, strict: bool = True
) -> dict:
    """mBERT cased vocab: Google's `multi_cased_L-12_H-768_A-12.zip` (member
    `multi_cased_L-12_H-768_A-12/vocab.txt`) or a plain vocab file -> `out_path`, copied verbatim.

    Checks one token per line, BERT's special tokens present, and `expected_size` lines
    (119,547 for the 2018-11-23 cased model): a different size raises (strict) or warns.
    """
    want = (
        (lambda n: PurePosixPath(n).name == "vocab.txt")
        if is_archive(source) or Path(source).is_dir()
        else (lambda n: True)
    )
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
