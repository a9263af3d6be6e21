# Pretraining from scratch on the same data: GloVe, Word2Vec and BERT masked-LM, for each
# data size x context window. All models read the same WordPiece token files.


rule glove:
    input:
        tokens=token_files,
        code=xling_code("scripts/train_static.py"),
    output:
        f"{RESULTS}/models/glove/{{size}}-w{{window}}/vectors.bin",
    params:
        hp=config["glove"],
        # a context of `window` tokens = window // 2 on each side, the span of a BERT block of that length
        side_window=lambda wc: int(wc.window) // 2,
    threads: config["glove"]["threads"]
    resources:
        mem_mb=config["glove"]["mem_mb"],
    log:
        f"{LOGS}/glove/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/glove/{{size}}-w{{window}}.tsv"
    conda:
        "../envs/static.yaml"
    script:
        "../scripts/train_static.py"


rule word2vec:
    input:
        tokens=token_files,
        code=xling_code("scripts/train_static.py"),
    output:
        f"{RESULTS}/models/word2vec/{{size}}-w{{window}}/vectors.bin",
    params:
        hp=config["word2vec"],
        # a context of `window` tokens = window // 2 on each side, the span of a BERT block of that length
        side_window=lambda wc: int(wc.window) // 2,
    threads: config["word2vec"]["threads"]
    log:
        f"{LOGS}/word2vec/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/word2vec/{{size}}-w{{window}}.tsv"
    conda:
        "../envs/static.yaml"
    script:
        "../scripts/train_static.py"


rule bert_pretrain:
    input:
        tokens=token_files,
        vocab=vocab_source(),
        code=xling_code("xling/models/bert.py"),
    output:
        directory(f"{RESULTS}/models/bert/{{size}}-w{{window}}"),
    params:
        # checkpoints live outside the output so a killed or failed job resumes instead of restarting
        checkpoints=f"{RESULTS}/checkpoints/bert/{{size}}-w{{window}}",
        # `threads` is a resource, not a hyper-parameter: changing it must not retrain
        hparams=lambda wc: json.dumps(
            {**{k: v for k, v in config["bert"].items() if k != "threads"}, "window": int(wc.window)}
        ),
    threads: config["bert"]["threads"]
    resources:
        gpu=0,
    log:
        f"{LOGS}/bert_pretrain/{{size}}-w{{window}}.log",
    benchmark:
        f"{BENCH}/bert_pretrain/{{size}}-w{{window}}.tsv"
    conda:
        "../envs/torch.yaml"
    shell:
        # One process per GPU through torchrun when the job has GPUs, a plain process on CPU. `exec` lets
        # SLURM's SIGTERM reach the trainer (it checkpoints and exits); torchrun forwards SIGUSR1 too and
        # waits long enough for the checkpoint to be written before it kills its workers.
        """
        export OMP_NUM_THREADS={threads}
        export TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1
        export TORCH_ELASTIC_SHUTDOWN_TIMEOUT=240
        if [ {resources.gpu} -gt 0 ]; then
            launch="torchrun --standalone --nproc_per_node={resources.gpu}"
        else
            launch="python"
        fi
        exec $launch -m xling.models.bert --tokens {input.tokens} --vocab {input.vocab} --out {output} \
            --checkpoint-dir {params.checkpoints} --hparams '{params.hparams}' > {log} 2>&1
        """
