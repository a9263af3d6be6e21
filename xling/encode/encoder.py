"""The one encoder: every BERT of the project (and any Hugging Face masked LM) run over text, with no gradient.

    encoder = Encoder.from_pretrained(path_or_name, device="cuda", dtype="bfloat16", revision=None)
    for out in encoder.encode(items, batch_size=32, layers=None, shift=None, predict=False):
        out.hidden_states          # [layers, batch, seq, H]: hidden_states[i] is model layer layers[i]
        out.batch.attention_mask   # [batch, seq]: real positions ([CLS] pieces [SEP]), not padding
        out.batch.word_index       # [batch, seq]: word occurrence of each piece (-1: [CLS], [SEP], padding)
        out.batch.positions("words" | "all" | "cls")
        out.word_vectors("first" | "last" | "mean")   # [layers, words in the batch, H]

Models: a directory written by xling.models.bert (save_pretrained + tokenizer files + vocab.txt) or a
Hugging Face masked LM (mBERT, XLM-R, DistilmBERT, ...), by hub name (pin it with `revision`) or local path,
read through its own tokenizer, special tokens ([CLS]/[SEP] or <s></s>, its pad id) and subword convention
(`Encoder.subwords`: "##" continuations or "▁" word starts; xling.models.pretrained). An ablated model
(xling.models.ablation: one view per language) runs with the language of its text known:
`from_pretrained(path, language="xa")` loads that language's view; a plain model ignores `language`.

Items are texts (tokenized by the model's tokenizer) or lists of wordpieces (already tokenized, e.g.
the run's token files). Pieces are grouped into words by the model's convention (xling.data.words), and
each item is cut at word boundaries into chunks of at most max_length - 2 pieces, each run as
[CLS] chunk [SEP]. A word longer than that is left out (long_words="drop") or cut across chunks ("split";
each part then counts as a word occurrence of its own).

Batching by length: chunks are sorted by length within pools of POOL_BATCHES batches (a stream stays a
stream; ties keep input order, so batches are deterministic) and padded per batch. Padding is masked
out of attention, so batching gives the vectors of running each chunk alone (up to float rounding).

Layers: 0 = the embedding output, l = the output of encoder block l (the `output_hidden_states`
indexing). Positions: "words" = the wordpieces, "all" = every non-pad position ([CLS] and [SEP]
included), "cls" = the [CLS] position.

A Shift adds a vector to the output of one layer at the chosen positions during the forward pass
(xling.encode.transforms.shift_layer, the one implementation of zero-mean / MDS), so the layers above
and the MLM head run on shifted states. `predict=True` also decodes every word position with the MLM
head (argmax over the non-special pieces), as unsupervised token translation does.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch

from xling.data.words import Span, chunk_words
from xling.models.pretrained import base_of, load_pretrained, max_positions, mlm_head, subwords_of

logger = logging.getLogger(__name__)

LOG_EVERY_S = 30.0
POOL_BATCHES = 64  # chunks are length-sorted within pools of this many batches: little padding, still streaming
HEAD_POSITIONS, HEAD_PIECES = 1024, 4096  # the MLM head's argmax, block by block (best_pieces)
POSITIONS = ("words", "all", "cls")
WORD_POOLINGS = ("first", "last", "mean")
SENTENCE_POOLINGS = {"mean_words": "words", "mean_all": "all", "cls": "cls"}  # pooling -> positions averaged


def resolve_device(device: str | torch.device | None) -> torch.device:
    """None or "auto": CUDA when available, else CPU."""
    if device in (None, "auto"):
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def best_pieces(states: torch.Tensor, decoder: torch.nn.Linear, excluded: Sequence[int] = ()) -> torch.Tensor:
    """argmax over the vocabulary of decoder(states) [N, H] -> [N], the `excluded` ids left out, computed
    HEAD_POSITIONS x HEAD_PIECES logits at a time: the [N, vocab] logits are never held (mBERT's 120k pieces
    made them 1 GB per 2,048 positions, and writing them was most of token translation's time at small hidden
    sizes). Ties go to the lowest id, as argmax's."""
    bias = decoder.bias if decoder.bias is not None else states.new_zeros(decoder.out_features)
    bias = bias.detach().clone()
    if len(excluded):
        bias[torch.as_tensor(list(excluded), dtype=torch.long, device=bias.device)] = -torch.inf
    weight = decoder.weight
    best = torch.zeros(states.shape[0], dtype=torch.long, device=states.device)
    for start in range(0, states.shape[0], HEAD_POSITIONS):
        block = states[start : start + HEAD_POSITIONS]
        top = torch.full((block.shape[0],), -torch.inf, device=states.device)
        for first in range(0, weight.shape[0], HEAD_PIECES):
            logits = torch.nn.functional.linear(block, weight[first : first + HEAD_PIECES],
                                                bias[first : first + HEAD_PIECES]).float()
            value, index = logits.max(dim=-1)
            better = value > top  # strictly: an earlier block keeps a tie
            top = torch.where(better, value, top)
            best[start : start + HEAD_POSITIONS] = torch.where(better, index + first,
                                                               best[start : start + HEAD_POSITIONS])
    return best


@dataclass
class Shift:
    """Add `delta` [H] to the output of `layer` at `positions` ("words" or "all") in the forward pass."""

    layer: int
    delta: np.ndarray | torch.Tensor
    positions: str = "all"


@dataclass
class Batch:
    """Padded chunks, ready for the model (CPU tensors).

    input_ids, attention_mask [B, T]; word_index [B, T]: the batch-wide index of the word occurrence each
    piece belongs to (-1 at [CLS], [SEP] and padding); words: the text of each occurrence (row-major);
    word_start, word_length [W]: flat position (row * T + column) of each occurrence's first piece, and
    its number of pieces; items, chunks: the input item of each row and the chunk's order within it.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    word_index: torch.Tensor
    words: list[str]
    word_start: torch.Tensor
    word_length: torch.Tensor
    items: list[int]
    chunks: list[int]

    def positions(self, which: str) -> torch.Tensor:
        """Bool mask [B, T] of the positions `which` names (see the module docstring)."""
        if which == "words":
            return self.word_index >= 0
        if which == "all":
            return self.attention_mask.clone()
        if which == "cls":
            mask = torch.zeros_like(self.attention_mask)
            mask[:, 0] = True
            return mask
        raise ValueError(f"positions must be one of {', '.join(POSITIONS)}, got {which!r}")

    @property
    def special_mask(self) -> torch.Tensor:
        """Bool mask [B, T] of the [CLS] and [SEP] positions."""
        return self.attention_mask & (self.word_index < 0)

    @property
    def n_pieces(self) -> int:
        return int((self.word_index >= 0).sum())


@dataclass
class Encoded:
    """One batch after the forward pass: hidden states [len(layers), B, T, H] (float32, on the encoder's
    device; None when no layer was asked) and, with predict=True, the MLM head's argmax piece id at every
    word position ([B, T], -1 elsewhere)."""

    batch: Batch
    layers: list[int]
    hidden_states: torch.Tensor | None
    predictions: torch.Tensor | None = None

    def word_vectors(self, pooling: str = "mean", dtype: torch.dtype | None = None) -> torch.Tensor:
        """One vector per word occurrence [len(layers), W, H] (aligned with batch.words) from its pieces:
        the first piece's, the last piece's, or their mean. dtype: computed in it (default: the states')."""
        if pooling not in WORD_POOLINGS:
            raise ValueError(f"word pooling must be one of {', '.join(WORD_POOLINGS)}, got {pooling!r}")
        states = self.hidden_states.flatten(1, 2)  # [L, B*T, H]
        if dtype is not None:
            states = states.to(dtype)
        start = self.batch.word_start.to(states.device)
        length = self.batch.word_length.to(states.device)
        if pooling == "first":
            return states[:, start]
        if pooling == "last":
            return states[:, start + length - 1]
        index = self.batch.word_index.flatten().to(states.device)
        pieces = (index >= 0).nonzero().squeeze(1)
        sums = states.new_zeros(states.shape[0], len(start), states.shape[2])
        sums.index_add_(1, index[pieces], states[:, pieces])
        return sums / length.to(states.dtype)[None, :, None]

    def pooled(self, which: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Per row, the SUM of the states at the positions `which` names [len(layers), B, H] (float64) and
        their number [B]: sums, so the chunks of one item can be added before dividing."""
        mask = self.batch.positions(which).to(self.hidden_states.device)
        sums = torch.einsum("bt,lbth->lbh", mask.to(torch.float64), self.hidden_states.to(torch.float64))
        return sums, mask.sum(dim=1)


class Encoder:
    """A masked LM (BertForMaskedLM, XLMRobertaForMaskedLM, ...) and its tokenizer, in eval mode on one device.
    Build it with from_pretrained."""

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype | None, max_length: int,
                 name: str, revision: str | None = None):
        self.model, self.tokenizer, self.device, self.dtype = model, tokenizer, device, dtype
        self.name, self.revision = name, revision
        positions = max_positions(model)
        self.max_length = min(int(max_length), positions) if max_length else positions
        if self.max_length < 3:
            raise ValueError(f"max_length must be >= 3 ([CLS] piece [SEP]), got {self.max_length}")
        self.n_layers = model.config.num_hidden_layers
        self.hidden = model.config.hidden_size
        self.vocab: dict[str, int] = tokenizer.get_vocab()
        self.special_ids = sorted(set(tokenizer.all_special_ids))
        self.cls_id, self.sep_id, self.unk_id = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.unk_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.subwords = subwords_of(tokenizer)  # how its pieces make words

    @classmethod
    def from_pretrained(cls, path_or_name: str | Path, *, device: str | torch.device | None = None,
                        dtype: str | torch.dtype | None = None, revision: str | None = None,
                        max_length: int | None = None, language: str | None = None) -> "Encoder":
        """Load a masked LM and its tokenizer.

        device None/"auto": CUDA when available. dtype: autocast dtype of the forward pass ("bfloat16" on
        CUDA for speed); None = float32. revision: the hub revision (commit, tag or branch) of a hub name;
        ignored for local directories. max_length caps the sequence length ([CLS] + pieces + [SEP]); None =
        the model's longest input (max_position_embeddings; our BERTs should get their training window: positions beyond
        it were never trained). language: the language of the text, which picks an ablated model's view.
        """
        model, tokenizer, name = load_pretrained(path_or_name, revision=revision, language=language)
        device = resolve_device(device)
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        return cls(model.to(device).eval(), tokenizer, device, dtype, max_length, name, revision)

    # ------------------------------------------------------------------------------------------ input

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """The model tokenizer's wordpieces of each text (no special tokens)."""
        ids = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
        return [self.tokenizer.convert_ids_to_tokens(row) for row in ids]

    def batches(self, items: Iterable[str | Sequence[str]], batch_size: int, long_words: str = "split",
                what: str = "items") -> Iterator[Batch]:
        """Padded batches of chunks of the items, length-sorted within pools (see the module docstring).

        Logs a warning with the number of words longer than a chunk (left out or cut) and of items
        without any piece (they yield no chunk)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        body = self.max_length - 2
        pool: list[tuple[int, int, list[int], list[tuple[Span, str]]]] = []  # (item, order, ids, words)
        n_long = n_empty = 0
        for group in _groups(enumerate(items), batch_size):
            texts = [item for _, item in group if isinstance(item, str)]
            tokenized = iter(self.tokenize(texts))
            for index, item in group:
                pieces = next(tokenized) if isinstance(item, str) else list(item)
                if not pieces:
                    n_empty += 1
                    continue
                ids = [self.vocab.get(p, self.unk_id) for p in pieces]
                chunks, long = chunk_words(self.subwords.spans(pieces), body, long_words)
                n_long += long
                for order, chunk in enumerate(chunks):
                    start = chunk[0][0]
                    spans = [(s - start, e - start) for s, e in chunk]
                    texts_ = [self.subwords.text(pieces[s:e]) for s, e in chunk]
                    pool.append((index, order, ids[start : chunk[-1][1]], list(zip(spans, texts_, strict=True))))
            if len(pool) >= batch_size * POOL_BATCHES:
                yield from self._pool_batches(pool, batch_size)
                pool = []
        yield from self._pool_batches(pool, batch_size)
        if n_long:
            logger.warning("%s: %d words longer than %d pieces were %s", what, n_long, body,
                           "left out (they fit no chunk)" if long_words == "drop" else "cut across chunks")
        if n_empty:
            logger.warning("%s: %d have no wordpiece (nothing to encode)", what, n_empty)

    def _pool_batches(self, pool: list, batch_size: int) -> Iterator[Batch]:
        pool.sort(key=lambda c: (len(c[2]), c[0], c[1]))
        for i in range(0, len(pool), batch_size):
            yield self._batch(pool[i : i + batch_size])

    def _batch(self, group: list) -> Batch:
        width = max(len(ids) for _, _, ids, _ in group) + 2
        input_ids = torch.full((len(group), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(group), width), dtype=torch.bool)
        word_index = torch.full((len(group), width), -1, dtype=torch.long)
        words, starts, lengths = [], [], []
        for row, (_, _, ids, spans) in enumerate(group):
            input_ids[row, : len(ids) + 2] = torch.tensor([self.cls_id, *ids, self.sep_id])
            attention[row, : len(ids) + 2] = True
            for (start, end), text in spans:  # +1: [CLS] is position 0
                word_index[row, start + 1 : end + 1] = len(words)
                words.append(text)
                starts.append(row * width + start + 1)
                lengths.append(end - start)
        return Batch(input_ids, attention, word_index, words, torch.tensor(starts, dtype=torch.long),
                     torch.tensor(lengths, dtype=torch.long), [c[0] for c in group], [c[1] for c in group])

    # ------------------------------------------------------------------------------------------ forward

    def _layers(self, layers: Sequence[int] | None) -> list[int]:
        chosen = list(range(self.n_layers + 1)) if layers is None else [int(l) for l in layers]
        for layer in chosen:
            if not 0 <= layer <= self.n_layers:
                raise ValueError(f"layer {layer} outside 0..{self.n_layers} ({self.name})")
        return chosen

    def run(self, batch: Batch, layers: Sequence[int] | None = None, shift: Shift | None = None,
            predict: bool = False) -> Encoded:
        """Forward one batch: hidden states of `layers` (None = all, [] = none), with `shift` applied."""
        from xling.encode.transforms import shift_layer

        chosen = self._layers(layers)
        input_ids, attention = batch.input_ids.to(self.device), batch.attention_mask.to(self.device)
        hook = (shift_layer(self.model, shift.layer, shift.delta, batch.positions(shift.positions).to(self.device))
                if shift is not None else contextlib.nullcontext())
        autocast = (torch.autocast(self.device.type, dtype=self.dtype) if self.dtype is not None
                    else contextlib.nullcontext())
        with torch.inference_mode(), autocast, hook:
            out = base_of(self.model)(input_ids=input_ids, attention_mask=attention.long(),
                                  output_hidden_states=bool(chosen))
            states = torch.stack([out.hidden_states[l] for l in chosen]).float() if chosen else None
            predictions = self._predict(out.last_hidden_state, batch) if predict else None
        return Encoded(batch, chosen, states, predictions)

    def _predict(self, last: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The MLM head's best non-special piece at every word position (-1 elsewhere)."""
        words = batch.positions("words").to(self.device)
        transform, decoder = mlm_head(self.model)
        predictions = torch.full(words.shape, -1, dtype=torch.long, device=self.device)
        predictions[words] = best_pieces(transform(last[words]), decoder, self.special_ids)
        return predictions

    def encode(self, items: Iterable[str | Sequence[str]], batch_size: int, *, layers: Sequence[int] | None = None,
               shift: Shift | None = None, predict: bool = False, long_words: str = "split",
               what: str = "items", total: int | None = None) -> Iterator[Encoded]:
        """Run every item through the model, batch by batch (see the module docstring); logs the rate of
        pieces and, with `total` (or a sized `items`), the items read and an ETA."""
        total = len(items) if total is None and hasattr(items, "__len__") else total
        counted = _Counted(items)
        started = last = time.monotonic()
        n_pieces = n_chunks = 0
        for batch in self.batches(counted, batch_size, long_words, what):
            yield self.run(batch, layers, shift, predict)
            n_pieces += batch.n_pieces
            n_chunks += len(batch.items)
            now = time.monotonic()
            if now - last >= LOG_EVERY_S:
                last = now
                rate = n_pieces / (now - started)
                eta = f", ETA {(total - counted.n) * (now - started) / max(counted.n, 1):.0f} s" if total else ""
                logger.info("%s: %d%s read, %d chunks, %d pieces run, %.0f pieces/s%s", what, counted.n,
                            f"/{total}" if total else "", n_chunks, n_pieces, rate, eta)
        logger.info("%s done: %d read, %d chunks, %d pieces in %.1f s", what, counted.n, n_chunks, n_pieces,
                    time.monotonic() - started)

    def sentence_vectors(self, sentences: Sequence[str | Sequence[str]], batch_size: int,
                         layers: Sequence[int] | None = None, pooling: str = "mean_words",
                         what: str = "sentences") -> tuple[np.ndarray, np.ndarray]:
        """Pooled sentence vectors [n, len(layers), H] (float32) and the number of positions pooled per
        sentence [n]. pooling: mean_words (the wordpieces), mean_all (every non-pad position, [CLS] and
        [SEP] included) or cls (the [CLS] vector); a sentence run in several chunks is pooled over all
        of them (cls: the mean of the chunks' [CLS]). A sentence without pieces gets zeros and count 0."""
        if pooling not in SENTENCE_POOLINGS:
            raise ValueError(f"sentence pooling must be one of {', '.join(SENTENCE_POOLINGS)}, got {pooling!r}")
        chosen = self._layers(layers)
        sums = np.zeros((len(sentences), len(chosen), self.hidden), dtype=np.float32)  # BUCC: ~400k sentences
        counts = np.zeros(len(sentences), dtype=np.int64)
        for out in self.encode(sentences, batch_size, layers=chosen, what=what):
            row_sums, row_counts = out.pooled(SENTENCE_POOLINGS[pooling])
            rows = np.array(out.batch.items)
            np.add.at(sums, rows, row_sums.transpose(0, 1).cpu().numpy())
            np.add.at(counts, rows, row_counts.cpu().numpy())
        return sums / np.maximum(counts, 1)[:, None, None], counts



class _Counted:
    """An iterable that counts the items taken from it (progress of a stream)."""

    def __init__(self, items: Iterable):
        self.items, self.n = items, 0

    def __iter__(self):
        for item in self.items:
            self.n += 1
            yield item


def _groups(iterable: Iterable, size: int) -> Iterator[list]:
    group = []
    for element in iterable:
        group.append(element)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def sentence_word_vectors(encoder, sentences: Sequence[Sequence[str]], layer: int, batch_size: int,
                          what: str = "sentences") -> list[np.ndarray]:
    """Per sentence of given words (e.g. Moses tokens; the alignment studies' word vectors), the vector [n_words, H] (float32) of each word's last subword
    at `layer` of `encoder` (xling.encode.Encoder); NaN rows for words without one.

    Each word is split into the model's pieces on its own, so the model's tokenizer never regroups the given
    words (BERT's tokenizer cuts a Moses word like "5,000" into several of its own words: the vector is then
    the last piece's of the last of them). A piece sequence longer than a model input is run in chunks (xling.encode)."""
    body = encoder.max_length - 2
    items, owners = [], []  # per sentence: its pieces; per model word kept by the encoder, the given word's index
    flat = encoder.tokenize([w for words in sentences for w in words])
    at = 0
    for words in sentences:
        pieces, owner = [], []
        for index in range(len(words)):
            word_pieces = flat[at + index]
            for start, end in encoder.subwords.spans(word_pieces):
                if end - start <= body:  # a longer model word is left out by the encoder (long_words="drop")
                    owner.append(index)
            pieces += word_pieces
        at += len(words)
        items.append(pieces)
        owners.append(owner)
    chunks: dict[int, list[tuple[int, np.ndarray]]] = {}
    for out in encoder.encode(items, batch_size, layers=[layer], long_words="drop", what=what):
        vectors = out.word_vectors("last")[0].cpu().numpy()
        rows = (out.batch.word_start // out.batch.input_ids.shape[1]).numpy()
        for row, (item, chunk) in enumerate(zip(out.batch.items, out.batch.chunks, strict=True)):
            chunks.setdefault(item, []).append((chunk, vectors[rows == row]))
    result, missing = [], 0
    for index, (words, owner) in enumerate(zip(sentences, owners, strict=True)):
        found = [v for _, v in sorted(chunks.get(index, []), key=lambda c: c[0])]
        model_words = np.concatenate(found) if found else np.zeros((0, encoder.hidden), np.float32)
        if len(model_words) != len(owner):
            raise RuntimeError(f"{what} {index}: {len(model_words)} word vectors for {len(owner)} model words")
        out = np.full((len(words), encoder.hidden), np.nan, dtype=np.float32)
        out[owner] = model_words  # a later model word of the same given word overwrites: the last one stays
        missing += int(np.isnan(out[:, 0]).sum())
        result.append(out)
    if missing:
        logger.warning("%s: %d words have no vector (no wordpiece, or longer than %d pieces)", what, missing, body)
    return result
