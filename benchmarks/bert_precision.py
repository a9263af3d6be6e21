"""Pretraining step time and loss curve under bert.precision fp32 and bf16 (autocast), on the same batches.

Both runs share the seed, so they see the same blocks, masks and dropout at every step; only the
arithmetic differs. Prints the seconds per step of each (the first logged interval, warm-up, not timed),
the speed-up, and the largest relative difference between the two loss curves (mean loss of each
`--log-every` steps), with PASS/FAIL against `--tolerance`. Not a test: a script that prints figures.

    python benchmarks/bert_precision.py --tokens results/demo/tokens/12000/*.txt \\
        --vocab results/demo/vocab/vocab.txt --steps 300
Without --tokens it trains on random pieces (timing only: that loss curve says nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from xling.models import bert  # noqa: E402


def run(tokens, vocab, hp: dict, work: Path) -> list[tuple[int, float, float]]:
    """(step, mean loss, elapsed s) per training-log row."""
    bert.pretrain(tokens, vocab, work / "model", work / "ckpt", hp)
    rows = [r.split("\t") for r in (work / "model" / "training_log.tsv").read_text().splitlines()[1:]]
    return [(int(r[0]), float(r[2]), float(r[5])) for r in rows]


def seconds_per_step(rows) -> float:
    (s0, _, t0), (s1, _, t1) = rows[0], rows[-1]
    return (t1 - t0) / (s1 - s0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", nargs="*", help="wordpiece token files (default: random pieces)")
    p.add_argument("--vocab", help="vocab.txt of --tokens")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--intermediate", type=int, default=256)
    p.add_argument("--window", type=int, default=128)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup-steps", type=int, default=100)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--log-every", type=int, default=20, help="loss points are means over this many steps")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tolerance", type=float, default=0.02, help="largest acceptable relative loss difference")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    hp = {
        "hidden_size": args.hidden,
        "num_layers": args.layers,
        "num_heads": args.heads,
        "intermediate_size": args.intermediate,
        "window": args.window,
        "batch_size": args.batch,
        "learning_rate": args.lr,
        "warmup_steps": args.warmup_steps,
        "max_steps": args.steps,
        "log_every": args.log_every,
        "checkpoint_every": args.steps,
        "device": "cpu",
        "seed": 1,
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.tokens:
            tokens, vocab = args.tokens, args.vocab
        else:
            from pretrain_throughput import synthetic_corpus  # this directory is on sys.path when run as a script

            tokens, vocab = synthetic_corpus(tmp, 8000, args.batch * args.window * args.steps // 4)
        curves = {
            precision: run(tokens, vocab, {**hp, "precision": precision}, tmp / precision)
            for precision in ("fp32", "bf16")
        }
    fp32, bf16 = curves["fp32"], curves["bf16"]
    rel = [abs(b - a) / a for (_, a, _), (_, b, _) in zip(fp32, bf16, strict=True)]
    worst = max(range(len(rel)), key=rel.__getitem__)
    t32, t16 = seconds_per_step(fp32), seconds_per_step(bf16)
    print(json.dumps({k: v for k, v in vars(args).items() if k not in ("tokens", "vocab")}))
    print(f"{'step':>6} {'fp32 loss':>10} {'bf16 loss':>10} {'rel diff':>9}")
    for (step, a, _), (_, b, _), r in zip(fp32, bf16, rel, strict=True):
        print(f"{step:6d} {a:10.4f} {b:10.4f} {r:9.4f}")
    print(
        f"seconds per step: fp32 {t32:.4f}, bf16 {t16:.4f}: bf16 {t32 / t16:.2f}x faster "
        f"({args.threads} threads, {torch.__version__})"
    )
    verdict = "PASS" if rel[worst] <= args.tolerance else "FAIL"
    print(
        f"largest relative loss difference {rel[worst]:.4f} at step {fp32[worst][0]}: {verdict} "
        f"(tolerance {args.tolerance})"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
