# Zero-shot transfer (config object `transfer`): fine-tune on the pivot language, test on every language, as it
# is and with zero-mean / MDS at one layer. XNLI for every model; POS, parsing and NER for the BERTs of the
# language experiments; Cao et al.'s XNLI (alignment.xnli) as variants f{k}-cao and f{k}-rot{kind}; the ablations'
# grid points (ablation.finetune) as f{k}-b{batch}-lr{rate}[-clr{rate}]. Which runs
# exist, and their inputs and settings, live in xling/plan/transfer.py.


# One job per fine-tuned model fine-tunes it and scores it (one process start-up instead of two). A change of a
# scoring setting (params.test) reruns the job, whose fine-tuning resumes from its last checkpoint (keyed by
# params.run and the data) without a step and rewrites the same model; only the scoring is redone.
rule finetune:
    input:
        unpack(PLAN.finetune_inputs),
    output:
        model=directory(f"{RESULTS}/finetuned/{{task}}/{{lm}}/{{variant}}/seed{{seed}}"),
        table=f"{RESULTS}/eval/transfer/{{task}}/{{lm}}/{{variant}}/seed{{seed}}.parquet",
        per_item=f"{RESULTS}/eval/transfer/{{task}}/{{lm}}/{{variant}}/seed{{seed}}.items.parquet",
    log:
        f"{LOGS}/finetune/{{task}}/{{lm}}/{{variant}}/seed{{seed}}.log",
    benchmark:
        f"{BENCH}/finetune/{{task}}/{{lm}}/{{variant}}/seed{{seed}}.tsv"
    wildcard_constraints:
        lm=ANY_LM,
        task="xnli|pos|parsing|ner",
        variant=r"static|f\d+(-zm|-cao|-rot[a-z]+|-b\d+-lr[0-9.e+-]+(-clr[0-9.e+-]+)?)?",
        seed=r"\d+",
    conda:
        "../envs/torch.yaml"
    threads: TRANSFER["threads"]
    resources:
        gpu=0,
        device=TRANSFER["device"] or "auto",
        batch_size=TRANSFER["batch_size"],
        checkpoint_every=TRANSFER["checkpoint_every"],
    params:
        code=code_version("scripts/finetune.py"),
        lm=PLAN.any_lm,
        run=PLAN.transfer_params,
        test=PLAN.transfer_eval_params,
        # resume checkpoints live outside the output (a killed job resumes; a changed setting trains beside them)
        checkpoints=f"{RESULTS}/checkpoints/finetune/{{task}}/{{lm}}/{{variant}}/seed{{seed}}",
    script:
        "../scripts/finetune.py"
