# Language-specific information in BERT (config object `language`): unsupervised token translation by
# the mean-difference shift (MDS), and Tatoeba / BUCC sentence retrieval with original, zero-mean and
# MDS vectors; for every BERT of the run and every Hugging Face checkpoint in language.hf_models.
# Input functions and table lists live in common.smk.


rule token_translation:
    input:
        unpack(PLAN.translation_inputs),
        model=PLAN.lm_model,
    output:
        table=f"{RESULTS}/eval/token_translation/{{lm}}/{PIVOT}-{{lang}}.parquet",
        samples=f"{RESULTS}/eval/token_translation/{{lm}}/{PIVOT}-{{lang}}.samples.parquet",
        per_item=f"{RESULTS}/eval/token_translation/{{lm}}/{PIVOT}-{{lang}}.items.parquet",
    log:
        f"{LOGS}/token_translation/{{lm}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/token_translation/{{lm}}/{{lang}}.tsv"
    wildcard_constraints:
        lm=BERT_LM,
    conda:
        "../envs/torch.yaml"
    threads: LANGUAGE["threads"]
    resources:
        gpu=0,
        device=LANGUAGE["device"] or "auto",
        batch_size=LANGUAGE["batch_size"],
    params:
        code=code_version("scripts/token_translation.py"),
        lm=PLAN.lm_params,
        pivot=PIVOT,
        settings=PLAN.translation_settings(),
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/token_translation.py"


rule sentence_retrieval:
    input:
        unpack(PLAN.retrieval_inputs),
        model=PLAN.lm_model,
    output:
        table=f"{RESULTS}/eval/sentence_retrieval/{{task}}/{{lm}}/{{lang}}.parquet",
        per_item=f"{RESULTS}/eval/sentence_retrieval/{{task}}/{{lm}}/{{lang}}.items.parquet",
    log:
        f"{LOGS}/sentence_retrieval/{{task}}/{{lm}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/sentence_retrieval/{{task}}/{{lm}}/{{lang}}.tsv"
    wildcard_constraints:
        lm=BERT_LM,
        task="tatoeba|bucc",
    conda:
        "../envs/torch.yaml"
    threads: LANGUAGE["threads"]
    resources:
        gpu=0,
        device=LANGUAGE["device"] or "auto",
        batch_size=LANGUAGE["batch_size"],
        block=SENT["block"],
    params:
        code=code_version("scripts/sentence_retrieval.py"),
        lm=PLAN.lm_params,
        pivot=PIVOT,
        mean=LANGUAGE["mean"],
        settings=PLAN.sentence_retrieval_settings,
    script:
        "../scripts/sentence_retrieval.py"
