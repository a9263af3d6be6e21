"""Task models for zero-shot transfer: an encoder (a BERT, or frozen static vectors) plus a task head, and the
inputs each task feeds them. xling.tune.finetune trains them; xling.evaluate.transfer scores them.

Tasks and heads:
  xnli     BERT: the pair `[CLS] premise [SEP] hypothesis [SEP]` (framed as the model's tokenizer frames a pair:
           XLM-R's `<s> premise </s></s> hypothesis </s>`), a linear layer on the last layer's [CLS]
           vector (Devlin et al.; Conneau et al. 2020; Cao et al. 2020). Static vectors: the InferSent recipe
           (Conneau et al. 2017), each sentence through a BiLSTM over its frozen wordpiece vectors, max-pooled
           to u and v, then an MLP on [u, v, |u - v|, u * v] (the papers do not say which classifier they used).
  pos      a linear layer on each word's first-subword vector (17 UPOS tags).
  ner      the same on IOB2 tags (WikiAnn).
  parsing  the biaffine parser of xling.tune.parser on the first-subword vectors.

Word-level tasks run each sentence cut at word boundaries into chunks of at most max_length - 2 pieces, each
as `[CLS] chunk [SEP]` (xling.data.words.chunk_words, as the encoder does), so no word of a long sentence is
lost; the first-subword vectors of all chunks are gathered back into one row of words per sentence.

A BERT backbone is transformers' BertModel (or any masked LM's transformer: XLMRobertaModel, DistilBertModel,
loaded by xling.models.pretrained); zero-mean and MDS reach it only through
xling.encode.transforms.shift_layer (the one hook), with the delta added at every non-pad position
("all") or the wordpieces ("words") of the chosen layer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from xling.data import formats
from xling.data.formats import universal_relation
from xling.data.words import chunk_words
from xling.encode.encoder import Shift
from xling.encode.transforms import shift_layer
from xling.io import read_word2vec_binary
from xling.models.pretrained import PairTemplate, layer_modules, load_pretrained

TASKS = ("xnli", "pos", "parsing", "ner")


# ---------------------------------------------------------------------------------------------- inputs

def read_examples(task: str, path, first: int | None = None) -> list:
    """A task's examples from its canonical file, all or the `first` N: XNLI (premise, hypothesis, label); UD
    sentences (conllu TokenLists of syntactic words); WikiAnn (tokens, tags)."""
    if task == "xnli":
        return formats.read_xnli(path)[:first]
    if task in ("pos", "parsing"):
        return formats.read_conllu(path, first=first)
    if task == "ner":
        return formats.read_wikiann(path)[:first]
    raise ValueError(f"unknown task {task!r} (known: {', '.join(TASKS)})")


def label_inventory(task: str, train: list) -> list[str]:
    """The labels a head predicts, fixed by the English training data (sorted, so ids are stable)."""
    if task == "xnli":
        return list(formats.XNLI_LABELS)
    if task == "pos":
        return sorted({token["upos"] for sentence in train for token in sentence})
    if task == "parsing":
        return sorted({universal_relation(token["deprel"]) for sentence in train for token in sentence})
    return sorted({tag for _, tags in train for tag in tags})


def words_of(task: str, example) -> list[str]:
    if task == "ner":
        return list(example[0])
    return [token["form"] for token in example]


@dataclass
class Featurizer:
    """Turns examples into model inputs with a model's tokenizer (`pieces(texts)` -> wordpieces per text)."""

    task: str
    pieces_of: object  # callable: list[str] -> list[list[str]]
    vocab: dict[str, int]
    unk_id: int
    cls_id: int
    sep_id: int
    template: PairTemplate  # how a pair is framed
    max_length: int
    labels: list[str]

    def ids(self, pieces: Sequence[str]) -> list[int]:
        return [self.vocab.get(p, self.unk_id) for p in pieces]

    def pair(self, a: list[int], b: list[int]) -> dict:
        """Both sentences cut to fit the pair template (`[CLS] a [SEP] b [SEP]`) in max_length, the longer one
        first (BERT's longest_first truncation); the static encoder reads the same pieces."""
        a, b = list(a), list(b)
        while len(a) + len(b) > self.max_length - self.template.n_special:
            (a if len(a) > len(b) else b).pop()
        return {"a": a, "b": b, "template": self.template}

    def __call__(self, examples: list) -> list[dict]:
        index = {label: i for i, label in enumerate(self.labels)}
        if self.task == "xnli":
            premises = self.pieces_of([e[0] for e in examples])
            hypotheses = self.pieces_of([e[1] for e in examples])
            return [{**self.pair(self.ids(p), self.ids(h)), "label": index[e[2]]}
                    for e, p, h in zip(examples, premises, hypotheses, strict=True)]
        features = []
        for example in examples:
            words = words_of(self.task, example)
            pieces_per_word = [p or ["[UNK]"] for p in self.pieces_of(words)]
            pieces = [p for word in pieces_per_word for p in word]
            # the word boundaries are the tokenizer's (a word is never merged with the next one)
            starts = np.cumsum([0] + [len(p) for p in pieces_per_word])
            spans = [(int(starts[i]), int(starts[i + 1])) for i in range(len(words))]
            chunks, _ = chunk_words(spans, self.max_length - 2, long_words="split")
            ids = self.ids(pieces)
            rows, first = [], []
            for chunk in chunks:
                start, end = chunk[0][0], chunk[-1][1]
                offset = 1 - start  # position in the row: [CLS] at 0
                seen = set()
                for s, _ in chunk:
                    # a word cut across chunks ("split") is represented by its first part
                    key = int(np.searchsorted(starts, s, side="right") - 1)
                    if key not in seen and len(first) == key:
                        first.append((len(rows), s + offset))
                    seen.add(key)
                rows.append([self.cls_id, *ids[start:end], self.sep_id])
            feature = {"rows": rows, "first": first, "n_words": len(words)}
            if self.task == "pos":
                feature["labels"] = [index.get(t["upos"], -1) for t in example]
            elif self.task == "ner":
                feature["labels"] = [index.get(tag, -1) for tag in example[1]]
            else:
                feature["heads"] = [int(t["head"]) for t in example]
                feature["labels"] = [index.get(universal_relation(t["deprel"]), -1) for t in example]
            features.append(feature)
        return features


def collate(task: str, features: list[dict], pad_id: int, pair: bool) -> dict[str, torch.Tensor]:
    """A batch of features as padded tensors. xnli: input_ids/attention_mask (and token_type_ids, when the
    model reads them) of the pair (`pair`, BERT) or of each sentence (a_ids, b_ids; static vectors). Word
    tasks: the chunks of all sentences as rows, and `gather` [B, W] = flat index of each word's first piece
    (-1: padding)."""
    if task == "xnli":
        labels = torch.tensor([f["label"] for f in features])
        if pair:
            ids, mask = pad_rows([f["template"].ids(f["a"], f["b"]) for f in features], pad_id)
            batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
            if features[0]["template"].token_types:
                batch["token_type_ids"] = pad_rows([f["template"].types(f["a"], f["b"]) for f in features], 0)[0]
            return batch
        a, a_mask = pad_rows([f["a"] or [pad_id] for f in features], pad_id)
        b, b_mask = pad_rows([f["b"] or [pad_id] for f in features], pad_id)
        return {"a_ids": a, "a_mask": a_mask, "b_ids": b, "b_mask": b_mask, "labels": labels}
    rows = [row for f in features for row in f["rows"]]
    ids, mask = pad_rows(rows, pad_id)
    width = ids.shape[1]
    n_words = max(f["n_words"] for f in features)
    gather = torch.full((len(features), n_words), -1, dtype=torch.long)
    labels = torch.full((len(features), n_words), -1, dtype=torch.long)
    heads = torch.full((len(features), n_words), -1, dtype=torch.long)
    row0 = 0
    for i, f in enumerate(features):
        for w, (row, col) in enumerate(f["first"]):
            gather[i, w] = (row0 + row) * width + col
        labels[i, : f["n_words"]] = torch.tensor(f["labels"])
        if "heads" in f:
            heads[i, : f["n_words"]] = torch.tensor(f["heads"])
        row0 += len(f["rows"])
    batch = {"input_ids": ids, "attention_mask": mask, "gather": gather, "labels": labels}
    if task == "parsing":
        batch["heads"] = heads
    return batch


def pad_rows(seqs: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids padded with `pad` to the longest, and their attention mask."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, : len(s)] = 1
    return ids, mask


def n_pieces(batch: dict[str, torch.Tensor]) -> int:
    """Non-pad input positions of a batch (the tokens/s of progress lines and the benchmark)."""
    return int(sum(batch[k].sum() for k in ("attention_mask", "a_mask", "b_mask") if k in batch))


# ---------------------------------------------------------------------------------------------- encoders

class BertEncoder(nn.Module):
    """A transformers BertModel (or another masked LM's transformer); `shift` (layer, delta [H], positions)
    adds delta at that layer in every forward pass (zero-mean while fine-tuning and testing, MDS when testing)."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert
        self.hidden_size = bert.config.hidden_size
        self.shift: Shift | None = None  # added to a layer's output in every forward pass (zero-mean, MDS)

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        hook = contextlib.nullcontext()
        if self.shift is not None:
            delta = torch.as_tensor(self.shift.delta, dtype=torch.float32).to(input_ids.device)
            mask = (attention_mask.bool() if self.shift.positions == "all"
                    else _word_positions(input_ids, attention_mask))
            hook = shift_layer(self.bert, self.shift.layer, delta, mask)
        types = {} if token_type_ids is None else {"token_type_ids": token_type_ids}  # DistilBERT reads none
        with hook:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask, **types).last_hidden_state

    def freeze(self, k: int) -> None:
        """Freeze the embeddings and encoder layers 1..k (k = 0: nothing frozen)."""
        layers = layer_modules(self.bert)  # the embeddings, then the blocks
        if not 0 <= k < len(layers):
            raise ValueError(f"freeze must be in 0..{len(layers) - 1}, got {k}")
        modules = layers[: k + 1] if k else []
        for module in modules:
            for p in module.parameters():
                p.requires_grad_(False)


def _word_positions(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Non-pad positions other than the first ([CLS]) and the last ([SEP]) of each row."""
    mask = attention_mask.bool().clone()
    mask[:, 0] = False
    last = attention_mask.sum(dim=1) - 1
    mask[torch.arange(mask.shape[0]), last] = False
    return mask


def word_states(states: torch.Tensor, gather: torch.Tensor) -> torch.Tensor:
    """[rows, T, H] chunk states -> [B, W, H] first-subword vectors (zeros at padded word slots)."""
    flat = states.reshape(-1, states.shape[-1])
    out = flat[gather.clamp(min=0)]
    return out * (gather >= 0).unsqueeze(-1).to(out.dtype)


# ---------------------------------------------------------------------------------------------- heads

class LinearHead(nn.Module):
    """A linear layer of `n_labels` outputs on the encoder's vectors, after dropout."""

    def __init__(self, encoder: BertEncoder, n_labels: int, dropout: float):
        super().__init__()
        self.encoder, self.dropout = encoder, nn.Dropout(dropout)
        self.out = nn.Linear(encoder.hidden_size, n_labels)


class PairClassifier(LinearHead):
    """XNLI on a BERT: a linear layer on the pair's [CLS] vector (`pooling` cls, Devlin et al.; Cao et al.) or on
    the mean of its non-pad vectors (`mean`): an MLM-only BERT never trains [CLS], and a small one's English-trained
    classifier reads each other language's [CLS] offset as one class (docs/transfer.md)."""

    POOLINGS = ("cls", "mean")

    def __init__(self, encoder: BertEncoder, n_labels: int, dropout: float, pooling: str = "cls"):
        super().__init__(encoder, n_labels, dropout)
        if pooling not in self.POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(self.POOLINGS)}, got {pooling!r}")
        self.pooling = pooling

    def pooled(self, batch) -> torch.Tensor:
        """[B, H]: what the classifier reads."""
        states = self.encoder(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
        if self.pooling == "cls":
            return states[:, 0]
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        return (states * mask).sum(1) / mask.sum(1)

    def logits(self, batch):
        return self.out(self.dropout(self.pooled(batch)))

    def loss(self, batch):
        return F.cross_entropy(self.logits(batch), batch["labels"])

    def predict(self, batch) -> list[int]:
        return self.logits(batch).argmax(dim=-1).tolist()


class InferSent(nn.Module):
    """XNLI on static vectors (Conneau et al. 2017): frozen wordpiece vectors -> BiLSTM -> max pooling for
    each sentence (u, v) -> MLP on [u, v, |u - v|, u * v]."""

    def __init__(self, vectors: torch.Tensor, hidden: int, n_labels: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding.from_pretrained(vectors, freeze=True)
        self.lstm = nn.LSTM(vectors.shape[1], hidden, batch_first=True, bidirectional=True)
        self.mlp = nn.Sequential(nn.Dropout(dropout), nn.Linear(8 * hidden, hidden), nn.Tanh(),
                                 nn.Dropout(dropout), nn.Linear(hidden, n_labels))

    def sentence(self, ids, mask):
        states, _ = self.lstm(self.embed(ids))
        return states.masked_fill(~mask.bool().unsqueeze(-1), -torch.inf).max(dim=1).values

    def logits(self, batch):
        u = self.sentence(batch["a_ids"], batch["a_mask"])
        v = self.sentence(batch["b_ids"], batch["b_mask"])
        return self.mlp(torch.cat([u, v, (u - v).abs(), u * v], dim=-1))

    def loss(self, batch):
        return F.cross_entropy(self.logits(batch), batch["labels"])

    def predict(self, batch) -> list[int]:
        return self.logits(batch).argmax(dim=-1).tolist()


class Tagger(LinearHead):
    """POS / NER: a linear layer on each word's first-subword vector."""

    def logits(self, batch):
        states = self.encoder(batch["input_ids"], batch["attention_mask"])
        return self.out(self.dropout(word_states(states, batch["gather"])))

    def loss(self, batch):
        logits = self.logits(batch)
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-1)

    def predict(self, batch) -> list[list[int]]:
        best = self.logits(batch).argmax(dim=-1)
        lengths = (batch["gather"] >= 0).sum(dim=1).tolist()
        return [best[i, :n].tolist() for i, n in enumerate(lengths)]


class Parser(nn.Module):
    """Dependency parsing: the biaffine parser (xling.tune.parser) on the first-subword vectors."""

    def __init__(self, encoder: BertEncoder, n_labels: int, dropout: float, arc_dim: int, label_dim: int):
        from xling.tune.parser import BiaffineParser

        super().__init__()
        self.encoder = encoder
        self.parser = BiaffineParser(encoder.hidden_size, n_labels, arc_dim=arc_dim, label_dim=label_dim,
                                     dropout=dropout)

    def words(self, batch):
        states = self.encoder(batch["input_ids"], batch["attention_mask"])
        return word_states(states, batch["gather"]), batch["gather"] >= 0

    def loss(self, batch):
        words, mask = self.words(batch)
        return self.parser(words, mask, batch["heads"], batch["labels"])

    def predict(self, batch) -> list[tuple[list[int], list[int]]]:
        words, mask = self.words(batch)
        heads, labels = self.parser.predict(words, mask)
        return list(zip(heads, labels, strict=True))


# ---------------------------------------------------------------------------------------------- building

@dataclass
class Backbone:
    """What a task model is built on: a BERT (ours or a Hugging Face checkpoint) or static vectors, with
    the tokenizer that makes its wordpieces."""

    kind: str  # bert | static
    encoder: BertEncoder | None
    vectors: torch.Tensor | None
    featurizer_args: dict  # pieces_of, vocab, unk_id, cls_id, sep_id, template, pad_id
    tokenizer: object = None  # a BERT's transformers tokenizer (saved beside the fine-tuned encoder)

    def featurizer(self, task: str, max_length: int, labels: list[str]) -> Featurizer:
        args = {k: v for k, v in self.featurizer_args.items() if k != "pad_id"}
        return Featurizer(task, max_length=max_length, labels=labels, **args)

    @property
    def pad_id(self) -> int:
        return self.featurizer_args["pad_id"]


def load_bert(path_or_name: str | Path, revision: str | None = None, language: str | None = None) -> Backbone:
    """Our BERT's directory (xling.models.bert) or a Hugging Face checkpoint as a task model's backbone: its
    BertModel (XLMRobertaModel, ...) and tokenizer, loaded by the one loader (xling.models.pretrained: an
    ablated model's view of `language`, a pinned hub revision)."""
    bert, tokenizer, _ = load_pretrained(path_or_name, revision=revision, language=language, masked_lm=False)

    def pieces_of(texts: list[str]) -> list[list[str]]:
        rows = tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []
        return [tokenizer.convert_ids_to_tokens(row) for row in rows]

    args = {"pieces_of": pieces_of, "vocab": tokenizer.get_vocab(), "unk_id": tokenizer.unk_token_id,
                "cls_id": tokenizer.cls_token_id, "sep_id": tokenizer.sep_token_id,
                "template": PairTemplate.of(tokenizer),
                "pad_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0}
    return Backbone("bert", BertEncoder(bert), None, args, tokenizer)


def load_static(vectors_path, vocab_path, lowercase: bool) -> Backbone:
    """GloVe / Word2Vec vectors of the run's wordpieces, as a frozen embedding matrix over the run's
    WordPiece vocabulary (pieces without a vector, below min_count, get zeros), tokenized as in training."""
    from xling.data.wordpiece import load_tokenizer

    keys, vectors = read_word2vec_binary(vectors_path)
    index = {key: row for row, key in enumerate(keys)}
    tokenizer = load_tokenizer(vocab_path, lowercase)
    vocab = tokenizer.get_vocab()
    matrix = np.zeros((len(vocab), vectors.shape[1]), dtype=np.float32)
    for piece, i in vocab.items():
        if piece in index:
            matrix[i] = vectors[index[piece]]

    def pieces_of(texts: list[str]) -> list[list[str]]:
        return [e.tokens for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)] if texts else []

    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    args = {"pieces_of": pieces_of, "vocab": vocab, "unk_id": vocab["[UNK]"], "cls_id": cls_id, "sep_id": sep_id,
                "template": PairTemplate((cls_id,), (sep_id,), (sep_id,), True), "pad_id": vocab["[PAD]"]}
    return Backbone("static", None, torch.from_numpy(matrix), args)


def build_model(task: str, backbone: Backbone, n_labels: int, settings: dict) -> nn.Module:
    """The task model on `backbone` with the head settings of `settings` (dropout; static: hidden; parsing:
    arc_dim, label_dim)."""
    if backbone.kind == "static":
        if task != "xnli":
            raise ValueError(f"static vectors are evaluated on XNLI only, not {task!r}")
        return InferSent(backbone.vectors, settings["static_hidden"], n_labels, settings["dropout"])
    if task == "xnli":
        # fine-tunings recorded before the setting existed pooled [CLS]
        return PairClassifier(backbone.encoder, n_labels, settings["dropout"], settings.get("pooling", "cls"))
    if task in ("pos", "ner"):
        return Tagger(backbone.encoder, n_labels, settings["dropout"])
    if task == "parsing":
        return Parser(backbone.encoder, n_labels, settings["dropout"], settings["arc_dim"], settings["label_dim"])
    raise ValueError(f"unknown task {task!r} (known: {', '.join(TASKS)})")
