"""The synthetic-language generator: determinism, canonical formats, and the latent properties it promises."""

from collections import Counter
from pathlib import Path

import pytest

from xling.data import formats

from xling.data import synthetic
from xling.data import synthetic_ner as ner

LANGS = ["en", "xa", "xb", "xe", "xf"]
SPEC = {
    "seed": 7,
    "sentences": 1500,
    "document_length": [2, 6],
    "concepts": 200,
    "topics": 10,
    "dictionary": {"train": [0, 100], "test": [100, 150]},
    "parallel_sentences": 150,
    "ud_sentences": {"train": 40, "dev": 20, "test": 20},
    "tatoeba_sentences": 60,
    "bucc_sentences": {"dev": 120, "test": 200},
    "xnli_pairs": {"train": 300, "dev": 90, "test": 91},
    "ner_sentences": {"train": 60, "dev": 30, "test": 31},
    "languages": {
        "xa": {"script": "cyrillic", "anchors": 0.2, "order": "SOV", "skew": 0.5},
        "xb": {"script": "greek", "anchors": 0.1, "adjective": "after", "inflection": False},
        "xe": {"copy_of": "en"},
        "xf": {"copy_of": "en", "script": "armenian"},
    },
}


def _generate(out: Path, spec=SPEC, langs=LANGS) -> Path:
    synthetic.generate(spec, langs, out)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return _generate(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="module")
def built():
    cfg, world, langs = synthetic.build(SPEC, LANGS)
    return cfg, world, langs


def _tokens(path: Path) -> list[str]:
    return [t for doc in formats.read_corpus(path) for s in doc for t in s.split()]


def test_same_seed_same_bytes_other_seed_differs(data, tmp_path):
    again = _files(_generate(tmp_path / "again"))
    assert again == _files(data)
    other = _files(_generate(tmp_path / "other", {**SPEC, "seed": 8}))
    assert other.keys() == again.keys()
    assert other["corpus/xa.txt"] != again["corpus/xa.txt"]
    assert other["bucc/xa-en.test.xa"] != again["bucc/xa-en.test.xa"]
    assert other["wikiann/xa.test.tsv"] != again["wikiann/xa.test.tsv"]


def test_adding_a_language_leaves_the_others_unchanged(data, tmp_path):
    fewer = _files(_generate(tmp_path / "fewer", SPEC, ["en", "xa"]))
    full = _files(data)
    for name in (
        "corpus/en.txt",
        "corpus/xa.txt",
        "dict/en-xa.test.txt",
        "parallel/en-xa.align",
        "ud/xa.dev.conllu",
        "xnli/test-xa.tsv",
        "bucc/xa-en.dev.xa",
        "bucc/xa-en.test.gold",
        "wikiann/en.train.tsv",
        "wikiann/xa.dev.tsv",
    ):
        assert fewer[name] == full[name], name


def test_every_canonical_file_parses(data):
    lo, hi = SPEC["document_length"]
    for lang in LANGS:
        docs = formats.read_corpus(data / "corpus" / f"{lang}.txt")
        assert sum(map(len, docs)) == SPEC["sentences"]
        assert all(lo <= len(d) <= hi for d in docs[:-1]) and 1 <= len(docs[-1]) <= hi
        for split, n in SPEC["ud_sentences"].items():
            sents = formats.read_conllu(data / "ud" / f"{lang}.{split}.conllu")
            assert len(sents) == n
            for sent in sents:
                heads = [tok["head"] for tok in sent]
                assert heads.count(0) == 1 and all(0 <= h <= len(sent) for h in heads)
                assert all(tok["upos"] and tok["deprel"] for tok in sent)
        for split in ("dev", "test"):
            assert len(formats.read_xnli(data / "xnli" / f"{split}-{lang}.tsv")) == SPEC["xnli_pairs"][split]
    assert len(formats.read_xnli(data / "xnli" / "train-en.tsv")) == SPEC["xnli_pairs"]["train"]
    assert not (data / "xnli" / "train-xa.tsv").exists()
    for lang in LANGS[1:]:
        for split in ("train", "test", "full"):
            assert formats.read_dictionary(data / "dict" / f"en-{lang}.{split}.txt")
        pairs = formats.read_parallel(data / "parallel" / f"en-{lang}.en", data / "parallel" / f"en-{lang}.{lang}")
        assert len(pairs) == SPEC["parallel_sentences"]
        assert len(formats.read_alignments(data / "parallel" / f"en-{lang}.align")) == len(pairs)
        tatoeba = formats.read_tatoeba(
            data / "tatoeba" / f"tatoeba.{lang}-eng.{lang}", data / "tatoeba" / f"tatoeba.{lang}-eng.eng"
        )
        assert len(tatoeba) == SPEC["tatoeba_sentences"]
        for split, n in SPEC["bucc_sentences"].items():
            stem = data / "bucc" / f"{lang}-en.{split}"
            src, en, gold = formats.read_bucc(f"{stem}.{lang}", f"{stem}.en", f"{stem}.gold")
            # BUCC ids: language prefix, 9-digit line number from 1 (upstream's own checks accept them)
            assert list(src) == [f"{lang}-{k:09d}" for k in range(1, n + 1)]
            assert list(en) == [f"en-{k:09d}" for k in range(1, n + 1)]
            assert gold and all(src.values()) and all(en.values())


def test_alignments_link_tokens_of_the_same_concept(data, built):
    _, _, langs = built
    en_parse = langs["en"].concept_of()
    for lang in LANGS[1:]:
        parse = langs[lang].concept_of()
        pairs = formats.read_parallel(data / "parallel" / f"en-{lang}.en", data / "parallel" / f"en-{lang}.{lang}")
        links = formats.read_alignments(data / "parallel" / f"en-{lang}.align")
        for (src, tgt), sent_links in zip(pairs, links, strict=True):
            src, tgt = src.split(), tgt.split()
            # every token is a latent node realised once in each language: a bijection
            assert sorted(i for i, _ in sent_links) == list(range(len(src)))
            assert sorted(j for _, j in sent_links) == list(range(len(tgt)))
            for i, j in sent_links:
                assert en_parse[src[i]][0] == parse[tgt[j]][0]


def test_scripts_are_disjoint_outside_anchors(data, built):
    _, _, langs = built
    en_forms = {f for fs in langs["en"].forms for f in fs.values()}
    letters = {name: set(c + v) for name, (c, v) in synthetic.SCRIPTS.items()}
    chars = {}
    for lang in ("en", "xa", "xb", "xf"):
        native = [t for t in set(_tokens(data / "corpus" / f"{lang}.txt")) if lang == "en" or t not in en_forms]
        chars[lang] = set("".join(native))
        assert chars[lang] <= letters[langs[lang].script], lang
    for a, b in (("en", "xa"), ("en", "xb"), ("xa", "xb"), ("en", "xf")):
        assert not chars[a] & chars[b], (a, b)


def test_anchor_fraction_and_shared_vocabulary(data, built):
    _, world, langs = built
    en_types = set(_tokens(data / "corpus" / "en.txt"))
    for lang, fraction in (("xa", 0.2), ("xb", 0.1)):
        anchors = langs[lang].anchors
        assert len(anchors) == round(fraction * world.n_content)
        assert all(langs[lang].lemma[c] == langs["en"].lemma[c] for c in anchors)
        anchor_forms = {f for c in anchors for f in langs[lang].forms[c].values()}
        shared = en_types & set(_tokens(data / "corpus" / f"{lang}.txt"))
        assert shared and shared <= anchor_forms
        full = formats.read_dictionary(data / "dict" / f"en-{lang}.full.txt")
        identical = sum(a == b for a, b in full) / len(full)
        assert abs(identical - fraction) < 0.06, (lang, identical)
    assert synthetic.build({**SPEC, "languages": {"xa": {"anchors": 0.0}}}, ["en", "xa"])[2]["xa"].anchors == set()


def test_copy_of_english(data, built):
    _, _, langs = built
    assert langs["xe"].forms == langs["en"].forms
    en_corpus = (data / "corpus" / "en.txt").read_text()
    copy_corpus = (data / "corpus" / "xe.txt").read_text()
    assert copy_corpus != en_corpus  # independently sampled documents
    en_types = set(en_corpus.split())
    copy_types = set(copy_corpus.split())
    assert len(en_types & copy_types) > 0.8 * len(en_types)
    # a copy in another script is a letter-for-letter transliteration (K et al.'s Fake-English)
    table = str.maketrans("".join(synthetic.SCRIPTS["latin"]), "".join(synthetic.SCRIPTS["armenian"]))
    assert langs["xf"].lemma == [w.translate(table) for w in langs["en"].lemma]
    assert langs["xf"].knobs["order"] == langs["en"].knobs["order"]


def test_dictionary_split_by_english_frequency_rank(data, built):
    _, world, langs = built
    en_parse = langs["en"].concept_of()
    counts = Counter(en_parse[t][0] for t in _tokens(data / "corpus" / "en.txt"))
    ranked = sorted((c for c in counts if c < world.n_content), key=lambda c: (-counts[c], c))
    for lang in ("xa", "xb"):
        occurs = {langs[lang].concept_of()[t][0] for t in _tokens(data / "corpus" / f"{lang}.txt")}
        read = {s: formats.read_dictionary(data / "dict" / f"en-{lang}.{s}.txt") for s in ("train", "test", "full")}
        expect_train = [c for c in ranked[0:100] if c in occurs]
        expect_test = [c for c in ranked[100:150] if c in occurs and c not in langs[lang].anchors]
        assert read["train"] == [(langs["en"].lemma[c], langs[lang].lemma[c]) for c in expect_train]
        assert read["test"] == [(langs["en"].lemma[c], langs[lang].lemma[c]) for c in expect_test]
        assert not {a for a, _ in read["train"]} & {a for a, _ in read["test"]}
        assert set(read["train"]) | set(read["test"]) <= set(read["full"])
        assert len(read["test"]) > 20


def test_lemma_is_the_most_frequent_form(data, built):
    _, world, langs = built
    for lang in ("en", "xa"):
        parse = langs[lang].concept_of()
        forms = Counter(_tokens(data / "corpus" / f"{lang}.txt"))
        per_concept: dict[int, Counter] = {}
        for form, n in forms.items():
            per_concept.setdefault(parse[form][0], Counter())[form] = n
        checked = 0
        for c, counter in per_concept.items():
            if c < world.n_content and sum(counter.values()) >= 50 and len(counter) > 1:
                assert counter.most_common(1)[0][0] == langs[lang].lemma[c], (lang, counter)
                checked += 1
        assert checked > 10


def test_word_order_knobs(data):
    en, xa, xb = (formats.read_conllu(data / "ud" / f"{lang}.train.conllu") for lang in ("en", "xa", "xb"))
    for sent_en, sent_xa, sent_xb in zip(en, xa, xb, strict=True):
        if any(tok["deprel"] == "conj" for tok in sent_en):
            continue
        root = next(tok["id"] for tok in sent_xa if tok["head"] == 0)
        assert root == len(sent_xa)  # SOV: verb final
        assert all(tok["id"] > tok["head"] for tok in sent_xa if tok["deprel"] == "case")  # postpositions
        root = next(tok["id"] for tok in sent_en if tok["head"] == 0)
        assert all(tok["id"] < root for tok in sent_en if tok["deprel"] == "nsubj")
        assert all(tok["id"] > root for tok in sent_en if tok["deprel"] == "obj")
        assert all(tok["id"] > tok["head"] for tok in sent_xb if tok["deprel"] == "amod")  # adjective after


def test_xnli_labels_balanced_and_follow_latent_rules(data, built):
    _, world, langs = built
    parse = langs["en"].concept_of()
    neg = world.fid["NOT"]
    for split in SPEC["xnli_pairs"]:  # their counts: test_every_canonical_file_parses
        rows = formats.read_xnli(data / "xnli" / f"{split}-en.tsv")
        labels = Counter(label for _, _, label in rows)
        assert max(labels.values()) - min(labels.values()) <= 1 and len(labels) == 3
        for premise, hypothesis, label in rows:
            p, h = premise.split(), hypothesis.split()
            p_verb = next(parse[t][0] for t in p if world.pos[parse[t][0]] == "VERB")
            h_verb = next(parse[t][0] for t in h if world.pos[parse[t][0]] == "VERB")
            negated = any(parse[t][0] == neg for t in h)
            assert not any(parse[t][0] == neg for t in p)
            contradiction = negated or h_verb == world.antonym.get(p_verb)
            new = Counter(h) - Counter(p)
            if label == "contradiction":
                assert contradiction
            elif label == "entailment":
                assert not contradiction and not new and len(h) < len(p)
            else:
                assert not contradiction and any(world.pos[parse[t][0]] in ("NOUN", "ADJ") for t in new)
        if split != "train":
            other = formats.read_xnli(data / "xnli" / f"{split}-xa.tsv")
            assert [r[2] for r in other] == [r[2] for r in rows]


def _spans(tags: list[str]) -> list[tuple[str, int, int]]:
    """(type, start, end) of each entity of a valid IOB2 sequence."""
    spans = []
    for i, tag in enumerate(tags):
        if tag.startswith("B-"):
            spans.append((tag[2:], i, i + 1))
        elif tag.startswith("I-"):
            spans[-1] = (*spans[-1][:2], i + 1)
    return spans


def test_wikiann_spans_are_valid_iob2_and_the_same_entities_in_every_language(data, built):
    _, world, langs = built
    parses = {lang: langs[lang].concept_of() for lang in LANGS}
    for split, n in SPEC["ner_sentences"].items():
        files = {lang: formats.read_wikiann(data / "wikiann" / f"{lang}.{split}.tsv") for lang in LANGS}
        entities = {}
        for lang, sentences in files.items():
            assert len(sentences) == n
            entities[lang] = []
            for tokens, tags in sentences:
                for i, tag in enumerate(tags):  # IOB2: an I- continues an entity of its own type
                    assert tag == "O" or tag[0] == "B" or (i and tags[i - 1][2:] == tag[2:]), (lang, tags)
                spans = _spans(tags)
                assert spans, (lang, tokens)  # every sentence names an entity, as WikiAnn's do
                # each span is one whole entity of the world, of the type it is tagged with
                found = []
                for etype, start, end in spans:
                    parts = tuple(parses[lang][t][0] for t in tokens[start:end])
                    assert parts in world.names.entities[etype], (lang, tokens[start:end], etype)
                    found.append((etype, parts))
                # no name part outside a span
                assert all(
                    parses[lang][t][0] not in world.names.part_type
                    for t, tag in zip(tokens, tags, strict=True)
                    if tag == "O"
                )
                entities[lang].append(sorted(found))
        for lang in LANGS[1:]:  # the same latent sentences: the same entities, whatever the word order
            assert entities[lang] == entities["en"], lang
    tags = Counter(
        tag for _, sentence_tags in formats.read_wikiann(data / "wikiann" / "en.train.tsv") for tag in sentence_tags
    )
    assert all(tags[f"{p}-{t}"] for p in "BI" for t in ("PER", "ORG", "LOC"))  # multi-token names of every type


def test_entity_type_follows_from_the_slot(built):
    cfg, world, _ = built
    adposition = {world.fid[name]: etype for name, etype in ner.ADPOSITION_TYPES.items()}
    seen = Counter()
    for sentence in synthetic.ner_set(cfg, world, "train", 200):
        for _, (*_, subj, obj, pps) in sentence:
            for role, np_ in [("subj", subj), ("obj", obj)] + [(adposition[adp], np_) for adp, np_ in pps]:
                if np_ is None or np_[2] != ner.NAME:
                    continue
                etype = world.names.part_type[np_[0][0]]
                assert etype in (("PER", "ORG") if role in ("subj", "obj") else (role,))
                seen[role, etype] += 1
    assert {etype for _, etype in seen} == {"PER", "ORG", "LOC"} and seen["subj", "PER"] and seen["obj", "ORG"]


def test_locations_follow_locative_prepositions_in_the_english_file(data, built):
    """Read from the file: English has prepositions and a name no determiner, so the word before a location is
    IN, ON, FROM or TO."""
    _, world, langs = built
    locative = {langs["en"].lemma[world.fid[name]] for name in ("IN", "ON", "FROM", "TO")}
    before = [
        tokens[i - 1]
        for tokens, tags in formats.read_wikiann(data / "wikiann" / "en.train.tsv")
        for i, tag in enumerate(tags)
        if tag == "B-LOC"
    ]
    assert before and set(before) <= locative


def test_add_names_rate_and_at_least_one(built):
    cfg, world, _ = built
    sentences = synthetic.write._latent_set(cfg, world, "probe", 50)
    d = synthetic.spec._Draw(synthetic.spec._rng(1, "probe-names"))

    def names(sentence):
        return [
            np_
            for _, (_, _, _, subj, obj, pps) in sentence
            for np_ in [subj, obj] + [np_ for _, np_ in pps]
            if np_ is not None and np_[2] == ner.NAME
        ]

    assert [ner.add_names(d, world.names, s, 0.0) for s in sentences] == sentences
    assert all(len(names(ner.add_names(d, world.names, s, 0.0, at_least_one=True))) == 1 for s in sentences)
    for s in sentences:  # rate 1: every subject, object and adposition phrase names an entity
        named = ner.add_names(d, world.names, s, 1.0)
        assert len(names(named)) == sum(2 + len(pps) if obj else 1 + len(pps) for _, (*_, obj, pps) in s)


def test_corpora_contain_the_names_in_their_own_script(data, built):
    _, world, langs = built
    en_forms = {f for fs in langs["en"].forms for f in fs.values()}
    for lang in LANGS:
        corpus = Counter(_tokens(data / "corpus" / f"{lang}.txt"))
        parse = langs[lang].concept_of()
        named = [t for t in corpus if parse[t][0] in world.names.part_type]
        # the most frequent entity of each type occurs whole in every corpus
        for etype, entities in world.names.entities.items():
            assert all(langs[lang].lemma[part] in corpus for part in entities[0]), (lang, etype)
        # nearly every entity token of the NER files is a word the pretraining corpus has
        tokens = [
            t
            for split in SPEC["ner_sentences"]
            for words, tags in formats.read_wikiann(data / "wikiann" / f"{lang}.{split}.tsv")
            for t, tag in zip(words, tags, strict=True)
            if tag != "O"
        ]
        assert sum(t in corpus for t in tokens) >= 0.85 * len(tokens), lang
        if langs[lang].knobs["copy_of"] is None and lang != "en":  # never anchors: no name shared with English
            assert named and not set(named) & en_forms, lang


def _bucc_files(data: Path, lang: str, split: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Sentences of both sides in id order and the gold lines as (src id, en id), duplicates kept."""
    stem = data / "bucc" / f"{lang}-en.{split}"
    src, en, _ = formats.read_bucc(f"{stem}.{lang}", f"{stem}.en", f"{stem}.gold")
    gold = [tuple(line.split("\t")) for line in Path(f"{stem}.gold").read_text().splitlines()]
    return list(src.values()), list(en.values()), gold


def test_bucc_gold_pairs_are_the_sentences_realised_from_one_latent_sentence(data, built):
    cfg, world, langs = built
    en, neg = langs["en"], world.fid["NOT"]
    for lang in LANGS[1:]:
        for split in SPEC["bucc_sentences"]:
            src, en_text, gold = _bucc_files(data, lang, split)
            xx_latent, en_latent, _ = synthetic.bucc_split(cfg, world, en, langs[lang], split)
            text = {
                code: [" ".join(synthetic.surface(langs[code], synthetic.realize(langs[code], s, neg))) for s in latent]
                for code, latent in ((lang, xx_latent), ("en", en_latent))
            }
            assert (text[lang], text["en"]) == (src, en_text)  # the files are these latent sentences, in order
            position = {s: j for j, s in enumerate(en_latent)}
            same = {
                (f"{lang}-{i + 1:09d}", f"en-{position[s] + 1:09d}") for i, s in enumerate(xx_latent) if s in position
            }
            assert sorted(gold) == sorted(same) and len(set(gold)) == len(gold)
            # one-to-one, and no other pair is a translation even by its surface: the English realisation of
            # a non-gold source sentence occurs nowhere on the English side, and every text is unique per side
            assert len({s for s, _ in gold}) == len({e for _, e in gold}) == len(gold)
            gold_src = {int(s.rsplit("-", 1)[1]) - 1 for s, _ in gold}
            en_of_src = [" ".join(synthetic.surface(en, synthetic.realize(en, s, neg))) for s in xx_latent]
            assert not {en_of_src[i] for i in range(len(src)) if i not in gold_src} & set(en_text)
            assert len(set(src)) == len(src) and len(set(en_text)) == len(en_text)


def test_bucc_copy_of_english_pairs_identical_texts_exactly_in_gold(data):
    """Read from the files alone: in an exact copy of English a translation is the same string."""
    src, en, gold = _bucc_files(data, "xe", "test")
    identical = {(f"xe-{i + 1:09d}", f"en-{j + 1:09d}") for i, x in enumerate(src) for j, e in enumerate(en) if x == e}
    assert identical == set(gold) and len(gold) == 5


@pytest.mark.parametrize("rate, n, expected", [(0.025, 200, 5), (0.025, 120, 3), (0.1, 150, 15), (1.0, 40, 40)])
def test_bucc_gold_rate(rate, n, expected):
    spec = {**SPEC, "bucc_gold_rate": rate, "bucc_sentences": {"dev": n, "test": n}}
    cfg, world, langs = synthetic.build(spec, ["en", "xa"])
    xx, en, gold = synthetic.bucc_split(cfg, world, langs["en"], langs["xa"], "dev")
    assert len(xx) == len(en) == n and len(gold) == expected
    assert sorted(i for i, _ in gold) == sorted({i for i, _ in gold})  # one-to-one
    assert [xx[i] for i, _ in gold] == [en[j] for _, j in gold]


def _plural(sentence):
    """The latent sentence with its first subject's number flipped (same text in a language without inflection)."""
    (cconj, (verb, tense, neg, subj, obj, pps)), *rest = sentence
    if subj[1] is not None:
        subj = (subj[0], "Plur" if subj[1] == "Sing" else "Sing", *subj[2:])
    return ((cconj, (verb, tense, neg, subj, obj, pps)), *rest)


@pytest.mark.parametrize("code, en_knobs", [("xb", {}), ("xa", {"inflection": False})])
def test_bucc_never_hides_an_unlisted_translation(monkeypatch, code, en_knobs):
    """Repeated latent sentences, and ones that either language's surface cannot tell apart (the language
    without inflection), are drawn again: no pair outside gold shares a text on either side. (Rare at test
    sizes, so the sampler is made to repeat itself.)"""
    drawn = []
    original = synthetic.Sampler.sentence

    def repeating(self, topic=None):
        k = len(drawn)
        s = original(self, topic) if k < 4 or k % 3 == 0 else drawn[k // 2] if k % 3 == 1 else _plural(drawn[k // 2])
        drawn.append(s)
        return s

    monkeypatch.setattr(synthetic.Sampler, "sentence", repeating)
    spec = {**SPEC, "bucc_gold_rate": 0.1, "languages": {**SPEC["languages"], "en": en_knobs}}
    cfg, world, langs = synthetic.build(spec, LANGS)
    en, other, neg = langs["en"], langs[code], world.fid["NOT"]
    xx, en_side, gold = synthetic.bucc_split(cfg, world, en, other, "dev")
    assert len(drawn) > 2 * len(xx) - len(gold) + 50  # many draws were rejected

    def texts(lang, latent):
        return [" ".join(synthetic.surface(lang, synthetic.realize(lang, s, neg))) for s in latent]

    for lang in (en, other):
        side = {"xx": texts(lang, xx), "en": texts(lang, en_side)}
        assert len(set(side["xx"])) == len(set(side["en"])) == len(xx)
        shared = {(i, j) for i, a in enumerate(side["xx"]) for j, b in enumerate(side["en"]) if a == b}
        assert shared == set(gold), lang.code


def test_bucc_is_deterministic_per_seed_and_language():
    cfg, world, langs = synthetic.build(SPEC, LANGS)
    first = synthetic.bucc_split(cfg, world, langs["en"], langs["xa"], "test")
    assert synthetic.bucc_split(cfg, world, langs["en"], langs["xa"], "test") == first
    assert synthetic.bucc_split(cfg, world, langs["en"], langs["xb"], "test")[0] != first[0]
    cfg8, world8, langs8 = synthetic.build({**SPEC, "seed": 8}, LANGS)
    assert synthetic.bucc_split(cfg8, world8, langs8["en"], langs8["xa"], "test")[0] != first[0]


def test_few_duplicate_sentences(tmp_path):
    spec = {"sentences": 8000, "languages": {"xb": {"inflection": False}}}
    _, world, langs = synthetic.build(spec, ["en", "xb"])
    for lang in ("en", "xb"):
        synthetic.write._corpus(
            synthetic.resolve_spec(spec, ["en", "xb"]), world, langs[lang], tmp_path / "corpus" / f"{lang}.txt", 8000
        )
        lines = [s for doc in formats.read_corpus(tmp_path / "corpus" / f"{lang}.txt") for s in doc]
        assert len(lines) - len(set(lines)) < 0.02 * len(lines)


@pytest.mark.parametrize(
    "spec, langs, key",
    [
        ({"languages": {"xa": {"script": "klingon"}}}, ["en", "xa"], "synthetic.languages.xa.script"),
        ({"languages": {"xa": {"anchors": 1.5}}}, ["en", "xa"], "synthetic.languages.xa.anchors"),
        ({"languages": {"xa": {"order": "SXO"}}}, ["en", "xa"], "synthetic.languages.xa.order"),
        ({"languages": {"xa": {"colour": 1}}}, ["en", "xa"], "synthetic.languages.xa.colour"),
        ({"languages": {"xa": {"copy_of": "xb"}}}, ["en", "xa"], "synthetic.languages.xa.copy_of"),
        ({"languages": {"en": {"script": "greek"}}}, ["en"], "synthetic.languages.en.script"),
        ({}, ["en", "zz"], "synthetic.languages.zz"),
        ({"languages": {"xa": {}, "xq": {"skew": -1}}}, ["en", "xa"], "synthetic.languages.xq.skew"),
        ({"sentencs": 10}, ["en"], "synthetic.sentencs"),
        ({"sentences": 0}, ["en"], "synthetic.sentences"),
        ({"document_length": [5, 2]}, ["en"], "synthetic.document_length"),
        ({"dictionary": {"train": [0, 200], "test": [100, 300]}}, ["en"], "synthetic.dictionary"),
        ({"dictionary": {"test": [300]}}, ["en"], "synthetic.dictionary.test"),
        ({"xnli_pairs": {"dev": -1}}, ["en"], "synthetic.xnli_pairs.dev"),
        ({"bucc_sentences": {"dev": 0}}, ["en"], "synthetic.bucc_sentences.dev"),
        ({"bucc_sentences": {"train": 10}}, ["en"], "synthetic.bucc_sentences.train"),
        ({"bucc_gold_rate": 0}, ["en"], "synthetic.bucc_gold_rate"),
        ({"bucc_gold_rate": 1.5}, ["en"], "synthetic.bucc_gold_rate"),
        ({"bucc_sentences": {"dev": 100}, "bucc_gold_rate": 0.004}, ["en"], "synthetic.bucc_gold_rate"),
        ({"ner_sentences": {"dev": 0}}, ["en"], "synthetic.ner_sentences.dev"),
        ({"ner_sentences": {"valid": 10}}, ["en"], "synthetic.ner_sentences.valid"),
        ({"named_entities": 0}, ["en"], "synthetic.named_entities"),
        ({"name_rate": 1.5}, ["en"], "synthetic.name_rate"),
    ],
)
def test_bad_spec_names_the_key(spec, langs, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        synthetic.resolve_spec(spec, langs)


def test_pivot_must_come_first():
    with pytest.raises(ValueError, match="pivot"):
        synthetic.resolve_spec({"languages": {"xa": {}}}, ["xa", "en"])


def test_empty_dictionary_range_is_an_error(tmp_path):
    spec = {
        "sentences": 50,
        "concepts": 60,
        "dictionary": {"train": [0, 30], "test": [500, 600]},
        "languages": {"xa": {}},
    }
    with pytest.raises(ValueError, match=r"synthetic\.dictionary\.test"):
        synthetic.generate(spec, ["en", "xa"], tmp_path)


def test_config_schema_defaults_match_the_generator():
    """The lead's config schema documents these keys; its defaults must be the generator's."""
    import yaml

    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml").read_text())
    section = schema["properties"]["synthetic"]["properties"]
    for key, prop in section.items():
        if key != "languages":
            assert prop.get("default") == synthetic.DEFAULTS[key], key
    knobs = section["languages"]["additionalProperties"]["properties"]
    assert {k: p.get("default") for k, p in knobs.items()} == synthetic.DEFAULT_LANGUAGE
