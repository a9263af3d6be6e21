"""The names of Conneau et al.'s ablation settings, parsed without torch: the rules plan the ablation models from
them, the trainer (xling.models.ablation), the findings and the report read the same spec."""

from __future__ import annotations

import re

SETTING = re.compile(r"(?P<name>default|wiki-cc|no-anchors|extra-anchors)|sep(?P<emb>-emb)?(?:-l(?P<layers>[1-9]\d*))?")


def parse_setting(name: str) -> dict:
    """{separate_embeddings, separate_layers, anchors (default | none | extra), domain (same | other)} of a
    setting name (xling.models.ablation's docstring); ValueError for any other name."""
    match = SETTING.fullmatch(name)
    if not match or name == "sep":
        raise ValueError(f"unknown ablation setting {name!r}: default, wiki-cc, no-anchors, extra-anchors, sep-emb, "
                         "sep-l<k>, sep-emb-l<k>")
    return {"separate_embeddings": bool(match["emb"]), "separate_layers": int(match["layers"] or 0),
            "anchors": {"no-anchors": "none", "extra-anchors": "extra"}.get(match["name"], "default"),
            "domain": "other" if name == "wiki-cc" else "same"}
