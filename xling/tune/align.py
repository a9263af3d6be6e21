"""Fine-tuning alignment (Cao, Kitaev and Klein 2020, §3.3 and App. A.1): move every language's contextual
word vectors onto English's through word pairs of parallel sentences, while English stays where it was.

For a batch of sentence pairs (s, t), s in a language xx and t its English translation, with word pairs
a(s, t) (the one-to-one links of xling.data.alignment), the loss is

    L + λ R,   L = Σ_(s,t) Σ_(i,j)∈a(s,t) ‖f(i, s) − f(j, t)‖²,   R = Σ_t Σ_j ‖f(j, t) − f0(j, t)‖²

with f(i, s) the vector of word i of s (its LAST subword's state at `layer`, the paper's model output:
the same word vector contextual retrieval reads), f0 the frozen initial model and R over every word of the
English sentences. Sums, as in the paper (not means): the batch's size sets the loss's scale, and Adam
divides that out. All languages are aligned jointly, each step taking `pairs_per_language` pairs of each
language (the paper: 2), with Adam (lr 5e-5, β (0.9, 0.98), ε 1e-9), linear warm-up over the first
`warmup` of the steps and linear decay to 0 (xling.tune.finetune.linear_schedule), for `epochs` (1) passes
over the largest language's pairs (a smaller language's are cycled, so every batch holds the same number per
language). The model runs without dropout (the paper names dropout for XNLI only): f is deterministic,
so the loss is the formula above, and source = target gives zero loss and gradient.

Deterministic for a seed: language l's pairs are visited in a permutation drawn from (seed, epoch, l);
nothing else is random. Checkpoints (atomic; the one training loop, xling.models.loop) every `checkpoint_every`
steps in a subdirectory named by a hash of the settings, the base model and the data; SIGTERM/SIGUSR1 finish the
step, checkpoint and exit, and a resumed run ends with the uninterrupted run's weights.

Output directory: the whole masked LM (save_pretrained; the MLM head's decoder is tied to the aligned
embeddings) and its tokenizer, so the one loader (xling.models.pretrained) loads it like any BERT of the run; `alignment.json` (settings, pairs and links per language, steps, losses) and `training_log.tsv`
(step, loss, pairs term, English drift term, links, lr).
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from xling.data.alignment import read_split_files
from xling.io import atomic_write
from xling.models.checkpoints import atomic_directory, hms
from xling.models.loop import Progress, TrainingLoop
from xling.models.pretrained import base_of, load_pretrained, max_positions
from xling.tune.finetune import checkpoint_key, linear_schedule
from xling.tune.heads import pad_rows

logger = logging.getLogger(__name__)

LOG_COLUMNS = ("step", "loss", "pairs", "drift", "links", "lr")


@dataclass
class ParallelWords:
    """One language's word-aligned sentence pairs with English: words per sentence and links (English word,
    xx word), Pharaoh `i-j` with i on the English side."""

    lang: str
    en: list[list[str]]
    xx: list[list[str]]
    links: list[list[tuple[int, int]]]

    def __len__(self) -> int:
        return len(self.en)


def read_parallel_words(lang: str, en_path, xx_path, align_path) -> ParallelWords:
    """A split of xling.data.alignment (`{split}.en`, `.{lang}`, `.align`), checked as `read_split_files` checks it."""
    en, xx, links = read_split_files(en_path, xx_path, align_path)
    return ParallelWords(lang, en, xx, [sorted(p) for p in links])


# ---------------------------------------------------------------------------------------------- the loss


def alignment_loss(
    xx_linked: torch.Tensor,
    en_linked: torch.Tensor,
    en_words: torch.Tensor,
    en_words_initial: torch.Tensor,
    regularization: float,
) -> tuple[torch.Tensor, ...]:
    """(L + λR, L, R): L sums ‖f(i,s) − f(j,t)‖² over the linked pairs' vectors [P, H], R sums
    ‖f(j,t) − f0(j,t)‖² over the English words' vectors [W, H] by the model and by the frozen initial one."""
    pairs = ((xx_linked - en_linked) ** 2).sum()
    drift = ((en_words - en_words_initial) ** 2).sum()
    return pairs + regularization * drift, pairs, drift


def encode_words(tokenizer, sentences: list[list[str]], max_length: int, chunk: int = 4096) -> list[dict]:
    """Each sentence (a list of words) as `[CLS] pieces [SEP]` ids, cut to max_length, and the position of
    every word's last piece (-1: a word with no piece, or with any piece cut off); int32 arrays, tokenized
    `chunk` sentences at a time, so 250K pairs per language stay small in memory."""
    out = []
    for start in range(0, len(sentences), chunk):
        part = sentences[start : start + chunk]
        encoded = tokenizer(part, is_split_into_words=True)
        for row, words in enumerate(part):
            ids = np.asarray(encoded["input_ids"][row], dtype=np.int32)
            last = np.full(len(words), -1, dtype=np.int32)
            for position, word in enumerate(encoded.word_ids(row)):
                if word is not None:
                    last[word] = position
            if len(ids) > max_length:
                ids = np.concatenate([ids[: max_length - 1], ids[-1:]])
                last[last >= max_length - 1] = -1
            out.append({"ids": ids, "last": last})
    return out


def word_states(bert, ids: list[list[int]], pad_id: int, layer: int, device: torch.device) -> torch.Tensor:
    """The hidden states [B, T, H] at `layer` (0 = embeddings) of padded rows."""
    input_ids, mask = pad_rows(ids, pad_id)
    out = bert(input_ids=input_ids.to(device), attention_mask=mask.to(device), output_hidden_states=True)
    return out.hidden_states[layer]


def batch_loss(
    bert,
    bert0,
    en: list[dict],
    xx: list[dict],
    links: list[list[tuple[int, int]]],
    *,
    pad_id: int,
    layer: int,
    regularization: float,
    device: torch.device,
) -> tuple[torch.Tensor, ...]:
    """alignment_loss of one batch of encoded sentence pairs (en[k] and xx[k] a pair with links[k]) and the
    number of links used (a link to a word cut off by max_length is not)."""
    states = word_states(bert, [f["ids"] for f in en + xx], pad_id, layer, device)
    with torch.no_grad():
        initial = word_states(bert0, [f["ids"] for f in en], pad_id, layer, device)
    width, width0 = states.shape[1], initial.shape[1]  # the English rows alone may be padded less
    words = [(k, p) for k, f in enumerate(en) for p in f["last"] if p >= 0]
    en_index, xx_index = [], []
    for k, pair_links in enumerate(links):
        for i, j in pair_links:
            if en[k]["last"][i] >= 0 and xx[k]["last"][j] >= 0:
                en_index.append(k * width + en[k]["last"][i])
                xx_index.append((len(en) + k) * width + xx[k]["last"][j])
    flat, flat0 = states.flatten(0, 1), initial.flatten(0, 1)
    loss, pairs, drift = alignment_loss(
        _rows(flat, xx_index),
        _rows(flat, en_index),
        _rows(flat, [k * width + p for k, p in words]),
        _rows(flat0, [k * width0 + p for k, p in words]),
        regularization,
    )
    return loss, pairs, drift, len(en_index)


def _rows(flat: torch.Tensor, positions: list[int]) -> torch.Tensor:
    return flat[torch.tensor(positions, dtype=torch.long, device=flat.device)]


# ---------------------------------------------------------------------------------------------- training


@functools.lru_cache(maxsize=64)
def pair_order(n: int, seed: int, epoch: int, lang_index: int) -> np.ndarray:
    """The order language `lang_index`'s n pairs are visited in during `epoch` (drawn once per epoch)."""
    return np.random.default_rng([seed, epoch, lang_index]).permutation(n)


def step_pairs(sizes: list[int], k: int, seed: int, step: int) -> list[list[int]]:
    """For each language (of sizes[l] pairs), the k pairs of global step `step` (0-based): an epoch is one pass
    over the largest language, a smaller one's permutation wraps around."""
    per_epoch = math.ceil(max(sizes) / k)
    epoch, offset = divmod(step, per_epoch)
    return [
        [int(order[(offset * k + r) % n]) for r in range(k)]
        for l, n in enumerate(sizes)
        for order in [pair_order(n, seed, epoch, l)]
    ]


def align(
    model_path,
    data: list[ParallelWords],
    out_dir,
    checkpoint_dir,
    settings: dict,
    *,
    seed: int,
    revision: str | None = None,
    max_length: int | None = None,
    identity: dict | None = None,
    device: str | torch.device = "cpu",
    checkpoint_every: int = 500,
    on_step: Callable[[dict], None] | None = None,
) -> dict:
    """Align the BERT at model_path (our directory or a hub name at `revision`) on `data` (one ParallelWords
    per non-English language), write out_dir (see the module docstring) and return its alignment.json record.

    settings: pairs_per_language, epochs, learning_rate, betas, eps, warmup (fraction of the steps),
    regularization (λ), layer (None: the last). max_length caps [CLS] pieces [SEP] (our BERT: its window).
    identity: what else decides the weights (model and data fingerprints), hashed with the settings into the
    checkpoint subdirectory's name. on_step: called after every step with the loop's state.
    """
    if not data or not all(len(d) for d in data):
        raise ValueError(f"no parallel data to align on ({', '.join(f'{d.lang}: {len(d)} pairs' for d in data)})")
    device = torch.device(device)
    model, tokenizer, _ = load_pretrained(model_path, revision=revision)
    bert = base_of(model)  # the transformer under the MLM head (BERT's .bert, XLM-R's .roberta)
    n_layers = bert.config.num_hidden_layers
    layer = n_layers if settings["layer"] is None else int(settings["layer"])
    if not 0 <= layer <= n_layers:
        raise ValueError(f"alignment layer {layer} outside 0..{n_layers} ({model_path})")
    max_length = min(max_length or max_positions(model), max_positions(model))
    model.eval().to(device)  # no dropout: see the module docstring
    bert0 = copy.deepcopy(bert).requires_grad_(False)  # f0, the frozen initial model
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    features = [(encode_words(tokenizer, d.en, max_length), encode_words(tokenizer, d.xx, max_length)) for d in data]
    counts = {}
    for d, (en, xx) in zip(data, features, strict=True):
        cut = sum(1 for sent in en + xx for p in sent["last"] if p < 0)
        counts[d.lang] = {"pairs": len(d), "links": sum(len(x) for x in d.links), "words_without_vector": cut}
        logger.info(
            "%s: %d sentence pairs, %d links, %d words cut off by max_length %d or without a piece",
            d.lang,
            len(d),
            counts[d.lang]["links"],
            cut,
            max_length,
        )
    sizes = [len(d) for d in data]
    k = settings["pairs_per_language"]
    total = math.ceil(max(sizes) / k) * settings["epochs"]
    optimizer = torch.optim.Adam(
        bert.parameters(), lr=settings["learning_rate"], betas=tuple(settings["betas"]), eps=settings["eps"]
    )
    scheduler = linear_schedule(optimizer, max(1, round(settings["warmup"] * total)), total)

    key = checkpoint_key(
        {
            "settings": settings,
            "seed": seed,
            "layer": layer,
            "max_length": max_length,
            "langs": [d.lang for d in data],
            "sizes": sizes,
            "identity": identity or {},
        }
    )
    ckpt_dir = Path(checkpoint_dir) / key
    state = {"step": 0, "seconds": 0.0, "log": []}

    def content() -> dict:
        return {
            "bert": bert.state_dict(),
            "state": state,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        }

    def restore(saved: dict) -> str:
        bert.load_state_dict(saved["bert"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state.update(saved["state"])
        return f"{total} steps in all"

    def report(progress: Progress) -> None:
        logger.info(
            "step %d/%d loss %.4g (pairs %.4g, drift %.4g, %d links) lr %.2e, %s",
            progress.step,
            total,
            loss.item(),
            pairs.item(),
            drift.item(),
            n_links,
            lr,
            progress.text("steps"),
        )

    with TrainingLoop(ckpt_dir, total, content, checkpoint_every=checkpoint_every, log=logger) as loop:
        loop.resume(restore)
        logger.info(
            "aligning %s at layer %d on %s: %d steps of %d pairs per language, lr %g, λ %g, %s",
            model_path,
            layer,
            ", ".join(f"{d.lang} {len(d)}" for d in data),
            total,
            k,
            settings["learning_rate"],
            settings["regularization"],
            device,
        )
        while state["step"] < total:
            chosen = step_pairs(sizes, k, seed, state["step"])
            en = [features[l][0][i] for l, rows in enumerate(chosen) for i in rows]
            xx = [features[l][1][i] for l, rows in enumerate(chosen) for i in rows]
            links = [data[l].links[i] for l, rows in enumerate(chosen) for i in rows]
            loss, pairs, drift, n_links = batch_loss(
                bert,
                bert0,
                en,
                xx,
                links,
                pad_id=pad_id,
                layer=layer,
                regularization=settings["regularization"],
                device=device,
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            lr = scheduler.get_last_lr()[0]
            scheduler.step()
            state["step"] = loop.advance()
            state["seconds"] = loop.elapsed
            state["log"].append((state["step"], loss.item(), pairs.item(), drift.item(), n_links, lr))
            if on_step is not None:
                on_step(state)
            loop.after_step(report)
    record = {
        "base": str(model_path),
        "revision": revision,
        "settings": settings,
        "seed": seed,
        "layer": layer,
        "max_length": max_length,
        "languages": counts,
        "steps": total,
        "first_loss": state["log"][0][1] if state["log"] else None,
        "last_loss": state["log"][-1][1] if state["log"] else None,
        "train_seconds": round(state["seconds"], 1),
    }
    _write_output(model, tokenizer, record, state["log"], Path(out_dir))
    logger.info("wrote %s after %d steps in %s", out_dir, total, hms(state["seconds"]))
    return record


def _write_output(model, tokenizer, record: dict, log: list, out_dir: Path) -> None:
    """The model directory, written beside out_dir and renamed onto it."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Writing model shards" bar in the job's log
    with atomic_directory(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        with atomic_write(tmp / "alignment.json") as handle:
            json.dump(record, handle, indent=1)
        with atomic_write(tmp / "training_log.tsv") as handle:
            handle.write("\t".join(LOG_COLUMNS) + "\n")
            handle.writelines(
                "\t".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row) + "\n" for row in log
            )
