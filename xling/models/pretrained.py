"""The one BERT loader, which the encoder, fine-tuning and alignment share, and the facts of a loaded model they
read from it rather than assume.

It loads our directory (xling.models.bert) or any Hugging Face masked LM that transformers loads (mBERT, XLM-R,
DistilmBERT: the class is the one its config names); of an ablated model, the view of the text's language
(xling.models.ablation.view_path); a hub name at its pinned `revision` (warning when none is given, as the default
branch may move); and keeps transformers' messages about unused pretraining heads (expected) and its loading bars
out of the jobs' logs.

Facts of a model (architectures differ in where they keep them): its transformer without head (`base_of`), the
modules whose outputs are hidden_states 0..L (`layer_modules`), its MLM head as a function of the last states
(`mlm_head`); of a tokenizer, its subword convention (`subwords_of`) and how it frames a pair (`PairTemplate`).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

from xling.data.words import Subwords
from xling.models.ablation import view_path

if TYPE_CHECKING:  # for the annotations only: this module works on the model objects and never needs torch itself
    import torch

logger = logging.getLogger(__name__)


class Pretrained(NamedTuple):
    model: object  # a masked LM (BertForMaskedLM, ...), or its transformer without pooler (masked_lm=False)
    tokenizer: object  # its transformers tokenizer
    name: str  # what was loaded: the directory (an ablated model's view) or the hub name


def load_pretrained(
    path_or_name: str | Path, *, revision: str | None = None, language: str | None = None, masked_lm: bool = True
) -> Pretrained:
    """A masked LM and its tokenizer. revision: the hub revision (commit, tag or branch) of a hub name, ignored
    for a local directory. language: the language of the text, which picks an ablated model's view (a plain model
    ignores it). masked_lm=False loads only the transformer (BertModel, XLMRobertaModel, ...; no pooler), as the
    task heads use it."""
    from transformers import MODEL_FOR_MASKED_LM_MAPPING, MODEL_MAPPING, AutoConfig, AutoTokenizer

    name = str(view_path(path_or_name, language))
    if revision is None and not Path(name).is_dir():
        logger.warning("%s: loading a hub checkpoint without a pinned revision (the default branch may move)", name)
    kwargs = {"revision": revision} if revision else {}
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(name, **kwargs)
        config = AutoConfig.from_pretrained(name, **kwargs)
        mapping = MODEL_FOR_MASKED_LM_MAPPING if masked_lm else MODEL_MAPPING
        if type(config) not in mapping:
            raise ValueError(f"{name}: transformers has no masked-LM model for its type {config.model_type!r}")
        model_class = mapping[type(config)]
        if not masked_lm and "add_pooling_layer" in inspect.signature(model_class.__init__).parameters:
            kwargs["add_pooling_layer"] = False
        model = model_class.from_pretrained(name, **kwargs)
    return Pretrained(model, tokenizer, name)


def base_of(model):
    """The transformer without any head: a masked LM's (BertForMaskedLM.bert, .roberta, .distilbert) or the
    model itself."""
    return model.base_model


def layer_modules(model) -> list:
    """The modules whose outputs are hidden_states[0..L]: the embeddings, then every block."""
    base = base_of(model)
    stack = getattr(base, "encoder", None) or getattr(base, "transformer", None)  # DistilBERT: .transformer
    if not hasattr(base, "embeddings") or not hasattr(stack, "layer"):
        raise TypeError(
            f"{type(model).__name__}: expected a transformer with .embeddings and blocks in "
            ".encoder.layer or .transformer.layer"
        )
    return [base.embeddings, *stack.layer]


def max_positions(model) -> int:
    """The longest input the model reads: max_position_embeddings, less RoBERTa's offset (XLM-R numbers its
    positions from padding_idx + 1, so 514 embeddings read 512 pieces)."""
    offset = getattr(base_of(model).embeddings, "padding_idx", None)
    return model.config.max_position_embeddings - (offset + 1 if offset is not None else 0)


def mlm_head(model) -> tuple[Callable, torch.nn.Linear]:
    """The masked LM's head in two parts: the transform of the last hidden states [..., H] -> [..., H], and the
    decoder, the Linear layer onto the vocabulary (its logits are decoder(transform(states))). Two parts, so that
    a caller that needs only the best piece can run the decoder a slice of the vocabulary at a time."""
    if hasattr(model, "cls"):  # BERT
        return model.cls.predictions.transform, model.cls.predictions.decoder
    if hasattr(model, "lm_head"):  # RoBERTa, XLM-R: dense, gelu, layer norm, then the decoder
        from transformers.activations import gelu

        head = model.lm_head
        return (lambda states: head.layer_norm(gelu(head.dense(states)))), head.decoder
    if hasattr(model, "vocab_projector"):  # DistilBERT
        return (
            lambda states: model.vocab_layer_norm(model.activation(model.vocab_transform(states))),
            model.vocab_projector,
        )
    raise TypeError(f"{type(model).__name__}: no masked-LM head known (cls, lm_head or vocab_projector)")


def subwords_of(tokenizer) -> Subwords:
    """The tokenizer's subword convention, from its decoder: WordPiece's continuation prefix ("##") or
    SentencePiece's word-start mark ("▁", Metaspace)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = json.loads(backend.to_str()).get("decoder") if backend is not None else None
    found = _find_decoder(decoder)
    if found is None:
        raise ValueError(
            f"{type(tokenizer).__name__}: unknown subword convention (decoder {decoder}); "
            "known: WordPiece continuation ('##') and SentencePiece word starts ('\u2581')"
        )
    return found


def _find_decoder(decoder) -> Subwords | None:
    if not isinstance(decoder, dict):
        return None
    if decoder.get("type") == "WordPiece":
        return Subwords(decoder["prefix"], starts_word=False)
    if decoder.get("type") == "Metaspace":
        return Subwords(decoder["replacement"], starts_word=True)
    for part in decoder.get("decoders") or []:  # a Sequence decoder
        found = _find_decoder(part)
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class PairTemplate:
    """How a tokenizer frames a sentence pair: head + a + middle + b + tail ([CLS] a [SEP] b [SEP]; XLM-R:
    <s> a </s></s> b </s>), and whether its model reads token type ids (0 up to the middle, 1 after; DistilBERT
    and XLM-R read none)."""

    head: tuple[int, ...]
    middle: tuple[int, ...]
    tail: tuple[int, ...]
    token_types: bool

    @classmethod
    def of(cls, tokenizer) -> "PairTemplate":
        """Read from the tokenizer's own framing of a pair (its sequence ids tell the special tokens apart)."""
        framed = tokenizer("a", "b")
        ids, owner = framed["input_ids"], framed.sequence_ids(0)
        a = [i for i, o in enumerate(owner) if o == 0]
        b = [i for i, o in enumerate(owner) if o == 1]
        if not a or not b or a[-1] > b[0]:
            raise ValueError(f"{type(tokenizer).__name__}: cannot read its pair template ({ids}, {owner})")
        return cls(
            tuple(ids[: a[0]]),
            tuple(ids[a[-1] + 1 : b[0]]),
            tuple(ids[b[-1] + 1 :]),
            "token_type_ids" in tokenizer.model_input_names,
        )

    @property
    def n_special(self) -> int:
        return len(self.head) + len(self.middle) + len(self.tail)

    def ids(self, a: list[int], b: list[int]) -> list[int]:
        return [*self.head, *a, *self.middle, *b, *self.tail]

    def types(self, a: list[int], b: list[int]) -> list[int]:
        first = len(self.head) + len(a) + len(self.middle)
        return [0] * first + [1] * (len(b) + len(self.tail))


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers at error verbosity and without progress bars within the context, as it was after."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
