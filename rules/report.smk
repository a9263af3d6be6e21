# Result tables, findings and report: the per-job tables gathered into one tidy table each, the papers' claims
# judged on them, and the study's tables and figures in one self-contained HTML file (and `snakemake --report`).
# Which tables, their parts, who reads them and the figures drawn from them: xling.plan.tables.
GATHERED = table_registry.gathered(table_plan())  # {table: the per-job Parquet files gathered into it}
from xling.plan.figures import selection_config  # noqa: E402
from xling.plan.code import checkout_file  # noqa: E402
from xling.protocol import protocol_settings  # noqa: E402

# the checkout's files the report reads: what the "Protocol and deviations" section reads besides the run's config
# (xling.report.protocol), and the papers' published numbers unless report.paper_results names a file (an input
# then). Params by content (xling.plan.code.checkout_file): an edit re-renders only the report, and a clone or a
# move of the checkout, which changes their paths from a working directory outside it, reruns nothing
CHECKOUT_FILES = {
    "protocol_table": "resources/protocol.yaml",
    "protocol_schema": "schemas/config.schema.yaml",
    "protocol_study": "config.yaml",
}
if not config["report"]["paper_results"]:
    CHECKOUT_FILES["paper_results"] = "resources/paper_results.yaml"


localrules:
    findings,
    report,


rule gather_table:
    input:
        tables=lambda wildcards: GATHERED[wildcards.table],
        # the parts' per-item tables, from which each row gets its bootstrap interval (xling.evaluate.intervals)
        per_item=lambda wildcards: table_registry.items(wildcards.table, table_plan()),
    output:
        parquet=f"{RESULTS}/eval/{{table}}.parquet",
        # every gathered table in `snakemake --report` too, beside the figures
        csv=report(
            f"{RESULTS}/eval/{{table}}.csv",
            caption="../reports/table.rst",
            category="Tables",
            labels={"table": "{table}"},
        ),
    log:
        f"{LOGS}/{{table}}_table.log",
    benchmark:
        f"{BENCH}/{{table}}_table.tsv"
    wildcard_constraints:
        table="|".join(GATHERED),
    conda:
        "../envs/torch.yaml"  # the intervals' flags (xling.evaluate.chance) import the evaluation modules
    params:
        code=code_version("scripts/gather_table.py"),
        # a boolean column per experiment, True on the rows read from its parts (word retrieval: the window
        # sweep's rows, some of them grid rows too)
        marks=lambda wildcards: table_registry.marks(wildcards.table, table_plan()),
        item_scale=lambda wildcards: table_registry.TABLES[wildcards.table].item_scale,
        # how the intervals are drawn: reruns only the gathers of tables with per-item scores
        bootstrap=lambda wildcards: config["bootstrap"] if table_registry.TABLES[wildcards.table].item_scale else None,
    script:
        "../scripts/gather_table.py"


rule findings:
    input:
        **table_inputs("findings"),  # the per-query scores of word and contextual retrieval too
    output:
        parquet=f"{RESULTS}/eval/findings.parquet",
        csv=report(
            f"{RESULTS}/eval/findings.csv",
            caption="../reports/findings.rst",
            category="Findings",
            labels={"table": "findings"},
        ),
    log:
        f"{LOGS}/findings.log",
    benchmark:
        f"{BENCH}/findings.tsv"
    conda:
        "../envs/torch.yaml"  # the chance levels and intervals (xling.evaluate.chance: the retrieval metrics, seqeval)
    params:
        code=code_version("scripts/findings.py"),
        pivot=PIVOT,
        settings=config["findings"],  # how claims are judged: reruns the findings and the report only
        bootstrap=config["bootstrap"],
        shown=selection_config(config),  # the word-retrieval selection the report shows (its BERT layer)
        aligned_langs=config["alignment"]["finetune"]["languages"],  # Cao et al.'s claims: the aligned languages
        xnli_mds_freeze=PLAN.mds_freeze(),  # Liu et al.'s XNLI with MDS: the planned depth (six of 12 layers frozen)
    script:
        "../scripts/findings.py"


rule report:
    input:
        **({"paper_results": config["report"]["paper_results"]} if config["report"]["paper_results"] else {}),
        **table_inputs("report"),
    output:
        **{
            figure["name"]: report(
                f"{RESULTS}/figures/{figure['name']}.png",
                caption=f"../reports/{figure['caption']}",
                category=figure["category"],
                labels=figure["labels"],
            )
            for figure in table_registry.expected_figures(config, table_inputs("report"))
        },
        html=report(
            f"{RESULTS}/report.html",
            caption="../reports/report.rst",
            category="Report",
        ),
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/report.yaml"
    params:
        code=code_version("scripts/report.py"),
        # the only rule with the presentation settings (report.*, retrieval.report_layer): they re-render it
        # and the run's settings (runtime ones left out) for the protocol section
        config={**report_config(), "protocol": {"run": without_runtime(protocol_settings(config))}},
        checkout_files={name: checkout_file(workflow.basedir, path) for name, path in CHECKOUT_FILES.items()},
        benchmarks=BENCH,  # the run's cost on the first screen (xling.report.metadata), read when rendering
    script:
        "../scripts/report.py"
