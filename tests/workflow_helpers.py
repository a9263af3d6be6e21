"""Running the workflow from the tests: the one Snakemake runner, the copy of a finished run, and reading dry
runs."""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_PRESET = REPO / "presets" / "test.yaml"
#: Snakemake's flags for commands that execute no job: the warm Snakemake serves them
RUNS_NO_JOB = {"-n", "--dry-run", "--lint"}


def environment(**extra: str) -> dict[str, str]:
    """This process's environment with this python's directory first on PATH (the `python -m` rules need it)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **extra}


def snakemake(*args: str, cwd: Path, timeout: int = 600, repo: Path = REPO) -> subprocess.CompletedProcess:
    """Run Snakemake on `repo`'s Snakefile (this checkout, or a copy of it) from this environment. A command that
    runs no job (a dry run, the linter) is forked from this process's warm Snakemake (tests/snakemake_zygote.py:
    the same entry point without its 1.4 s start-up); a run that executes jobs is a fresh `python -m snakemake`."""
    argv = ["--snakefile", str(repo / "Snakefile"), *map(str, args)]
    if RUNS_NO_JOB & set(argv) and hasattr(os, "fork"):
        return warm_snakemake().run(argv, cwd=Path(cwd), env=environment(), timeout=timeout)
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *argv],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class WarmSnakemake:
    """The client of one tests/snakemake_zygote.py process: runs one Snakemake command at a time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("snakemake_zygote.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment(),
        )
        self.pending = b""

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory(prefix="snakemake-") as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            request = dict(argv=argv, cwd=str(cwd.resolve()), env=env, stdout=str(out), stderr=str(err))
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
            pid = self._answer(timeout=60)["pid"]
            try:
                code = self._answer(timeout)["returncode"]
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)  # as subprocess.run does on its timeout
                self._answer(timeout=60)
                raise subprocess.TimeoutExpired(["snakemake", *argv], timeout) from None
            return subprocess.CompletedProcess(
                ["snakemake", *argv], code, out.read_text(errors="replace"), err.read_text(errors="replace")
            )

    def _answer(self, timeout: float) -> dict:
        """The zygote's next line, read without a buffer that select() cannot see."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise subprocess.TimeoutExpired("snakemake_zygote", timeout)
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"snakemake_zygote exited with {self.process.wait()}")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


@functools.cache
def warm_snakemake() -> WarmSnakemake:
    """This process's warm Snakemake, started on first use, stopped when the process exits."""
    warm = WarmSnakemake()
    atexit.register(warm.close)
    return warm


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
