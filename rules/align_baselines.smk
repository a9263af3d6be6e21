# Cao et al.'s baselines of fine-tuning alignment (config objects `alignment.rotation` and `alignment.fasttext`;
# Cao, Kitaev and Klein 2020, sections 3.3-3.4): the word- and sentence-aligned rotations of each base BERT, learned
# on the train{n} word pairs of rules/align.smk and applied to the non-English vectors before contextual retrieval
# (registered in CONTEXTUAL_ROTATIONS) and in the base's XNLI fine-tunings f{k}-rot{kind} (TRANSFER_ROTATIONS: the
# epoch chosen on rotated dev sets, the test sets rotated, both in finetune's one job);
# and the sentence-augmented fastText, trained per language on the run's corpus and rotated on the same pairs.
# The helpers live in common.smk (Cao et al.'s baselines).


# contextual retrieval evaluates each rotation beside its base model (rules/align.smk) ...
CONTEXTUAL_ROTATIONS.update(
    {
        lm: [
            path
            for n in ALIGN_FT["sizes"]
            for by_lang in PLAN.rotation_files(lm, n).values()
            for path in by_lang.values()
        ]
        for lm in PLAN.rotation_lms()
    }
)
# ... and XNLI fine-tunes and tests its base with the rotations of the most parallel data (the paper's Table 1)
TRANSFER_ROTATIONS.update(
    {
        lm: dict(
            sentences=max(ALIGN_FT["sizes"]),
            layer=ALIGN["layer"],
            files=PLAN.rotation_files(lm, max(ALIGN_FT["sizes"])),
        )
        for lm in PLAN.rotation_lms()
    }
)


rule rotation:
    input:
        unpack(PLAN.rotation_inputs),
    output:
        word=f"{RESULTS}/align/rotations/{{lm}}/word{{n}}/{{lang}}.npy",
        sentence=f"{RESULTS}/align/rotations/{{lm}}/sentence{{n}}/{{lang}}.npy",
    log:
        f"{LOGS}/rotation/{{lm}}/{{n}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/rotation/{{lm}}/{{n}}/{{lang}}.tsv"
    wildcard_constraints:
        lm=BERT_LM,
        n=r"\d+",
    conda:
        "../envs/torch.yaml"
    threads: ALIGN["threads"]
    resources:
        gpu=0,
        device=ALIGN["device"] or "auto",
        batch_size=ALIGN["batch_size"],
        block=ROTATION["block"],
    params:
        code=code_version("scripts/rotation.py"),
        lm=PLAN.lm_params,
        pivot=PIVOT,
        layer=ALIGN["layer"],
    script:
        "../scripts/rotation.py"


rule fasttext_train:
    input:
        corpus=f"{RESULTS}/corpus/{{size}}/{{lang}}.txt",
    output:
        f"{RESULTS}/models/fasttext/{{size}}/{{lang}}.kv",
    log:
        f"{LOGS}/fasttext_train/{{size}}/{{lang}}.log",
    benchmark:
        f"{BENCH}/fasttext_train/{{size}}/{{lang}}.tsv"
    conda:
        "../envs/torch.yaml"
    threads: FASTTEXT["threads"]
    params:
        code=code_version("scripts/fasttext_train.py"),
        hparams=PLAN.fasttext_hparams(),
        tokenizer=ALIGN["tokenizer"],
    script:
        "../scripts/fasttext_train.py"


rule fasttext_retrieval:
    input:
        unpack(PLAN.fasttext_retrieval_inputs),
    output:
        table=f"{RESULTS}/eval/contextual_retrieval/fasttext/{{size}}.parquet",
        queries=f"{RESULTS}/eval/contextual_retrieval/fasttext/{{size}}.queries.parquet",
    log:
        f"{LOGS}/fasttext_retrieval/{{size}}.log",
    benchmark:
        f"{BENCH}/fasttext_retrieval/{{size}}.tsv"
    conda:
        "../envs/torch.yaml"
    threads: ALIGN["threads"]
    resources:
        block=ALIGN_RETRIEVAL["block"],
    params:
        code=code_version("scripts/fasttext_retrieval.py"),
        pivot=PIVOT,
        langs=PLAN.align_langs(),
        align_dir=f"{DATA}/align",
        sizes=ALIGN_FT["sizes"],
        seen_split=PLAN.seen_split(),
        hparams=PLAN.fasttext_hparams(),
        settings={key: ALIGN_RETRIEVAL[key] for key in ("csls_k", "exclude_seen", "exclude_exact")},
    script:
        "../scripts/fasttext_retrieval.py"
