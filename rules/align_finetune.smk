# Fine-tuning alignment (config object `alignment.finetune`; Cao, Kitaev and Klein 2020, section 3.3): each base
# BERT fine-tuned on the train{n} word pairs of every aligned language jointly. The result, lm id aligned/{n}/{base},
# is a model of the run like any other: the lm helpers of common.smk (aligned_base, bert_path, lm_params,
# aligned_models) load it from its directory, and XNLI transfer (transfer_runs) fine-tunes every aligned model.
from types import SimpleNamespace

ALIGN_SETTINGS = ("pairs_per_language", "epochs", "learning_rate", "betas", "eps", "warmup", "regularization", "layer")


def align_finetune_inputs(wildcards):
    """The base model (our BERT's directory, a checkpoint's local directory; none for a hub id) and each aligned
    language's train{n} split (xling.data.alignment's files)."""
    base = SimpleNamespace(lm=wildcards.base)
    split = [f"{DATA}/align/{PIVOT}-{lang}/train{wildcards.n}" for lang in align_langs()]
    return dict(model=lm_model(base), en=[f"{s}.{PIVOT}" for s in split],
                xx=[f"{s}.{lang}" for s, lang in zip(split, align_langs())], links=[f"{s}.align" for s in split])


def align_finetune_targets():
    """The aligned models of the run (rule all)."""
    return [f"{RESULTS}/models/{lm}" for lm in aligned_models()]


rule align_finetune:
    input:
        unpack(align_finetune_inputs),
        code=xling_code("scripts/align_finetune.py"),
    output:
        directory(f"{RESULTS}/models/aligned/{{n}}/{{base}}"),
    wildcard_constraints:
        n=r"\d+",
        base=r"bert/\d+-w\d+|hf/[A-Za-z0-9._-]+",
    params:
        base=lambda wildcards: lm_params(SimpleNamespace(lm=wildcards.base)),
        langs=align_langs(),
        settings={key: ALIGN_FT[key] for key in ALIGN_SETTINGS},
        seed=ALIGN_FT["seed"],
        # resume checkpoints live outside the output (a killed job resumes; a changed setting trains beside them)
        checkpoints=f"{RESULTS}/checkpoints/aligned/{{n}}/{{base}}",
    threads: ALIGN_FT["threads"]
    resources:
        gpu=0,
        device=ALIGN_FT["device"] or "auto",
        checkpoint_every=ALIGN_FT["checkpoint_every"],
    log:
        f"{LOGS}/align_finetune/{{n}}/{{base}}.log",
    benchmark:
        f"{BENCH}/align_finetune/{{n}}/{{base}}.tsv"
    conda:
        "../envs/torch.yaml"
    script:
        "../scripts/align_finetune.py"
