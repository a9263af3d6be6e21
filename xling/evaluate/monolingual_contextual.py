"""Contextual word-level alignment of monolingual BERTs (Conneau et al. 2020, section 5.1.2, Figure 5).

Why: the word and sentence levels (xling.evaluate.monolingual) show that two BERTs that share no parameter can be
mapped onto each other by a rotation; this level asks whether the map carries what a task model needs, by
zero-shot transfer of NER and parsing through it. For each layer i (0 = the embedding output):

1. word pairs: XNLI's parallel sentences (pivot, target) cut into words and linked by the run's aligner both ways
   (fast_align, the paper's "fastAlign", by default; eflomal, which has no seed, as a choice), the one-to-one
   intersection (xling.data.alignment);
2. the map: each linked word's contextual vector at layer i (its last subword's: sentence_word_vectors, as every
   word vector of the alignment study) in the pivot's and the target's monolingual BERT; each space is normalised
   by iterative normalisation fitted on all the map sentences' word vectors of that model (IterativeNormalizer),
   and W_i = Procrustes from the target's normalised space onto the pivot's (xling.represent.rotation);
3. transfer: a task model on the pivot's model cut after layer i (embeddings and layers 1..i frozen), then
   `task_layers` new Transformer layers (BertLayer of the model's config) and the task's head, trained on the
   pivot's training set with the task's fine-tuning settings (xling.tune.finetune), the states at layer i
   normalised by the pivot's normaliser in training and testing. A target sentence runs through the TARGET
   model's layers 1..i, its normaliser and W_i, then the trained task layers and head. The pivot's test score
   is measured beside it;
4. the paper's baseline (biMLM): the same task layers on the first i layers of one multilingual model, trained on
   the pivot and tested on the target as it is: no normaliser, no map.

The normaliser and the map act on every position of layer i ([CLS], [SEP] and every wordpiece) through a forward
hook (xling.represent.rotation.rotate_layer), so the task layers read mapped states wherever they attend.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import inspect
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from xling.data.alignment import Links, directional_links, tokenize, word_pairs
from xling.data.transfer_tasks import TASK_METRIC
from xling.encode.encoder import sentence_word_vectors
from xling.evaluate.transfer import load_finetuned, score
from xling.models.pretrained import layer_modules
from xling.represent.rotation import IterativeNormalizer, linked_rows, procrustes, rotate_layer
from xling.tune.finetune import FinetuneRun, fingerprint, finetune, predict
from xling.tune.heads import Backbone, BertEncoder, load_bert

logger = logging.getLogger(__name__)

KINDS = ("mlm-align", "bimlm")


@dataclass
class LayerMap:
    """What sends one model's states at a layer into the task layers' input space: normalizer(h) @ w."""

    normalizer: IterativeNormalizer
    w: np.ndarray
    n_pairs: int = 0

    def hook(self, bert, layer: int):
        return rotate_layer(bert, layer, self.w, normalizer=self.normalizer)

    def key(self) -> str:
        """A content hash (part of a fine-tuning checkpoint's key: another map never resumes a stale run)."""
        digest = hashlib.blake2b(digest_size=8)
        for array in (self.normalizer.means, self.w):
            digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
        return digest.hexdigest()


def xnli_word_pairs(
    pairs: Sequence[tuple[str, str]], pivot: str, lang: str, *, tokenizer: str, aligner: str, settings: dict, what: str
) -> tuple[list[list[str]], list[list[str]], list[Links]]:
    """The words of each (pivot, target) sentence pair and their one-to-one links by `aligner` (with its
    `settings`: xling.data.alignment.directional_links); pairs with an empty
    side are left out. Raises ValueError naming `what` (the files) when no pair is left or no word is linked."""
    src = tokenize([p for p, _ in pairs], pivot, tokenizer)
    tgt = tokenize([t for _, t in pairs], lang, tokenizer)
    kept = [k for k, (s, t) in enumerate(zip(src, tgt, strict=True)) if s and t]
    if not kept:
        raise ValueError(f"{what}: no parallel sentence pair with words on both sides")
    src, tgt = [src[k] for k in kept], [tgt[k] for k in kept]
    links = word_pairs(*directional_links(src, tgt, aligner, settings))
    n_links = sum(map(len, links))
    if not n_links:
        raise ValueError(f"{what}: {aligner} linked no word pair in {len(src)} sentence pairs; no map can be learned")
    logger.info(
        "%s: %d sentence pairs, %d word pairs (one-to-one intersection of %s's two directions)",
        what,
        len(src),
        n_links,
        aligner,
    )
    return src, tgt, links


def layer_maps(
    encoders: tuple,
    pivot_words: list[list[str]],
    target_words: list[list[str]],
    links: list[Links],
    layers: Sequence[int],
    *,
    n_iter: int,
    batch_size: int,
) -> dict[int, tuple[LayerMap, LayerMap]]:
    """{layer: (the pivot's map, the target's map)} for (pivot, target) encoders (xling.encode.Encoder): each
    space's normaliser fitted on all its word vectors of the sentences, the pivot's w the identity, the target's
    Procrustes on the linked words (target -> pivot). Raises ValueError when no linked pair has two vectors."""
    maps = {}
    for layer in layers:
        vectors = [
            sentence_word_vectors(encoder, words, layer, batch_size, what=f"map sentences ({side}, layer {layer})")
            for encoder, words, side in zip(encoders, (pivot_words, target_words), ("pivot", "target"), strict=True)
        ]
        x, y = linked_rows(vectors[0], vectors[1], links)  # (target rows, pivot rows)
        if not len(x):
            raise ValueError(
                f"layer {layer}: none of the {sum(map(len, links))} word pairs has a vector on both "
                "sides; no map can be learned"
            )
        pivot_norm, target_norm = (IterativeNormalizer.fit(_rows(v), n_iter) for v in vectors)
        w = procrustes(target_norm(x), pivot_norm(y))
        maps[layer] = (LayerMap(pivot_norm, np.eye(len(w))), LayerMap(target_norm, w, len(x)))
        logger.info("layer %d: map learned on %d word pairs", layer, len(x))
    return maps


def _rows(sentences: list[np.ndarray]) -> np.ndarray:
    """Every word vector of the sentences that exists (NaN rows: no vector)."""
    rows = np.concatenate(sentences)
    return rows[~np.isnan(rows).any(axis=1)]


def stitched_backbone(model_dir, layer: int, task_layers: int, seed: int) -> Backbone:
    """A BERT of the model's embeddings and layers 1..`layer` (frozen), then `task_layers` new BertLayers of the
    model's config and class (transformers' initialisation under torch seed `seed`), with the model's tokenizer."""
    pretrained = load_bert(model_dir)
    bert = pretrained.encoder.bert
    if not 0 <= layer <= bert.config.num_hidden_layers:
        raise ValueError(f"layer {layer} outside 0..{bert.config.num_hidden_layers} ({model_dir})")
    if task_layers < 1:
        raise ValueError(f"task_layers must be >= 1, got {task_layers}")
    config = copy.deepcopy(bert.config)
    config.num_hidden_layers = layer + task_layers
    torch.manual_seed(seed)
    no_pooler = {"add_pooling_layer": False} if "add_pooling_layer" in inspect.signature(type(bert)).parameters else {}
    stitched = type(bert)(config, **no_pooler)
    _copy_bottom(bert, stitched, layer)
    for module in layer_modules(stitched)[: layer + 1]:
        for p in module.parameters():
            p.requires_grad_(False)
    return Backbone("bert", BertEncoder(stitched), None, pretrained.featurizer_args, pretrained.tokenizer)


def _copy_bottom(source, target, layer: int) -> None:
    """source's embeddings and layers 1..layer into target's (both transformers BertModels, or both of another
    masked LM's class)."""
    for source_module, target_module in zip(
        layer_modules(source)[: layer + 1], layer_modules(target)[: layer + 1], strict=True
    ):
        target_module.load_state_dict(source_module.state_dict())


def _hooked(layer_map: LayerMap | None, bert, layer: int):
    return layer_map.hook(bert, layer) if layer_map is not None else contextlib.nullcontext()


def train_task_layers(
    task: str,
    backbone: Backbone,
    layer: int,
    data: dict,
    out_dir,
    checkpoint_dir,
    *,
    pivot_map: LayerMap | None,
    settings: dict,
    seed: int,
    pivot: str,
    device,
    identity: dict,
) -> dict:
    """Fine-tune a stitched backbone's task layers and head on data["train"] (selection on data["dev"], the
    pivot's), the states at `layer` through `pivot_map` (None: as they are); writes out_dir as
    xling.tune.finetune does and returns its record. The frozen layers 1..layer keep their weights."""
    identity = {**identity, "layer": layer, "map": pivot_map.key() if pivot_map is not None else None}
    with _hooked(pivot_map, backbone.encoder.bert, layer):
        return finetune(
            task,
            backbone,
            data["train"],
            {pivot: data["dev"]},
            out_dir,
            checkpoint_dir,
            settings,
            FinetuneRun(seed=seed, freeze=layer, selection="en_dev", pivot=pivot, identity=identity, device=device),
            score=score,
        )


def score_through(
    finetuned,
    task: str,
    layer: int,
    examples: list,
    *,
    bottom=None,
    layer_map: LayerMap | None = None,
    batch_size: int,
    device,
    ner_repair: bool,
) -> dict:
    """{metric: (percent, n)} of a stitched task model (finetuned: its output directory) on `examples`, its
    layers 1..layer replaced by those of the BERT directory `bottom` (read with bottom's tokenizer), the
    states at `layer` sent through `layer_map`."""
    record, model, backbone = load_finetuned(finetuned)
    if bottom is not None:
        other = load_bert(bottom)
        _copy_bottom(other.encoder.bert, backbone.encoder.bert, layer)
        backbone = Backbone("bert", backbone.encoder, None, other.featurizer_args, other.tokenizer)
    model.to(device)
    features = backbone.featurizer(task, record["settings"]["max_length"], record["labels"])(examples)
    with _hooked(layer_map, backbone.encoder.bert, layer):
        predictions = predict(model, task, features, batch_size, device, backbone.pad_id)
    return score(task, examples, predictions, record["labels"], ner_repair)


def transfer_layer(
    task: str,
    data: dict,
    layer: int,
    *,
    pivot_model,
    target_model=None,
    maps: tuple[LayerMap, LayerMap] | None,
    task_layers: int,
    settings: dict,
    seed: int,
    pivot: str,
    checkpoint_dir,
    batch_size: int,
    device,
    ner_repair: bool,
) -> dict:
    """Train task layers on `pivot_model` cut after `layer` (data: train, dev, test_pivot, test_target) and score
    the pivot's test set and the target's: through `target_model`'s bottom and the target map (mlm-align, `maps`
    = (pivot map, target map)), or through the same model with no map (biMLM: target_model and maps None).
    Returns {"pivot": scores, "target": scores, "record": the fine-tuning record}. The trained model is read back
    from a temporary directory in checkpoint_dir, where the fine-tuning's resume checkpoints live."""
    pivot_map, target_map = maps if maps is not None else (None, None)
    backbone = stitched_backbone(pivot_model, layer, task_layers, seed)
    Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=checkpoint_dir) as tmp:
        out = Path(tmp) / "model"
        record = train_task_layers(
            task,
            backbone,
            layer,
            data,
            out,
            checkpoint_dir,
            pivot_map=pivot_map,
            settings=settings,
            seed=seed,
            pivot=pivot,
            device=device,
            identity={"model": fingerprint(pivot_model), "task_layers": task_layers},
        )
        common = dict(batch_size=batch_size, device=device, ner_repair=ner_repair)
        scores = {
            "pivot": score_through(out, task, layer, data["test_pivot"], layer_map=pivot_map, **common),
            "target": score_through(
                out, task, layer, data["test_target"], bottom=target_model, layer_map=target_map, **common
            ),
        }
    return {**scores, "record": record}


def contextual_transfer_table(
    task: str,
    data: dict,
    layers: Sequence[int],
    *,
    models: dict,
    maps: dict,
    pivot: str,
    task_layers: int,
    settings: dict,
    seed: int,
    checkpoint_dir,
    batch_size: int,
    device,
    ner_repair: bool = True,
) -> pd.DataFrame:
    """Figure 5's numbers for one task and target: one row per (kind, layer, metric) with the target's score
    (`value`, `n`) and the pivot's (`pivot_value`, `pivot_n`). models: {kind: (pivot model dir, target model dir
    or None)} for kinds of KINDS; maps: layer_maps' output (mlm-align only)."""
    rows = []
    for kind, (pivot_model, target_model) in models.items():
        if kind not in KINDS:
            raise ValueError(f"unknown model kind {kind!r} (known: {', '.join(KINDS)})")
        for n, layer in enumerate(layers, start=1):
            pair = maps[layer] if kind == "mlm-align" else None  # (pivot map, target map)
            result = transfer_layer(
                task,
                data,
                layer,
                pivot_model=pivot_model,
                target_model=target_model,
                maps=pair,
                task_layers=task_layers,
                settings=settings,
                seed=seed,
                pivot=pivot,
                checkpoint_dir=Path(checkpoint_dir) / kind / f"layer{layer}",
                batch_size=batch_size,
                device=device,
                ner_repair=ner_repair,
            )
            main = TASK_METRIC[task]
            logger.info(
                "%s layer %d (%d/%d): %s target %.2f, %s %.2f",
                kind,
                layer,
                n,
                len(layers),
                main,
                result["target"][main][0],
                pivot,
                result["pivot"][main][0],
            )
            for metric, (value, count) in result["target"].items():
                pivot_value, pivot_count = result["pivot"][metric]
                rows.append(
                    {
                        "kind": kind,
                        "layer": int(layer),
                        "metric": metric,
                        "value": float(value),
                        "n": int(count),
                        "pivot_value": float(pivot_value),
                        "pivot_n": int(pivot_count),
                        "n_map_pairs": pair[1].n_pairs if pair else 0,
                        "best_epoch": result["record"]["best_epoch"],
                        "trainable_parameters": result["record"]["trainable_parameters"],
                    }
                )
    return pd.DataFrame(rows).assign(task=task, task_layers=task_layers, seed=seed)
