"""Word-retrieval MRR against training steps: when does the synthetic BERT become multilingual?

Reads the checkpoints a pretraining job of a workflow run left (keep `bert.keep_checkpoints` >= the number of
checkpoints, as presets/study.yaml does) and, for each, runs the workflow's own word-retrieval path on the run's
files: word-type means over the token files (xling.represent.store), then MRR from the pivot language into
every other language at every layer (xling.evaluate.word_retrieval); the finished model last. Prints, per
checkpoint, the training loss there, the layer best on average over the pairs, and each pair's MRR at that layer
with its ratio to chance. Not a test: a script that prints figures.

    python benchmarks/multilinguality_curve.py --run results/study --size 20000 --window 128 \\
        --languages en xa xb xc --min-count 3
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from xling.evaluate.word_retrieval import word_retrieval  # noqa: E402
from xling.io import read_lines  # noqa: E402
from xling.models import bert  # noqa: E402
from xling.models.checkpoints import list_checkpoints  # noqa: E402
from xling.models.mlm_data import read_vocab  # noqa: E402
from xling.represent.store import Extraction, extract_bert_shard, reduce_shards  # noqa: E402


def checkpoint_model(path: Path, vocab_path: Path, out_dir: Path, lowercase: bool) -> int:
    """Write the weights of a training checkpoint as a model directory; returns its step."""
    from transformers import BertForMaskedLM

    state = torch.load(path, map_location="cpu", weights_only=True)
    vocab = read_vocab(vocab_path)
    config = bert.model_config(state["hparams"], len(vocab))
    config.pad_token_id = vocab["[PAD]"]
    mlm = BertForMaskedLM(config)
    mlm.load_state_dict(state["model"])
    bert.save_model_dir(mlm, vocab_path, out_dir, lowercase)
    return int(state["step"])


def evaluate(model_dir: Path, run: Path, args, work: Path) -> pd.DataFrame:
    """The workflow's word retrieval of one model: rows layer, pair, mrr, chance_mrr."""
    pivot, *targets = args.languages
    shards = []
    for lang in args.languages:
        out = work / f"{lang}.words.parquet"
        words = set((run / "words" / f"{lang}.txt").read_text(encoding="utf-8").split())
        extract_bert_shard(
            model_dir,
            run / "tokens" / str(args.size) / f"{lang}.txt",
            lang,
            words,
            0,
            1,
            out,
            work / f"{lang}.langs.parquet",
            Extraction(batch_size=64, max_length=args.window, device="cpu"),
        )
        shards.append(out)
    words = work / "words.parquet"
    reduce_shards(shards, words)
    tables = []
    for lang in targets:
        table = word_retrieval(
            words,
            run / "data" / "dict" / f"{pivot}-{lang}.{args.split}.txt",
            pivot,
            lang,
            run / "tokens" / str(args.size) / "word_counts.parquet",
            min_count=args.min_count,
            lowercase=args.lowercase,
        )
        tables.append(table.assign(pair=f"{pivot}-{lang}"))
    return pd.concat(tables, ignore_index=True)[["layer", "pair", "mrr", "chance_mrr"]]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, type=Path, help="results/<run> of a finished or running workflow run")
    p.add_argument("--size", required=True, type=int)
    p.add_argument("--window", required=True, type=int)
    p.add_argument("--languages", nargs="+", required=True, help="the run's languages, pivot first")
    p.add_argument("--vocab", type=Path, help="vocabulary (default: the run's trained vocabulary)")
    p.add_argument("--min-count", type=int, default=5, help="retrieval.min_count of the run")
    p.add_argument("--split", default="test", help="retrieval.dictionary_split of the run")
    p.add_argument("--lowercase", action="store_true", help="tokenizer.lowercase of the run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--checkpoints",
        type=Path,
        help="checkpoint directory (default: the only one under the run's checkpoints/bert/SIZE-wWINDOW)",
    )
    p.add_argument("--steps", type=int, nargs="*", help="only these checkpoint steps (default: every one)")
    p.add_argument("--out", type=Path, help="also write the rows (step, layer, pair, mrr, chance_mrr) as CSV")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    vocab = args.vocab or args.run / "vocab" / "trained.txt"
    parent = args.run / "checkpoints" / "bert" / f"{args.size}-w{args.window}"
    directories = [args.checkpoints] if args.checkpoints else sorted(d for d in parent.iterdir() if d.is_dir())
    if len(directories) != 1:
        raise SystemExit(f"{parent} holds the checkpoints of {len(directories)} settings: choose with --checkpoints")
    log = [line.split("\t") for _, line in read_lines(directories[0] / "training_log.tsv")][1:]
    losses = {int(row[0]): float(row[2]) for row in log}  # mean MLM loss of the log_every steps up to each row
    rows = []
    print(
        f"{'step':>6} {'loss':>6} {'layer':>5} "
        + " ".join(f"{pair:>13}" for pair in (f"{args.languages[0]}-{t}" for t in args.languages[1:]))
    )
    points = [(step, path) for step, path in list_checkpoints(directories[0])]
    final = args.run / "models" / "bert" / f"{args.size}-w{args.window}"
    if (final / "training_log.tsv").exists():  # the finished model: the last step, never a checkpoint
        *_, (_, last) = read_lines(final / "training_log.tsv")
        points.append((int(last.split("\t")[0]), final))
    for step, path in points:
        if args.steps and step not in args.steps:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            model = path if path.is_dir() else tmp / "model"
            if not path.is_dir():
                checkpoint_model(path, vocab, model, args.lowercase)
            table = evaluate(model, args.run, args, tmp).assign(step=step)
        rows.append(table)
        best = table.groupby("layer").mrr.mean().idxmax()  # as the findings: the layer best on average
        at_best = table[table.layer == best]
        print(
            f"{step:6d} {losses.get(step, float('nan')):6.3f} {best:5d} "
            + " ".join(f"{r.mrr:.3f} ({r.mrr / r.chance_mrr:3.1f}x)" for r in at_best.itertuples()),
            flush=True,
        )
    if args.out and rows:
        pd.concat(rows, ignore_index=True).to_csv(args.out, index=False)
    print(
        json.dumps(
            {"run": str(args.run), "size": args.size, "window": args.window, "checkpoint_dir": str(directories[0])}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
