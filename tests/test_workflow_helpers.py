"""The tests' Snakemake runner (workflow_helpers.snakemake): a dry run forked from the warm Snakemake
(snakemake_zygote.py) must print and exit as a fresh `python -m snakemake` does, in the caller's directory and
environment, and a run past its timeout must stop as subprocess.run's does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import environment, snakemake, warm_snakemake

TOY = """
import os, sys
print(f"parsed in {os.getcwd()} with {os.environ.get('XLING_TOY_SETTING')}; first on the path: {sys.path[0]}",
      file=sys.stderr)

rule all:
    input: "b.txt"

rule b:
    input: "a.txt", "c.txt"
    output: "b.txt"
    shell: "cat {input} > {output}"
"""


def fresh(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(cwd / "Snakefile"), *args],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def comparable(text: str) -> str:
    """The output without what differs between any two runs: the date, the run's id, the times, the order of
    Snakemake's lists of files (sets)."""
    text = re.sub(r"(Date|Workflow ID): .*|\[\w{3} \w{3} +\d+ [\d:]+ \d{4}\]", "", text)
    return re.sub(r"(reason: [^:\n]+: )(.*)", lambda m: m[1] + ", ".join(sorted(m[2].split(", "))), text)


@pytest.fixture
def toy(tmp_path, monkeypatch) -> Path:
    (tmp_path / "Snakefile").write_text(TOY)
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "c.txt").write_text("c")
    warm_snakemake()  # started before the setting below: a run takes the caller's environment, not the zygote's
    monkeypatch.setenv("XLING_TOY_SETTING", "set after the warm Snakemake started")
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [("-n",), ("-n", "--forceall", "-p"), ("-n", "no-such-target"), ("--lint",)],
    ids=["plan", "forced", "bad target", "lint"],
)
def test_a_warm_dry_run_prints_and_exits_as_a_fresh_one(toy, args):
    warm = snakemake(*args, cwd=toy, repo=toy)
    plain = fresh(*args, cwd=toy)
    assert warm.returncode == plain.returncode
    assert comparable(warm.stdout) == comparable(plain.stdout)
    assert comparable(warm.stderr) == comparable(plain.stderr)
    assert f"parsed in {toy} with set after the warm Snakemake started; first on the path: {toy}" in warm.stderr
    assert comparable(warm.stdout + warm.stderr).strip(), "nothing printed: not a run to compare"
    assert f"Run directory: {toy}" in warm.stdout + warm.stderr or "Run directory" not in plain.stdout + plain.stderr


def test_a_failing_workflow_fails_the_same_way(toy):
    (toy / "Snakefile").write_text(TOY + "\nraise ValueError('a broken Snakefile')\n")
    warm, plain = snakemake("-n", cwd=toy, repo=toy), fresh("-n", cwd=toy)
    assert warm.returncode == plain.returncode == 1
    assert "a broken Snakefile" in warm.stdout  # Snakemake logs the error to stdout
    assert comparable(warm.stdout) == comparable(plain.stdout)
    assert comparable(warm.stderr) == comparable(plain.stderr)


def test_a_dry_run_past_its_timeout_is_stopped_and_the_next_one_runs(toy):
    (toy / "Snakefile").write_text("import time\ntime.sleep(60)\n" + TOY)
    with pytest.raises(subprocess.TimeoutExpired):
        snakemake("-n", cwd=toy, repo=toy, timeout=1)
    (toy / "Snakefile").write_text(TOY)
    assert snakemake("-n", cwd=toy, repo=toy).returncode == 0
