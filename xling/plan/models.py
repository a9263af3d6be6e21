"""The `{lm}` model-id grammar, written once: the wildcard constraints of the rules and the parsing of an id.

    bert/{size}-w{window}             our BERT of one data size and context window (glove/..., word2vec/...: the
                                      static models of the same grid)
    hf/{slug}                         a Hugging Face checkpoint (slug: `hf_slug` of its name)
    aligned/{n}/{base}                a BERT above (ours or a checkpoint) fine-tuned for alignment on n pairs
    ablation/{setting}/{pivot}-{lang} a bilingual BERT of Conneau et al.'s ablations
"""

from __future__ import annotations

import os
import posixpath
import re

GRID = r"\d+-w\d+"  # {size}-w{window}
HF = r"hf/[A-Za-z0-9._-]+"
ALIGNED = rf"aligned/\d+/(bert/{GRID}|{HF})"
ABLATION = r"ablation/[a-z0-9-]+/[a-z][a-z0-9_]*-[a-z][a-z0-9_]*"
BERT_LM = "|".join((f"bert/{GRID}", HF, ALIGNED, ABLATION))  # {lm} of a BERT
ANY_LM = "|".join((rf"(bert|glove|word2vec)/{GRID}", HF, ALIGNED, ABLATION))  # {lm} of any model


def grid_id(model: str, size: int, window: int) -> str:
    return f"{model}/{size}-w{window}"


def parse_grid(rest: str) -> tuple[int, int]:
    """(size, window) of `{size}-w{window}`."""
    size, window = re.fullmatch(r"(\d+)-w(\d+)", rest).groups()
    return int(size), int(window)


def aligned_base(lm: str) -> tuple[int, str] | None:
    """(n, base lm id) of an aligned/{n}/{base} model id, None for any other."""
    match = re.fullmatch(r"aligned/(\d+)/(.+)", lm)
    return (int(match.group(1)), match.group(2)) if match else None


def hf_slug(name: str) -> str:
    """File-system name of a Hugging Face checkpoint: a local directory's name, or the hub id with slashes as '--'."""
    base = os.path.basename(os.path.normpath(name)) if os.path.isdir(name) else name.replace(posixpath.sep, "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", base)
