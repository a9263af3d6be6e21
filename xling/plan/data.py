"""What data the run has: the canonical layout under results/{run}/data, and which languages have which
dataset and splits, asked the same way of real sources and of synthetic data.

The rules never ask which source the run uses: they ask its `DataSource` (SyntheticData or RealData, built
in rules/data.smk), and find every file through `Layout`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UD_SPLITS = ("train", "dev", "test")
TASK_DATA = {"xnli": "xnli", "ner": "wikiann", "pos": "ud", "parsing": "ud"}  # transfer task -> its dataset


@dataclass(frozen=True)
class Layout:
    """The canonical files under `data` (results/{run}/data), which both sources write; any argument may be
    a wildcard pattern such as "{lang}"."""

    data: str
    pivot: str

    def corpus(self, lang: str) -> str:
        return f"{self.data}/corpus/{lang}.txt"

    def treebank(self, lang: str, split: str) -> str:
        return f"{self.data}/ud/{lang}.{split}.conllu"

    def xnli(self, lang: str, split: str) -> str:
        return f"{self.data}/xnli/{split}-{lang}.tsv"

    def wikiann(self, lang: str, split: str) -> str:
        return f"{self.data}/wikiann/{lang}.{split}.tsv"

    def dictionary(self, lang: str, split: str) -> str:
        """The bilingual dictionary pivot -> lang."""
        return f"{self.data}/dict/{self.pivot}-{lang}.{split}.txt"

    def parallel(self, lang: str, ext: str) -> str:
        """Parallel text of the pivot and lang: ext is either language, or `align` (gold links, synthetic)."""
        return f"{self.data}/parallel/{self.pivot}-{lang}.{ext}"

    def tatoeba(self, lang: str, side: str) -> str:
        """Tatoeba's sentences of lang paired with English: side is lang or `eng`."""
        return f"{self.data}/tatoeba/tatoeba.{lang}-eng.{side}"

    def bucc(self, lang: str, split: str, ext: str) -> str:
        """BUCC 2018 of lang and English: ext is lang, `en` or `gold`."""
        return f"{self.data}/bucc/{lang}-en.{split}.{ext}"

    def mbert_vocab(self) -> str:
        return f"{self.data}/vocab/mbert-cased.txt"

    def word_pairs(self, lang: str, split: str) -> list[str]:
        """[pivot file, lang file, links file] of a split of the word pairs (xling.data.alignment)."""
        stem = f"{self.data}/align/{self.pivot}-{lang}/{split}"
        return [f"{stem}.{self.pivot}", f"{stem}.{lang}", f"{stem}.align"]

    def task_file(self, task: str, lang: str, split: str) -> str:
        """The data of a transfer task (xnli, pos, parsing, ner) in one language and split."""
        if TASK_DATA[task] == "ud":
            return self.treebank(lang, split)
        return self.xnli(lang, split) if task == "xnli" else self.wikiann(lang, split)

    def synthetic(self, langs: list[str]) -> list[str]:
        """Every file the synthetic generator writes for `langs` (the first is the pivot)."""
        files = [self.xnli(self.pivot, "train")]
        for lang in langs:
            files += [self.corpus(lang), *(self.treebank(lang, split) for split in UD_SPLITS)]
            files += [self.xnli(lang, split) for split in ("dev", "test")]
            files += [self.wikiann(lang, split) for split in UD_SPLITS]
        for lang in langs[1:]:
            files += [self.dictionary(lang, split) for split in ("train", "test", "full")]
            files += [self.parallel(lang, ext) for ext in (self.pivot, lang, "align")]
            files += [self.tatoeba(lang, side) for side in (lang, "eng")]
            files += [self.bucc(lang, split, ext) for split in ("dev", "test") for ext in (lang, "en", "gold")]
        return files


class DataSource:
    """Which languages of a run have which data. `available(dataset, langs)` takes a dataset of
    resources/sources.yaml (muse, tatoeba, bucc, xnli, wikiann, ...) or `parallel` (parallel text with the
    pivot) and keeps the order of `langs`."""

    gold_links: bool  # the parallel text comes with gold word alignments (Layout.parallel(lang, "align"))
    other_domain: bool  # text of a second domain can be had (the wiki-cc ablation)
    config_keys: tuple[str, ...]  # config blocks that describe the data (the report shows them)
    parallel_sentences: int | None  # pairs of parallel text per language, where the source fixes it

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


@dataclass
class SyntheticData(DataSource):
    """The synthetic generator (xling.data.synthetic): every language has every dataset and split."""

    parallel_sentences: int | None = None
    gold_links = True
    other_domain = True
    config_keys = ("synthetic",)

    def available(self, dataset: str, langs: list[str]) -> list[str]:
        return list(langs)

    def has_treebank(self, lang: str) -> bool:
        return True

    def ud_splits(self, lang: str) -> list[str]:
        return list(UD_SPLITS)

    def treebank_name(self, lang: str) -> str:
        return "synthetic gold"

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
    parallel_sentences = None
    gold_links = False
    other_domain = False
    config_keys = ()

    def available(self, dataset: str, langs: list[str]) -> list[str]:
        have = self.parallel if dataset == "parallel" else self.datasets.get(dataset, [])
        return [lang for lang in langs if lang in have]

    def has_treebank(self, lang: str) -> bool:
        return bool(self.treebanks.get(lang))

    def ud_splits(self, lang: str) -> list[str]:
        return list(self.splits.get(lang, UD_SPLITS))

    def treebank_name(self, lang: str) -> str:
        return ", ".join(self.treebanks.get(lang, []))
