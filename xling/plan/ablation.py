"""Conneau et al. (2020) ablations (rules/ablate.smk): the setting names, parsed without torch (the trainer,
xling.models.ablation, the findings and the report read the same spec), and which bilingual BERTs (settings x pairs, model ids
ablation/{setting}/{pivot}-{lang}) the run trains, on which tokens and with which settings. A mixin of Plan."""

from __future__ import annotations

import posixpath
import re
from types import SimpleNamespace

SETTING = (
    r"default|default-anchors|wiki-cc|no-anchors|extra-anchors|sep-emb|sep-l[1-9]\d*|sep-emb-l[1-9]\d*"  # {setting}
)
PAIR = r"[a-z][a-z0-9_]*-[a-z][a-z0-9_]*"  # {pair}
TASKS = ("xnli", "ner", "parsing", "pos")  # ablation.tasks' choices, each with its ablation.finetune grid


SETTING_NAME = re.compile(
    r"(?P<name>default|default-anchors|wiki-cc|no-anchors|extra-anchors)|sep(?P<emb>-emb)?(?:-l(?P<layers>[1-9]\d*))?"
)


def parse_setting(name: str) -> dict:
    """{separate_embeddings, separate_layers, anchors (default | union | none | extra), domain (same | other)} of a
    setting name (xling.models.ablation's docstring); ValueError for any other name."""
    match = SETTING_NAME.fullmatch(name)
    if not match or name == "sep":
        raise ValueError(
            f"unknown ablation setting {name!r}: default, default-anchors, wiki-cc, no-anchors, extra-anchors, sep-emb, "
            "sep-l<k>, sep-emb-l<k>"
        )
    return {
        "separate_embeddings": bool(match["emb"]),
        "separate_layers": int(match["layers"] or 0),
        "anchors": {"default-anchors": "union", "no-anchors": "none", "extra-anchors": "extra"}.get(
            match["name"], "default"
        ),
        "domain": "other" if name == "wiki-cc" else "same",
    }


class AblationPlan:
    @property
    def ablation(self) -> dict:
        return self.config["ablation"]  # defaults filled in by the schema

    def ablation_pairs(self) -> list[str]:
        """`{pivot}-{lang}` of each language of ablation.pairs that the run has (null: every target)."""
        named = self.ablation["pairs"]
        return [f"{self.pivot}-{lang}" for lang in self.targets if named is None or lang in named]

    def ablation_size(self) -> int:
        """The corpus size the ablations train on (ablation.size, null: the run's smallest)."""
        size = self.ablation["size"] or min(self.sizes)
        if size not in self.sizes:
            raise ValueError(f"ablation.size: {size} is not in corpus.sizes {self.sizes}")
        return size

    def ablation_models(self) -> list[str]:
        """Model ids of every ablation this run trains (settings x pairs)."""
        settings = self.ablation["settings"]
        models = [f"ablation/{s}/{p}" for s in settings for p in self.ablation_pairs()]
        if models and not self.source.other_domain and "wiki-cc" in settings:
            raise ValueError(
                "ablation.settings: wiki-cc needs the second language's text from another domain; "
                "xling generates it for synthetic data only (no Common Crawl source yet): leave "
                "wiki-cc out"
            )
        return models

    def ablation_model_dir(self, lm: str) -> str:
        return f"{self.results}/models/{lm}"

    def ablation_lm_params(self, lm: str) -> dict:
        """lm_params of an ablation: our BERT's label and columns at the ablation's size and stream length, and
        the trainer's settings (the result tables' hparams)."""
        window = self.ablation["window"]
        cap = self.language["max_length"]
        return dict(
            kind="ablation",
            path=self.ablation_model_dir(lm),
            label="bert",
            size=self.ablation_size(),
            window=window,
            max_length=min(window, cap) if cap else window,
            revision=None,
            hparams=self.ablation_hparams(lm.split(posixpath.sep)[1]),
        )

    def ablation_spec(self, setting: str) -> dict:
        """parse_setting's spec as this run trains it: a setting with separate parameters takes language-specific
        vocabularies in their union (anchors union) under ablation.vocab.sep_settings language, Conneau et al.'s
        Table 1 (40k/40k in every Sep row); the joint vocabulary under joint."""
        spec = parse_setting(setting)
        separate = spec["separate_embeddings"] or spec["separate_layers"]
        if separate and self.ablation["vocab"]["sep_settings"] == "language":
            spec["anchors"] = "union"
        return spec

    def ablation_own_vocab(self, setting: str) -> bool:
        """Whether a setting trains on language-specific vocabularies (Default anchors, no anchors, the Sep rows
        with ablation.vocab.sep_settings language)."""
        return self.ablation_spec(setting)["anchors"] in ("union", "none")

    def ablation_vocabs(self, wildcards) -> list[str]:
        """The vocabulary file(s) a model trains on: the study's (ablation.vocab.source study), or the pair's
        learned on its text (pair): one joint, or one per language where the setting's are language-specific."""
        if self.ablation["vocab"]["source"] == "study":
            return [self.vocab_source()]
        if self.ablation_own_vocab(wildcards.setting):  # a language's own is the same in every pair
            return [f"{self.results}/ablation/vocab/own/{lang}.txt" for lang in wildcards.pair.split("-")]
        return [f"{self.results}/ablation/vocab/{wildcards.pair}/joint.txt"]

    def ablation_joint_vocab(self, pair: str) -> str:
        """The joint vocabulary of a pair: the study's, or the pair's own (ablation.vocab.source)."""
        return self.ablation_vocabs(SimpleNamespace(pair=pair, setting="default"))[0]

    def ablation_vocab_corpora(self, wildcards) -> list[str]:
        """The text a vocabulary learns from at ablation.size: a pair's two languages (joint) or a language's."""
        langs = wildcards.pair.split("-") if hasattr(wildcards, "pair") else [wildcards.lang]
        return [f"{self.results}/corpus/{self.ablation_size()}/{lang}.txt" for lang in langs]

    def ablation_pair_tokens(self, pair: str, lang: str, own: bool = False) -> str:
        """A language's token file at ablation.size in the pair's vocabulary (own: its language-specific one)."""
        if self.ablation["vocab"]["source"] == "study":
            return f"{self.results}/tokens/{self.ablation_size()}/{lang}.txt"
        return (
            f"{self.results}/ablation/tokens/own/{lang}.txt"
            if own
            else f"{self.results}/ablation/tokens/{pair}/joint/{lang}.txt"
        )

    def ablation_tokens(self, wildcards) -> list[str]:
        """Token files of the pair in its vocabulary: code-switched once (extra anchors, code_switch.sampling
        once), the second language's from another domain (wiki-cc), or as they are."""
        setting = parse_setting(wildcards.setting)
        pair, langs = wildcards.pair, wildcards.pair.split("-")
        if setting["anchors"] == "extra" and self.ablation["code_switch"]["sampling"] == "once":
            return [f"{self.results}/ablation/tokens/extra-anchors/{pair}/{lang}.txt" for lang in langs]
        tokens = [self.ablation_pair_tokens(pair, lang, self.ablation_own_vocab(wildcards.setting)) for lang in langs]
        if setting["domain"] == "other":
            tokens[1] = f"{self.results}/ablation/tokens/wiki-cc/{pair}/{langs[1]}.txt"
        return tokens

    def ablation_dev_tokens(self, wildcards) -> list[str]:
        """The pivot's held-out tokens an ablation BERT is selected on (selection dev_perplexity), tokenized with
        the model's vocabulary (the pair's joint one, or the pivot's own), as its training tokens are."""
        if not self.dev_tokens(self.ablation_hparams(wildcards.setting), self.pivot):
            return []
        if self.ablation["vocab"]["source"] == "study":
            return self.dev_tokens(self.ablation_hparams(wildcards.setting), self.pivot)
        if self.ablation_own_vocab(wildcards.setting):
            return [f"{self.results}/ablation/tokens/dev/own/{self.pivot}.txt"]
        return [f"{self.results}/ablation/tokens/dev/{wildcards.pair}/joint/{self.pivot}.txt"]

    def ablation_switch_table(self, wildcards) -> list[str]:
        """The translations table of extra anchors drawn per batch (code_switch.sampling batch); [] otherwise."""
        if (
            parse_setting(wildcards.setting)["anchors"] != "extra"
            or self.ablation["code_switch"]["sampling"] != "batch"
        ):
            return []
        return [f"{self.results}/ablation/switch/{wildcards.pair}.json"]

    def ablation_hparams(self, setting: str) -> dict:
        """The trainer's settings: the bert block with ablation.bert over it, the stream length and the setting's
        spec."""
        share = self.ablation["sampling_share"]
        spec = {
            **self.ablation_spec(setting),
            "sampling_exponent": self.ablation["sampling_exponent"],
            "sampling_share": share,
        }
        if share == "sentences":  # each language's corpus is cut to ablation.size sentences (wiki-cc's too)
            spec["sentences"] = self.ablation_size()
        switch = self.ablation["code_switch"]
        if spec["anchors"] == "extra" and switch["sampling"] == "batch":  # the trainer draws them
            spec["code_switch"] = {k: switch[k] for k in ("rate", "max_fraction", "seed")}
        return {
            **self.bert_settings(self.config["bert"], self.ablation["bert"]),
            "window": self.ablation["window"],
            "ablation": spec,
        }

    def ablation_grid(self, task: str) -> dict[str, dict]:
        """{variant: the fine-tuning settings of that grid point} of Conneau et al.'s search for `task`
        (ablation.finetune.<task>, §3.2), at the first freeze depth: f{k}-b{batch}-lr{rate}[-clr{head rate}]."""
        recipe = self.ablation["finetune"][task]
        fixed = {
            "epochs": recipe["epochs"],
            "warmup": recipe["warmup"],
            "schedule": recipe["schedule"],
            "weight_decay": recipe["weight_decay"],
        }
        freeze = self.transfer["freeze"][0]
        grid = {}
        for batch in recipe["batch_size"]:
            for rate in recipe["learning_rate"]:
                for head in recipe["classifier_learning_rate"] or [None]:
                    name = f"f{freeze}-b{batch}-lr{rate:g}" + ("" if head is None else f"-clr{head:g}")
                    point = {**fixed, "batch_size": batch, "learning_rate": rate}
                    grid[name] = point if head is None else {**point, "classifier_learning_rate": head}
        return grid

    def ablation_runs(self) -> list[tuple[str, str, str]]:
        """(task, lm, variant) of every ablation's fine-tuning: each task of ablation.tasks, each grid point."""
        grids = {task: self.ablation_grid(task) for task in TASKS if task in self.ablation["tasks"]}
        return [
            (task, lm, variant) for lm in self.ablation_models() for task, grid in grids.items() for variant in grid
        ]

    def ablation_seeds(self) -> list[int]:
        """The fine-tuning seeds of every ablation: ablation.seeds, else transfer.seeds."""
        return list(self.ablation.get("seeds") or self.transfer["seeds"])

    def ablation_transfer_parts(self) -> list[str]:
        """Transfer tables of every ablation: each fine-tuning of ablation_runs, each of ablation_seeds."""
        return [
            f"{self.results}/eval/transfer/{task}/{lm}/{variant}/seed{seed}.parquet"
            for task, lm, variant in self.ablation_runs()
            for seed in self.ablation_seeds()
        ]

    def ablation_targets(self) -> list[str]:
        return (
            [f"{self.results}/eval/ablation.{ext}" for ext in ("parquet", "csv")]
            if self.ablation_transfer_parts()
            else []
        )

    @staticmethod
    def ablation_langs(lm: str | None, langs: list[str]) -> list[str]:
        """The languages of `langs` an ablation has a view of: its pair's; all for another model."""
        if not lm or not lm.startswith("ablation/"):
            return langs
        pair = lm.split(posixpath.sep)[2].split("-")
        return [lang for lang in langs if lang in pair]
