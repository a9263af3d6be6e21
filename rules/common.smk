# Helpers shared by the workflow: paths of the run, the experiment grid, input functions.
#
# How a setting reaches a job decides what reruns when it changes (Snakemake's default rerun triggers):
#   params:     only settings that change a number the job writes; a change reruns the job and all
#               downstream of it. Presentation settings (report.*, retrieval.report_layer) are params of
#               the report alone.
#   threads:, resources:
#               every setting that changes no number (xling.runtime.RUNTIME: threads, mem_mb, device,
#               inference batch sizes, query blocks, checkpoint and log intervals); a change reruns nothing.
#               Scripts read snakemake.threads and snakemake.resources.<name>, shell commands {threads} and
#               {resources.<name>}; a profile may override them per rule (set-threads, set-resources).
#               Resources hold no null: a null device is "auto".
#   the DAG:    languages, sizes, windows, models and data locations are wildcards and file lists; the
#               fetch jobs read data.* from the config to know where a file comes from (checksum-verified).
import json
import os
import posixpath
import re
import sys

import yaml

sys.path.insert(0, workflow.basedir)  # xling from this checkout, also when parsing the workflow
from xling.imports import analyse  # noqa: E402

# Scripts and `python -m xling...` commands import the package from this checkout, in any environment
# (venv, --sdm conda, or a SLURM job step that re-evaluates this file).
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in (workflow.basedir, os.environ.get("PYTHONPATH")) if p)
)
from xling.evaluate.findings import TABLES as FINDINGS_TABLES  # noqa: E402
from xling.runtime import computed, without_runtime  # noqa: E402

with open(os.path.join(workflow.basedir, "schemas", "config.schema.yaml"), encoding="utf-8") as handle:
    SCHEMA = yaml.safe_load(handle)

RUN = config["run"]
RESULTS = f"results/{RUN}"
DATA = f"{RESULTS}/data"
LOGS = f"logs/{RUN}"
BENCH = f"benchmarks/{RUN}"

LANGS = config["languages"]
PIVOT = LANGS[0]
TARGETS = LANGS[1:]
SIZES = config["corpus"]["sizes"]
WINDOWS = config["windows"]
MODELS = config["models"]
STATIC_MODELS = [m for m in MODELS if m != "bert"]


def xling_code(entry):
    """The xling modules that `entry` (a script, or the module a rule runs with `python -m`; a path in
    this checkout) executes, as a rule's input: Snakemake's code trigger sees only the script, so this
    is what makes an edit to a module rerun exactly the jobs whose code imports it."""
    return [str(path) for path in analyse(os.path.join(workflow.basedir, entry), workflow.basedir).local]


def model_dir(model, size, window):
    return f"{RESULTS}/models/{model}/{size}-w{window}"


def grid(pattern, **extra):
    """Expand `pattern` over the models x sizes x windows grid of the study."""
    return expand(pattern, model=MODELS, size=SIZES, window=WINDOWS, **extra)


def window_sweep():
    """(model, size, window) of the static models' window sweep (Liu et al.'s Figure 4): the swept models this
    run trains, at window_sweep.sizes (null: the smallest size), each sweep window. A window is a span, as in
    the grid, so a sweep setting that is also a grid setting is the grid's model."""
    sweep = config["window_sweep"]  # defaults filled in by the schema
    sizes = sweep["sizes"] or [min(SIZES)]
    unknown = sorted(set(sizes) - set(SIZES))
    if unknown:
        raise ValueError(f"window_sweep.sizes: {unknown} are not in corpus.sizes {SIZES}")
    return [(model, size, window) for model in sweep["models"] if model in MODELS
            for size in sizes for window in sweep["windows"]]


def window_sweep_tables():
    return [f"{RESULTS}/eval/retrieval/{model}/{size}-w{window}.parquet" for model, size, window in window_sweep()]


def retrieval_tables():
    """The word-retrieval tables the run gathers: the models x sizes x windows grid, the window sweep's that are
    not in it, then each Hugging Face checkpoint's."""
    tables = grid(f"{RESULTS}/eval/retrieval/{{model}}/{{size}}-w{{window}}.parquet")
    tables += [table for table in window_sweep_tables() if table not in tables]
    return tables + [f"{RESULTS}/eval/retrieval/hf/{slug}.parquet" for slug in HF_MODELS]


def vocab_source():
    """The WordPiece vocabulary every model uses: trained on the corpus, the mBERT one, or a given file."""
    vocab = config["tokenizer"]["vocab"]
    if vocab == "train":
        return f"{RESULTS}/vocab/trained.txt"
    if vocab == "mbert":
        return f"{DATA}/vocab/mbert-cased.txt"
    return vocab


def dictionary(lang, split=None):
    split = split or config["retrieval"]["dictionary_split"]
    return f"{DATA}/dict/{PIVOT}-{lang}.{split}.txt"


def retrieval_targets():
    """Languages paired with the pivot in word retrieval: those with a bilingual dictionary
    (MUSE has none for en-sw and en-ur; the synthetic source writes one for every language)."""
    if config["data"]["source"] == "synthetic":
        return TARGETS
    return [lang for lang in TARGETS if lang in DATASET_LANGS["muse"]]


def synthetic_outputs():
    files = [f"{DATA}/xnli/train-{PIVOT}.tsv"]
    for lang in LANGS:
        files += [f"{DATA}/corpus/{lang}.txt"]
        files += expand(f"{DATA}/ud/{lang}.{{split}}.conllu", split=["train", "dev", "test"])
        files += expand(f"{DATA}/xnli/{{split}}-{lang}.tsv", split=["dev", "test"])
        files += expand(f"{DATA}/wikiann/{lang}.{{split}}.tsv", split=["train", "dev", "test"])
    for lang in TARGETS:
        files += expand(f"{DATA}/dict/{PIVOT}-{lang}.{{split}}.txt", split=["train", "test", "full"])
        files += expand(f"{DATA}/parallel/{PIVOT}-{lang}.{{ext}}", ext=[PIVOT, lang, "align"])
        files += expand(f"{DATA}/tatoeba/tatoeba.{lang}-eng.{{side}}", side=[lang, "eng"])
        files += expand(f"{DATA}/bucc/{lang}-en.{{split}}.{{ext}}", split=["dev", "test"], ext=[lang, "en", "gold"])
    return files


def token_files(wildcards):
    return expand(f"{RESULTS}/tokens/{wildcards.size}/{{lang}}.txt", lang=LANGS)


# Language-specific information (rules/language.smk): models, inputs and tables of each experiment.
LANGUAGE = config["language"]  # defaults filled in by the schema
SENT = LANGUAGE["sentence_retrieval"]


def hf_slug(name):
    """File-system name of a Hugging Face checkpoint: a local directory's name, or the hub id with slashes as '--'."""
    base = os.path.basename(os.path.normpath(name)) if os.path.isdir(name) else name.replace(posixpath.sep, "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", base)


HF_MODELS = {hf_slug(name): name for name in LANGUAGE["hf_models"]}
if len(HF_MODELS) != len(LANGUAGE["hf_models"]):
    raise ValueError(f"language.hf_models: two entries share a name: {LANGUAGE['hf_models']}")


def _available(dataset, langs):
    """Languages of `langs` that have `dataset` (real data: per resources/sources.yaml; synthetic: all)."""
    if config["data"]["source"] == "synthetic":
        return list(langs)
    have = DATASET_LANGS.get({"parallel": "europarl"}.get(dataset, dataset), [])
    return [lang for lang in langs if lang in have]


def translation_langs():
    return _available(LANGUAGE["data"], LANGUAGE["pairs"] or TARGETS)


def tatoeba_langs():
    return _available("tatoeba", TARGETS)


def _schema_default(*keys):
    """Default of the config key at `keys` in schemas/config.schema.yaml."""
    node = SCHEMA
    for key in keys:
        node = node["properties"][key]
    return node["default"]


def bucc_langs():
    """Targets evaluated on BUCC: those named in sentence_retrieval.bucc_languages that have BUCC data. A synthetic
    language cannot be named there (the schema lists the BUCC 2018 languages), so on synthetic data the schema's
    default list means every target, and another list the targets it names ([]: no BUCC)."""
    named = SENT["bucc_languages"]
    if config["data"]["source"] == "synthetic" and named == _schema_default(
        "language", "sentence_retrieval", "bucc_languages"
    ):
        return list(TARGETS)
    return _available("bucc", [lang for lang in named if lang in TARGETS])


def language_models():
    """Model ids ({lm} wildcard): bert/{size}-w{window} for the BERTs of language.sizes (all windows), hf/{slug}
    per checkpoint."""
    sizes = LANGUAGE["sizes"] or SIZES
    unknown = sorted(set(sizes) - set(SIZES))
    if unknown:
        raise ValueError(f"language.sizes: {unknown} are not in corpus.sizes {SIZES}")
    lms = [f"bert/{s}-w{w}" for s in SIZES if s in sizes for w in WINDOWS] if "bert" in MODELS else []
    return lms + [f"hf/{slug}" for slug in HF_MODELS]


BERT_LM = r"bert/\d+-w\d+|hf/[A-Za-z0-9._-]+"  # {lm} of a BERT: ours (size, window) or a Hugging Face checkpoint
ANY_LM = r"(bert|glove|word2vec)/\d+-w\d+|hf/[A-Za-z0-9._-]+"  # {lm} of any model


def _lm(wildcards):
    """(kind, size, window, hf name) of the {lm} wildcard of a BERT."""
    kind, _, rest = wildcards.lm.partition(posixpath.sep)
    if kind == "bert":
        size, window = re.fullmatch(r"(\d+)-w(\d+)", rest).groups()
        return "bert", int(size), int(window), None
    return "hf", 0, 0, HF_MODELS[rest]


def lm_model(wildcards):
    """Model input: our BERT's directory, or a Hugging Face checkpoint's local directory (none for hub ids)."""
    kind, size, window, name = _lm(wildcards)
    if kind == "bert":
        return model_dir("bert", size, window)
    return name if os.path.isdir(name) else []


def lm_params(wildcards):
    """Plain settings of the model: what scripts load and the table's model/size/window columns."""
    kind, size, window, name = _lm(wildcards)
    cap = LANGUAGE["max_length"]
    if kind == "bert":
        max_length = min(window, cap) if cap else window  # positions beyond the training window are untrained
        return dict(kind=kind, path=model_dir("bert", size, window), label="bert", size=size, window=window,
                    max_length=max_length, revision=None)
    return dict(kind=kind, path=name, label=name, size=0, window=0, max_length=cap,
                revision=LANGUAGE["hf_revisions"].get(name))


def hf_reads_token_files():
    """Whether a Hugging Face checkpoint reads the run's token files: they are in its vocabulary when the run uses
    mBERT's (tokenizer.vocab: mbert); otherwise it tokenizes the largest corpus sample with its own tokenizer."""
    return config["tokenizer"]["vocab"] == "mbert"


def represent_text(wildcards):
    """The text (one file per language) a BERT's word and language means are taken over: our BERT's token files
    of its data size; a checkpoint's the largest sample, as token files or as corpus (`hf_reads_token_files`)."""
    kind, size, _, _ = _lm(wildcards)
    if kind == "hf":
        size = max(SIZES)
        if not hf_reads_token_files():
            return expand(f"{RESULTS}/corpus/{size}/{{lang}}.txt", lang=LANGS)
    return expand(f"{RESULTS}/tokens/{size}/{{lang}}.txt", lang=LANGS)


def represent_lm(wildcards):
    """What the extraction loads and how it reads the text: the model (path, hub revision), the chunk length
    (our BERT: its training window, or represent.max_length below it; a checkpoint: represent.max_length, null =
    its own maximum), and for a checkpoint reading the corpus, the run's lowercasing its words are compared in."""
    kind, size, window, name = _lm(wildcards)
    cap = config["represent"]["max_length"]
    if kind == "bert":
        return dict(path=model_dir("bert", size, window), revision=None, max_length=min(window, cap or window),
                    corpus=False)
    corpus = not hf_reads_token_files()
    return dict(path=name, revision=LANGUAGE["hf_revisions"].get(name), max_length=cap, corpus=corpus,
                **({"lowercase": config["tokenizer"]["lowercase"]} if corpus else {}))


def retrieval_counts(wildcards):
    """Word counts that define a model's retrieval vocabulary: those of its data size (a checkpoint: the largest)."""
    size = any_lm(wildcards)["size"] or max(SIZES)
    return f"{RESULTS}/tokens/{size}/word_counts.parquet"


def retrieval_lm(wildcards):
    """The model's columns of the word-retrieval table (nothing else of the model: that comes with its vectors)."""
    return {key: any_lm(wildcards)[key] for key in ("kind", "label", "size", "window")}


def translation_settings():
    """The language.* settings that change token-translation numbers (the model's own are in lm_params)."""
    keys = ("data", "directions", "layers", "alphas", "mean", "max_sentences", "vocab_min_count", "bleu_tokenize",
            "bleu_unit", "samples", "mean_positions", "shift_positions")
    return {key: LANGUAGE[key] for key in keys}


def sentence_retrieval_settings(wildcards):
    """The language.sentence_retrieval settings that change this task's numbers: a BUCC setting reruns no
    Tatoeba job, and the other way round."""
    keys = {"tatoeba": ("layer", "all_layers", "mds_alpha", "max_sentences"),
            "bucc": ("layer", "bucc_layers", "bucc_score", "bucc_k", "mds_alpha")}[wildcards.task]
    return {**{key: SENT[key] for key in keys}, "pooling": SENT[f"{wildcards.task}_pooling"]}


def translation_inputs(wildcards):
    kind, size, window, _ = _lm(wildcards)
    lang = wildcards.lang
    if LANGUAGE["data"] == "tatoeba":
        data = [f"{DATA}/tatoeba/tatoeba.{lang}-eng.eng", f"{DATA}/tatoeba/tatoeba.{lang}-eng.{lang}"]
    else:
        data = [f"{DATA}/parallel/{PIVOT}-{lang}.{PIVOT}", f"{DATA}/parallel/{PIVOT}-{lang}.{lang}"]
    inputs = dict(pivot_text=data[0], lang_text=data[1])
    if kind == "bert":
        inputs["langs"] = f"{RESULTS}/reps/bert/{size}-w{window}/langs.parquet"
        inputs["vocab_files"] = [f"{RESULTS}/tokens/{size}/{code}.txt" for code in (PIVOT, lang)]
    elif hf_reads_token_files():
        inputs["vocab_files"] = [f"{RESULTS}/tokens/{max(SIZES)}/{code}.txt" for code in (PIVOT, lang)]
    else:  # count the checkpoint's own pieces on the run's corpus sample
        inputs["vocab_corpora"] = [f"{RESULTS}/corpus/{max(SIZES)}/{code}.txt" for code in (PIVOT, lang)]
    return inputs


def retrieval_inputs(wildcards):
    lang = wildcards.lang
    if wildcards.task == "tatoeba":
        return dict(xx=f"{DATA}/tatoeba/tatoeba.{lang}-eng.{lang}", en=f"{DATA}/tatoeba/tatoeba.{lang}-eng.eng")
    return {f"{split}_{side}": f"{DATA}/bucc/{lang}-en.{split}.{ext}"
            for split in ("dev", "test") for side, ext in (("xx", lang), ("en", "en"), ("gold", "gold"))}


def _translation_parts(kind):
    suffix = ".samples.parquet" if kind == "samples" else ".parquet"
    return [f"{RESULTS}/eval/token_translation/{lm}/{PIVOT}-{lang}{suffix}"
            for lm in language_models() for lang in translation_langs()]


def _retrieval_parts(task):
    langs = tatoeba_langs() if task == "tatoeba" else bucc_langs()
    return [f"{RESULTS}/eval/sentence_retrieval/{task}/{lm}/{lang}.parquet"
            for lm in language_models() for lang in langs]


def language_table_specs():
    """Final table key -> (inputs, output stem); a table without inputs is not built."""
    return {
        "token_translation": (_translation_parts("table"), f"{RESULTS}/eval/token_translation"),
        "token_translation_samples": (_translation_parts("samples"), f"{RESULTS}/eval/token_translation_samples"),
        "tatoeba": (_retrieval_parts("tatoeba"), f"{RESULTS}/eval/tatoeba"),
        "bucc": (_retrieval_parts("bucc"), f"{RESULTS}/eval/bucc"),
        "transfer": (transfer_parts(), f"{RESULTS}/eval/transfer"),
    }


def language_report_tables():
    """{report table key: Parquet path} of the language and transfer tables this run builds (report inputs)."""
    return {key: f"{stem}.parquet" for key, (parts, stem) in language_table_specs().items() if parts}


def findings_tables():
    """{table key: Parquet path} of the run's tables the findings are judged on (xling.evaluate.findings.TABLES;
    one the run does not build makes its claims "not measured")."""
    tables = {"word_retrieval": f"{RESULTS}/eval/word_retrieval.parquet", **language_report_tables(),
              **monolingual_report_tables()}
    if POS["splits"]:
        tables["word_retrieval_pos"] = f"{RESULTS}/eval/word_retrieval_pos.parquet"
    return {key: path for key, path in tables.items() if key in FINDINGS_TABLES}


def language_tables():
    """Every final language table (Parquet and CSV) this run builds, for rule all."""
    return [f"{stem}.{ext}" for _, (parts, stem) in language_table_specs().items() if parts for ext in ("parquet", "csv")]


# Word retrieval by part of speech (rules/evaluate.smk): the pivot's treebank files tag the query words.
POS = config["retrieval"]["pos"]


def pos_treebanks():
    """The pivot's UD files that tag the query words (retrieval.pos.splits); a split the pivot lacks stops the run."""
    if config["data"]["source"] != "synthetic":
        have = SOURCES.ud_splits(PIVOT) if PIVOT in UD_LANGS else []
        missing = [split for split in POS["splits"] if split not in have]
        if missing:
            raise ValueError(f"retrieval.pos.splits: the pivot {PIVOT} has no UD {missing} split (its treebank "
                             f"{SOURCES.treebanks(PIVOT)} has {have}); set retrieval.pos.splits to some of them, "
                             "or [] for no MRR by part of speech")
    return [f"{DATA}/ud/{PIVOT}.{split}.conllu" for split in POS["splits"]]


def pos_treebank_name():
    """Which treebank tags the words, for the table: the gold trees of the synthetic generator, or data.treebanks."""
    if config["data"]["source"] == "synthetic":
        return "synthetic gold"
    return ", ".join(SOURCES.treebanks(PIVOT))


def report_config():
    """All the report may read of the config, as its params: the grid, the settings it shows (runtime
    settings left out, so changing one does not re-render it) and its presentation choices (report.*,
    retrieval.report_layer, language.sentence_retrieval.layer). A section that reads another key gets
    nothing until the key is added here."""
    keys = ["run", "languages", "models", "windows", "window_sweep", "data", "corpus", "tokenizer", "represent",
            "retrieval", "report", *MODELS]
    if config["data"]["source"] == "synthetic":
        keys.append("synthetic")
    shown = {key: config[key] for key in keys if key in config}
    shown["language"] = {"sentence_retrieval": {"layer": SENT["layer"]}}
    return without_runtime(shown)


# Zero-shot transfer (rules/transfer.smk): which model fine-tunes which task, and the files each job reads.
TRANSFER = config["transfer"]
if TRANSFER["selection"] == "avg_dev" and TRANSFER["zero_mean"]:
    # a zero-mean model needs each dev language's own mean to be scored; the loop selects with the pivot's only
    raise ValueError("transfer.selection: avg_dev cannot select zero-mean fine-tunings; set transfer.zero_mean: "
                     "false or selection: en_dev")
TASKS = ("xnli", "pos", "parsing", "ner")


WEIGHT_KEYS = ("epochs", "batch_size", "learning_rate", "warmup", "weight_decay", "dropout", "max_length", "max_train")
PARSER_KEYS = ("arc_dim", "label_dim")


def finetune_settings(task):
    """The settings that decide a fine-tuned model's weights for `task` (not the test languages)."""
    settings = {key: TRANSFER[task][key] for key in WEIGHT_KEYS}
    if task == "parsing":
        settings.update({key: TRANSFER[task][key] for key in PARSER_KEYS})
    return settings


FINETUNE_SETTINGS = {task: finetune_settings(task) for task in TASKS}
TEST_LANGUAGES = {task: TRANSFER[task]["languages"] for task in TASKS}


def transfer_variants(lm):
    """Fine-tuning variants of a model: `static` (frozen vectors), f{k} (embeddings + layers 1..k frozen) and
    f{k}-zm (zero-mean in training and testing, at the first depth). The BERTs of the language experiments get
    every depth and zero-mean; the others the first depth only (the XNLI grid)."""
    if not lm.startswith(("bert/", "hf/")):
        return ["static"]
    if lm not in language_models():
        return [f"f{TRANSFER['freeze'][0]}"]
    return [f"f{k}" for k in TRANSFER["freeze"]] + ([f"f{TRANSFER['freeze'][0]}-zm"] if TRANSFER["zero_mean"] else [])


def transfer_runs():
    """(task, lm, variant) of every fine-tuning: XNLI on every model x size x window (and Hugging Face
    checkpoint); the other tasks on the language experiments' BERTs."""
    runs = []
    for task in TRANSFER["tasks"]:
        lms = [f"{m}/{s}-w{w}" for m in MODELS for s in SIZES for w in WINDOWS] + [f"hf/{x}" for x in HF_MODELS]
        if task != "xnli":
            lms = language_models()
        runs += [(task, lm, variant) for lm in lms for variant in transfer_variants(lm) if transfer_langs(task)]
    return runs


def transfer_langs(task):
    """Languages a task is tested on: the pivot and the configured ones that have the task's data (real UD:
    a test split)."""
    named = TEST_LANGUAGES[task]
    langs = [lang for lang in LANGS if named is None or lang in named or lang == PIVOT]
    if config["data"]["source"] == "synthetic":
        return langs
    if task in ("pos", "parsing"):
        return [lang for lang in langs if lang in UD_LANGS and "test" in SOURCES.ud_splits(lang)]
    return _available({"xnli": "xnli", "ner": "wikiann"}[task], langs)


def task_file(task, lang, split):
    return {"xnli": f"{DATA}/xnli/{split}-{lang}.tsv", "pos": f"{DATA}/ud/{lang}.{split}.conllu",
            "parsing": f"{DATA}/ud/{lang}.{split}.conllu", "ner": f"{DATA}/wikiann/{lang}.{split}.tsv"}[task]


def task_splits(task, lang):
    """Evaluation splits of a language (real UD treebanks without dev: test only, so no alpha is chosen)."""
    if task in ("pos", "parsing") and config["data"]["source"] != "synthetic":
        return [split for split in ("dev", "test") if split in SOURCES.ud_splits(lang)]
    return ["dev", "test"]


def selection_langs(task):
    """Languages whose dev sets select the epoch: the pivot, or (avg_dev) every tested language with a dev split."""
    langs = transfer_langs(task) if TRANSFER["selection"] == "avg_dev" else [PIVOT]
    return [lang for lang in langs if "dev" in task_splits(task, lang)]


def any_lm(wildcards):
    """Settings of the {lm} wildcard of any model: kind (static, bert, hf), label (the table's model), size,
    window (0 for a checkpoint), path and revision."""
    model, _, rest = wildcards.lm.partition("/")
    if model in ("glove", "word2vec"):
        size, window = re.fullmatch(r"(\d+)-w(\d+)", rest).groups()
        return dict(kind="static", label=model, size=int(size), window=int(window), path=None, revision=None)
    return lm_params(wildcards)


def transfer_model_inputs(wildcards):
    """The pretrained model (BERT directory, or static vectors + the run's vocabulary) and, for zero-mean
    or MDS, the corpus samples the language means are computed on."""
    lm = any_lm(wildcards)
    if lm["kind"] == "static":
        return dict(vectors=f"{model_dir(lm['label'], lm['size'], lm['window'])}/vectors.bin", vocab=vocab_source())
    return dict(model=lm_model(wildcards))


def mean_corpora(wildcards, langs):
    lm = any_lm(wildcards)
    size = lm["size"] or max(SIZES)
    return {lang: f"{RESULTS}/corpus/{size}/{lang}.txt" for lang in langs}


def finetune_inputs(wildcards):
    task, variant = wildcards.task, wildcards.variant
    inputs = transfer_model_inputs(wildcards)
    inputs["train"] = task_file(task, PIVOT, "train")
    inputs["dev"] = [task_file(task, lang, "dev") for lang in selection_langs(task)]
    if variant.endswith("-zm"):
        inputs["corpus"] = mean_corpora(wildcards, [PIVOT])[PIVOT]
    return inputs


def transfer_eval_inputs(wildcards):
    task, variant = wildcards.task, wildcards.variant
    inputs = transfer_model_inputs(wildcards)
    inputs["finetuned"] = f"{RESULTS}/finetuned/{task}/{wildcards.lm}/{variant}/seed{wildcards.seed}"
    inputs["data"] = [task_file(task, lang, split) for lang in transfer_langs(task) for split in task_splits(task, lang)]
    if variant.endswith("-zm") or uses_mds(wildcards):
        inputs["corpora"] = list(mean_corpora(wildcards, transfer_langs(task)).values())
    return inputs


def shift_settings():
    """How zero-mean and MDS shift a BERT: the layer, and the language means (language.* say which mean over which
    positions, and which positions are shifted)."""
    return dict(layer=TRANSFER["layer"], sentences=TRANSFER["mean_sentences"], stat=LANGUAGE["mean"],
                positions=LANGUAGE["mean_positions"], shift_positions=LANGUAGE["shift_positions"])


def uses_mds(wildcards):
    return TRANSFER["mds"] and wildcards.variant.startswith("f") and not wildcards.variant.endswith("-zm") \
        and wildcards.lm in language_models()


def transfer_params(wildcards):
    """What changes a fine-tuning's weights, besides the model and the data: only the settings this variant uses."""
    variant = wildcards.variant
    settings = FINETUNE_SETTINGS[wildcards.task]
    run = dict(task=wildcards.task, seed=int(wildcards.seed), selection=TRANSFER["selection"],
               dev_langs=selection_langs(wildcards.task), pivot=PIVOT)
    if variant == "static":  # the run's WordPiece tokenizer; the InferSent classifier's own size and rate
        run.update(freeze=-1, lowercase=config["tokenizer"]["lowercase"])
        settings = {**settings, "static_hidden": TRANSFER["static"]["hidden"],
                    "learning_rate": TRANSFER["static"]["learning_rate"]}
    else:
        run["freeze"] = int(variant[1:].split("-")[0])
    if variant.endswith("-zm"):
        run["zero_mean"] = shift_settings()
    return {**run, "settings": settings}


def transfer_eval_params(wildcards):
    """What changes the scores of a fine-tuned model (its own settings come with it): the test languages and
    splits, and the shift settings and NER repair where they apply."""
    task, variant = wildcards.task, wildcards.variant
    run = dict(task=task, pivot=PIVOT, langs={lang: task_splits(task, lang) for lang in transfer_langs(task)})
    if variant == "static":
        run["lowercase"] = config["tokenizer"]["lowercase"]
    elif variant.endswith("-zm"):
        run["zero_mean"] = shift_settings()
    elif uses_mds(wildcards):
        run["mds"] = {**shift_settings(), "alphas": TRANSFER["alphas"]}
    if task == "ner":
        run["ner_repair"] = TRANSFER["ner_repair"]
    return run


def transfer_parts():
    return [f"{RESULTS}/eval/transfer/{task}/{lm}/{variant}/seed{seed}.parquet"
            for task, lm, variant in transfer_runs() for seed in TRANSFER["seeds"]]


# Monolingual BERTs and CKA (rules/analyse.smk): the models, their settings and the tables.
MONO = config["monolingual"]  # defaults filled in by the schema
CKA = config["cka"]
MONO_SIZE = MONO["size"] or max(SIZES)
MONO_WINDOW = MONO["window"] or WINDOWS[0]
if MONO_SIZE not in SIZES:
    raise ValueError(f"monolingual.size: {MONO_SIZE} is not in corpus.sizes {SIZES}")
if MONO_WINDOW not in WINDOWS:
    raise ValueError(f"monolingual.window: {MONO_WINDOW} is not in windows {WINDOWS}")
if CKA["en_prime_seed"] == MONO["seed"]:
    raise ValueError(f"cka.en_prime_seed must differ from monolingual.seed ({MONO['seed']}): en' is another seed")
EN_PRIME = f"{PIVOT}~{CKA['en_prime_seed']}"
MONO_GRID = f"{MONO_SIZE}-w{MONO_WINDOW}"


def mono_targets():
    """Targets with a monolingual BERT: monolingual.languages (null: all) among the run's (XNLI's dev and test
    files are written for every language of the run: rules xnli_dev_test, synthetic_data)."""
    named = MONO["languages"]
    return [lang for lang in TARGETS if named is None or lang in named]


def mono_language(mono):
    """The language of a monolingual model name ({lang} or {lang}~{seed})."""
    return mono.split("~")[0]


def mono_dir(mono, size=MONO_SIZE, window=MONO_WINDOW):
    return f"{RESULTS}/models/mono/{mono}/{size}-w{window}"


def mono_hparams(mono, window):
    """The `bert` settings, the window, monolingual.max_steps, and the model's seed: drawn from (monolingual.seed,
    its language), so no two languages' models start from the same weights (with one vocabulary, a shared seed
    would give shared words the same initial embedding); en' ({pivot}~{s}) draws it from (s, pivot)."""
    from xling.models.mlm_data import seed_of  # torch: imported when a monolingual job is planned, not at parse

    lang, _, seed = mono.partition("~")
    hparams = {**computed("bert", config["bert"]), "window": int(window),
               "seed": seed_of(int(seed) if seed else MONO["seed"], lang)}
    if MONO["max_steps"]:
        hparams["max_steps"] = MONO["max_steps"]
    return json.dumps(hparams, sort_keys=True)


def mono_model_params(mono):
    """The model's columns of the tables: its id and the settings that trained it."""
    return dict(lm=f"mono/{mono}/{MONO_GRID}", hparams=mono_hparams(mono, MONO_WINDOW))


def xnli_files(lang, split):
    return [f"{DATA}/xnli/{split}-{PIVOT}.tsv", f"{DATA}/xnli/{split}-{lang}.tsv"]


def monolingual_table_specs():
    """Final table key -> (inputs, output stem), as language_table_specs."""
    words = [lang for lang in mono_targets() if lang in retrieval_targets()]
    sentences = [lang for lang in mono_targets() if lang in tatoeba_langs()]
    return {
        "monolingual_words": ([f"{RESULTS}/eval/monolingual/words/{MONO_GRID}/{lang}.parquet" for lang in words],
                              f"{RESULTS}/eval/monolingual_words"),
        "monolingual_sentences": (
            [f"{RESULTS}/eval/monolingual/sentences/{MONO_GRID}/{lang}.parquet" for lang in sentences],
            f"{RESULTS}/eval/monolingual_sentences"),
        "cka": ([f"{RESULTS}/eval/cka/{MONO_GRID}/{mono}.parquet" for mono in [EN_PRIME, *mono_targets()]]
                if mono_targets() else [], f"{RESULTS}/eval/cka"),
    }


def monolingual_report_tables():
    """{report table key: Parquet path} of the tables this run builds (report inputs)."""
    return {key: f"{stem}.parquet" for key, (parts, stem) in monolingual_table_specs().items() if parts}


def monolingual_tables():
    """Every final table (Parquet and CSV) of this file, for rule all."""
    return [f"{stem}.{ext}" for parts, stem in monolingual_table_specs().values() if parts for ext in ("parquet", "csv")]


def inference_resources():
    return dict(gpu=0, device=LANGUAGE["device"] or "auto", batch_size=LANGUAGE["batch_size"])


def cka_inputs(wildcards):
    """The pivot's monolingual model and the target's (en': the pivot's other seed, on the same sentences); the
    run's multilingual BERT of the same size and window for a target language."""
    lang = mono_language(wildcards.mono)
    inputs = dict(models=[mono_dir(PIVOT), mono_dir(wildcards.mono)], xnli=xnli_files(lang, CKA["split"]))
    if lang != PIVOT and "bert" in MODELS:
        inputs["multilingual"] = model_dir("bert", MONO_SIZE, MONO_WINDOW)
    return inputs
