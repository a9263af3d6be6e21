"""Tatoeba as LASER v1 releases it -> tatoeba/tatoeba.{lang}-eng.{lang,eng}, renamed from ISO 639-3 to the
study's two-letter codes.
"""

from __future__ import annotations

import logging
from pathlib import Path

from xling.data.formats import FormatError, PathLike
from xling.data.upstream.archives import _display, _log_counts, _read_members
from xling.io import atomic_write

logger = logging.getLogger(__name__)

#: study language code -> ISO 639-3 code of the LASER v1 Tatoeba files (as XTREME's utils_preprocess)
TATOEBA_CODES = {
    "ar": "ara",
    "bg": "bul",
    "de": "deu",
    "el": "ell",
    "es": "spa",
    "fr": "fra",
    "hi": "hin",
    "ru": "rus",
    "sw": "swh",
    "th": "tha",
    "tr": "tur",
    "ur": "urd",
    "vi": "vie",
    "zh": "cmn",
}


def tatoeba_code(lang: str) -> str:
    try:
        return TATOEBA_CODES[lang]
    except KeyError:
        raise ValueError(
            f"no Tatoeba code for language {lang!r} (known: {', '.join(f'{k}={v}' for k, v in TATOEBA_CODES.items())})"
        ) from None


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
        raise FormatError(
            f"{_display(source, src_name)}: {len(src)} lines, but {_display(source, eng_name)}: {len(eng)} lines"
        )
    if not src:
        raise FormatError(f"{_display(source, src_name)}: no sentence pairs")
    empty = sum(1 for a, b in zip(src, eng, strict=True) if not a.strip() or not b.strip())
    if empty:
        logger.warning("%s: %d Tatoeba pairs with an empty side (kept, to keep the alignment)", source, empty)
    out_dir = Path(out_dir)
    for side, lines in ((lang, src), ("eng", eng)):
        with atomic_write(out_dir / f"tatoeba.{lang}-eng.{side}") as out:
            out.writelines(line + "\n" for line in lines)
    return _log_counts(f"Tatoeba {code}-eng -> {lang}", {"pairs": len(src), "empty_pairs": empty})
