"""Conneau et al. (2020, Table 1) ablations of a bilingual masked LM, as options of the one trainer
(xling.models.bert): what a setting name means, which parameters are language-specific, where a language's view
of a model lives (their rows of a transfer table: xling.evaluate.ablation). Free of torch (the trainer builds the
views: xling.models.mlm.build_views), so the workflow, the findings and the report import it. The one loader
(xling.models.pretrained) reads `view_path` here; the vocabularies and code-switching that only pretraining uses
are in xling.models.anchors, so an edit there reruns no job that only loads a BERT.

Setting names (the `{setting}` of the `ablation/{setting}/{pair}` model id):
  default        everything shared (the joint WordPiece vocabulary, one embedding, one softmax)
  default-anchors  language-specific vocabularies, the model's their union: a string both have is one id (the
                 paper's "Default anchors"); each language segments its text with its own vocabulary
  wiki-cc        the second language's corpus from another domain (data only)
  no-anchors     language-specific vocabularies, every entry prefixed with its language: no id is shared
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
import re
from pathlib import Path

from xling.plan.ablation import parse_setting  # noqa: F401  (re-exported: the setting names, parsed without torch)

SPEC_FILE = "ablation.json"


def check_spec(spec: dict, num_layers: int) -> dict:
    """The trainer's ablation spec with its defaults; ValueError for an unknown key or a value out of range."""
    defaults = {
        "separate_embeddings": False,
        "separate_layers": 0,
        "anchors": "default",
        "domain": "same",
        "sampling_exponent": 0.7,
        "sampling_share": "blocks",
        "sentences": None,
        "code_switch": None,
    }
    unknown = sorted(set(spec) - set(defaults))
    if unknown:
        raise ValueError(f"unknown ablation key(s) {unknown}; known: {sorted(defaults)}")
    out = {**defaults, **spec}
    if not 0 <= int(out["separate_layers"]) < num_layers:
        raise ValueError(
            f"separate_layers must be in 0..{num_layers - 1} (the top layer stays shared), not {out['separate_layers']}"
        )
    if out["anchors"] not in ("default", "union", "none", "extra"):
        raise ValueError(f"anchors must be default, union, none or extra, not {out['anchors']!r}")
    if not 0 < float(out["sampling_exponent"]) <= 1:
        raise ValueError(f"sampling_exponent must be in (0, 1], not {out['sampling_exponent']}")
    if out["sampling_share"] not in ("sentences", "blocks"):
        raise ValueError(f"sampling_share must be sentences or blocks, not {out['sampling_share']!r}")
    if out["sampling_share"] == "sentences" and not (isinstance(out["sentences"], int) and out["sentences"] > 0):
        raise ValueError(
            "sampling_share sentences needs `sentences`, each language's training sentences (a positive "
            f"integer), not {out['sentences']!r}"
        )
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
        raise ValueError(
            f"{Path(path) / SPEC_FILE}: an ablated model has one view per language "
            f"{spec['languages']}; say which language the text is in (got {language!r})"
        )
    return Path(path) / language
