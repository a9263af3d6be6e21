"""The latent world every synthetic language realizes (concepts, topics, selectional preferences: `World`),
its per-topic sampling tables, and the sampler of latent sentences.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from xling.data import synthetic_ner as ner
from xling.data.synthetic.spec import FUNCTION, NOUN_FEATS, POS_FRACTIONS, VERB_FEATS, _Draw, _rng


@dataclass
class World:
    """Concepts, topics and preferences shared by every language (drawn from the 'world' stream)."""

    n_content: int
    n_topics: int
    topic_weight: float
    local_weight: float
    pos: list[str]  # per concept id (content ids first, then function ids)
    weight: np.ndarray  # Zipfian base weight per content concept (id = frequency rank)
    members: dict[str, list[int]]  # content POS -> concept ids
    home: np.ndarray  # home topic per content concept
    transitive: dict[int, bool]
    subj_pref: dict[int, list[int]]
    obj_pref: dict[int, list[int]]
    adj_pref: dict[int, list[int]]
    antonym: dict[int, int]  # verb -> contrasting verb (symmetric), for XNLI contradictions
    anchor_order: list[int]  # content ids; a language with anchors=a shares the first round(a*n)
    fid: dict[str, int]  # function concept name -> id
    names: ner.Names  # named entities; their parts are the last concept ids (PROPN)

    def ids(self, upos: str) -> list[int]:
        return [c for c in range(self.n_content, len(self.pos)) if self.pos[c] == upos]


def build_world(cfg: dict) -> World:
    """Draw the latent world from cfg (a resolved spec); depends on seed and world knobs only."""
    rng = _rng(cfg["seed"], "world")
    n, n_topics = cfg["concepts"], cfg["topics"]
    weight = 1.0 / np.arange(1, n + 1) ** cfg["zipf"]
    counts = [round(n * f) for _, f in POS_FRACTIONS]
    counts[0] = n - sum(counts[1:])
    pos_of = np.array(sum(([p] * k for (p, _), k in zip(POS_FRACTIONS, counts, strict=True)), []))
    pos_of = list(pos_of[rng.permutation(n)])
    members = {p: [c for c in range(n) if pos_of[c] == p] for p, _ in POS_FRACTIONS}
    # Balanced home topics: within a POS, each block of n_topics consecutive ranks covers every topic once.
    home = np.zeros(n, dtype=int)
    for ids in members.values():
        for start in range(0, len(ids), n_topics):
            block = ids[start : start + n_topics]
            home[block] = rng.permutation(n_topics)[: len(block)]

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
        for a, b in zip(verbs[0::2], verbs[1::2], strict=False):
            antonym[a], antonym[b] = b, a
    anchor_order = [int(c) for c in rng.permutation(n)]
    pos_all = pos_of + [upos for _, upos, _ in FUNCTION]
    fid = {name: n + i for i, (name, _, _) in enumerate(FUNCTION)}
    names = ner.draw_names(_Draw(_rng(cfg["seed"], "names")), cfg["named_entities"], len(pos_all), cfg["zipf"], fid)
    pos_all += ["PROPN"] * len(names.part_type)
    return World(
        n,
        n_topics,
        cfg["topic_weight"],
        cfg["local_weight"],
        [str(p) for p in pos_all],
        weight,
        members,
        home,
        transitive,
        subj_pref,
        obj_pref,
        adj_pref,
        antonym,
        anchor_order,
        fid,
        names,
    )


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
