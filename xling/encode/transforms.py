"""Language-mean transforms of BERT hidden states: zero-mean and the mean-difference shift (MDS).

A BERT token vector at layer l carries a language component that the mean of all token vectors of
that language at l (the "mean of language" R_L^l) approximates well (Libovický et al. 2020; Liu et
al. 2020). Two transforms use it:

* zero-mean:  h - R_src                          (removes the language component; centering)
* MDS:        h + alpha * (R_tgt - R_src)        (moves the vector toward another language)

Both are the same operation, h + delta, with delta = -R_src or alpha * (R_tgt - R_src). `shift` is
that ONE implementation; it runs on stored vectors (numpy arrays or torch tensors, e.g. pooled
sentence vectors) and, through `shift_layer`, inside a forward pass: a forward hook adds delta to
the output of layer l (layer 0 = the embedding output, l >= 1 = the output of encoder block l, the
`output_hidden_states` indexing) and lets blocks l+1.. and the MLM head run on the shifted states.

Which positions are shifted: `positions` (a [batch, seq] mask) selects them; positions=None shifts
every position. xling.encode.Encoder passes the mask of its Shift's positions: every non-pad position
("all", [CLS] and [SEP] included, as Liu et al.'s code adds the shift) or the wordpieces only ("words").
Padding never changes the outputs at real positions either way (it is masked out of attention), but
[CLS]/[SEP] are attended to, so including them changes the result.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import torch

from xling.models.pretrained import layer_modules


def mds_delta(mean_src, mean_tgt, alpha: float):
    """delta of the mean-difference shift: alpha * (R_tgt - R_src)."""
    return alpha * (mean_tgt - mean_src)


def zero_mean_delta(mean_src):
    """delta of zero-meaning (centering): -R_src."""
    return -mean_src


def shift(h, delta, positions=None):
    """h + delta on the last axis, only where `positions` is true (all positions when None).

    h: [..., H] numpy array or torch tensor; delta: [H] (or broadcastable to h); positions: a mask
    with h's shape minus the last axis. The result has h's type, dtype and device; h is not modified.
    """
    if isinstance(h, torch.Tensor):
        d = torch.as_tensor(delta, device=h.device).to(h.dtype)
        if positions is None:
            return h + d
        mask = torch.as_tensor(positions, device=h.device).to(h.dtype).unsqueeze(-1)
        return h + mask * d
    h = np.asarray(h)
    d = np.asarray(delta, dtype=h.dtype if np.issubdtype(h.dtype, np.floating) else np.float64)
    if positions is None:
        return h + d
    return h + np.asarray(positions, dtype=d.dtype)[..., None] * d


def zero_mean(h, mean_src, positions=None):
    """Zero-mean (centering): h - R_src."""
    return shift(h, zero_mean_delta(mean_src), positions)


def mds(h, mean_src, mean_tgt, alpha: float, positions=None):
    """Mean-difference shift: h + alpha * (R_tgt - R_src)."""
    return shift(h, mds_delta(mean_src, mean_tgt, alpha), positions)


def layer_module(model, layer: int) -> torch.nn.Module:
    """The module whose output is hidden_states[layer]: the embeddings for 0, block l-1 for l >= 1 (of a masked
    LM or its transformer, any architecture xling.models.pretrained.layer_modules knows)."""
    modules = layer_modules(model)
    if not 0 <= layer < len(modules):
        raise ValueError(f"layer must be in [0, {len(modules) - 1}] (0 = embeddings), got {layer}")
    return modules[layer]


@contextlib.contextmanager
def shift_layer(model, layer: int, delta, positions=None) -> Iterator[None]:
    """Within the context, add `delta` to the output hidden states of `layer` in every forward pass.

    delta: [H] (numpy or torch); positions: optional [batch, seq] mask of the positions to shift (it must
    match the batch run inside the context). The hook runs before any other forward hook of that module
    (prepend), so `output_hidden_states` reports the shifted state at `layer`. A module that returns a
    tuple has its first element shifted. The hook is removed on exit, also after an error.
    """
    module = layer_module(model, layer)
    delta_t = torch.as_tensor(np.asarray(delta) if not isinstance(delta, torch.Tensor) else delta)

    def hook(_module, _args, output):
        if isinstance(output, tuple):
            return (shift(output[0], delta_t, positions),) + tuple(output[1:])
        if isinstance(output, torch.Tensor):
            return shift(output, delta_t, positions)
        raise TypeError(f"layer {layer}: cannot shift an output of type {type(output).__name__}")

    handle = module.register_forward_hook(hook, prepend=True)
    try:
        yield
    finally:
        handle.remove()
