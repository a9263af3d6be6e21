"""The claims of Cao et al. 2020, Multilingual Alignment of Contextual Word Representations: zero-shot XNLI of
aligned BERTs against the base and the rotations, contextual and non-contextual word retrieval, and the
analyses by word class and frequency-rank difference.
"""

from __future__ import annotations

import pandas as pd

from xling.evaluate.alignment import cao_retrieval, cao_xnli
from xling.evaluate.findings.core import Claim, Criteria, Finding, NotMeasured, Tables, _common, _num, _table, _verdict

# ---------------------------------------------------------------------------------------------- alignment

def _by_lang(rows: pd.DataFrame, value: str) -> pd.Series:
    return rows.groupby("lang")[value].mean()


def _largest_common_n(*frames: pd.DataFrame) -> int:
    common = set.intersection(*(set(f["parallel_sentences"]) for f in frames))
    if not common:
        raise NotMeasured("the compared settings share no amount of parallel data")
    return max(common)


def _means_at_largest_common_n(parts: dict[str, pd.DataFrame], value: str) -> tuple[int, dict[str, float], list[str]]:
    """Each setting's mean `value` over the languages they all have, at the largest amount of parallel data they
    share: (that amount, the means, the languages)."""
    n = _largest_common_n(*parts.values())
    means, shared = _common({k: _by_lang(p[p["parallel_sentences"] == n], value) for k, p in parts.items()})
    return n, means, shared


def _xnli_bases(tables: Tables, pivot: str) -> tuple[pd.DataFrame, list[str]]:
    transfer = _table(tables, "transfer")
    if "lm" not in transfer:
        raise NotMeasured("the transfer table has no lm column (no alignment study)")
    rows = cao_xnli(transfer)
    if rows.empty:
        raise NotMeasured("no XNLI of an aligned or rotated BERT in transfer")
    rows = rows[rows["lang"] != pivot]
    depth = int(rows["freeze"].min())  # the smallest freeze depth, as the transfer section compares models
    return rows[rows["freeze"] == depth], sorted(rows["base"].unique())


def aligned_improves_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Each base BERT fine-tuned for alignment (the largest amount of parallel data) scores higher in zero-shot
    XNLI than the base, in every language but the pivot (beyond a tie)."""
    rows, bases = _xnli_bases(tables, pivot)
    results, langs, ns = [], set(), []
    for base in bases:
        at = rows[rows["base"] == base]
        aligned = at[at["setting"] == "word_aligned_finetuned"]
        if aligned.empty:
            continue
        n = int(aligned["parallel_sentences"].max())
        series = {"aligned": _by_lang(aligned[aligned["parallel_sentences"] == n], "value"),
                  "base": _by_lang(at[at["setting"] == "zero_shot_base_bert"], "value")}
        _, shared = _common(series)
        langs |= set(shared)
        ns.append(n)
        results.append((base, n, {lang: (series["aligned"][lang], series["base"][lang]) for lang in shared}))
    if not results:
        raise NotMeasured("no aligned BERT in the XNLI rows of transfer")
    holds = all(criteria.greater(a, b) for *_, by in results for a, b in by.values())
    evidence = "; ".join(f"{base} aligned on {n:,}: " + ", ".join(
        f"{lang} {a:.1f} {criteria.sign(a, b)} {b:.1f}" for lang, (a, b) in by.items()) for base, n, by in results)
    return Finding(_verdict(holds), f"zero-shot XNLI test accuracy, aligned vs base ({evidence})",
                   dict(table="transfer", metric="xnli accuracy", models=", ".join(b for b, *_ in results),
                        corpus_size=", ".join(f"{n:,} parallel sentences" for n in ns),
                        layers=f"frozen up to {int(rows['freeze'].iloc[0])}",
                        pairs=[f"{pivot}-{lang}" for lang in sorted(langs)]))


def aligned_beats_rotations_xnli(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Fine-tuning alignment beats both rotations in zero-shot XNLI on average over the languages (with the
    same amount of parallel data)."""
    rows, bases = _xnli_bases(tables, pivot)
    results, langs = [], set()
    for base in bases:
        at = rows[rows["base"] == base]
        parts = {s: at[at["setting"] == s] for s in ("word_aligned_finetuned", "word_aligned_rotation",
                                                      "sentence_aligned_rotation")}
        if any(p.empty for p in parts.values()):
            continue
        n, means, shared = _means_at_largest_common_n(parts, "value")
        langs |= set(shared)
        results.append((base, n, means))
    if not results:
        raise NotMeasured("no base BERT with XNLI after fine-tuning alignment and after both rotations")
    aligned = "word_aligned_finetuned"
    holds = all(criteria.greater(m[aligned], m[s]) for *_, m in results for s in m if s != aligned)
    evidence = "; ".join(f"{base} on {n:,} sentences: fine-tuned {m[aligned]:.1f} "
                         f"{criteria.sign(m[aligned], m['word_aligned_rotation'])} word rotation "
                         f"{m['word_aligned_rotation']:.1f}, {criteria.sign(m[aligned], m['sentence_aligned_rotation'])} "
                         f"sentence rotation {m['sentence_aligned_rotation']:.1f}" for base, n, m in results)
    return Finding(_verdict(holds), f"mean zero-shot XNLI test accuracy over {len(langs)} languages: {evidence}",
                   dict(table="transfer", metric="xnli accuracy", models=", ".join(b for b, *_ in results),
                        corpus_size=", ".join(f"{n:,} parallel sentences" for _, n, _ in results),
                        layers=f"frozen up to {int(rows['freeze'].iloc[0])}",
                        pairs=[f"{pivot}-{lang}" for lang in sorted(langs)]))


def _retrieval_means(tables: Tables, retrieval: str) -> tuple[list[tuple[str, int, dict]], set, pd.DataFrame]:
    """Per base BERT: mean accuracy over languages of fine-tuned BERT, fastText + sentence and the word rotation
    (each at the largest amount of parallel data they share), in `retrieval` (contextual / non_contextual)."""
    rows = cao_retrieval(_table(tables, "contextual_retrieval"))
    rows = rows[rows["retrieval"] == retrieval]
    if "layer" in rows:  # BERT at the layer the retrieval was run at (the last one when there are several)
        top = rows.groupby("lm")["layer"].transform("max")
        rows = rows[rows["layer"] == top]
    fasttext = rows[rows["setting"] == "aligned_fasttext_sentence"]
    if fasttext.empty:
        raise NotMeasured(f"no {retrieval} retrieval of the fastText baseline")
    results, langs = [], set()
    for base in sorted(rows.loc[rows["setting"] == "word_aligned_finetuned", "base"].unique()):
        at = rows[rows["base"] == base]
        parts = {"aligned": at[at["setting"] == "word_aligned_finetuned"], "fasttext": fasttext,
                 "rotation": at[at["setting"] == "word_aligned_rotation"]}
        if parts["rotation"].empty:
            continue
        n, means, shared = _means_at_largest_common_n(parts, "accuracy")
        langs |= set(shared)
        results.append((base, n, means))
    if not results:
        raise NotMeasured(f"no base BERT with {retrieval} retrieval after fine-tuning alignment and rotation")
    return results, langs, rows


def _retrieval_finding(results, langs, rows, criteria: Criteria, holds: bool, retrieval: str, pivot: str
                       ) -> Finding:
    evidence = "; ".join(f"{base} on {n:,} sentences: fine-tuned {_num(m['aligned'])} "
                         f"{criteria.sign(m['aligned'], m['fasttext'])} fastText + sentence {_num(m['fasttext'])} "
                         f"{criteria.sign(m['fasttext'], m['rotation'])} word rotation {_num(m['rotation'])}"
                         for base, n, m in results)
    layers = ", ".join(f"{lm} {int(layer)}" for lm, layer in rows.groupby("lm")["layer"].max().items()) \
        if "layer" in rows else None
    return Finding(_verdict(holds), f"mean {retrieval.replace('_', '-')} retrieval accuracy over {len(langs)} "
                   f"languages: {evidence}",
                   dict(table="contextual_retrieval", metric="accuracy (CSLS)", models=", ".join(
                       [b for b, *_ in results] + sorted(rows.loc[rows["setting"] == "aligned_fasttext_sentence",
                                                                  "lm"].unique())),
                        corpus_size=", ".join(f"{n:,} parallel sentences" for _, n, _ in results), layers=layers,
                        pairs=sorted(f"{lang}-{pivot}" for lang in langs)))


def contextual_retrieval_order(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """In contextual retrieval, fine-tuned BERT > sentence-augmented fastText > rotation-aligned BERT."""
    results, langs, rows = _retrieval_means(tables, "contextual")
    holds = all(criteria.greater(m["aligned"], m["fasttext"]) and criteria.greater(m["fasttext"], m["rotation"])
                for *_, m in results)
    return _retrieval_finding(results, langs, rows, criteria, holds, "contextual", pivot)


def non_contextual_aligned_matches_fasttext(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """In non-contextual retrieval, fine-tuned BERT matches fastText: at least as accurate, or a tie."""
    results, langs, rows = _retrieval_means(tables, "non_contextual")
    holds = all(criteria.at_least(m["aligned"], m["fasttext"]) for *_, m in results)
    return _retrieval_finding(results, langs, rows, criteria, holds, "non_contextual", pivot)


def _analysis(tables: Tables, key: str) -> pd.DataFrame:
    """An analysis table's (by POS, by rank difference) rows of base BERT and of fine-tuned alignment at its
    largest amount of parallel data, with `base` and `setting`."""
    rows = cao_retrieval(_table(tables, key).assign(contextual=True))
    if "layer" in rows:
        rows = rows[rows["layer"] == rows.groupby("lm")["layer"].transform("max")]
    rows = rows[rows["setting"].isin(["base_bert", "word_aligned_finetuned"])]
    rows = rows[rows["parallel_sentences"] == rows.groupby(["base", "setting"])["parallel_sentences"].transform("max")]
    bases = sorted(set(rows.loc[rows["setting"] == "word_aligned_finetuned", "base"])
                   & set(rows.loc[rows["setting"] == "base_bert", "base"]))
    if not bases:
        raise NotMeasured(f"no base BERT with its fine-tuned alignment in {key}")
    return rows[rows["base"].isin(bases)]


def open_class_gap_closed_by_alignment(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Base BERT retrieves closed-class words better than open-class ones (group averages over the language
    pairs), and after alignment open-class words are retrieved at least as well as closed-class ones."""
    rows = _analysis(tables, "contextual_retrieval_pos")
    rows = rows[(rows["pos"] == "average") & rows["group"].isin(["closed_class", "open_class"])]
    means = rows.groupby(["base", "setting", "parallel_sentences", "group"])["accuracy"].mean().unstack("group")
    if not {"closed_class", "open_class"} <= set(means.columns) or means.isna().any().any():
        raise NotMeasured("contextual_retrieval_pos lacks the closed-class or open-class average")
    results = []
    for (base, setting, n), row in means.iterrows():
        closed, open_ = row["closed_class"], row["open_class"]
        ok = criteria.greater(closed, open_) if setting == "base_bert" else criteria.at_least(open_, closed)
        results.append((f"{base} {'aligned on ' + format(int(n), ',') if n else 'base'}: closed {_num(closed)} "
                        f"{criteria.sign(closed, open_)} open {_num(open_)}", ok))
    return Finding(_verdict(all(ok for _, ok in results)),
                   "mean accuracy by POS group over the pairs: " + "; ".join(e for e, _ in results),
                   dict(table="contextual_retrieval_pos", metric="accuracy (CSLS)",
                        models=", ".join(sorted(rows["base"].unique())),
                        pairs=sorted(f"{pivot}-{lang}" for lang in rows["lang"].unique())))


def alignment_removes_frequency_drop(tables: Tables, criteria: Criteria, pivot: str) -> Finding:
    """Base BERT's contextual retrieval accuracy is lower for the largest frequency-rank differences than for
    the smallest (mean over the pairs), and fine-tuned alignment drops less between the two."""
    rows = _analysis(tables, "contextual_retrieval_frequency")
    curves = rows.groupby(["base", "setting", "rank_bin"])["accuracy"].mean()
    results = []
    for base in sorted(rows["base"].unique()):
        drop = {}
        for setting in ("base_bert", "word_aligned_finetuned"):
            curve = curves[base, setting]
            if len(curve) < 2:
                raise NotMeasured(f"{base}: fewer than two frequency-rank bins")
            drop[setting] = (curve.iloc[0], curve.iloc[-1])
        (b0, b1), (a0, a1) = drop["base_bert"], drop["word_aligned_finetuned"]
        ok = criteria.greater(b0, b1) and (a0 - a1) < (b0 - b1)
        results.append((f"{base}: base {_num(b0)} -> {_num(b1)}, aligned {_num(a0)} -> {_num(a1)}", ok))
    labels = rows.drop_duplicates("rank_bin").sort_values("rank_bin")["rank_difference"]
    return Finding(_verdict(all(ok for _, ok in results)), f"mean accuracy in the smallest ({labels.iloc[0]}) and "
                   f"largest ({labels.iloc[-1]}) rank-difference bins: " + "; ".join(e for e, _ in results),
                   dict(table="contextual_retrieval_frequency", metric="accuracy (CSLS)",
                        models=", ".join(sorted(rows["base"].unique())),
                        pairs=sorted(f"{pivot}-{lang}" for lang in rows["lang"].unique())))


# ---------------------------------------------------------------------------------------------- the claims

# the paper as ../shared/papers/published_results.yaml keys it (claim ids start with the key)
CAO = "Cao et al. 2020, Multilingual Alignment of Contextual Word Representations"

CLAIMS = [
    Claim("cao2020.xnli", CAO, "§4.1, Table 1",
          "Fine-tuning alignment on parallel word pairs improves zero-shot XNLI in every language.",
          aligned_improves_xnli),
    Claim("cao2020.xnli.rotations", CAO, "§4.1, Table 1",
          "Rotations (word- or sentence-aligned) are sub-optimal overall: fine-tuning alignment transfers better "
          "on average.", aligned_beats_rotations_xnli),
    Claim("cao2020.retrieval.contextual", CAO, "§5.1, Table 3",
          "In contextual word retrieval, fine-tuned BERT outperforms the sentence-augmented fastText, which "
          "outperforms rotation-aligned BERT.", contextual_retrieval_order),
    Claim("cao2020.retrieval.non-contextual", CAO, "§5.1, Table 3",
          "In non-contextual word retrieval (first occurrences only), fine-tuned BERT matches fastText.",
          non_contextual_aligned_matches_fasttext),
    Claim("cao2020.pos", CAO, "§5.2, Table 4",
          "Base BERT aligns open-class words worse than closed-class words; alignment removes the gap.",
          open_class_gap_closed_by_alignment),
    Claim("cao2020.frequency", CAO, "§5.3, Figure 3",
          "Base BERT's contextual retrieval accuracy falls as the frequency ranks of the two words differ more; "
          "alignment remedies it.", alignment_removes_frequency_drop),
]
