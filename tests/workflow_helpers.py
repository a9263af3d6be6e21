"""Running the workflow from the tests: one place for the Snakemake call and for reading its dry runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_PRESET = REPO / "presets" / "test.yaml"


def snakemake(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run Snakemake from this environment (its python must also run the `python -m` rules)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )


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
