"""The synthetic languages: each one's lexicon and word-order knobs (`build_language`, `build`), and the
token records that write a latent sentence in a language (surface forms, CoNLL-U).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from xling.data import synthetic_ner as ner
from xling.data.synthetic.spec import AFFIX_FEATS, FUNCTION, NOUN_FEATS, SCRIPTS, VERB_FEATS, _Draw, _rng, resolve_spec
from xling.data.synthetic.world import Tables, World, build_world


@dataclass
class Language:
    """One realization of the world: a lexicon (forms per concept and feature) and word-order knobs."""

    code: str
    knobs: dict
    lemma: list[str]
    forms: list[dict]  # concept -> {feature or None: surface form}
    anchors: frozenset  # content concepts written exactly as in English
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
    anchors = frozenset(world.anchor_order[: round(knobs["anchors"] * n)]) if code != "en" else frozenset()
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
            (f"{nk}{k}", part, None, "PROPN", "flat", nk) for k, part in enumerate(noun[1:], start=1)
        ]
    head_tok = (nk, noun, number, "NOUN", deprel, head)
    adj_toks = [(f"{key}a{j}", a, None, "ADJ", "amod", nk) for j, a in enumerate(adjs)]
    det_tok = (key + "d", det, None, "DET", "det", nk)
    if lang.knobs["adjective"] == "before":
        return [det_tok, *adj_toks, head_tok]
    return [det_tok, head_tok, *adj_toks]


def _clause_tokens(lang: Language, clause, i: int, cconj, deprel: str, head: str, neg_id: int) -> list[tuple]:
    verb, tense, neg, subj, obj, pps = clause
    vk = f"{i}v"
    slots = {
        "V": ([(f"{i}x", neg_id, None, "PART", "advmod", vk)] if neg else [])
        + [(vk, verb, tense, "VERB", deprel, head)],
        "S": _np_tokens(lang, subj, f"{i}s", "nsubj", vk),
        "O": _np_tokens(lang, obj, f"{i}o", "obj", vk) if obj else [],
    }
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
    for i, (r, form) in enumerate(zip(records, words, strict=True), start=1):
        _, c, feat, upos, deprel, head = r
        if upos == "NOUN":
            feats = f"Number={feat}"
        elif upos == "VERB":
            feats = f"Tense={feat}"
        else:
            feats = FUNCTION[c - world.n_content][2] if c >= world.n_content else "_"
        lines.append(
            "\t".join([str(i), form, lang.lemma[c], upos, "_", feats, str(position.get(head, 0)), deprel, "_", "_"])
        )
    return "\n".join(lines) + "\n\n"
