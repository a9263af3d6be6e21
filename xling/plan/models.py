"""The `{lm}` model-id grammar, written once: the wildcard constraints of the rules and the parsing of an id.

bert/{size}-w{window}             our BERT of one data size and context window (glove/..., word2vec/...: the
                                  static models of the same grid)
hf/{slug}                         a Hugging Face checkpoint (slug: `hf_slug` of its name)
aligned/{n}/{base}                a BERT above (ours or a checkpoint) fine-tuned for alignment on n pairs
                                  per language of alignment.finetune.languages
aligned/{n}-{lang}-.../{base}     the same on n pairs of each named language (alignment.finetune.runs)
ablation/{setting}/{pivot}-{lang} a bilingual BERT of Conneau et al.'s ablations
"""

from __future__ import annotations

import os
import posixpath
import re

GRID = r"\d+-w\d+"  # {size}-w{window}
HF = r"hf/[A-Za-z0-9._-]+"
LANG = r"[a-z][a-z0-9_]*"
ALIGNED = rf"aligned/\d+(-{LANG})*/(bert/{GRID}|{HF})"
ALIGNED_ID = re.compile(rf"aligned/(\d+)((?:-{LANG})*)/(.+)")  # n, its languages ("-bg-de"), base
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
    """(n, base lm id) of an aligned/{n}[-{lang}...]/{base} model id, None for any other."""
    match = ALIGNED_ID.fullmatch(lm)
    return (int(match.group(1)), match.group(3)) if match else None


def aligned_run(size: int, languages) -> str:
    """The {n} segment of a model aligned on `size` pairs of each of `languages` (sorted, so the id names the
    set): 20000-ar-bg-de-el-es-fr-ur-zh."""
    return "-".join([str(size), *sorted(languages)])


def parse_aligned_run(segment: str) -> tuple[int, list[str] | None]:
    """(size, languages) of an {n} segment; languages None for a bare n (alignment.finetune.languages)."""
    size, *languages = segment.split("-")
    return int(size), languages or None


#: a hub id, `name` or `owner/name` (https://huggingface.co/docs/hub/repositories): what is not is a path
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")


def is_hub_id(name: str) -> bool:
    """Whether a language.hf_models entry is a hub checkpoint (staged by the workflow), not a local directory: as
    transformers decides, an existing directory is local; otherwise its form says which it is."""
    return not os.path.isdir(name) and HUB_ID.fullmatch(name) is not None and ".." not in name


def hf_slug(name: str) -> str:
    """File-system name of a Hugging Face checkpoint: a local directory's name, or the hub id with slashes as '--'."""
    base = os.path.basename(os.path.normpath(name)) if os.path.isdir(name) else name.replace(posixpath.sep, "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", base)
