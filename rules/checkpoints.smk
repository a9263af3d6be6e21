# Hugging Face checkpoints (language.hf_models): each hub id is downloaded once, at its pinned revision
# (language.hf_revisions), into the run's folder by a local rule, as `fetch` does the data: compute nodes often
# have no internet, and every job runs with HF_HUB_OFFLINE=1 (rules/common.smk) and loads the directory
# (xling.plan: hf_path). Local directories in hf_models are read where they lie. `snakemake fetch_checkpoints`
# stages them all ahead of a run. An entry of language.random_models is written by the run instead (random_checkpoint:
# a random BERT on the run's vocabulary, a stand-in where the pretrained checkpoint cannot be had), in the same place.


localrules:
    fetch_checkpoint,
    fetch_checkpoints,


rule fetch_checkpoints:
    input:
        [PLAN.hf_path(name) for name in PLAN.hf_hub_models().values()],


rule fetch_checkpoint:
    output:
        directory(f"{RESULTS}/models/hf/{{slug}}"),
    log:
        f"{LOGS}/fetch_checkpoint/{{slug}}.log",
    wildcard_constraints:
        slug="|".join(re.escape(slug) for slug in PLAN.hf_hub_models()) or "(?!)",
    conda:
        "../envs/torch.yaml"  # huggingface_hub comes with transformers
    params:
        code=code_version("scripts/fetch_checkpoint.py"),
        name=lambda wc: HF_MODELS[wc.slug],
        # another revision stages the checkpoint again (and reruns what reads it)
        revision=lambda wc: config["language"]["hf_revisions"].get(HF_MODELS[wc.slug]),
    message:
        "fetch_checkpoint {params.name}@{params.revision} -> {output}"
    script:
        "../scripts/fetch_checkpoint.py"


rule random_checkpoint:
    input:
        vocab=PLAN.vocab_source(),
    output:
        directory(f"{RESULTS}/models/hf/{{slug}}"),
    log:
        f"{LOGS}/random_checkpoint/{{slug}}.log",
    benchmark:
        f"{BENCH}/random_checkpoint/{{slug}}.tsv"
    wildcard_constraints:
        slug="|".join(re.escape(slug) for slug in PLAN.random_checkpoints()) or "(?!)",
    conda:
        "../envs/torch.yaml"
    params:
        code=code_version("scripts/random_checkpoint.py"),
        settings=lambda wc: config["language"]["random_models"][HF_MODELS[wc.slug]],
    script:
        "../scripts/random_checkpoint.py"
