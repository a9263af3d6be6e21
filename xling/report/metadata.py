"""The run's metadata for the report's first screen: the checkout (commit and its date), a hash of the run's
settings, and the run's cost from Snakemake's benchmark files (job time summed; wall time from the first job's
start to the last job's end, each file's modification time being its job's end)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

import pandas as pd


def settings_hash(settings: Mapping) -> str:
    """The first 12 hex digits of the SHA-256 of the settings as canonical JSON: equal hashes, equal settings."""
    canonical = json.dumps(settings, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def checkout_commit(checkout: str | Path) -> str | None:
    """'<12 hex digits> of <commit date>', '+ uncommitted changes' when the work tree differs; None outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        commit, date = git("log", "-1", "--format=%H %cs").split()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (subprocess.SubprocessError, OSError, ValueError):
        return None
    return f"{commit[:12]} of {date}" + (", with uncommitted changes" if dirty else "")


def benchmark_cost(bench_dir: str | Path) -> dict:
    """{jobs, job_seconds, wall_seconds, finished} over the benchmark TSVs under `bench_dir` (none: jobs 0).
    A file that is not a benchmark table is an error naming it."""
    files = sorted(Path(bench_dir).rglob("*.tsv")) if Path(bench_dir).is_dir() else []
    starts, ends, total = [], [], 0.0
    for path in files:
        table = pd.read_csv(path, sep="\t")
        if "s" not in table or table.empty:
            raise ValueError(f"{path}: not a Snakemake benchmark table (no 's' column or no rows)")
        seconds = float(table["s"].iloc[-1])
        end = path.stat().st_mtime
        total += seconds
        starts.append(end - seconds)
        ends.append(end)
    if not files:
        return {"jobs": 0}
    finished = datetime.fromtimestamp(max(ends), tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return {"jobs": len(files), "job_seconds": total, "wall_seconds": max(ends) - min(starts), "finished": finished}


def run_metadata(checkout: str | Path, bench_dir: str | Path, settings: Mapping | None) -> dict:
    """What the first screen shows besides the tables: commit, settings hash and cost."""
    return {
        "commit": checkout_commit(checkout),
        "config_hash": settings_hash(settings) if settings else None,
        **benchmark_cost(bench_dir),
    }
