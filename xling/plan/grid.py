"""The run's grid and shared settings, asked of the config dict and the DataSource: paths, languages, the
models x sizes x windows grid, the window sweep, the vocabulary, word retrieval's languages and the report's
settings. The base of Plan (xling.plan.study); each study's planning is a mixin beside it."""

from __future__ import annotations

import re
from types import SimpleNamespace

from xling.plan.data import FUNCTION_SPLIT, DataSource, Layout
from xling.plan.models import hf_slug, is_hub_id

#: a language.random_models name: the directory of the run it is written to (models/hf/<name>)
RANDOM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class GridPlan:
    """The paths and grid of one run. `helpers` bundles the functions of other layers a plan may call but not
    import (the workflow passes them): computed (xling.runtime)."""

    def init_grid(self, config: dict, source: DataSource, schema: dict, helpers: SimpleNamespace) -> None:
        self.config, self.source, self.schema, self.helpers = config, source, schema, helpers
        self.results = f"results/{config['run']}"
        self.langs = config["languages"]
        self.pivot, self.targets = self.langs[0], self.langs[1:]
        self.sizes, self.windows, self.models = config["corpus"]["sizes"], config["windows"], config["models"]
        self.layout = Layout(f"{self.results}/data", self.pivot)
        self.language = config["language"]  # defaults filled in by the schema
        self.sent = self.language["sentence_retrieval"]
        self.pos = config["retrieval"]["pos"]
        self.hf_models = {hf_slug(name): name for name in self.language["hf_models"]}
        if len(self.hf_models) != len(self.language["hf_models"]):
            raise ValueError(f"language.hf_models: two entries share a name: {self.language['hf_models']}")
        self.random_models = self.language["random_models"]
        unlisted = sorted(set(self.random_models) - set(self.language["hf_models"]))
        if unlisted:
            raise ValueError(
                f"language.random_models: {unlisted} are not in language.hf_models "
                f"{self.language['hf_models']} (a random checkpoint is written only for a row of it)"
            )
        unnamed = sorted(name for name in self.random_models if not RANDOM_NAME.fullmatch(name))
        if unnamed:
            raise ValueError(
                f"language.random_models: {unnamed} are not names of letters, digits, '.', '_', '-' "
                "(each is the directory it is written to)"
            )

    def hf_hub_models(self) -> dict[str, str]:
        """slug -> hub id of the hf_models the workflow stages (rules/checkpoints.smk); the others are directories
        (local ones, or random_models written by the run)."""
        return {
            slug: name for slug, name in self.hf_models.items() if is_hub_id(name) and name not in self.random_models
        }

    def random_checkpoints(self) -> dict[str, str]:
        """slug -> name of the hf_models the run writes itself (language.random_models; rules/checkpoints.smk)."""
        return {slug: name for slug, name in self.hf_models.items() if name in self.random_models}

    def hf_path(self, name: str) -> str:
        """Where the jobs load an hf_models entry from: a hub id's staged directory or a random model's written one
        in the run, else the entry (a local directory)."""
        in_run = is_hub_id(name) or name in self.random_models
        return f"{self.results}/models/hf/{hf_slug(name)}" if in_run else name

    def schema_default(self, *keys: str):
        """Default of the config key at `keys` in schemas/config.schema.yaml."""
        node = self.schema
        for key in keys:
            node = node["properties"][key]
        return node["default"]

    def model_dir(self, model: str, size: int, window: int) -> str:
        return f"{self.results}/models/{model}/{size}-w{window}"

    def bert_settings(self, *blocks: dict) -> dict:
        """The BERT trainer's settings that change numbers: `blocks` (the bert block, then a study's override of
        it) merged, runtime keys left out, and dev_every only where checkpoints are selected on dev."""
        settings = {}
        for block in blocks:
            settings.update(self.helpers.computed("bert", block))
        if settings.get("selection", "final") == "final":
            settings.pop("dev_every", None)
        # in key order: a job's params compare as written, so the order the blocks set a key in must not matter
        return dict(sorted(settings.items()))

    def dev_tokens(self, settings: dict, lang: str) -> list[str]:
        """The held-out token file of `lang` that a BERT with `settings` is selected on: [] unless its selection
        is dev_perplexity."""
        return [f"{self.results}/tokens/dev/{lang}.txt"] if settings.get("selection") == "dev_perplexity" else []

    def window_sweep(self) -> list[tuple[str, int, int]]:
        """(model, size, window) of the static models' window sweep (Liu et al.'s Figure 4): the swept models this
        run trains, at window_sweep.sizes (null: the smallest size), each sweep window. A window is a span, as in
        the grid, so a sweep setting that is also a grid setting is the grid's model."""
        sweep = self.config["window_sweep"]  # defaults filled in by the schema
        sizes = sweep["sizes"] or [min(self.sizes)]
        unknown = sorted(set(sizes) - set(self.sizes))
        if unknown:
            raise ValueError(f"window_sweep.sizes: {unknown} are not in corpus.sizes {self.sizes}")
        return [
            (model, size, window)
            for model in sweep["models"]
            if model in self.models
            for size in sizes
            for window in sweep["windows"]
        ]

    def vocab_source(self) -> str:
        """The WordPiece vocabulary every model uses: trained on the corpus, the mBERT one, or a given file."""
        vocab = self.config["tokenizer"]["vocab"]
        if vocab == "train":
            return f"{self.results}/vocab/trained.txt"
        if vocab == "mbert":
            return self.layout.file("mbert_vocab")
        return vocab

    def dictionary(self, lang: str, split: str | None = None) -> str:
        split = split or self.config["retrieval"]["dictionary_split"]
        return self.layout.file("dictionary", lang=lang, split=split)

    def function_words(self) -> bool:
        """Whether the synthetic data holds function-word dictionaries (synthetic.dictionary.function_words), whose
        queries word retrieval ranks for the MRR by part of speech only; real data has none."""
        return self.config["data"]["source"] == "synthetic" and bool(
            self.config.get("synthetic", {}).get("dictionary", {}).get("function_words", False)
        )

    def function_dictionaries(self) -> list[str]:
        """The function-word dictionaries of the retrieval targets ([] without them: the table by part of speech
        then has no closed-class row on synthetic data)."""
        if not self.function_words():
            return []
        retrieval = self.config["retrieval"]
        if retrieval["candidates"] == "vocabulary" or (
            retrieval["metric"] == "csls" and retrieval["csls_neighbourhood"] == "all_words"
        ):
            # the store then holds their words, and the main search space or CSLS neighbourhoods are the store's
            raise ValueError(
                "synthetic.dictionary.function_words: the function words would join the main "
                "word retrieval's search space (retrieval.candidates vocabulary, or metric csls with "
                "csls_neighbourhood all_words); use candidates dictionary and cosine or CSLS over "
                "the queries, or turn function_words off"
            )
        return [self.dictionary(lang, FUNCTION_SPLIT) for lang in self.retrieval_targets()]

    def retrieval_targets(self) -> list[str]:
        """Languages paired with the pivot in word retrieval: those with a bilingual dictionary
        (MUSE has none for en-sw and en-ur; the synthetic source writes one for every language)."""
        return self.source.available("muse", self.targets)

    def token_files(self, wildcards) -> list[str]:
        return [f"{self.results}/tokens/{wildcards.size}/{lang}.txt" for lang in self.langs]

    def pos_treebanks(self) -> list[str]:
        """The pivot's UD files that tag the query words (retrieval.pos.splits); a split the pivot lacks stops
        the run."""
        source, pivot = self.source, self.pivot
        have = source.ud_splits(pivot) if source.has_treebank(pivot) else []
        missing = [split for split in self.pos["splits"] if split not in have]
        if missing:
            raise ValueError(
                f"retrieval.pos.splits: the pivot {pivot} has no UD {missing} split (its treebank "
                f"{source.treebank_name(pivot)} has {have}); set retrieval.pos.splits to some of them, "
                "or [] for no MRR by part of speech"
            )
        return [self.layout.file("treebank", lang=pivot, split=split) for split in self.pos["splits"]]

    def pos_treebank_name(self) -> str:
        """Which treebank tags the words, for the table: the gold trees of the synthetic generator, or
        data.treebanks."""
        return self.source.treebank_name(self.pivot)

    def report_config(self) -> dict:
        """All the report may read of the config, as its params (runtime settings left out by the workflow, so
        changing one does not re-render it): the grid, the settings it shows and its presentation choices (report.*,
        retrieval.report_layer, language.sentence_retrieval.layer), and the bootstrap the findings' intervals use
        (the MRR table flags its cells by them). A section that reads another key gets
        nothing until the key is added here."""
        keys = [
            "run",
            "languages",
            "models",
            "windows",
            "window_sweep",
            "data",
            "corpus",
            "tokenizer",
            "represent",
            "retrieval",
            "report",
            "bootstrap",
            *self.models,
            *self.source.config_keys,
        ]
        shown = {key: self.config[key] for key in keys if key in self.config}
        shown["language"] = {"sentence_retrieval": {"layer": self.sent["layer"]}}
        stand_ins = {**self.source.stand_ins, **self.random_stand_ins()}
        if stand_ins:
            shown["stand_ins"] = stand_ins
        return shown

    def random_stand_ins(self) -> dict[str, str]:
        """Checkpoint row -> what stands in for it, for the report: each random_models entry."""
        return {
            name: f"a BertForMaskedLM of random weights ({shape['num_layers']} layers, {shape['hidden_size']} "
            f"wide, seed {shape['seed']}) with the run's WordPiece vocabulary, not a pretrained checkpoint"
            for name, shape in self.random_models.items()
        }
