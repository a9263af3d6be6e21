"""Training checkpoints load with `weights_only=True`: what the loop saves (model, optimizer and scheduler state
dicts, RNG states, a trainer's plain state) loads that way, and a pickle planted in the checkpoint folder that
would call a function when unpickled is refused before it runs."""

from __future__ import annotations

import logging
import pathlib
import pickle

import pytest
import torch

from xling.models.checkpoints import rng_state, save_checkpoint, set_rng_state
from xling.models.loop import TrainingLoop
from xling.tune.finetune import linear_schedule

LOG = logging.getLogger("test")


def _trainer():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = linear_schedule(optimizer, 2, 10)
    model(torch.ones(3, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    state = {"epoch": 1, "batch": 3, "scores": [{"f1": 0.5}], "best": 0.5, "best_epoch": 0, "seconds": 1.5}
    return model, optimizer, scheduler, state


def test_what_the_loop_saves_loads_weights_only_and_resumes(tmp_path):
    model, optimizer, scheduler, state = _trainer()

    def content():
        return {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": rng_state(),
            "state": state,
        }

    with TrainingLoop(tmp_path, 10, content, checkpoint_every=1, log=LOG) as loop:
        loop.advance()
        loop.save("test")
    path = loop.latest()
    saved = torch.load(path, map_location="cpu", weights_only=True)  # raises on anything but plain data
    assert saved["step"] == 1 and saved["state"] == state
    expected_draw = torch.rand(3)

    fresh_model, fresh_opt, fresh_sched, fresh_state = torch.nn.Linear(4, 2), None, None, {}
    fresh_opt = torch.optim.AdamW(fresh_model.parameters(), lr=1e-3)
    fresh_sched = linear_schedule(fresh_opt, 2, 10)

    def restore(saved):
        fresh_model.load_state_dict(saved["model"])
        fresh_opt.load_state_dict(saved["optimizer"])
        fresh_sched.load_state_dict(saved["scheduler"])
        set_rng_state(saved["rng"])
        fresh_state.update(saved["state"])
        return "ok"

    with TrainingLoop(tmp_path, 10, content, checkpoint_every=1, log=LOG) as resumed:
        resumed.resume(restore)
    assert resumed.step == 1 and fresh_state == state
    assert torch.equal(fresh_model.weight, model.weight)
    assert fresh_sched.get_last_lr() == scheduler.get_last_lr()
    assert torch.equal(torch.rand(3), expected_draw)  # the RNG state came back too


class _Planted:
    """Unpickling this calls Path.touch(marker): code run by merely loading the file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return pathlib.Path.touch, (pathlib.Path(self.marker),)


def test_planted_pickle_with_a_callable_is_refused(tmp_path):
    marker = tmp_path / "code-ran"
    ckpt_dir = tmp_path / "checkpoints"
    save_checkpoint(ckpt_dir, {"step": 5, "payload": _Planted(marker)}, keep=1)
    assert not marker.exists()

    with TrainingLoop(ckpt_dir, 10, dict, checkpoint_every=1, log=LOG) as loop:
        with pytest.raises(pickle.UnpicklingError):
            loop.resume(lambda saved: "should not get here")
    assert not marker.exists(), "unpickling the planted checkpoint ran its code"
