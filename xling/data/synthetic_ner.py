"""Named entities of the synthetic world, for WikiAnn-style NER data (wikiann/{lang}.{split}.tsv).

Why: zero-shot NER transfer needs names whose type a model can learn in English and find again in another
language. The world gets `named_entities` entities per type (PER, ORG, LOC), each a name of one to three
name-part concepts of its own (UPOS PROPN; "flat" links the parts, as UD does). A language writes every part in
its own script like any other word (names are never anchors, so they share no string with English unless the
language is a copy of it). A noun phrase in a slot that can hold a name becomes one with probability
`name_rate`, in the corpora (so a model meets the names while pretraining) and in the NER sentences; the slot
decides the type, so the type follows from the meaning: the noun of a locative adposition phrase (IN, ON,
FROM, TO) is a location, of WITH a person, of FOR an organisation; subjects and objects are people or
organisations. Entity frequencies are Zipfian within a type, like concept frequencies.

This module knows latent sentences only as tuples (see xling.data.synthetic); random draws come from the
caller's `_Draw`, so every stream stays the caller's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xling.data.formats import NER_TYPES

#: the determiner slot of a latent noun phrase that is a name: (name parts, None, NAME, ())
NAME = "NAME"
#: probabilities of names of 1, 2 and 3 parts per type
NAME_LENGTHS = {"PER": (0.3, 0.7, 0.0), "ORG": (0.4, 0.4, 0.2), "LOC": (0.6, 0.4, 0.0)}
#: entity types a subject or object may name, with their probabilities
ARGUMENT_TYPES = {"subj": (("PER", 0.6), ("ORG", 0.4)), "obj": (("PER", 0.4), ("ORG", 0.6))}
#: the type the noun of an adposition phrase names, by adposition (function concept name)
ADPOSITION_TYPES = {"IN": "LOC", "ON": "LOC", "FROM": "LOC", "TO": "LOC", "WITH": "PER", "FOR": "ORG"}


@dataclass
class Names:
    """The world's entities: part concept -> type, and per type the names (tuples of parts) by frequency rank."""

    part_type: dict[int, str]
    entities: dict[str, list[tuple[int, ...]]]
    cdf: dict[str, list[float]]
    slot_types: dict  # "subj", "obj" or an adposition's concept id -> ((type, probability), ...)


def draw_names(d, per_type: int, first_id: int, zipf: float, adpositions: dict[str, int]) -> Names:
    """`per_type` entities of each type, their parts numbered from `first_id` on (type by type)."""
    part_type, entities, cdf = {}, {}, {}
    next_id = first_id
    for etype in NER_TYPES:
        names = []
        for _ in range(per_type):
            length = 1 + d.categorical(NAME_LENGTHS[etype])
            names.append(tuple(range(next_id, next_id + length)))
            part_type.update(dict.fromkeys(names[-1], etype))
            next_id += length
        entities[etype] = names
        cdf[etype] = list(itertools.accumulate(1.0 / (r + 1) ** zipf for r in range(per_type)))
    slots = {**ARGUMENT_TYPES, **{adpositions[name]: ((etype, 1.0),) for name, etype in ADPOSITION_TYPES.items()}}
    return Names(part_type, entities, cdf, slots)


def _name(d, names: Names, slot) -> tuple:
    options = names.slot_types[slot]
    etype = options[d.categorical(tuple(p for _, p in options))][0]
    return (d.pick(names.cdf[etype], names.entities[etype]), None, NAME, ())


def add_names(d, names: Names, sentence, rate: float, at_least_one: bool = False):
    """The latent sentence with each noun phrase in a name slot made a name with probability `rate`;
    `at_least_one`: if none was, one slot drawn uniformly is (every clause has a subject)."""
    slots = [
        (i, role)
        for i, (_, (_, _, _, _, obj, pps)) in enumerate(sentence)
        for role in [("subj",)]
        + ([("obj",)] if obj else [])
        + [("pp", j) for j, (adp, _) in enumerate(pps) if adp in names.slot_types]
    ]
    chosen = [slot for slot in slots if d.u() < rate]
    if at_least_one and not chosen:
        chosen = [d.choice(slots)]
    clauses = [list(clause) for _, clause in sentence]  # verb, tense, neg, subj, obj, pps
    for i, role in chosen:
        clause = clauses[i]
        if role[0] == "subj":
            clause[3] = _name(d, names, "subj")
        elif role[0] == "obj":
            clause[4] = _name(d, names, "obj")
        else:
            j, adp = role[1], clause[5][role[1]][0]
            clause[5] = clause[5][:j] + ((adp, _name(d, names, adp)),) + clause[5][j + 1 :]
    return tuple((cconj, tuple(clause)) for (cconj, _), clause in zip(sentence, clauses, strict=True))


def iob2(records: list[tuple], names: Names) -> list[str]:
    """IOB2 tag of each token record (key, concept, feature, upos, deprel, head): a name's first part B-,
    its "flat" parts I-."""
    tags = []
    for _, concept, _, _, deprel, _ in records:
        etype = names.part_type.get(concept)
        tags.append("O" if etype is None else f"{'I' if deprel == 'flat' else 'B'}-{etype}")
    return tags


def wikiann_lines(tokens: list[str], tags: list[str]) -> list[str]:
    """One sentence in the PAN-X layout: `token<TAB>tag` lines and the blank line that ends it."""
    return [f"{token}\t{tag}" for token, tag in zip(tokens, tags, strict=True)] + [""]
