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
"""

from __future__ import annotations

import bisect
import copy
import itertools
import logging
import math
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xling.data import synthetic_ner as ner
from xling.io import atomic_write

logger = logging.getLogger(__name__)

# 15 consonants + 5 vowels per script, in disjoint Unicode blocks. Equal sizes make transliteration (used
# by `copy_of` with another script) a bijection. Every letter is one precomposed code point (NFC-stable).
SCRIPTS: dict[str, tuple[str, str]] = {
    "latin": ("bcdfghklmnprstv", "aeiou"),
    "cyrillic": ("бвгджзклмнпрстх", "аеиоу"),
    "greek": ("βγδζθκλμνξπρστφ", "αειου"),
    "armenian": ("բգդզթժլխկհմնպստ", "աեէիօ"),
    "georgian": ("ბგდვზთკლმნპრსტქ", "აეიოუ"),
    "hebrew": ("בגדזחטכלמנספצקר", "אהויע"),
    "arabic": ("بتجدرزسشطفقكلمن", "اويهع"),
}
ORDERS = ("SVO", "SOV", "VSO", "VOS", "OVS", "OSV")
LABELS = ("entailment", "neutral", "contradiction")

DEFAULTS: dict = {
    "seed": 1,
    "sentences": 12000,
    "document_length": [3, 12],
    "concepts": 600,
    "zipf": 1.0,
    "topics": 30,
    "topic_weight": 0.75,
    "local_weight": 0.5,
    "dictionary": {"train": [0, 300], "test": [300, 450], "anchors_in_test": False},
    "parallel_sentences": 1000,
    "ud_sentences": {"train": 2000, "dev": 300, "test": 500},
    "tatoeba_sentences": 1000,
    "bucc_sentences": {"dev": 1000, "test": 2000},
    "bucc_gold_rate": 0.025,
    "xnli_pairs": {"train": 5000, "dev": 500, "test": 1000},
    "named_entities": 30,
    "name_rate": 0.1,
    "ner_sentences": {"train": 2000, "dev": 300, "test": 500},
    "languages": {},
}
DEFAULT_LANGUAGE: dict = {
    "script": "latin",
    "anchors": 0.1,
    "order": "SVO",
    "adjective": "before",
    "adposition": None,  # None: "pre" when the verb precedes the object, else "post"
    "inflection": True,
    "skew": 0.0,
    "copy_of": None,
}

# Function concepts: (name, UPOS, UD feats). Never anchors; every language has its own forms.
FUNCTION = [
    ("DEF", "DET", "Definite=Def|PronType=Art"), ("INDEF", "DET", "Definite=Ind|PronType=Art"),
    ("DEM", "DET", "PronType=Dem"),
    ("IN", "ADP", "_"), ("ON", "ADP", "_"), ("WITH", "ADP", "_"), ("FROM", "ADP", "_"),
    ("TO", "ADP", "_"), ("FOR", "ADP", "_"),
    ("I", "PRON", "Number=Sing|Person=1|PronType=Prs"), ("YOU", "PRON", "Person=2|PronType=Prs"),
    ("HE", "PRON", "Number=Sing|Person=3|PronType=Prs"), ("SHE", "PRON", "Number=Sing|Person=3|PronType=Prs"),
    ("WE", "PRON", "Number=Plur|Person=1|PronType=Prs"), ("THEY", "PRON", "Number=Plur|Person=3|PronType=Prs"),
    ("NOT", "PART", "Polarity=Neg"),
    ("AND", "CCONJ", "_"), ("BUT", "CCONJ", "_"),
]
POS_FRACTIONS = (("NOUN", 0.5), ("VERB", 0.3), ("ADJ", 0.2))
NOUN_FEATS = ("Sing", "Plur")
VERB_FEATS = ("Pres", "Past", "Fut")
AFFIX_FEATS = ("Plur", "Past", "Fut")  # the unmarked Sing/Pres form is the lemma


def _rng(seed: int, *purpose: str) -> np.random.Generator:
    """A generator for one purpose (and language): stable across runs and independent of the others."""
    return np.random.default_rng([int(seed), *(zlib.crc32(p.encode()) for p in purpose)])


class _Draw:
    """Fast scalar draws from a numpy Generator (buffered uniforms, bisect on Python cdf lists)."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self._next = rng, iter(()).__next__

    def u(self) -> float:
        try:
            return self._next()
        except StopIteration:
            self._next = iter(self.rng.random(8192).tolist()).__next__
            return self._next()

    def pick(self, cdf: list[float], items: list):
        return items[bisect.bisect_right(cdf, self.u() * cdf[-1])]

    def choice(self, seq):
        return seq[int(self.u() * len(seq))]

    def categorical(self, probs: tuple[float, ...]) -> int:
        x, acc = self.u(), 0.0
        for i, p in enumerate(probs):
            acc += p
            if x < acc:
                return i
        return len(probs) - 1


# --------------------------------------------------------------------------------------------------
# Spec validation


def _fail(key: str, message: str):
    raise ValueError(f"synthetic.{key}: {message}")


def _check_int(value, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        _fail(key, f"expected an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_number(value, key: str, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or (
            high is not None and value > high):
        _fail(key, f"expected a number in [{low}, {high if high is not None else 'inf'}], got {value!r}")
    return float(value)


def _check_range(value, key: str) -> tuple[int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            or not 0 <= value[0] < value[1]):
        _fail(key, f"expected a half-open rank range [start, end) with 0 <= start < end, got {value!r}")
    return int(value[0]), int(value[1])


def _check_keys(given: dict, allowed: dict, key: str) -> None:
    if not isinstance(given, dict):
        _fail(key, f"expected a mapping, got {type(given).__name__}")
    for k in given:
        if k not in allowed:
            _fail(f"{key}.{k}" if key else k, f"unknown key (known: {', '.join(allowed)})")


def resolve_spec(spec: dict | None, languages: list[str]) -> dict:
    """Validate `spec` (config["synthetic"]) and fill defaults; ValueError names the offending key.

    Every language in `languages` except "en" needs an entry in spec["languages"] (possibly empty: {}),
    so that a typo in a language code is an error rather than a silently invented language.
    """
    spec = dict(spec or {})
    _check_keys(spec, DEFAULTS, "")
    out = copy.deepcopy(DEFAULTS)
    for k, v in spec.items():
        if isinstance(out[k], dict) and k != "languages":
            _check_keys(v, out[k], k)
            out[k].update(v)
        else:
            out[k] = v
    _check_int(out["seed"], "seed", 0)
    _check_int(out["sentences"], "sentences", 1)
    dl = out["document_length"]
    if not (isinstance(dl, (list, tuple)) and len(dl) == 2 and all(isinstance(v, int) for v in dl)
            and 1 <= dl[0] <= dl[1]):
        _fail("document_length", f"expected [min, max] with 1 <= min <= max, got {dl!r}")
    _check_int(out["concepts"], "concepts", 50)
    _check_number(out["zipf"], "zipf", 0.0, 3.0)
    _check_int(out["topics"], "topics", 1)
    _check_number(out["topic_weight"], "topic_weight", 0.0, 1.0)
    _check_number(out["local_weight"], "local_weight", 0.0, 1.0)
    train = _check_range(out["dictionary"]["train"], "dictionary.train")
    test = _check_range(out["dictionary"]["test"], "dictionary.test")
    if train[0] < test[1] and test[0] < train[1]:
        _fail("dictionary", f"train {list(train)} and test {list(test)} rank ranges overlap")
    if not isinstance(out["dictionary"]["anchors_in_test"], bool):
        _fail("dictionary.anchors_in_test", "expected true or false")
    _check_int(out["parallel_sentences"], "parallel_sentences", 1)
    _check_int(out["tatoeba_sentences"], "tatoeba_sentences", 1)
    _check_int(out["named_entities"], "named_entities", 1)
    _check_number(out["name_rate"], "name_rate", 0.0, 1.0)
    for group in ("ud_sentences", "bucc_sentences", "xnli_pairs", "ner_sentences"):
        for split, n in out[group].items():
            _check_int(n, f"{group}.{split}", 3 if group == "xnli_pairs" else 1)
    rate = out["bucc_gold_rate"]
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        _fail("bucc_gold_rate", f"expected a number in (0, 1], got {rate!r}")
    for split, n in out["bucc_sentences"].items():
        if bucc_gold_count(n, rate) < 1:  # BUCC's threshold is tuned on the dev gold pairs
            _fail("bucc_gold_rate", f"{rate} of bucc_sentences.{split} = {n} hides no gold pair")

    if not languages or languages[0] != "en":
        raise ValueError(f"synthetic: the first language must be the pivot 'en', got {languages!r}")
    if len(set(languages)) != len(languages):
        raise ValueError(f"synthetic: duplicate languages in {languages!r}")
    table = out["languages"] or {}
    _check_keys(table, dict.fromkeys(table), "languages")
    resolved = {}
    # unused entries are validated too, so a typo in a preset fails now rather than when the language is used
    for lang in list(languages) + [k for k in table if k not in languages and k != "en"]:
        key = f"languages.{lang}"
        if lang != "en" and lang not in table:
            _fail(key, f"no entry for language {lang!r}; add `{lang}: {{}}` to use the defaults")
        given = table.get(lang) or {}
        _check_keys(given, DEFAULT_LANGUAGE, key)
        if lang == "en":
            for k in ("anchors", "copy_of"):
                if k in given:
                    _fail(f"{key}.{k}", "not allowed for the pivot language")
            if given.get("script", "latin") != "latin":
                _fail(f"{key}.script", "the pivot 'en' is written in the latin script")
        knobs = dict(DEFAULT_LANGUAGE)
        if given.get("copy_of") is not None:
            if given["copy_of"] != "en":
                _fail(f"{key}.copy_of", f"only 'en' can be copied, got {given['copy_of']!r}")
            # a copy starts from English's knobs (and lexicon); its own keys override them
            knobs.update({**(table.get("en") or {}), "anchors": 0.0, "copy_of": "en"})
        knobs.update({k: v for k, v in given.items() if k != "copy_of"})
        if knobs["script"] not in SCRIPTS:
            _fail(f"{key}.script", f"unknown script {knobs['script']!r} (known: {', '.join(SCRIPTS)})")
        knobs["anchors"] = 1.0 if lang == "en" else _check_number(knobs["anchors"], f"{key}.anchors", 0.0, 1.0)
        if knobs["order"] not in ORDERS:
            _fail(f"{key}.order", f"expected one of {', '.join(ORDERS)}, got {knobs['order']!r}")
        if knobs["adjective"] not in ("before", "after"):
            _fail(f"{key}.adjective", f"expected before or after, got {knobs['adjective']!r}")
        if knobs["adposition"] is None:
            knobs["adposition"] = "pre" if knobs["order"].index("V") < knobs["order"].index("O") else "post"
        if knobs["adposition"] not in ("pre", "post"):
            _fail(f"{key}.adposition", f"expected pre or post, got {knobs['adposition']!r}")
        if not isinstance(knobs["inflection"], bool):
            _fail(f"{key}.inflection", f"expected true or false, got {knobs['inflection']!r}")
        _check_number(knobs["skew"], f"{key}.skew", 0.0, 5.0)
        resolved[lang] = knobs
    out["languages"] = {lang: resolved[lang] for lang in languages}
    return out


# --------------------------------------------------------------------------------------------------
# The latent world


@dataclass
class World:
    """Concepts, topics and preferences shared by every language (drawn from the 'world' stream)."""

    n_content: int
    n_topics: int
    topic_weight: float
    local_weight: float
    pos: list[str]                 # per concept id (content ids first, then function ids)
    weight: np.ndarray             # Zipfian base weight per content concept (id = frequency rank)
    members: dict[str, list[int]]  # content POS -> concept ids
    home: np.ndarray               # home topic per content concept
    transitive: dict[int, bool]
    subj_pref: dict[int, list[int]]
    obj_pref: dict[int, list[int]]
    adj_pref: dict[int, list[int]]
    antonym: dict[int, int]        # verb -> contrasting verb (symmetric), for XNLI contradictions
    anchor_order: list[int]        # content ids; a language with anchors=a shares the first round(a*n)
    fid: dict[str, int]            # function concept name -> id
    names: ner.Names               # named entities; their parts are the last concept ids (PROPN)

    def ids(self, upos: str) -> list[int]:
        return [c for c in range(self.n_content, len(self.pos)) if self.pos[c] == upos]


def build_world(cfg: dict) -> World:
    """Draw the latent world from cfg (a resolved spec); depends on seed and world knobs only."""
    rng = _rng(cfg["seed"], "world")
    n, n_topics = cfg["concepts"], cfg["topics"]
    weight = 1.0 / np.arange(1, n + 1) ** cfg["zipf"]
    counts = [round(n * f) for _, f in POS_FRACTIONS]
    counts[0] = n - sum(counts[1:])
    pos_of = np.array(sum(([p] * k for (p, _), k in zip(POS_FRACTIONS, counts)), []))
    pos_of = list(pos_of[rng.permutation(n)])
    members = {p: [c for c in range(n) if pos_of[c] == p] for p, _ in POS_FRACTIONS}
    # Balanced home topics: within a POS, each block of n_topics consecutive ranks covers every topic once.
    home = np.zeros(n, dtype=int)
    for ids in members.values():
        for start in range(0, len(ids), n_topics):
            block = ids[start:start + n_topics]
            home[block] = rng.permutation(n_topics)[:len(block)]

    def preferred(pos: str, topic: int, k: int) -> list[int]:
        pool = [c for c in members[pos] if home[c] == topic] or members[pos]
        p = weight[pool] / weight[pool].sum()
        return [int(c) for c in rng.choice(pool, size=min(k, len(pool)), replace=False, p=p)]

    transitive = {v: bool(rng.random() < 0.65) for v in members["VERB"]}
    subj_pref = {v: preferred("NOUN", home[v], 3) for v in members["VERB"]}
    obj_pref = {v: preferred("NOUN", home[v], 3) for v in members["VERB"]}
    adj_pref = {c: preferred("ADJ", home[c], 2) for c in members["NOUN"]}
    antonym = {}
    for flag in (True, False):
        verbs = [v for v in members["VERB"] if transitive[v] == flag]
        verbs = [verbs[i] for i in rng.permutation(len(verbs))]
        for a, b in zip(verbs[0::2], verbs[1::2]):
            antonym[a], antonym[b] = b, a
    anchor_order = [int(c) for c in rng.permutation(n)]
    pos_all = pos_of + [upos for _, upos, _ in FUNCTION]
    fid = {name: n + i for i, (name, _, _) in enumerate(FUNCTION)}
    names = ner.draw_names(_Draw(_rng(cfg["seed"], "names")), cfg["named_entities"], len(pos_all), cfg["zipf"], fid)
    pos_all += ["PROPN"] * len(names.part_type)
    return World(n, n_topics, cfg["topic_weight"], cfg["local_weight"], [str(p) for p in pos_all], weight,
                 members, home, transitive, subj_pref, obj_pref, adj_pref, antonym, anchor_order, fid, names)


class Tables:
    """Per-topic cumulative distributions over each content POS, for fast sampling."""

    def __init__(self, world: World, weight: np.ndarray):
        self.cdf: list[dict[str, list[float]]] = []
        lam = world.topic_weight
        for t in range(world.n_topics):
            per = {}
            for pos, ids in world.members.items():
                w = weight[ids]
                in_topic = np.where(world.home[ids] == t, w, 0.0)
                p = (1 - lam) * w / w.sum() + (lam * in_topic / in_topic.sum() if in_topic.sum() > 0 else 0.0)
                per[pos] = list(itertools.accumulate(p.tolist()))
            self.cdf.append(per)


# --------------------------------------------------------------------------------------------------
# Latent sentences: NP = (head, number, det, adjs); PP = (adp, NP); clause = (verb, tense, neg, subj, obj, pps);
# sentence = tuple of (cconj or None, clause).


class Sampler:
    """Draws latent sentences from a world with one language's (possibly skewed) frequency tables."""

    def __init__(self, world: World, tables: Tables, rng: np.random.Generator):
        self.w, self.t, self.d = world, tables, _Draw(rng)
        self.dets = [world.fid[k] for k in ("DEF", "INDEF", "DEM")]
        self.adps = world.ids("ADP")
        self.prons = world.ids("PRON")
        self.conjs = world.ids("CCONJ")

    def content(self, pos: str, topic: int) -> int:
        return self.d.pick(self.t.cdf[topic][pos], self.w.members[pos])

    def noun_phrase(self, topic: int, prefs: list[int] | None, pron: bool = True):
        d = self.d
        if pron and d.u() < 0.15:
            return (d.choice(self.prons), None, None, ())
        if prefs and d.u() < self.w.local_weight:
            noun = d.choice(prefs)
        else:
            noun = self.content("NOUN", topic)
        k = d.categorical((0.55, 0.35, 0.10))
        adjs = []
        for _ in range(k):
            prefs_a = self.w.adj_pref[noun]
            a = d.choice(prefs_a) if prefs_a and d.u() < self.w.local_weight else self.content("ADJ", topic)
            if a not in adjs:
                adjs.append(a)
        number = NOUN_FEATS[d.categorical((0.7, 0.3))]
        return (noun, number, self.dets[d.categorical((0.5, 0.35, 0.15))], tuple(adjs))

    def prep_phrase(self, topic: int):
        return (self.d.choice(self.adps), self.noun_phrase(topic, None, pron=False))

    def clause(self, topic: int, pron: bool = True, neg: float = 0.15):
        d, w = self.d, self.w
        verb = self.content("VERB", topic)
        subj = self.noun_phrase(topic, w.subj_pref[verb], pron)
        obj = self.noun_phrase(topic, w.obj_pref[verb], pron=False) if w.transitive[verb] else None
        n_pp = d.categorical((0.5, 0.4, 0.1)) if obj else 1 + d.categorical((0.7, 0.3))
        pps = tuple(self.prep_phrase(topic) for _ in range(n_pp))
        return (verb, VERB_FEATS[d.categorical((0.6, 0.25, 0.15))], d.u() < neg, subj, obj, pps)

    def sentence(self, topic: int | None = None):
        if topic is None:
            topic = int(self.d.u() * self.w.n_topics)
        parts = [(None, self.clause(topic))]
        if self.d.u() < 0.2:
            parts.append((self.d.choice(self.conjs), self.clause(topic)))
        return tuple(parts)


# --------------------------------------------------------------------------------------------------
# Languages: surface forms and linearization


@dataclass
class Language:
    """One realization of the world: a lexicon (forms per concept and feature) and word-order knobs."""

    code: str
    knobs: dict
    lemma: list[str]
    forms: list[dict]           # concept -> {feature or None: surface form}
    anchors: frozenset          # content concepts written exactly as in English
    tables: Tables

    @property
    def script(self) -> str:
        return self.knobs["script"]

    def concept_of(self) -> dict[str, tuple[int, str | None]]:
        """Surface form -> (concept, feature), for parsing generated text back to the latent level."""
        return {f: (c, feat) for c, fs in enumerate(self.forms) for feat, f in fs.items()}


def _word(d: _Draw, script: str, syllables: int) -> str:
    cons, vows = SCRIPTS[script]
    out = []
    for _ in range(syllables):
        if d.u() < 0.85:
            out.append(d.choice(cons))
        out.append(d.choice(vows))
        if d.u() < 0.2:
            out.append(d.choice(cons))
    return "".join(out)


def _forms_for(pos: str, lemma: str, affix: dict[str, str], inflect: bool) -> dict:
    feats = NOUN_FEATS if pos == "NOUN" else VERB_FEATS if pos == "VERB" else (None,)
    return {f: lemma + affix[f] if inflect and f in affix else lemma for f in feats}


def build_language(world: World, cfg: dict, code: str, en: Language | None) -> Language:
    """Realize the world in language `code` (en must be built first: anchors and copies refer to it)."""
    knobs = cfg["languages"][code]
    seed = cfg["seed"]
    script, inflect = knobs["script"], knobs["inflection"]
    n = world.n_content
    copying = knobs["copy_of"] is not None
    if copying and knobs["skew"] == en.knobs["skew"]:
        tables = en.tables  # an exact copy shares English's frequency noise too
    else:
        noise = _rng(seed, "skew", code).lognormal(0.0, 1.0, n) ** knobs["skew"] if knobs["skew"] else 1.0
        tables = Tables(world, world.weight * noise)
    anchors = frozenset(world.anchor_order[:round(knobs["anchors"] * n)]) if code != "en" else frozenset()
    lemma: list[str | None] = [None] * len(world.pos)
    forms: list[dict | None] = [None] * len(world.pos)
    if copying:
        table = str.maketrans("".join(SCRIPTS[en.script]), "".join(SCRIPTS[script]))
        affix = {f: en_affix.translate(table) for f, en_affix in en.knobs["_affix"].items()}
        for c in range(len(world.pos)):
            lemma[c] = en.lemma[c].translate(table)
    else:
        d = _Draw(_rng(seed, "lexicon", code))
        cons, vows = SCRIPTS[script]
        affix = {}
        while len(set(affix.values())) < len(AFFIX_FEATS):
            affix = {f: d.choice(vows) + d.choice(cons) for f in AFFIX_FEATS}
        used = set()
        if en is not None and en.script == script:
            used = {f for fs in en.forms for f in fs.values()}
        first_name = n + len(FUNCTION)  # name parts come last (see build_world)
        # function words first (short forms), then content words, then names (so names change no other form)
        order = list(range(n, first_name)) + list(range(n)) + list(range(first_name, len(world.pos)))
        for c in order:
            if c in anchors:
                continue
            for attempt in itertools.count():
                if c >= first_name:
                    syl = 2 + (d.u() < 0.5) + attempt // 50
                elif c >= n:
                    syl = 1 + (attempt > 20)
                else:
                    syl = 1 + int(0.8 * math.log10(c + 2) + d.u()) + attempt // 50
                word = _word(d, script, syl)
                cand = _forms_for(world.pos[c], word, affix, True)
                if not (set(cand.values()) & used) and len(set(cand.values())) == len(cand):
                    break
            lemma[c] = word
            used.update(cand.values())
    for c in range(len(world.pos)):
        if c in anchors:
            lemma[c] = en.lemma[c]
            forms[c] = dict(en.forms[c]) if inflect else {f: en.lemma[c] for f in en.forms[c]}
        else:
            forms[c] = _forms_for(world.pos[c], lemma[c], affix, inflect)
    knobs = {**knobs, "_affix": affix}
    return Language(code, knobs, lemma, forms, anchors, tables)


def build(spec: dict | None, languages: list[str]) -> tuple[dict, World, dict[str, Language]]:
    """Resolve the spec, draw the world and realize every language (no files written)."""
    cfg = resolve_spec(spec, languages)
    world = build_world(cfg)
    langs: dict[str, Language] = {}
    for code in languages:
        langs[code] = build_language(world, cfg, code, langs.get("en"))
    return cfg, world, langs


# A token record: (key, concept, feature, upos, deprel, head key). Keys name latent nodes, so the same key
# in two languages is the same node: that is the gold word alignment.


def _np_tokens(lang: Language, np_, key: str, deprel: str, head: str) -> list[tuple]:
    noun, number, det, adjs = np_
    nk = key + "n"
    if det is None:
        return [(nk, noun, None, "PRON", deprel, head)]
    if det == ner.NAME:  # noun: the name's parts; the first heads the others
        return [(nk, noun[0], None, "PROPN", deprel, head)] + [
            (f"{nk}{k}", part, None, "PROPN", "flat", nk) for k, part in enumerate(noun[1:], start=1)]
    head_tok = (nk, noun, number, "NOUN", deprel, head)
    adj_toks = [(f"{key}a{j}", a, None, "ADJ", "amod", nk) for j, a in enumerate(adjs)]
    det_tok = (key + "d", det, None, "DET", "det", nk)
    if lang.knobs["adjective"] == "before":
        return [det_tok, *adj_toks, head_tok]
    return [det_tok, head_tok, *adj_toks]


def _clause_tokens(lang: Language, clause, i: int, cconj, deprel: str, head: str, neg_id: int) -> list[tuple]:
    verb, tense, neg, subj, obj, pps = clause
    vk = f"{i}v"
    slots = {"V": ([(f"{i}x", neg_id, None, "PART", "advmod", vk)] if neg else [])
                  + [(vk, verb, tense, "VERB", deprel, head)],
             "S": _np_tokens(lang, subj, f"{i}s", "nsubj", vk),
             "O": _np_tokens(lang, obj, f"{i}o", "obj", vk) if obj else []}
    obliques = []
    for j, (adp, np_) in enumerate(pps):
        toks = _np_tokens(lang, np_, f"{i}p{j}", "obl", vk)
        case = (f"{i}p{j}c", adp, None, "ADP", "case", f"{i}p{j}n")
        obliques += [case, *toks] if lang.knobs["adposition"] == "pre" else [*toks, case]
    out = [(f"{i}c", cconj, None, "CCONJ", "cc", vk)] if cconj is not None else []
    order = lang.knobs["order"]
    verb_final = order[2] == "V"
    for slot in order:
        if slot == "V" and verb_final:
            out += obliques
        out += slots[slot]
    if not verb_final:
        out += obliques
    return out


def realize(lang: Language, sentence, neg_id: int) -> list[tuple]:
    """Token records of a latent sentence in `lang`, in surface order."""
    out = []
    for i, (cconj, clause) in enumerate(sentence):
        out += _clause_tokens(lang, clause, i, cconj, "root" if i == 0 else "conj", "" if i == 0 else "0v", neg_id)
    return out


def surface(lang: Language, records: list[tuple]) -> list[str]:
    return [lang.forms[r[1]][r[2]] for r in records]


def conllu_block(lang: Language, records: list[tuple], sent_id: str, world: World) -> str:
    position = {r[0]: i + 1 for i, r in enumerate(records)}
    words = surface(lang, records)
    lines = [f"# sent_id = {sent_id}", f"# text = {' '.join(words)}"]
    for i, (r, form) in enumerate(zip(records, words), start=1):
        _, c, feat, upos, deprel, head = r
        if upos == "NOUN":
            feats = f"Number={feat}"
        elif upos == "VERB":
            feats = f"Tense={feat}"
        else:
            feats = FUNCTION[c - world.n_content][2] if c >= world.n_content else "_"
        lines.append("\t".join([str(i), form, lang.lemma[c], upos, "_", feats,
                                str(position.get(head, 0)), deprel, "_", "_"]))
    return "\n".join(lines) + "\n\n"


# --------------------------------------------------------------------------------------------------
# XNLI: hypotheses derived from the premise by operations whose label follows from the latent meaning.


def _modifiers(clause) -> list[tuple]:
    verb, tense, neg, subj, obj, pps = clause
    mods = [("adj", "subj", j) for j in range(len(subj[3]))]
    if obj:
        mods += [("adj", "obj", j) for j in range(len(obj[3]))] + [("obj",)]
    return mods + [("pp", j) for j in range(len(pps))]


def _drop(clause, mod):
    verb, tense, neg, subj, obj, pps = clause
    if mod[0] == "obj":
        return (verb, tense, neg, subj, None, pps)
    if mod[0] == "pp":
        return (verb, tense, neg, subj, obj, pps[:mod[1]] + pps[mod[1] + 1:])
    np_ = subj if mod[1] == "subj" else obj
    np_ = (*np_[:3], np_[3][:mod[2]] + np_[3][mod[2] + 1:])
    return (verb, tense, neg, np_, obj, pps) if mod[1] == "subj" else (verb, tense, neg, subj, np_, pps)


def _concepts(clause) -> set[int]:
    verb, _, _, subj, obj, pps = clause
    nps = [subj] + ([obj] if obj else []) + [np_ for _, np_ in pps]
    return {verb} | {np_[0] for np_ in nps} | {a for np_ in nps for a in np_[3]}


def _drop_many(d: _Draw, clause, k: int, allow_obj: bool = True):
    for _ in range(k):
        mods = [m for m in _modifiers(clause) if allow_obj or m[0] != "obj"]
        if not mods:
            break
        clause = _drop(clause, d.choice(mods))
    return clause


def xnli_pair(s: Sampler, label: str):
    """One latent (premise, hypothesis) pair with the given label.

    entailment: drop one or two modifiers (adjective, prepositional phrase or object);
    contradiction: negate the verb or replace it by its contrasting verb (optionally also drop an adjective
    or prepositional phrase); neutral: add an adjective or prepositional phrase with a concept absent from
    the premise (optionally also drop another modifier). Premises are affirmative single clauses.
    """
    d, w = s.d, s.w
    topic = int(d.u() * w.n_topics)
    premise = s.clause(topic, pron=False, neg=0.0)
    while not _modifiers(premise):
        premise = s.clause(topic, pron=False, neg=0.0)
    if label == "entailment":
        hyp = _drop_many(d, premise, 1 + (d.u() < 0.4))
    elif label == "contradiction":
        verb, tense, neg, subj, obj, pps = _drop_many(d, premise, int(d.u() < 0.5), allow_obj=False)
        if d.u() < 0.5 and verb in w.antonym:
            hyp = (w.antonym[verb], tense, neg, subj, obj, pps)
        else:
            hyp = (verb, tense, True, subj, obj, pps)
    else:
        base = _drop_many(d, premise, int(d.u() < 0.5))
        present = _concepts(premise)
        verb, tense, neg, subj, obj, pps = base
        for _ in range(100):
            if d.u() < 0.5:
                role = "obj" if obj and d.u() < 0.5 else "subj"
                np_ = obj if role == "obj" else subj
                adj = s.content("ADJ", topic)
                if adj in present:
                    continue
                np_ = (*np_[:3], np_[3] + (adj,))
                hyp = (verb, tense, neg, np_, obj, pps) if role == "subj" else (verb, tense, neg, subj, np_, pps)
            else:
                pp = s.prep_phrase(topic)
                if _concepts((verb, tense, neg, pp[1], None, ())) & present:
                    continue
                hyp = (verb, tense, neg, subj, obj, pps + (pp,))
            break
        else:  # pragma: no cover - a topic always has unused concepts at the sizes we validate
            raise RuntimeError("could not find a neutral addition")
    return ((None, premise),), ((None, hyp),)


# --------------------------------------------------------------------------------------------------
# Writing the canonical files


def _write_lines(path: Path, lines) -> int:
    n = 0
    with atomic_write(path) as handle:
        for line in lines:
            handle.write(line + "\n")
            n += 1
    return n


def _corpus(cfg: dict, world: World, lang: Language, path: Path, sentences: int, stream: str = "corpus",
            first_topic: int = 0) -> Counter:
    """Write a monolingual corpus of `sentences` to `path` from the random stream `stream` (documents draw their
    topic among topics first_topic..topics-1); return content-concept counts (for the dictionaries)."""
    s = Sampler(world, lang.tables, _rng(cfg["seed"], stream, lang.code))
    name_draw = _Draw(_rng(cfg["seed"], f"{stream}-names", lang.code))  # a stream of its own: the sentences stay
    lo, hi = cfg["document_length"]
    left, counts, docs = sentences, Counter(), []
    neg_id = world.fid["NOT"]
    while left > 0:
        size = min(left, lo + int(s.d.u() * (hi - lo + 1)))
        topic = first_topic + int(s.d.u() * (world.n_topics - first_topic))
        doc = []
        for _ in range(size):
            sentence = ner.add_names(name_draw, world.names, s.sentence(topic), cfg["name_rate"])
            records = realize(lang, sentence, neg_id)
            counts.update(r[1] for r in records if r[1] < world.n_content)
            doc.append(" ".join(surface(lang, records)))
        docs.append("\n".join(doc))
        left -= size
    with atomic_write(path) as handle:
        handle.write("\n\n".join(docs) + "\n")
    return counts


def domain_corpus(spec: dict, languages: list[str], code: str, path, sentences: int, topics_left_out: float) -> None:
    """Another domain's corpus of language `code` (Conneau et al.'s Wiki-CC, on synthetic data): the same language
    (lexicon, grammar, frequencies) in independent text whose documents never take their topic from the first
    `topics_left_out` of the topics, so its content words follow another distribution than the corpus's."""
    if not 0 <= topics_left_out < 1:
        raise ValueError(f"topics_left_out must be in [0, 1), not {topics_left_out}")
    cfg, world, langs = build(spec, languages)
    first = int(topics_left_out * world.n_topics)
    counts = _corpus(cfg, world, langs[code], Path(path), sentences, stream="domain", first_topic=first)
    logger.info("%s: %d sentences of another domain (topics %d..%d of %d), %d content concepts used", path,
                sentences, first, world.n_topics - 1, world.n_topics, len(counts))


def dictionaries(cfg: dict, world: World, en: Language, lang: Language, en_counts: Counter,
                 counts: Counter) -> dict[str, list[tuple[str, str]]]:
    """MUSE-style lemma pairs; ranks are English corpus-frequency ranks of content concepts."""
    ranked = sorted((c for c in en_counts if c < world.n_content), key=lambda c: (-en_counts[c], c))
    spec = cfg["dictionary"]
    out = {"full": [(en.lemma[c], lang.lemma[c]) for c in ranked if counts[c] > 0]}
    for split in ("train", "test"):
        lo, hi = spec[split]
        keep = [c for c in ranked[lo:hi] if counts[c] > 0
                and (split == "train" or spec["anchors_in_test"] or c not in lang.anchors)]
        out[split] = [(en.lemma[c], lang.lemma[c]) for c in keep]
    return out


def _latent_set(cfg: dict, world: World, purpose: str, n: int) -> list:
    s = Sampler(world, Tables(world, world.weight), _rng(cfg["seed"], purpose))
    return [s.sentence() for _ in range(n)]


def ner_set(cfg: dict, world: World, split: str, n: int) -> list:
    """n latent sentences of a WikiAnn split, each naming at least one entity (as WikiAnn's sentences do)."""
    d = _Draw(_rng(cfg["seed"], "ner-names", split))
    return [ner.add_names(d, world.names, s, cfg["name_rate"], at_least_one=True)
            for s in _latent_set(cfg, world, f"ner-{split}", n)]


def bucc_gold_count(n: int, rate: float) -> int:
    """Gold pairs hidden in a BUCC split of n sentences per side."""
    return round(n * rate)


def bucc_split(cfg: dict, world: World, en: Language, lang: Language, split: str) -> tuple[list, list, list]:
    """Latent sentences of one BUCC split's two comparable corpora (lang side, English side, in file order) and
    its gold pairs (lang index, English index), sorted.

    Why: BUCC 2018 hides a few translations (2-3% of a side) among non-parallel sentences of the same world,
    and mining must find them by similarity alone. A gold pair is one latent sentence realised on both sides;
    every other sentence is drawn anew, and rejected when its surface form in either language already occurs
    in the split, so no non-gold pair is a translation, not even one that surface forms cannot tell apart
    (singular and plural in a language without inflection)."""
    n = cfg["bucc_sentences"][split]
    n_gold = bucc_gold_count(n, cfg["bucc_gold_rate"])
    rng = _rng(cfg["seed"], "bucc", split, lang.code)
    s = Sampler(world, Tables(world, world.weight), rng)
    neg_id = world.fid["NOT"]
    seen: dict[str, set[str]] = {"en": set(), "xx": set()}
    latent = []  # n_gold shared, then n - n_gold of the lang side only, then n - n_gold of the English side only
    while len(latent) < 2 * n - n_gold:
        sentence = s.sentence()
        texts = {"en": " ".join(surface(en, realize(en, sentence, neg_id))),
                 "xx": " ".join(surface(lang, realize(lang, sentence, neg_id)))}
        if any(texts[side] in seen[side] for side in texts):
            continue
        for side, text in texts.items():
            seen[side].add(text)
        latent.append(sentence)
    sides = (latent[:n], latent[:n_gold] + latent[n:])
    orders = [rng.permutation(n) for _ in sides]  # order[position] = index into the side
    xx, en_side = ([side[i] for i in order] for side, order in zip(sides, orders))
    where = [np.argsort(order) for order in orders]  # index -> position
    gold = sorted((int(where[0][k]), int(where[1][k])) for k in range(n_gold))
    return xx, en_side, gold


def _bucc_id(code: str, position: int) -> str:
    return f"{code}-{position + 1:09d}"


def generate(spec: dict, languages: list[str], out_dir: Path) -> None:
    """Write every canonical file (corpus, dict, parallel, ud, tatoeba, bucc, xnli, wikiann) for `languages` under
    out_dir."""
    started = time.perf_counter()
    cfg, world, langs = build(spec, languages)
    out = Path(out_dir)
    en = langs["en"]
    neg_id = world.fid["NOT"]
    counts = {}
    for code, lang in langs.items():
        counts[code] = _corpus(cfg, world, lang, out / "corpus" / f"{code}.txt", cfg["sentences"])
        logger.info("corpus/%s.txt: %d sentences, %d of %d content concepts used (%s script, %.0f%% anchors)",
                    code, cfg["sentences"], len(counts[code]), world.n_content, lang.script,
                    100 * len(lang.anchors) / world.n_content)

    for code in languages[1:]:
        sizes = {}
        for split, pairs in dictionaries(cfg, world, en, langs[code], counts["en"], counts[code]).items():
            if not pairs:
                _fail(f"dictionary.{split}", f"no en-{code} pair in this rank range: only "
                      f"{len(counts['en'])} content concepts occur in the English corpus")
            sizes[split] = _write_lines(out / "dict" / f"en-{code}.{split}.txt", (f"{a} {b}" for a, b in pairs))
        logger.info("dict/en-%s.*.txt: %s pairs", code, sizes)

    parallel = _latent_set(cfg, world, "parallel", cfg["parallel_sentences"])
    tatoeba = _latent_set(cfg, world, "tatoeba", cfg["tatoeba_sentences"])
    en_par = [realize(en, s, neg_id) for s in parallel]
    for code in languages[1:]:
        lang = langs[code]
        recs = [realize(lang, s, neg_id) for s in parallel]
        _write_lines(out / "parallel" / f"en-{code}.en", (" ".join(surface(en, r)) for r in en_par))
        _write_lines(out / "parallel" / f"en-{code}.{code}", (" ".join(surface(lang, r)) for r in recs))
        _write_lines(out / "parallel" / f"en-{code}.align", (_pharaoh(a, b) for a, b in zip(en_par, recs)))
        _write_lines(out / "tatoeba" / f"tatoeba.{code}-eng.{code}",
                     (" ".join(surface(lang, realize(lang, s, neg_id))) for s in tatoeba))
        _write_lines(out / "tatoeba" / f"tatoeba.{code}-eng.eng",
                     (" ".join(surface(en, realize(en, s, neg_id))) for s in tatoeba))
    logger.info("parallel/en-*: %d aligned pairs; tatoeba: %d pairs per language", len(parallel), len(tatoeba))

    for code in languages[1:]:
        lang = langs[code]
        for split in cfg["bucc_sentences"]:
            xx, en_side, gold = bucc_split(cfg, world, en, lang, split)
            stem = out / "bucc" / f"{code}-en.{split}"
            for side, sentences, ext in ((lang, xx, code), (en, en_side, "en")):
                texts = (" ".join(surface(side, realize(side, s, neg_id))) for s in sentences)
                _write_lines(Path(f"{stem}.{ext}"), (f"{_bucc_id(ext, k)}\t{t}" for k, t in enumerate(texts)))
            _write_lines(Path(f"{stem}.gold"), (f"{_bucc_id(code, i)}\t{_bucc_id('en', j)}" for i, j in gold))
    logger.info("bucc/{lang}-en.{split}.*: %s sentences per side, %s gold pairs", dict(cfg["bucc_sentences"]),
                {split: bucc_gold_count(n, cfg["bucc_gold_rate"]) for split, n in cfg["bucc_sentences"].items()})

    for split, n in cfg["ud_sentences"].items():
        latent = _latent_set(cfg, world, f"ud-{split}", n)
        for code, lang in langs.items():
            with atomic_write(out / "ud" / f"{code}.{split}.conllu") as handle:
                for k, s in enumerate(latent, start=1):
                    handle.write(conllu_block(lang, realize(lang, s, neg_id), f"{split}-{k}", world))
    logger.info("ud/{lang}.{split}.conllu: %s sentences (parallel across languages)", dict(cfg["ud_sentences"]))

    for split, n in cfg["xnli_pairs"].items():
        pairs = xnli_pairs(cfg, world, split, n)
        for code, lang in langs.items():
            if split == "train" and code != "en":
                continue
            _write_lines(out / "xnli" / f"{split}-{code}.tsv",
                         (" ".join(surface(lang, realize(lang, p, neg_id))) + "\t"
                          + " ".join(surface(lang, realize(lang, h, neg_id))) + "\t" + label
                          for p, h, label in pairs))
    logger.info("xnli: %s pairs (train English only), labels balanced", dict(cfg["xnli_pairs"]))

    for split, n in cfg["ner_sentences"].items():
        latent = ner_set(cfg, world, split, n)
        for code, lang in langs.items():
            records = (realize(lang, s, neg_id) for s in latent)
            _write_lines(out / "wikiann" / f"{code}.{split}.tsv", (
                line for r in records for line in ner.wikiann_lines(surface(lang, r), ner.iob2(r, world.names))))
    logger.info("wikiann/{lang}.{split}.tsv: %s sentences (parallel across languages), %d entities per type",
                dict(cfg["ner_sentences"]), cfg["named_entities"])
    logger.info("synthetic data for %s written to %s in %.1f s", ",".join(languages), out,
                time.perf_counter() - started)


def xnli_pairs(cfg: dict, world: World, split: str, n: int) -> list[tuple]:
    """n latent (premise, hypothesis, label) triples, labels balanced (counts differ by at most one)."""
    rng = _rng(cfg["seed"], "xnli", split)
    labels = [LABELS[i % 3] for i in range(n)]
    labels = [labels[i] for i in rng.permutation(n)]
    s = Sampler(world, Tables(world, world.weight), rng)
    return [(*xnli_pair(s, label), label) for label in labels]


def _pharaoh(src: list[tuple], tgt: list[tuple]) -> str:
    position = {r[0]: j for j, r in enumerate(tgt)}
    return " ".join(f"{i}-{position[r[0]]}" for i, r in enumerate(src) if r[0] in position)
