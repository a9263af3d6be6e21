# Contextual alignment (config object `alignment`; Cao, Kitaev and Klein 2020, sections 3.2-3.3 and 5): word pairs
# of each language's parallel text with the pivot (Moses tokens, alignment.aligner both ways: fast_align, the
# paper's, or eflomal; the one-to-one intersection, test / dev / train{n} splits) and their AER where gold links
# exist; contextual word retrieval of every BERT on the test splits of alignment.evaluation_languages (the aligned
# ones by default, as Cao et al.'s Tables 3-4); its accuracy by part of speech and against the frequency-rank
# difference of the two words.
rule word_pairs:
    input:
        src=LAYOUT.file("parallel", lang="{lang}", ext=PIVOT),
        tgt=LAYOUT.file("parallel", lang="{lang}", ext="{lang}"),
        gold=PLAN.word_pairs_gold,
    output:
        pairs=[path for files in PLAN.word_pair_files("{lang}", PLAN.align_splits()).values() for path in files],
        table=f"{RESULTS}/eval/word_pairs/{PIVOT}-{{lang}}.parquet",
    log:
        f"{LOGS}/word_pairs/{{lang}}.log",
    benchmark:
        f"{BENCH}/word_pairs/{{lang}}.tsv"
    conda:
        "../envs/data.yaml"
    threads: ALIGN["threads"]  # eflomal's samplers; fast_align trains on one thread whatever this says
    params:
        code=code_version("scripts/word_pairs.py"),
        pivot=PIVOT,
        splits={key: ALIGN[key] for key in ("test_sentences", "dev_sentences", "train_sentences")},
        tokenizer=ALIGN["tokenizer"],
        aligner=ALIGN["aligner"],
        aligner_settings=ALIGNER_SETTINGS,
        out_dir=lambda wildcards: f"{DATA}/align/{PIVOT}-{wildcards.lang}",
    script:
        "../scripts/word_pairs.py"


rule contextual_retrieval:
    input:
        unpack(PLAN.contextual_retrieval_inputs),
    output:
        table=f"{RESULTS}/eval/contextual_retrieval/{{lm}}.parquet",
        queries=f"{RESULTS}/eval/contextual_retrieval/{{lm}}.queries.parquet",
    log:
        f"{LOGS}/contextual_retrieval/{{lm}}.log",
    benchmark:
        f"{BENCH}/contextual_retrieval/{{lm}}.tsv"
    wildcard_constraints:
        lm=BERT_LM,
    conda:
        "../envs/torch.yaml"
    threads: ALIGN["threads"]
    resources:
        gpu=0,
        device=ALIGN["device"] or "auto",
        batch_size=ALIGN["batch_size"],
        block=ALIGN_RETRIEVAL["block"],
    params:
        code=code_version("scripts/contextual_retrieval.py"),
        lm=PLAN.lm_params,
        pivot=PIVOT,
        langs=PLAN.align_eval_langs(),
        seen_split=PLAN.seen_split(),
        layer=ALIGN["layer"],
        settings={key: ALIGN_RETRIEVAL[key] for key in ("csls_k", "exclude_seen", "exclude_exact")},
    script:
        "../scripts/contextual_retrieval.py"


rule contextual_retrieval_frequency:
    input:
        queries=[f"{RESULTS}/eval/contextual_retrieval/{lm}.queries.parquet" for lm in PLAN.contextual_retrieval_lms()],
        # the aligned text of each language, every split: the words' frequency ranks
        text=[
            f
            for lang in PLAN.align_eval_langs()
            for files in PLAN.word_pair_files(lang, PLAN.align_splits()).values()
            for f in files[:2]
        ],
    output:
        parquet=f"{RESULTS}/eval/contextual_retrieval_frequency.parquet",
        csv=report(
            f"{RESULTS}/eval/contextual_retrieval_frequency.csv",
            caption="../reports/analysis_table.rst",
            category="Tables",
            labels={"table": "contextual_retrieval_frequency"},
        ),
    log:
        f"{LOGS}/contextual_retrieval_frequency.log",
    benchmark:
        f"{BENCH}/contextual_retrieval_frequency.tsv"
    conda:
        "../envs/torch.yaml"
    params:
        code=code_version("scripts/contextual_retrieval_frequency.py"),
        pivot=PIVOT,
        langs=PLAN.align_eval_langs(),
        by=ANALYSIS_BY,
        bins=ALIGN_ANALYSIS["rank_bins"],
        exclusions={key: ALIGN_RETRIEVAL[key] for key in ("exclude_seen", "exclude_exact")},
        bootstrap=config["bootstrap"],  # each bin's interval over its queries (the findings judge with it)
    script:
        "../scripts/contextual_retrieval_frequency.py"


if POS["splits"]:

    rule contextual_retrieval_pos:
        input:
            queries=[
                f"{RESULTS}/eval/contextual_retrieval/{lm}.queries.parquet" for lm in PLAN.contextual_retrieval_lms()
            ],
            treebanks=PLAN.pos_treebanks(),
        output:
            parquet=f"{RESULTS}/eval/contextual_retrieval_pos.parquet",
            csv=report(
                f"{RESULTS}/eval/contextual_retrieval_pos.csv",
                caption="../reports/analysis_table.rst",
                category="Tables",
                labels={"table": "contextual_retrieval_pos"},
            ),
        log:
            f"{LOGS}/contextual_retrieval_pos.log",
        benchmark:
            f"{BENCH}/contextual_retrieval_pos.tsv"
        conda:
            "../envs/torch.yaml"
        params:
            code=code_version("scripts/contextual_retrieval_pos.py"),
            by=ANALYSIS_BY,
            settings={
                key: ALIGN_ANALYSIS[key]
                for key in ("pos_groups", "pos_contextual", "pos_exclude_seen", "pos_exclude_exact")
            },
            treebank=PLAN.pos_treebank_name(),
            splits=POS["splits"],
            bootstrap=config["bootstrap"],  # each row's interval over its queries (the findings judge with it)
        script:
            "../scripts/contextual_retrieval_pos.py"
