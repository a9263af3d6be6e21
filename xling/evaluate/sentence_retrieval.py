"""Sentence retrieval with pooled BERT vectors: Tatoeba accuracy and BUCC 2018 mining F1, each for
three variants of the vectors (Libovický et al. 2020; Liu et al. 2020):

* original   — pooled vectors of a layer;
* zero_mean  — every language centred on its own mean (xling.encode.transforms.zero_mean);
* mds        — the query language moved toward the candidate language: q + alpha (R_cand - R_query)
               (xling.encode.transforms.mds; alpha = 1 puts both means on the same point).

Sentence vector (`pooling`, xling.encode.Encoder.sentence_vectors): mean_words = the mean of the
wordpiece vectors at a layer; mean_all = the mean over every non-pad position, [CLS] and [SEP] included
(XTREME's Tatoeba); cls = the [CLS] vector (XTREME's BUCC). A sentence longer than the window is run in
word-boundary chunks and pooled over all of them. The transforms are linear, so applying them to pooled
vectors equals applying them to every pooled position and pooling. Language means are computed on the
WHOLE evaluation set of each language (as the papers do), over the pooled positions: stat 'sentence' =
the mean of the sentence vectors, 'token' = the mean over all pooled positions (sentence vectors
weighted by their position counts).

Tatoeba: cosine nearest neighbour (argmax, in query blocks) among all sentences of the other side;
accuracy = share of queries whose nearest neighbour is their translation (or a sentence with the same
text). Ties go to the first candidate, as XTREME's argmax: a model that maps every sentence to one
vector scores 1/n, never 1. Both directions are computed, labelled 'queries->candidates': XTREME's
evaluate_retrieval indexes the xx sentences and searches them with the English ones, so the accuracy
XTREME and the papers report is en->xx.

BUCC (XTREME's procedure, from LASER): for every source sentence its best English candidate among its
k nearest neighbours by cosine, and for every English sentence its best source candidate, scored by the
ratio margin cos(x, y) / ((mean_k cos(x, .) + mean_k cos(., y)) / 2) (k = 4; or plain cosine);
candidates of both directions are sorted by score and taken greedily one-to-one ("max" retrieval).
The threshold that maximises F1 on the sample ("dev") split is applied to the test split; precision,
recall and F1 are over the gold (src id, en id) pairs. Everything is computed in query blocks, never
a full similarity matrix. BUCC has no query direction: candidates of both directions compete (BUCC 2018's
task is to mine the pairs of two corpora, XTREME's bucc_optimize scores one set of pairs), so its rows
are labelled xx<->en; only the MDS variant is one-sided (it moves the xx vectors onto English).

Collapsed vectors: vector_spread = 1 - the mean cosine similarity of two different sentences' original
vectors, the smaller of the two sides at that layer (0 = every sentence has the same direction).
"""

from __future__ import annotations

import logging
import math
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from xling.encode.encoder import Encoder
from xling.evaluate import chance
from xling.evaluate.intervals import item_table
from xling.encode.transforms import mds, zero_mean

logger = logging.getLogger(__name__)

VARIANTS = ("original", "zero_mean", "mds")
BUCC_DIRECTION = "xx<->en"  # candidates mined from both sides and kept one-to-one: no query direction


# ---------------------------------------------------------------------------------------------- means, variants

def language_mean(vectors: np.ndarray, counts: np.ndarray, stat: str) -> np.ndarray:
    """Mean of a language from its pooled sentence vectors [n, ..., H] and pooled-position counts [n]:
    'sentence' = plain mean of the vectors, 'token' = mean weighted by the counts (= over all pooled
    positions). Sentences without pieces are left out."""
    keep = counts > 0
    if not keep.any():
        raise ValueError("language_mean: no sentence has any piece")
    v = vectors[keep].astype(np.float64)
    if stat == "sentence":
        return v.mean(axis=0)
    if stat == "token":
        w = counts[keep].astype(np.float64)
        return np.tensordot(w, v, axes=1) / w.sum()
    raise ValueError(f"mean stat must be 'token' or 'sentence', got {stat!r}")


def variant_vectors(variant: str, queries: np.ndarray, candidates: np.ndarray, mean_q: np.ndarray,
                    mean_c: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(queries, candidates) transformed for one variant (see the module docstring)."""
    if variant == "original":
        return queries, candidates
    if variant == "zero_mean":
        return zero_mean(queries, mean_q), zero_mean(candidates, mean_c)
    if variant == "mds":
        return mds(queries, mean_q, mean_c, alpha), candidates
    raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")


def vector_spread(vectors: np.ndarray, block: int = 65536) -> float:
    """1 - mean cosine similarity over pairs of different rows of [n, H] (0 for n < 2 or collapsed rows):
    mean_{i != j} cos = (|sum of unit rows|^2 - sum of |unit row|^2) / (n (n - 1)), without an n x n matrix,
    in float64 blocks of rows (BUCC sides hold ~400k sentences)."""
    n = len(vectors)
    if n < 2:
        return 0.0
    total, squares = np.zeros(np.shape(vectors)[1]), 0.0
    for start in range(0, n, block):
        v = np.asarray(vectors[start : start + block], dtype=np.float64)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        unit = v / np.where(norms > 0, norms, 1.0)
        total += unit.sum(axis=0)
        squares += float((unit * unit).sum())
    mean_cos = (total @ total - squares) / (n * (n - 1))
    return float(max(0.0, 1.0 - mean_cos))


# ---------------------------------------------------------------------------------------------- Tatoeba

def retrieval_accuracy(queries: np.ndarray, candidates: np.ndarray, gold: Sequence[set[int]] | None = None,
                       block: int = 1024) -> float:
    """Share of queries whose nearest candidate by cosine is a gold one (gold[i] defaults to {i}: line-aligned
    sets). The nearest candidate is the argmax, ties going to the first candidate (as XTREME's argmax), so
    a degenerate model whose vectors are all equal scores 1/n, not 1."""
    return float(np.mean(retrieval_hits(queries, candidates, gold, block)[0]))


def retrieval_hits(queries: np.ndarray, candidates: np.ndarray, gold: Sequence[set[int]] | None = None,
                   block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """(hit, score of the nearest candidate) per query: retrieval_accuracy's items (its mean) and what shows
    that every score tied."""
    if gold is None:
        if len(queries) != len(candidates):
            raise ValueError(f"{len(queries)} queries but {len(candidates)} candidates (must be line-aligned)")
        gold = [{i} for i in range(len(queries))]
    if len(gold) != len(queries):
        raise ValueError(f"{len(gold)} gold sets for {len(queries)} queries")
    if len(queries) == 0:
        raise ValueError("retrieval accuracy over zero queries is undefined")
    q, c = _unit(queries, torch.device("cpu"), torch.float64), _unit(candidates, torch.device("cpu"), torch.float64)
    best, top = [], []
    for i in range(0, len(q), block):
        scores = q[i : i + block] @ c.T
        best.append(scores.argmax(dim=1))
        top.append(scores.gather(1, best[-1][:, None])[:, 0])
    hits = np.array([b in g for b, g in zip(torch.cat(best).tolist(), gold, strict=True)])
    return hits, torch.cat(top).numpy()


def text_gold(texts: Sequence[str]) -> list[set[int]]:
    """gold[i] = every candidate whose text equals candidate i's (duplicate translations are all correct)."""
    where: dict[str, set[int]] = {}
    for j, t in enumerate(texts):
        where.setdefault(t, set()).add(j)
    return [where[t] for t in texts]


def tatoeba_table(xx_vectors: np.ndarray, xx_counts: np.ndarray, en_vectors: np.ndarray, en_counts: np.ndarray,
                  layers: Sequence[int], mean_stat: str, alpha: float, block: int = 1024,
                  xx_texts: Sequence[str] | None = None, en_texts: Sequence[str] | None = None,
                  items: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Accuracy per layer x variant x direction from pooled vectors [n, len(layers), H] of both sides.
    With the texts, a candidate identical to the reference translation also counts as correct.

    Rows: layer, variant, direction ('xx->en' | 'en->xx', queries->candidates), accuracy, n_queries,
    n_candidates, vector_spread, chance (a random pick, text duplicates counted), chance_how, flag (every
    nearest score tied). `items`: a list that gets each row's per-query hits (layer, variant, direction,
    item, numerator = hit, denominator = 1), the items of the gather's intervals."""
    n = len(xx_vectors)
    gold = {"xx->en": text_gold(en_texts) if en_texts is not None else [{i} for i in range(n)],
            "en->xx": text_gold(xx_texts) if xx_texts is not None else [{i} for i in range(n)]}
    rows = []
    for j, layer in enumerate(layers):
        xx, en = xx_vectors[:, j], en_vectors[:, j]
        mean_xx = language_mean(xx, xx_counts, mean_stat)
        mean_en = language_mean(en, en_counts, mean_stat)
        spread = min(vector_spread(xx), vector_spread(en))
        for direction, (q, c, mq, mc) in {"xx->en": (xx, en, mean_xx, mean_en),
                                          "en->xx": (en, xx, mean_en, mean_xx)}.items():
            for variant in VARIANTS:
                vq, vc = variant_vectors(variant, q, c, mq, mc, alpha)
                hits, top = retrieval_hits(vq, vc, gold[direction], block)
                level = chance.retrieval_accuracy(len(c), [len(g) for g in gold[direction]])
                rows.append(dict(layer=int(layer), variant=variant, direction=direction,
                                 accuracy=float(np.mean(hits)), n_queries=len(q), n_candidates=len(c),
                                 vector_spread=spread, chance=level.value, chance_how=level.how,
                                 flag=chance.flag(chance.all_tied(top))))
                if items is not None:
                    items.append(_items(rows[-1], hits.astype(np.int64), np.ones(len(hits), dtype=np.int64)))
    return pd.DataFrame(rows)


def _items(row: dict, numerator: np.ndarray, denominator: np.ndarray) -> pd.DataFrame:
    """One row's items (query or source sentence), named by the row's layer, variant and direction."""
    return item_table({key: row[key] for key in ("layer", "variant", "direction")}, numerator, denominator)


def tatoeba(encoder: Encoder, xx_sentences: Sequence[str], en_sentences: Sequence[str],
            layers: Sequence[int] | None, mean_stat: str, alpha: float, batch_size: int, pooling: str = "mean_all",
            block: int = 1024, items: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Tatoeba retrieval for one language pair (line-aligned sentences); layers None = all; items: as
    tatoeba_table's."""
    if len(xx_sentences) != len(en_sentences):
        raise ValueError(f"{len(xx_sentences)} sentences but {len(en_sentences)} English ones (must be line-aligned)")
    layers = list(range(encoder.n_layers + 1)) if layers is None else list(layers)
    xx, xx_n = encoder.sentence_vectors(xx_sentences, batch_size, layers, pooling, "source sentences")
    en, en_n = encoder.sentence_vectors(en_sentences, batch_size, layers, pooling, "English sentences")
    return tatoeba_table(xx, xx_n, en, en_n, layers, mean_stat, alpha, block, xx_sentences, en_sentences, items)


# ---------------------------------------------------------------------------------------------- BUCC

def _unit(x: np.ndarray, device: torch.device, dtype=torch.float32) -> torch.Tensor:
    """Rows scaled to unit length (an all-zero row stays zero)."""
    t = torch.as_tensor(np.asarray(x), device=device).to(dtype)
    norms = t.norm(dim=1, keepdim=True)
    return t / torch.where(norms > 0, norms, torch.ones_like(norms))


def _knn(x: torch.Tensor, y: torch.Tensor, k: int, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine similarities and indices of the k nearest rows of y for every row of x (unit rows), blockwise."""
    k = min(k, y.shape[0])
    sims, idx = [], []
    for start in range(0, x.shape[0], block):
        top = (x[start : start + block] @ y.T).topk(k, dim=1)
        sims.append(top.values)
        idx.append(top.indices)
    return torch.cat(sims), torch.cat(idx)


def mine(src: np.ndarray, tgt: np.ndarray, k: int = 4, score: str = "margin", block: int = 1024,
         device: str | torch.device = "cpu") -> dict[tuple[int, int], float]:
    """Candidate pairs (src index, tgt index) -> score by LASER/XTREME "max" retrieval.

    Forward: each src row's best tgt among its k cosine neighbours; backward: each tgt row's best src.
    score "margin": ratio margin cos / ((mean_k cos(x, .) + mean_k cos(., y)) / 2); "cosine": cos (k
    is then 1). Candidates of both directions are visited by decreasing score and kept one-to-one."""
    if score not in ("margin", "cosine"):
        raise ValueError(f"score must be 'margin' or 'cosine', got {score!r}")
    if len(src) == 0 or len(tgt) == 0:
        return {}
    device = torch.device(device)
    x, y = _unit(src, device), _unit(tgt, device)
    kk = k if score == "margin" else 1
    x2y_sim, x2y_ind = _knn(x, y, kk, block)
    y2x_sim, y2x_ind = _knn(y, x, kk, block)
    if score == "margin":
        x2y_mean, y2x_mean = x2y_sim.mean(dim=1), y2x_sim.mean(dim=1)
        fwd = x2y_sim / ((x2y_mean[:, None] + y2x_mean[x2y_ind]) / 2)
        bwd = y2x_sim / ((y2x_mean[:, None] + x2y_mean[y2x_ind]) / 2)
    else:
        fwd, bwd = x2y_sim, y2x_sim
    fwd_best = x2y_ind.gather(1, fwd.argmax(dim=1, keepdim=True))[:, 0]
    bwd_best = y2x_ind.gather(1, bwd.argmax(dim=1, keepdim=True))[:, 0]
    src_idx = torch.cat([torch.arange(x.shape[0], device=device), bwd_best]).cpu().numpy()
    tgt_idx = torch.cat([fwd_best, torch.arange(y.shape[0], device=device)]).cpu().numpy()
    scores = torch.cat([fwd.max(dim=1).values, bwd.max(dim=1).values]).double().cpu().numpy()
    seen_src, seen_tgt = set(), set()
    out: dict[tuple[int, int], float] = {}
    for i in np.argsort(-scores, kind="stable"):
        s, t = int(src_idx[i]), int(tgt_idx[i])
        if s not in seen_src and t not in seen_tgt:
            seen_src.add(s)
            seen_tgt.add(t)
            out[(s, t)] = float(scores[i])
    return out


def prf(predicted: set, gold: set) -> tuple[float, float, float]:
    """Precision, recall, F1 of predicted pairs against gold pairs (0 when nothing is correct)."""
    correct = len(predicted & gold)
    if correct == 0:
        return 0.0, 0.0, 0.0
    p, r = correct / len(predicted), correct / len(gold)
    return p, r, 2 * p * r / (p + r)


def optimize_threshold(candidates: dict, gold: set) -> tuple[float, float]:
    """(threshold, best F1): the score threshold that maximises F1 of {candidates with score >= threshold}
    against gold, placed halfway between the last kept and the next candidate's score (XTREME's
    bucc_optimize; after the last candidate, just below its score). (inf, 0) when no candidate is gold."""
    if not gold:
        raise ValueError("threshold selection needs gold pairs")
    items = sorted(candidates.items(), key=lambda kv: -kv[1])
    best_f1, threshold, correct = 0.0, math.inf, 0
    for i, (pair, value) in enumerate(items):
        correct += pair in gold
        if correct:
            p, r = correct / (i + 1), correct / len(gold)
            f1 = 2 * p * r / (p + r)
            if f1 > best_f1:
                best_f1 = f1
                threshold = (value + items[i + 1][1]) / 2 if i + 1 < len(items) else np.nextafter(value, -np.inf)
    return float(threshold), best_f1


def extract(candidates: dict, threshold: float) -> set:
    """Candidate pairs with score >= threshold."""
    return {pair for pair, value in candidates.items() if value >= threshold}


def bucc_split_vectors(encoder: Encoder, src: dict[str, str], en: dict[str, str], layers: Sequence[int],
                       batch_size: int, pooling: str = "cls"
                       ) -> tuple[list[str], np.ndarray, np.ndarray, list[str], np.ndarray, np.ndarray]:
    """ids and pooled vectors (+ pooled position counts) of both sides of one BUCC split."""
    src_ids, en_ids = list(src), list(en)
    xs, xn = encoder.sentence_vectors([src[i] for i in src_ids], batch_size, layers, pooling, "BUCC source sentences")
    ys, yn = encoder.sentence_vectors([en[i] for i in en_ids], batch_size, layers, pooling, "BUCC English sentences")
    return src_ids, xs, xn, en_ids, ys, yn


def bucc_table(dev: tuple, test: tuple, dev_gold: set, test_gold: set, layers: Sequence[int], mean_stat: str,
               alpha: float, k: int = 4, score: str = "margin", block: int = 1024,
               device: str | torch.device = "cpu", items: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """BUCC F1 per layer x variant. dev/test: bucc_split_vectors outputs; gold: sets of (src id, en id).

    Rows: layer, variant, direction (xx<->en: mining is symmetric), threshold, dev_precision, dev_recall,
    dev_f1, precision, recall, f1, n_gold, n_dev_gold, n_candidates, n_extracted, n_src, n_en,
    vector_spread (of the test split's original vectors), chance (of f1: a random mining), chance_how, flag
    (nothing mined). `items`: a list that gets each row's F1 items, one per test source sentence
    (numerator = 2 x its correct mined pairs, denominator = its mined + gold pairs)."""
    rows = []
    for j, layer in enumerate(layers):
        results = {}
        spread = min(vector_spread(test[1][:, j]), vector_spread(test[4][:, j]))
        for split, (src_ids, xs, xn, en_ids, ys, yn) in (("dev", dev), ("test", test)):
            x, y = xs[:, j], ys[:, j]
            mean_x, mean_y = language_mean(x, xn, mean_stat), language_mean(y, yn, mean_stat)
            for variant in VARIANTS:
                vx, vy = variant_vectors(variant, x, y, mean_x, mean_y, alpha)
                cands = mine(vx, vy, k, score, block, device)
                results[split, variant] = ({(src_ids[s], en_ids[t]): v for (s, t), v in cands.items()}, len(x), len(y))
        for variant in VARIANTS:
            dev_cands, _, _ = results["dev", variant]
            threshold, _ = optimize_threshold(dev_cands, dev_gold)
            dp, dr, df = prf(extract(dev_cands, threshold), dev_gold)
            test_cands, n_src, n_en = results["test", variant]
            predicted = extract(test_cands, threshold)
            p, r, f = prf(predicted, test_gold)
            rows.append(dict(layer=int(layer), variant=variant, direction=BUCC_DIRECTION, threshold=threshold, dev_precision=dp, dev_recall=dr,
                             dev_f1=df, precision=p, recall=r, f1=f, n_gold=len(test_gold), n_dev_gold=len(dev_gold),
                             n_candidates=len(test_cands), n_extracted=len(predicted), n_src=n_src, n_en=n_en,
                             vector_spread=spread, **_bucc_checks(n_src, n_en, predicted, test_gold)))
            if items is not None:
                items.append(_items(rows[-1], *_bucc_items(test[0], predicted, test_gold)))
            logger.info("BUCC layer %d %s: threshold %.4f (dev F1 %.3f) -> test P %.3f R %.3f F1 %.3f", layer,
                        variant, threshold, df, p, r, f)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- one language

def _bucc_checks(n_src: int, n_en: int, predicted: set, gold: set) -> dict:
    level = chance.bucc_f1(n_src, n_en, len(gold))
    return dict(chance=level.value, chance_how=level.how,
                flag=chance.flag(chance.nothing_mined(len(predicted), len(predicted & gold))))


def _bucc_items(src_ids: Sequence[str], predicted: set, gold: set) -> tuple[np.ndarray, np.ndarray]:
    """(2 x correct, mined + gold) per source sentence (then any gold source the split does not list): F1 =
    their ratio of sums."""
    where = {src: i for i, src in enumerate(src_ids)}
    for src, _ in sorted(gold):
        where.setdefault(src, len(where))
    correct, mined, golds = (np.zeros(len(where), dtype=np.int64) for _ in range(3))
    for counts, pairs in ((correct, predicted & gold), (mined, predicted), (golds, gold)):
        np.add.at(counts, [where[src] for src, _ in pairs], 1)
    return 2 * correct, mined + golds


def run_tatoeba(model, pairs: Sequence[tuple[str, str]], *, layers: Sequence[int] | None = None,
                mean_stat: str = "token", alpha: float = 1.0, pooling: str = "mean_all", batch_size: int = 64,
                max_length: int | None = None, device: str | None = None, revision: str | None = None,
                block: int = 1024, max_sentences: int | None = None,
                items: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Tatoeba for one language: pairs (xx sentence, English sentence); layers None = all (0..L). `model`: a
    directory or a hub name, loaded at `revision`; items: as tatoeba_table's."""
    pairs = list(pairs)[:max_sentences] if max_sentences else list(pairs)
    if not pairs:
        raise ValueError("Tatoeba: no sentence pairs")
    encoder = Encoder.from_pretrained(model, device=device, max_length=max_length, revision=revision)
    table = tatoeba(encoder, [x for x, _ in pairs], [e for _, e in pairs], layers, mean_stat, alpha, batch_size,
                    pooling, block, items)
    return table.assign(mean_stat=mean_stat, mds_alpha=alpha, pooling=pooling, metric="cosine",
                        max_length=encoder.max_length, revision=revision)


def run_bucc(model, dev: tuple[dict, dict, set], test: tuple[dict, dict, set], *, layers: Sequence[int],
             mean_stat: str = "token", alpha: float = 1.0, pooling: str = "cls", k: int = 4, score: str = "margin",
             batch_size: int = 64, max_length: int | None = None, device: str | None = None,
             revision: str | None = None, block: int = 1024,
             items: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """BUCC for one language: dev (sample) and test splits as read by xling.data.formats.read_bucc; items: as
    bucc_table's."""
    encoder = Encoder.from_pretrained(model, device=device, max_length=max_length, revision=revision)
    dev_vectors = bucc_split_vectors(encoder, dev[0], dev[1], layers, batch_size, pooling)
    test_vectors = bucc_split_vectors(encoder, test[0], test[1], layers, batch_size, pooling)
    table = bucc_table(dev_vectors, test_vectors, dev[2], test[2], layers, mean_stat, alpha, k, score, block,
                       encoder.device, items)
    return table.assign(mean_stat=mean_stat, mds_alpha=alpha, score=score, k=k if score == "margin" else 1,
                        pooling=pooling, max_length=encoder.max_length, revision=revision)
