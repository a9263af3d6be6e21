"""Running the workflow from the tests: the one Snakemake runner, the copy of a finished run, and reading dry
runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_PRESET = REPO / "presets" / "test.yaml"


def environment(**extra: str) -> dict[str, str]:
    """This process's environment with this python's directory first on PATH (the `python -m` rules need it)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **extra}


def snakemake(*args: str, cwd: Path, timeout: int = 600, repo: Path = REPO) -> subprocess.CompletedProcess:
    """Run Snakemake on `repo`'s Snakefile (this checkout, or a copy of it) from this environment."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), *args],
        cwd=cwd, env=environment(), capture_output=True, text=True, timeout=timeout,
    )


def copy_run(run: Path, destination: Path) -> Path:
    """A copy of a finished run's working directory (results, .snakemake's records) that a test may change: the
    files keep their times, so the copy is as finished as the run."""
    shutil.copytree(run, destination, symlinks=True)
    return destination


def job_counts(dry_run_output: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run as {rule: count}; {} when nothing is to be done. The one gather rule's
    jobs count by table, as {table}_table (from each job's wildcards), so a test names the tables it expects."""
    if "Job stats:" not in dry_run_output:
        assert "Nothing to be done" in dry_run_output, dry_run_output[-3000:]
        return {}
    table = dry_run_output.split("Job stats:", 1)[1]
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m[1] != "total"}
    gathers = counts.pop("gather_table", 0)
    tables = re.findall(r"^rule gather_table:\n(?:    .*\n)*?    wildcards: table=(\w+)$", dry_run_output, re.M)
    assert len(tables) == gathers, f"{gathers} gather jobs, {len(tables)} printed"
    for name in tables:
        counts[f"{name}_table"] = counts.get(f"{name}_table", 0) + 1
    return counts
