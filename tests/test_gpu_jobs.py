"""A job that asks for GPUs never runs on the CPU silently (xling.models.devices), and `make install` chooses
PyTorch's build by TORCH (the CPU one unless a CUDA build is named).

The check is tested on the CPU by planting the resources: on its own with a stand-in probe of CUDA, and through
the real entry points (a rule's script under Snakemake, the trainer's command line) on this machine's torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from xling.models.devices import GpuUnavailable, job_device, requested_gpus

REPO = Path(__file__).resolve().parents[1]
NO_CUDA = lambda: (False, "torch 0.0+cpu is a CPU-only build")  # noqa: E731
CUDA = lambda: (True, "torch sees 1 CUDA device(s)")  # noqa: E731
CPU_TORCH = pytest.mark.skipif(
    torch.cuda.is_available() or torch.version.cuda is not None, reason="the message of a CPU-only torch build"
)


@pytest.mark.parametrize(
    "resources, gpus",
    [
        ({}, 0),
        ({"gpu": 0}, 0),
        ({"gpu": 4}, 4),
        ({"gpu": "2"}, 2),
        ({"gres": "gpu:2"}, 2),
        ({"gres": "gpu:a100:3"}, 3),
        ({"gres": "tmpdisk:100,gpu:1"}, 1),
        ({"gres": "tmpdisk:9"}, 0),
        (SimpleNamespace(gpu=1, device="auto"), 1),
        (SimpleNamespace(device="auto"), 0),
    ],
)
def test_requested_gpus_reads_the_plugins_spellings(resources, gpus):
    assert requested_gpus(resources) == gpus


def test_a_gpu_count_that_is_not_a_number_is_named():
    with pytest.raises(ValueError, match="gpu='two'"):
        requested_gpus({"gpu": "two"})


@pytest.mark.parametrize(
    "gpus, device, cuda, expected",
    [
        (0, "auto", NO_CUDA, "cpu"),  # a CPU job: auto falls back, as before
        (0, None, CUDA, "cuda"),
        (0, "auto", CUDA, "cuda"),
        (2, "auto", CUDA, "cuda"),
        (2, "cuda:1", CUDA, "cuda:1"),
        (2, "cpu", NO_CUDA, "cpu"),  # the user asked for the CPU explicitly
        (0, "cpu", CUDA, "cpu"),
    ],
)
def test_job_device(gpus, device, cuda, expected):
    assert job_device("some_rule", gpus, device, cuda) == expected


@pytest.mark.parametrize("gpus, device", [(1, "auto"), (4, None), (1, ""), (2, "cuda"), (0, "cuda:0")])
def test_a_gpu_job_without_cuda_stops_naming_rule_device_and_fix(gpus, device):
    with pytest.raises(GpuUnavailable) as error:
        job_device("bert_extract", gpus, device, NO_CUDA)
    message = str(error.value)
    assert "rule bert_extract" in message
    assert f"device {device or 'auto'!r}" in message
    assert "CPU-only build" in message
    assert "make install TORCH=cu126" in message
    assert "--set-resources \"bert_extract:device='cpu'\"" in message
    if gpus:
        assert f"gpu={gpus}" in message


@CPU_TORCH
def test_this_machines_cpu_torch_refuses_a_gpu_job():
    with pytest.raises(GpuUnavailable, match=r"rule r asks for 1 GPU\(s\).*is a CPU-only build"):
        job_device("r", 1, "auto")
    assert job_device("r", 0, "auto") == "cpu"


def _environment() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}


@CPU_TORCH
def test_a_rules_script_with_planted_gpu_resources_stops(tmp_path):
    """The real token_translation script as a Snakemake job that asks for a GPU, on this CPU-only torch: it
    fails before reading any input, its log naming the rule, the device and the fix."""
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(f"""\
        rule token_translation:
            output: "out.parquet"
            log: "job.log"
            resources: gpu=1, device="auto"
            script: "{REPO / "scripts" / "token_translation.py"}"
        """)
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "1",
            "--directory",
            str(tmp_path),
            "--snakefile",
            str(tmp_path / "Snakefile"),
            "--resources",
            "gpu=1",
        ],
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=600,
    )
    assert done.returncode != 0
    log = (tmp_path / "job.log").read_text()
    assert "GpuUnavailable: rule token_translation asks for 1 GPU(s)" in log, log + done.stderr
    assert "device 'auto'" in log and "make install TORCH=cu126" in log
    assert not (tmp_path / "out.parquet").exists()


@CPU_TORCH
def test_the_trainers_command_line_with_planted_gpus_stops(tmp_path):
    """`python -m xling.models.bert` as the pretraining rules run it (--rule, --gpus), on this CPU-only torch."""
    command = [
        sys.executable,
        "-m",
        "xling.models.bert",
        "--tokens",
        "missing.txt",
        "--vocab",
        "missing_vocab.txt",
        "--out",
        str(tmp_path / "out"),
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        "--hparams",
        '{"device": null}',
        "--device",
        "auto",
        "--rule",
        "bert_pretrain",
        "--gpus",
        "4",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=_environment(), timeout=300)
    assert done.returncode != 0
    assert "rule bert_pretrain asks for 4 GPU(s) (resources gpu=4) with device 'auto'" in done.stderr, done.stderr
    # `device: cpu` said explicitly passes the check (and then fails on the planted missing files)
    done = subprocess.run(
        [*command[:-6], "--device", "cpu", "--rule", "bert_pretrain", "--gpus", "4"],
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=300,
    )
    assert "GpuUnavailable" not in done.stderr


def _install_plan(*assignments: str, venv: Path) -> str:
    """The commands `make install` would run (make -n -B: all of them, whatever is installed)."""
    done = subprocess.run(
        ["make", "-n", "-B", "install", f"VENV={venv}", *assignments],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_make_install_takes_the_cpu_build_by_default(tmp_path):
    plan = _install_plan(venv=tmp_path / "venv")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu " in plan
    assert "torch==\\1+cpu/' constraints.txt" in plan and "cu1" not in plan
    assert f"touch {tmp_path}/venv/.installed-cpu" in plan


def test_make_install_torch_cu126_takes_the_cuda_build(tmp_path):
    plan = _install_plan("TORCH=cu126", venv=tmp_path / "venv")
    assert "--extra-index-url https://download.pytorch.org/whl/cu126 " in plan
    assert "whl/cpu" not in plan
    # every pip install reads the constraints with torch==<version>+cu126, torch's own install first
    pips = [line for line in plan.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert pips and all(f"-c {tmp_path}/venv/constraints.txt" in line for line in pips)
    assert "torch==\\1+cu126/' constraints.txt" in plan


def test_the_rewritten_constraints_pin_the_chosen_build(tmp_path):
    """The sed line of the plan, run on the real constraints.txt, pins torch at the same version, new build."""
    plan = _install_plan("TORCH=cu126", venv=tmp_path)
    sed = next(line for line in plan.splitlines() if line.startswith("sed "))
    subprocess.run(sed, shell=True, cwd=REPO, check=True)
    pins = (tmp_path / "constraints.txt").read_text().splitlines()
    original = (REPO / "constraints.txt").read_text().splitlines()
    torch_pin = next(line for line in original if line.startswith("torch=="))
    assert torch_pin.endswith("+cpu")
    assert torch_pin.replace("+cpu", "+cu126") in pins
    assert [line for line in pins if not line.startswith("torch==")] == [
        line for line in original if not line.startswith("torch==")
    ]


def test_an_installed_build_is_kept_when_torch_is_not_named(tmp_path):
    (tmp_path / ".installed-cu128").touch()
    plan = _install_plan(venv=tmp_path)
    assert "whl/cu128" in plan and "whl/cpu" not in plan


def test_every_rule_with_a_device_checks_it():
    """Each rule whose resources carry a device (the GPU rules of profiles/slurm among them) runs the check: its
    script resolves the device through snakemake_job_device, the trainer's command line gets --rule and --gpus."""
    import re

    checked = set()
    for smk in sorted((REPO / "rules").glob("*.smk")):
        text = smk.read_text()
        heads = list(re.finditer(r"^rule (\w+):", text, re.M))
        for head, after in zip(heads, [*heads[1:], None], strict=False):
            block = text[head.start() : after.start() if after else len(text)]
            if "device=" not in block and "inference_resources()" not in block:
                continue
            script = re.search(r"script:\s*\n\s*\"\.\./(scripts/\w+\.py)\"", block)
            if script:
                source = (REPO / script[1]).read_text()
                assert "snakemake_job_device(snakemake)" in source, f"{head[1]}: {script[1]}"
                assert not re.search(r"(res|resources)\.device", source), f"{head[1]}: {script[1]} reads the raw device"
            else:
                assert "--rule {params.rule:q} --gpus {resources.gpu:q}" in text, head[1]
            checked.add(head[1])
    assert {"bert_pretrain", "bert_extract", "finetune", "cka", "mono_word_means"} <= checked
