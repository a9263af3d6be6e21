# WordPiece: one vocabulary for every model and data size (trained on the largest sample, or given),
# then each sampled corpus becomes one document per line of wordpieces.


rule train_vocab:
    input:
        corpora=expand(f"{RESULTS}/corpus/{max(SIZES)}/{{lang}}.txt", lang=LANGS),
    output:
        f"{RESULTS}/vocab/trained.txt",
    log:
        f"{LOGS}/train_vocab.log",
    benchmark:
        f"{BENCH}/train_vocab.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/train_vocab.py"),
        vocab_size=config["tokenizer"]["vocab_size"],
        min_frequency=config["tokenizer"]["min_frequency"],
        limit_alphabet=config["tokenizer"]["limit_alphabet"],
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/train_vocab.py"


rule tokenize:
    input:
        corpus=f"{RESULTS}/corpus/{{size}}/{{lang}}.txt",
        vocab=PLAN.vocab_source(),
    output:
        f"{RESULTS}/tokens/{{size}}/{{lang}}.txt",
    log:
        f"{LOGS}/tokenize/{{size}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/tokenize/{{size}}/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/tokenize.py"),
        lowercase=config["tokenizer"]["lowercase"],
    script:
        "../scripts/tokenize.py"


use rule tokenize as heldout_tokenize with:
    input:
        corpus=f"{RESULTS}/corpus/dev/{{lang}}.txt",
        vocab=PLAN.vocab_source(),
    output:
        f"{RESULTS}/tokens/dev/{{lang}}.txt",
    log:
        f"{LOGS}/heldout_tokenize/{{lang}}.log",
    benchmark:
        f"{BENCH}/heldout_tokenize/{{lang}}.tsv"


rule count_words:
    input:
        tokens=expand(f"{RESULTS}/tokens/{{size}}/{{lang}}.txt", lang=LANGS, allow_missing=True),
    output:
        f"{RESULTS}/tokens/{{size}}/word_counts.parquet",
    log:
        f"{LOGS}/count_words/{{size}}.log",
    benchmark:
        f"{BENCH}/count_words/{{size}}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/count_words.py"),
    script:
        "../scripts/count_words.py"
