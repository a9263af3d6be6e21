"""Peak memory and time of represent.extract_bert_shard as the corpus grows (a script, not a test).

Each corpus size runs in a fresh subprocess so its peak RSS (ru_maxrss) is its own. With a fixed word
set, memory should stay flat in the number of tokens: only one pool of chunks and the O(words x layers x
hidden) sums are ever held.

    python benchmarks/represent_memory.py [--sizes 1000 4000 16000] [--hidden 64] [--layers 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LETTERS = "abcdefghijklmnopqrstuvwxyz"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


def _make_model(root: Path, hidden: int, layers: int) -> list[str]:
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    pieces = list(LETTERS) + ["##" + x for x in LETTERS]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + pieces
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab=str(root / "vocab.txt"), do_lower_case=False).save_pretrained(root)  # as pretraining
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 32),
        intermediate_size=4 * hidden,
        max_position_embeddings=512,
    )
    BertForMaskedLM(config).save_pretrained(root)
    return pieces


def _make_corpus(path: Path, n_docs: int, seed: int = 0) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(n_docs):
            n_words = int(rng.integers(10, 80))
            word_lengths = rng.integers(1, 4, size=n_words)
            letters = rng.integers(0, len(LETTERS), size=int(word_lengths.sum()))
            pieces, k = [], 0
            for length in word_lengths:
                for j in range(length):
                    pieces.append(("##" if j else "") + LETTERS[letters[k]])
                    k += 1
            out.write(" ".join(pieces) + "\n")


def _child(model_dir: str, tokens: str, out_dir: str, batch_size: int, max_length: int) -> None:
    from xling.encode.encoder import Encoder
    from xling.represent import store as represent

    # the word set: every 1-3 letter word over the first 12 letters (1884 words) -> fixed O(words) sums
    first = LETTERS[:12]
    words = (
        {a for a in first}
        | {a + b for a in first for b in first}
        | {a + b + c for a in first for b in first for c in first}
    )
    Encoder.from_pretrained(model_dir, device="cpu")  # imports + model: the baseline the sums and batches add to
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    represent.extract_bert_shard(
        model_dir,
        tokens,
        "xx",
        words,
        0,
        1,
        Path(out_dir) / "w.parquet",
        Path(out_dir) / "l.parquet",
        represent.Extraction(batch_size=batch_size, max_length=max_length),
    )
    seconds = time.perf_counter() - start
    n_tokens = sum(len(line.split()) for line in open(tokens, encoding="utf-8"))
    print(
        json.dumps(
            {
                "tokens": n_tokens,
                "seconds": seconds,
                "baseline_rss_mb": base / 1024,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "TOKENS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child, args.batch_size, args.max_length)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "model").mkdir()
        _make_model(root / "model", args.hidden, args.layers)
        print(
            f"model: hidden {args.hidden}, {args.layers} layers; batch {args.batch_size}, max_length "
            f"{args.max_length}; one process per size"
        )
        print(f"{'documents':>10} {'tokens':>10} {'seconds':>8} {'tokens/s':>9} {'baseline MB':>12} {'peak MB':>8}")
        for n_docs in args.sizes:
            tokens = root / f"tokens_{n_docs}.txt"
            _make_corpus(tokens, n_docs)
            result = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(root / "model"),
                    str(tokens),
                    tmp,
                    "--batch-size",
                    str(args.batch_size),
                    "--max-length",
                    str(args.max_length),
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode:
                sys.exit(f"extraction of {n_docs} documents failed:\n{result.stderr}")
            r = json.loads(result.stdout.strip().splitlines()[-1])
            print(
                f"{n_docs:>10} {r['tokens']:>10} {r['seconds']:>8.1f} {r['tokens'] / r['seconds']:>9.0f} "
                f"{r['baseline_rss_mb']:>12.0f} {r['peak_rss_mb']:>8.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
