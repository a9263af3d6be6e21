"""The masked LM the trainer optimizes (xling.models.bert): one BertForMaskedLM per language of an ablation with its
shared parts as the same modules, and the MLM loss projected onto the vocabulary only where a position is masked."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def build_views(config, languages: list[str], spec: dict):
    """One BertForMaskedLM per language whose shared parts are the SAME modules (so one optimizer step
    updates them for every language): the embeddings and the MLM head unless separate_embeddings (each
    language's head then stays tied to its own embeddings), and encoder layers from separate_layers up."""
    from transformers import BertForMaskedLM

    first = BertForMaskedLM(config)
    views = {languages[0]: first}
    for lang in languages[1:]:
        if not (spec["separate_embeddings"] or spec["separate_layers"]):
            views[lang] = first
            continue
        view = BertForMaskedLM(config)
        if not spec["separate_embeddings"]:
            view.bert.embeddings, view.cls = first.bert.embeddings, first.cls
        for i in range(int(spec["separate_layers"]), config.num_hidden_layers):
            view.bert.encoder.layer[i] = first.bert.encoder.layer[i]
        views[lang] = view
    return nn.ModuleDict(views)


class MaskedLMLoss(nn.Module):
    """Summed MLM cross-entropy, the vocabulary projection computed only at masked positions.

    Projecting all positions onto the vocabulary (what BertForMaskedLM.forward does) costs
    [batch, window, vocab] logits; with a 120k mBERT vocabulary that dominates memory and time,
    yet only ~15% of positions have a label. The parameters are those of the wrapped model, so
    the result is a plain BertForMaskedLM. Wrapped as a module so DDP sees the whole forward.
    """

    def __init__(self, mlm, pad: int | None = None):
        super().__init__()
        self.mlm, self.pad = mlm, pad  # pad: blocks may end in [PAD] (code-switched per batch), masked out

    def forward(
        self, input_ids: torch.Tensor, flat_positions: torch.Tensor, targets: torch.Tensor, language: str | None = None
    ) -> torch.Tensor:
        mlm = self.mlm if language is None else self.mlm[language]  # an ablation: the batch language's view
        attention = None if self.pad is None else (input_ids != self.pad).long()
        hidden = mlm.bert(input_ids=input_ids, attention_mask=attention).last_hidden_state
        selected = hidden.reshape(-1, hidden.shape[-1]).index_select(0, flat_positions)
        logits = mlm.cls(selected)
        return F.cross_entropy(logits.float(), targets, reduction="sum")
