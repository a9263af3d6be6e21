"""The one resumable training loop under pretraining (xling.models.bert), fine-tuning (xling.tune.finetune) and
alignment (xling.tune.align): resume from the last complete checkpoint, periodic checkpoints every
`checkpoint_every` steps (and whatever a trainer saves itself, e.g. at an epoch's end), SIGTERM/SIGUSR1 finish
the step, checkpoint and exit (Interrupted), and a progress line with the work rate and ETA.

The loop owns the step counter, the clock and the checkpoint files; each trainer keeps its own step, data order,
selection and outputs, and hands the loop two callables: `content()` (what a checkpoint holds besides the step,
the elapsed seconds and the reason) and `restore(saved)` (load it back). The loop draws no random number, so a
trainer's numbers are the same under it as they would be in a hand-written loop.
"""

from __future__ import annotations

import logging
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from xling.models.checkpoints import Interrupted, StopSignal, hms, list_checkpoints, save_checkpoint

LOG_EVERY_S = 30.0
LATEST = object()  # resume()'s default: the directory's last complete checkpoint


@dataclass(frozen=True)
class Progress:
    """What a progress line reports: the step of `total`, the training seconds so far, and the steps, the work
    done (tokens, pieces, steps) and the seconds since the previous line, from which the rate and the ETA follow."""

    step: int
    total: int
    elapsed: float
    steps: int
    work: float
    seconds: float

    @property
    def rate(self) -> float:
        return self.work / max(self.seconds, 1e-9)

    @property
    def eta(self) -> float:
        return (self.total - self.step) * self.seconds / max(self.steps, 1)

    def text(self, unit: str) -> str:
        return f"{self.rate:.0f} {unit}/s, {hms(self.elapsed)} elapsed, ETA {hms(self.eta)}"


def plain(value):
    """A state with numpy scalars as Python numbers (a trainer's best dev score is often a numpy float), which
    `torch.load(weights_only=True)` would refuse."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


class TrainingLoop:
    """Checkpoints, stop signals and progress of one training run of `total` steps in `directory` (the per-setting
    checkpoint subdirectory). Use as a context manager around the steps; after each step call `after_step`.

    log_every_steps: a progress line every that many steps and at the last one (pretraining's training log); else
    one every LOG_EVERY_S seconds and at step 1. writer: whether this process writes checkpoints (DDP: rank 0).
    agree: turns this process's stop signal number into the one every process acts on (DDP: a max all-reduce);
    barrier: waits for every process before an interrupted run exits.
    """

    def __init__(
        self,
        directory,
        total: int,
        content: Callable[[], dict],
        *,
        checkpoint_every: int,
        keep: int = 1,
        log: logging.Logger,
        log_every_steps: int | None = None,
        writer: bool = True,
        stop: StopSignal | None = None,
        agree: Callable[[int], int] | None = None,
        barrier: Callable[[], None] | None = None,
    ):
        self.directory, self.total, self.content = Path(directory), int(total), content
        self.checkpoint_every, self.keep, self.log = int(checkpoint_every), int(keep), log
        self.log_every_steps, self.writer = log_every_steps, writer
        self.agree, self.barrier = agree, barrier
        self.step = self.last_saved = 0
        self._stop, self._own_stop = stop, stop is None
        self._before, self._clock = 0.0, time.monotonic()
        self._logged_step, self._logged_at, self._work = 0, self._clock, 0.0

    def __enter__(self) -> TrainingLoop:
        if self._own_stop:
            self._stop = StopSignal().__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._own_stop:
            self._stop.__exit__(*exc)

    @property
    def elapsed(self) -> float:
        """Training seconds, those of the runs this one resumed included."""
        return self._before + time.monotonic() - self._clock

    def latest(self) -> Path | None:
        found = list_checkpoints(self.directory)
        return found[-1][1] if found else None

    def resume(self, restore: Callable[[dict], str], *, path=LATEST) -> dict | None:
        """Load the last complete checkpoint (or `path`, None for none: DDP ranks resume the one rank 0 chose),
        hand it to restore(saved), which returns what to say about it, and go on from its step; None without one.

        Loaded with `weights_only=True`: a checkpoint holds tensors and plain containers only, so a file planted in
        a shared checkpoint folder cannot run code in the job (torch refuses any other pickled object)."""
        path = self.latest() if path is LATEST else path
        saved = None
        if path is not None:
            saved = torch.load(path, map_location="cpu", weights_only=True)
            detail = restore(saved)
            self.step = self.last_saved = self._logged_step = int(saved["step"])
            self._before = float(saved.get("elapsed_s", 0.0))
            self.log.info("resumed from %s: step %d, %s", path, self.step, detail)
        if self.writer:
            self.directory.mkdir(parents=True, exist_ok=True)
            for stale in self.directory.glob(".ckpt-*.tmp"):
                stale.unlink(missing_ok=True)
        self._clock = self._logged_at = time.monotonic()
        return saved

    def save(self, reason: str, force: bool = False) -> None:
        """A checkpoint of the current step, unless one exists already (force: rewrite it, e.g. at an epoch's end,
        when the trainer's own state moved on without a step)."""
        if self.writer and (force or self.step != self.last_saved):
            state = plain({**self.content(), "step": self.step, "elapsed_s": self.elapsed, "reason": reason})
            path = save_checkpoint(self.directory, state, self.keep)
            self.log.info("step %d: checkpoint %s (%s)", self.step, path, reason)
        self.last_saved = self.step

    def check_stop(self) -> None:
        """After a SIGTERM/SIGUSR1 (on any process): checkpoint and raise Interrupted(128 + signal)."""
        signum = self._stop.signum if self.agree is None else self.agree(self._stop.signum)
        if not signum:
            return
        name = signal.Signals(signum).name
        self.save(f"signal {name}")
        if self.writer:
            last = self.latest()
            self.log.warning(
                "stopped by %s at step %d; the last checkpoint is %s",
                name,
                self.step,
                last if last is not None else "none (nothing to save)",
            )
        if self.barrier is not None:
            self.barrier()
        raise Interrupted(128 + signum)

    def advance(self) -> int:
        """Count one optimizer step; returns the new step number."""
        self.step += 1
        return self.step

    def after_step(self, report: Callable[[Progress], None], *, work: float = 1.0, periodic: bool = True) -> None:
        """After `advance`: report(progress) when a progress line is due, a periodic checkpoint when due (and
        `periodic`: not where the trainer saves anyway), then the stop check. work: this step's tokens, pieces."""
        self._work += work
        if self.log_every_steps:
            due = self.step % self.log_every_steps == 0 or self.step == self.total
        else:
            due = time.monotonic() - self._logged_at >= LOG_EVERY_S or self.step == 1
        if due:
            now = time.monotonic()
            report(
                Progress(
                    self.step,
                    self.total,
                    self.elapsed,
                    self.step - self._logged_step,
                    self._work,
                    now - self._logged_at,
                )
            )
            self._logged_step, self._logged_at, self._work = self.step, now, 0.0
        if periodic and self.step % self.checkpoint_every == 0 and self.step < self.total:
            self.save("periodic")
        self.check_stop()
