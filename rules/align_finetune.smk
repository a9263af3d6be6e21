# Fine-tuning alignment (config object `alignment.finetune`; Cao, Kitaev and Klein 2020, section 3.3): each base
# BERT fine-tuned on the train{n} word pairs of every aligned language jointly (alignment.finetune.languages; a model
# of alignment.finetune.runs, {n} = {size}-{lang}-..., on its own languages). The result, lm id aligned/{n}/{base},
# is a model of the run like any other: the lm helpers of common.smk (aligned_base, bert_path, lm_params) load it
# from its directory, and XNLI transfer (transfer_runs) fine-tunes every aligned model. Input functions and the
# list of aligned models (aligned_models) live in common.smk.


rule align_finetune:
    input:
        unpack(PLAN.align_finetune_inputs),
    output:
        directory(f"{RESULTS}/models/aligned/{{n}}/{{base}}"),
    log:
        f"{LOGS}/align_finetune/{{n}}/{{base}}.log",
    benchmark:
        f"{BENCH}/align_finetune/{{n}}/{{base}}.tsv"
    wildcard_constraints:
        n=rf"\d+(-{LANG})*",
        base=r"bert/\d+-w\d+|hf/[A-Za-z0-9._-]+",
    conda:
        "../envs/torch.yaml"
    threads: ALIGN_FT["threads"]
    resources:
        gpu=0,
        device=ALIGN_FT["device"] or "auto",
        checkpoint_every=ALIGN_FT["checkpoint_every"],
    params:
        code=code_version("scripts/align_finetune.py"),
        base=PLAN.base_params,
        langs=lambda wildcards: PLAN.align_langs(wildcards.n),
        settings={key: ALIGN_FT[key] for key in ALIGN_SETTINGS},
        seed=ALIGN_FT["seed"],
        # resume checkpoints live outside the output (a killed job resumes; a changed setting trains beside them)
        checkpoints=f"{RESULTS}/checkpoints/aligned/{{n}}/{{base}}",
    script:
        "../scripts/align_finetune.py"
