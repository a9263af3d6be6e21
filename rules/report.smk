# Report: the study's tables and figures in one self-contained HTML file (and `snakemake --report`).
from xling.report import expected_figures  # every registered study's figures, each with its caption
from xling.report.word_retrieval import selection_config


localrules:
    findings,
    report,


rule findings:
    input:
        **findings_tables(),
        # per-item scores for the intervals: word retrieval's ranks, contextual retrieval's queries
        word_retrieval_ranks=[re.sub(r"\.parquet$", ".ranks.parquet", path)
                              for path in rules.retrieval_table.input.tables],
        contextual_retrieval_queries=[f"{RESULTS}/eval/contextual_retrieval/{lm}.queries.parquet"
                                      for lm in contextual_retrieval_lms()]
        if "contextual_retrieval" in alignment_report_tables()
        else [],
    output:
        parquet=f"{RESULTS}/eval/findings.parquet",
        csv=f"{RESULTS}/eval/findings.csv",
    params:
        code=code_version("scripts/findings.py"),
        pivot=PIVOT,
        settings=config["findings"],  # how claims are judged: reruns the findings and the report only
        bootstrap=config["bootstrap"],
        shown=selection_config(config),  # the word-retrieval selection the report shows (its BERT layer)
    log:
        f"{LOGS}/findings.log",
    benchmark:
        f"{BENCH}/findings.tsv"
    conda:
        "../envs/data.yaml"  # the tables' env (xling.tables), as the rules that gather them
    script:
        "../scripts/findings.py"


rule report:
    input:
        retrieval=f"{RESULTS}/eval/word_retrieval.parquet",
        findings=f"{RESULTS}/eval/findings.parquet",
        **({"word_retrieval_pos": rules.word_retrieval_pos.output.parquet} if POS["splits"] else {}),
        bert_models=expand(model_dir("bert", "{size}", "{window}"), size=SIZES, window=WINDOWS)
        if "bert" in MODELS
        else [],
        # relative to the working directory: a checkout moved with its results changes no input
        paper_results=config["report"]["paper_results"]
        or os.path.relpath(os.path.join(workflow.basedir, "resources", "paper_results.yaml")),
        **language_report_tables(),
        **alignment_report_tables(),
        **ablation_report_tables(),
        **monolingual_report_tables(),
    output:
        html=report(
            f"{RESULTS}/report.html",
            caption="../reports/report.rst",
            category="Report",
        ),
        **{
            figure["name"]: report(
                f"{RESULTS}/figures/{figure['name']}.png",
                caption=f"../reports/{figure['caption']}",
                category=figure["category"],
                labels=figure["labels"],
            )
            for figure in expected_figures(
                config,
                ["word_retrieval", "findings", *language_report_tables(), *alignment_report_tables(),
                 *ablation_report_tables(), *monolingual_report_tables()]
                + (["word_retrieval_pos"] if POS["splits"] else [])
                + (["bert_training_logs"] if "bert" in MODELS else []),
            )
        },
    params:
        code=code_version("scripts/report.py"),
        # the only rule with the presentation settings (report.*, retrieval.report_layer): they re-render it
        config=report_config(),
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/report.yaml"
    script:
        "../scripts/report.py"
