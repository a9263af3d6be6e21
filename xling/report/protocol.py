"""Report section "Protocol and deviations": per paper, what this run does differently from the paper's stated
protocol and why, and what the paper does not state (with our choice), from resources/protocol.yaml
(xling.protocol.deviations) and the run's settings.

The report rule passes the run's config (runtime settings left out) and the paths of the protocol table, the
schema and config.yaml (its inputs, so an edit of any of them re-renders only the report) under the report
params' `protocol` key. A row "set by this run" is a setting the run changed from the full study's default.
"""

from __future__ import annotations

import json
from typing import Any

from xling import protocol
from xling.report.blocks import Block, table_block, text
from xling.report.core import ReportContext, register_section

INTRO = (
    "Every setting that changes a number is recorded in resources/protocol.yaml with the paper's value (or \"not "
    "stated\"), the section that states it, the config key that holds ours and the full study's exact value; a test "
    "keeps the full study's settings (config.yaml with the schema's defaults) at the recorded values, each differing "
    "from a paper's only with a reason. Below, per paper: the settings in "
    'which this run differs from the paper ("set by this run": a default of the full study this run changed) and '
    "the settings the paper does not state, with the choice made here."
)


def _shown(value: Any) -> str:
    """A setting's value in one line: YAML-like lists and mappings, prose as it is."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _ours(row: dict) -> str:
    """Our value, with the config key that holds it (or the code's description where no key does)."""
    value = _shown(row["ours"])
    return f"{value} ({row['config_key']})" if row["config_key"] else value


def _setting(row: dict) -> str:
    return f"{row['setting']} ({row['experiment']}; {row['section']})"


def _paper_rows(rows: list[dict]) -> tuple[list[list[str]], list[list[str]]]:
    differs = [
        [_setting(row), _shown(row["paper_value"]), _ours(row), row["reason"] or ""]
        for row in rows
        if row["status"] == "differs"
    ]
    unstated = [[_setting(row), _ours(row)] for row in rows if row["status"] == protocol.NOT_STATED]
    return differs, unstated


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def protocol_blocks(rows: list[dict], papers: dict) -> list[Block]:
    """The section's blocks from deviations() rows: per paper a table of differences and one of unstated
    settings."""
    blocks = [text(INTRO)]
    for paper, info in papers.items():
        differs, unstated = _paper_rows([row for row in rows if row["paper"] == paper])
        blocks.append(
            text(
                f"{info['cite']}: {_count(len(differs), 'setting')} of this run differ from the paper's; "
                f"the paper does not state {_count(len(unstated), 'setting')}."
            )
        )
        if differs:
            blocks.append(
                table_block(
                    f"{paper}: where this run differs",
                    ["Setting (experiment; section)", "Paper", "Ours (config key)", "Why"],
                    differs,
                    wrap=range(4),
                )
            )
        if unstated:
            blocks.append(
                table_block(
                    f"{paper}: not stated by the paper",
                    ["Setting (experiment; section)", "Ours (config key)"],
                    unstated,
                    collapsed=True,
                    wrap=range(2),
                )
            )
    return blocks


@register_section("protocol", "Protocol and deviations")
def render_protocol(ctx: ReportContext) -> list[Block]:
    given = ctx.config.get("protocol")
    if not given:
        return [
            text(
                "The report was rendered without the run's protocol settings (report params `protocol`): "
                "no deviations are listed."
            )
        ]
    table = protocol.load_protocol(given["table"])
    rows = protocol.deviations(
        given["run"],
        schema=protocol.load_yaml(given["schema"]),
        protocol=table,
        defaults=protocol.load_yaml(given["study"]),
    )
    return protocol_blocks(rows, table["papers"])
