"""Representation store: per-word and per-language mean vectors of every BERT layer, by map/reduce.

Why map/reduce: keeping per-token hidden states costs O(tokens x layers x hidden), which is terabytes
at paper scale. Every statistic we need downstream (word vectors for retrieval, language means for
zero-meaning / MDS) is a mean, so each extraction job writes per-layer SUMS and COUNTS for one shard of
a corpus, and DuckDB adds the shards and divides. Memory and storage stay O(words x layers x hidden).

Store schema (Parquet; shards hold sums, reduced files hold means, same columns):
  words: lang (str), word (str), layer (int32), n (int64), d0 .. d{H-1} (float64)
  langs: lang (str), layer (int32), stat ('token' | 'sentence'), n (int64), d0 .. d{H-1} (float64)
Layer 0 is the embedding layer, 1..L the transformer layers.

BERT runs through xling.encode, whose grouping defines a word (xling.data.words: pieces after the first
start with "##"; its text drops the markers). The text is the run's token files (pieces of the run's vocabulary),
or, for a Hugging Face checkpoint with a vocabulary of its own, the sampled corpus tokenized by the checkpoint's
tokenizer; its words are then put in the token files' form (`normalize_word`), so they match the run's word lists
and counts. A word occurrence's vector at a layer is the mean of its
pieces' vectors (as the static models' word vectors); the word's vector is the mean of its occurrence
vectors. stat 'token' is the mean over the chosen positions of every chunk (the
model's input sequences): the wordpieces ("words") or every position, [CLS] and [SEP] included ("all");
stat 'sentence' is the mean over chunks of each chunk's mean over those positions. Padding never counts.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xling.data.corpus import read_documents
from xling.data.wordpiece import normalize_word
from xling.io import atomic_path, read_lines

if TYPE_CHECKING:
    import torch

    from xling.encode.encoder import Encoded

logger = logging.getLogger(__name__)

D_COLUMN = re.compile(r"d\d+")
ROWS_PER_GROUP = 8192  # Parquet row group of the shard files (also bounds the writer's memory)
_word_form = functools.lru_cache(maxsize=1 << 16)(normalize_word)  # once per word type, not per occurrence


class _Accumulator:
    """float64 sums on the device: words [n_words_seen, layers, hidden] grown by doubling, and the
    two language statistics [2, layers, hidden]. Nothing per token is kept beyond one batch."""

    def __init__(self, n_layers: int, hidden: int, max_words: int, device: torch.device):
        import torch  # in the extraction only: the store's readers (retrieval jobs) start without torch

        self.n_layers, self.hidden, self.device = n_layers, hidden, device
        self.max_words = max_words
        self.word_ids: dict[str, int] = {}
        self.sums = torch.zeros(min(max_words, 1024), n_layers, hidden, dtype=torch.float64, device=device)
        self.counts = torch.zeros(self.sums.shape[0], dtype=torch.int64, device=device)
        self.lang_sums = torch.zeros(2, n_layers, hidden, dtype=torch.float64, device=device)
        self.n_tokens = 0
        self.n_sentences = 0

    def word_id(self, word: str) -> int:
        wid = self.word_ids.get(word)
        if wid is None:
            wid = self.word_ids[word] = len(self.word_ids)
            if wid >= self.sums.shape[0]:
                import torch

                cap = min(self.max_words, 2 * self.sums.shape[0])
                sums = torch.zeros(cap, self.n_layers, self.hidden, dtype=torch.float64, device=self.device)
                sums[: self.sums.shape[0]] = self.sums
                counts = torch.zeros(cap, dtype=torch.int64, device=self.device)
                counts[: self.counts.shape[0]] = self.counts
                self.sums, self.counts = sums, counts
        return wid

    def add(self, out: Encoded, words: set[str], mean_positions: str, lowercase: bool | None = None) -> None:
        """Add one encoded batch: its words of `words` and its language statistics. lowercase: the run's
        tokenizer setting, to put the model's words in the token files' form (None: they already are)."""
        import torch

        mask = out.batch.positions(mean_positions).to(self.device).to(torch.float64)
        n = mask.sum(dim=1)
        # weights over positions: row 0 sums all positions (stat token), row 1 sums each chunk's mean (stat sentence)
        lang_weights = torch.stack([mask, mask / n[:, None]])
        for layer in range(self.n_layers):
            states = out.hidden_states[layer].to(torch.float64)
            self.lang_sums[:, layer] += torch.einsum("sbt,bth->sh", lang_weights, states)
        self.n_tokens += int(n.sum())
        self.n_sentences += len(out.batch.items)
        forms = out.batch.words if lowercase is None else [_word_form(w, lowercase) for w in out.batch.words]
        keep = [i for i, word in enumerate(forms) if word in words]
        if keep:
            wids = torch.tensor([self.word_id(forms[i]) for i in keep], dtype=torch.long, device=self.device)
            vectors = out.word_vectors("mean", torch.float64)[:, torch.tensor(keep, device=self.device)]
            self.sums.index_add_(0, wids, vectors.transpose(0, 1))
            self.counts.index_add_(0, wids, torch.ones_like(wids))


def _shard_lines(token_path, shard: int, n_shards: int, max_documents: int | None) -> Iterator[tuple[int, str]]:
    """(line number, line) of the documents of this shard, in file order."""
    for lineno, line in read_lines(token_path):
        if max_documents is not None and lineno > max_documents:
            return
        if (lineno - 1) % n_shards == shard:
            yield lineno, line


def _shard_texts(corpus_path, shard: int, n_shards: int, max_documents: int | None) -> Iterator[str]:
    """The documents of this shard of a canonical corpus (sentences per line, documents separated by a blank
    line), each as one text; document i (from 1, in file order) belongs to shard (i - 1) % n_shards."""
    for number, document in enumerate(read_documents(corpus_path), start=1):
        if max_documents is not None and number > max_documents:
            return
        if (number - 1) % n_shards == shard:
            yield " ".join(line for _, line in document)


def _documents(lines, token_path, vocab: dict[str, int]) -> Iterator[list[str]]:
    """The pieces of each document; a piece outside the model's vocabulary is an error naming file and line."""
    for lineno, line in lines:
        pieces = line.split()
        missing = next((p for p in pieces if p not in vocab), None)
        if missing is not None:
            raise ValueError(
                f"{token_path}:{lineno}: piece {missing!r} is not in the model's vocabulary "
                "(tokens and model must come from the same vocab.txt)"
            )
        yield pieces


def _write(path: str | Path, keys: dict[str, pa.Array], n: np.ndarray, matrix: np.ndarray) -> None:
    """Write the store table in row groups, so only one group's column copy is in memory at a time."""
    schema = pa.schema(
        [(k, v.type) for k, v in keys.items()]
        + [("n", pa.int64())]
        + [(f"d{j}", pa.float64()) for j in range(matrix.shape[1])]
    )
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, max(len(n), 1), ROWS_PER_GROUP):
            part = slice(start, start + ROWS_PER_GROUP)
            columns = np.ascontiguousarray(matrix[part].T)
            arrays = [v[part.start : part.stop] for v in keys.values()] + [pa.array(n[part], type=pa.int64())]
            writer.write_table(pa.Table.from_arrays(arrays + [pa.array(c) for c in columns], schema=schema))


@dataclass(frozen=True)
class Extraction:
    """How extract_bert_shard runs the model and what it averages (its docstring says what each does)."""

    batch_size: int
    max_length: int | None
    device: str | None = "cpu"
    autocast: bool = True
    max_documents: int | None = None
    mean_positions: str = "all"
    corpus: bool = False
    lowercase: bool = False
    revision: str | None = None


def extract_bert_shard(
    model_dir,
    token_path,
    lang: str,
    words: Iterable[str],
    shard: int,
    n_shards: int,
    out_words,
    out_langs,
    settings: Extraction,
) -> None:
    """Run BERT over shard `shard` of `n_shards` (documents i with i % n_shards == shard) of a token file
    and write per-layer SUMS and counts: for each word of `words` seen (-> out_words) and per language
    (stats token and sentence -> out_langs), in the store schema of this module.

    settings.corpus=True: `token_path` is a canonical corpus instead (a Hugging Face checkpoint whose vocabulary is
    not the run's): each document is tokenized by the model's own tokenizer and its words are compared with
    `words` in the token files' form (`lowercase`: the run's tokenizer setting). `revision` pins a hub
    checkpoint. max_length None: the model's max_position_embeddings.

    The model runs through xling.encode: documents (one per line, WordPiece pieces) are cut at word
    boundaries into chunks of at most max_length - 2 pieces (a longer word is left out and counted), run
    as [CLS] chunk [SEP] in length-sorted batches. mean_positions: the language statistics average the
    wordpieces ("words") or every position of a chunk, [CLS] and [SEP] included ("all", as Liu et al.'s
    code). `autocast` runs bf16 on CUDA only. device "auto" (or None) means CUDA when available, else CPU.
    max_documents caps the corpus to its first N documents (lines) before sharding; None = all.
    """
    batch_size, max_length, device, autocast = (
        settings.batch_size,
        settings.max_length,
        settings.device,
        settings.autocast,
    )
    max_documents, mean_positions, corpus = settings.max_documents, settings.mean_positions, settings.corpus
    lowercase, revision = settings.lowercase, settings.revision
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard must be in [0, {n_shards}), got {shard}")
    if max_length is not None and max_length < 3:
        raise ValueError(f"max_length must be >= 3 ([CLS] word [SEP]), got {max_length}")
    if mean_positions not in ("words", "all"):
        raise ValueError(f"mean_positions must be 'words' or 'all', got {mean_positions!r}")
    import torch

    from xling.encode.encoder import Encoder, resolve_device

    device = resolve_device(device)
    encoder = Encoder.from_pretrained(
        model_dir,
        device=device,
        max_length=max_length,
        revision=revision,
        dtype=torch.bfloat16 if autocast and device.type == "cuda" else None,
    )
    if max_length is not None and encoder.max_length < max_length:
        raise ValueError(
            f"max_length {max_length} exceeds the model's max_position_embeddings {encoder.max_length} ({model_dir})"
        )
    words = set(words)
    n_layers, hidden = encoder.n_layers + 1, encoder.hidden
    acc = _Accumulator(n_layers, hidden, max(len(words), 1), device)
    if corpus:
        total_docs = sum(1 for _ in _shard_texts(token_path, shard, n_shards, max_documents))
        documents = _shard_texts(token_path, shard, n_shards, max_documents)
    else:
        total_docs = sum(1 for _ in _shard_lines(token_path, shard, n_shards, max_documents))
        documents = _documents(_shard_lines(token_path, shard, n_shards, max_documents), token_path, encoder.vocab)
    started = time.monotonic()
    for out in encoder.encode(
        documents, batch_size, long_words="drop", total=total_docs, what=f"{token_path} shard {shard}/{n_shards}"
    ):
        acc.add(out, words, mean_positions, lowercase if corpus else None)
    logger.info(
        "%s shard %d/%d done: %d chunks, %d positions averaged (%s), %d/%d words seen, %.1f s",
        lang,
        shard,
        n_shards,
        acc.n_sentences,
        acc.n_tokens,
        mean_positions,
        len(acc.word_ids),
        len(words),
        time.monotonic() - started,
    )

    n_words = len(acc.word_ids)
    word_list = list(acc.word_ids)  # dict order = word id order
    sums = acc.sums[:n_words].cpu().numpy().reshape(n_words * n_layers, hidden)
    counts = acc.counts[:n_words].cpu().numpy()
    _write(
        out_words,
        {
            "lang": pa.array([lang] * (n_words * n_layers), type=pa.string()),
            "word": pa.array(np.repeat(np.array(word_list, dtype=object), n_layers), type=pa.string()),
            "layer": pa.array(np.tile(np.arange(n_layers, dtype=np.int32), n_words), type=pa.int32()),
        },
        np.repeat(counts, n_layers),
        sums,
    )

    lang_rows = acc.lang_sums.cpu().numpy().reshape(2 * n_layers, hidden) if acc.n_tokens else np.zeros((0, hidden))
    n_rows = lang_rows.shape[0]
    _write(
        out_langs,
        {
            "lang": pa.array([lang] * n_rows, type=pa.string()),
            "layer": pa.array(np.tile(np.arange(n_layers, dtype=np.int32), 2)[:n_rows], type=pa.int32()),
            "stat": pa.array((["token"] * n_layers + ["sentence"] * n_layers)[:n_rows], type=pa.string()),
        },
        np.array(([acc.n_tokens] * n_layers + [acc.n_sentences] * n_layers)[:n_rows], dtype=np.int64),
        lang_rows,
    )


def _sql_string(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def reduce_shards(shard_paths: list, out_path) -> None:
    """Add the shards' sums and counts per key (every column but n and d*) and divide: means.

    Works for both the words and the langs tables. Rows are ordered by lang, layer, then the other keys,
    so that filtered reads of one (lang, layer) touch few row groups.
    """
    import duckdb

    paths = [Path(p) for p in shard_paths]
    if not paths:
        raise ValueError("reduce_shards: no shard files given")
    schema = pq.read_schema(paths[0])
    for path in paths[1:]:
        other = pq.read_schema(path)
        if not other.equals(schema):
            raise ValueError(f"{path}: columns {other.names[:5]}... differ from {paths[0]} ({schema.names[:5]}...)")
    names = schema.names
    if "n" not in names or not any(D_COLUMN.fullmatch(c) for c in names):
        raise ValueError(f"{paths[0]}: not a representation store (needs columns n and d0..)")
    keys = [c for c in names if c != "n" and not D_COLUMN.fullmatch(c)]
    order = [k for k in ("lang", "layer") if k in keys] + [k for k in keys if k not in ("lang", "layer")]
    key_sql = ", ".join(_sql_name(k) for k in keys)
    files = "[" + ", ".join(_sql_string(p) for p in paths) + "]"
    with atomic_path(out_path) as tmp:
        con = duckdb.connect()
        try:
            con.execute(
                f"COPY (SELECT {key_sql}, CAST(SUM(n) AS BIGINT) AS n, SUM(COLUMNS('^d\\d+$')) / SUM(n) "
                f"FROM read_parquet({files}) GROUP BY {key_sql} ORDER BY {', '.join(_sql_name(k) for k in order)}) "
                f"TO {_sql_string(tmp)} (FORMAT parquet, ROW_GROUP_SIZE 8192)"
            )
        finally:
            con.close()
    logger.info("reduced %d shards into %s", len(paths), out_path)


def _d_names(path) -> list[str]:
    return [c for c in pq.read_schema(path).names if D_COLUMN.fullmatch(c)]


def vector_dim(path) -> int:
    """The vector size of a store."""
    return len(_d_names(path))


def read_vectors(path, lang: str, layer: int) -> tuple[list[str], np.ndarray]:
    """Words (sorted) and their vectors [n_words, hidden] (float64) for one language and layer of a words
    store; only the matching row groups are read. Empty when the language or layer is absent."""
    dcols = _d_names(path)
    table = pq.read_table(path, columns=["word", *dcols], filters=[("lang", "==", lang), ("layer", "==", int(layer))])
    table = table.sort_by("word")
    matrix = np.empty((table.num_rows, len(dcols)), dtype=np.float64)
    for j, name in enumerate(dcols):
        matrix[:, j] = table.column(name).to_numpy()
    return table.column("word").to_pylist(), matrix


def read_lang_mean(path, lang: str, layer: int, stat: str = "token") -> np.ndarray:
    """One language mean vector [hidden] from a reduced langs store (stat 'token' or 'sentence')."""
    dcols = _d_names(path)
    table = pq.read_table(
        path, columns=dcols, filters=[("lang", "==", lang), ("layer", "==", int(layer)), ("stat", "==", stat)]
    )
    if table.num_rows != 1:
        raise ValueError(f"{path}: expected one row for lang={lang} layer={layer} stat={stat}, found {table.num_rows}")
    return np.array([table.column(c)[0].as_py() for c in dcols], dtype=np.float64)
