"""How many sentence pairs the alignment splits take, without pandas: the plan stops on a synthetic run whose
parallel text is too short, the splitter (xling.data.alignment) on any."""

from __future__ import annotations

from typing import Sequence


def pairs_needed(test: int, dev: int, train: Sequence[int]) -> int:
    """Sentence pairs the splits take: test, dev and the largest train set (the smaller ones are its prefixes)."""
    return test + dev + max(train, default=0)


def check_parallel_text(test: int, dev: int, train: Sequence[int], have: int | None) -> None:
    """Stop the plan when the splits take more sentence pairs than the parallel text has (`have`: the synthetic
    source's count; None where it is known only once downloaded)."""
    need = pairs_needed(test, dev, train)
    if have is not None and need > have:
        raise ValueError(f"alignment.test_sentences + dev_sentences + max(train_sentences) = {need} sentence pairs, "
                         f"but synthetic.parallel_sentences is {have}: lower the "
                         "alignment splits (presets/demo.yaml: 200 + 100 + 700) or raise the synthetic pairs")
