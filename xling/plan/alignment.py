"""Cao et al.'s contextual alignment (rules/align.smk, align_finetune.smk, align_baselines.smk): which languages
have word pairs, which BERTs are fine-tuned for alignment on how many pairs, their rotation and fastText
baselines, and the files each job reads. A mixin of Plan."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Sequence

from xling.plan.models import aligned_base, aligned_run, parse_aligned_run

# alignment.finetune's settings that decide an aligned model (its params)
FINETUNE_SETTINGS = (
    "pairs_per_language",
    "epochs",
    "learning_rate",
    "betas",
    "eps",
    "warmup",
    "regularization",
    "layer",
)
ANALYSIS_BY = [
    "lm",
    "model",
    "size",
    "window",
    "lang",
    "pair",
    "method",
    "parallel_sentences",
    "layer",
]  # analyses' groups


def pairs_needed(test: int, dev: int, train: Sequence[int]) -> int:
    """Sentence pairs the splits take: test, dev and the largest train set (the smaller ones are its prefixes)."""
    return test + dev + max(train, default=0)


def check_parallel_text(test: int, dev: int, train: Sequence[int], have: int | None) -> None:
    """Stop the plan when the splits take more sentence pairs than the parallel text has (`have`: the synthetic
    source's count; None where it is known only once downloaded)."""
    need = pairs_needed(test, dev, train)
    if have is not None and need > have:
        raise ValueError(
            f"alignment.test_sentences + dev_sentences + max(train_sentences) = {need} sentence pairs, "
            f"but synthetic.parallel_sentences is {have}: lower the "
            "alignment splits (presets/demo.yaml: 200 + 100 + 700) or raise the synthetic pairs"
        )


class AlignmentPlan:
    def init_alignment(self) -> None:
        self.align = self.config["alignment"]  # defaults filled in by the schema
        self.align_ft, self.rotation, self.fasttext = (
            self.align["finetune"],
            self.align["rotation"],
            self.align["fasttext"],
        )
        # {lm: rotation files} evaluated beside the model as it is (method rotation-{kind}): the rotation rules
        # register theirs, {results}/align/rotations/{lm}/{kind}{n}/{lang}.npy, one per aligned language
        self.contextual_rotations = {}

    def align_pair_langs(self) -> list[str]:
        """Languages paired with the pivot in word pairs and contextual retrieval: those with parallel text."""
        return self.source.available("parallel", self.targets)

    def align_eval_langs(self) -> list[str]:
        """Languages of Cao et al.'s contextual retrieval and its analyses by POS and frequency rank (Tables 3-4,
        Figure 3): alignment.evaluation_languages aligned = the languages aligned (config.yaml: the paper's five),
        parallel = every language with word pairs (config.yaml: eight, Table 5's ar, zh, ur too)."""
        if self.align["evaluation_languages"] == "parallel":
            return self.align_pair_langs()
        return self.align_langs()

    def align_langs(self, run: str | None = None) -> list[str]:
        """Languages the aligned models and rotations are trained on: alignment.finetune.languages (null: all)
        among those with word pairs (align_pair_langs); for the {n} segment `run` of a model of
        alignment.finetune.runs (n-lang-...), its languages."""
        named = None if run is None else parse_aligned_run(run)[1]
        if named is None:
            named = self.align_ft["languages"]
        else:
            missing = sorted(set(named) - set(self.align_pair_langs()))
            if missing:
                raise ValueError(
                    f"alignment.finetune.runs: {missing} have no parallel text in this run "
                    f"(languages with word pairs: {self.align_pair_langs()})"
                )
        return [lang for lang in self.align_pair_langs() if named is None or lang in named]

    def aligned_models(self) -> list[str]:
        """aligned/{n}/{base} of every base BERT (alignment.finetune.models; null: our BERT of the language
        experiments at their largest size and longest window, the papers' setting, and every Hugging Face
        checkpoint) and amount of parallel data n (alignment.finetune.sizes) the run aligns."""
        bert = "bert" in self.models
        checkpoints = [f"hf/{slug}" for slug in self.hf_models]
        bases = self.align_ft["models"]
        if bases is None:
            size, window = max(self.language["sizes"] or self.sizes), max(self.language["windows"] or self.windows)
            bases = [f"bert/{size}-w{window}"] if bert else []
            bases += checkpoints
        known = [f"bert/{s}-w{w}" for s in self.sizes for w in self.windows] if bert else []
        unknown = [base for base in bases if base not in known + checkpoints]
        if unknown:
            raise ValueError(
                f"alignment.finetune.models: {unknown} are not BERTs of this run (ours: {known}; "
                f"checkpoints: {checkpoints})"
            )
        for run in self.align_ft["runs"]:
            if run["size"] not in self.align["train_sentences"]:
                raise ValueError(
                    f"alignment.finetune.runs: size {run['size']} is not one of "
                    f"alignment.train_sentences {self.align['train_sentences']}"
                )
        runs = [aligned_run(run["size"], run["languages"]) for run in self.align_ft["runs"]]
        for run in runs:
            self.align_langs(run)  # every language of a run has parallel text
        if not self.align_langs():  # no language has parallel text (e.g. the mini preset's ru): nothing to align
            return [f"aligned/{run}/{base}" for base in bases for run in runs]
        return [f"aligned/{n}/{base}" for base in bases for n in [*self.align_ft["sizes"], *runs]]

    def align_finetune_inputs(self, wildcards) -> dict:
        """The base model (our BERT's directory, a checkpoint's local directory; none for a hub id) and each
        aligned language's train{n} split (xling.data.alignment's files)."""
        size = parse_aligned_run(wildcards.n)[0]
        files = [self.layout.word_pairs(lang, f"train{size}") for lang in self.align_langs(wildcards.n)]
        return dict(
            model=self.lm_model(SimpleNamespace(lm=wildcards.base)),
            en=[f[0] for f in files],
            xx=[f[1] for f in files],
            links=[f[2] for f in files],
        )

    def align_finetune_targets(self) -> list[str]:
        """The aligned models of the run (rule all)."""
        return [f"{self.results}/models/{lm}" for lm in self.aligned_models()]

    def align_splits(self) -> list[str]:
        return ["test", "dev"] + [f"train{n}" for n in sorted(self.align["train_sentences"])]

    def seen_split(self) -> str:
        """The training split whose word pairs the test score leaves out: the largest (the paper's 250K)."""
        return f"train{max(self.align['train_sentences'])}"

    def word_pair_files(self, lang: str, splits) -> dict:
        """{split: [pivot file, lang file, links file]} of the word pairs of `lang` (xling.data.alignment)."""
        return {split: self.layout.word_pairs(lang, split) for split in splits}

    def word_pairs_gold(self, wildcards) -> list[str]:
        """The gold links of the parallel text where it has them (the synthetic source)."""
        return [self.layout.file("parallel", lang=wildcards.lang, ext="align")] if self.source.gold_links else []

    def contextual_retrieval_lms(self) -> list[str]:
        """The models contextual retrieval evaluates ({lm} ids): the BERTs of the language experiments, the
        models fine-tuned for alignment (Cao et al.'s base-against-aligned comparison) and the fastText
        baseline."""
        return list(dict.fromkeys(self.language_models() + self.aligned_models() + self.fasttext_lms()))

    def contextual_retrieval_inputs(self, wildcards) -> dict:
        langs, seen = self.align_eval_langs(), self.seen_split()
        return dict(
            model=self.lm_model(wildcards),
            rotations=self.contextual_rotations.get(wildcards.lm, []),
            test=[f for lang in langs for f in self.word_pair_files(lang, ["test"])["test"]],
            seen=[f for lang in langs for f in self.word_pair_files(lang, [seen])[seen]],
        )

    def alignment_bases(self) -> list[str]:
        """The base BERTs fine-tuned for alignment (their XNLI is Cao et al.'s "Base BERT" row)."""
        return sorted({aligned_base(lm)[1] for lm in self.aligned_models()})

    def rotation_lms(self) -> list[str]:
        """The base BERTs that get rotations: those fine-tuned for alignment (the rotations are their
        baselines)."""
        return self.alignment_bases() if self.rotation["kinds"] else []

    def rotation_files(self, lm: str, n, kinds=None) -> dict:
        """{kind: {lang: path}} of the rotations of `lm` learned on train{n}, one per aligned language."""
        return {
            kind: {lang: f"{self.results}/align/rotations/{lm}/{kind}{n}/{lang}.npy" for lang in self.align_langs()}
            for kind in kinds or self.rotation["kinds"]
        }

    def rotation_inputs(self, wildcards) -> dict:
        split = f"train{wildcards.n}"
        files = self.word_pair_files(wildcards.lang, [split])[split]
        return dict(model=self.lm_model(wildcards), pivot=files[0], other=files[1], links=files[2])

    def fasttext_size(self) -> int:
        """The corpus sample fastText is trained on: alignment.fasttext.size, null = the largest of
        corpus.sizes."""
        size = self.fasttext["size"] or max(self.sizes)
        if size not in self.sizes:
            raise ValueError(f"alignment.fasttext.size: {size} is not in corpus.sizes {self.sizes}")
        return size

    def fasttext_lms(self) -> list[str]:
        """The fastText baseline's lm id (its contextual-retrieval table), when the run has one."""
        return [f"fasttext/{self.fasttext_size()}"] if self.fasttext["enabled"] and self.align_langs() else []

    def fasttext_hparams(self) -> dict:
        """What decides the fastText vectors (alignment.fasttext less its switches and runtime settings)."""
        return {key: self.fasttext[key] for key in ("dim", "window", "epochs", "min_count", "min_n", "max_n", "seed")}

    def fasttext_retrieval_inputs(self, wildcards) -> dict:
        langs = self.align_langs()
        splits = ["test", self.seen_split()] + [f"train{n}" for n in self.align_ft["sizes"]]
        pairs = {lang: self.word_pair_files(lang, dict.fromkeys(splits)) for lang in langs}
        vectors = [f"{self.results}/models/fasttext/{wildcards.size}/{lang}.kv" for lang in [self.pivot, *langs]]
        return dict(
            vectors=vectors,
            pairs=[path for by_split in pairs.values() for files in by_split.values() for path in files],
        )

    def align_baselines_targets(self) -> list[str]:
        """The fastText baseline's retrieval table (rule all; the rotations are inputs of retrieval and XNLI)."""
        return [f"{self.results}/eval/contextual_retrieval/{lm}.parquet" for lm in self.fasttext_lms()]
