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
from types import SimpleNamespace

import yaml

sys.path.insert(0, workflow.basedir)  # xling from this checkout, also when parsing the workflow
from xling.plan import tables as table_registry  # noqa: E402
from xling.plan.ablation import parse_setting  # noqa: E402
from xling.plan.alignment import check_parallel_text  # noqa: E402
from xling.plan.code import CodeVersions  # noqa: E402
from xling.plan.data import Layout, SyntheticData  # noqa: E402
from xling.plan.models import ANY_LM, BERT_LM, aligned_base, hf_slug, parse_grid  # noqa: E402
from xling.plan.seeds import seed_of  # noqa: E402

# Scripts and `python -m xling...` commands import the package from this checkout, in any environment
# (venv, --sdm conda, or a SLURM job step that re-evaluates this file).
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in (workflow.basedir, os.environ.get("PYTHONPATH")) if p)
)
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
# the canonical files under DATA; which languages have which of them: DATA_SOURCE (rules/data.smk, xling.plan.data)
LAYOUT = Layout(DATA, PIVOT)

CODE_VERSIONS = CodeVersions(workflow.basedir)  # each file hashed once per parse


def code_version(entry, shell=""):
    """The `code` param of a rule: a version of `entry` (its script, or the module it runs with `python -m`;
    a path in this checkout) and of the xling modules it imports, by content (xling.plan.code); `shell` is
    the rule's shell command, when it has one. Snakemake compares params by value, so a code change reruns
    the job and what follows, and a moved, cloned or touched checkout reruns nothing."""
    return CODE_VERSIONS(entry, shell)


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


def vocab_source():
    """The WordPiece vocabulary every model uses: trained on the corpus, the mBERT one, or a given file."""
    vocab = config["tokenizer"]["vocab"]
    if vocab == "train":
        return f"{RESULTS}/vocab/trained.txt"
    if vocab == "mbert":
        return LAYOUT.file("mbert_vocab")
    return vocab


def dictionary(lang, split=None):
    return LAYOUT.file("dictionary", lang=lang, split=split or config["retrieval"]["dictionary_split"])


def retrieval_targets():
    """Languages paired with the pivot in word retrieval: those with a bilingual dictionary
    (MUSE has none for en-sw and en-ur; the synthetic source writes one for every language)."""
    return DATA_SOURCE.available("muse", TARGETS)


def token_files(wildcards):
    return expand(f"{RESULTS}/tokens/{wildcards.size}/{{lang}}.txt", lang=LANGS)


# Language-specific information (rules/language.smk): models, inputs and tables of each experiment.
LANGUAGE = config["language"]  # defaults filled in by the schema
SENT = LANGUAGE["sentence_retrieval"]


HF_MODELS = {hf_slug(name): name for name in LANGUAGE["hf_models"]}
if len(HF_MODELS) != len(LANGUAGE["hf_models"]):
    raise ValueError(f"language.hf_models: two entries share a name: {LANGUAGE['hf_models']}")


def translation_langs():
    return DATA_SOURCE.available(LANGUAGE["data"], LANGUAGE["pairs"] or TARGETS)


def tatoeba_langs():
    return DATA_SOURCE.available("tatoeba", TARGETS)


def _schema_default(*keys):
    """Default of the config key at `keys` in schemas/config.schema.yaml."""
    node = SCHEMA
    for key in keys:
        node = node["properties"][key]
    return node["default"]


def bucc_langs():
    """Targets evaluated on BUCC: those named in sentence_retrieval.bucc_languages (xling.plan.data: on synthetic
    data the schema's default names every target) that have BUCC data."""
    default = _schema_default("language", "sentence_retrieval", "bucc_languages")
    return DATA_SOURCE.available("bucc", DATA_SOURCE.bucc_named(SENT["bucc_languages"], default, TARGETS))


def language_models():
    """Model ids ({lm} wildcard): bert/{size}-w{window} for the BERTs of language.sizes (all windows), hf/{slug}
    per checkpoint."""
    sizes = LANGUAGE["sizes"] or SIZES
    unknown = sorted(set(sizes) - set(SIZES))
    if unknown:
        raise ValueError(f"language.sizes: {unknown} are not in corpus.sizes {SIZES}")
    lms = [f"bert/{s}-w{w}" for s in SIZES if s in sizes for w in WINDOWS] if "bert" in MODELS else []
    return lms + [f"hf/{slug}" for slug in HF_MODELS]


ALIGN_FT = config["alignment"]["finetune"]  # defaults filled in by the schema


def aligned_models():
    """aligned/{n}/{base} of every base BERT (alignment.finetune.models; null: our BERT of the language experiments
    at their largest size and longest window, the papers' setting, and every Hugging Face checkpoint) and amount
    of parallel data n (alignment.finetune.sizes) the run aligns."""
    bases = ALIGN_FT["models"]
    if bases is None:
        ours = [f"bert/{max(LANGUAGE['sizes'] or SIZES)}-w{max(WINDOWS)}"] if "bert" in MODELS else []
        bases = ours + [f"hf/{slug}" for slug in HF_MODELS]
    known = [f"bert/{s}-w{w}" for s in SIZES for w in WINDOWS] if "bert" in MODELS else []
    unknown = [base for base in bases if base not in known + [f"hf/{slug}" for slug in HF_MODELS]]
    if unknown:
        raise ValueError(f"alignment.finetune.models: {unknown} are not BERTs of this run (ours: {known}; "
                         f"checkpoints: {[f'hf/{slug}' for slug in HF_MODELS]})")
    if not align_langs():  # no language has parallel text (e.g. the mini preset's ru): nothing to align on
        return []
    return [f"aligned/{n}/{base}" for base in bases for n in ALIGN_FT["sizes"]]


def align_langs():
    """Languages the aligned models and rotations are trained on: alignment.finetune.languages (null: all) among
    those with word pairs (align_pair_langs)."""
    named = ALIGN_FT["languages"]
    return [lang for lang in align_pair_langs() if named is None or lang in named]


ALIGN_SETTINGS = ("pairs_per_language", "epochs", "learning_rate", "betas", "eps", "warmup", "regularization", "layer")


def align_finetune_inputs(wildcards):
    """The base model (our BERT's directory, a checkpoint's local directory; none for a hub id) and each aligned
    language's train{n} split (xling.data.alignment's files)."""
    base = SimpleNamespace(lm=wildcards.base)
    files = [LAYOUT.word_pairs(lang, f"train{wildcards.n}") for lang in align_langs()]
    return dict(model=lm_model(base), en=[f[0] for f in files], xx=[f[1] for f in files], links=[f[2] for f in files])


def align_base_params(wildcards):
    """The base model's lm_params: what the alignment loads and its max_length."""
    return lm_params(SimpleNamespace(lm=wildcards.base))


def align_finetune_targets():
    """The aligned models of the run (rule all)."""
    return [f"{RESULTS}/models/{lm}" for lm in aligned_models()]


def bert_path(wildcards):
    """Where a BERT is loaded from: our model directory, an aligned model's directory, or a checkpoint's name."""
    aligned = aligned_base(wildcards.lm)
    if aligned:
        return f"{RESULTS}/models/{wildcards.lm}"
    kind, size, window, name = _lm(wildcards)
    return model_dir("bert", size, window) if kind == "bert" else name
# Conneau et al. (2020) ablations (rules/ablate.smk): model ids ablation/{setting}/{pivot}-{lang}.
ABLATION = config["ablation"]  # defaults filled in by the schema
ABLATION_SETTING = r"default|wiki-cc|no-anchors|extra-anchors|sep-emb|sep-l[1-9]\d*|sep-emb-l[1-9]\d*"
ABLATION_PAIR = r"[a-z][a-z0-9_]*-[a-z][a-z0-9_]*"


def ablation_pairs():
    """`{pivot}-{lang}` of each language of ablation.pairs that the run has (null: every target)."""
    named = ABLATION["pairs"]
    return [f"{PIVOT}-{lang}" for lang in TARGETS if named is None or lang in named]


def ablation_size():
    """The corpus size the ablations train on (ablation.size, null: the run's smallest)."""
    size = ABLATION["size"] or min(SIZES)
    if size not in SIZES:
        raise ValueError(f"ablation.size: {size} is not in corpus.sizes {SIZES}")
    return size


def ablation_models():
    """Model ids of every ablation this run trains (settings x pairs)."""
    models = [f"ablation/{s}/{p}" for s in ABLATION["settings"] for p in ablation_pairs()]
    if models and not DATA_SOURCE.other_domain and "wiki-cc" in ABLATION["settings"]:
        raise ValueError("ablation.settings: wiki-cc needs the second language's text from another domain; xling "
                         "generates it for synthetic data only (no Common Crawl source yet): leave wiki-cc out")
    return models


def ablation_model_dir(lm):
    return f"{RESULTS}/models/{lm}"


def ablation_lm_params(lm):
    """lm_params of an ablation: our BERT's label and columns at the ablation's size and stream length, and the
    trainer's settings (the result tables' hparams)."""
    window = ABLATION["window"]
    cap = LANGUAGE["max_length"]
    return dict(kind="ablation", path=ablation_model_dir(lm), label="bert", size=ablation_size(), window=window,
                max_length=min(window, cap) if cap else window, revision=None,
                hparams=ablation_hparams(lm.split(posixpath.sep)[1]))


def ablation_tokens(wildcards):
    """Token files of the pair: the run's at ablation.size, code-switched (extra anchors), or the second
    language's from another domain (wiki-cc)."""
    setting = parse_setting(wildcards.setting)
    langs = wildcards.pair.split("-")
    if setting["anchors"] == "extra":
        return [f"{RESULTS}/ablation/tokens/extra-anchors/{wildcards.pair}/{lang}.txt" for lang in langs]
    tokens = [f"{RESULTS}/tokens/{ablation_size()}/{lang}.txt" for lang in langs]
    if setting["domain"] == "other":
        tokens[1] = f"{RESULTS}/ablation/tokens/wiki-cc/{langs[1]}.txt"
    return tokens


def ablation_hparams(setting):
    """The trainer's settings: the bert block with ablation.bert over it, the stream length and the setting's spec."""
    spec = {**parse_setting(setting), "sampling_exponent": ABLATION["sampling_exponent"]}
    return {**computed("bert", config["bert"]), **computed("bert", ABLATION["bert"]), "window": ABLATION["window"],
            "ablation": spec}


def ablation_langs(lm, langs):
    """The languages of `langs` an ablation has a view of: its pair's; all for another model."""
    if not lm or not lm.startswith("ablation/"):
        return langs
    pair = lm.split(posixpath.sep)[2].split("-")
    return [lang for lang in langs if lang in pair]


def _lm(wildcards):
    """(kind, size, window, hf name) of the {lm} wildcard of a BERT (an aligned model: its base's)."""
    lm = (aligned_base(wildcards.lm) or (0, wildcards.lm))[1]
    kind, _, rest = lm.partition(posixpath.sep)
    if kind == "bert":
        return "bert", *parse_grid(rest), None
    return "hf", 0, 0, HF_MODELS[rest]


def lm_model(wildcards):
    """Model input: our BERT's, an ablation's or an aligned model's directory, or a Hugging Face checkpoint's local
    directory (none for hub ids)."""
    if wildcards.lm.startswith("ablation/"):
        return ablation_model_dir(wildcards.lm)
    path = bert_path(wildcards)
    return path if _lm(wildcards)[0] == "bert" or aligned_base(wildcards.lm) or os.path.isdir(path) else []


def lm_params(wildcards):
    """Plain settings of the model: what scripts load and the table's model/size/window columns (an aligned
    model: its base's kind, size and window, labelled `{base label}+aligned{n}`, loaded from its directory)."""
    if wildcards.lm.startswith("ablation/"):
        return ablation_lm_params(wildcards.lm)
    kind, size, window, name = _lm(wildcards)
    cap = LANGUAGE["max_length"]
    if kind == "bert":
        max_length = min(window, cap) if cap else window  # positions beyond the training window are untrained
        params = dict(kind=kind, path=model_dir("bert", size, window), label="bert", size=size, window=window,
                      max_length=max_length, revision=None)
    else:
        params = dict(kind=kind, path=name, label=name, size=0, window=0, max_length=cap,
                      revision=LANGUAGE["hf_revisions"].get(name))
    aligned = aligned_base(wildcards.lm)
    if aligned:
        params.update(path=bert_path(wildcards), label=f"{params['label']}+aligned{aligned[0]}", revision=None)
    return params


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
        return dict(path=bert_path(wildcards), revision=None, max_length=min(window, cap or window), corpus=False)
    corpus = not hf_reads_token_files()
    revision = None if aligned_base(wildcards.lm) else LANGUAGE["hf_revisions"].get(name)
    return dict(path=bert_path(wildcards), revision=revision, max_length=cap, corpus=corpus,
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
        data = [LAYOUT.file("tatoeba", lang=lang, side="eng"), LAYOUT.file("tatoeba", lang=lang, side=lang)]
    else:
        data = [LAYOUT.file("parallel", lang=lang, ext=PIVOT), LAYOUT.file("parallel", lang=lang, ext=lang)]
    inputs = dict(pivot_text=data[0], lang_text=data[1])
    if kind == "bert":
        inputs["langs"] = f"{RESULTS}/reps/{wildcards.lm}/langs.parquet"
        inputs["vocab_files"] = [f"{RESULTS}/tokens/{size}/{code}.txt" for code in (PIVOT, lang)]
    elif hf_reads_token_files():
        inputs["vocab_files"] = [f"{RESULTS}/tokens/{max(SIZES)}/{code}.txt" for code in (PIVOT, lang)]
    else:  # count the checkpoint's own pieces on the run's corpus sample
        inputs["vocab_corpora"] = [f"{RESULTS}/corpus/{max(SIZES)}/{code}.txt" for code in (PIVOT, lang)]
    return inputs


def retrieval_inputs(wildcards):
    lang = wildcards.lang
    if wildcards.task == "tatoeba":
        return dict(xx=LAYOUT.file("tatoeba", lang=lang, side=lang), en=LAYOUT.file("tatoeba", lang=lang, side="eng"))
    return {f"{split}_{side}": LAYOUT.file("bucc", lang=lang, split=split, ext=ext)
            for split in ("dev", "test") for side, ext in (("xx", lang), ("en", "en"), ("gold", "gold"))}


def table_plan():
    """What the table registry (xling.plan.tables) reads of this run's plan: the attributes its docstring lists."""
    return SimpleNamespace(
        results=RESULTS, pivot=PIVOT, models=MODELS, sizes=SIZES, windows=WINDOWS, hf_slugs=list(HF_MODELS),
        window_sweep=window_sweep, language_models=language_models, translation_langs=translation_langs,
        tatoeba_langs=tatoeba_langs, bucc_langs=bucc_langs, transfer_runs=transfer_runs, seeds=TRANSFER["seeds"],
        freeze=TRANSFER["freeze"], align_pair_langs=align_pair_langs, contextual_retrieval_lms=contextual_retrieval_lms,
        ablation_models=ablation_models, ablation_tasks=ABLATION["tasks"], mono_targets=mono_targets,
        retrieval_targets=retrieval_targets, mono_contextual_langs=mono_contextual_langs, mono_grid=MONO_GRID,
        en_prime=EN_PRIME, pos_splits=POS["splits"])


def table_inputs(consumer):
    """{table: Parquet path (the training logs: our BERTs' directories)} of the run's tables that `consumer`
    (findings, report) reads: a table the run does not make is left out (its claims are "not measured", its
    report sections skipped)."""
    return table_registry.inputs(consumer, table_plan())


def table_targets():
    """Every result table the run makes, Parquet and CSV (rule all). On synthetic data the alignment splits must
    fit its parallel text: a plan that needs more stops here, not in the word_pairs jobs."""
    if align_pair_langs():
        check_parallel_text(ALIGN["test_sentences"], ALIGN["dev_sentences"], ALIGN["train_sentences"],
                            DATA_SOURCE.parallel_sentences)
    return table_registry.targets(table_plan())


# Word retrieval by part of speech (rules/evaluate.smk): the pivot's treebank files tag the query words.
POS = config["retrieval"]["pos"]


def pos_treebanks():
    """The pivot's UD files that tag the query words (retrieval.pos.splits); a split the pivot lacks stops the run."""
    have = DATA_SOURCE.ud_splits(PIVOT) if DATA_SOURCE.has_treebank(PIVOT) else []
    missing = [split for split in POS["splits"] if split not in have]
    if missing:
        raise ValueError(f"retrieval.pos.splits: the pivot {PIVOT} has no UD {missing} split (its treebank "
                         f"{DATA_SOURCE.treebank_name(PIVOT)} has {have}); set retrieval.pos.splits to some of them, "
                         "or [] for no MRR by part of speech")
    return [LAYOUT.file("treebank", lang=PIVOT, split=split) for split in POS["splits"]]


def pos_treebank_name():
    """Which treebank tags the words, for the table: the gold trees of the synthetic generator, or data.treebanks."""
    return DATA_SOURCE.treebank_name(PIVOT)


def report_config():
    """All the report may read of the config, as its params: the grid, the settings it shows (runtime
    settings left out, so changing one does not re-render it) and its presentation choices (report.*,
    retrieval.report_layer, language.sentence_retrieval.layer). A section that reads another key gets
    nothing until the key is added here."""
    keys = ["run", "languages", "models", "windows", "window_sweep", "data", "corpus", "tokenizer", "represent",
            "retrieval", "report", *MODELS, *DATA_SOURCE.config_keys]
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
    if not lm.startswith(("bert/", "hf/", "aligned/")):
        return ["static"]
    if lm not in language_models():
        return [f"f{TRANSFER['freeze'][0]}"]
    return [f"f{k}" for k in TRANSFER["freeze"]] + ([f"f{TRANSFER['freeze'][0]}-zm"] if TRANSFER["zero_mean"] else [])


def transfer_runs():
    """(task, lm, variant) of every fine-tuning: XNLI on every model x size x window (and Hugging Face
    checkpoint, and aligned model); the other tasks on the language experiments' BERTs."""
    runs = []
    for task in TRANSFER["tasks"]:
        lms = [f"{m}/{s}-w{w}" for m in MODELS for s in SIZES for w in WINDOWS] + [f"hf/{x}" for x in HF_MODELS]
        lms += aligned_models()
        if task != "xnli":
            lms = language_models()
        runs += [(task, lm, variant) for lm in lms for variant in transfer_variants(lm) if transfer_langs(task)]
    return runs


def transfer_langs(task, lm=None):
    """Languages a task is tested on: the pivot and the configured ones that have the task's data (real UD:
    a test split); of an ablation, those of its pair."""
    named = TEST_LANGUAGES[task]
    langs = ablation_langs(lm, [lang for lang in LANGS if named is None or lang in named or lang == PIVOT])
    return DATA_SOURCE.task_languages(task, langs)


task_file = LAYOUT.task_file


def task_splits(task, lang):
    return DATA_SOURCE.task_splits(task, lang)


def selection_langs(task, lm=None):
    """Languages whose dev sets select the epoch: the pivot, or (avg_dev) every tested language with a dev split."""
    langs = transfer_langs(task, lm) if TRANSFER["selection"] == "avg_dev" else [PIVOT]
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
    inputs["dev"] = [task_file(task, lang, "dev") for lang in selection_langs(task, wildcards.lm)]
    if variant.endswith("-zm"):
        inputs["corpus"] = mean_corpora(wildcards, [PIVOT])[PIVOT]
    return inputs


def transfer_eval_inputs(wildcards):
    task, variant = wildcards.task, wildcards.variant
    inputs = transfer_model_inputs(wildcards)
    inputs["finetuned"] = f"{RESULTS}/finetuned/{task}/{wildcards.lm}/{variant}/seed{wildcards.seed}"
    inputs["data"] = [task_file(task, lang, split) for lang in transfer_langs(task, wildcards.lm)
                      for split in task_splits(task, lang)]
    if variant.endswith("-zm") or uses_mds(wildcards):
        inputs["corpora"] = list(mean_corpora(wildcards, transfer_langs(task, wildcards.lm)).values())
    if uses_rotations(wildcards):
        inputs["rotations"] = [path for by_lang in rotations_tested(wildcards).values() for path in by_lang.values()]
    return inputs


# {lm: dict(sentences, layer, files={kind: {lang: path}})}: the rotations XNLI applies to a base BERT's other
# languages before the classifier (rules/align_baselines.smk registers them)
TRANSFER_ROTATIONS = {}


def uses_rotations(wildcards):
    return wildcards.task == "xnli" and wildcards.lm in TRANSFER_ROTATIONS and wildcards.variant.startswith("f") \
        and not wildcards.variant.endswith("-zm")


def rotations_tested(wildcards):
    """{kind: {lang: path}} of the rotations of the tested languages (the pivot has none)."""
    langs = transfer_langs(wildcards.task)
    return {kind: {lang: path for lang, path in by_lang.items() if lang in langs}
            for kind, by_lang in TRANSFER_ROTATIONS[wildcards.lm]["files"].items()}


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
               dev_langs=selection_langs(wildcards.task, wildcards.lm), pivot=PIVOT)
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
    run = dict(task=task, pivot=PIVOT,
               langs={lang: task_splits(task, lang) for lang in transfer_langs(task, wildcards.lm)})
    if variant == "static":
        run["lowercase"] = config["tokenizer"]["lowercase"]
    elif variant.endswith("-zm"):
        run["zero_mean"] = shift_settings()
    elif uses_mds(wildcards):
        run["mds"] = {**shift_settings(), "alphas": TRANSFER["alphas"]}
    if uses_rotations(wildcards):
        rotation = TRANSFER_ROTATIONS[wildcards.lm]
        run["rotation"] = dict(sentences=rotation["sentences"], layer=rotation["layer"],
                               langs={kind: list(by_lang) for kind, by_lang in rotations_tested(wildcards).items()})
    if task == "ner":
        run["ner_repair"] = TRANSFER["ner_repair"]
    return run


# Contextual alignment (rules/align.smk): word pairs of the parallel text, contextual retrieval and its analyses.
ALIGN = config["alignment"]  # defaults filled in by the schema
ALIGN_RETRIEVAL = ALIGN["retrieval"]
ALIGN_ANALYSIS = ALIGN["analysis"]
# {lm: rotation files} evaluated beside the model as it is (method rotation-{kind}): the rotation rules (issue 11
# item 4) register theirs, {RESULTS}/align/rotations/{lm}/{kind}{n}/{lang}.npy, one per aligned language
CONTEXTUAL_ROTATIONS = {}


def align_pair_langs():
    """Languages paired with the pivot in word pairs and contextual retrieval: those with parallel text."""
    return DATA_SOURCE.available("parallel", TARGETS)


def align_splits():
    return ["test", "dev"] + [f"train{n}" for n in sorted(ALIGN["train_sentences"])]


def seen_split():
    """The training split whose word pairs the test score leaves out: the largest (the paper's 250K)."""
    return f"train{max(ALIGN['train_sentences'])}"


def word_pair_files(lang, splits):
    """{split: [pivot file, lang file, links file]} of the word pairs of `lang` (xling.data.alignment)."""
    return {split: LAYOUT.word_pairs(lang, split) for split in splits}


def word_pairs_gold(wildcards):
    """The gold links of the parallel text where it has them (the synthetic source)."""
    return [LAYOUT.file("parallel", lang=wildcards.lang, ext="align")] if DATA_SOURCE.gold_links else []


def contextual_retrieval_lms():
    """The models contextual retrieval evaluates ({lm} ids): the BERTs of the language experiments, the models
    fine-tuned for alignment (Cao et al.'s base-against-aligned comparison) and the fastText baseline."""
    return list(dict.fromkeys(language_models() + aligned_models() + fasttext_lms()))


def contextual_retrieval_inputs(wildcards):
    langs = align_pair_langs()
    return dict(model=lm_model(wildcards), rotations=CONTEXTUAL_ROTATIONS.get(wildcards.lm, []),
                test=[f for lang in langs for f in word_pair_files(lang, ["test"])["test"]],
                seen=[f for lang in langs for f in word_pair_files(lang, [seen_split()])[seen_split()]])


ANALYSIS_BY = ["lm", "model", "size", "window", "lang", "pair", "method", "parallel_sentences", "layer"]  # the analyses' groups
# Cao et al.'s baselines of fine-tuning alignment (rules/align_baselines.smk): rotations and fastText.
ROTATION = config["alignment"]["rotation"]  # defaults filled in by the schema
FASTTEXT = config["alignment"]["fasttext"]


def rotation_lms():
    """The base BERTs that get rotations: those fine-tuned for alignment (the rotations are their baselines)."""
    return sorted({aligned_base(lm)[1] for lm in aligned_models()}) if ROTATION["kinds"] else []


def rotation_files(lm, n, kinds=None):
    """{kind: {lang: path}} of the rotations of `lm` learned on train{n}, one per aligned language."""
    return {kind: {lang: f"{RESULTS}/align/rotations/{lm}/{kind}{n}/{lang}.npy" for lang in align_langs()}
            for kind in kinds or ROTATION["kinds"]}


def fasttext_size():
    """The corpus sample fastText is trained on: alignment.fasttext.size, null = the largest of corpus.sizes."""
    size = FASTTEXT["size"] or max(SIZES)
    if size not in SIZES:
        raise ValueError(f"alignment.fasttext.size: {size} is not in corpus.sizes {SIZES}")
    return size


def fasttext_lms():
    """The fastText baseline's lm id (its contextual-retrieval table), when the run has one."""
    return [f"fasttext/{fasttext_size()}"] if FASTTEXT["enabled"] and align_langs() else []


def fasttext_hparams():
    """What decides the fastText vectors (alignment.fasttext less its switches and runtime settings)."""
    return {key: FASTTEXT[key] for key in ("dim", "window", "epochs", "min_count", "min_n", "max_n", "seed")}


def rotation_inputs(wildcards):
    files = word_pair_files(wildcards.lang, [f"train{wildcards.n}"])[f"train{wildcards.n}"]
    return dict(model=lm_model(wildcards), pivot=files[0], other=files[1], links=files[2])


def fasttext_retrieval_inputs(wildcards):
    langs = align_langs()
    splits = ["test", seen_split()] + [f"train{n}" for n in ALIGN_FT["sizes"]]
    pairs = {lang: word_pair_files(lang, dict.fromkeys(splits)) for lang in langs}
    return dict(vectors=[f"{RESULTS}/models/fasttext/{wildcards.size}/{lang}.kv" for lang in [PIVOT, *langs]],
                pairs=[path for by_split in pairs.values() for files in by_split.values() for path in files])


def align_baselines_targets():
    """The fastText baseline's retrieval table (rule all; the rotations are inputs of retrieval and XNLI)."""
    return [f"{RESULTS}/eval/contextual_retrieval/{lm}.parquet" for lm in fasttext_lms()]


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
    return [LAYOUT.file("xnli", lang=PIVOT, split=split), LAYOUT.file("xnli", lang=lang, split=split)]


MONO_CONTEXTUAL = MONO["contextual"]
MONO_CONTEXTUAL_TASKS = ("ner", "parsing")


def mono_contextual_tasks(lang):
    """The contextual word level's tasks for a target: those among the run's transfer.tasks with data in it
    (transfer_langs); none when monolingual.contextual is disabled."""
    if not MONO_CONTEXTUAL["enabled"]:
        return []
    return [task for task in MONO_CONTEXTUAL_TASKS if task in TRANSFER["tasks"] and lang in transfer_langs(task)]


def mono_contextual_langs():
    """Targets with a monolingual BERT and a task of the contextual word level: one job each (one map per layer for
    all its tasks)."""
    return [lang for lang in mono_targets() if mono_contextual_tasks(lang)]


def mono_contextual_layers():
    """monolingual.contextual.layers, checked against the models' depth (null: every layer, 0 = embeddings)."""
    depth = config["bert"]["num_layers"]
    layers = MONO_CONTEXTUAL["layers"]
    if layers is None:
        return list(range(depth + 1))
    if max(layers) > depth:
        raise ValueError(f"monolingual.contextual.layers: {max(layers)} is above bert.num_layers ({depth})")
    return sorted(layers)


def mono_contextual_bimlm():
    """The biMLM baseline's model: the run's BERT of the monolingual size and window (none without BERTs)."""
    return [model_dir("bert", MONO_SIZE, MONO_WINDOW)] if "bert" in MODELS else []


def mono_contextual_bimlm_params():
    """The biMLM baseline's columns of the table: its id and the settings that trained it (rules/pretrain.smk's)."""
    if not mono_contextual_bimlm():
        return None
    return dict(lm=f"bert/{MONO_GRID}",
                hparams=json.dumps({**computed("bert", config["bert"]), "window": MONO_WINDOW}, sort_keys=True))


def mono_contextual_task_settings(task):
    """The task's fine-tuning settings (transfer.<task>), its inputs cut to the monolingual window: positions
    beyond it were never trained in these models."""
    settings = dict(FINETUNE_SETTINGS[task])
    settings["max_length"] = min(settings["max_length"], MONO_WINDOW)
    return settings


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
