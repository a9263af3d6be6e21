"""Time, device hours and peak memory of each planned job from its work (xling.cost.work) and the calibration
constants of resources/throughput.yaml; the sums per rule; and the whole run on N GPUs, as the two bounds
(critical path, total GPU work / N) and a greedy schedule that starts the longest remaining chain first.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from xling.cost.work import WORK_MODELS, Context, Work

BYTES_TRAINING_STATE = 16  # fp32 weights, gradients and two Adam moments per parameter
BYTES_INFERENCE = 4  # fp32 weights
ACTIVATION_BYTES = 34  # per token, hidden unit and layer, bf16 (Korthikanti et al. 2022, without attention scores)


class MissingThroughput(ValueError):
    """A planned rule that resources/throughput.yaml does not cost; the message names the rules and the fix."""


@dataclass
class Estimate:
    job: object
    work: Work
    device: str  # gpu | cpu: where the job runs in the estimate
    seconds: float
    gpu_mem_gb: float
    host_mem_gb: float
    fallback: bool


def load_throughput(path: Path) -> dict:
    return yaml.safe_load(Path(path).read_text())


def cpu_flops_per_thread(throughput: dict, hidden: int) -> float:
    """Measured CPU FLOP/s of one thread, log-interpolated in the width between the two benchmarked models."""
    points = sorted((p["hidden"], p["flops_per_s"]) for p in throughput["devices"]["cpu"]["points"])
    (h0, r0), (h1, r1) = points[0], points[-1]
    x = min(max(hidden or h0, h0), h1)
    t = (math.log(x) - math.log(h0)) / (math.log(h1) - math.log(h0)) if h1 != h0 else 0.0
    return math.exp(math.log(r0) + t * (math.log(r1) - math.log(r0)))


def rule_spec(throughput: dict, rule: str, allow_fallback: bool) -> tuple[dict, bool]:
    rules = throughput["rules"]
    if rule in rules:
        return rules[rule], False
    if allow_fallback:
        return throughput["fallback"], True
    raise MissingThroughput(rule)


def estimate_jobs(
    jobs, ctx: Context, throughput: dict, gpus_present: bool = True, allow_fallback: bool = False
) -> list[Estimate]:
    """Every job's estimate; refuses (MissingThroughput naming every uncosted rule) unless allow_fallback."""
    missing = sorted({j.rule for j in jobs if j.rule not in throughput["rules"]})
    if missing and not allow_fallback:
        raise MissingThroughput(
            f"no throughput figure for rule(s) {', '.join(missing)}: add them to the rules of the throughput file "
            "(work model, device, start-up seconds, with their source) or pass --fallback to cost them as "
            f"{throughput['fallback']} (printed as an assumption)"
        )
    return [_estimate(job, ctx, throughput, gpus_present, allow_fallback) for job in jobs]


def _estimate(job, ctx: Context, throughput: dict, gpus_present: bool, allow_fallback: bool) -> Estimate:
    spec, fallback = rule_spec(throughput, job.rule, allow_fallback)
    work = WORK_MODELS[spec["work"]](job, ctx)
    device = "gpu" if spec.get("device") == "gpu" and gpus_present and work.flops else "cpu"
    threads = max(1, job.threads)
    seconds = float(spec.get("startup_s", throughput["fallback"]["startup_s"]))
    if work.flops:
        rate = (
            throughput["devices"]["gpu"]["flops_per_s"]
            if device == "gpu"
            else cpu_flops_per_thread(throughput, work.hidden) * threads
        )
        seconds += work.flops / rate
    seconds += work.units * float(spec.get("s_per_unit", 0.0)) / threads
    gpu_mem = 0.0
    if device == "gpu" and work.params:
        embeddings = ctx.vocab() * work.hidden
        if work.batch_tokens:
            layers_x_hidden = work.params / (12 * work.hidden)
            gpu_mem = (
                BYTES_TRAINING_STATE * (work.params + embeddings)
                + ACTIVATION_BYTES * work.batch_tokens * layers_x_hidden
            )
        else:
            gpu_mem = BYTES_INFERENCE * (work.params + embeddings)
    declared = float(job.resources.get("mem_mb", 0) or 0)
    host = max(float(spec.get("mem_mb", 0)), declared) / 1024
    return Estimate(job, work, device, seconds, gpu_mem / 2**30, host, fallback)


def per_rule(estimates: list[Estimate]) -> list[dict]:
    """One row per rule, in plan order of first appearance."""
    rows: dict[str, dict] = {}
    for e in estimates:
        row = rows.setdefault(
            e.job.rule,
            {
                "rule": e.job.rule,
                "jobs": 0,
                "tokens": 0.0,
                "steps": 0.0,
                "examples": 0.0,
                "flops": 0.0,
                "cpu_h": 0.0,
                "gpu_h": 0.0,
                "longest_s": 0.0,
                "gpu_mem_gb": 0.0,
                "host_mem_gb": 0.0,
                "device": e.device,
                "fallback": e.fallback,
                "notes": e.work.notes,
            },
        )
        row["jobs"] += 1
        if e.device not in row["device"]:
            row["device"] += "+" + e.device
        for key in ("tokens", "steps", "examples", "flops"):
            row[key] += getattr(e.work, key)
        hours = e.seconds / 3600
        row["gpu_h" if e.device == "gpu" else "cpu_h"] += hours if e.device == "gpu" else hours * max(1, e.job.threads)
        row["longest_s"] = max(row["longest_s"], e.seconds)
        row["gpu_mem_gb"] = max(row["gpu_mem_gb"], e.gpu_mem_gb)
        row["host_mem_gb"] = max(row["host_mem_gb"], e.host_mem_gb)
    return list(rows.values())


def critical_path_s(estimates: list[Estimate]) -> float:
    """The longest chain of dependent jobs: no number of GPUs finishes the run sooner."""
    finish = _longest_chains(estimates, forward=True)
    return max(finish.values(), default=0.0)


def _longest_chains(estimates: list[Estimate], forward: bool) -> dict[int, float]:
    """forward: the earliest finish of each job; backward: each job's time plus its longest chain of dependants."""
    by_id = {e.job.jobid: e for e in estimates}
    dependants: dict[int, list[int]] = {i: [] for i in by_id}
    for e in estimates:
        for dep in e.job.depends_on:
            if dep in by_id:
                dependants[dep].append(e.job.jobid)
    memo: dict[int, float] = {}
    order = _topological(by_id, dependants)
    for jobid in order if forward else reversed(order):
        e = by_id[jobid]
        links = [d for d in e.job.depends_on if d in by_id] if forward else dependants[jobid]
        memo[jobid] = e.seconds + max((memo[d] for d in links), default=0.0)
    return memo


def _topological(by_id: dict, dependants: dict) -> list[int]:
    waiting = {i: sum(d in by_id for d in by_id[i].job.depends_on) for i in by_id}
    ready = [i for i, n in waiting.items() if n == 0]
    order = []
    while ready:
        jobid = ready.pop()
        order.append(jobid)
        for child in dependants[jobid]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return order


def schedule_s(estimates: list[Estimate], gpus: int, cores: int) -> float:
    """Makespan of a greedy schedule: a GPU job takes one of `gpus`, every job its threads of `cores`; among the
    ready jobs the one with the longest chain still behind it starts first (critical-path list scheduling)."""
    by_id = {e.job.jobid: e for e in estimates}
    remaining = _longest_chains(estimates, forward=False)
    waiting = {i: {d for d in by_id[i].job.depends_on if d in by_id} for i in by_id}
    ready = [(-remaining[i], i) for i, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    now, free_gpus, free_cores = 0.0, gpus, cores
    while ready or running:
        blocked = []
        while ready:
            priority, jobid = heapq.heappop(ready)
            e = by_id[jobid]
            threads = min(max(1, e.job.threads), cores)
            if threads <= free_cores and (e.device != "gpu" or free_gpus > 0):
                free_cores -= threads
                free_gpus -= e.device == "gpu"
                heapq.heappush(running, (now + e.seconds, jobid))
            else:
                blocked.append((priority, jobid))
        for item in blocked:
            heapq.heappush(ready, item)
        now, jobid = heapq.heappop(running)
        e = by_id[jobid]
        free_cores += min(max(1, e.job.threads), cores)
        free_gpus += e.device == "gpu"
        for child, deps in waiting.items():
            if jobid in deps:
                deps.discard(jobid)
                if not deps:
                    heapq.heappush(ready, (-remaining[child], child))
    return now
