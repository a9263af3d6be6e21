"""Unsupervised token translation with the mean-difference shift (Liu et al. 2020, arXiv:2004.09205).

Feed a source-language sentence to a masked-LM BERT, add alpha * (R_tgt - R_src) to the hidden states
of layer l (xling.encode.transforms.shift_layer), let the remaining layers and the MLM head run, and decode
EVERY position (no masking) by argmax. If the shift moves the language component, the output pieces
turn into the target language: an unsupervised word-by-word translation.

Metrics, for each layer l and weight alpha:
* BLEU-1: sacrebleu corpus BLEU with max n-gram order 1 (clipped unigram precision times the brevity
  penalty, 0-100) of the output against the reference translation, in one of two units (`bleu_unit`):
  "wordpieces" (default, as the papers: their outputs y are "the output tokens of the model", and the
  convert rate counts the same units) scores the space-joined output pieces against the reference's
  pieces under the model's tokenizer, with sacrebleu tokenize="none"; "words" scores the detokenized
  output (pieces glued into words by the model's convention: "##" continuations, "▁" word starts) against
  the raw reference with sacrebleu's tokenizer (`bleu_tokenize`: "13a"; "zh" for Chinese, "char" for
  Japanese and Thai with "auto").
* convert rate = #(y in V_t - V_s) / (#y - #(y in V_s & V_t)), over the output wordpieces y, where V_s,
  V_t are the wordpieces seen at least `min_count` times in the tokenized corpora of the two languages:
  the share of language-specific output pieces that belong to the target language. Undefined (NaN,
  logged) when every output piece is shared by both vocabularies (denominator 0); the counts of output
  pieces in the source-only, target-only and shared vocabularies are columns, so the reason is visible.
* Degenerate models: distinct_predictions = the number of distinct output pieces over all sentences
  (1 = the MLM predicts one piece whatever the input), changed_share = the share of output positions
  whose piece differs from the unshifted (alpha 0) output (0 at every alpha = the shift changes nothing).

The model runs through xling.encode (Encoder.encode with a Shift and predict=True). Decoding: the argmax
runs over the non-special pieces (the special tokens' logits are masked), so every wordpiece position
yields a real piece. Sentences longer than the model's window are cut at word boundaries into chunks of
at most max_length - 2 pieces, each run as [CLS] chunk [SEP]; their outputs are concatenated.
Shift positions (`shift_positions`): "all" adds the delta at every non-pad position, [CLS] and [SEP]
included (Liu et al.'s code, the default), "words" at the wordpieces only. Language means of checkpoints
without a store are computed on the evaluation sentences over `mean_positions` ("all" or "words").
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from xling.encode.encoder import Batch, Encoder, Shift
from xling.encode.transforms import mds_delta
from xling.evaluate import chance
from xling.evaluate.intervals import item_table
from xling.io import read_lines

logger = logging.getLogger(__name__)

LOG_EVERY_S = 30.0


# ---------------------------------------------------------------------------------------------- means

def store_means(langs_path: str | Path, lang: str, stat: str) -> np.ndarray:
    """Language means [layers + 1, H] of one language from a reduced langs store (xling.represent.store)."""
    if stat not in ("token", "sentence"):
        raise ValueError(f"mean stat must be 'token' or 'sentence', got {stat!r}")
    table = pq.read_table(langs_path, filters=[("lang", "==", lang), ("stat", "==", stat)]).to_pandas()
    if table.empty:
        raise ValueError(f"{langs_path}: no {stat} mean for language {lang!r}")
    table = table.sort_values("layer")
    layers = table["layer"].to_numpy()
    if not np.array_equal(layers, np.arange(len(layers))):
        raise ValueError(f"{langs_path}: {lang}/{stat}: layers {layers.tolist()} are not 0..{len(layers) - 1}")
    dcols = sorted((c for c in table.columns if c.startswith("d") and c[1:].isdigit()), key=lambda c: int(c[1:]))
    return table[dcols].to_numpy(dtype=np.float64)


def sentence_means(encoder: Encoder, sentences: Sequence[str], batch_size: int,
                   positions: str = "all") -> dict[str, np.ndarray]:
    """Both language-mean definitions [layers + 1, H] from a set of sentences (no shift), over `positions`
    ("words" or "all"): 'token' = mean over all those positions, 'sentence' = mean over sentences of
    their mean vector.

    Used where no store exists (Hugging Face checkpoints): the means of the evaluation sentences."""
    if positions not in ("words", "all"):
        raise ValueError(f"mean positions must be 'words' or 'all', got {positions!r}")
    pooled, counts = encoder.sentence_vectors(sentences, batch_size, pooling=f"mean_{positions}")
    keep = counts > 0
    if not keep.any():
        raise ValueError("sentence_means: no sentence has any piece")
    weights = counts[keep].astype(np.float64)
    token = np.einsum("n,nlh->lh", weights, pooled[keep].astype(np.float64)) / weights.sum()
    sentence = pooled[keep].astype(np.float64).mean(axis=0)
    return {"token": token, "sentence": sentence}


class Progress:
    """Log 'done/total, rate, ETA' at most every LOG_EVERY_S seconds (and at the end)."""

    def __init__(self, what: str, total: int):
        self.what, self.total, self.done = what, total, 0
        self.start = self.last = time.monotonic()

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= LOG_EVERY_S or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.start, 1e-9)
            eta = (self.total - self.done) / max(rate, 1e-9)
            logger.info("%s: %d/%d (%.1f/s, ETA %.0f s)", self.what, self.done, self.total, rate, eta)


# ---------------------------------------------------------------------------------------------- metrics

def bleu_tokenizer(tgt_lang: str, tokenize: str = "auto") -> str:
    """sacrebleu tokenizer name: "auto" = zh for Chinese, char for Japanese and Thai, else 13a."""
    if tokenize != "auto":
        return tokenize
    return {"zh": "zh", "ja": "char", "th": "char"}.get(tgt_lang, "13a")


BLEU_UNITS = ("wordpieces", "words")


def bleu1(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a",
          lowercase: bool = False) -> float:
    """Corpus BLEU-1 (0-100): sacrebleu BLEU with max_ngram_order=1 (clipped unigram precision x BP)."""
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("BLEU over zero sentences is undefined")
    metric = BLEU(max_ngram_order=1, tokenize=tokenize, lowercase=lowercase)
    return float(metric.corpus_score(list(hypotheses), [list(references)]).score)


def convert_rate(pieces: Iterable[str], src_vocab: set[str], tgt_vocab: set[str]) -> tuple[float, dict]:
    """#(y in V_t - V_s) / (#y - #(y in V_s & V_t)) over output pieces y; NaN when the denominator is 0.

    Returns (rate, counts) with counts n_tokens, n_tgt_only, n_src_only, n_shared, n_neither."""
    counts = dict(n_tokens=0, n_tgt_only=0, n_src_only=0, n_shared=0, n_neither=0)
    for piece in pieces:
        counts["n_tokens"] += 1
        in_src, in_tgt = piece in src_vocab, piece in tgt_vocab
        key = "n_shared" if in_src and in_tgt else "n_tgt_only" if in_tgt else "n_src_only" if in_src else "n_neither"
        counts[key] += 1
    denominator = counts["n_tokens"] - counts["n_shared"]
    rate = counts["n_tgt_only"] / denominator if denominator else math.nan
    return rate, counts


def sentence_convert_counts(outputs: Sequence[Sequence[str]], src_vocab: set[str], tgt_vocab: set[str]
                            ) -> tuple[np.ndarray, np.ndarray]:
    """(n_tgt_only, n_tokens - n_shared) of each output sentence: the convert rate's items (their ratio of
    sums is convert_rate's rate)."""
    counts = [convert_rate(sentence, src_vocab, tgt_vocab)[1] for sentence in outputs]
    return (np.array([c["n_tgt_only"] for c in counts], dtype=np.int64),
            np.array([c["n_tokens"] - c["n_shared"] for c in counts], dtype=np.int64))


def degenerate_output(outputs: Sequence[Sequence[str]], distinct: int, changed_share: float, shifted: bool
                      ) -> str | None:
    """The flag of one (layer, alpha): one token repeated, one distinct piece, or a shift that changed nothing."""
    return chance.flag(chance.repeated_token(p for sentence in outputs for p in sentence),
                       "one distinct output piece" if distinct <= 1 else None,
                       "the shift changed no output piece" if shifted and changed_share == 0 else None)


def piece_counts(token_path: str | Path) -> Counter:
    """Wordpiece counts of a token file (one document per line, pieces separated by spaces)."""
    counts: Counter = Counter()
    for _, line in read_lines(token_path):
        counts.update(line.split())
    if not counts:
        raise ValueError(f"{token_path}: no wordpieces")
    return counts


def corpus_piece_counts(corpus_path: str | Path, encoder: Encoder, batch_lines: int = 10_000) -> Counter:
    """Wordpiece counts of a raw corpus (one sentence per line) under the model's own tokenizer, for
    models whose vocabulary is not the run's (Hugging Face checkpoints with tokenizer.vocab != mbert); its
    special tokens (<unk>, ...) are not counted."""
    lines = (line for _, line in read_lines(corpus_path) if line.strip())
    return sentence_piece_counts(lines, encoder, str(corpus_path), batch_lines)


def sentence_piece_counts(sentences: Iterable[str], encoder: Encoder, what: str, batch_lines: int = 10_000
                          ) -> Counter:
    """Wordpiece counts of sentences under the model's own tokenizer, its special tokens not counted."""
    counts: Counter = Counter()
    lines: list[str] = []
    for line in sentences:
        lines.append(line)
        if len(lines) >= batch_lines:
            counts.update(p for pieces in encoder.tokenize(lines) for p in pieces)
            lines.clear()
    counts.update(p for pieces in encoder.tokenize(lines) for p in pieces)
    for special in encoder.tokenizer.all_special_tokens:
        counts.pop(special, None)
    if not counts:
        raise ValueError(f"{what}: no wordpieces")
    return counts


def vocabulary(counts: Counter, min_count: int) -> set[str]:
    """Pieces seen at least min_count times (special tokens such as [UNK] excluded)."""
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    return {p for p, c in counts.items() if c >= min_count and not (p.startswith("[") and p.endswith("]"))}


# ---------------------------------------------------------------------------------------------- translation

def decode(encoder: Encoder, batches: list[Batch], n_sentences: int, shift: Shift | None = None) -> list[list[str]]:
    """Argmax output pieces per sentence (every wordpiece position, chunks in order), with `shift` applied
    in the forward pass (none when None)."""
    pieces: dict[tuple[int, int], list[str]] = {}
    for batch in batches:
        out = encoder.run(batch, layers=[], shift=shift, predict=True)
        words = batch.positions("words")
        predictions = out.predictions.cpu()
        for row, key in enumerate(zip(batch.items, batch.chunks, strict=True)):
            pieces[key] = encoder.tokenizer.convert_ids_to_tokens(predictions[row][words[row]].tolist())
    out_pieces: list[list[str]] = [[] for _ in range(n_sentences)]
    for (sentence, _order), chunk in sorted(pieces.items()):
        out_pieces[sentence].extend(chunk)
    return out_pieces


DIRECTIONS = ("en-xx", "xx-en")  # "en" stands for the pivot language, "xx" for the other one


@dataclass(frozen=True)
class TranslationSettings:
    """How token translation runs and is scored (the `language` config block and the job's resources).

    layers: the layers shifted (None = 1..L, every encoder block, as the paper); alphas: the shift's scales;
    shift_positions: "all" or "words"; bleu_unit: wordpieces or words (module docstring); n_samples: sample
    outputs kept. The rest is read by translate_pair only: directions, mean_stat and mean_positions of the
    language means, min_count of the vocabularies, max_sentences, and the model's max_length, device, revision.
    """

    layers: Sequence[int] | None = None
    alphas: Sequence[float] = (-1, 0, 1, 2, 3)
    batch_size: int = 64
    bleu_tokenize: str = "auto"
    lowercase: bool = False
    n_samples: int = 5
    shift_positions: str = "all"
    bleu_unit: str = "wordpieces"
    directions: Sequence[str] = DIRECTIONS
    mean_stat: str = "token"
    mean_positions: str = "all"
    min_count: int = 5
    max_sentences: int | None = None
    max_length: int | None = None
    device: str | None = None
    revision: str | None = None


def token_translation(encoder: Encoder, sources: Sequence[str], references: Sequence[str], src_lang: str,
                      tgt_lang: str, mean_src: np.ndarray, mean_tgt: np.ndarray, src_vocab: set[str],
                      tgt_vocab: set[str], settings: TranslationSettings,
                      items: list[pd.DataFrame] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Translate `sources` (language src_lang) toward tgt_lang with MDS at each layer x alpha of `settings`, the
    shift added at its shift_positions ("all" or "words"), BLEU-1 in its bleu_unit (module docstring).

    mean_src / mean_tgt: [layers + 1, H] language means. Returns (results, samples):
    results — one row per (layer, alpha): layer, alpha, bleu1, convert_rate, n_sentences, n_tokens,
    n_tgt_only, n_src_only, n_shared, n_neither, distinct_predictions, changed_share, bleu_unit,
    bleu_tokenize, chance (the convert rate of alpha 0, no shift: what a shift must beat; none on alpha 0
    itself), chance_how, flag (degenerate_output); alpha 0 (no shift) is computed once and
    reported for every layer when asked for. `items`: a list that gets each row's per-sentence convert counts
    (layer, alpha, item, numerator, denominator: sentence_convert_counts).
    samples — the first n_samples sentences at the best (layer, alpha > 0) by BLEU-1 (ties: lower layer,
    smaller alpha): source, reference, output, unshifted output (alpha 0), layer, alpha.
    """
    alphas, batch_size, n_samples = settings.alphas, settings.batch_size, settings.n_samples
    lowercase, shift_positions, bleu_unit = settings.lowercase, settings.shift_positions, settings.bleu_unit
    layers = range(1, encoder.n_layers + 1) if settings.layers is None else [int(l) for l in settings.layers]
    if len(sources) != len(references):
        raise ValueError(f"{len(sources)} source sentences but {len(references)} references")
    if not sources:
        raise ValueError(f"{src_lang}->{tgt_lang}: no sentences to translate")
    if shift_positions not in ("words", "all"):
        raise ValueError(f"shift positions must be 'words' or 'all', got {shift_positions!r}")
    expected = (encoder.n_layers + 1, encoder.hidden)
    for name, mean in (("mean_src", mean_src), ("mean_tgt", mean_tgt)):
        if np.shape(mean) != expected:
            raise ValueError(f"{name} has shape {np.shape(mean)}, expected {expected} (layers + 1, hidden)")
    if bleu_unit not in BLEU_UNITS:
        raise ValueError(f"BLEU unit must be one of {', '.join(BLEU_UNITS)}, got {bleu_unit!r}")
    if bleu_unit == "wordpieces":
        tokenize, bleu_refs = "none", [" ".join(pieces) for pieces in encoder.tokenize(references)]
    else:
        tokenize, bleu_refs = bleu_tokenizer(tgt_lang, settings.bleu_tokenize), list(references)
    batches = list(encoder.batches(sources, batch_size))  # tokenized and batched once for every layer x alpha
    detokenize = encoder.subwords.detokenize  # the model's own subword convention

    def score(outputs: list[list[str]], unshifted: list[list[str]]) -> dict:
        rate, counts = convert_rate((p for sent in outputs for p in sent), src_vocab, tgt_vocab)
        if math.isnan(rate):
            logger.warning("%s->%s: convert rate undefined (every output piece is in both vocabularies)",
                           src_lang, tgt_lang)
        hyps = [" ".join(sent) if bleu_unit == "wordpieces" else detokenize(sent) for sent in outputs]
        changed = sum(a != b for out, base in zip(outputs, unshifted, strict=True) for a, b in zip(out, base, strict=True))
        distinct = len({p for sent in outputs for p in sent})
        changed_share = changed / counts["n_tokens"] if counts["n_tokens"] else math.nan
        return dict(bleu1=bleu1(hyps, bleu_refs, tokenize, lowercase), convert_rate=rate,
                    n_sentences=len(sources), **counts, distinct_predictions=distinct, changed_share=changed_share,
                    chance=math.nan if outputs is unshifted else base_rate, chance_how=None if outputs is unshifted
                    else "no shift (alpha 0)", flag=degenerate_output(outputs, distinct, changed_share,
                                                                      outputs is not unshifted))

    def keep_items(layer: int, alpha: float, outputs: list[list[str]]) -> None:
        if items is not None:
            numerator, denominator = sentence_convert_counts(outputs, src_vocab, tgt_vocab)
            items.append(item_table({"layer": layer, "alpha": alpha}, numerator, denominator))

    baseline = decode(encoder, batches, len(sources))
    base_scores = score(baseline, baseline)
    base_rate = base_scores["convert_rate"]
    rows, outputs_by_setting = [], {}
    grid = [(l, a) for l in layers for a in alphas if a != 0]
    progress = Progress(f"{src_lang}->{tgt_lang}: {len(grid)} layer x alpha settings", len(grid))
    for layer in layers:
        if not 0 <= layer <= encoder.n_layers:
            raise ValueError(f"layer {layer} outside 0..{encoder.n_layers}")
        for alpha in alphas:
            if alpha == 0:
                rows.append(dict(layer=int(layer), alpha=0.0, **base_scores))
                keep_items(int(layer), 0.0, baseline)
                continue
            delta = mds_delta(mean_src[layer], mean_tgt[layer], float(alpha))
            outputs = decode(encoder, batches, len(sources), Shift(layer, delta, shift_positions))
            rows.append(dict(layer=int(layer), alpha=float(alpha), **score(outputs, baseline)))
            keep_items(int(layer), float(alpha), outputs)
            outputs_by_setting[(int(layer), float(alpha))] = outputs[:n_samples]
            progress.step()
    results = pd.DataFrame(rows)
    results["bleu_unit"], results["bleu_tokenize"] = bleu_unit, tokenize
    samples = pd.DataFrame(columns=["sample", "layer", "alpha", "source", "reference", "output", "unshifted"])
    positive = results[results["alpha"] > 0]
    if n_samples > 0 and not positive.empty:
        best = positive.sort_values(["bleu1", "layer", "alpha"], ascending=[False, True, True], kind="stable").iloc[0]
        key = (int(best["layer"]), float(best["alpha"]))
        outs = outputs_by_setting[key]
        samples = pd.DataFrame([dict(sample=i, layer=key[0], alpha=key[1], source=sources[i], reference=references[i],
                                     output=detokenize(outs[i]), unshifted=detokenize(baseline[i]))
                                for i in range(min(n_samples, len(sources)))])
    return results, samples


# ---------------------------------------------------------------------------------------------- one language pair

def translate_pair(model: str | Path, pivot: str, lang: str, pairs: Sequence[tuple[str, str]],
                   settings: TranslationSettings, *, langs_store: str | Path | None = None,
                   token_files: dict | None = None, corpus_files: dict | None = None,
                   items: list[pd.DataFrame] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Token translation between the pivot and `lang` in the settings' directions, from sentence pairs
    (pivot sentence, lang sentence) — the first max_sentences of them.

    Language means: from the representation store `langs_store` (our BERTs: means over the run's
    corpus), else computed on the evaluation sentences themselves (Hugging Face checkpoints; column
    mean_source says which; mean_positions is the positions they average: the store's are set where it is
    built, so pass the value it was built with). Vocabularies V_s, V_t: pieces with count >= min_count in `token_files`
    {lang: token file} (the run's tokenization), else in `corpus_files` {lang: corpus} tokenized by the
    model's own tokenizer, else (neither given) in all the `pairs` themselves, as Liu et al. take the token sets of
    the XNLI test set they translate. layers None = 1..L (every encoder block, as the paper). `model`: a directory
    or a hub name, loaded at `revision` (xling.encode.Encoder). Returns (results, samples), both with
    columns src, tgt, direction; results also src_vocab_size, tgt_vocab_size and shared_vocab_size (the
    token sets V_s, V_t and their intersection: the paper's Table 3). items: as token_translation's, with the
    direction."""
    directions, mean_stat, mean_positions = settings.directions, settings.mean_stat, settings.mean_positions
    min_count, max_sentences, batch_size = settings.min_count, settings.max_sentences, settings.batch_size
    revision = settings.revision
    unknown = sorted(set(directions) - set(DIRECTIONS))
    if unknown:
        raise ValueError(f"unknown direction(s) {unknown}; known: {', '.join(DIRECTIONS)}")
    if token_files is not None and corpus_files is not None:
        raise ValueError("give at most one of token_files and corpus_files (for the vocabularies V_s, V_t)")
    every_pair = list(pairs)
    pairs = every_pair[:max_sentences] if max_sentences else every_pair
    if not pairs:
        raise ValueError(f"{pivot}-{lang}: no sentence pairs")
    encoder = Encoder.from_pretrained(model, device=settings.device, max_length=settings.max_length, revision=revision)
    sentences = {pivot: [p for p, _ in pairs], lang: [x for _, x in pairs]}
    if langs_store is not None:
        means = {code: store_means(langs_store, code, mean_stat) for code in (pivot, lang)}
        mean_source = "store"
    else:
        means = {code: sentence_means(encoder, sentences[code], batch_size, mean_positions)[mean_stat]
                 for code in (pivot, lang)}
        mean_source = "eval"
    if token_files is not None:
        counts = {code: piece_counts(token_files[code]) for code in (pivot, lang)}
    elif corpus_files is not None:
        counts = {code: corpus_piece_counts(corpus_files[code], encoder) for code in (pivot, lang)}
    else:
        counts = {code: sentence_piece_counts((pair[side] for pair in every_pair), encoder, f"{code} sentences")
                  for side, code in enumerate((pivot, lang))}
    vocab = {code: vocabulary(c, min_count) for code, c in counts.items()}
    for code, v in vocab.items():
        if not v:
            logger.warning("%s: no wordpiece occurs >= %d times (the model's vocabulary does not cover the corpus?): "
                           "the convert rate is meaningless", code, min_count)
    logger.info("%s-%s: %d sentence pairs; vocabularies (min count %d): %s", pivot, lang, len(pairs), min_count,
                ", ".join(f"{code} {len(v)} pieces ({len(v & vocab[lang if code == pivot else pivot])} shared)"
                          for code, v in vocab.items()))
    tables, samples = [], []
    for direction in directions:
        src, tgt = (pivot, lang) if direction == "en-xx" else (lang, pivot)
        found: list[pd.DataFrame] = []
        table, sample = token_translation(encoder, sentences[src], sentences[tgt], src, tgt, means[src],
                                          means[tgt], vocab[src], vocab[tgt], settings, found)
        label = direction.replace("-", "->")  # generic: "en->xx" / "xx->en"; src and tgt name the languages
        if items is not None:
            items.extend(part.assign(direction=label) for part in found)
        tables.append(table.assign(src=src, tgt=tgt, direction=label, src_vocab_size=len(vocab[src]),
                                   tgt_vocab_size=len(vocab[tgt]), shared_vocab_size=len(vocab[src] & vocab[tgt])))
        samples.append(sample.assign(src=src, tgt=tgt, direction=label))
    columns = dict(pair=f"{pivot}-{lang}", mean_stat=mean_stat, mean_source=mean_source,
                   mean_positions=mean_positions, shift_positions=settings.shift_positions, vocab_min_count=min_count,
                   max_length=encoder.max_length, n_model_layers=encoder.n_layers, hidden=encoder.hidden,
                   revision=revision)
    return (pd.concat(tables, ignore_index=True).assign(**columns),
            pd.concat(samples, ignore_index=True).assign(pair=columns["pair"]))
