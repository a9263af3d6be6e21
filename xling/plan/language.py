"""Language-specific information (rules/language.smk, Liu et al.): which models, which languages have the data
of token translation and sentence retrieval (Tatoeba, BUCC), and each job's settings and inputs. A mixin of
Plan."""

from __future__ import annotations


class LanguagePlan:
    def translation_langs(self) -> list[str]:
        return self.source.available(self.language["data"], self.language["pairs"] or self.targets)

    def tatoeba_langs(self) -> list[str]:
        return self.source.available("tatoeba", self.targets)

    def bucc_langs(self) -> list[str]:
        """Targets evaluated on BUCC: those named in sentence_retrieval.bucc_languages (xling.plan.data: on
        synthetic data the schema's default names every target) that have BUCC data."""
        default = self.schema_default("language", "sentence_retrieval", "bucc_languages")
        return self.source.available("bucc", self.source.bucc_named(self.sent["bucc_languages"], default, self.targets))

    def language_models(self) -> list[str]:
        """Model ids ({lm} wildcard): bert/{size}-w{window} for the BERTs of language.sizes x language.windows
        (empty: all), hf/{slug} per checkpoint."""
        sizes, windows = self.language["sizes"] or self.sizes, self.language["windows"] or self.windows
        for key, chosen, known, where in (
            ("sizes", sizes, self.sizes, "corpus.sizes"),
            ("windows", windows, self.windows, "windows"),
        ):
            unknown = sorted(set(chosen) - set(known))
            if unknown:
                raise ValueError(f"language.{key}: {unknown} are not in {where} {known}")
        lms = (
            [f"bert/{s}-w{w}" for s in self.sizes if s in sizes for w in self.windows if w in windows]
            if "bert" in self.models
            else []
        )
        return lms + [f"hf/{slug}" for slug in self.hf_models]

    def translation_settings(self) -> dict:
        """The language.* settings that change token-translation numbers (the model's own are in lm_params)."""
        keys = (
            "data",
            "directions",
            "layers",
            "alphas",
            "mean",
            "max_sentences",
            "vocab_min_count",
            "bleu_tokenize",
            "bleu_unit",
            "samples",
            "mean_positions",
            "shift_positions",
        )
        return {key: self.language[key] for key in keys}

    def sentence_retrieval_settings(self, wildcards) -> dict:
        """The language.sentence_retrieval settings that change this task's numbers: a BUCC setting reruns no
        Tatoeba job, and the other way round."""
        keys = {
            "tatoeba": ("layer", "all_layers", "mds_alpha", "max_sentences"),
            "bucc": ("layer", "bucc_layers", "bucc_score", "bucc_k", "mds_alpha"),
        }[wildcards.task]
        return {**{key: self.sent[key] for key in keys}, "pooling": self.sent[f"{wildcards.task}_pooling"]}

    def translation_inputs(self, wildcards) -> dict:
        kind, size, window, _ = self.lm_kind(wildcards)
        lang, pivot, file = wildcards.lang, self.pivot, self.layout.file
        if self.language["data"] == "tatoeba":
            data = [file("tatoeba", lang=lang, side="eng"), file("tatoeba", lang=lang, side=lang)]
        elif self.language["data"] == "xnli":  # the test split, line-aligned translations of the pivot's
            data = [file("xnli", lang=code, split="test") for code in (pivot, lang)]
        else:
            data = [file("parallel", lang=lang, ext=pivot), file("parallel", lang=lang, ext=lang)]
        inputs = dict(pivot_text=data[0], lang_text=data[1])
        if kind == "bert":
            inputs["langs"] = f"{self.results}/reps/{wildcards.lm}/langs.parquet"
        if self.language["data"] == "xnli":  # the token sets V_s, V_t of the translated sentences (Liu et al.)
            return inputs
        if kind == "bert":
            inputs["vocab_files"] = [f"{self.results}/tokens/{size}/{code}.txt" for code in (pivot, lang)]
        elif self.hf_reads_token_files():
            inputs["vocab_files"] = [f"{self.results}/tokens/{max(self.sizes)}/{code}.txt" for code in (pivot, lang)]
        else:  # count the checkpoint's own pieces on the run's corpus sample
            inputs["vocab_corpora"] = [f"{self.results}/corpus/{max(self.sizes)}/{code}.txt" for code in (pivot, lang)]
        return inputs

    def retrieval_inputs(self, wildcards) -> dict:
        lang, file = wildcards.lang, self.layout.file
        if wildcards.task == "tatoeba":
            return dict(xx=file("tatoeba", lang=lang, side=lang), en=file("tatoeba", lang=lang, side="eng"))
        return {
            f"{split}_{side}": file("bucc", lang=lang, split=split, ext=ext)
            for split in ("dev", "test")
            for side, ext in (("xx", lang), ("en", "en"), ("gold", "gold"))
        }

    def translation_parts(self, kind: str) -> list[str]:
        suffix = ".samples.parquet" if kind == "samples" else ".parquet"
        return [
            f"{self.results}/eval/token_translation/{lm}/{self.pivot}-{lang}{suffix}"
            for lm in self.language_models()
            for lang in self.translation_langs()
        ]

    def retrieval_parts(self, task: str) -> list[str]:
        langs = self.tatoeba_langs() if task == "tatoeba" else self.bucc_langs()
        return [
            f"{self.results}/eval/sentence_retrieval/{task}/{lm}/{lang}.parquet"
            for lm in self.language_models()
            for lang in langs
        ]
