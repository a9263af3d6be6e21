# Conneau et al. (2020) Table 1: bilingual masked LMs of the pivot with each language of ablation.pairs, one per
# setting of ablation.settings (xling.models.ablation), trained by the one BERT trainer and tested by the transfer
# rules (rules/transfer.smk: zero-shot from English, language-specific parameters frozen). Model id
# ablation/{setting}/{pivot}-{lang}; its transfer scores are gathered into eval/ablation.parquet. Helpers: common.smk.
# Vocabularies (ablation.vocab): the pair's, learned on its text at ablation.size (one joint; one per language for
# default-anchors and no-anchors), or the study's.


rule ablation_vocab:
    input:
        corpora=PLAN.ablation_vocab_corpora,
    output:
        f"{RESULTS}/ablation/vocab/{{pair}}/joint.txt",
    log:
        f"{LOGS}/ablation_vocab/{{pair}}.log",
    benchmark:
        f"{BENCH}/ablation_vocab/{{pair}}.tsv"
    wildcard_constraints:
        pair=ABLATION_PAIR,
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/ablation_vocab.py"),
        merges=ABLATION["vocab"]["merges"],
        min_frequency=config["tokenizer"]["min_frequency"],
        limit_alphabet=config["tokenizer"]["limit_alphabet"],
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/ablation_vocab.py"


use rule ablation_vocab as ablation_language_vocab with:
    output:
        f"{RESULTS}/ablation/vocab/own/{{lang}}.txt",
    log:
        f"{LOGS}/ablation_vocab/own/{{lang}}.log",
    benchmark:
        f"{BENCH}/ablation_vocab/own/{{lang}}.tsv"
    params:
        code=code_version("scripts/ablation_vocab.py"),
        merges=ABLATION["vocab"]["language_merges"],
        min_frequency=config["tokenizer"]["min_frequency"],
        limit_alphabet=config["tokenizer"]["limit_alphabet"],
        lowercase=config["tokenizer"]["lowercase"],


use rule tokenize as ablation_tokenize with:
    input:
        corpus=f"{RESULTS}/corpus/{PLAN.ablation_size()}/{{lang}}.txt",
        vocab=f"{RESULTS}/ablation/vocab/{{pair}}/joint.txt",
    output:
        f"{RESULTS}/ablation/tokens/{{pair}}/joint/{{lang}}.txt",
    log:
        f"{LOGS}/ablation_tokenize/{{pair}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/ablation_tokenize/{{pair}}/{{lang}}.tsv"
    wildcard_constraints:
        pair=ABLATION_PAIR,


use rule tokenize as ablation_language_tokenize with:
    input:
        corpus=f"{RESULTS}/corpus/{PLAN.ablation_size()}/{{lang}}.txt",
        vocab=f"{RESULTS}/ablation/vocab/own/{{lang}}.txt",
    output:
        f"{RESULTS}/ablation/tokens/own/{{lang}}.txt",
    log:
        f"{LOGS}/ablation_tokenize/own/{{lang}}.log",
    benchmark:
        f"{BENCH}/ablation_tokenize/own/{{lang}}.tsv"


use rule tokenize as ablation_dev_tokenize with:
    input:
        corpus=f"{RESULTS}/corpus/dev/{{lang}}.txt",
        vocab=f"{RESULTS}/ablation/vocab/{{pair}}/joint.txt",
    output:
        f"{RESULTS}/ablation/tokens/dev/{{pair}}/joint/{{lang}}.txt",
    log:
        f"{LOGS}/ablation_dev_tokenize/{{pair}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/ablation_dev_tokenize/{{pair}}/{{lang}}.tsv"
    wildcard_constraints:
        pair=ABLATION_PAIR,


use rule tokenize as ablation_language_dev_tokenize with:
    input:
        corpus=f"{RESULTS}/corpus/dev/{{lang}}.txt",
        vocab=f"{RESULTS}/ablation/vocab/own/{{lang}}.txt",
    output:
        f"{RESULTS}/ablation/tokens/dev/own/{{lang}}.txt",
    log:
        f"{LOGS}/ablation_dev_tokenize/own/{{lang}}.log",
    benchmark:
        f"{BENCH}/ablation_dev_tokenize/own/{{lang}}.tsv"


rule switch_table:
    input:
        dictionary=lambda wc: PLAN.dictionary(wc.pair.split("-")[1], ABLATION["code_switch"]["dictionary"]),
        vocab=lambda wc: PLAN.ablation_joint_vocab(wc.pair),
    output:
        f"{RESULTS}/ablation/switch/{{pair}}.json",
    log:
        f"{LOGS}/switch_table/{{pair}}.log",
    benchmark:
        f"{BENCH}/switch_table/{{pair}}.tsv"
    wildcard_constraints:
        pair=ABLATION_PAIR,
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/switch_table.py"),
        pivot=PIVOT,
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/switch_table.py"


rule code_switch:
    input:
        tokens=lambda wc: PLAN.ablation_pair_tokens(wc.pair, wc.lang),
        dictionary=lambda wc: PLAN.dictionary(wc.pair.split("-")[1], ABLATION["code_switch"]["dictionary"]),
        vocab=lambda wc: PLAN.ablation_joint_vocab(wc.pair),
    output:
        f"{RESULTS}/ablation/tokens/extra-anchors/{{pair}}/{{lang}}.txt",
    log:
        f"{LOGS}/code_switch/{{pair}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/code_switch/{{pair}}/{{lang}}.tsv"
    wildcard_constraints:
        pair=ABLATION_PAIR,
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/code_switch.py"),
        settings={k: ABLATION["code_switch"][k] for k in ("rate", "max_fraction", "seed")},
        pivot=PIVOT,
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/code_switch.py"


if DATA_SOURCE.other_domain:  # generated text of a second domain (the synthetic source)

    rule domain_corpus:
        output:
            f"{RESULTS}/ablation/corpus/wiki-cc/{{lang}}.txt",
        log:
            f"{LOGS}/domain_corpus/{{lang}}.log",
        benchmark:
            f"{BENCH}/domain_corpus/{{lang}}.tsv"
        conda:
            "../envs/data.yaml"
        params:
            code=code_version("scripts/domain_corpus.py"),
            spec=config["synthetic"],
            languages=LANGS,
            sentences=PLAN.ablation_size(),
            topics_left_out=ABLATION["domain"]["topics_left_out"],
        script:
            "../scripts/domain_corpus.py"


rule domain_tokenize:
    input:
        corpus=f"{RESULTS}/ablation/corpus/wiki-cc/{{lang}}.txt",
        vocab=lambda wc: PLAN.ablation_joint_vocab(wc.pair),
    output:
        f"{RESULTS}/ablation/tokens/wiki-cc/{{pair}}/{{lang}}.txt",
    log:
        f"{LOGS}/domain_tokenize/{{pair}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/domain_tokenize/{{pair}}/{{lang}}.tsv"
    wildcard_constraints:
        pair=ABLATION_PAIR,
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/tokenize.py"),
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/tokenize.py"


use rule bert_pretrain as ablation_pretrain with:
    input:
        tokens=PLAN.ablation_tokens,
        vocab=PLAN.ablation_vocabs,
        switch=PLAN.ablation_switch_table,
        dev=PLAN.ablation_dev_tokens,  # the pivot's held-out text in the model's vocabulary (Conneau et al. §3)
    output:
        directory(f"{RESULTS}/models/ablation/{{setting}}/{{pair}}"),
    log:
        f"{LOGS}/ablation_pretrain/{{setting}}/{{pair}}.log",
    benchmark:
        f"{BENCH}/ablation_pretrain/{{setting}}/{{pair}}.tsv"
    wildcard_constraints:
        setting=ABLATION_SETTING,
        pair=ABLATION_PAIR,
    params:
        # outside the output, apart per setting (the trainer names a subdirectory by a hash of settings and data)
        checkpoints=f"{RESULTS}/checkpoints/ablation/{{setting}}/{{pair}}",
        rule="ablation_pretrain",
        hparams=lambda wc: json.dumps(PLAN.ablation_hparams(wc.setting), sort_keys=True),
        switch=lambda wc: " ".join(f"--switch {shlex.quote(path)}" for path in PLAN.ablation_switch_table(wc)),
