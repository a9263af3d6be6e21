# Conneau et al. (2020) Table 1: bilingual masked LMs of the pivot with each language of ablation.pairs, one per
# setting of ablation.settings (xling.models.ablation), trained by the one BERT trainer and tested by the transfer
# rules (rules/transfer.smk: zero-shot from English, language-specific parameters frozen). Model id
# ablation/{setting}/{pivot}-{lang}; its transfer scores are gathered into eval/ablation.parquet. Helpers: common.smk.

rule code_switch:
    input:
        tokens=f"{RESULTS}/tokens/{PLAN.ablation_size()}/{{lang}}.txt",
        dictionary=lambda wc: PLAN.dictionary(wc.pair.split("-")[1], ABLATION["code_switch"]["dictionary"]),
        vocab=PLAN.vocab_source(),
    output:
        f"{RESULTS}/ablation/tokens/extra-anchors/{{pair}}/{{lang}}.txt",
    wildcard_constraints:
        pair=ABLATION_PAIR,
    params:
        code=code_version("scripts/code_switch.py"),
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


if DATA_SOURCE.other_domain:  # generated text of a second domain (the synthetic source)

    rule domain_corpus:
        output:
            f"{RESULTS}/ablation/corpus/wiki-cc/{{lang}}.txt",
        params:
            code=code_version("scripts/domain_corpus.py"),
            spec=config["synthetic"],
            languages=LANGS,
            sentences=PLAN.ablation_size(),
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
        vocab=PLAN.vocab_source(),
    output:
        f"{RESULTS}/ablation/tokens/wiki-cc/{{lang}}.txt",
    params:
        code=code_version("scripts/tokenize.py"),
        lowercase=config["tokenizer"]["lowercase"],
    log:
        f"{LOGS}/domain_tokenize/{{lang}}.log",
    benchmark:
        f"{BENCH}/domain_tokenize/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/tokenize.py"


use rule bert_pretrain as ablation_pretrain with:
    input:
        tokens=PLAN.ablation_tokens,
        vocab=PLAN.vocab_source(),
        dev=lambda wc: PLAN.dev_tokens(PLAN.ablation_hparams(wc.setting), PIVOT),  # English dev (Conneau et al. §3)
    output:
        directory(f"{RESULTS}/models/ablation/{{setting}}/{{pair}}"),
    wildcard_constraints:
        setting=ABLATION_SETTING,
        pair=ABLATION_PAIR,
    params:
        # outside the output, apart per setting (the trainer names a subdirectory by a hash of settings and data)
        checkpoints=f"{RESULTS}/checkpoints/ablation/{{setting}}/{{pair}}",
        hparams=lambda wc: json.dumps(PLAN.ablation_hparams(wc.setting), sort_keys=True),
    log:
        f"{LOGS}/ablation_pretrain/{{setting}}/{{pair}}.log",
    benchmark:
        f"{BENCH}/ablation_pretrain/{{setting}}/{{pair}}.tsv"
