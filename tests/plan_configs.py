"""Plans of small configs for the plan's unit tests: config.yaml with overrides, defaults filled in by the schema
as the workflow does (snakemake.utils.validate), over a synthetic or a given DataSource."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import yaml
from snakemake.utils import validate

from xling.plan.data import SyntheticData
from xling.plan.study import Plan
from xling.runtime import computed

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
BASE = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
HELPERS = SimpleNamespace(computed=computed)


def merged(base: dict, overrides: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def make_config(**overrides) -> dict:
    """config.yaml with `overrides` merged in (nested dicts key by key), validated and defaults filled in."""
    config = merged(BASE, overrides)
    validate(config, str(REPO / "schemas" / "config.schema.yaml"))
    return config


def make_plan(source=None, **overrides) -> Plan:
    """The plan of a small run (languages en, de, fr; sizes 100, 200; windows 5, 10; every language aligned, no
    Table 5 model: config.yaml's need its real languages) with `overrides`."""
    small = dict(
        run="t",
        languages=["en", "de", "fr"],
        models=["bert", "glove"],
        windows=[5, 10],
        corpus={"sizes": [100, 200]},
        language={"hf_models": []},
        alignment={"finetune": {"languages": None, "runs": []}},
    )
    return Plan(make_config(**merged(small, overrides)), source or SyntheticData(), SCHEMA, HELPERS)


def preset_plan(preset: str, **overrides) -> Plan:
    """The plan of presets/{preset}.yaml (a synthetic-data preset) with `overrides`."""
    config = yaml.safe_load((REPO / "presets" / f"{preset}.yaml").read_text(encoding="utf-8"))
    config = make_config(**merged(config, overrides))
    return Plan(config, SyntheticData.from_config(config), SCHEMA, HELPERS)


def wildcards(**values) -> SimpleNamespace:
    return SimpleNamespace(**values)


def language_berts(plan: Plan) -> list[str]:
    """The plan's BERTs of the language experiments (language.sizes x language.windows), not its checkpoints."""
    return [lm for lm in plan.language_models() if lm.startswith("bert/")]
