# Report: the study's tables and figures in one self-contained HTML file (and `snakemake --report`).


localrules:
    report,


rule report:
    input:
        retrieval=f"{RESULTS}/eval/word_retrieval.parquet",
        bert_models=expand(model_dir("bert", "{size}", "{window}"), size=SIZES, window=WINDOWS)
        if "bert" in MODELS
        else [],
        paper_results=f"{workflow.basedir}/resources/paper_results.yaml",
        **language_report_tables(),
        code=xling_code("scripts/report.py"),
    output:
        html=report(
            f"{RESULTS}/report.html",
            caption="../reports/report.rst",
            category="Report",
        ),
        figures=report(
            directory(f"{RESULTS}/figures"),
            patterns=["{name}.png"],
            caption="../reports/figures.rst",
            category="Word retrieval",
        ),
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/report.yaml"
    script:
        "../scripts/report.py"
