# Word-type representations in one store for every model (Parquet, one row per lang x word x layer):
# static vectors directly; BERT as map/reduce - per-shard sums of contextual vectors, reduced by DuckDB -
# for our BERTs ({lm} bert/{size}-w{window}) and every checkpoint of language.hf_models ({lm} hf/{slug}).

N_SHARDS = config["represent"]["shards"]


rule dictionary_words:
    input:
        # the test dictionaries, and the function-word ones whose queries the MRR by part of speech ranks
        dictionaries=[PLAN.dictionary(lang) for lang in PLAN.retrieval_targets()] + PLAN.function_dictionaries(),
        # retrieval.vocabulary_size > 0: also the most frequent words of the largest sample
        counts=f"{RESULTS}/tokens/{max(SIZES)}/word_counts.parquet" if config["retrieval"]["vocabulary_size"] else [],
    output:
        f"{RESULTS}/words/{{lang}}.txt",
    log:
        f"{LOGS}/dictionary_words/{{lang}}.log",
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/dictionary_words.py"),
        pivot=PIVOT,
        vocabulary_size=config["retrieval"]["vocabulary_size"],
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/dictionary_words.py"


rule static_word_vectors:
    input:
        vectors=f"{RESULTS}/models/{{static}}/{{size}}-w{{window}}/vectors.bin",
        vocab=PLAN.vocab_source(),
        words=expand(f"{RESULTS}/words/{{lang}}.txt", lang=LANGS),
    output:
        f"{RESULTS}/reps/{{static}}/{{size}}-w{{window}}/words.parquet",
    log:
        f"{LOGS}/static_word_vectors/{{static}}/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/static_word_vectors/{{static}}/{{size}}-w{{window}}.tsv"
    conda:
        "../envs/static.yaml"
    params:
        code=code_version("scripts/static_word_vectors.py"),
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/static_word_vectors.py"


rule bert_extract:
    input:
        model=PLAN.lm_model,
        text=PLAN.represent_text,
        words=expand(f"{RESULTS}/words/{{lang}}.txt", lang=LANGS),
    output:
        # per-shard sums are only needed until the reduce step
        words=temp(
            expand(f"{RESULTS}/reps/{{lm}}/shards/{{lang}}.{{shard}}.words.parquet", lang=LANGS, allow_missing=True)
        ),
        langs=temp(
            expand(f"{RESULTS}/reps/{{lm}}/shards/{{lang}}.{{shard}}.langs.parquet", lang=LANGS, allow_missing=True)
        ),
    log:
        f"{LOGS}/bert_extract/{{lm}}/{{shard}}.log",
    benchmark:
        f"{BENCH}/bert_extract/{{lm}}/{{shard}}.tsv"
    wildcard_constraints:
        lm=BERT_LM,
    conda:
        "../envs/torch.yaml"
    threads: config["represent"]["threads"]
    resources:
        gpu=0,
        device=config["represent"]["device"] or "auto",
        batch_size=config["represent"]["batch_size"],
    params:
        code=code_version("scripts/bert_extract.py"),
        languages=LANGS,
        # shards decide the jobs themselves (and the order of the float sums), so changing them reruns these
        n_shards=N_SHARDS,
        # the model, its chunk length and how it reads the text (common.smk represent_lm)
        lm=PLAN.represent_lm,
        max_documents=config["represent"]["max_documents"],
        mean_positions=LANGUAGE["mean_positions"],
    script:
        "../scripts/bert_extract.py"


rule bert_reduce:
    input:
        words=expand(
            f"{RESULTS}/reps/{{lm}}/shards/{{lang}}.{{shard}}.words.parquet",
            lang=LANGS,
            shard=range(N_SHARDS),
            allow_missing=True,
        ),
        langs=expand(
            f"{RESULTS}/reps/{{lm}}/shards/{{lang}}.{{shard}}.langs.parquet",
            lang=LANGS,
            shard=range(N_SHARDS),
            allow_missing=True,
        ),
    output:
        words=f"{RESULTS}/reps/{{lm}}/words.parquet",
        langs=f"{RESULTS}/reps/{{lm}}/langs.parquet",
    log:
        f"{LOGS}/bert_reduce/{{lm}}.log",
    benchmark:
        f"{BENCH}/bert_reduce/{{lm}}.tsv"
    wildcard_constraints:
        lm=BERT_LM,
    conda:
        "../envs/torch.yaml"
    params:
        code=code_version("scripts/bert_reduce.py"),
    script:
        "../scripts/bert_reduce.py"
