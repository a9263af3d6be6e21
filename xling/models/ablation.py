"""Conneau et al. (2020, Table 1) ablations of a bilingual masked LM, as options of the one trainer
(xling.models.bert): what a setting name means, which parameters are language-specific, where a language's view
of a model lives, language-specific vocabularies and dictionary code-switching (their rows of a transfer table:
xling.evaluate.ablation). Free of torch (the trainer builds the views: xling.models.bert.build_views), so the
workflow, the findings and the report import it.

Setting names (the `{setting}` of the `ablation/{setting}/{pair}` model id):
  default        everything shared (the joint WordPiece vocabulary, one embedding, one softmax)
  wiki-cc        the second language's corpus from another domain (data only)
  no-anchors     language-specific vocabularies: every piece prefixed with its language, so no id is shared
  extra-anchors  dictionary code-switching of the training text (data only)
  sep-emb        a language-specific embedding layer (word, position and type embeddings, LayerNorm) and
                 therefore a language-specific MLM head (softmax tied to it)
  sep-l{k}       language-specific transformer layers 1..k (the top layer stays shared)
  sep-emb-l{k}   both

A trained ablation is a directory with `ablation.json` (the spec and its languages) and one subdirectory per
language: that language's VIEW, a plain BertForMaskedLM directory (save_pretrained + tokenizer + vocab.txt)
holding the shared parameters and that language's own. Every tool that runs a BERT loads the view of the
language it reads (`view_path`), so the one encoder, fine-tuning and scoring need no other change.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Iterable

import numpy as np

from xling.data.words import PREFIX, word_spans, word_text
from xling.io import atomic_write, read_lines
from xling.plan.ablation import parse_setting  # noqa: F401  (re-exported: the setting names, parsed without torch)

logger = logging.getLogger(__name__)

SPEC_FILE = "ablation.json"
SEPARATOR = "@"  # language prefix of a piece in another language's vocabulary ("xa@##ka"); BERT splits on '@'


def check_spec(spec: dict, num_layers: int) -> dict:
    """The trainer's ablation spec with its defaults; ValueError for an unknown key or a value out of range."""
    defaults = {"separate_embeddings": False, "separate_layers": 0, "anchors": "default", "domain": "same",
                "sampling_exponent": 0.7}
    unknown = sorted(set(spec) - set(defaults))
    if unknown:
        raise ValueError(f"unknown ablation key(s) {unknown}; known: {sorted(defaults)}")
    out = {**defaults, **spec}
    if not 0 <= int(out["separate_layers"]) < num_layers:
        raise ValueError(f"separate_layers must be in 0..{num_layers - 1} (the top layer stays shared), "
                         f"not {out['separate_layers']}")
    if out["anchors"] not in ("default", "none", "extra"):
        raise ValueError(f"anchors must be default, none or extra, not {out['anchors']!r}")
    if not 0 < float(out["sampling_exponent"]) <= 1:
        raise ValueError(f"sampling_exponent must be in (0, 1], not {out['sampling_exponent']}")
    return out


def is_language_specific(name: str, spec: dict) -> bool:
    """Whether a BertModel parameter (`embeddings.word_embeddings.weight`, `encoder.layer.2.output...`; a
    `bert.` prefix is ignored) belongs to one language under `spec`."""
    name = name.removeprefix("bert.")
    if name.startswith("embeddings."):
        return bool(spec["separate_embeddings"])
    match = re.match(r"encoder\.layer\.(\d+)\.", name)
    return bool(match) and int(match[1]) < int(spec["separate_layers"])


def freeze_language_specific(bert, spec: dict) -> int:
    """Freeze a BertModel's language-specific parameters (fine-tuning on English leaves them as pretrained, so
    another language's view can take their place when testing); returns how many tensors were frozen."""
    frozen = 0
    for name, parameter in bert.named_parameters():
        if is_language_specific(name, spec):
            parameter.requires_grad_(False)
            frozen += 1
    return frozen


# ---------------------------------------------------------------------------------------------- model dirs

def read_spec(path) -> dict | None:
    """The ablation.json of a model directory ({"spec", "languages"}), None for a plain BERT directory."""
    file = Path(path) / SPEC_FILE
    if not file.is_file():
        return None
    return json.loads(file.read_text(encoding="utf-8"))


def view_path(path, language: str | None) -> Path | str:
    """The directory to load for text in `language`: the view of an ablated model, the path itself otherwise."""
    spec = read_spec(path)
    if spec is None:
        return path
    if language not in spec["languages"]:
        raise ValueError(f"{Path(path) / SPEC_FILE}: an ablated model has one view per language "
                         f"{spec['languages']}; say which language the text is in (got {language!r})")
    return Path(path) / language


# ---------------------------------------------------------------------------------------------- vocabularies

def language_vocabularies(pieces: list[str], used: dict[str, set[str]], special: Iterable[str]
                          ) -> dict[str, list[str]]:
    """No anchors: language-specific vocabularies with no shared id. The union is the `special` tokens (shared
    model machinery: [CLS], [MASK], ...), then each language's block: the pieces its token files use and
    every single character (so any word of the language can still be spelled), in joint-vocabulary order.
    Returns, per language, the union as that language's tokenizer reads it: its own block as it is, every
    other block prefixed with its language ("xa@##ka", a string no text tokenizes to)."""
    special = set(special)
    head = [p for p in pieces if p in special]
    blocks = {lang: [p for p in pieces if p not in special and (p in seen or len(p.removeprefix(PREFIX)) == 1)]
              for lang, seen in used.items()}
    return {lang: head + [p if other == lang else f"{other}{SEPARATOR}{p}"
                             for other, block in blocks.items() for p in block]
            for lang in used}


def used_pieces(token_path) -> set[str]:
    """Every piece of a token file."""
    seen: set[str] = set()
    for _, line in read_lines(token_path):
        seen.update(line.split())
    return seen


def write_vocab(pieces: Iterable[str], path) -> None:
    with atomic_write(path) as handle:
        handle.writelines(p + "\n" for p in pieces)


# ---------------------------------------------------------------------------------------------- code-switching

def code_switch(token_path, out_path, dictionary: dict[str, list[str]], pieces_of, *, rate: float,
                max_fraction: float, seed: int | tuple[int, ...]) -> dict:
    """Extra anchors (Conneau et al. 2020 §4.2): each word of a token file that the dictionary has is replaced
    by one of its translations (uniformly) with probability `rate`, at most `max_fraction` of a document's
    words (the paper: of a batch's; when more are drawn, a uniform subset of that many is kept), once for the
    whole training (the paper draws again in every batch). Words are xling.data.words'; a translation is
    written as `pieces_of(word)` gives it. Deterministic for a seed. Returns counts: words, dictionary_words,
    switched."""
    rng = np.random.default_rng(seed)
    counts = Counter()
    with atomic_write(out_path) as out:
        for _, line in read_lines(token_path):
            pieces = line.split()
            spans = word_spans(pieces)
            words = [word_text(pieces[s:e]) for s, e in spans]
            candidates = [i for i, w in enumerate(words) if w in dictionary]
            chosen = [i for i in candidates if rng.random() < rate]
            cap = int(max_fraction * len(words))
            if len(chosen) > cap:
                chosen = sorted(rng.choice(chosen, size=cap, replace=False).tolist())
            replace = {i: pieces_of(dictionary[words[i]][int(rng.integers(len(dictionary[words[i]])))])
                       for i in chosen}
            new = [p for i, (s, e) in enumerate(spans) for p in replace.get(i, pieces[s:e])]
            out.write(" ".join(new) + "\n")
            counts.update(words=len(words), dictionary_words=len(candidates), switched=len(chosen))
    logger.info("%s -> %s: %d of %d dictionary words switched (%.1f%%; %.1f%% of all %d words)", token_path, out_path,
                counts["switched"], counts["dictionary_words"], 100 * counts["switched"] / max(counts["dictionary_words"], 1),
                100 * counts["switched"] / max(counts["words"], 1), counts["words"])
    return dict(counts)


def translations(pairs: list[tuple[str, str]], reverse: bool) -> dict[str, list[str]]:
    """{word: its translations} of dictionary pairs (source, target); reverse: from the target side."""
    out: dict[str, list[str]] = {}
    for a, b in pairs:
        src, tgt = (b, a) if reverse else (a, b)
        if tgt not in out.setdefault(src, []):
            out[src].append(tgt)
    return out
