"""The plan of one run: every study's planning over one config dict and its DataSource, built once when the
workflow is parsed (rules/data.smk) and called by the rules."""

from __future__ import annotations

from types import SimpleNamespace

from xling.plan.ablation import AblationPlan
from xling.plan.alignment import AlignmentPlan
from xling.plan.data import DataSource
from xling.plan.grid import GridPlan
from xling.plan.language import LanguagePlan
from xling.plan.lms import ModelPlan
from xling.plan.monolingual import MonolingualPlan
from xling.plan.transfer import TransferPlan


class Plan(GridPlan, ModelPlan, LanguagePlan, TransferPlan, AlignmentPlan, AblationPlan, MonolingualPlan):
    """Which jobs a run plans and what each reads and is given; the config's defaults filled in by the schema
    (snakemake.utils.validate). A setting that cannot be planned raises ValueError here, at parse. The workflow
    builds it before it knows its source (rules/common.smk) and sets `source` where it does (rules/data.smk)."""

    def __init__(self, config: dict, source: DataSource, schema: dict, helpers: SimpleNamespace):
        self.init_grid(config, source, schema, helpers)
        self.check_transfer()
        self.init_alignment()
        self.init_monolingual()
