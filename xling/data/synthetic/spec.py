"""The knobs of the synthetic languages: the scripts, word orders and function concepts, the spec's defaults
and its validation (`resolve_spec`), and the seeded random draws every other part takes its randomness from.
"""

from __future__ import annotations

import bisect
import copy
import zlib

import numpy as np

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
    "dictionary": {"train": [0, 300], "test": [300, 450], "anchors_in_test": False, "function_words": False},
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
    ("DEF", "DET", "Definite=Def|PronType=Art"),
    ("INDEF", "DET", "Definite=Ind|PronType=Art"),
    ("DEM", "DET", "PronType=Dem"),
    ("IN", "ADP", "_"),
    ("ON", "ADP", "_"),
    ("WITH", "ADP", "_"),
    ("FROM", "ADP", "_"),
    ("TO", "ADP", "_"),
    ("FOR", "ADP", "_"),
    ("I", "PRON", "Number=Sing|Person=1|PronType=Prs"),
    ("YOU", "PRON", "Person=2|PronType=Prs"),
    ("HE", "PRON", "Number=Sing|Person=3|PronType=Prs"),
    ("SHE", "PRON", "Number=Sing|Person=3|PronType=Prs"),
    ("WE", "PRON", "Number=Plur|Person=1|PronType=Prs"),
    ("THEY", "PRON", "Number=Plur|Person=3|PronType=Prs"),
    ("NOT", "PART", "Polarity=Neg"),
    ("AND", "CCONJ", "_"),
    ("BUT", "CCONJ", "_"),
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
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value < low
        or (high is not None and value > high)
    ):
        _fail(key, f"expected a number in [{low}, {high if high is not None else 'inf'}], got {value!r}")
    return float(value)


def _check_range(value, key: str) -> tuple[int, int]:
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 0 <= value[0] < value[1]
    ):
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
    if not (
        isinstance(dl, (list, tuple)) and len(dl) == 2 and all(isinstance(v, int) for v in dl) and 1 <= dl[0] <= dl[1]
    ):
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
    for flag in ("anchors_in_test", "function_words"):
        if not isinstance(out["dictionary"][flag], bool):
            _fail(f"dictionary.{flag}", "expected true or false")
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


def bucc_gold_count(n: int, rate: float) -> int:
    """Gold pairs hidden in a BUCC split of n sentences per side."""
    return round(n * rate)
