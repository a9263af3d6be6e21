"""The PNGs each report section draws, as functions of the config alone: the report rule declares them as its
outputs (each with its caption under reports/), the report checks it wrote exactly these. Standard library only,
so the workflow lists them when it is parsed; the table registry (xling.plan.tables) says which tables each
section needs.

A figure is {name, caption (a file under reports/), category, labels} (Snakemake's report()).
"""

from __future__ import annotations

from typing import Mapping

XNLI_CAPTION, WINDOW_CAPTION, ALPHA_CAPTION = "transfer_xnli", "transfer_window_effect", "transfer_mds_alpha"
FREQUENCY_FIGURE, FREQUENCY_CAPTION = "alignment_frequency", "alignment_frequency"
XNLI_RETRIEVAL_FIGURE = "alignment_xnli_retrieval"
FINETUNING_CURVES, ALIGNMENT_CURVES = "transfer_finetuning_curves", "alignment_training_curves"


def size_label(n: int) -> str:
    """200000 -> '200k', 1500000 -> '1.5M'; numbers that do not shorten exactly keep all digits."""
    n = int(n)
    for div, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "k")):
        if n >= div:
            value = n / div
            for digits in (0, 1, 2):
                if round(value, digits) * div == n:
                    return f"{value:.{digits}f}{suffix}"
            return f"{n:,}"
    return str(n)


def _figure(name: str, caption: str, category: str, label: str) -> dict:
    return {"name": name, "caption": f"{caption}.rst", "category": category, "labels": {"figure": label}}


def word_retrieval(config: Mapping) -> list[dict]:
    """MRR by pair per window, the window effect, BERT by layer."""
    out = [
        {
            "name": f"word_retrieval_mrr_by_pair_w{w}",
            "caption": "word_retrieval_mrr_by_pair.rst",
            "category": "Word retrieval",
            "labels": {"figure": "MRR by language pair", "window": str(w)},
        }
        for w in sorted(config.get("windows") or [], reverse=True)
    ]
    out.append(
        {
            "name": "word_retrieval_window_effect",
            "caption": "word_retrieval_window_effect.rst",
            "category": "Word retrieval",
            "labels": {"figure": "window effect", "window": "all"},
        }
    )
    if "bert" in (config.get("models") or []):
        out.append(
            {
                "name": "word_retrieval_bert_layers",
                "caption": "word_retrieval_bert_layers.rst",
                "category": "Word retrieval",
                "labels": {"figure": "BERT by layer", "window": "all"},
            }
        )
    return out


def window_sweep_declared(config: Mapping) -> bool:
    """Whether the run sweeps a window: window_sweep names a window and a static model the run trains."""
    sweep = config.get("window_sweep") or {}
    models = config.get("models") or []
    return bool(sweep.get("windows")) and any(model in models for model in sweep.get("models") or [])


def window_sweep(config: Mapping) -> list[dict]:
    if not window_sweep_declared(config):
        return []
    return [
        {
            "name": "word_retrieval_window_sweep",
            "caption": "word_retrieval_window_sweep.rst",
            "category": "Word retrieval",
            "labels": {"figure": "window sweep of the static models", "window": "sweep"},
        }
    ]


def pretraining(config: Mapping) -> list[dict]:
    return [
        {
            "name": "bert_pretraining_loss",
            "caption": "bert_pretraining_loss.rst",
            "category": "BERT pretraining",
            "labels": {"figure": "pretraining loss", "window": "all"},
        }
    ]


def translation(config: Mapping) -> list[dict]:
    """The token-translation heatmaps and the curve against alpha."""
    return [
        {"name": name, "caption": caption, "category": "Token translation", "labels": {"figure": label}}
        for name, caption, label in (
            ("language_translation_convert_rate", "language_translation_heatmap.rst", "convert rate heatmap"),
            ("language_translation_bleu1", "language_translation_heatmap.rst", "BLEU-1 heatmap"),
            ("language_translation_alpha", "language_translation_alpha.rst", "against alpha"),
        )
    ]


def sentence_retrieval(config: Mapping) -> list[dict]:
    """The Tatoeba-by-layer figure, drawn when every layer is evaluated (sentence_retrieval.all_layers)."""
    if not ((config.get("language") or {}).get("sentence_retrieval") or {}).get("all_layers", True):
        return []
    return [
        {
            "name": "language_tatoeba_layers",
            "caption": "language_tatoeba_layers.rst",
            "category": "Sentence retrieval",
            "labels": {"figure": "Tatoeba by layer"},
        }
    ]


def transfer_sizes(config: Mapping) -> list[int]:
    """The data sizes with an XNLI-by-model figure: every corpus size of the run."""
    return sorted((config.get("corpus") or {}).get("sizes") or [])


def transfer(config: Mapping) -> list[dict]:
    """XNLI by model per data size (corpus.sizes), the window effect and the alpha curves on dev. Each is written
    whatever the table holds (a panel says what is missing), so the list depends on the config alone."""
    category = "Zero-shot transfer"
    out = [
        {
            "name": f"transfer_xnli_{size}",
            "caption": f"{XNLI_CAPTION}.rst",
            "category": category,
            "labels": {"figure": "XNLI by model", "size": size_label(size)},
        }
        for size in transfer_sizes(config)
    ]
    out.append(
        {
            "name": "transfer_xnli_window_effect",
            "caption": f"{WINDOW_CAPTION}.rst",
            "category": category,
            "labels": {"figure": "XNLI window effect", "size": "all"},
        }
    )
    out.append(
        {
            "name": "transfer_mds_alpha",
            "caption": f"{ALPHA_CAPTION}.rst",
            "category": category,
            "labels": {"figure": "MDS alpha on dev", "size": "all"},
        }
    )
    return out


def finetuning_curves(config: Mapping) -> list[dict]:
    return [
        {
            "name": FINETUNING_CURVES,
            "caption": f"{FINETUNING_CURVES}.rst",
            "category": "Zero-shot transfer",
            "labels": {"figure": "fine-tuning curves", "size": "all"},
        }
    ]


def alignment_curves(config: Mapping) -> list[dict]:
    return [
        {
            "name": ALIGNMENT_CURVES,
            "caption": f"{ALIGNMENT_CURVES}.rst",
            "category": "Contextual alignment",
            "labels": {"figure": "alignment fine-tuning curves", "size": "all"},
        }
    ]


def alignment_xnli_retrieval(config: Mapping) -> list[dict]:
    return [
        {
            "name": XNLI_RETRIEVAL_FIGURE,
            "caption": f"{XNLI_RETRIEVAL_FIGURE}.rst",
            "category": "Contextual alignment",
            "labels": {"figure": "XNLI against word retrieval", "size": "all"},
        }
    ]


def alignment_frequency(config: Mapping) -> list[dict]:
    """Written whatever the table holds: a panel says what is missing."""
    return [
        {
            "name": FREQUENCY_FIGURE,
            "caption": f"{FREQUENCY_CAPTION}.rst",
            "category": "Contextual alignment",
            "labels": {"figure": "accuracy by frequency-rank difference", "size": "all"},
        }
    ]


def monolingual_words(config: Mapping) -> list[dict]:
    return [_figure("monolingual_words", "monolingual_words", "Monolingual BERTs", "Word alignment")]


def monolingual_contextual(config: Mapping) -> list[dict]:
    return [_figure("monolingual_contextual", "monolingual_contextual", "Monolingual BERTs", "Contextual alignment")]


def monolingual_sentences(config: Mapping) -> list[dict]:
    return [_figure("monolingual_sentences", "monolingual_sentences", "Monolingual BERTs", "Sentence alignment")]


def cka(config: Mapping) -> list[dict]:
    return [_figure("cka_layers", "cka_layers", "Monolingual BERTs", "CKA by layer")]


def selection_config(config: Mapping) -> dict:
    """report.{metric, dictionary_split, layer, select}, falling back on retrieval.{metric,
    dictionary_split, report_layer}; None means the default (cosine / test / the last BERT layer)."""
    report_cfg, retrieval = config.get("report") or {}, config.get("retrieval") or {}

    def pick(key, fallback):
        value = report_cfg[key] if report_cfg.get(key) is not None else retrieval.get(fallback)
        return (value[0] if value else None) if isinstance(value, (list, tuple)) else value  # first = main

    return {
        "metric": pick("metric", "metric"),
        "dictionary_split": pick("dictionary_split", "dictionary_split"),
        "layer": pick("layer", "report_layer"),
        "select": report_cfg.get("select") or {},
    }
