"""Which BERT recipe leaves chance in word retrieval on the demo's data, and at what CPU cost?

Trains one BERT with the workflow's own trainer (`python -m xling.models.bert`, one thread) on the token files of
a finished run (e.g. a demo run's results/demo), with the run's recorded hyper-parameters changed by `--set`,
keeping a checkpoint every `--checkpoint-every` steps; records the trainer's CPU and wall seconds; then scores
each checkpoint (and the final model) with the workflow's word-retrieval path (xling.represent.store and
xling.evaluate.word_retrieval, as benchmarks/multilinguality_curve.py) and prints, per step, layer and pair, the
MRR from the pivot, its 95 % bootstrap interval over the queries (xling.evaluate.uncertainty, the gather step's
defaults) and its ratio to chance; `above` marks an interval whose lower bound is above chance (the findings'
at-chance check, xling.evaluate.chance.at_or_below_chance). Not a test: a script that prints figures.

A checkpoint at step k of a run of N steps is not a run of k steps: the learning rate decays linearly to step N.

    python benchmarks/demo_bert_recipes.py --run results/demo --size 12000 --window 128 \\
        --languages en xa xb xc --work /tmp/recipe --set num_layers=4 num_heads=1 learning_rate=0.002 \\
        warmup_steps=300 max_steps=2000 --checkpoint-every 400
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from multilinguality_curve import checkpoint_model  # noqa: E402
from xling.evaluate.chance import at_or_below_chance  # noqa: E402
from xling.evaluate.uncertainty import bootstrap_mean  # noqa: E402
from xling.evaluate.word_retrieval import word_retrieval  # noqa: E402
from xling.models.checkpoints import list_checkpoints  # noqa: E402
from xling.represent.store import Extraction, extract_bert_shard, reduce_shards  # noqa: E402


def recorded_hparams(run: Path, size: int, window: int) -> dict:
    """The hyper-parameters the run's own BERT of this size and window was trained with (its first checkpoint)."""
    parent = run / "checkpoints" / "bert" / f"{size}-w{window}"
    found = sorted(parent.glob("*/ckpt-*.pt"))
    if not found:
        raise SystemExit(f"{parent}: no checkpoint to read the run's hyper-parameters from")
    return dict(torch.load(found[0], map_location="cpu", weights_only=True)["hparams"])


def parse_settings(pairs: list[str]) -> dict:
    """KEY=VALUE pairs, each value read as JSON (numbers, null, true) or else kept as a string."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set {pair!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def train(args, hparams: dict, out: Path, checkpoints: Path) -> dict:
    """Run the workflow's trainer on one thread; its CPU (user + system) and wall seconds."""
    files = [str(args.run / "tokens" / str(args.size) / f"{lang}.txt") for lang in args.languages]
    command = [
        sys.executable,
        "-m",
        "xling.models.bert",
        "--tokens",
        *files,
        "--vocab",
        str(args.run / "vocab" / "trained.txt"),
        "--out",
        str(out),
        "--checkpoint-dir",
        str(checkpoints),
        "--hparams",
        json.dumps(hparams, sort_keys=True),
        "--checkpoint-every",
        str(args.checkpoint_every),
        "--keep-checkpoints",
        "1000",
        "--log-every",
        "50",
        "--no-lowercase",
        "--log",
        str(out.parent / "training_log.tsv"),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(out.parent / "train.log", "w") as log:
        subprocess.run(
            command,
            check=True,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 1), "wall_s": round(time.perf_counter() - start, 1)}


def score(model_dir: Path, args, work: Path) -> pd.DataFrame:
    """The workflow's word retrieval of one model with each row's interval: step-less rows of layer, pair, mrr,
    ci_low, ci_high, chance_mrr, n_queries."""
    pivot, *targets = args.languages
    shards = []
    for lang in args.languages:
        out = work / f"{lang}.words.parquet"
        words = set((args.run / "words" / f"{lang}.txt").read_text(encoding="utf-8").split())
        extract_bert_shard(
            model_dir,
            args.run / "tokens" / str(args.size) / f"{lang}.txt",
            lang,
            words,
            0,
            1,
            out,
            work / f"{lang}.langs.parquet",
            Extraction(batch_size=64, max_length=args.window, device="cpu"),
        )
        shards.append(out)
    means = work / "words.parquet"
    reduce_shards(shards, means)
    rows = []
    for lang in targets:
        table, ranks = word_retrieval(
            means,
            args.run / "data" / "dict" / f"{pivot}-{lang}.test.txt",
            pivot,
            lang,
            args.run / "tokens" / str(args.size) / "word_counts.parquet",
            min_count=args.min_count,
            return_ranks=True,
        )
        for row in table.itertuples():
            found = bootstrap_mean(ranks[ranks.layer == row.layer].reciprocal_rank.to_numpy())
            rows.append(
                {
                    "pair": f"{pivot}-{lang}",
                    "layer": int(row.layer),
                    "mrr": row.mrr,
                    "ci_low": found.low,
                    "ci_high": found.high,
                    "chance_mrr": row.chance_mrr,
                    "n_queries": row.n_queries,
                    "above": at_or_below_chance(found, row.chance_mrr) is None,
                }
            )
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, type=Path, help="results/<run> of a finished workflow run")
    p.add_argument("--size", required=True, type=int)
    p.add_argument("--window", required=True, type=int)
    p.add_argument("--languages", nargs="+", required=True, help="the run's languages, pivot first")
    p.add_argument("--min-count", type=int, default=3, help="retrieval.min_count of the run")
    p.add_argument("--set", nargs="*", default=[], help="KEY=VALUE changes to the run's BERT hyper-parameters")
    p.add_argument("--checkpoint-every", type=int, default=400)
    p.add_argument("--work", required=True, type=Path, help="a new directory for the model and its checkpoints")
    p.add_argument("--score-only", action="store_true", help="score a model --work already holds")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    hparams = {**recorded_hparams(args.run, args.size, args.window), **parse_settings(args.set)}
    model, checkpoints = args.work / "model", args.work / "checkpoints"
    if args.score_only:
        cost = json.loads((args.work / "cost.json").read_text())
    else:
        args.work.mkdir(parents=True, exist_ok=False)
        cost = train(args, hparams, model, checkpoints)
        (args.work / "cost.json").write_text(json.dumps(cost))
    print(
        json.dumps({"size": args.size, "window": args.window, **cost, "hparams": hparams}, sort_keys=True), flush=True
    )
    (directory,) = [d for d in checkpoints.iterdir() if d.is_dir()]
    points = [(step, path) for step, path in list_checkpoints(directory) if step < hparams["max_steps"]]
    points.append((hparams["max_steps"], model))
    tables = []
    for step, path in points:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            target = path if path.is_dir() else tmp / "model"
            if not path.is_dir():
                checkpoint_model(path, args.run / "vocab" / "trained.txt", target, False)
            table = score(target, args, tmp).assign(step=step)
        tables.append(table)
        for row in table.itertuples():
            print(
                f"step {step:5d} layer {row.layer} {row.pair}: {row.mrr:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]"
                f" chance {row.chance_mrr:.3f} = {row.mrr / row.chance_mrr:.2f}x"
                f"{'  ABOVE' if row.above else ''}",
                flush=True,
            )
    pd.concat(tables, ignore_index=True).assign(
        **{k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in cost.items()}
    ).to_csv(args.work / "scores.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
