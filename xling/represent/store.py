"""Representation store: per-word and per-language mean vectors of every BERT layer, by map/reduce.

Why map/reduce: keeping per-token hidden states costs O(tokens x layers x hidden), which is terabytes
at paper scale. Every statistic we need downstream (word vectors for retrieval, language means for
zero-meaning / MDS) is a mean, so each extraction job writes per-layer SUMS and COUNTS for one shard of
a corpus, and DuckDB adds the shards and divides. Memory and storage stay O(words x layers x hidden).

Store schema (Parquet; shards hold sums, reduced files hold means, same columns):
  words: lang (str), word (str), layer (int32), n (int64), d0 .. d{H-1} (float64)
  langs: lang (str), layer (int32), stat ('token' | 'sentence'), n (int64), d0 .. d{H-1} (float64)
Layer 0 is the embedding layer, 1..L the transformer layers.

A word is a whitespace word rebuilt from WordPiece pieces ("##" marks a continuation, and is removed
when the word's string is rebuilt). Its occurrence vector at a layer is the mean of its pieces' vectors
at that layer; the word's vector is the mean of its occurrence vectors. stat 'token' is the mean over all
non-special tokens ([CLS]/[SEP]/padding excluded); stat 'sentence' is the mean over chunks (the
model's input sequences) of each chunk's mean token vector.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from xling.io import atomic_path, read_lines

logger = logging.getLogger(__name__)

D_COLUMN = re.compile(r"d\d+")
LOG_EVERY_S = 30.0
ROWS_PER_GROUP = 8192  # Parquet row group of the shard files (also bounds the writer's memory)
POOL_BATCHES = 64  # chunks are length-sorted within pools of this many batches: fast and streaming


def word_string(pieces: list[str]) -> str:
    """The whitespace word a group of pieces spells ("##" continuation markers removed)."""
    return "".join(p[2:] if p.startswith("##") else p for p in pieces)


def group_words(pieces: list[str]) -> list[list[str]]:
    """Group WordPiece pieces into words: a "##" piece continues the previous word.

    A "##" piece with no word before it (start of a document) starts a word of its own.
    """
    words: list[list[str]] = []
    for piece in pieces:
        if piece.startswith("##") and words:
            words[-1].append(piece)
        else:
            words.append([piece])
    return words


def chunk_words(words: list[list[str]], max_pieces: int) -> tuple[list[list[list[str]]], int]:
    """Pack consecutive words greedily into chunks of at most `max_pieces` pieces.

    A word's pieces are never split across chunks: a split word would get a vector made from two
    unrelated contexts. A word longer than `max_pieces` cannot fit any chunk; it is dropped (not run
    through the model) and counted, so the caller can report it. Returns (chunks, n_dropped_words).
    """
    if max_pieces < 1:
        raise ValueError(f"max_pieces must be >= 1, got {max_pieces}")
    chunks: list[list[list[str]]] = []
    current: list[list[str]] = []
    size = 0
    dropped = 0
    for word in words:
        if len(word) > max_pieces:
            dropped += 1
            continue
        if size + len(word) > max_pieces:
            chunks.append(current)
            current, size = [], 0
        current.append(word)
        size += len(word)
    if current:
        chunks.append(current)
    return chunks, dropped


def read_vocab(vocab_path: str | Path) -> dict[str, int]:
    """vocab.txt (one piece per line, line index = id), as BERT's tokenizer reads it."""
    vocab: dict[str, int] = {}
    for lineno, piece in read_lines(vocab_path):
        vocab.setdefault(piece, lineno - 1)
    for special in ("[CLS]", "[SEP]", "[PAD]"):
        if special not in vocab:
            raise ValueError(f"{vocab_path}: special token {special} missing from the vocabulary")
    return vocab


class _Accumulator:
    """float64 sums on the device: words [n_words_seen, layers, hidden] grown by doubling, and the
    two language statistics [2, layers, hidden]. Nothing per token is kept beyond one batch."""

    def __init__(self, n_layers: int, hidden: int, max_words: int, device: torch.device):
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
                cap = min(self.max_words, 2 * self.sums.shape[0])
                sums = torch.zeros(cap, self.n_layers, self.hidden, dtype=torch.float64, device=self.device)
                sums[: self.sums.shape[0]] = self.sums
                counts = torch.zeros(cap, dtype=torch.int64, device=self.device)
                counts[: self.counts.shape[0]] = self.counts
                self.sums, self.counts = sums, counts
        return wid


def _shard_lines(token_path, shard: int, n_shards: int, max_documents: int | None) -> Iterator[tuple[int, str]]:
    """(line number, line) of the documents of this shard, in file order."""
    for lineno, line in read_lines(token_path):
        if max_documents is not None and lineno > max_documents:
            return
        if (lineno - 1) % n_shards == shard:
            yield lineno, line


def _iter_shard_chunks(lines, token_path, vocab, words, max_pieces, acc, stats) -> Iterator[tuple]:
    """Yield (piece ids, [(start, end, word id)]) per chunk of this shard's documents, in file order."""
    for lineno, line in lines:
        stats["documents"] += 1
        pieces = line.split()
        missing = next((p for p in pieces if p not in vocab), None)
        if missing is not None:
            raise ValueError(f"{token_path}:{lineno}: piece {missing!r} is not in the model's vocab.txt "
                             "(tokens and model must come from the same vocabulary)")
        chunks, dropped = chunk_words(group_words(pieces), max_pieces)
        stats["dropped_words"] += dropped
        for chunk in chunks:
            ids: list[int] = []
            spans: list[tuple[int, int, int]] = []
            for word in chunk:
                start = len(ids)
                ids.extend(vocab[p] for p in word)
                text = word_string(word)
                if text in words:
                    spans.append((start, len(ids), acc.word_id(text)))
            yield ids, spans


def _run_batch(model, batch, acc, cls_id, sep_id, pad_id, device, autocast) -> None:
    """Forward one batch of chunks and add its word and language sums to the accumulator."""
    lengths = [len(ids) for ids, _ in batch]
    width = max(lengths) + 2
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    piece_pos: list[int] = []
    piece_weight: list[float] = []
    piece_word: list[int] = []
    occ_word: list[int] = []
    for b, (ids, spans) in enumerate(batch):
        input_ids[b, 0] = cls_id
        input_ids[b, 1 : len(ids) + 1] = torch.tensor(ids, dtype=torch.long)
        input_ids[b, len(ids) + 1] = sep_id
        attention[b, : len(ids) + 2] = 1
        for start, end, wid in spans:
            occ_word.append(wid)
            for t in range(start, end):  # +1: [CLS] is position 0
                piece_pos.append(b * width + t + 1)
                piece_weight.append(1.0 / (end - start))
                piece_word.append(wid)
    input_ids, attention = input_ids.to(device), attention.to(device)
    lengths_t = torch.tensor(lengths, dtype=torch.float64, device=device)
    positions = torch.arange(width, device=device)
    real = ((positions[None, :] >= 1) & (positions[None, :] <= lengths_t[:, None])).to(torch.float64)
    # weights over positions: row 0 sums all tokens (stat token), row 1 sums each chunk's mean (stat sentence)
    lang_weights = torch.stack([real, real / lengths_t[:, None]])
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
        hidden_states = model(input_ids=input_ids, attention_mask=attention, output_hidden_states=True).hidden_states
    pos = torch.tensor(piece_pos, dtype=torch.long, device=device)
    weight = torch.tensor(piece_weight, dtype=torch.float64, device=device)[:, None]
    wids = torch.tensor(piece_word, dtype=torch.long, device=device)
    for layer, states in enumerate(hidden_states):
        states = states.to(torch.float64)
        acc.lang_sums[:, layer] += torch.einsum("sbt,bth->sh", lang_weights, states)
        if piece_pos:
            acc.sums[:, layer].index_add_(0, wids, states.reshape(-1, states.shape[-1])[pos] * weight)
    if occ_word:
        acc.counts.index_add_(0, torch.tensor(occ_word, dtype=torch.long, device=device),
                              torch.ones(len(occ_word), dtype=torch.int64, device=device))
    acc.n_tokens += sum(lengths)
    acc.n_sentences += len(batch)


def _write(path: str | Path, keys: dict[str, pa.Array], n: np.ndarray, matrix: np.ndarray) -> None:
    """Write the store table in row groups, so only one group's column copy is in memory at a time."""
    schema = pa.schema([(k, v.type) for k, v in keys.items()] + [("n", pa.int64())]
                       + [(f"d{j}", pa.float64()) for j in range(matrix.shape[1])])
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, max(len(n), 1), ROWS_PER_GROUP):
            part = slice(start, start + ROWS_PER_GROUP)
            columns = np.ascontiguousarray(matrix[part].T)
            arrays = [v[part.start : part.stop] for v in keys.values()] + [pa.array(n[part], type=pa.int64())]
            writer.write_table(pa.Table.from_arrays(arrays + [pa.array(c) for c in columns], schema=schema))


def load_encoder(model_dir: str | Path, device: str | torch.device = "cpu"):
    """The BERT encoder of a saved BertForMaskedLM (the MLM head is not needed), in eval mode."""
    from transformers import BertModel
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the unused MLM-head weights are expected, not worth a warning
    try:
        model = BertModel.from_pretrained(model_dir, add_pooling_layer=False)
    finally:
        hf_logging.set_verbosity(verbosity)
    return model.to(device).eval()


def extract_bert_shard(model_dir, token_path, lang: str, words: Iterable[str], shard: int, n_shards: int,
                       out_words, out_langs, batch_size: int, max_length: int, device: str = "cpu",
                       autocast: bool = True, max_documents: int | None = None) -> None:
    """Run BERT over shard `shard` of `n_shards` (documents i with i % n_shards == shard) of a token file
    and write per-layer SUMS and counts: for each word of `words` seen (-> out_words) and per language
    (stats token and sentence -> out_langs), in the store schema of this module.

    Documents (one per line, WordPiece pieces) are cut at word boundaries into chunks of at most
    max_length - 2 pieces, wrapped in [CLS] ... [SEP], and batched after sorting by length within pools
    of POOL_BATCHES batches (deterministic; reading stays streaming). `autocast` runs bf16 on CUDA only.
    device "auto" (or None) means CUDA when available, else CPU. max_documents caps the corpus to its first N
    documents (lines) before sharding; None = all.
    """
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard must be in [0, {n_shards}), got {shard}")
    if max_length < 3:
        raise ValueError(f"max_length must be >= 3 ([CLS] word [SEP]), got {max_length}")
    if device in (None, "auto"):
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    words = set(words)
    vocab = read_vocab(Path(model_dir) / "vocab.txt")
    model = load_encoder(model_dir, device)
    if max_length > model.config.max_position_embeddings:
        raise ValueError(f"max_length {max_length} exceeds the model's max_position_embeddings "
                         f"{model.config.max_position_embeddings} ({model_dir})")
    n_layers, hidden = model.config.num_hidden_layers + 1, model.config.hidden_size
    acc = _Accumulator(n_layers, hidden, max(len(words), 1), device)
    total_docs = sum(1 for _ in _shard_lines(token_path, shard, n_shards, max_documents))
    stats = {"documents": 0, "dropped_words": 0}
    ids = (vocab["[CLS]"], vocab["[SEP]"], vocab["[PAD]"])
    use_autocast = autocast and device.type == "cuda"
    started = last_log = time.monotonic()

    def flush(pool: list) -> None:
        nonlocal last_log
        order = sorted(range(len(pool)), key=lambda i: len(pool[i][0]))  # stable: ties keep file order
        for i in range(0, len(order), batch_size):
            _run_batch(model, [pool[j] for j in order[i : i + batch_size]], acc, *ids, device, use_autocast)
            now = time.monotonic()
            if now - last_log >= LOG_EVERY_S:
                last_log = now
                done = stats["documents"]  # read so far (the current pool is being run)
                eta = (total_docs - done) * (now - started) / max(done, 1)
                logger.info("%s shard %d/%d: %d/%d documents read, %d tokens run, %.0f tokens/s, ETA %.0f s",
                            lang, shard, n_shards, done, total_docs, acc.n_tokens,
                            acc.n_tokens / (now - started), eta)

    pool: list = []
    with torch.inference_mode():
        lines = _shard_lines(token_path, shard, n_shards, max_documents)
        for chunk in _iter_shard_chunks(lines, token_path, vocab, words, max_length - 2, acc, stats):
            pool.append(chunk)
            if len(pool) >= batch_size * POOL_BATCHES:
                flush(pool)
                pool = []
        if pool:
            flush(pool)
    elapsed = time.monotonic() - started
    logger.info("%s shard %d/%d done: %d documents, %d chunks, %d tokens, %d/%d words seen, %.1f s", lang, shard,
                n_shards, stats["documents"], acc.n_sentences, acc.n_tokens, len(acc.word_ids), len(words), elapsed)
    if stats["dropped_words"]:
        logger.warning("%s: %d word occurrences longer than %d pieces were left out (they fit no chunk)",
                       token_path, stats["dropped_words"], max_length - 2)

    n_words = len(acc.word_ids)
    word_list = list(acc.word_ids)  # dict order = word id order
    sums = acc.sums[:n_words].cpu().numpy().reshape(n_words * n_layers, hidden)
    counts = acc.counts[:n_words].cpu().numpy()
    _write(out_words, {
        "lang": pa.array([lang] * (n_words * n_layers), type=pa.string()),
        "word": pa.array(np.repeat(np.array(word_list, dtype=object), n_layers), type=pa.string()),
        "layer": pa.array(np.tile(np.arange(n_layers, dtype=np.int32), n_words), type=pa.int32()),
    }, np.repeat(counts, n_layers), sums)

    lang_rows = acc.lang_sums.cpu().numpy().reshape(2 * n_layers, hidden) if acc.n_tokens else np.zeros((0, hidden))
    n_rows = lang_rows.shape[0]
    _write(out_langs, {
        "lang": pa.array([lang] * n_rows, type=pa.string()),
        "layer": pa.array(np.tile(np.arange(n_layers, dtype=np.int32), 2)[:n_rows], type=pa.int32()),
        "stat": pa.array((["token"] * n_layers + ["sentence"] * n_layers)[:n_rows], type=pa.string()),
    }, np.array(([acc.n_tokens] * n_layers + [acc.n_sentences] * n_layers)[:n_rows], dtype=np.int64), lang_rows)


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
                f"TO {_sql_string(tmp)} (FORMAT parquet, ROW_GROUP_SIZE 8192)")
        finally:
            con.close()
    logger.info("reduced %d shards into %s", len(paths), out_path)


def _d_names(path) -> list[str]:
    return [c for c in pq.read_schema(path).names if D_COLUMN.fullmatch(c)]


def read_vectors(path, lang: str, layer: int) -> tuple[list[str], np.ndarray]:
    """Words (sorted) and their vectors [n_words, hidden] (float64) for one language and layer of a words
    store; only the matching row groups are read. Empty when the language or layer is absent."""
    dcols = _d_names(path)
    table = pq.read_table(path, columns=["word", *dcols],
                          filters=[("lang", "==", lang), ("layer", "==", int(layer))])
    table = table.sort_by("word")
    matrix = np.empty((table.num_rows, len(dcols)), dtype=np.float64)
    for j, name in enumerate(dcols):
        matrix[:, j] = table.column(name).to_numpy()
    return table.column("word").to_pylist(), matrix


def read_lang_mean(path, lang: str, layer: int, stat: str = "token") -> np.ndarray:
    """One language mean vector [hidden] from a reduced langs store (stat 'token' or 'sentence')."""
    dcols = _d_names(path)
    table = pq.read_table(path, columns=dcols, filters=[("lang", "==", lang), ("layer", "==", int(layer)),
                                                        ("stat", "==", stat)])
    if table.num_rows != 1:
        raise ValueError(f"{path}: expected one row for lang={lang} layer={layer} stat={stat}, found {table.num_rows}")
    return np.array([table.column(c)[0].as_py() for c in dcols], dtype=np.float64)
