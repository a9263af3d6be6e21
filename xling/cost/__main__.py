"""`python -m xling.cost --configfile presets/X.yaml [--gpus N] [--check benchmarks-root]`: what a run will cost
before it is launched, per rule and in total, with every assumption printed (README, "Cost before launch").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xling.cost.check import compare
from xling.cost.estimate import MissingThroughput, critical_path_s, estimate_jobs, load_throughput, per_rule, schedule_s
from xling.cost.jobs import plan_jobs
from xling.cost.work import Context

ROOT = Path(__file__).resolve().parents[2]


def _h(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds:,.0f} s"


def _n(x: float) -> str:
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g}{unit}"
    return f"{x:.3g}" if x else "-"


def print_rules(rows: list[dict], out=None) -> None:
    out = out or sys.stdout
    head = (
        f"{'rule':32} {'jobs':>5} {'dev':>4} {'tokens':>8} {'steps':>8} {'examples':>9} {'FLOPs':>8} "
        f"{'CPU h':>9} {'GPU h':>9} {'longest':>9} {'GPU GB':>7} {'host GB':>8}"
    )
    print(head, file=out)
    for r in rows:
        print(
            f"{r['rule'] + (' *' if r['fallback'] else ''):32} {r['jobs']:>5} {r['device']:>4} {_n(r['tokens']):>8} "
            f"{_n(r['steps']):>8} {_n(r['examples']):>9} {_n(r['flops']):>8} {r['cpu_h']:>9.2f} {r['gpu_h']:>9.2f} "
            f"{_h(r['longest_s']):>9} {r['gpu_mem_gb']:>7.1f} {r['host_mem_gb']:>8.1f}",
            file=out,
        )


def print_assumptions(throughput: dict, rows: list[dict], gpus_present: bool, out=None) -> None:
    out = out or sys.stdout
    print("\nAssumptions (resources/throughput.yaml; * = rule costed by the fallback):", file=out)
    gpu, cpu = throughput["devices"]["gpu"], throughput["devices"]["cpu"]
    if gpus_present:
        print(f"- GPU: {gpu['flops_per_s']:.3g} FLOP/s sustained ({gpu['source']})", file=out)
    else:
        print("- no GPU: the BERT rules run on their CPU threads", file=out)
    for p in cpu["points"]:
        print(f"- CPU: {p['flops_per_s']:.3g} FLOP/s per thread at hidden {p['hidden']} ({p['source']})", file=out)
    print(
        "- between those widths the CPU rate is interpolated in log(hidden); FLOPs: training 6 x dense params "
        "per token + attention (+ MLM head), inference 2 x dense params + attention",
        file=out,
    )
    for key, text in throughput.get("assumptions", {}).items():
        print(f"- {key}: {text}", file=out)
    print(f"- data sizes: {throughput['data']['source']}", file=out)
    print(f"- start-up and per-unit seconds: {throughput['calibration']}", file=out)
    print(
        "- GPU memory: 16 bytes per parameter (fp32 weights, gradients, Adam) + 34 bytes per token x hidden x layer "
        "of activations when training, 4 bytes per parameter for inference; host memory: the largest max_rss "
        "measured at calibration scale or the rule's declared mem_mb (a floor at larger scales)",
        file=out,
    )
    for r in rows:
        for note in r["notes"]:
            print(f"- {r['rule']}: {note}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xling.cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="*", default=[], type=Path, help="presets over config.yaml")
    parser.add_argument("--snakefile", type=Path, default=ROOT / "Snakefile")
    parser.add_argument("--throughput", type=Path, default=ROOT / "resources" / "throughput.yaml")
    parser.add_argument("--gpus", type=int, nargs="*", default=[1, 8], help="GPU counts to schedule the run on")
    parser.add_argument(
        "--cores-per-gpu",
        type=int,
        default=16,
        help="CPU cores per GPU in the schedule (with --no-gpu: the cores of the machine)",
    )
    parser.add_argument("--no-gpu", action="store_true", help="cost the BERT rules on CPU (as the calibration runs)")
    parser.add_argument("--fallback", action="store_true", help="cost rules without a figure by the fallback")
    parser.add_argument("--only-missing", action="store_true", help="plan only jobs whose outputs are missing")
    parser.add_argument("--check", type=Path, help="root of a finished run (holds benchmarks/<run>/): compare")
    args = parser.parse_args(argv)

    throughput = load_throughput(args.throughput)
    plan = plan_jobs(args.configfile, args.snakefile, forceall=not args.only_missing)
    ctx = Context(plan.config, throughput["data"])
    gpus_present = not args.no_gpu
    try:
        estimates = estimate_jobs(plan.jobs, ctx, throughput, gpus_present, args.fallback)
    except MissingThroughput as error:
        print(f"xling.cost: {error}", file=sys.stderr)
        return 2
    rows = per_rule(estimates)
    print(f"Run {plan.config.get('run')}: {len(plan.jobs)} jobs of {len(rows)} rules\n")
    print_rules(rows)
    cpu_h, gpu_h = sum(r["cpu_h"] for r in rows), sum(r["gpu_h"] for r in rows)
    print(
        f"\nTotal: {cpu_h:,.1f} CPU core-hours, {gpu_h:,.1f} GPU hours; critical path {_h(critical_path_s(estimates))}"
    )
    for n in args.gpus if gpus_present else [0]:
        cores = args.cores_per_gpu * max(n, 1)
        bound = max(critical_path_s(estimates), gpu_h * 3600 / n if n else 0.0, cpu_h * 3600 / cores)
        print(
            f"On {n} GPU(s) and {cores} cores: at least {_h(bound)} (the largest of critical path, GPU work / N, "
            f"CPU work / cores); greedy schedule {_h(schedule_s(estimates, n, cores))}"
        )
    print_assumptions(throughput, rows, gpus_present)
    if args.check:
        _print_check(estimates, args.check)
    return 0


def _print_check(estimates, root: Path) -> None:
    rows, total = compare(estimates, root)
    print(f"\nAgainst the measured benchmark files under {root} (estimate / measured):")
    for r in rows + [total]:
        print(
            f"{r['rule']:32} {r['jobs']:>5} est {r['estimated_s']:9.1f} s  measured {r['measured_s']:9.1f} s  "
            f"x{r['ratio']:.2f}  peak RSS {r['max_rss_mb']:.0f} MB"
        )
    print(f"rules within a factor of 2: {total['within_2x']} of {len(rows)}")


if __name__ == "__main__":
    raise SystemExit(main())
