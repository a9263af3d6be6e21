"""Training checkpoints: single files written atomically (temp file, fsync, rename), the RNG states a
bit-exact resume needs, and the per-setting subdirectory key so a changed setting trains beside the old one."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from xling.io import fsync_dir, scratch
from xling.runtime import RUNTIME

logger = logging.getLogger(__name__)

#: Keys that may change between a checkpoint and its resumption without changing the trajectory: the
#: runtime settings of the `bert` block (the workflow passes them as resources, so they retrain nothing).
RESUMABLE_CHANGES = RUNTIME["bert"]
_CKPT_RE = re.compile(r"^ckpt-(\d{9})\.pt$")


@contextlib.contextmanager
def atomic_directory(out_dir) -> Iterator[Path]:
    """A temporary directory in out_dir's scratch folder (xling.io.scratch) to write a model into; when the block ends without error its files
    get the permissions the umask gives (mkdtemp's are private; a model is for the whole group), are synced to
    disk, and the directory is renamed onto out_dir (an old out_dir removed only then), so that a killed job
    never leaves half a model."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with scratch(out_dir) as folder:  # the next attempt removes what a killed one left
        tmp = folder / out_dir.name
        tmp.mkdir()
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        for path in (tmp, *tmp.rglob("*")):
            if path.is_dir():
                os.chmod(path, 0o777 & ~umask)
                continue
            os.chmod(path, 0o666 & ~umask)
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
        old = None
        if out_dir.exists():
            old = folder / "old"
            os.replace(out_dir, old)
        os.replace(tmp, out_dir)
        fsync_dir(out_dir.parent)
        if old is not None:
            shutil.rmtree(old)


def list_checkpoints(checkpoint_dir) -> list[tuple[int, Path]]:
    """Complete checkpoints (a file only gets its final name once fully written), oldest first."""
    d = Path(checkpoint_dir)
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := _CKPT_RE.match(p.name))] if d.is_dir() else []
    return sorted(found)


def save_checkpoint(checkpoint_dir, state: dict, keep: int) -> Path:
    """Write `state` atomically (temp file, fsync, rename, fsync dir) and keep only the last `keep`."""
    d = Path(checkpoint_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"ckpt-{state['step']:09d}.pt"
    fd, tmp = tempfile.mkstemp(prefix=".ckpt-", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    fsync_dir(d)
    for _, old in list_checkpoints(d)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def rng_state() -> dict:
    np_state = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (np_state[0], torch.from_numpy(np_state[1].copy()), *np_state[2:]),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    name, key, *rest = state["numpy"]
    np.random.set_state((name, key.numpy(), *rest))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


def trajectory(h: dict) -> dict:
    """The hyper-parameters a resumed run must share with its checkpoint."""
    return {k: v for k, v in h.items() if k not in RESUMABLE_CHANGES}


def checkpoint_key(h: dict, n_blocks: int, fingerprint: int, vocab_size: int) -> str:
    """Name of the checkpoint subdirectory of one training: a short hash of what decides the weights (the
    trajectory hyper-parameters and the packed data), so a changed setting or corpus trains beside the
    checkpoints of the old one, which a later change back resumes from."""
    spec = {"hparams": trajectory(h), "n_blocks": n_blocks, "fingerprint": fingerprint, "vocab_size": vocab_size}
    return hashlib.blake2b(json.dumps(spec, sort_keys=True).encode(), digest_size=6).hexdigest()


class StopSignal:
    """Remembers SIGTERM/SIGUSR1 so the loop can finish its step, checkpoint and exit."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

    def __init__(self):
        self.signum = 0
        self._previous = {}

    def _handle(self, signum, frame):
        if not self.signum:
            logger.warning(
                "received %s: finishing the current step, then checkpoint and exit", signal.Signals(signum).name
            )
        self.signum = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        else:
            logger.warning("not in the main thread: SIGTERM/SIGUSR1 will not trigger a checkpoint")
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)


class Interrupted(SystemExit):
    """Raised after the checkpoint that a SIGTERM/SIGUSR1 asked for; code = 128 + signal number."""


def hms(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
