"""`python -m xling.cost.fit PRESET=RUN_ROOT ...`: the start-up seconds, seconds per unit and peak RSS per rule
that finished runs imply, pooled over the runs, printed as the `rules:` lines of resources/throughput.yaml.

Seconds per unit come from the run with the most units of the rule (where the work, not the start-up,
dominates); the start-up is then the median over every job of every run of what remains after that work.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from xling.cost.check import measured
from xling.cost.estimate import estimate_jobs, load_throughput
from xling.cost.jobs import plan_jobs
from xling.cost.work import Context

ROOT = Path(__file__).resolve().parents[2]


def matched(preset: Path, run_root: Path, throughput: dict) -> list[tuple]:
    """(rule, measured seconds, units per thread, seconds of FLOP work, peak RSS) of each measured job."""
    plan = plan_jobs([preset], ROOT / "Snakefile")
    out = []
    for e in estimate_jobs(
        plan.jobs, Context(plan.config, throughput["data"]), throughput, gpus_present=False, allow_fallback=True
    ):
        m = measured(run_root, e.job.benchmark)
        if m is None:
            continue
        spec = throughput["rules"].get(e.job.rule, throughput["fallback"])
        units = e.work.units / max(1, e.job.threads)
        flop_s = e.seconds - float(spec.get("startup_s", 0.0)) - units * float(spec.get("s_per_unit", 0.0))
        out.append((e.job.rule, m["s"], units, flop_s, m["max_rss"]))
    return out


def fit(rows: list[tuple]) -> dict[str, dict]:
    by_rule: dict[str, list[tuple]] = {}
    for row in rows:
        by_rule.setdefault(row[0], []).append(row)
    fitted = {}
    for rule, points in sorted(by_rule.items()):
        per_unit = None
        if any(p[2] for p in points):
            largest = sorted(points, key=lambda p: p[2])[len(points) // 2 :]  # the larger half by units
            smallest = sorted(points, key=lambda p: p[2])[: max(1, len(points) // 2)]
            du = statistics.median(p[2] for p in largest) - statistics.median(p[2] for p in smallest)
            ds = statistics.median(p[1] - p[3] for p in largest) - statistics.median(p[1] - p[3] for p in smallest)
            per_unit = max(ds / du, 0.0) if du > 0 else 0.0
        startup = statistics.median(p[1] - p[3] - (per_unit or 0.0) * p[2] for p in points)
        fitted[rule] = {
            "startup_s": round(max(startup, 0.1), 1),
            "mem_mb": round(max(p[4] for p in points)),
            "jobs": len(points),
        }
        if per_unit is not None:
            fitted[rule]["s_per_unit"] = float(f"{per_unit:.3g}")
    return fitted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xling.cost.fit", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="PRESET=ROOT: a preset and the repository its run finished in")
    parser.add_argument("--throughput", type=Path, default=ROOT / "resources" / "throughput.yaml")
    args = parser.parse_args(argv)
    throughput = load_throughput(args.throughput)
    rows = [row for run in args.runs for row in matched(Path(run.split("=")[0]), Path(run.split("=")[1]), throughput)]
    for rule, c in fit(rows).items():
        print(f"  {rule}: {c}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
