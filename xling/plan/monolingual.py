"""Monolingual BERTs and CKA (rules/analyse.smk): which targets get a monolingual model, at which size and
window, with which settings, and the contextual word level's tasks, layers and baseline. A mixin of Plan."""

from __future__ import annotations

import json

from xling.plan.seeds import seed_of

CONTEXTUAL_TASKS = ("ner", "parsing")


class MonolingualPlan:
    def init_monolingual(self) -> None:
        self.mono, self.cka = self.config["monolingual"], self.config["cka"]  # defaults filled in by the schema
        side_size, side_window, side = self.bilingual_side()
        self.mono_size = self.mono["size"] or side_size
        self.mono_window = self.mono["window"] or side_window
        if self.mono_size not in self.sizes:
            raise ValueError(f"monolingual.size: {self.mono_size} is not in corpus.sizes {self.sizes}")
        if self.mono_window not in self.windows and self.uses_study_bert():
            raise ValueError(
                f"monolingual.window: {self.mono_window} is not in windows {self.windows} (the run's "
                "BERT of that window is the bilingual side: cka.bilingual or "
                "monolingual.contextual.bimlm study)"
            )
        sides = (("size", self.mono_size, side_size), ("window", self.mono_window, side_window))
        for key, ours, theirs in sides if self.mono_targets() else ():  # no monolingual BERT, nothing compared
            if ours != theirs:
                raise ValueError(
                    f"monolingual.{key}: {ours} differs from the bilingual side's {theirs} ({side}): "
                    "Conneau et al.'s sharing and CKA comparisons need both sides trained on the same "
                    f"data size and window; leave monolingual.{key} null or set {side} to {ours}"
                )
        if self.cka["en_prime_seed"] == self.mono["seed"]:
            raise ValueError(
                f"cka.en_prime_seed must differ from monolingual.seed ({self.mono['seed']}): en' is another seed"
            )
        self.en_prime = f"{self.pivot}~{self.cka['en_prime_seed']}"
        self.mono_grid = f"{self.mono_size}-w{self.mono_window}"
        self.mono_contextual = self.mono["contextual"]

    def bilingual_side(self) -> tuple[int, int, str]:
        """(size, window, the keys that set them) of the bilingual models the monolingual BERTs are compared with
        (Conneau et al. §5: sharing, CKA): the ablations' (cka.bilingual ablation: ablation.size, ablation.window)
        or the run's BERT's (study: the largest corpus size, the first window)."""
        if self.cka["bilingual"] == "ablation":
            return self.ablation_size(), self.ablation["window"], "ablation.size, ablation.window"
        return max(self.sizes), self.windows[0], "the largest of corpus.sizes, the first of windows"

    def uses_study_bert(self) -> bool:
        """Whether a comparison reads the run's BERT at the monolingual size and window (CKA's or Figure 5's
        bilingual side set to study) rather than the pair's Default ablation."""
        bimlm = self.mono["contextual"]["enabled"] and self.mono["contextual"]["bimlm"] == "study"
        return "bert" in self.models and (self.cka["bilingual"] == "study" or bimlm)

    def mono_targets(self) -> list[str]:
        """Targets with a monolingual BERT: monolingual.languages (null: all) among the run's (XNLI's dev and
        test files are written for every language of the run: rules xnli_dev_test, synthetic_data)."""
        named = self.mono["languages"]
        return [lang for lang in self.targets if named is None or lang in named]

    @staticmethod
    def mono_language(mono: str) -> str:
        """The language of a monolingual model name ({lang} or {lang}~{seed})."""
        return mono.split("~")[0]

    def mono_dir(self, mono: str, size=None, window=None) -> str:
        return f"{self.results}/models/mono/{mono}/{size or self.mono_size}-w{window or self.mono_window}"

    def mono_hparams(self, mono: str, window) -> str:
        """The `bert` settings with monolingual.bert over them, the window, monolingual.max_steps, and the
        model's seed: drawn from
        (monolingual.seed, its language), so no two languages' models start from the same weights (with one
        vocabulary, a shared seed would give shared words the same initial embedding); en' ({pivot}~{s}) draws
        it from (s, pivot)."""
        lang, _, seed = mono.partition("~")
        hparams = {
            **self.mono_bert(),
            "window": int(window),
            "seed": seed_of(int(seed) if seed else self.mono["seed"], lang),
        }
        if self.mono["max_steps"]:
            hparams["max_steps"] = self.mono["max_steps"]
        return json.dumps(hparams, sort_keys=True)

    def mono_bert(self) -> dict:
        """The monolingual BERTs' settings that change numbers: the bert block with monolingual.bert over it."""
        return self.bert_settings(self.config["bert"], self.mono["bert"])

    def mono_model_params(self, mono: str) -> dict:
        """The model's columns of the tables: its id and the settings that trained it."""
        return dict(lm=f"mono/{mono}/{self.mono_grid}", hparams=self.mono_hparams(mono, self.mono_window))

    def xnli_files(self, lang: str, split: str) -> list[str]:
        return [
            self.layout.file("xnli", lang=self.pivot, split=split),
            self.layout.file("xnli", lang=lang, split=split),
        ]

    def mono_contextual_tasks(self, lang: str) -> list[str]:
        """The contextual word level's tasks for a target: those among the run's transfer.tasks with data in it
        (transfer_langs); none when monolingual.contextual is disabled."""
        if not self.mono_contextual["enabled"]:
            return []
        return [
            task for task in CONTEXTUAL_TASKS if task in self.transfer["tasks"] and lang in self.transfer_langs(task)
        ]

    def mono_contextual_langs(self) -> list[str]:
        """Targets with a monolingual BERT and a task of the contextual word level: one job each (one map per
        layer for all its tasks)."""
        return [lang for lang in self.mono_targets() if self.mono_contextual_tasks(lang)]

    def mono_contextual_layers(self) -> list[int]:
        """monolingual.contextual.layers, checked against the models' depth (null: every layer, 0 =
        embeddings): the shallower of the monolingual BERTs and the biMLM baseline's."""
        depth = min(self.mono_bert()["num_layers"], self.bimlm_bert()["num_layers"])
        layers = self.mono_contextual["layers"]
        if layers is None:
            return list(range(depth + 1))
        if max(layers) > depth:
            raise ValueError(
                f"monolingual.contextual.layers: {max(layers)} is above the models' depth ({depth}: "
                "monolingual.bert and the biMLM's, ablation.bert or bert)"
            )
        return sorted(layers)

    def bimlm_is_ablation(self) -> bool:
        return self.mono_contextual["bimlm"] == "ablation"

    def bimlm_bert(self) -> dict:
        """The biMLM baseline's `bert` settings: the ablations' (ablation.bert over bert) or the run's BERT's."""
        if self.bimlm_is_ablation():
            return self.bert_settings(self.config["bert"], self.ablation["bert"])
        return self.bert_settings(self.config["bert"])

    def mono_contextual_bimlm(self, lang: str) -> list[str]:
        """Figure 5's biMLM baseline for a target: the Default-setting bilingual MLM of the pivot and the target
        (monolingual.contextual.bimlm ablation: ablation/default/{pivot}-{lang}, Conneau et al. §5.1.2), or the
        run's BERT of the monolingual size and window (study; none without BERTs)."""
        if self.bimlm_is_ablation():
            return [self.ablation_model_dir(f"ablation/default/{self.pivot}-{lang}")]
        return [self.model_dir("bert", self.mono_size, self.mono_window)] if "bert" in self.models else []

    def mono_contextual_bimlm_params(self, lang: str) -> dict | None:
        """The biMLM baseline's columns of the table: its id and the settings that trained it (rules/ablate.smk's
        or rules/pretrain.smk's)."""
        if self.bimlm_is_ablation():
            return dict(
                lm=f"ablation/default/{self.pivot}-{lang}",
                hparams=json.dumps(self.ablation_hparams("default"), sort_keys=True),
            )
        if not self.mono_contextual_bimlm(lang):
            return None
        hparams = {**self.bert_settings(self.config["bert"]), "window": self.mono_window}
        return dict(lm=f"bert/{self.mono_grid}", hparams=json.dumps(hparams, sort_keys=True))

    def mono_contextual_task_settings(self, task: str) -> dict:
        """The task's fine-tuning settings (transfer.<task>), its inputs cut to the monolingual window: positions
        beyond it were never trained in these models."""
        settings = dict(self.finetune_settings[task])
        settings["max_length"] = min(settings["max_length"], self.mono_window)
        return settings

    def inference_resources(self) -> dict:
        return dict(gpu=0, device=self.language["device"] or "auto", batch_size=self.language["batch_size"])

    def cka_inputs(self, wildcards) -> dict:
        """The pivot's monolingual model and the target's (en': the pivot's other seed, on the same sentences);
        for a target language the bilingual model (cka.bilingual): the Default-setting bilingual MLM of the
        pivot and the target (ablation/default/{pivot}-{lang}, Conneau et al. §5.2), or the run's multilingual
        BERT of the same size and window."""
        lang = self.mono_language(wildcards.mono)
        inputs = dict(
            models=[self.mono_dir(self.pivot), self.mono_dir(wildcards.mono)],
            xnli=self.xnli_files(lang, self.cka["split"]),
        )
        if lang != self.pivot and self.cka["bilingual"] == "ablation":
            inputs["multilingual"] = self.ablation_model_dir(f"ablation/default/{self.pivot}-{lang}")
        elif lang != self.pivot and "bert" in self.models:
            inputs["multilingual"] = self.model_dir("bert", self.mono_size, self.mono_window)
        return inputs

    def cka_sides(self) -> dict:
        """What each side of the CKA comparison was trained on (sentences per language, window), recorded in the
        table so the findings can check that the bilingual and monolingual sides differ in sharing only
        (Conneau et al. §5.2): the ablations' size and window (cka.bilingual ablation) or the run's BERT's."""
        size, window, _ = self.bilingual_side()
        return dict(
            multilingual_size=int(size),
            multilingual_window=int(window),
            mono_size=int(self.mono_size),
            mono_window=int(self.mono_window),
        )

    def cka_bilingual_length(self) -> int:
        """The longest input of the bilingual model: the monolingual window, cut to the ablations' (cka.bilingual
        ablation), whose positions beyond it were never trained."""
        if self.cka["bilingual"] == "ablation":
            return min(self.mono_window, self.ablation["window"])
        return self.mono_window
