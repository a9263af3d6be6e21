"""Checkpoint selection on held-out text: Conneau et al. (2020, §3) "select the best model based on English dev
perplexity". Every `dev_every` steps (and at the last) the trainer scores the dev blocks (held-out text of the
model's pivot language, disjoint from its training sample: xling.data.corpus.sample_heldout) and keeps the weights
of the best score so far in a file of their own, `best-<step>.pt`, beside the checkpoints.

The masks of the dev blocks are drawn once from (seed, "dev"), so every evaluation scores the same positions and
the score is a function of the weights alone; the perplexity is exp of the mean cross-entropy over those masked
positions (XLM's MLM perplexity). Resuming: each checkpoint records the best step and score so far, and an
evaluation always writes a checkpoint after it, so the best file a checkpoint names exists until a later
checkpoint names another; on resume, best files the checkpoint does not name (written after it) are removed."""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import Callable

import torch

from xling.io import atomic_write
from xling.models.mlm_data import mask_tokens, seed_of

logger = logging.getLogger(__name__)

_BEST_RE = re.compile(r"^best-(\d{9})\.pt$")
LOG_COLUMNS = ("step", "dev_loss", "dev_perplexity", "selected")


class DevSelection:
    """Dev scores of one training run and the best checkpoint's weights.

    blocks: [n, window] ids of the dev text; score(inputs, positions, targets) -> the summed masked-LM
    cross-entropy (the trainer's loss with the model in eval mode); writer: this process writes files (rank 0).
    """

    def __init__(
        self,
        blocks: torch.Tensor,
        special,
        mask_id: int,
        vocab_size: int,
        mlm_probability: float,
        seed: int,
        every: int,
        directory,
        micro_batch: int,
        writer: bool = True,
    ):
        inputs, labels = mask_tokens(
            blocks, special, mask_id, vocab_size, mlm_probability, torch.Generator().manual_seed(seed_of(seed, "dev"))
        )
        self.inputs, self.labels = inputs, labels
        self.masked = int((labels != -100).sum())
        if not self.masked:
            raise ValueError(f"the {len(blocks)} dev blocks have no masked position: a dev set too small to select on")
        self.every, self.directory, self.micro, self.writer = int(every), Path(directory), int(micro_batch), writer
        self.best_step, self.best_perplexity, self.history = None, math.inf, []

    def due(self, step: int, total: int) -> bool:
        return step % self.every == 0 or step == total

    @torch.no_grad()
    def perplexity(self, model: torch.nn.Module, score: Callable, device: torch.device) -> tuple[float, float]:
        """(mean cross-entropy, perplexity) of the dev masked positions, the model in eval mode (no dropout)."""
        was_training = model.training
        model.eval()
        total = 0.0
        try:
            for start in range(0, len(self.inputs), self.micro):
                x, y = self.inputs[start : start + self.micro], self.labels[start : start + self.micro]
                positions = (y.reshape(-1) != -100).nonzero().squeeze(1)
                if not len(positions):
                    continue
                total += float(score(x.to(device), positions.to(device), y.reshape(-1)[positions].to(device)))
        finally:
            model.train(was_training)
        loss = total / self.masked
        return loss, math.exp(min(loss, 700.0))

    def evaluate(self, step: int, model: torch.nn.Module, score: Callable, device: torch.device) -> bool:
        """Score the model at `step`; a new best writes its weights (best-<step>.pt). Returns whether it is one."""
        loss, perplexity = self.perplexity(model, score, device)
        self.history.append((step, loss, perplexity))
        better = perplexity < self.best_perplexity
        logger.info(
            "step %d: dev loss %.4f, perplexity %.3f%s",
            step,
            loss,
            perplexity,
            " (best so far)" if better else f" (best {self.best_perplexity:.3f} at step {self.best_step})",
        )
        if better:
            self.best_step, self.best_perplexity = step, perplexity
            if self.writer:
                self._write_best(model)
        return better

    def _write_best(self, model: torch.nn.Module) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.best_path(self.best_step), "wb") as handle:
            torch.save(
                {"step": self.best_step, "perplexity": self.best_perplexity, "model": model.state_dict()}, handle
            )

    def best_path(self, step: int) -> Path:
        return self.directory / f"best-{step:09d}.pt"

    def state(self) -> dict:
        """What a checkpoint records: the best step and score so far and every score."""
        return {"best_step": self.best_step, "best_perplexity": self.best_perplexity, "history": list(self.history)}

    def restore(self, state: dict | None) -> None:
        """Back to a checkpoint's record (None: one saved before any evaluation, or a fresh start)."""
        state = state or {"best_step": None, "best_perplexity": math.inf, "history": []}
        self.best_step, self.best_perplexity = state["best_step"], state["best_perplexity"]
        self.history = [tuple(row) for row in state["history"]]
        if self.writer and self.best_step is not None and not self.best_path(self.best_step).exists():
            raise FileNotFoundError(
                f"{self.best_path(self.best_step)}: the best checkpoint this run's last "
                f"checkpoint names is missing; delete {self.directory} to restart"
            )
        self.prune()

    def prune(self) -> None:
        """Remove the best files other than the recorded best's (older ones, or ones written after the checkpoint
        resumed from). Call after a checkpoint that records the current best."""
        if not self.writer or not self.directory.is_dir():
            return
        for path in self.directory.iterdir():
            match = _BEST_RE.match(path.name)
            if match and int(match.group(1)) != self.best_step:
                path.unlink(missing_ok=True)

    def best_weights(self) -> dict:
        """The state_dict of the best checkpoint."""
        saved = torch.load(self.best_path(self.best_step), map_location="cpu", weights_only=True)
        return saved["model"]

    def write_log(self, path) -> None:
        """dev_log.tsv: every evaluation's step, mean cross-entropy and perplexity, and 1 on the step selected."""
        with atomic_write(path) as handle:
            handle.write("\t".join(LOG_COLUMNS) + "\n")
            handle.writelines(
                f"{step}\t{loss:.6f}\t{perplexity:.6f}\t{int(step == self.best_step)}\n"
                for step, loss, perplexity in self.history
            )
