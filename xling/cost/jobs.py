"""The planned jobs of a run, read from Snakemake's own DAG, so the estimate counts exactly what `snakemake -n`
would run: each job's rule, wildcards, params, threads, resources, benchmark file and the jobs it waits for.

Snakemake's public API runs or prints a DAG but does not hand its jobs out; the two private calls it makes
before `--summary` (`_prepare_dag`, `_build_dag`) are the only ones used here, in `plan_jobs` alone, so a
Snakemake upgrade that renames them breaks one function, and tests/test_cost.py catches it on presets/test.yaml.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path

# Threads are capped by --cores when Snakemake plans; a high cap keeps the threads each rule asks for.
PLANNING_CORES = 1024


@dataclass(frozen=True)
class PlannedJob:
    """One job as planned: what the estimate and the check need, nothing of Snakemake's objects."""

    jobid: int
    rule: str
    wildcards: dict
    params: dict
    threads: int
    resources: dict
    benchmark: str | None
    depends_on: tuple[int, ...] = field(default=())


@dataclass(frozen=True)
class Plan:
    """The jobs and the config they were planned from, as the Snakefile validated it (schema defaults filled in)."""

    jobs: list[PlannedJob]
    config: dict


def plan_jobs(configfiles: list[Path], snakefile: Path = Path("Snakefile"), forceall: bool = True) -> Plan:
    """Every job `snakemake -n [--forceall] --configfile ...` plans, with the edges between them."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        Quietness,
        ResourceSettings,
        StorageSettings,
    )

    snakefile = Path(snakefile).resolve()
    here = Path.cwd()
    os.chdir(snakefile.parent)  # relative paths in the rules are relative to the workflow
    try:
        with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=PLANNING_CORES),
                config_settings=ConfigSettings(configfiles=[Path(here, p).resolve() for p in configfiles]),
                storage_settings=StorageSettings(),
                snakefile=snakefile,
            )
            workflow_api.dag(dag_settings=DAGSettings(forceall=forceall))
            workflow = workflow_api._workflow
            workflow._prepare_dag(forceall=forceall, ignore_incomplete=True, lock_warn_only=True)
            workflow._build_dag()
            dag = workflow.dag
            return Plan([_planned(job, dag) for job in dag.jobs], copy.deepcopy(dict(workflow.config)))
    finally:
        os.chdir(here)


def _planned(job, dag) -> PlannedJob:
    return PlannedJob(
        jobid=dag.jobid(job),
        rule=job.rule.name,
        wildcards=dict(job.wildcards_dict),
        params={key: value for key, value in job.params.items()},
        threads=int(job.threads),
        resources={key: value for key, value in job.resources.items() if not key.startswith("_")},
        benchmark=str(job.benchmark) if job.benchmark else None,
        depends_on=tuple(sorted(dag.jobid(dep) for dep in dag.dependencies[job])),
    )
