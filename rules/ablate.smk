# Conneau et al. (2020) Table 1: bilingual masked LMs of the pivot with each language of ablation.pairs, one per
# setting of ablation.settings (xling.models.ablation), trained by the one BERT trainer and tested by the transfer
# rules (rules/transfer.smk: zero-shot from English, language-specific parameters frozen). Model id
# ablation/{setting}/{pivot}-{lang}; its transfer scores are gathered into eval/ablation.parquet.
from xling.models.ablation import parse_setting  # noqa: E402

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
    if models and config["data"]["source"] != "synthetic" and "wiki-cc" in ABLATION["settings"]:
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
                hparams=ablation_hparams(lm.split("/")[1]))


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


def ablation_transfer_parts():
    """Transfer tables of every ablation: each task of ablation.tasks at the first freeze depth, every seed."""
    variant = f"f{TRANSFER['freeze'][0]}"
    return [f"{RESULTS}/eval/transfer/{task}/{lm}/{variant}/seed{seed}.parquet"
            for lm in ablation_models() for task in ABLATION["tasks"] for seed in TRANSFER["seeds"]]


def ablation_report_tables():
    """{"ablation": its Parquet} when the run trains ablations (report and findings input)."""
    return {"ablation": f"{RESULTS}/eval/ablation.parquet"} if ablation_transfer_parts() else {}


def ablation_targets():
    return [f"{RESULTS}/eval/ablation.{ext}" for ext in ("parquet", "csv")] if ablation_transfer_parts() else []


rule code_switch:
    input:
        tokens=f"{RESULTS}/tokens/{ablation_size()}/{{lang}}.txt",
        dictionary=lambda wc: dictionary(wc.pair.split("-")[1], ABLATION["code_switch"]["dictionary"]),
        vocab=vocab_source(),
        code=xling_code("scripts/code_switch.py"),
    output:
        f"{RESULTS}/ablation/tokens/extra-anchors/{{pair}}/{{lang}}.txt",
    wildcard_constraints:
        pair=ABLATION_PAIR,
    params:
        settings={k: v for k, v in ABLATION["code_switch"].items() if k != "dictionary"},
        pivot=PIVOT,
        lowercase=config["tokenizer"]["lowercase"],
    log:
        f"{LOGS}/code_switch/{{pair}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/code_switch/{{pair}}/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/code_switch.py"


if config["data"]["source"] == "synthetic":

    rule domain_corpus:
        input:
            code=xling_code("scripts/domain_corpus.py"),
        output:
            f"{RESULTS}/ablation/corpus/wiki-cc/{{lang}}.txt",
        params:
            spec=config["synthetic"],
            languages=LANGS,
            sentences=ablation_size(),
            topics_left_out=ABLATION["domain"]["topics_left_out"],
        log:
            f"{LOGS}/domain_corpus/{{lang}}.log",
        benchmark:
            f"{BENCH}/domain_corpus/{{lang}}.tsv"
        conda:
            "../envs/data.yaml"
        script:
            "../scripts/domain_corpus.py"


rule domain_tokenize:
    input:
        corpus=f"{RESULTS}/ablation/corpus/wiki-cc/{{lang}}.txt",
        vocab=vocab_source(),
        code=xling_code("scripts/tokenize.py"),
    output:
        f"{RESULTS}/ablation/tokens/wiki-cc/{{lang}}.txt",
    params:
        lowercase=config["tokenizer"]["lowercase"],
    log:
        f"{LOGS}/domain_tokenize/{{lang}}.log",
    benchmark:
        f"{BENCH}/domain_tokenize/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/tokenize.py"


rule ablation_pretrain:
    input:
        tokens=ablation_tokens,
        vocab=vocab_source(),
        code=xling_code("xling/models/bert.py"),
    output:
        directory(f"{RESULTS}/models/ablation/{{setting}}/{{pair}}"),
    wildcard_constraints:
        setting=ABLATION_SETTING,
        pair=ABLATION_PAIR,
    params:
        # outside the output, apart per setting (the trainer names a subdirectory by a hash of settings and data)
        checkpoints=f"{RESULTS}/checkpoints/ablation/{{setting}}/{{pair}}",
        hparams=lambda wc: json.dumps(ablation_hparams(wc.setting), sort_keys=True),
        case="--lowercase" if config["tokenizer"]["lowercase"] else "--no-lowercase",
    priority: 10
    threads: config["bert"]["threads"]
    resources:
        device=config["bert"]["device"] or "auto",
        checkpoint_every=config["bert"]["checkpoint_every"],
        keep_checkpoints=config["bert"]["keep_checkpoints"],
        log_every=config["bert"]["log_every"],
    log:
        f"{LOGS}/ablation_pretrain/{{setting}}/{{pair}}.log",
    benchmark:
        f"{BENCH}/ablation_pretrain/{{setting}}/{{pair}}.tsv"
    conda:
        "../envs/torch.yaml"
    shell:
        # one process (the batches of one language make DDP an option the bilingual models do not need here)
        """
        export OMP_NUM_THREADS={threads}
        exec python -m xling.models.bert --tokens {input.tokens} --vocab {input.vocab} --out {output} \
            --checkpoint-dir {params.checkpoints} --hparams '{params.hparams}' --device {resources.device} \
            --checkpoint-every {resources.checkpoint_every} --keep-checkpoints {resources.keep_checkpoints} \
            --log-every {resources.log_every} {params.case} > {log} 2>&1
        """


rule ablation_table:
    input:
        tables=ablation_transfer_parts(),
        code=xling_code("scripts/gather_table.py"),
    output:
        parquet=f"{RESULTS}/eval/ablation.parquet",
        csv=f"{RESULTS}/eval/ablation.csv",
    log:
        f"{LOGS}/ablation_table.log",
    benchmark:
        f"{BENCH}/ablation_table.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/gather_table.py"
