"""The torch device of a job, and the refusal to run a GPU job on the CPU.

A rule that asks for GPUs (resources `gpu` > 0, or a SLURM `gres` of gpu:<n>) is scheduled on a GPU node for
work sized for GPUs: `device: auto` falling back to the CPU there (a CPU-only torch build, a node whose GPUs
are not visible) would train or encode for days and report nothing. So such a job stops with a message that
names the rule, the device and the fixes, unless its device is set to `cpu` on purpose.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import torch

AUTO = (None, "", "auto")


class GpuUnavailable(RuntimeError):
    """A job that asked for GPUs sees no CUDA device."""


def requested_gpus(resources) -> int:
    """The GPUs a job's resources ask for: `gpu`, else a `gres` of gpu:<n> or gpu:<model>:<n> (the two
    spellings of the SLURM executor plugin). `resources`: a mapping or Snakemake's resources object."""
    get = resources.get if isinstance(resources, Mapping) else lambda name, default: getattr(resources, name, default)
    gpu = get("gpu", 0)
    try:
        count = int(gpu or 0)
    except (TypeError, ValueError):
        raise ValueError(f"resources gpu={gpu!r}: expected a whole number of GPUs") from None
    if count:
        return count
    for part in str(get("gres", "") or "").split(","):
        fields = part.strip().split(":")
        if fields[0] == "gpu" and len(fields) in (2, 3) and fields[-1].isdigit():
            return int(fields[-1])
    return 0


def cuda_status() -> tuple[bool, str]:
    """(whether CUDA is usable, why not in words): what this Python's torch sees."""
    if torch.cuda.is_available():
        return True, f"torch {torch.__version__} sees {torch.cuda.device_count()} CUDA device(s)"
    if torch.version.cuda is None:
        return False, f"torch {torch.__version__} is a CPU-only build"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return False, (
        f"torch {torch.__version__} (built for CUDA {torch.version.cuda}) sees no CUDA device"
        f" (CUDA_VISIBLE_DEVICES={visible!r})"
    )


def job_device(rule: str, gpus: int, device: str | None, cuda: Callable[[], tuple[bool, str]] = cuda_status) -> str:
    """The device name a job runs on. device None/"auto": CUDA when available, else the CPU, except that a job
    of `gpus` > 0 raises GpuUnavailable instead of falling back; an explicit "cuda..." without CUDA raises
    too; "cpu" (or any other explicit device) is taken as given."""
    name = None if device in AUTO else str(device)
    if name is not None and not name.startswith("cuda"):
        return name
    if name is None and gpus <= 0:
        return "cuda" if cuda()[0] else "cpu"
    available, why = cuda()
    if available:
        return name or "cuda"
    asked = f"asks for {gpus} GPU(s) (resources gpu={gpus})" if gpus > 0 else "asks for a CUDA device"
    raise GpuUnavailable(
        f"rule {rule} {asked} with device {device or 'auto'!r}, but {why}; it would run on the CPU. "
        "Fix one of: install PyTorch's CUDA build into the environment the jobs run in "
        "(`make install TORCH=cu126`, the CUDA version of your driver; docs/cluster.md); run the job on a node "
        f"whose GPUs it can see; or run it on the CPU on purpose: `--set-resources \"{rule}:device='cpu'\"` "
        "(or `device: cpu` in the rule's config block, or `gpu: 0` in the profile's set-resources)."
    )


def snakemake_job_device(job) -> str:
    """job_device of a Snakemake script job (the `snakemake` object): its rule, GPUs and device resource."""
    return job_device(job.rule, requested_gpus(job.resources), getattr(job.resources, "device", None))
