"""The estimate against a finished run: Snakemake's per-job benchmark files (benchmarks/<run>/**.tsv: wall
seconds `s`, peak `max_rss` in MB) matched to the planned jobs by their benchmark path, per rule and in total.
xling.cost.fit turns the same match into the constants of the throughput file.
"""

from __future__ import annotations

import csv
from pathlib import Path


def measured(benchmark_root: Path, benchmark: str | None) -> dict | None:
    """The last row of a job's benchmark file under benchmark_root (the repository the run ran in)."""
    if not benchmark:
        return None
    path = Path(benchmark_root) / benchmark
    if not path.exists():
        return None
    rows = list(csv.DictReader(path.read_text().splitlines(), delimiter="\t"))
    return {"s": float(rows[-1]["s"]), "max_rss": _number(rows[-1].get("max_rss"))} if rows else None


def _number(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def compare(estimates, benchmark_root: Path) -> tuple[list[dict], dict]:
    """Rows per rule (jobs matched, estimated and measured seconds, their ratio, peak RSS) and the total."""
    rows: dict[str, dict] = {}
    for e in estimates:
        m = measured(benchmark_root, e.job.benchmark)
        if m is None:
            continue
        row = rows.setdefault(
            e.job.rule, {"rule": e.job.rule, "jobs": 0, "estimated_s": 0.0, "measured_s": 0.0, "max_rss_mb": 0.0}
        )
        row["jobs"] += 1
        row["estimated_s"] += e.seconds
        row["measured_s"] += m["s"]
        row["max_rss_mb"] = max(row["max_rss_mb"], m["max_rss"])
    for row in rows.values():
        row["ratio"] = row["estimated_s"] / row["measured_s"] if row["measured_s"] else float("inf")
    total = {
        "rule": "total",
        "jobs": sum(r["jobs"] for r in rows.values()),
        "estimated_s": sum(r["estimated_s"] for r in rows.values()),
        "measured_s": sum(r["measured_s"] for r in rows.values()),
        "max_rss_mb": max((r["max_rss_mb"] for r in rows.values()), default=0.0),
    }
    total["ratio"] = total["estimated_s"] / total["measured_s"] if total["measured_s"] else float("inf")
    total["within_2x"] = sum(0.5 <= r["ratio"] <= 2.0 for r in rows.values())
    return sorted(rows.values(), key=lambda r: -r["measured_s"]), total
