# Real data (data.source: real): fetch each file of resources/sources.yaml that the configured
# languages need - download (pinned URL, resumable, sha256-verified) or link a pre-staged copy
# (data.paths) - into data.cache, then parse the upstream formats into the canonical layout under
# DATA with xling.data.upstream. Fetch jobs are localrules (login nodes have internet); every URL shows
# in `snakemake -n -p`. `snakemake fetch_all` fetches everything a run may need, ahead of time.
import math
import re
import sys

sys.path.insert(0, workflow.basedir)  # xling from this checkout, also when parsing the workflow
from xling.data.sources import PARALLEL_OPUS, Sources  # noqa: E402
from xling.data.staged import stand_ins, staged_files, staged_layout, ud_folder_files, ud_folder_splits  # noqa: E402
from xling.plan.data import LOW_RESOURCE_SPLITS, RealData, low_resource_treebanks  # noqa: E402

if PIVOT != "en":
    raise ValueError(f"data.source: real needs English as the pivot (first) language, not {PIVOT!r}")

SOURCES = Sources(config["data"])
_no_corpus = [lang for lang in LANGS if lang not in SOURCES.languages(SOURCES.config["corpus"])]
if _no_corpus:
    raise ValueError(
        f"data.corpus: {SOURCES.config['corpus']} has no file for {', '.join(_no_corpus)} " f"in resources/sources.yaml"
    )
FETCH = SOURCES.fetch_table(LANGS, PIVOT)


#: configured languages per dataset, for the rules that consume real data (e.g. MUSE has no sw/ur)
DATASET_LANGS = {name: SOURCES.available(name, LANGS) for name in SOURCES.datasets}
LANG_RE = {name: "|".join(langs) or "(?!)" for name, langs in DATASET_LANGS.items()}
PARALLEL_SOURCE = SOURCES.parallel_sources(TARGETS)  # lang -> europarl, or the OPUS corpus (MultiUN, Tanzil)
OPUS_LANGS = [lang for lang, name in PARALLEL_SOURCE.items() if name in PARALLEL_OPUS]
WIKIANN_LANGS = DATASET_LANGS["wikiann"]
#: datasets staged in another layout than their release (data.paths.<name> a directory): read where they lie
LAID_OUT = {name: staged_layout(SOURCES.config, name) for name in ("ud", "xnli", "wikiann")}
UD_LANGS = [lang for lang in SOURCES.available("ud", LANGS) if SOURCES.treebanks(lang)]
UD_SPLITS = {
    lang: (
        ud_folder_splits(SOURCES.config, SOURCES.treebanks(lang), SOURCES.ud_splits(lang))
        if LAID_OUT["ud"]
        else SOURCES.ud_splits(lang)
    )
    for lang in UD_LANGS
}  # folders: the splits they hold
XNLI_STAGED = [f"dev-{lang}.tsv" for lang in dict.fromkeys([PIVOT, *LANGS])]  # XTREME's layout: dev sets only
# transfer.parsing.low_resource: test-only treebanks of the same release (train for the mean, test; never dev); staged
# folders: those staged with both splits
LOW_RESOURCE = {
    lang: folders
    for lang, folders in low_resource_treebanks(config).items()
    if UD_LANGS
    and (
        not LAID_OUT["ud"]
        or ud_folder_splits(SOURCES.config, folders, LOW_RESOURCE_SPLITS) == list(LOW_RESOURCE_SPLITS)
    )
}
DATA_SOURCE = RealData(
    DATASET_LANGS,
    PARALLEL_SOURCE,
    treebanks={lang: SOURCES.treebanks(lang) for lang in UD_LANGS},
    splits=UD_SPLITS,
    stand_ins=stand_ins(SOURCES),
    low_resource=LOW_RESOURCE,
)


localrules:
    fetch,
    fetch_all,


rule fetch_all:
    input:
        list(FETCH),


rule fetch:  # no code input: a download is checked against its sha256, so downloader edits fetch nothing again
    output:
        "{fetched}",
    log:
        f"{LOGS}/fetch/{{fetched}}.log",
    benchmark:
        f"{BENCH}/fetch/{{fetched}}.tsv"
    wildcard_constraints:
        fetched="|".join(re.escape(path) for path in FETCH) or "(?!)",
    conda:
        "../envs/data.yaml"
    params:
        # only where the file comes from: a new mirror, lock or retry setting (read by the script
        # from the config) must not make Snakemake delete and fetch again a finished download
        url=lambda wc: FETCH[wc.fetched].origin,
    message:
        "fetch {wildcards.fetched} <- {params.url}"
    script:
        "../scripts/download.py"


if SOURCES.config["corpus"] == "wikipedia":

    rule corpus_wikipedia:
        input:
            shards=lambda wc: [ref.local for ref in SOURCES.wikipedia(wc.lang)],
        output:
            LAYOUT.file("corpus", lang="{lang}"),
        log:
            f"{LOGS}/corpus_wikipedia/{{lang}}.log",
        benchmark:
            f"{BENCH}/corpus_wikipedia/{{lang}}.tsv"
        wildcard_constraints:
            lang=LANG_RE[SOURCES.config["corpus"]],
        conda:
            "../envs/data.yaml"
        params:
            code=code_version("scripts/prepare_source.py"),
            kind="wikipedia",
            n_sentences=math.ceil(max(SIZES) * SOURCES.config["wikipedia"]["margin"]),
            min_fraction=SOURCES.config["wikipedia"]["min_fraction"],
        script:
            "../scripts/prepare_source.py"

else:

    rule corpus_leipzig:
        input:
            lambda wc: SOURCES.locals("leipzig", LANGS, PIVOT, lang=wc.lang),
        output:
            LAYOUT.file("corpus", lang="{lang}"),
        log:
            f"{LOGS}/corpus_leipzig/{{lang}}.log",
        benchmark:
            f"{BENCH}/corpus_leipzig/{{lang}}.tsv"
        wildcard_constraints:
            lang=LANG_RE[SOURCES.config["corpus"]],
        conda:
            "../envs/data.yaml"
        params:
            code=code_version("scripts/prepare_source.py"),
            kind="leipzig",
        script:
            "../scripts/prepare_source.py"


rule dict_muse:
    input:
        lambda wc: SOURCES.locals("muse", LANGS, PIVOT, lang=wc.lang, split=wc.split),
    output:
        LAYOUT.file("dictionary", lang="{lang}", split="{split}"),
    log:
        f"{LOGS}/dict_muse/{{lang}}.{{split}}.log",
    benchmark:
        f"{BENCH}/dict_muse/{{lang}}.{{split}}.tsv"
    wildcard_constraints:
        lang=LANG_RE["muse"],
        split="train|test|full",
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="muse",
    script:
        "../scripts/prepare_source.py"


rule parallel_europarl:
    input:
        lambda wc: SOURCES.locals("europarl", LANGS, PIVOT, lang=wc.lang),
    output:
        en=LAYOUT.file("parallel", lang="{lang}", ext=PIVOT),
        xx=LAYOUT.file("parallel", lang="{lang}", ext="{lang}"),
    log:
        f"{LOGS}/parallel_europarl/{{lang}}.log",
    benchmark:
        f"{BENCH}/parallel_europarl/{{lang}}.tsv"
    wildcard_constraints:
        lang=LANG_RE["europarl"],
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="europarl",
        max_pairs=SOURCES.config["europarl"]["max_pairs"],
        tokenize=SOURCES.config["europarl"]["tokenize"],
    script:
        "../scripts/prepare_source.py"


rule parallel_opus:  # MultiUN (ar, zh) and Tanzil (ur) where Europarl has no language (Cao et al. Table 5)
    input:
        lambda wc: SOURCES.locals(PARALLEL_SOURCE[wc.lang], LANGS, PIVOT, lang=wc.lang),
    output:
        en=LAYOUT.file("parallel", lang="{lang}", ext=PIVOT),
        xx=LAYOUT.file("parallel", lang="{lang}", ext="{lang}"),
    log:
        f"{LOGS}/parallel_opus/{{lang}}.log",
    benchmark:
        f"{BENCH}/parallel_opus/{{lang}}.tsv"
    wildcard_constraints:
        lang="|".join(OPUS_LANGS) or "(?!)",
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="opus",
        corpus=lambda wc: PARALLEL_OPUS[PARALLEL_SOURCE[wc.lang]],
        max_pairs=SOURCES.config["opus"]["max_pairs"],
        tokenize=SOURCES.config["opus"]["tokenize"],
        tokenize_xx=lambda wc: SOURCES.config["opus"]["tokenize_lang"].get(wc.lang, SOURCES.config["opus"]["tokenize"]),
    script:
        "../scripts/prepare_source.py"


if UD_LANGS:

    rule ud_treebanks:  # one pass over the release tarball for all languages
        input:
            ud_folder_files(SOURCES.config, {lang: SOURCES.treebanks(lang) for lang in UD_LANGS}, UD_SPLITS)
            if LAID_OUT["ud"]
            else SOURCES.locals("ud", LANGS, PIVOT),
        output:
            [LAYOUT.file("treebank", lang=lang, split=split) for lang in UD_LANGS for split in UD_SPLITS[lang]],
        log:
            f"{LOGS}/ud_treebanks.log",
        benchmark:
            f"{BENCH}/ud_treebanks.tsv"
        conda:
            "../envs/data.yaml"
        params:
            code=code_version("scripts/prepare_source.py"),
            kind="ud_folders" if LAID_OUT["ud"] else "ud",
            treebanks={lang: SOURCES.treebanks(lang) for lang in UD_LANGS},
            splits=UD_SPLITS,
        script:
            "../scripts/prepare_source.py"


if LOW_RESOURCE:

    rule ud_low_resource:  # the low-resource treebanks apart: a change of them leaves the run languages' alone
        input:
            ud_folder_files(SOURCES.config, LOW_RESOURCE, {lang: LOW_RESOURCE_SPLITS for lang in LOW_RESOURCE})
            if LAID_OUT["ud"]
            else SOURCES.locals("ud", LANGS, PIVOT),
            # after ud_treebanks, never beside it: both extract through the one scratch folder of ud/ (xling.io)
            after=LAYOUT.file("treebank", lang=UD_LANGS[0], split=UD_SPLITS[UD_LANGS[0]][-1]),
        output:
            [LAYOUT.file("treebank", lang=lang, split=split) for lang in LOW_RESOURCE for split in LOW_RESOURCE_SPLITS],
        log:
            f"{LOGS}/ud_low_resource.log",
        benchmark:
            f"{BENCH}/ud_low_resource.tsv"
        conda:
            "../envs/data.yaml"
        params:
            code=code_version("scripts/prepare_source.py"),
            kind="ud_folders" if LAID_OUT["ud"] else "ud",
            treebanks=LOW_RESOURCE,
            splits={lang: list(LOW_RESOURCE_SPLITS) for lang in LOW_RESOURCE},
        script:
            "../scripts/prepare_source.py"


rule xnli_dev_test:  # one pass over the XNLI zip for all languages
    input:
        staged_files(SOURCES.config, "xnli", XNLI_STAGED) if LAID_OUT["xnli"] else SOURCES.file("xnli", "xnli").local,
    output:
        [LAYOUT.file("xnli", lang=lang, split=split) for split in ("dev", "test") for lang in LANGS],
    log:
        f"{LOGS}/xnli_dev_test.log",
    benchmark:
        f"{BENCH}/xnli_dev_test.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="xnli_xtreme" if LAID_OUT["xnli"] else "xnli",  # XTREME's: dev and test cut from the staged dev sets
        languages=LANGS,
    script:
        "../scripts/prepare_source.py"


rule xnli_train:
    input:
        staged_files(SOURCES.config, "xnli", XNLI_STAGED)
        if LAID_OUT["xnli"]
        else SOURCES.file("xnli", "multinli").local,
    output:
        LAYOUT.file("xnli", lang=PIVOT, split="train"),
    log:
        f"{LOGS}/xnli_train.log",
    benchmark:
        f"{BENCH}/xnli_train.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="xnli_xtreme_train" if LAID_OUT["xnli"] else "multinli",  # XTREME's: the stand-in is English dev pairs
    script:
        "../scripts/prepare_source.py"


if WIKIANN_LANGS:

    rule wikiann:  # one pass over the zip for all languages; every split upstream has (train is read for English)
        input:
            staged_files(SOURCES.config, "wikiann", [f"train-{PIVOT}.tsv", *(f"dev-{l}.tsv" for l in WIKIANN_LANGS)])
            if LAID_OUT["wikiann"]
            else SOURCES.locals("wikiann", LANGS, PIVOT),
        output:  # XTREME's layout stages the pivot's train only (the one fine-tuning reads)
            [
                LAYOUT.file("wikiann", lang=lang, split=split)
                for lang in WIKIANN_LANGS
                for split in ("train", "dev", "test")
                if split != "train" or lang == PIVOT or not LAID_OUT["wikiann"]
            ],
        log:
            f"{LOGS}/wikiann.log",
        benchmark:
            f"{BENCH}/wikiann.tsv"
        conda:
            "../envs/data.yaml"
        params:
            code=code_version("scripts/prepare_source.py"),
            kind="wikiann_xtreme" if LAID_OUT["wikiann"] else "wikiann",
            languages=WIKIANN_LANGS,
        script:
            "../scripts/prepare_source.py"


rule tatoeba:
    input:
        lambda wc: SOURCES.locals("tatoeba", LANGS, PIVOT, lang=wc.lang),
    output:
        xx=LAYOUT.file("tatoeba", lang="{lang}", side="{lang}"),
        eng=LAYOUT.file("tatoeba", lang="{lang}", side="eng"),
    log:
        f"{LOGS}/tatoeba/{{lang}}.log",
    benchmark:
        f"{BENCH}/tatoeba/{{lang}}.tsv"
    wildcard_constraints:
        lang=LANG_RE["tatoeba"],
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="tatoeba",
    script:
        "../scripts/prepare_source.py"


rule bucc:
    input:
        lambda wc: SOURCES.locals("bucc", LANGS, PIVOT, lang=wc.lang, split=wc.bucc_split),
    output:
        xx=LAYOUT.file("bucc", lang="{lang}", split="{bucc_split}", ext="{lang}"),
        en=LAYOUT.file("bucc", lang="{lang}", split="{bucc_split}", ext="en"),
        gold=LAYOUT.file("bucc", lang="{lang}", split="{bucc_split}", ext="gold"),
    log:
        f"{LOGS}/bucc/{{lang}}.{{bucc_split}}.log",
    benchmark:
        f"{BENCH}/bucc/{{lang}}.{{bucc_split}}.tsv"
    wildcard_constraints:
        lang=LANG_RE["bucc"],
        bucc_split="dev|test",
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="bucc",
    script:
        "../scripts/prepare_source.py"


rule mbert_vocab:
    input:
        SOURCES.locals("mbert_vocab", LANGS, PIVOT),
    output:
        LAYOUT.file("mbert_vocab"),
    log:
        f"{LOGS}/mbert_vocab.log",
    benchmark:
        f"{BENCH}/mbert_vocab.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_source.py"),
        kind="mbert_vocab",
    script:
        "../scripts/prepare_source.py"
