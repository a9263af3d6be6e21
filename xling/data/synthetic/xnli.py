"""XNLI on the latent level: a hypothesis derived from the premise by an operation whose label follows from the
latent meaning (drop a modifier: entailment; negate or swap the verb: contradiction; add one: neutral).
"""

from __future__ import annotations

from xling.data.synthetic.spec import _Draw
from xling.data.synthetic.world import Sampler


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
        return (verb, tense, neg, subj, obj, pps[: mod[1]] + pps[mod[1] + 1 :])
    np_ = subj if mod[1] == "subj" else obj
    np_ = (*np_[:3], np_[3][: mod[2]] + np_[3][mod[2] + 1 :])
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
