"""What a model id ({lm} wildcard, xling.plan.models) means for a job: where the model is loaded from, its
settings and table columns, and the text its representations are taken over. A mixin of Plan."""

from __future__ import annotations

import os
import posixpath
from types import SimpleNamespace

from xling.plan.models import aligned_base, parse_grid


class ModelPlan:
    def lm_kind(self, wildcards) -> tuple:
        """(kind, size, window, hf name) of the {lm} wildcard of a BERT (an aligned model: its base's)."""
        lm = (aligned_base(wildcards.lm) or (0, wildcards.lm))[1]
        kind, _, rest = lm.partition(posixpath.sep)
        if kind == "bert":
            return "bert", *parse_grid(rest), None
        return "hf", 0, 0, self.hf_models[rest]

    def bert_path(self, wildcards) -> str:
        """Where a BERT is loaded from: our model directory, an aligned model's directory, or a checkpoint's
        directory (a hub id's: staged in the run)."""
        if aligned_base(wildcards.lm):
            return f"{self.results}/models/{wildcards.lm}"
        kind, size, window, name = self.lm_kind(wildcards)
        return self.model_dir("bert", size, window) if kind == "bert" else self.hf_path(name)

    def lm_model(self, wildcards):
        """Model input: our BERT's, an ablation's or an aligned model's directory, or a Hugging Face checkpoint's
        directory (a hub id's: staged by fetch_checkpoint)."""
        if wildcards.lm.startswith("ablation/"):
            return self.ablation_model_dir(wildcards.lm)
        path = self.bert_path(wildcards)
        bert = self.lm_kind(wildcards)[0] == "bert"
        staged = path != self.lm_kind(wildcards)[3]  # a hub id's directory in the run
        return path if bert or aligned_base(wildcards.lm) or staged or os.path.isdir(path) else []

    def lm_params(self, wildcards) -> dict:
        """Plain settings of the model: what scripts load and the table's model/size/window columns (an aligned
        model: its base's kind, size and window, labelled `{base label}+aligned{n}`, loaded from its directory)."""
        if wildcards.lm.startswith("ablation/"):
            return self.ablation_lm_params(wildcards.lm)
        kind, size, window, name = self.lm_kind(wildcards)
        cap = self.language["max_length"]
        if kind == "bert":
            max_length = min(window, cap) if cap else window  # positions beyond the training window are untrained
            params = dict(
                kind=kind,
                path=self.model_dir("bert", size, window),
                label="bert",
                size=size,
                window=window,
                max_length=max_length,
                revision=None,
            )
        else:
            params = dict(
                kind=kind,
                path=self.hf_path(name),
                label=name,
                size=0,
                window=0,
                max_length=cap,
                revision=self.language["hf_revisions"].get(name),
            )
        aligned = aligned_base(wildcards.lm)
        if aligned:
            params.update(path=self.bert_path(wildcards), label=f"{params['label']}+aligned{aligned[0]}", revision=None)
        return params

    def base_params(self, wildcards) -> dict:
        """The lm_params of an aligned model's base (the {base} wildcard): what the alignment loads."""
        return self.lm_params(SimpleNamespace(lm=wildcards.base))

    def any_lm(self, wildcards) -> dict:
        """Settings of the {lm} wildcard of any model: kind (static, bert, hf), label (the table's model), size,
        window (0 for a checkpoint), path and revision."""
        model, _, rest = wildcards.lm.partition("/")
        if model in ("glove", "word2vec"):
            size, window = parse_grid(rest)
            return dict(kind="static", label=model, size=size, window=window, path=None, revision=None)
        return self.lm_params(wildcards)

    def hf_reads_token_files(self) -> bool:
        """Whether a Hugging Face checkpoint reads the run's token files: they are in its vocabulary when the run
        uses mBERT's (tokenizer.vocab: mbert); otherwise it tokenizes the largest corpus sample with its own
        tokenizer."""
        return self.config["tokenizer"]["vocab"] == "mbert"

    def represent_text(self, wildcards) -> list[str]:
        """The text (one file per language) a BERT's word and language means are taken over: our BERT's token
        files of its data size; a checkpoint's the largest sample, as token files or as corpus
        (`hf_reads_token_files`)."""
        kind, size, _, _ = self.lm_kind(wildcards)
        folder = "tokens"
        if kind == "hf":
            size = max(self.sizes)
            folder = "tokens" if self.hf_reads_token_files() else "corpus"
        return [f"{self.results}/{folder}/{size}/{lang}.txt" for lang in self.langs]

    def represent_lm(self, wildcards) -> dict:
        """What the extraction loads and how it reads the text: the model (path, hub revision), the chunk length
        (our BERT: its training window, or represent.max_length below it; a checkpoint: represent.max_length,
        null = its own maximum), and for a checkpoint reading the corpus, the run's lowercasing its words are
        compared in."""
        kind, size, window, name = self.lm_kind(wildcards)
        cap = self.config["represent"]["max_length"]
        if kind == "bert":
            return dict(
                path=self.bert_path(wildcards), revision=None, max_length=min(window, cap or window), corpus=False
            )
        corpus = not self.hf_reads_token_files()
        revision = None if aligned_base(wildcards.lm) else self.language["hf_revisions"].get(name)
        return dict(
            path=self.bert_path(wildcards),
            revision=revision,
            max_length=cap,
            corpus=corpus,
            **({"lowercase": self.config["tokenizer"]["lowercase"]} if corpus else {}),
        )

    def retrieval_counts(self, wildcards) -> str:
        """Word counts that define a model's retrieval vocabulary: those of its data size (a checkpoint: the
        largest)."""
        size = self.any_lm(wildcards)["size"] or max(self.sizes)
        return f"{self.results}/tokens/{size}/word_counts.parquet"

    def retrieval_lm(self, wildcards) -> dict:
        """The model's columns of the word-retrieval table (nothing else of the model: that comes with its
        vectors)."""
        return {key: self.any_lm(wildcards)[key] for key in ("kind", "label", "size", "window")}
