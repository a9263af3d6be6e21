# Data: a source writes the canonical layout under DATA (synthetic generator or real downloads);
# then corpora are normalized, deduplicated and sampled at each data size.


# The one place that asks which source the run uses: DATA_SOURCE answers which languages have which data.
if config["data"]["source"] == "synthetic":
    DATA_SOURCE = SyntheticData.from_config(config)

    rule synthetic_data:
        output:
            LAYOUT.synthetic(LANGS, PLAN.function_words()),
        log:
            f"{LOGS}/synthetic_data.log",
        benchmark:
            f"{BENCH}/synthetic_data.tsv"
        conda:
            "../envs/data.yaml"
        params:
            code=code_version("scripts/synthetic_data.py"),
            spec=config["synthetic"],
            languages=LANGS,
            out_dir=lambda wildcards, output: os.path.commonpath(output),
        script:
            "../scripts/synthetic_data.py"

    if DATA_SOURCE.low_resource:

        rule synthetic_low_resource:  # test-only languages apart: a change of them leaves the run languages' alone
            output:
                [
                    LAYOUT.file("treebank", lang=lang, split=split)
                    for lang in DATA_SOURCE.low_resource
                    for split in LOW_RESOURCE_SPLITS
                ],
            log:
                f"{LOGS}/synthetic_low_resource.log",
            benchmark:
                f"{BENCH}/synthetic_low_resource.tsv"
            conda:
                "../envs/data.yaml"
            params:
                code=code_version("scripts/synthetic_low_resource.py"),
                spec=config["synthetic"],
                languages=LANGS,
                low_resource=config["transfer"]["parsing"]["low_resource"]["synthetic"],
                out_dir=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),  # {data}/ud/x.conllu
            script:
                "../scripts/synthetic_low_resource.py"

else:

    include: "sources.smk"


PLAN.source = DATA_SOURCE


rule prepare_corpus:
    input:
        LAYOUT.file("corpus", lang="{lang}"),
    output:
        f"{RESULTS}/corpus/all/{{lang}}.txt",
    log:
        f"{LOGS}/prepare_corpus/{{lang}}.log",
    benchmark:
        f"{BENCH}/prepare_corpus/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/prepare_corpus.py"),
        normalization=config["corpus"]["normalization"],
        dedup=config["corpus"]["dedup"],
    script:
        "../scripts/prepare_corpus.py"


# The BERTs' dev text (bert.selection dev_perplexity): corpus.dev_sentences from the end of the document shuffle
# that the samples take from its beginning, apart from the largest sample's documents.
rule heldout_corpus:
    input:
        f"{RESULTS}/corpus/all/{{lang}}.txt",
    output:
        f"{RESULTS}/corpus/dev/{{lang}}.txt",
    log:
        f"{LOGS}/heldout_corpus/{{lang}}.log",
    benchmark:
        f"{BENCH}/heldout_corpus/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/heldout_corpus.py"),
        seed=config["corpus"]["seed"],
        sentences=config["corpus"]["dev_sentences"],
        disjoint_from=max(SIZES),
    script:
        "../scripts/heldout_corpus.py"


rule sample_corpus:
    input:
        f"{RESULTS}/corpus/all/{{lang}}.txt",
    output:
        f"{RESULTS}/corpus/{{size}}/{{lang}}.txt",
    log:
        f"{LOGS}/sample_corpus/{{size}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/sample_corpus/{{size}}/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        code=code_version("scripts/sample_corpus.py"),
        seed=config["corpus"]["seed"],
    script:
        "../scripts/sample_corpus.py"
