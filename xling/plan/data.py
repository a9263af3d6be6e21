"""What data the run has: the canonical layout under results/{run}/data, and which languages have which
dataset and splits, asked the same way of real sources and of synthetic data.

The rules never ask which source the run uses: they ask its `DataSource` (SyntheticData or RealData, built
in rules/data.smk), and find every file through `Layout`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UD_SPLITS = ("train", "dev", "test")
#: the splits written of a low-resource treebank: test to score, train for the language mean; never dev (Liu et al.
#: short §5.2: "languages that do not have an official development set")
LOW_RESOURCE_SPLITS = ("train", "test")
#: the dictionary of the synthetic grammar's function words (synthetic.dictionary.function_words): scored only
#: for the word-retrieval MRR by part of speech, never in the main MRR
FUNCTION_SPLIT = "function"
TASK_DATA = {"xnli": "xnli", "ner": "wikiann", "pos": "ud", "parsing": "ud"}  # transfer task -> its dataset


# The canonical layout under data/ (both sources write it), one template per kind of file; {pivot} is the run's.
FILES = {
    "corpus": "corpus/{lang}.txt",
    "treebank": "ud/{lang}.{split}.conllu",
    "xnli": "xnli/{split}-{lang}.tsv",
    "wikiann": "wikiann/{lang}.{split}.tsv",
    "dictionary": "dict/{pivot}-{lang}.{split}.txt",  # bilingual dictionary pivot -> lang
    "parallel": "parallel/{pivot}-{lang}.{ext}",  # ext: either language, or `align` (gold links, synthetic)
    "tatoeba": "tatoeba/tatoeba.{lang}-eng.{side}",  # side: lang or `eng`
    "bucc": "bucc/{lang}-en.{split}.{ext}",  # ext: lang, `en` or `gold`
    "word_pairs": "align/{pivot}-{lang}/{split}.{ext}",  # xling.data.alignment's splits
    "mbert_vocab": "vocab/mbert-cased.txt",
}


@dataclass(frozen=True)
class Layout:
    """The canonical files under `data` (results/{run}/data); any part may be a wildcard pattern such as
    "{lang}"."""

    data: str
    pivot: str

    def file(self, kind: str, **parts: str) -> str:
        """The file of `kind` (a key of FILES) with these parts, e.g. file("xnli", lang="de", split="dev")."""
        return f"{self.data}/" + FILES[kind].format(pivot=self.pivot, **parts)

    def word_pairs(self, lang: str, split: str) -> list[str]:
        """[pivot file, lang file, links file] of a split of the word pairs (xling.data.alignment)."""
        return [self.file("word_pairs", lang=lang, split=split, ext=ext) for ext in (self.pivot, lang, "align")]

    def task_file(self, task: str, lang: str, split: str) -> str:
        """The data of a transfer task (xnli, pos, parsing, ner) in one language and split."""
        return self.file({"ud": "treebank"}.get(TASK_DATA[task], TASK_DATA[task]), lang=lang, split=split)

    def synthetic(self, langs: list[str], function_words: bool = False) -> list[str]:
        """Every file the synthetic generator writes for `langs` (the first is the pivot); with `function_words`
        (synthetic.dictionary.function_words) each target's function-word dictionary too."""
        file = self.file
        files = [file("xnli", lang=self.pivot, split="train")]
        for lang in langs:
            files += [file("corpus", lang=lang), *(file("treebank", lang=lang, split=split) for split in UD_SPLITS)]
            files += [file("xnli", lang=lang, split=split) for split in ("dev", "test")]
            files += [file("wikiann", lang=lang, split=split) for split in UD_SPLITS]
        for lang in langs[1:]:
            files += [file("dictionary", lang=lang, split=split) for split in ("train", "test", "full")]
            files += [file("dictionary", lang=lang, split=FUNCTION_SPLIT)] if function_words else []
            files += [file("parallel", lang=lang, ext=ext) for ext in (self.pivot, lang, "align")]
            files += [file("tatoeba", lang=lang, side=side) for side in (lang, "eng")]
            files += [
                file("bucc", lang=lang, split=split, ext=ext)
                for split in ("dev", "test")
                for ext in (lang, "en", "gold")
            ]
        return files


class DataSource:
    """Which languages of a run have which data. `available(dataset, langs)` takes a dataset of
    resources/sources.yaml (muse, tatoeba, bucc, xnli, wikiann, ...) or `parallel` (parallel text with the
    pivot) and keeps the order of `langs`."""

    gold_links: bool  # the parallel text comes with gold word alignments (the parallel file with ext `align`)
    other_domain: bool  # text of a second domain can be had (the wiki-cc ablation)
    config_keys: tuple[str, ...]  # config blocks that describe the data (the report shows them)
    parallel_sentences: int | None  # pairs of parallel text per language, where the source fixes it
    stand_ins: dict[str, str] = {}  # dataset -> what stands in for its unstaged part (the report says so)
    #: test-only UD treebanks without a dev split, outside the run's languages (transfer.parsing.low_resource):
    #: lang -> release folders; their train split is read for the language mean only
    low_resource: dict[str, list[str]] = {}

    def available(self, dataset: str, langs: list[str]) -> list[str]:
        raise NotImplementedError

    def has_treebank(self, lang: str) -> bool:
        raise NotImplementedError

    def ud_splits(self, lang: str) -> list[str]:
        """The UD splits written for lang, where it has a treebank."""
        raise NotImplementedError

    def treebank_name(self, lang: str) -> str:
        """Which treebank the UD files of lang come from, for the tables."""
        raise NotImplementedError

    def bucc_named(self, named: list[str], default: list[str], targets: list[str]) -> list[str]:
        """The targets that sentence_retrieval.bucc_languages names."""
        return [lang for lang in named if lang in targets]

    def task_languages(self, task: str, langs: list[str]) -> list[str]:
        """The languages of `langs` a transfer task can be tested on (UD tasks: a treebank with a test split)."""
        if TASK_DATA[task] == "ud":
            return [lang for lang in langs if self.has_treebank(lang) and "test" in self.ud_splits(lang)]
        return self.available(TASK_DATA[task], langs)

    def task_splits(self, task: str, lang: str) -> list[str]:
        """The evaluation splits of a task in lang (a UD treebank without dev: test only, so no alpha is chosen)."""
        if TASK_DATA[task] == "ud":
            return [split for split in ("dev", "test") if split in self.ud_splits(lang)]
        return ["dev", "test"]


#: what a synthetic low-resource treebank is, for the tables (SyntheticData.low_resource)
SYNTHETIC_LOW_RESOURCE = "synthetic gold, no pretraining text"


@dataclass
class SyntheticData(DataSource):
    """The synthetic generator (xling.data.synthetic): every language has every dataset and split; the test-only
    low-resource languages (transfer.parsing.low_resource.synthetic) a treebank of train and test."""

    parallel_sentences: int | None = None
    low_resource: dict[str, list[str]] = field(default_factory=dict)  # lang -> [SYNTHETIC_LOW_RESOURCE]
    gold_links = True
    other_domain = True
    config_keys = ("synthetic",)

    @classmethod
    def from_config(cls, config: dict) -> "SyntheticData":
        """The source of a synthetic run (rules/data.smk)."""
        return cls(
            config["synthetic"]["parallel_sentences"],
            {lang: [SYNTHETIC_LOW_RESOURCE] for lang in synthetic_low_resource(config)},
        )

    def available(self, dataset: str, langs: list[str]) -> list[str]:
        return list(langs)

    def has_treebank(self, lang: str) -> bool:
        return True

    def ud_splits(self, lang: str) -> list[str]:
        return list(LOW_RESOURCE_SPLITS if lang in self.low_resource else UD_SPLITS)

    def treebank_name(self, lang: str) -> str:
        return SYNTHETIC_LOW_RESOURCE if lang in self.low_resource else "synthetic gold"

    def bucc_named(self, named: list[str], default: list[str], targets: list[str]) -> list[str]:
        """The schema lists the BUCC 2018 languages, which a synthetic run cannot name: its default means every
        target, another list the targets it names ([]: no BUCC)."""
        return list(targets) if named == default else super().bucc_named(named, default, targets)


@dataclass
class RealData(DataSource):
    """Real sources (resources/sources.yaml, rules/sources.smk): the configured languages each dataset has,
    the parallel corpus of each target, and each language's treebanks and UD splits."""

    datasets: dict[str, list[str]]  # dataset -> configured languages it has
    parallel: dict[str, str]  # target -> the corpus its parallel text comes from
    treebanks: dict[str, list[str]]  # lang -> its treebanks (none: no UD data)
    splits: dict[str, list[str]] = field(default_factory=dict)  # lang -> UD splits, where not all three
    stand_ins: dict[str, str] = field(default_factory=dict)  # dataset -> its stand-in (xling.data.staged)
    low_resource: dict[str, list[str]] = field(default_factory=dict)  # lang -> folders (DataSource.low_resource)
    parallel_sentences = None
    gold_links = False
    other_domain = False
    config_keys = ()

    def available(self, dataset: str, langs: list[str]) -> list[str]:
        have = self.parallel if dataset == "parallel" else self.datasets.get(dataset, [])
        return [lang for lang in langs if lang in have]

    def has_treebank(self, lang: str) -> bool:
        return bool(self.treebanks.get(lang) or self.low_resource.get(lang))

    def ud_splits(self, lang: str) -> list[str]:
        if lang in self.low_resource:
            return list(LOW_RESOURCE_SPLITS)
        return list(self.splits.get(lang, UD_SPLITS))

    def treebank_name(self, lang: str) -> str:
        return ", ".join(self.treebanks.get(lang) or self.low_resource.get(lang, []))


def low_resource_treebanks(config: dict) -> dict[str, list[str]]:
    """The low-resource treebanks a real-data run tests parsing on (transfer.parsing.low_resource.treebanks, Liu et
    al. short §5.2): {} without the parsing task. Test-only languages: one of the run's `languages` is an error
    (its own treebank would be read twice, and it has a pretraining corpus the six lack)."""
    transfer = config["transfer"]
    if "parsing" not in transfer["tasks"]:
        return {}
    treebanks = transfer["parsing"]["low_resource"]["treebanks"]
    clash = [lang for lang in treebanks if lang in config["languages"]]
    if clash:
        raise ValueError(
            f"transfer.parsing.low_resource.treebanks: {', '.join(clash)} also in `languages`; the "
            f"low-resource treebanks are test-only languages outside them"
        )
    return {lang: list(folders) for lang, folders in treebanks.items()}


def synthetic_low_resource(config: dict) -> dict[str, dict]:
    """The synthetic analogue of the low-resource treebanks (transfer.parsing.low_resource.synthetic.languages: code
    -> knobs, test-only languages without pretraining text): {} without the parsing task. One of the run's
    `languages` is an error (it has a corpus, and its own treebank has a dev split)."""
    transfer = config["transfer"]
    if "parsing" not in transfer["tasks"]:
        return {}
    languages = transfer["parsing"]["low_resource"]["synthetic"]["languages"]
    clash = [lang for lang in languages if lang in config["languages"]]
    if clash:
        raise ValueError(
            f"transfer.parsing.low_resource.synthetic.languages: {', '.join(clash)} also in "
            f"`languages`; the low-resource languages are test-only languages outside them"
        )
    return {lang: dict(knobs) for lang, knobs in languages.items()}
