"""Fault injection: does a workflow killed with SIGKILL at random moments, unlocked and resumed, end with the same
results as an uninterrupted run, and leave no temporary file behind?

    python benchmarks/fault_injection.py --preset presets/test.yaml --kills 10 --seed 0 [--cores 2] [--keep]

Two fresh clones of this checkout's HEAD (`git clone`, so uncommitted changes are not tested) in a temporary
folder: `reference` runs the preset once, uninterrupted, and its wall time T sets the kill schedule; `killed` runs
it `--kills` times, each attempt's whole process group (Snakemake and every job it started) killed with SIGKILL
after a seeded random delay of 0.05-1.0 x T / kills, then `snakemake --unlock`, and a last attempt runs to the
end (`--rerun-incomplete` throughout). Then every file under results/ is compared with the reference's:
byte for byte, or, for a table (.tsv, .csv, .json, .parquet) whose bytes differ, with its timing fields dropped
(columns or keys named like seconds, elapsed, time, duration, date, recorded, tokens/s); a gensim .kv file whose
bytes differ by its keys and vectors (gensim pickles dated lifecycle events with them: two uninterrupted runs
differ there). Not compared, and why: logs/ (timestamps, process ids, "resumed from" lines), benchmarks/ (wall
times), .snakemake/ (Snakemake's own metadata and timestamps), results/<run>/checkpoints/ (training state: it
holds the training seconds, and which checkpoints are kept depends on where the kills fell) and the HTML report
(it shows the pretraining throughput, tokens/s; its other numbers come from the tables compared here). Finally every leftover temporary file or folder in
the killed clone (*.tmp, *.scratch, .ckpt-*, *.part, *.part.json) is listed. Exit status 0 only when every
attempt after the kills succeeds, every kill fell before the workflow finished, no result differs and nothing is
left over; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMING = re.compile(r"(second|elapsed|time|duration|date|recorded|_s$|/s$|per_s|wall)", re.I)
LEFTOVER = re.compile(r"(\.tmp|\.scratch|\.part|\.part\.json)$|^\.ckpt-")
NOT_COMPARED = ("checkpoints",)
NOT_COMPARED_SUFFIXES = (".html",)  # the report: it shows the pretraining throughput (tokens/s) from the logs


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def snakemake_argv(preset: Path, cores: int, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--configfile",
        str(preset),
        "--cores",
        str(cores),
        "--rerun-incomplete",
        *extra,
    ]


def clone(destination: Path) -> None:
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(destination)], check=True)


def run_to_end(workdir: Path, argv: list[str]) -> float:
    start = time.monotonic()
    with open(workdir / "fault_injection.out", "a") as out:
        rc = subprocess.run(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"{workdir}: snakemake exited {rc}; see {workdir / 'fault_injection.out'}")
    return time.monotonic() - start


def killed_attempt(workdir: Path, argv: list[str], delay: float) -> bool:
    """Start the workflow in its own process group and SIGKILL the whole group after `delay` seconds; False
    when it finished first."""
    with open(workdir / "fault_injection.out", "a") as out:
        proc = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=delay)
            return False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True


def _table(path: Path):
    """A table's content without its timing fields (a gensim .kv file: its keys and vectors, without the dated
    lifecycle events gensim pickles with them), or None for a file that is neither."""
    suffix = path.suffix
    if suffix == ".kv":
        from gensim.models import KeyedVectors

        vectors = KeyedVectors.load(str(path))
        return vectors.index_to_key, vectors.vectors.tobytes()
    if suffix in (".tsv", ".csv", ".parquet"):
        import pandas as pd

        frame = (
            pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
        )
        return frame.drop(columns=[c for c in frame.columns if TIMING.search(str(c))]).to_csv(index=False)
    if suffix == ".json":

        def strip(value):
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if not TIMING.search(str(k))}
            if isinstance(value, list):
                return [strip(v) for v in value]
            return value

        return json.dumps(strip(json.loads(path.read_text(encoding="utf-8"))), sort_keys=True)
    return None


def compare(reference: Path, killed: Path) -> list[str]:
    """The result files that differ (or exist on one side only), timing fields excepted."""

    def files(root: Path) -> set[Path]:
        base = root / "results"
        return {
            p.relative_to(base)
            for p in base.rglob("*")
            if (p.is_file() or p.is_symlink())
            and not set(NOT_COMPARED) & set(p.relative_to(base).parts)
            and not LEFTOVER.search(p.name)
            and p.suffix not in NOT_COMPARED_SUFFIXES
        }

    ref_files, got_files = files(reference), files(killed)
    problems = [f"only in the uninterrupted run: {p}" for p in sorted(ref_files - got_files)]
    problems += [f"only in the killed run: {p}" for p in sorted(got_files - ref_files)]
    for rel in sorted(ref_files & got_files):
        a, b = reference / "results" / rel, killed / "results" / rel
        if a.is_symlink() or b.is_symlink():
            same = os.readlink(a) == os.readlink(b) if a.is_symlink() and b.is_symlink() else False
        else:
            same = a.read_bytes() == b.read_bytes() or (_table(a) is not None and _table(a) == _table(b))
        if not same:
            problems.append(f"differs: {rel}")
    return problems


def leftovers(root: Path) -> list[Path]:
    found = []
    for top in ("results", "logs", "benchmarks"):
        if (root / top).is_dir():
            found += [p.relative_to(root) for p in (root / top).rglob("*") if LEFTOVER.search(p.name)]
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="presets/test.yaml", help="preset file, relative to the checkout")
    parser.add_argument("--kills", type=int, default=10, help="how many times to SIGKILL the workflow (10)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill moments (0)")
    parser.add_argument("--cores", type=int, default=2, help="snakemake --cores for every run (2)")
    parser.add_argument("--keep", action="store_true", help="keep the two clones (their path is printed)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="xling-fault-injection-"))
    reference, killed = root / "reference", root / "killed"
    log(f"fresh clones of {REPO} in {root}")
    clone(reference)
    clone(killed)
    preset = Path(args.preset)
    try:
        log(f"uninterrupted run of {preset} ...")
        total = run_to_end(reference, snakemake_argv(preset, args.cores))
        log(f"uninterrupted run: {total:.0f} s")
        attempt_argv = snakemake_argv(preset, args.cores)
        kills = 0
        for i in range(args.kills):
            delay = rng.uniform(0.05, 1.0) * total / args.kills
            log(f"attempt {i + 1}: SIGKILL of the process group after {delay:.1f} s")
            if not killed_attempt(killed, attempt_argv, delay):
                log("the workflow finished before the kill; no more kills")
                break
            kills += 1
            run_to_end(killed, [sys.executable, "-m", "snakemake", "--configfile", str(preset), "--unlock"])
        log(f"{kills} kills; resuming to the end ...")
        run_to_end(killed, attempt_argv)
        problems = compare(reference, killed)
        left = leftovers(killed)
        n_files = sum(1 for p in (reference / "results").rglob("*") if p.is_file())
        log(f"{n_files} result files compared: {len(problems)} differ")
        for problem in problems:
            print(f"  {problem}")
        log(f"{len(left)} temporary files or folders left over")
        for path in left:
            print(f"  {path}")
        ok = not problems and not left and kills == args.kills
        if kills < args.kills:
            log(f"only {kills} of {args.kills} kills happened before the workflow finished: a weaker test")
        log(f"{kills} kills: " + ("OK: identical results, nothing left over" if ok else "FAILED"))
        return 0 if ok else 1
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
