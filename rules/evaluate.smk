# Evaluation: word retrieval from the pivot into every language with a dictionary, for each model,
# data size, window and layer, and each Hugging Face checkpoint of language.hf_models ({lm} hf/{slug});
# gathered into one tidy table (a row per setting x language pair), and the same queries' MRR by part of
# speech (retrieval.pos).


rule word_retrieval:
    input:
        words=f"{RESULTS}/reps/{{lm}}/words.parquet",
        dictionaries=[PLAN.dictionary(lang) for lang in PLAN.retrieval_targets()],
        function_dictionaries=PLAN.function_dictionaries(),  # [] without synthetic.dictionary.function_words
        counts=PLAN.retrieval_counts,
    output:
        f"{RESULTS}/eval/retrieval/{{lm}}.parquet",
        **(
            {"function_ranks": f"{RESULTS}/eval/retrieval/{{lm}}.function.ranks.parquet"}
            if PLAN.function_words()
            else {}
        ),
        ranks=f"{RESULTS}/eval/retrieval/{{lm}}.ranks.parquet",
        # the function words' ranks apart, so that no MRR but the one by part of speech reads them
    log:
        f"{LOGS}/word_retrieval/{{lm}}.log",
    benchmark:
        f"{BENCH}/word_retrieval/{{lm}}.tsv"
    wildcard_constraints:
        lm=ANY_LM,
    conda:
        "../envs/torch.yaml"
    resources:
        block=config["retrieval"]["block"],
    params:
        code=code_version("scripts/word_retrieval.py"),
        lm=PLAN.retrieval_lm,
        settings={key: config["retrieval"][key] for key in ("dictionary_split", "min_count", "metric", "csls_k", "mrr")},
        candidates=config["retrieval"]["candidates"],
        csls_neighbourhood=config["retrieval"]["csls_neighbourhood"],
        vocabulary_size=config["retrieval"]["vocabulary_size"],
        lowercase=config["tokenizer"]["lowercase"],
        pivot=PIVOT,
        targets=PLAN.retrieval_targets(),
    script:
        "../scripts/word_retrieval.py"


if POS["splits"]:

    rule word_retrieval_pos:
        input:
            # the per-query ranks beside every table the word-retrieval table gathers
            ranks=[
                re.sub(r"\.parquet$", suffix, path)
                for path in table_registry.TABLES["word_retrieval"].parts(table_plan())
                for suffix in (".ranks.parquet", ".function.ranks.parquet")[: 1 + PLAN.function_words()]
            ],
            treebanks=PLAN.pos_treebanks(),
        output:
            parquet=f"{RESULTS}/eval/word_retrieval_pos.parquet",
            csv=report(
                f"{RESULTS}/eval/word_retrieval_pos.csv",
                caption="../reports/analysis_table.rst",
                category="Tables",
                labels={"table": "word_retrieval_pos"},
            ),
        log:
            f"{LOGS}/word_retrieval_pos.log",
        benchmark:
            f"{BENCH}/word_retrieval_pos.tsv"
        conda:
            "../envs/torch.yaml"
        params:
            code=code_version("scripts/word_retrieval_pos.py"),
            open_class=POS["open_class"],
            closed_class=POS["closed_class"],
            bootstrap={
                "n_resamples": config["bootstrap"]["resamples"],
                "level": config["bootstrap"]["level"],
                "seed": config["bootstrap"]["seed"],
            },
            # the classes' MRR intervals
            splits=POS["splits"],
            treebank=PLAN.pos_treebank_name(),
            lowercase=config["tokenizer"]["lowercase"],
        script:
            "../scripts/word_retrieval_pos.py"
