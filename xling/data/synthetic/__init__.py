"""Controlled synthetic languages: one latent world of concepts, many surface realizations.

Why: to ask *why* a multilingual model aligns languages we need languages that differ in exactly one
property at a time (script, shared vocabulary, word order, morphology, frequency skew), as in K et al.
(2020)'s Fake-English. Every language here realizes the SAME latent world (concepts, topics, selectional
preferences), so a word's meaning is its distribution; the knobs change only how meaning is written.

Structure of the world (shared by all languages):
- content concepts (NOUN, VERB, ADJ) with Zipfian frequencies, plus a few function concepts (DET, ADP,
  PRON, PART for negation, CCONJ);
- document topics: content words come mostly from the document's topic (long-range co-occurrence that a
  short context window loses);
- selectional preferences: verbs prefer some subjects and objects, nouns prefer some adjectives (local
  structure that a short window keeps);
- a small grammar of clauses (subject, verb, object, adjectives, prepositional phrases, negation, tense,
  number, coordination) whose latent tree is written as UD-style CoNLL-U;
- named entities (PER, ORG, LOC) that fill some noun-phrase slots in the corpora and the NER sentences
  (xling.data.synthetic_ner).

Per-language knobs (see DEFAULT_LANGUAGE): script, anchors (content concepts written exactly as in English,
like shared names and numbers), order, adjective, adposition, inflection, skew, copy_of.

Everything is drawn from numpy Generators seeded by (seed, purpose, language), so one language's files do
not change when another language is added.

The package, along the generator's stages: `spec` (knobs, defaults, validation, seeded draws), `world` (the latent
world and the sampler of latent sentences), `language` (lexicons, word order, token records), `xnli` (hypotheses
from premises) and `write` (the canonical files); this module re-exports what the scripts and tests call.
"""

from xling.data.synthetic.language import build, realize, surface  # noqa: F401
from xling.data.synthetic.spec import DEFAULT_LANGUAGE, DEFAULTS, SCRIPTS, resolve_spec  # noqa: F401
from xling.data.synthetic.world import Sampler  # noqa: F401
from xling.data.synthetic.write import (
    bucc_split,
    domain_corpus,
    generate,
    low_resource_treebanks,  # noqa: F401
    ner_set,
    xnli_pairs,
)
