"""fast_align (Dyer, Chahuneau and Smith 2013), the aligner of Cao, Kitaev and Klein (2020, section 4: "we produce
word pairs using fastAlign and keep the one-to-one pairs in the intersection"), through PyPI's `systran-align`.

Settings: fast_align's standard `-d -o -v` (favour the diagonal, optimize its tension, variational Bayes), the
ones its README and cdec's guide give; the paper states no others.

Why not `systran_align.Aligner`: it returns only the grow-diag-final-and symmetrization of the two directions,
and the paper keeps their intersection. So `systran_align.generate_alignment_probabilities` trains both
directions and writes their lexical tables, and `viterbi_links` decodes each direction as fast_align does
(each target word to its most probable source word or to NULL, under the diagonal prior with the final tension).
The Aligner decodes with the start tension 4, not the optimized one; decoded with 4, our two directions agree with
it (99.997 % of their intersection lies in its symmetrization on 3,069 Europarl en-es pairs; the test checks it).

The whole table (`WHOLE_TABLE`): the original fast_align decodes from every entry it trained, so systran-align must
write every entry, not only those within its default beam. Our links then equal the original program's
(`fast_align -d -o -v`, with and without -r, on 500 Europarl en-fr pairs; `-v` on 200), as tests/data/fast_align/
records them. On all 2,994 pairs of that sample 2 of 167,569 links differ (and 1 word pair), each a tie in exact
arithmetic (one word twice in a sentence, both copies equally far from the diagonal) that rounding breaks:
systran-align's table holds float32 probabilities where fast_align's are doubles, and its log gives the optimized
tension to 6 digits.

Reproducible: fast_align has no randomness, but its E-step adds counts from OpenMP threads in whatever order they
finish (two threads gave three different tables in three runs), so training runs in a child process with one
thread. Words are written as ids, so no token can collide with fast_align's `|||` separator.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

NULL = "<eps>"
MISSING_PROB = 1e-9  # fast_align's probability of a (source, target) pair its table lacks
WHOLE_TABLE = -math.inf
"""systran-align's `beam_threshold` for the tables we decode from: keep every entry. Its default (-4) writes only
the entries whose log probability is at least -4 (53,564 of 251,551 forward entries on 500 Europarl en-fr pairs),
and `viterbi_links` would score each dropped pair as MISSING_PROB: there, 14,809 forward links against fast_align's
15,285 (Jaccard 0.904), 8,463 word pairs against 8,537. fast_align's own -t beam prunes only the table it writes
with -p, never the one it decodes from."""
STANDARD = dict(favor_diagonal=True, optimize_tension=True, variational_bayes=True, iterations=5, prob_align_null=0.08)

_TRAIN = """
import json, sys, systran_align
systran_align.generate_alignment_probabilities(sys.argv[1], sys.argv[2], sys.argv[3], verbose=True,
                                               **json.loads(sys.argv[4]))
"""


def read_table(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """systran-align's binary lexical table: uint32 version 2, uint32 vocabulary size, the NUL-terminated words,
    uint32 table size, then per source word with entries its uint32 id, uint32 entry count and (uint32 target
    id, float32 probability) pairs; ids count from 1 in vocabulary order."""
    data = Path(path).read_bytes()
    version, n_words = struct.unpack_from("<II", data, 0)
    if version != 2:
        raise ValueError(f"{path}: systran-align table version {version}, expected 2")
    words, pos = [], 8
    for _ in range(n_words):
        end = data.index(b"\0", pos)
        words.append(data[pos:end].decode("utf-8"))
        pos = end + 1
    pos += 4
    table: dict[str, dict[str, float]] = {}
    while pos < len(data):
        source, count = struct.unpack_from("<II", data, pos)
        entries = struct.unpack_from(f"<{2 * count}I", data, pos + 8)
        probs = struct.unpack_from(f"<{2 * count}f", data, pos + 8)
        table[words[source - 1]] = {words[entries[k] - 1]: probs[k + 1] for k in range(0, 2 * count, 2)}
        pos += 8 + 8 * count
    return table


def final_tensions(log: str) -> list[float]:
    """The diagonal tension each model ended with (its last `final tension`, or the start value 4 when it was
    never optimized), from the verbose log of both trainings (forward, then reverse)."""
    tensions = []
    for model in log.split("INITIAL PASS")[1:]:
        found = re.findall(r"final tension: ([0-9.eE+-]+)", model)
        tensions.append(float(found[-1]) if found else 4.0)
    return tensions


def viterbi_links(
    table: dict[str, dict[str, float]],
    src: Sequence[str],
    tgt: Sequence[str],
    *,
    tension: float,
    favor_diagonal: bool,
    prob_align_null: float,
) -> set[tuple[int, int]]:
    """fast_align's decoding of one direction (its final pass): each tgt word j linked to the src word i that
    maximises t(tgt_j | src_i) * p(i | j), the first such i on a tie, or to none when NULL's t(tgt_j | NULL) *
    p(NULL) is at least as large. With the diagonal, p(NULL) = p0 and p(i | j) is proportional to
    exp(-tension |i/n - j/m|), summing to 1 - p0; without it, every p is 1 / (n + 1), NULL's too (IBM model 1)."""
    n, m = len(src), len(tgt)
    null_row, rows = table.get(NULL, {}), [table.get(word, {}) for word in src]
    links = set()
    for j, word in enumerate(tgt):
        if favor_diagonal:
            prior = [math.exp(-abs((j + 1) / m - (i + 1) / n) * tension) for i in range(n)]
            scale = (1 - prob_align_null) / sum(prior)
            prior, null_prior = [p * scale for p in prior], prob_align_null
        else:
            prior, null_prior = [1.0 / (n + 1)] * n, 1.0 / (n + 1)
        best, best_prob = None, null_row.get(word, MISSING_PROB) * null_prior
        for i, row in enumerate(rows):
            prob = row.get(word, MISSING_PROB) * prior[i]
            if prob > best_prob:
                best, best_prob = i, prob
        if best is not None:
            links.add((best, j))
    return links


def train(
    src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], workdir: str | os.PathLike, settings: dict
) -> tuple[dict, dict, list[float], dict[str, str]]:
    """Both directions' whole lexical tables (`WHOLE_TABLE`) and final tensions, trained on one thread, and each
    word's id (the tables' keys; one vocabulary for both sides, as fast_align's)."""
    ids: dict[str, str] = {}
    work = Path(workdir)
    with open(work / "corpus", "w", encoding="utf-8") as corpus:
        for s, t in zip(src, tgt, strict=True):
            corpus.write(
                " ".join(ids.setdefault(w, f"s{len(ids)}") for w in s)
                + " ||| "
                + " ".join(ids.setdefault(w, f"s{len(ids)}") for w in t)
                + "\n"
            )
    if "beam_threshold" in settings:
        raise ValueError(
            "fast_align settings: beam_threshold is not a setting; the tables are written whole "
            "(WHOLE_TABLE), as the original fast_align decodes from its whole table"
        )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _TRAIN,
            str(work / "corpus"),
            str(work / "fwd"),
            str(work / "rev"),
            json.dumps({**settings, "beam_threshold": WHOLE_TABLE}),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"systran-align failed ({done.returncode}): {done.stderr[-2000:]}")
    tensions = final_tensions(done.stderr)
    if len(tensions) != 2:
        raise RuntimeError(f"systran-align's log shows {len(tensions)} trainings, expected 2 (forward, reverse)")
    return read_table(work / "fwd"), read_table(work / "rev"), tensions, ids


def links(
    src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], **settings
) -> tuple[list[set[tuple[int, int]]], list[set[tuple[int, int]]]]:
    """Forward (each tgt word to at most one src word) and reverse (each src word to at most one tgt word) links,
    both as (src index, tgt index); `settings` override STANDARD (systran-align's keyword names)."""
    settings = {**STANDARD, **settings}
    with tempfile.TemporaryDirectory(prefix="fast_align-") as tmp:
        fwd_table, rev_table, (fwd_tension, rev_tension), ids = train(src, tgt, tmp, settings)
    decode = dict(favor_diagonal=settings["favor_diagonal"], prob_align_null=settings["prob_align_null"])
    fwd, rev = [], []
    for s, t in zip(src, tgt, strict=True):
        s_ids, t_ids = [ids[w] for w in s], [ids[w] for w in t]
        fwd.append(viterbi_links(fwd_table, s_ids, t_ids, tension=fwd_tension, **decode))
        rev.append({(i, j) for j, i in viterbi_links(rev_table, t_ids, s_ids, tension=rev_tension, **decode)})
    return fwd, rev
