"""Throughput (queries/s) and peak memory of contextual word retrieval for 1024 sentences per side (a script, not a
test), against the full score matrix a user would compute instead.

xling.evaluate.contextual_retrieval.retrieve scores `--block` queries at a time against every candidate (CSLS,
float64, Cao et al.'s setting: all words of all test sentences of the other language), so its memory grows with
block x candidates; the dense alternative holds the whole queries x candidates matrix (float32, numpy). Each runs
in a fresh subprocess, so its peak RSS (ru_maxrss) is its own. Vectors are planted: each linked target word is a
noisy copy of its source word, sentences of 10-44 words (Europarl's mean is about 27 Moses tokens).

    python benchmarks/contextual_retrieval.py [--sentences 1024] [--dim 768] [--block 1024] [--threads 2] [--no-dense]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


def planted(n_sentences: int, dim: int, noise: float = 1.0, seed: int = 0):
    """Per sentence pair: source and target word vectors and one-to-one links (80% of the shorter side)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    src, tgt, links = [], [], []
    for _ in range(n_sentences):
        n_src, n_tgt = (int(x) for x in rng.integers(10, 45, size=2))
        s = rng.normal(size=(n_src, dim)).astype(np.float32)
        t = rng.normal(size=(n_tgt, dim)).astype(np.float32)
        n_links = int(0.8 * min(n_src, n_tgt))
        pairs = set(
            zip(rng.permutation(n_src)[:n_links].tolist(), rng.permutation(n_tgt)[:n_links].tolist(), strict=True)
        )
        for i, j in pairs:
            t[j] = s[i] + noise * rng.normal(size=dim).astype(np.float32)
        src.append(s)
        tgt.append(t)
        links.append(pairs)
    return src, tgt, links


def dense_accuracy(src, tgt, links, k: int) -> tuple[float, int]:
    """The same retrieval with the full CSLS matrices (what one writes without blocks)."""
    import numpy as np

    def unit(side):
        flat = np.concatenate(side)
        return flat / np.linalg.norm(flat, axis=1, keepdims=True)

    offsets = [np.cumsum([0] + [len(v) for v in side])[:-1] for side in (src, tgt)]
    s, t = unit(src), unit(tgt)
    cos = s @ t.T  # [source words, target words]
    r_t = np.partition(cos, -k, axis=1)[:, -k:].mean(axis=1)  # each source word's k nearest target words
    r_s = np.partition(cos, -k, axis=0)[-k:].mean(axis=0)  # each target word's k nearest source words
    csls = 2 * cos - r_t[:, None] - r_s[None, :]
    pairs = np.array([(offsets[0][n] + i, offsets[1][n] + j) for n, a in enumerate(links) for i, j in a])
    forward = np.argmax(csls[pairs[:, 0]], axis=1) == pairs[:, 1]
    backward = np.argmax(csls[:, pairs[:, 1]], axis=0) == pairs[:, 0]
    return float((forward.mean() + backward.mean()) / 2), 2 * len(pairs)


def _child(method: str, sentences: int, dim: int, block: int, k: int, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    src, tgt, links = planted(sentences, dim)
    started = time.perf_counter()
    if method == "blocked":
        from xling.evaluate.contextual_retrieval import DIRECTIONS, retrieve

        queries = retrieve(src, tgt, links, k=k, block=block)
        by_direction = queries.groupby("direction")["hit"].mean()
        accuracy, n_queries = float(sum(by_direction[d] for d in DIRECTIONS) / 2), len(queries)
    else:
        accuracy, n_queries = dense_accuracy(src, tgt, links, k)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            dict(
                method=method,
                seconds=seconds,
                queries=n_queries,
                accuracy=accuracy,
                candidates=sum(map(len, tgt)),
                peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            )
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1024, help="sentence pairs (the paper's test set: 1024)")
    parser.add_argument("--dim", type=int, default=768, help="vector size (BERT-base: 768)")
    parser.add_argument("--block", type=int, default=1024, help="queries scored at a time")
    parser.add_argument("--k", type=int, default=10, help="CSLS neighbourhood")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-dense", action="store_true", help="skip the full-matrix alternative")
    parser.add_argument("--child", choices=["blocked", "dense"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.sentences, args.dim, args.block, args.k, args.threads)
        return
    rows = []
    for method in ["blocked"] + ([] if args.no_dense else ["dense"]):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                method,
                "--sentences",
                str(args.sentences),
                "--dim",
                str(args.dim),
                "--block",
                str(args.block),
                "--k",
                str(args.k),
                "--threads",
                str(args.threads),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"contextual retrieval, {args.sentences} sentences per side, dim {args.dim}, CSLS k={args.k}, "
        f"{args.threads} threads (queries: both directions; peak RSS includes Python, numpy and torch)"
    )
    print(
        f"{'method':<28} {'queries':>8} {'candidates':>10} {'seconds':>8} {'queries/s':>10} {'peak MiB':>9} "
        f"{'accuracy':>8}"
    )
    for row in rows:
        name = f"xling blocked (block {args.block})" if row["method"] == "blocked" else "dense numpy (full matrix)"
        print(
            f"{name:<28} {row['queries']:>8} {row['candidates']:>10} {row['seconds']:>8.1f} "
            f"{row['queries'] / row['seconds']:>10.0f} {row['peak_mib']:>9.0f} {row['accuracy']:>8.4f}"
        )


if __name__ == "__main__":
    main()
