"""The one BERT loader, which the encoder, fine-tuning and alignment share.

It loads our directory (xling.models.bert) or a Hugging Face checkpoint; of an ablated model, the view of the
text's language (xling.models.ablation.view_path); a hub name at its pinned `revision` (warning when none is
given, as the default branch may move); and keeps transformers' messages about unused pretraining heads (expected)
and its loading bars out of the jobs' logs.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Iterator, NamedTuple

from xling.models.ablation import view_path

logger = logging.getLogger(__name__)


class Pretrained(NamedTuple):
    model: object  # a BertForMaskedLM, or a BertModel without pooler (masked_lm=False)
    tokenizer: object  # its transformers tokenizer
    name: str  # what was loaded: the directory (an ablated model's view) or the hub name


def load_pretrained(path_or_name: str | Path, *, revision: str | None = None, language: str | None = None,
                    masked_lm: bool = True) -> Pretrained:
    """A BERT and its tokenizer. revision: the hub revision (commit, tag or branch) of a hub name, ignored for
    a local directory. language: the language of the text, which picks an ablated model's view (a plain model
    ignores it). masked_lm=False loads only the encoder (BertModel, no pooler), as the task heads use it."""
    from transformers import AutoTokenizer, BertForMaskedLM, BertModel

    name = str(view_path(path_or_name, language))
    if revision is None and not Path(name).is_dir():
        logger.warning("%s: loading a hub checkpoint without a pinned revision (the default branch may move)", name)
    kwargs = {"revision": revision} if revision else {}
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(name, **kwargs)
        if masked_lm:
            model = BertForMaskedLM.from_pretrained(name, **kwargs)
        else:
            model = BertModel.from_pretrained(name, add_pooling_layer=False, **kwargs)
    return Pretrained(model, tokenizer, name)


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
