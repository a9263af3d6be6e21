# Pretraining from scratch on the same data: GloVe, Word2Vec and BERT masked-LM, for each
# data size x context window. All models read the same WordPiece token files.


# One process per GPU through torchrun when the job has GPUs, a plain process on CPU. `exec` lets SLURM's
# SIGTERM reach the trainer (it checkpoints and exits); torchrun forwards SIGUSR1 too and waits long enough
# for the checkpoint to be written before it kills its workers. Part of the rules' code version. Every value is
# quoted (`:q`; params.switch is quoted where it is built), so a space in a setting cannot split or extend the
# command.
PRETRAIN_SHELL = """
export OMP_NUM_THREADS={threads}
export TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1
export TORCH_ELASTIC_SHUTDOWN_TIMEOUT=240
dev={input.dev:q}  # the held-out tokens of selection dev_perplexity; none for selection final
if [ {resources.gpu:q} -gt 0 ]; then
    launch="torchrun --standalone --nproc_per_node="{resources.gpu:q}
else
    launch="python"
fi
exec $launch -m xling.models.bert --tokens {input.tokens:q} --vocab {input.vocab:q} --out {output:q} \
    --checkpoint-dir {params.checkpoints:q} --hparams {params.hparams:q} --device {resources.device:q} \
    --rule {params.rule:q} --gpus {resources.gpu:q} \
    --checkpoint-every {resources.checkpoint_every:q} --keep-checkpoints {resources.keep_checkpoints:q} \
    --log-every {resources.log_every:q} {params.case} ${{dev:+--dev-tokens "$dev"}} {params.switch} > {log:q} 2>&1
"""


rule glove:
    input:
        tokens=PLAN.token_files,
    output:
        f"{RESULTS}/models/glove/{{size}}-w{{window}}/vectors.bin",
    log:
        f"{LOGS}/glove/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/glove/{{size}}-w{{window}}.tsv"
    priority: 5  # long jobs: after the BERTs, before the many short ones
    conda:
        "../envs/static.yaml"
    threads: config["glove"]["threads"]
    resources:
        mem_mb=config["glove"]["mem_mb"],
    params:
        code=code_version("scripts/train_static.py"),
        hp=computed("glove", config["glove"]),
        # a context of `window` tokens = window // 2 on each side, the span of a BERT block of that length
        side_window=lambda wc: int(wc.window) // 2,
    script:
        "../scripts/train_static.py"


rule word2vec:
    input:
        tokens=PLAN.token_files,
    output:
        f"{RESULTS}/models/word2vec/{{size}}-w{{window}}/vectors.bin",
    log:
        f"{LOGS}/word2vec/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/word2vec/{{size}}-w{{window}}.tsv"
    priority: 5  # long jobs: after the BERTs, before the many short ones
    conda:
        "../envs/static.yaml"
    threads: config["word2vec"]["threads"]
    params:
        code=code_version("scripts/train_static.py"),
        hp=computed("word2vec", config["word2vec"]),
        # a context of `window` tokens = window // 2 on each side, the span of a BERT block of that length
        side_window=lambda wc: int(wc.window) // 2,
    script:
        "../scripts/train_static.py"


rule bert_pretrain:
    input:
        tokens=PLAN.token_files,
        vocab=PLAN.vocab_source(),
        dev=PLAN.dev_tokens(PLAN.bert_settings(config["bert"]), PIVOT),
    output:
        directory(f"{RESULTS}/models/bert/{{size}}-w{{window}}"),
    log:
        f"{LOGS}/bert_pretrain/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/bert_pretrain/{{size}}-w{{window}}.tsv"
    # the longest jobs start first: the static models and the language jobs fill the other cores around them
    priority: 10
    conda:
        "../envs/torch.yaml"
    threads: config["bert"]["threads"]
    resources:
        gpu=0,
        device=config["bert"]["device"] or "auto",
        checkpoint_every=config["bert"]["checkpoint_every"],
        keep_checkpoints=config["bert"]["keep_checkpoints"],
        log_every=config["bert"]["log_every"],
    params:
        code=code_version("xling/models/bert.py", PRETRAIN_SHELL),
        # checkpoints live outside the output so a killed or failed job resumes instead of restarting; the
        # trainer keeps those of each setting apart (a subdirectory named by a hash of the settings and data)
        checkpoints=f"{RESULTS}/checkpoints/bert/{{size}}-w{{window}}",
        rule="bert_pretrain",  # named in the trainer's errors (a GPU job without CUDA); each use of the rule its own
        hparams=lambda wc: json.dumps({**PLAN.bert_settings(config["bert"]), "window": int(wc.window)}, sort_keys=True),
        # recorded in the model's tokenizer files, so inference normalizes text as the token files were
        case="--lowercase" if config["tokenizer"]["lowercase"] else "--no-lowercase",
        switch="",  # an ablation's extra anchors drawn per batch (rules/ablate.smk)
    shell:
        PRETRAIN_SHELL
