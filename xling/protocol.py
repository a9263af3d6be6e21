"""The papers' protocol (`resources/protocol.yaml`) against a run's settings: whether the full study's settings
are exactly the values the table records as ours, each differing from a stated paper value only with a reason,
and every setting that changes a number has a row (`problems`, the protocol test), and what a run did differently
from each paper and why (`deviations`, the report's "Protocol and deviations" section).

A row's `ours_value` is the exact value of its config key, so a deviation from a paper is made only by editing
that row. Where the key names an object, the value is the object less the keys of `unspoken` (resources and
presentation, which no paper speaks to). Where code, not a key, fixes a scope (the languages a dev average runs
over), the row names it as `scope` and the caller reads its value from the plan (`problems(..., scopes=...)`).

A run's value of a config key is config.yaml (or the run's merged config) over the schema's defaults, as
Snakemake's `validate(config, schema, set_default=True)` fills them. Standard library and PyYAML only: the
workflow and the report import it (and xling.runtime, as light).
"""

from __future__ import annotations

import copy
import fnmatch
import re
from pathlib import Path
from typing import Any

import yaml

from xling.runtime import RUNTIME

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "resources" / "protocol.yaml"
SCHEMA = ROOT / "schemas" / "config.schema.yaml"
CONFIG = ROOT / "config.yaml"
NOT_STATED = "not stated"
TODO = "TODO(issue 23)"
COMPARISONS = ("equal", "set", "subset")
OURS = "ours_value"
_MISSING = object()


def load_yaml(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_protocol(path: str | Path = PROTOCOL) -> dict:
    return load_yaml(path)


def _resolve(node: dict, schema: dict) -> dict:
    """The node with its `$ref` (to `#/definitions/...`) merged in; the node's own keys win."""
    ref = node.get("$ref")
    if not ref:
        return node
    target = schema
    for part in ref.lstrip("#/").split("/"):
        target = target[part]
    return {**_resolve(target, schema), **{k: v for k, v in node.items() if k != "$ref"}}


def schema_defaults(schema: dict, node: dict | None = None) -> Any:
    """The value the schema gives an absent key: its `default`, with each property's default filled into an
    object default (as jsonschema's set_default validation does); _MISSING where it has none."""
    node = _resolve(schema if node is None else node, schema)
    value = copy.deepcopy(node.get("default", _MISSING))
    properties = node.get("properties")
    if properties and (value is _MISSING or isinstance(value, dict)):
        value = {} if value is _MISSING else value
        for key, child in properties.items():
            child_default = schema_defaults(schema, child)
            if key not in value and child_default is not _MISSING:
                value[key] = child_default
    return value


def merge(base: Any, override: Any) -> Any:
    """`override` over `base`, dictionaries merged key by key."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = merge(base.get(key, _MISSING), value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def settled(config: dict, schema: dict) -> dict:
    """The run's settings: `config` over the schema's defaults, at every depth (defaults of objects the config
    sets are filled in too)."""

    def fill(value: Any, node: dict) -> Any:
        node = _resolve(node, schema)
        if isinstance(value, dict) and node.get("properties"):
            value = dict(value)
            for key, child in node["properties"].items():
                if key in value:
                    value[key] = fill(value[key], child)
                else:
                    default = schema_defaults(schema, child)
                    if default is not _MISSING:
                        value[key] = fill(default, child)
        return value

    return fill(merge(schema_defaults(schema), config), schema)


def lookup(settings: dict, key: str) -> Any:
    """The value of a dotted key; KeyError naming the key where it is absent."""
    value: Any = settings
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(key)
        value = value[part]
    return value


def protocol_settings(config: dict, protocol: dict | None = None) -> dict:
    """The run's values of the plain config keys protocol.yaml names, nested as in the config: what the report's
    protocol section reads, so a setting the papers say nothing about or a data location re-renders nothing."""
    protocol = load_protocol() if protocol is None else protocol
    keys = {str(entry.get("config_key") or "") for entry in protocol["settings"]}
    out: dict = {}
    for key in sorted(k for k in keys if re.fullmatch(r"[a-z_0-9]+(\.[a-z_0-9]+)*", k)):
        try:
            value = value_at(config, key, protocol.get("unspoken"))
        except KeyError:
            continue
        *parents, leaf = key.split(".")
        target = out
        for part in parents:
            target = target.setdefault(part, {})
        if isinstance(target, dict):
            target[leaf] = value
    return out


def is_unspoken(key: str, unspoken: dict | None) -> bool:
    """Whether the dotted key, or an object above it, changes no number (xling.runtime.RUNTIME: threads,
    devices, inference batches, ...) or matches a pattern of the table's `unspoken` list (`*` is any text, dots
    included)."""
    parts = key.split(".")
    prefixes = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
    return any(prefix.rpartition(".")[2] in RUNTIME.get(prefix.rpartition(".")[0], ()) for prefix in prefixes) or any(
        fnmatch.fnmatchcase(prefix, pattern) for pattern in unspoken or {} for prefix in prefixes
    )


def without_unspoken(value: Any, key: str, unspoken: dict | None) -> Any:
    """An object's value less its keys (at any depth) that no paper speaks to."""
    if not isinstance(value, dict):
        return value
    return {
        k: without_unspoken(v, f"{key}.{k}", unspoken)
        for k, v in value.items()
        if not is_unspoken(f"{key}.{k}", unspoken)
    }


def value_at(settings: dict, key: str, unspoken: dict | None = None) -> Any:
    """The value a row records for its key: lookup(), an object less its unspoken keys."""
    return without_unspoken(lookup(settings, key), key, unspoken)


def leaves(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """The dotted keys of a settings tree's leaves (an empty object is a leaf) with their values."""
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in leaves(v, f"{prefix}.{k}" if prefix else k)]
    return [(prefix, value)]


def same(a: Any, b: Any) -> bool:
    """Exact equality of YAML values: lists element by element in order (no extra values), objects key by key,
    booleans only equal booleans (True is not 1), integers and floats by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def differing(value: Any, recorded: Any, key: str) -> list[tuple[str, Any, Any]]:
    """Where a value differs from the one recorded: (dotted key, value, recorded), down to the leaf that
    differs where both are objects."""
    if isinstance(value, dict) and isinstance(recorded, dict):
        return [
            d
            for k in sorted(set(value) | set(recorded), key=str)
            for d in differing(value.get(k, _MISSING), recorded.get(k, _MISSING), f"{key}.{k}")
        ]
    return [] if same(value, recorded) else [(key, value, recorded)]


def yaml_value(value: Any) -> str:
    """A value as one line of YAML, to paste into a row."""
    return (
        yaml.safe_dump(value, default_flow_style=True, width=10**6, allow_unicode=True)
        .strip()
        .removesuffix("\n...")
        .strip()
    )


def _shown(value: Any) -> str:
    return "(absent)" if value is _MISSING else repr(value)


def uncovered(protocol: dict, schema: dict, config: dict) -> list[str]:
    """Every leaf of the settings (config over the schema's defaults) that neither a row's config key (the key
    or an object above it) nor the `unspoken` list covers, each with the line to add."""
    keys = [str(entry.get("config_key")) for entry in protocol["settings"] if entry.get("config_key")]
    unspoken = protocol.get("unspoken")
    found = []
    for key, value in leaves(settled(config, schema)):
        if is_unspoken(key, unspoken) or any(key == k or key.startswith(k + ".") for k in keys):
            continue
        found.append(
            f"{key} (= {yaml_value(value)}) has no row: add one to resources/protocol.yaml's settings with "
            f"`config_key: {key}` and `{OURS}: {yaml_value(value)}` (paper_value: not stated where no paper "
            f"states it), or list it under `unspoken` with a one-line reason if it changes no number"
        )
    return found


def in_schema(schema: dict, key: str, *, open_objects: bool = False) -> bool:
    """Whether the schema declares the dotted key (through `$ref`s). With open_objects, a key under an object
    that declares no properties (ablation.bert: keys of the bert block) counts as declared."""
    node = schema
    for part in key.split("."):
        node = _resolve(node, schema)
        properties = node.get("properties")
        if (
            not properties
            and open_objects
            and node.get("type") == "object"
            and node.get("additionalProperties", True) is not False
        ):
            return True
        if part not in (properties or {}):
            return False
        node = properties[part]
    return True


def stated(entry: dict) -> bool:
    return entry.get("paper_value") != NOT_STATED


def expected(entry: dict) -> Any:
    """The paper's value in the config key's units."""
    return entry["as_config"] if "as_config" in entry else entry["paper_value"]


def matches(entry: dict, value: Any) -> bool:
    """Whether a config value is the paper's, by the entry's comparison (equal, set, subset)."""
    paper = expected(entry)
    how = entry.get("compare", "equal")
    if how == "equal":
        return value == paper
    if not isinstance(value, list) or not isinstance(paper, list):
        return False
    return set(paper) == set(value) if how == "set" else set(paper) <= set(value)


def problems(protocol: dict, schema: dict, config: dict, scopes: dict | None = None) -> list[str]:
    """Every way the table and the settings disagree: a malformed entry, a config key the schema lacks, a
    planned key that exists now, a setting (or a scope the code fixes, `scopes`: name -> the plan's value) that
    is not exactly the row's ours_value, a recorded value that differs from a stated paper value without a
    reason, a TODO reason whose value already is the paper's, and a setting no row covers (`uncovered`)."""
    found, seen = [], set()
    settings = settled(config, schema)
    unspoken = protocol.get("unspoken") or {}
    for pattern, why in unspoken.items():
        if not str(why or "").strip():
            found.append(f"unspoken {pattern}: give the one-line reason no paper speaks to it")
    for entry in protocol["settings"]:
        name = entry.get("id", "?")
        missing = [
            field
            for field in ("id", "paper", "experiment", "section", "setting", "paper_value", "config_key")
            if field not in entry
        ]
        if missing:
            found.append(f"{name}: missing {', '.join(missing)}")
            continue
        if name in seen:
            found.append(f"{name}: duplicate id")
        seen.add(name)
        if entry["paper"] not in protocol["papers"]:
            found.append(f"{name}: unknown paper {entry['paper']!r}")
        if entry.get("compare", "equal") not in COMPARISONS:
            found.append(f"{name}: compare must be one of {', '.join(COMPARISONS)}")
        for planned in filter(None, str(entry.get("planned_key") or "").split(", ")):
            if in_schema(schema, planned):
                found.append(f"{name}: planned key {planned} is in the schema now: name it as config_key")
        key, scope = entry["config_key"], entry.get("scope")
        if key is None and scope is None:
            if not entry.get("ours"):
                found.append(f"{name}: no config key, so `ours` must say what the code does")
            elif stated(entry) and not entry.get("same") and not entry.get("reason"):
                found.append(
                    f"{name}: the code's setting ({entry['ours']}) differs from the paper's "
                    f"({entry['paper_value']}) without a reason (or `same: true`)"
                )
            continue
        if key is not None:
            try:
                value, where = value_at(settings, key, unspoken), key
            except KeyError:
                found.append(f"{name}: config key {key} is not in the schema or config.yaml")
                continue
            if not in_schema(schema, key, open_objects=True):
                found.append(f"{name}: config key {key} is not declared in the schema")
        else:
            if scopes is None or scope not in scopes:
                continue  # the caller reads the scope from the plan (tests/test_protocol.py)
            value, where = scopes[scope], f"the plan's {scope}"
        if OURS not in entry:
            found.append(f"{name}: no {OURS}; add `{OURS}: {yaml_value(value)}` (the value of {where} now)")
            continue
        recorded = entry[OURS]
        for leaf, have, wanted in differing(value, recorded, where):
            found.append(
                f"{name}: {leaf} is {_shown(have)}, the row records {OURS} {_shown(wanted)}: a deviation "
                f"is made only by editing this row of resources/protocol.yaml (with its reason)"
            )
        if not stated(entry):
            continue
        agrees = matches(entry, recorded)
        if not agrees and not entry.get("reason"):
            found.append(
                f"{name}: {where} is {recorded!r}, the paper ({entry['paper']} {entry['section']}) "
                f"states {expected(entry)!r}, and no reason is recorded"
            )
        if agrees and str(entry.get("reason", "")).startswith(TODO):
            found.append(f"{name}: {where} is the paper's {recorded!r} now; remove the TODO reason")
    return found + uncovered(protocol, schema, config)


def deviations(
    config: dict, *, schema: dict | None = None, protocol: dict | None = None, defaults: dict | None = None
) -> list[dict]:
    """What a run (its config, before or after schema defaults) does differently from each paper: one row per
    setting that differs (with the recorded reason, or "set by this run" where the run changed a default that
    is the paper's) and per setting a paper does not state (with ours). `defaults` is the full study's config
    (config.yaml), against which "set by this run" is judged."""
    schema = load_yaml(SCHEMA) if schema is None else schema
    protocol = load_protocol() if protocol is None else protocol
    study = settled(load_yaml(CONFIG) if defaults is None else defaults, schema)
    settings = settled(config, schema)
    rows = []
    for entry in protocol["settings"]:
        key = entry["config_key"]
        value = value_at(settings, key, protocol.get("unspoken")) if key else None
        scoped = key is None and entry.get("scope") is not None  # the code's scope, as the test read it
        row = dict(
            paper=entry["paper"],
            experiment=entry["experiment"],
            section=entry["section"],
            setting=entry["setting"],
            paper_value=entry["paper_value"],
            config_key=key,
            ours=value if key else entry.get(OURS) if scoped else entry.get("ours"),
            note=entry.get("ours", "") if key else "",
            reason=entry.get("reason", ""),
        )
        if not stated(entry):
            rows.append({**row, "status": NOT_STATED})
        elif scoped:
            if not matches(entry, entry.get(OURS)):
                rows.append({**row, "status": "differs"})
        elif key is None:
            if not entry.get("same"):
                rows.append({**row, "status": "differs"})
        elif not matches(entry, value):
            if value != value_at(study, key, protocol.get("unspoken")) or not row["reason"]:
                row["reason"] = "set by this run" + (f" (the full study: {row['reason']})" if row["reason"] else "")
            rows.append({**row, "status": "differs"})
    return rows
