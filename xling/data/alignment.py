"""Word pairs of parallel sentences (Cao, Kitaev and Klein 2020, section 3.3): the data of contextual retrieval
and of fine-tuning alignment.

    sentences -> tokenize (Moses, sacremoses) -> fast_align or eflomal, both directions -> intersection
              -> one-to-one links

The intersection of the two directions trades coverage for precision (Och and Ney 2003): each direction links
every word of one side to at most one word of the other, so their intersection is already one-to-one;
`one_to_one` keeps that a property of the output, whatever the aligner. The pairs are split as the paper does:
the last `test` sentence pairs are the test set, the `dev` before them the development set, and the pairs before
those the training sets, nearest to dev first, so that train{n} for a smaller n is a prefix of train{n} for a
larger one (the paper's 10K and 50K are parts of its 250K).

Files (`write_split`): {split}.{src}, {split}.{tgt} hold the tokenized sentences (words separated by single
spaces) and {split}.align the Pharaoh links `i-j` (i a word of the src side, j of the tgt side), one line per
sentence pair.

Where gold links exist (the synthetic source; Europarl's RWTH de-en sample), `alignment_error` scores the links
by the alignment error rate of Och and Ney (2003) against sure and possible gold links.

Aligners (`ALIGNERS`, `directional_links`): fast_align, the paper's (section 4; xling.data.fast_align, its
standard -d -o -v), which gives the same links on every run; and eflomal, which has no seed (its sampler reads
/dev/urandom), so two runs give slightly different links. Their AER, precision and recall are recorded where
gold links exist.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from xling.data.fast_align import STANDARD as FAST_ALIGN_STANDARD
from xling.data.formats import FormatError, read_alignments, read_parallel
from xling.io import atomic_write
from xling.plan.alignment import pairs_needed  # noqa: F401  (the plan checks the splits with it)

logger = logging.getLogger(__name__)

Links = set[tuple[int, int]]
TOKENIZERS = ("moses", "whitespace")


def tokenize(lines: Iterable[str], lang: str, method: str = "moses") -> list[list[str]]:
    """Words of each line: Moses tokenization (sacremoses, the language's non-breaking prefixes, no XML escaping:
    the words are model input, not Moses decoder input), or the line's whitespace-separated tokens (text that is
    already tokenized, e.g. with gold links on its tokens)."""
    if method == "whitespace":
        return [line.split() for line in lines]
    if method != "moses":
        raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {method!r}")
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(lang=lang)
    return [moses.tokenize(line, escape=False) for line in lines]


def parse_links(line: str) -> Links:
    """Links of one Pharaoh line `i-j ...`."""
    return {(int(i), int(j)) for i, _, j in (link.partition("-") for link in line.split())}


def format_links(links: Links) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def eflomal_links(
    src: Sequence[Sequence[str]],
    tgt: Sequence[Sequence[str]],
    *,
    model: int = 3,
    n_samplers: int = 3,
    null_prior: float = 0.2,
    rel_iterations: float = 1.0,
) -> tuple[list[Links], list[Links]]:
    """eflomal's forward (each tgt word linked to at most one src word) and reverse (each src word to at most one
    tgt word) links of the tokenized sentence pairs, both as (src index, tgt index)."""
    import eflomal

    if len(src) != len(tgt):
        raise ValueError(f"{len(src)} source sentences but {len(tgt)} target sentences")
    aligner = eflomal.Aligner(model=model, n_samplers=n_samplers, null_prior=null_prior, rel_iterations=rel_iterations)
    with tempfile.TemporaryDirectory(prefix="eflomal-") as tmp:
        fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        aligner.align(
            [" ".join(s) for s in src],
            [" ".join(t) for t in tgt],
            links_filename_fwd=fwd,
            links_filename_rev=rev,
            quiet=True,
        )
        links = [
            [parse_links(line) for line in Path(path).read_text(encoding="utf-8").splitlines()] for path in (fwd, rev)
        ]
    for direction, found in zip(("forward", "reverse"), links, strict=True):
        if len(found) != len(src):
            raise RuntimeError(f"eflomal wrote {len(found)} {direction} alignments for {len(src)} sentence pairs")
    return links[0], links[1]


def fast_align_links(
    src: Sequence[Sequence[str]],
    tgt: Sequence[Sequence[str]],
    *,
    favor_diagonal: bool = FAST_ALIGN_STANDARD["favor_diagonal"],
    optimize_tension: bool = FAST_ALIGN_STANDARD["optimize_tension"],
    variational_bayes: bool = FAST_ALIGN_STANDARD["variational_bayes"],
    iterations: int = FAST_ALIGN_STANDARD["iterations"],
    prob_align_null: float = FAST_ALIGN_STANDARD["prob_align_null"],
) -> tuple[list[Links], list[Links]]:
    """fast_align's forward (each tgt word linked to at most one src word) and reverse (each src word to at most
    one tgt word) links, both as (src index, tgt index); the settings as systran-align names them (module
    xling.data.fast_align; the defaults, its STANDARD, are -d -o -v)."""
    from xling.data import fast_align

    if len(src) != len(tgt):
        raise ValueError(f"{len(src)} source sentences but {len(tgt)} target sentences")
    return fast_align.links(
        src,
        tgt,
        favor_diagonal=favor_diagonal,
        optimize_tension=optimize_tension,
        variational_bayes=variational_bayes,
        iterations=iterations,
        prob_align_null=prob_align_null,
    )


ALIGNERS = ("fast_align", "eflomal")


def directional_links(
    src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], aligner: str, settings: dict
) -> tuple[list[Links], list[Links]]:
    """Forward and reverse links of the named aligner (`ALIGNERS`) with its settings."""
    if aligner == "fast_align":
        return fast_align_links(src, tgt, **settings)
    if aligner == "eflomal":
        return eflomal_links(src, tgt, **settings)
    raise ValueError(f"aligner must be one of {', '.join(ALIGNERS)}, got {aligner!r}")


def one_to_one(links: Links) -> Links:
    """The links whose source word and target word are in no other link."""
    src = Counter(i for i, _ in links)
    tgt = Counter(j for _, j in links)
    return {(i, j) for i, j in links if src[i] == 1 and tgt[j] == 1}


def word_pairs(fwd: Sequence[Links], rev: Sequence[Links]) -> list[Links]:
    """Per sentence pair, the one-to-one links of the intersection of both directions."""
    return [one_to_one(f & r) for f, r in zip(fwd, rev, strict=True)]


def split_indices(n_pairs: int, test: int, dev: int, train: Sequence[int]) -> dict[str, list[int]]:
    """Sentence-pair indices of each split (module docstring): test = the last `test` pairs, dev the `dev`
    before them, train{n} the n pairs before dev, nearest first (so the smaller train sets are prefixes)."""
    need = pairs_needed(test, dev, train)
    if n_pairs < need:
        raise ValueError(
            f"{n_pairs} sentence pairs, but test {test} + dev {dev} + the largest train set "
            f"{max(train, default=0)} need {need}"
        )
    splits = {"test": list(range(n_pairs - test, n_pairs)), "dev": list(range(n_pairs - test - dev, n_pairs - test))}
    before_dev = n_pairs - test - dev
    for n in sorted(set(train)):
        splits[f"train{n}"] = list(range(before_dev - 1, before_dev - 1 - n, -1))
    return splits


def alignment_error(predicted: Sequence[Links], sure: Sequence[Links], possible: Sequence[Links]) -> dict:
    """Precision, recall and alignment error rate (Och and Ney 2003) over a corpus:
    precision = |A & P| / |A|, recall = |A & S| / |S|, AER = 1 - (|A & S| + |A & P|) / (|A| + |S|),
    with S the sure gold links and P the possible ones (sure links are possible: P is taken as S | P)."""
    if not len(predicted) == len(sure) == len(possible):
        raise ValueError(f"{len(predicted)} predicted, {len(sure)} sure and {len(possible)} possible alignments")
    n_a = n_s = a_s = a_p = 0
    for a, s, p in zip(predicted, sure, possible, strict=True):
        p = p | s
        n_a, n_s = n_a + len(a), n_s + len(s)
        a_s, a_p = a_s + len(a & s), a_p + len(a & p)
    if n_a + n_s == 0:
        raise ValueError("no predicted and no gold links: the alignment error rate is undefined")
    return dict(
        precision=a_p / n_a if n_a else float("nan"),
        recall=a_s / n_s if n_s else float("nan"),
        aer=1.0 - (a_s + a_p) / (n_a + n_s),
        links=n_a,
        gold_sure=n_s,
        gold_possible=sum(map(len, possible)),
    )


def read_gold(path: str | os.PathLike) -> tuple[list[Links], list[Links]]:
    """Sure and possible links of a Pharaoh gold file (`i-j` sure, `ipj` possible)."""
    return read_alignments(path, possible=False), read_alignments(path, possible=True)


def write_split(
    out_dir: str | os.PathLike,
    split: str,
    src_lang: str,
    tgt_lang: str,
    src: Sequence[Sequence[str]],
    tgt: Sequence[Sequence[str]],
    links: Sequence[Links],
) -> None:
    """{split}.{src_lang}, {split}.{tgt_lang} and {split}.align under out_dir (module docstring), atomically."""
    out = Path(out_dir)
    for path, lines in (
        (out / f"{split}.{src_lang}", (" ".join(s) for s in src)),
        (out / f"{split}.{tgt_lang}", (" ".join(t) for t in tgt)),
        (out / f"{split}.align", (format_links(a) for a in links)),
    ):
        with atomic_write(path) as handle:
            for line in lines:
                handle.write(line + "\n")


def read_split(
    directory: str | os.PathLike, split: str, src_lang: str, tgt_lang: str
) -> tuple[list[list[str]], list[list[str]], list[Links]]:
    """The tokenized sentences and links `write_split` wrote to `directory`."""
    directory = Path(directory)
    return read_split_files(
        directory / f"{split}.{src_lang}", directory / f"{split}.{tgt_lang}", directory / f"{split}.align"
    )


def read_split_files(
    src_path: str | os.PathLike, tgt_path: str | os.PathLike, align_path: str | os.PathLike
) -> tuple[list[list[str]], list[list[str]], list[Links]]:
    """A split's three files, named one by one (as a rule's inputs name them); a line-count mismatch or a link
    outside its sentence raises a FormatError naming the file and line."""
    pairs = read_parallel(src_path, tgt_path)
    links = read_alignments(align_path)
    if len(links) != len(pairs):
        raise FormatError(
            f"{align_path}: {len(links)} lines, but {src_path}: {len(pairs)} lines; the alignment "
            "file must have one line per sentence pair"
        )
    src = [s.split() for s, _ in pairs]
    tgt = [t.split() for _, t in pairs]
    for lineno, (s, t, a) in enumerate(zip(src, tgt, links, strict=True), start=1):
        bad = sorted((i, j) for i, j in a if i >= len(s) or j >= len(t))
        if bad:
            raise FormatError(
                f"{align_path}:{lineno}: link {bad[0][0]}-{bad[0][1]} outside the sentence pair "
                f"({len(s)} and {len(t)} words)"
            )
    return src, tgt, links


def align_corpus(
    src_path: str | os.PathLike,
    tgt_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    src_lang: str,
    tgt_lang: str,
    *,
    tokenizer: str,
    test: int,
    dev: int,
    train: Sequence[int],
    aligner: str = "fast_align",
    aligner_settings: dict | None = None,
    gold_path: str | os.PathLike | None = None,
) -> pd.DataFrame:
    """Tokenize the line-aligned files, align the pairs the splits use with `aligner` (and its settings), write
    every split (`write_split`) and return one row per split and links (the aligner's forward and reverse, and
    the word pairs): sentence pairs, links and, with gold links, precision, recall and AER.

    A pair with an empty side is dropped before splitting (Europarl has some). Gold links index the
    whitespace tokens of the files, so with gold the tokenizer must keep those tokens (FormatError otherwise)."""
    pairs = read_parallel(src_path, tgt_path)
    src = tokenize((s for s, _ in pairs), src_lang, tokenizer)
    tgt = tokenize((t for _, t in pairs), tgt_lang, tokenizer)
    gold = None
    if gold_path is not None:
        gold = read_gold(gold_path)
        if len(gold[0]) != len(pairs):
            raise FormatError(f"{gold_path}: {len(gold[0])} lines, but {src_path} has {len(pairs)}")
        for path, lines, words in ((src_path, (s for s, _ in pairs), src), (tgt_path, (t for _, t in pairs), tgt)):
            for lineno, (line, tokens) in enumerate(zip(lines, words, strict=True), start=1):
                if line.split() != tokens:
                    raise FormatError(
                        f"{path}:{lineno}: the {tokenizer} tokenizer changes the tokens the gold links "
                        f"of {gold_path} refer to; use alignment.tokenizer: whitespace"
                    )
    kept = [k for k, (s, t) in enumerate(zip(src, tgt, strict=True)) if s and t]
    if len(kept) < len(pairs):
        logger.warning(
            "%s / %s: %d of %d pairs have an empty side and are left out",
            src_path,
            tgt_path,
            len(pairs) - len(kept),
            len(pairs),
        )
    try:
        splits = split_indices(len(kept), test, dev, train)
    except ValueError as exc:
        raise FormatError(f"{src_path} / {tgt_path}: {exc} (alignment.*_sentences)") from None
    used = sorted({k for indices in splits.values() for k in indices})
    settings = aligner_settings or {}
    logger.info("aligning %d of %d sentence pairs with %s (%s)", len(used), len(kept), aligner, settings)
    fwd, rev = directional_links([src[kept[k]] for k in used], [tgt[kept[k]] for k in used], aligner, settings)
    links = {"forward": fwd, "reverse": rev, "pairs": word_pairs(fwd, rev)}
    position = {k: n for n, k in enumerate(used)}
    rows = []
    for split, indices in splits.items():
        rows_of = [position[k] for k in indices]
        originals = [kept[k] for k in indices]
        write_split(
            out_dir,
            split,
            src_lang,
            tgt_lang,
            [src[k] for k in originals],
            [tgt[k] for k in originals],
            [links["pairs"][n] for n in rows_of],
        )
        for method, found in links.items():
            chosen = [found[n] for n in rows_of]
            row = dict(split=split, links_from=method, sentence_pairs=len(indices), links=sum(map(len, chosen)))
            if gold is not None:
                scores = alignment_error(chosen, [gold[0][k] for k in originals], [gold[1][k] for k in originals])
                row.update({key: scores[key] for key in ("precision", "recall", "aer")})
            rows.append(row)
        logger.info("%s: %d sentence pairs, %d word pairs", split, len(indices), rows[-1]["links"])
    table = pd.DataFrame(rows)
    for column in ("precision", "recall", "aer"):
        if column not in table:
            table[column] = float("nan")
    return table
