"""Writing the canonical files of the synthetic languages (corpus, dict, parallel, ud, tatoeba, bucc, xnli,
wikiann): the latent sentence sets each file draws, realized in every language.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path

import numpy as np

from xling.data import synthetic_ner as ner
from xling.data.synthetic.language import Language, build, conllu_block, realize, surface
from xling.data.synthetic.spec import FUNCTION, LABELS, _Draw, _fail, _rng, bucc_gold_count, resolve_spec
from xling.data.synthetic.world import Sampler, Tables, World
from xling.data.synthetic.xnli import xnli_pair
from xling.io import atomic_write

logger = logging.getLogger(__name__)


def _write_lines(path: Path, lines) -> int:
    n = 0
    with atomic_write(path) as handle:
        for line in lines:
            handle.write(line + "\n")
            n += 1
    return n


def _corpus(
    cfg: dict, world: World, lang: Language, path: Path, sentences: int, stream: str = "corpus", first_topic: int = 0
) -> Counter:
    """Write a monolingual corpus of `sentences` to `path` from the random stream `stream` (documents draw their
    topic among topics first_topic..topics-1); return the counts of its content and function concepts (for the
    dictionaries)."""
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
            counts.update(r[1] for r in records if r[1] < world.n_content + len(FUNCTION))
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
    logger.info(
        "%s: %d sentences of another domain (topics %d..%d of %d), %d content concepts used",
        path,
        sentences,
        first,
        world.n_topics - 1,
        world.n_topics,
        sum(c < world.n_content for c in counts),
    )


def dictionaries(
    cfg: dict, world: World, en: Language, lang: Language, en_counts: Counter, counts: Counter
) -> dict[str, list[tuple[str, str]]]:
    """MUSE-style lemma pairs; ranks are English corpus-frequency ranks of content concepts. With
    dictionary.function_words also a `function` dictionary of the function words both corpora use (in the
    grammar's order): the closed class of Liu et al. 2020 Table 1, which only the MRR by part of speech scores;
    a file of its own, because MUSE's test dictionaries (ranks 5000-6500) hold almost none and the main MRR
    must stay content-only."""
    ranked = sorted((c for c in en_counts if c < world.n_content), key=lambda c: (-en_counts[c], c))
    spec = cfg["dictionary"]
    out = {"full": [(en.lemma[c], lang.lemma[c]) for c in ranked if counts[c] > 0]}
    for split in ("train", "test"):
        lo, hi = spec[split]
        keep = [
            c
            for c in ranked[lo:hi]
            if counts[c] > 0 and (split == "train" or spec["anchors_in_test"] or c not in lang.anchors)
        ]
        out[split] = [(en.lemma[c], lang.lemma[c]) for c in keep]
    if spec["function_words"]:
        function = range(world.n_content, world.n_content + len(FUNCTION))
        out["function"] = [(en.lemma[c], lang.lemma[c]) for c in function if en_counts[c] > 0 and counts[c] > 0]
    return out


LOW_RESOURCE_KEY = "transfer.parsing.low_resource.synthetic"


def low_resource_treebanks(
    spec: dict, languages: list[str], low_resource: dict[str, dict], sentences: dict[str, int], out_dir: Path
) -> None:
    """Write ud/{code}.{train,test}.conllu under out_dir for each test-only language of `low_resource` (code ->
    knobs as synthetic.languages): the analogue of Liu et al. (short, §5.2)'s low-resource parsing languages,
    which have no official development set and which, but for Kazakh and Irish, mBERT never saw in pretraining.
    No corpus is written for them, so no BERT of the run reads their text; the train split serves only for the
    language mean of zero-mean and MDS, the test split for the score. Their sentences are the first of the run
    languages' splits of the same name (the same latent stream), realized in each language's own lexicon and word
    order. A language must share its script with a run language: in an unseen script every word would be one
    unknown token to the run's vocabulary, which no subword of a seen language could reach."""
    clash = sorted(set(low_resource) & set(languages))
    if clash:
        raise ValueError(
            f"{LOW_RESOURCE_KEY}.languages: {', '.join(clash)} also in `languages`; the low-resource "
            f"languages are test-only languages outside them"
        )
    if sorted(sentences) != ["test", "train"]:
        raise ValueError(
            f"{LOW_RESOURCE_KEY}.sentences: expected train and test (no dev split), got "
            f"{', '.join(sorted(sentences)) or 'none'}"
        )
    spec = dict(spec or {})
    try:
        seen = {knobs["script"] for knobs in resolve_spec(spec, languages)["languages"].values()}
        table = {**(spec.get("languages") or {}), **low_resource}
        cfg, world, langs = build({**spec, "languages": table}, ["en", *low_resource])
    except ValueError as error:
        raise ValueError(f"{LOW_RESOURCE_KEY}: {error}") from None
    for code in low_resource:
        if langs[code].script not in seen:
            raise ValueError(
                f"{LOW_RESOURCE_KEY}.languages.{code}.script: {langs[code].script} is the script of no "
                f"run language ({', '.join(sorted(seen))}): every word would be unknown to the tokenizer"
            )
    neg_id = world.fid["NOT"]
    for split in ("train", "test"):
        latent = _latent_set(cfg, world, f"ud-{split}", sentences[split])
        for code in low_resource:
            with atomic_write(Path(out_dir) / "ud" / f"{code}.{split}.conllu") as handle:
                for k, s in enumerate(latent, start=1):
                    handle.write(conllu_block(langs[code], realize(langs[code], s, neg_id), f"{split}-{k}", world))
    logger.info(
        "ud/{%s}.{train,test}.conllu: %s sentences, test-only languages without pretraining text",
        ",".join(low_resource),
        dict(sentences),
    )


def _latent_set(cfg: dict, world: World, purpose: str, n: int) -> list:
    s = Sampler(world, Tables(world, world.weight), _rng(cfg["seed"], purpose))
    return [s.sentence() for _ in range(n)]


def ner_set(cfg: dict, world: World, split: str, n: int) -> list:
    """n latent sentences of a WikiAnn split, each naming at least one entity (as WikiAnn's sentences do)."""
    d = _Draw(_rng(cfg["seed"], "ner-names", split))
    return [
        ner.add_names(d, world.names, s, cfg["name_rate"], at_least_one=True)
        for s in _latent_set(cfg, world, f"ner-{split}", n)
    ]


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
        texts = {
            "en": " ".join(surface(en, realize(en, sentence, neg_id))),
            "xx": " ".join(surface(lang, realize(lang, sentence, neg_id))),
        }
        if any(texts[side] in seen[side] for side in texts):
            continue
        for side, text in texts.items():
            seen[side].add(text)
        latent.append(sentence)
    sides = (latent[:n], latent[:n_gold] + latent[n:])
    orders = [rng.permutation(n) for _ in sides]  # order[position] = index into the side
    xx, en_side = ([side[i] for i in order] for side, order in zip(sides, orders, strict=True))
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
        logger.info(
            "corpus/%s.txt: %d sentences, %d of %d content concepts used (%s script, %.0f%% anchors)",
            code,
            cfg["sentences"],
            sum(c < world.n_content for c in counts[code]),
            world.n_content,
            lang.script,
            100 * len(lang.anchors) / world.n_content,
        )

    for code in languages[1:]:
        sizes = {}
        for split, pairs in dictionaries(cfg, world, en, langs[code], counts["en"], counts[code]).items():
            if not pairs:
                _fail(
                    f"dictionary.{split}",
                    f"no en-{code} pair in this rank range: only "
                    f"{len(counts['en'])} content concepts occur in the English corpus",
                )
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
        _write_lines(out / "parallel" / f"en-{code}.align", (_pharaoh(a, b) for a, b in zip(en_par, recs, strict=True)))
        _write_lines(
            out / "tatoeba" / f"tatoeba.{code}-eng.{code}",
            (" ".join(surface(lang, realize(lang, s, neg_id))) for s in tatoeba),
        )
        _write_lines(
            out / "tatoeba" / f"tatoeba.{code}-eng.eng",
            (" ".join(surface(en, realize(en, s, neg_id))) for s in tatoeba),
        )
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
    logger.info(
        "bucc/{lang}-en.{split}.*: %s sentences per side, %s gold pairs",
        dict(cfg["bucc_sentences"]),
        {split: bucc_gold_count(n, cfg["bucc_gold_rate"]) for split, n in cfg["bucc_sentences"].items()},
    )

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
            _write_lines(
                out / "xnli" / f"{split}-{code}.tsv",
                (
                    " ".join(surface(lang, realize(lang, p, neg_id)))
                    + "\t"
                    + " ".join(surface(lang, realize(lang, h, neg_id)))
                    + "\t"
                    + label
                    for p, h, label in pairs
                ),
            )
    logger.info("xnli: %s pairs (train English only), labels balanced", dict(cfg["xnli_pairs"]))

    for split, n in cfg["ner_sentences"].items():
        latent = ner_set(cfg, world, split, n)
        for code, lang in langs.items():
            records = (realize(lang, s, neg_id) for s in latent)
            _write_lines(
                out / "wikiann" / f"{code}.{split}.tsv",
                (line for r in records for line in ner.wikiann_lines(surface(lang, r), ner.iob2(r, world.names))),
            )
    logger.info(
        "wikiann/{lang}.{split}.tsv: %s sentences (parallel across languages), %d entities per type",
        dict(cfg["ner_sentences"]),
        cfg["named_entities"],
    )
    logger.info(
        "synthetic data for %s written to %s in %.1f s", ",".join(languages), out, time.perf_counter() - started
    )


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
