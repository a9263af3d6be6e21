# Monolingual BERTs and their similarity (Conneau et al. 2020, sections 5.1-5.2): one BERT per language trained
# on that language alone (model id mono/{lang}/{size}-w{window}; en' = mono/{pivot}~{seed}/..., the pivot's model
# trained again with another seed), aligned to the pivot's by Procrustes with iterative normalisation at word
# and sentence level, at contextual word level (NER and parsing through a map at each layer), and linear CKA
# by layer against the run's multilingual BERT and a random encoder.
# Helpers, settings and table lists: common.smk.


use rule bert_pretrain as mono_pretrain with:
    input:
        tokens=lambda wc: f"{RESULTS}/tokens/{wc.size}/{PLAN.mono_language(wc.mono)}.txt",
        vocab=PLAN.vocab_source(),
        dev=lambda wc: PLAN.dev_tokens(PLAN.mono_bert(), PLAN.mono_language(wc.mono)),  # the model's own language
    output:
        directory(f"{RESULTS}/models/mono/{{mono}}/{{size}}-w{{window}}"),
    log:
        f"{LOGS}/mono_pretrain/{{mono}}/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/mono_pretrain/{{mono}}/{{size}}-w{{window}}.tsv"
    wildcard_constraints:
        mono=r"[a-z][a-z0-9_]*(~\d+)?",
    params:
        checkpoints=f"{RESULTS}/checkpoints/mono/{{mono}}/{{size}}-w{{window}}",
        rule="mono_pretrain",
        hparams=lambda wc: PLAN.mono_hparams(wc.mono, wc.window),


rule mono_word_means:
    input:
        model=lambda wc: PLAN.mono_dir(wc.mono, wc.size, wc.window),
        tokens=lambda wc: f"{RESULTS}/tokens/{wc.size}/{wc.mono}.txt",
        counts=f"{RESULTS}/tokens/{{size}}/word_counts.parquet",
        # the sample's first monolingual.word_mean_sentences sentences are tokenized again, as the token file was
        corpus=lambda wc: f"{RESULTS}/corpus/{wc.size}/{wc.mono}.txt",
        vocab=PLAN.vocab_source(),
    output:
        f"{RESULTS}/monolingual/words/{{mono}}/{{size}}-w{{window}}.parquet",
    log:
        f"{LOGS}/mono_word_means/{{mono}}/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/mono_word_means/{{mono}}/{{size}}-w{{window}}.tsv"
    wildcard_constraints:
        mono="[a-z][a-z0-9_]*",
    conda:
        "../envs/torch.yaml"
    threads: LANGUAGE["threads"]
    resources:
        **PLAN.inference_resources(),
    params:
        code=code_version("scripts/mono_word_means.py"),
        lang=lambda wc: wc.mono,
        vocabulary={key: MONO[key] for key in ("min_count", "vocabulary_size")},
        max_sentences=MONO["word_mean_sentences"],
        lowercase=config["tokenizer"]["lowercase"],
        max_length=lambda wc: int(wc.window),
    script:
        "../scripts/mono_word_means.py"


rule mono_fasttext:
    input:
        tokens=f"{RESULTS}/tokens/{{size}}/{{lang}}.txt",
        counts=f"{RESULTS}/tokens/{{size}}/word_counts.parquet",
    output:
        f"{RESULTS}/monolingual/fasttext/{{lang}}/{{size}}.parquet",
    log:
        f"{LOGS}/mono_fasttext/{{lang}}/{{size}}.log",
    benchmark:
        f"{BENCH}/mono_fasttext/{{lang}}/{{size}}.tsv"
    conda:
        "../envs/torch.yaml"
    params:
        code=code_version("scripts/mono_fasttext.py"),
        vocabulary={key: MONO[key] for key in ("min_count", "vocabulary_size")},
        fasttext=MONO["fasttext"],
    script:
        "../scripts/mono_fasttext.py"


rule mono_word_alignment:
    input:
        models=lambda wc: [PLAN.mono_dir(PIVOT), PLAN.mono_dir(wc.lang)],
        stores=[
            f"{RESULTS}/monolingual/words/{PIVOT}/{MONO_GRID}.parquet",
            f"{RESULTS}/monolingual/words/{{lang}}/{MONO_GRID}.parquet",
        ],
        fasttext=[
            f"{RESULTS}/monolingual/fasttext/{PIVOT}/{MONO_SIZE}.parquet",
            f"{RESULTS}/monolingual/fasttext/{{lang}}/{MONO_SIZE}.parquet",
        ],
        counts=f"{RESULTS}/tokens/{MONO_SIZE}/word_counts.parquet",
        train=lambda wc: PLAN.dictionary(wc.lang, "train"),
        test=lambda wc: PLAN.dictionary(wc.lang),
    output:
        table=f"{RESULTS}/eval/monolingual/words/{MONO_GRID}/{{lang}}.parquet",
        per_item=f"{RESULTS}/eval/monolingual/words/{MONO_GRID}/{{lang}}.items.parquet",
    log:
        f"{LOGS}/mono_word_alignment/{{lang}}.log",
    benchmark:
        f"{BENCH}/mono_word_alignment/{{lang}}.tsv"
    conda:
        "../envs/torch.yaml"
    threads: LANGUAGE["threads"]
    resources:
        **PLAN.inference_resources(),
        block=config["retrieval"]["block"],
    params:
        code=code_version("scripts/mono_word_alignment.py"),
        pivot=PIVOT,
        models=lambda wc: [PLAN.mono_model_params(PIVOT), PLAN.mono_model_params(wc.lang)],
        settings={
            key: MONO[key]
            for key in (
                "normalize_iterations",
                "min_count",
                "vocabulary_size",
                "csls_k",
                "word_mean_sentences",
                "fasttext",
            )
        },
        dictionary_split=config["retrieval"]["dictionary_split"],
        lowercase=config["tokenizer"]["lowercase"],
        max_length=MONO_WINDOW,
    script:
        "../scripts/mono_word_alignment.py"


rule mono_sentence_alignment:
    input:
        models=lambda wc: [PLAN.mono_dir(PIVOT), PLAN.mono_dir(wc.lang)],
        xnli=lambda wc: PLAN.xnli_files(wc.lang, MONO["map_split"]),
        tatoeba=lambda wc: [LAYOUT.file("tatoeba", lang=wc.lang, side=side) for side in ("eng", wc.lang)],
    output:
        table=f"{RESULTS}/eval/monolingual/sentences/{MONO_GRID}/{{lang}}.parquet",
        per_item=f"{RESULTS}/eval/monolingual/sentences/{MONO_GRID}/{{lang}}.items.parquet",
    log:
        f"{LOGS}/mono_sentence_alignment/{{lang}}.log",
    benchmark:
        f"{BENCH}/mono_sentence_alignment/{{lang}}.tsv"
    conda:
        "../envs/torch.yaml"
    threads: LANGUAGE["threads"]
    resources:
        **PLAN.inference_resources(),
        block=SENT["block"],
    params:
        code=code_version("scripts/mono_sentence_alignment.py"),
        pivot=PIVOT,
        models=lambda wc: [PLAN.mono_model_params(PIVOT), PLAN.mono_model_params(wc.lang)],
        settings={key: MONO[key] for key in ("normalize_iterations", "map_split", "max_sentences")},
        max_length=MONO_WINDOW,
    script:
        "../scripts/mono_sentence_alignment.py"


rule mono_contextual:
    # the contextual word level (Figure 5): maps per layer on word pairs of XNLI (alignment.aligner), NER / parsing
    # through them
    input:
        models=lambda wc: [PLAN.mono_dir(PIVOT), PLAN.mono_dir(wc.lang)],
        bimlm=lambda wc: PLAN.mono_contextual_bimlm(wc.lang),
        xnli=lambda wc: PLAN.xnli_files(wc.lang, MONO["map_split"]),
        train=lambda wc: [LAYOUT.task_file(task, PIVOT, "train") for task in PLAN.mono_contextual_tasks(wc.lang)],
        dev=lambda wc: [LAYOUT.task_file(task, PIVOT, "dev") for task in PLAN.mono_contextual_tasks(wc.lang)],
        test_pivot=lambda wc: [LAYOUT.task_file(task, PIVOT, "test") for task in PLAN.mono_contextual_tasks(wc.lang)],
        test_target=lambda wc: [LAYOUT.task_file(task, wc.lang, "test") for task in PLAN.mono_contextual_tasks(wc.lang)],
    output:
        f"{RESULTS}/eval/monolingual/contextual/{MONO_GRID}/{{lang}}.parquet",
    log:
        f"{LOGS}/mono_contextual/{{lang}}.log",
    benchmark:
        f"{BENCH}/mono_contextual/{{lang}}.tsv"
    conda:
        "../envs/torch.yaml"
    threads: TRANSFER["threads"]
    resources:
        gpu=0,
        device=TRANSFER["device"] or "auto",
        batch_size=TRANSFER["batch_size"],
    params:
        code=code_version("scripts/mono_contextual.py"),
        pivot=PIVOT,
        tasks=lambda wc: PLAN.mono_contextual_tasks(wc.lang),
        models=lambda wc: [PLAN.mono_model_params(PIVOT), PLAN.mono_model_params(wc.lang)],
        bimlm=lambda wc: PLAN.mono_contextual_bimlm_params(wc.lang),
        settings=dict(
            layers=PLAN.mono_contextual_layers(),
            task_layers=MONO_CONTEXTUAL["task_layers"],
            **{key: MONO[key] for key in ("normalize_iterations", "map_split", "max_sentences")},
        ),
        words=dict(tokenizer=ALIGN["tokenizer"], aligner=ALIGN["aligner"], settings=ALIGNER_SETTINGS),
        task_settings=lambda wc: {
            task: PLAN.mono_contextual_task_settings(task) for task in PLAN.mono_contextual_tasks(wc.lang)
        },
        seed=TRANSFER["seeds"][0],
        ner_repair=lambda wc: TRANSFER["ner_repair"] if "ner" in PLAN.mono_contextual_tasks(wc.lang) else None,
        max_length=MONO_WINDOW,
        # resume checkpoints of the fine-tunings (a killed job resumes; another setting trains beside them)
        checkpoints=f"{RESULTS}/checkpoints/mono_contextual/{{lang}}",
    script:
        "../scripts/mono_contextual.py"


rule cka:
    input:
        unpack(PLAN.cka_inputs),
    output:
        f"{RESULTS}/eval/cka/{MONO_GRID}/{{mono}}.parquet",
    log:
        f"{LOGS}/cka/{{mono}}.log",
    benchmark:
        f"{BENCH}/cka/{{mono}}.tsv"
    wildcard_constraints:
        mono=r"[a-z][a-z0-9_]*(~\d+)?",
    conda:
        "../envs/torch.yaml"
    threads: LANGUAGE["threads"]
    resources:
        **PLAN.inference_resources(),
    params:
        code=code_version("scripts/cka.py"),
        pivot=PIVOT,
        lang=lambda wc: PLAN.mono_language(wc.mono),
        models=lambda wc: [PLAN.mono_model_params(PIVOT), PLAN.mono_model_params(wc.mono)],
        # not en_prime_seed: en's seed is in its model (the {mono} wildcard), so it reruns en's job only
        settings={key: CKA[key] for key in ("split", "max_sentences", "debiased", "random_seed")},
        max_length=MONO_WINDOW,
        bilingual_length=PLAN.cka_bilingual_length(),
        sides=PLAN.cka_sides(),  # each side's training size and window, for the findings' same-data check
        # each CKA's interval over the sentences is drawn here, from the vectors (CKA is no ratio of per-item
        # sums, so a gather cannot draw it): a delete-a-group jackknife (xling.evaluate.cka_intervals; the
        # bootstrap's duplicated rows raise CKA), so only config `bootstrap`'s level and seed (its groups) enter:
        # a change of either reruns these jobs (the models are not retrained) as well as the gathers
        bootstrap={key: config["bootstrap"][key] for key in ("level", "seed")},
    script:
        "../scripts/cka.py"
