"""Zero-shot transfer (rules/transfer.smk): which model fine-tunes which task in which variants, which languages
it is tested on, and the settings and files of each job. A mixin of Plan."""

from __future__ import annotations

TASKS = ("xnli", "pos", "parsing", "ner")
WEIGHT_KEYS = (
    "epochs",
    "batch_size",
    "learning_rate",
    "warmup",
    "weight_decay",
    "dropout",
    "max_length",
    "max_train",
    "max_eval",
)  # max_eval: the dev examples choose the epoch
PARSER_KEYS = ("arc_dim", "label_dim")
XNLI_KEYS = ("pooling",)  # the classifier's input
#: alignment.xnli's keys that decide a Cao et al. fine-tuning's weights, over transfer.xnli's (appendix A.1)
CAO_KEYS = ("epochs", "batch_size", "learning_rate", "warmup", "weight_decay", "betas", "eps", "dropout")
CAO, ROTATED = "cao", "rot"  # variant suffixes of Cao et al.'s XNLI fine-tunings: f{k}-cao, f{k}-rot{kind}


def variant_suffix(variant: str) -> str:
    """The part of a variant after its depth: "" (f{k}), "zm", "cao", "rot{kind}"; "static" for static vectors."""
    return variant if variant == "static" else variant.partition("-")[2]


def is_alignment_variant(variant: str) -> bool:
    """A fine-tuning of Cao et al.'s study (alignment.xnli's recipe and selection): f{k}-cao, f{k}-rot{kind}.
    The language experiments' tables leave its rows out; the alignment study reads only these."""
    suffix = variant_suffix(str(variant))
    return suffix == CAO or suffix.startswith(ROTATED)


def rotation_kind(variant: str) -> str | None:
    """The rotation a variant fine-tunes and tests with (f{k}-rot{kind}), else None."""
    suffix = variant_suffix(variant)
    return suffix[len(ROTATED) :] if suffix.startswith(ROTATED) else None


class TransferPlan:
    def check_transfer(self) -> None:
        self.transfer = self.config["transfer"]
        if self.transfer["selection"] == "avg_dev" and self.transfer["zero_mean"]:
            # a zero-mean model needs each dev language's own mean to be scored; the loop selects with the pivot's
            raise ValueError(
                "transfer.selection: avg_dev cannot select zero-mean fine-tunings; set "
                "transfer.zero_mean: false or selection: en_dev"
            )
        self.finetune_settings = {task: self.task_settings(task) for task in TASKS}
        cao = self.config["alignment"]["xnli"]
        self.cao_settings = {**self.finetune_settings["xnli"], **{key: cao[key] for key in CAO_KEYS}}
        self.test_languages = {task: self.transfer[task]["languages"] for task in TASKS}
        # {lm: dict(sentences, layer, files={kind: {lang: path}})}: the rotations of a base BERT's other languages
        # that its f{k}-rot{kind} fine-tunings select and test with (rules/align_baselines.smk registers them)
        self.transfer_rotations = {}

    def task_settings(self, task: str) -> dict:
        """The settings that decide a fine-tuned model's weights for `task` (not the test languages)."""
        settings = {key: self.transfer[task][key] for key in WEIGHT_KEYS}
        if task == "parsing":
            settings.update({key: self.transfer[task][key] for key in PARSER_KEYS})
        if task == "xnli":
            settings.update({key: self.transfer[task][key] for key in XNLI_KEYS})
        return settings

    def transfer_variants(self, lm: str) -> list[str]:
        """Fine-tuning variants of a model: `static` (frozen vectors), f{k} (embeddings + layers 1..k frozen) and
        f{k}-zm (zero-mean in training and testing, at the first depth). The BERTs of the language experiments
        get every depth and zero-mean; the others the first depth only (the XNLI grid). Cao et al.'s study: an
        aligned model only f{k}-cao, its base also f{k}-cao and one f{k}-rot{kind} per rotation (at the first
        depth, with alignment.xnli's recipe)."""
        freeze = self.transfer["freeze"]
        mds_depth = [self.mds_freeze()] if self.transfer["mds"] and self.mds_freeze() not in freeze else []
        if not lm.startswith(("bert/", "hf/", "aligned/")):
            return ["static"]
        cao = [f"f{freeze[0]}-{CAO}"]
        if lm.startswith("aligned/"):
            return cao
        if lm not in self.alignment_bases():
            cao = []
        elif lm in self.rotation_lms():
            cao += [f"f{freeze[0]}-{ROTATED}{kind}" for kind in self.rotation["kinds"]]
        if lm not in self.language_models():
            return [f"f{freeze[0]}", *cao]
        return (
            [f"f{k}" for k in [*freeze, *mds_depth]]
            + ([f"f{freeze[0]}-zm"] if self.transfer["zero_mean"] else [])
            + cao
        )

    def mds_freeze(self) -> int:
        """The freeze depth the language experiments' BERTs are tested with MDS at (Liu et al. full, XNLI: "fixing
        the first six layers ... added MDS to the hidden representations of the 6-th layer"): transfer.mds_freeze,
        null = half of bert.num_layers rounded down (6 of 12; checkpoints get the same depth). transfer_variants
        plans it beside transfer.freeze, so the MDS claims have their paper's depth in every run."""
        depth = self.transfer["mds_freeze"]
        depth = self.config["bert"]["num_layers"] // 2 if depth is None else depth
        if depth > self.config["bert"]["num_layers"]:
            raise ValueError(
                f"transfer.mds_freeze: {depth} is more than bert.num_layers ({self.config['bert']['num_layers']})"
            )
        return depth

    def transfer_runs(self) -> list[tuple[str, str, str]]:
        """(task, lm, variant) of every fine-tuning: XNLI on every model x size x window of transfer.windows, the
        BERTs of the language experiments and of alignment (and Hugging Face checkpoint, and aligned model; Cao
        et al.'s variants XNLI only); the other tasks on the language experiments' BERTs."""
        runs = []
        for task in self.transfer["tasks"]:
            lms = [f"{m}/{s}-w{w}" for m in self.models for s in self.sizes for w in self.xnli_windows()]
            kept = [lm for lm in (*self.language_models(), *self.alignment_bases()) if lm.startswith("bert/")]
            lms += [lm for lm in dict.fromkeys(kept) if lm not in lms]  # theirs whatever transfer.windows says
            lms += [f"hf/{x}" for x in self.hf_models] + self.aligned_models()
            if task != "xnli":
                lms = self.language_models()
            runs += [
                (task, lm, variant)
                for lm in lms
                for variant in self.transfer_variants(lm)
                if self.transfer_langs(task) and (task == "xnli" or not is_alignment_variant(variant))
            ]
        return runs

    def xnli_windows(self) -> list[int]:
        """The windows of the XNLI grid (transfer.windows, null = every one of `windows`): no claim compares XNLI
        across windows, so a preset may fine-tune one window's models only."""
        chosen = self.transfer["windows"]
        unknown = sorted(set(chosen or ()) - set(self.windows))
        if unknown:
            raise ValueError(f"transfer.windows: {unknown} are not in windows {self.windows}")
        return [w for w in self.windows if chosen is None or w in chosen]

    def transfer_parts(self) -> list[str]:
        return [
            f"{self.results}/eval/transfer/{task}/{lm}/{variant}/seed{seed}.parquet"
            for task, lm, variant in self.transfer_runs()
            for seed in self.transfer["seeds"]
        ]

    def transfer_langs(self, task: str, lm: str | None = None) -> list[str]:
        """Languages a task is tested on: the pivot and the configured ones that have the task's data (real UD:
        a test split); of an ablation, those of its pair."""
        named = self.test_languages[task]
        langs = [lang for lang in self.langs if named is None or lang in named or lang == self.pivot]
        return self.source.task_languages(task, self.ablation_langs(lm, langs)) + self.low_resource_langs(task, lm)

    def low_resource_langs(self, task: str, lm: str | None = None) -> list[str]:
        """The test-only treebanks without a dev split that parsing is also tested on (transfer.parsing.low_resource,
        Liu et al. short §5.2), where the source has them (real data); not of an ablation (Conneau et al. test its
        pair)."""
        if task != "parsing" or (lm is not None and lm.startswith("ablation/")):
            return []
        return [lang for lang in self.source.low_resource if lang not in self.langs]

    def task_splits(self, task: str, lang: str) -> list[str]:
        return self.source.task_splits(task, lang)

    def selection(self, variant: str | None = None) -> str:
        """How a fine-tuning selects its epoch: alignment.xnli's for Cao et al.'s variants, else transfer's."""
        alignment = variant is not None and is_alignment_variant(variant)
        return self.config["alignment"]["xnli"]["selection"] if alignment else self.transfer["selection"]

    def selection_langs(self, task: str, lm: str | None = None, variant: str | None = None) -> list[str]:
        """Languages whose dev sets select the epoch: the pivot, or (avg_dev) every tested language with a dev
        split; Cao et al.'s fine-tunings (alignment.xnli.selection_languages aligned) the pivot and the languages
        aligned, "the average accuracy across the six languages" (Table 1 note a) of config.yaml."""
        langs = self.transfer_langs(task, lm) if self.selection(variant) == "avg_dev" else [self.pivot]
        if (
            self.selection(variant) == "avg_dev"
            and is_alignment_variant(variant)
            and self.config["alignment"]["xnli"]["selection_languages"] == "aligned"
        ):
            langs = [lang for lang in langs if lang == self.pivot or lang in self.align_langs()]
        return [lang for lang in langs if "dev" in self.task_splits(task, lang)]

    def transfer_model_inputs(self, wildcards) -> dict:
        """The pretrained model (BERT directory, or static vectors + the run's vocabulary)."""
        lm = self.any_lm(wildcards)
        if lm["kind"] == "static":
            return dict(
                vectors=f"{self.model_dir(lm['label'], lm['size'], lm['window'])}/vectors.bin",
                vocab=self.vocab_source(),
            )
        return dict(model=self.lm_model(wildcards))

    def mean_corpora(self, wildcards, langs: list[str]) -> dict:
        """The text zero-mean and MDS compute the language means on: each language's corpus sample; a low-resource
        treebank's own train split (no corpus of these languages is pinned: a deviation, resources/protocol.yaml
        liu2020short.parsing_treebanks)."""
        size = self.any_lm(wildcards)["size"] or max(self.sizes)
        low = self.low_resource_langs(wildcards.task, wildcards.lm)
        return {
            lang: self.layout.task_file(wildcards.task, lang, "train")
            if lang in low
            else f"{self.results}/corpus/{size}/{lang}.txt"
            for lang in langs
        }

    def finetune_inputs(self, wildcards) -> dict:
        """The job's inputs: the fine-tuning's (the pretrained model, the pivot's train set, the dev sets that
        select, the pivot's corpus sample for zero-mean) and the scoring's (transfer_eval_inputs)."""
        task, variant, file = wildcards.task, wildcards.variant, self.layout.task_file
        inputs = self.transfer_model_inputs(wildcards)
        inputs["train"] = file(task, self.pivot, "train")
        dev_langs = self.selection_langs(task, wildcards.lm, variant)
        inputs["dev"] = [file(task, lang, "dev") for lang in dev_langs]
        if variant.endswith("-zm"):
            inputs["corpus"] = self.mean_corpora(wildcards, [self.pivot])[self.pivot]
        if self.uses_rotations(wildcards):  # the dev languages' rotations: the epoch is selected on rotated dev sets
            inputs["dev_rotations"] = [
                path for lang, path in self.rotations_tested(wildcards).items() if lang in dev_langs
            ]
        return {**inputs, **self.transfer_eval_inputs(wildcards)}  # one job fine-tunes and scores

    def transfer_eval_inputs(self, wildcards) -> dict:
        """What scoring the fine-tuned model reads besides it: every tested language's splits, the corpus samples
        of the language means (zero-mean, MDS) and the rotations applied before the classifier."""
        task, variant, lm = wildcards.task, wildcards.variant, wildcards.lm
        inputs = {
            "data": [
                self.layout.task_file(task, lang, split)
                for lang in self.transfer_langs(task, lm)
                for split in self.task_splits(task, lang)
            ]
        }
        if variant.endswith("-zm") or self.uses_mds(wildcards):
            inputs["corpora"] = list(self.mean_corpora(wildcards, self.transfer_langs(task, lm)).values())
        if self.uses_rotations(wildcards):
            inputs["rotations"] = list(self.rotations_tested(wildcards).values())
        return inputs

    def uses_rotations(self, wildcards) -> bool:
        """An f{k}-rot{kind} XNLI fine-tuning of a base BERT with registered rotations."""
        return (
            wildcards.task == "xnli"
            and wildcards.lm in self.transfer_rotations
            and rotation_kind(wildcards.variant) is not None
        )

    def rotations_tested(self, wildcards) -> dict:
        """{lang: path} of the variant's rotation of each tested language (the pivot has none)."""
        langs = self.transfer_langs(wildcards.task)
        by_lang = self.transfer_rotations[wildcards.lm]["files"][rotation_kind(wildcards.variant)]
        return {lang: path for lang, path in by_lang.items() if lang in langs}

    def rotation_params(self, wildcards, langs) -> dict:
        """The rotation of an f{k}-rot{kind} job: its parallel sentences, layer, and {kind: [lang, ...]} in the
        order of the job's `rotations` input."""
        rotation = self.transfer_rotations[wildcards.lm]
        return dict(
            sentences=rotation["sentences"],
            layer=rotation["layer"],
            langs={
                rotation_kind(wildcards.variant): [lang for lang in self.rotations_tested(wildcards) if lang in langs]
            },
        )

    def shift_settings(self) -> dict:
        """How zero-mean and MDS shift a BERT: the layer, and the language means (language.* say which mean over
        which positions, and which positions are shifted)."""
        return dict(
            layer=self.transfer["layer"],
            sentences=self.transfer["mean_sentences"],
            tokens=self.transfer["mean_tokens"],
            stat=self.language["mean"],
            positions=self.language["mean_positions"],
            shift_positions=self.language["shift_positions"],
        )

    def uses_mds(self, wildcards) -> bool:
        """A language experiments' BERT at a plain variant: every planned depth (transfer.freeze, and mds_freeze, the
        full paper's XNLI depth; the short paper names none for POS and parsing) is tested with MDS."""
        variant = wildcards.variant
        return (
            self.transfer["mds"]
            and variant.startswith("f")
            and variant_suffix(variant) == ""
            and wildcards.lm in self.language_models()
        )

    def transfer_params(self, wildcards) -> dict:
        """What changes a fine-tuning's weights, besides the model and the data: only the settings this variant
        uses."""
        variant = wildcards.variant
        alignment = is_alignment_variant(variant)
        settings = self.cao_settings if alignment else self.finetune_settings[wildcards.task]
        if wildcards.lm.startswith("ablation/"):  # a point of Conneau et al.'s search (ablation.finetune)
            settings = {**settings, **self.ablation_grid(wildcards.task)[variant]}
        dev_langs = self.selection_langs(wildcards.task, wildcards.lm, variant)
        run = dict(
            task=wildcards.task,
            seed=int(wildcards.seed),
            selection=self.selection(variant),
            dev_langs=dev_langs,
            pivot=self.pivot,
        )
        if variant == "static":  # the run's WordPiece tokenizer; the InferSent classifier's own size and rate
            static = self.transfer["static"]
            run.update(freeze=-1, lowercase=self.config["tokenizer"]["lowercase"])
            settings = {
                **{k: v for k, v in settings.items() if k not in XNLI_KEYS},  # InferSent pools its own way
                "static_hidden": static["hidden"],
                "learning_rate": static["learning_rate"],
            }
        else:
            run["freeze"] = int(variant[1:].split("-")[0])
        if variant.endswith("-zm"):
            run["zero_mean"] = self.shift_settings()
        if self.uses_rotations(wildcards):
            run["rotation"] = self.rotation_params(wildcards, dev_langs)
        return {**run, "settings": settings}

    def transfer_eval_params(self, wildcards) -> dict:
        """What changes the scores of a fine-tuned model (its own settings come with it): the test languages and
        splits, and the shift settings and NER repair where they apply. The same job fine-tunes and scores, so a
        change here reruns it: the fine-tuning resumes from its last checkpoint (keyed by transfer_params and the
        data), so only the scoring is redone."""
        task, variant = wildcards.task, wildcards.variant
        run = dict(
            task=task,
            pivot=self.pivot,
            langs={lang: self.task_splits(task, lang) for lang in self.transfer_langs(task, wildcards.lm)},
        )
        if variant == "static":
            run["lowercase"] = self.config["tokenizer"]["lowercase"]
        elif variant.endswith("-zm"):
            run["zero_mean"] = self.shift_settings()
        elif self.uses_mds(wildcards):
            run["mds"] = {**self.shift_settings(), "alphas": self.transfer["alphas"]}
        if self.uses_rotations(wildcards):
            run["rotation"] = self.rotation_params(wildcards, run["langs"])
        if task == "ner":
            run["ner_repair"] = self.transfer["ner_repair"]
        low = self.low_resource_langs(task, wildcards.lm)
        if low and variant != "static":  # their means from the treebank's train text; MDS's alpha by the rule
            run["low_resource"] = dict(
                langs=low, mean_text="treebank train split", alpha=self.transfer["parsing"]["low_resource"]["alpha"]
            )
        return run
