"""The MLM head's best piece per position (token translation's decoding): the whole [positions, vocab] logits'
argmax, as xling did before, against xling.encode.encoder.best_pieces (blocks of positions x pieces). Prints the
seconds of each and the peak memory each adds, and whether their pieces agree. Not a test: a script that prints
figures.

    python benchmarks/mlm_argmax.py --hidden 32 --vocab 119547 --positions 1500   # the real preset's BERTs
    python benchmarks/mlm_argmax.py --hidden 768 --vocab 119547 --positions 1500  # mBERT's size
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from xling.encode.encoder import best_pieces  # noqa: E402


def whole(states: torch.Tensor, decoder: torch.nn.Linear, excluded: list[int]) -> torch.Tensor:
    """argmax of the logits, 2,048 positions at a time (xling before best_pieces)."""
    best = []
    for start in range(0, states.shape[0], 2048):
        logits = decoder(states[start : start + 2048]).float()
        logits[:, excluded] = -torch.inf
        best.append(logits.argmax(dim=-1))
    return torch.cat(best)


def timed(method, states, decoder, excluded, repeats: int) -> tuple[float, torch.Tensor]:
    method(states, decoder, excluded)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        out = method(states, decoder, excluded)
    return (time.perf_counter() - start) / repeats, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=119_547)
    parser.add_argument("--positions", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    decoder = torch.nn.Linear(args.hidden, args.vocab)
    states = torch.randn(args.positions, args.hidden)
    excluded = [0, 100, 101, 102, 103]  # mBERT's [PAD], [UNK], [CLS], [SEP], [MASK]
    with torch.inference_mode():
        # best_pieces first: ru_maxrss only grows, so the whole logits' peak shows after it
        blocked_s, blocked = timed(best_pieces, states, decoder, excluded, args.repeats)
        blocked_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        whole_s, full = timed(whole, states, decoder, excluded, args.repeats)
        whole_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.positions} positions, hidden {args.hidden}, vocabulary {args.vocab}, {args.threads} thread(s)")
    print(f"whole logits: {whole_s:.3f} s per call, process peak {whole_peak:.0f} MB")
    print(
        f"best_pieces:  {blocked_s:.3f} s per call, process peak {blocked_peak:.0f} MB "
        f"({whole_s / blocked_s:.1f}x faster)"
    )
    print(f"same pieces: {bool((full == blocked).all())}")


if __name__ == "__main__":
    main()
