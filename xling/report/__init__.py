"""The HTML report: core (registry, context, render_report), blocks (formatting), published (numbers from
the papers beside ours), downloads (each table linked to the run's file of it), one module per study (glance: the
first screen, what the run is, with metadata; run: study and settings; findings: the papers' claims judged on the
run; word_retrieval; word_pos: word retrieval by part of speech; pretraining; language: token translation;
sentence_retrieval: Tatoeba and BUCC; transfer: zero-shot XNLI, POS, parsing and NER; word_pairs: the word pairs'
quality against gold links; alignment: contextual retrieval and XNLI after alignment; training_curves: the
fine-tunings' and the alignment's training curves, in the transfer and alignment sections; monolingual: monolingual
BERTs aligned by Procrustes, CKA; protocol: the papers' protocol and this run's deviations), figures.

Importing the package registers every section, in report order.
"""

from xling.report.core import expected_figures, render_report  # noqa: F401
from xling.report import (
    glance,
    run,
    findings,
    word_retrieval,
    word_pos,
    pretraining,
    language,  # noqa: F401,E402
    sentence_retrieval,
    transfer,
    word_pairs,
    alignment,
    training_curves,
    emerging,
    monolingual,
    protocol,
)
