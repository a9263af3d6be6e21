"""Every config key the docs name exists in schemas/config.schema.yaml, and every default they state is the full
study's value (config.yaml, the schema's defaults filled in as the workflow fills them), so a renamed key or a
changed default cannot leave the docs describing a setting that is not there.

The rule for what the docs name (README.md and docs/**/*.md, outside fenced blocks):
- **A key** is a backticked dotted name, `a.b.c` or `a.b.c: value`, whose first part is a top-level key of the
  schema, except a file (`report.html`: its last part is a file suffix) and a module of the package
  (`represent.rotation`: xling/represent/rotation.py). `<x>`, `{x}` and `*` stand for any one key (a map's entry
  or a task). It must resolve in the schema.
- **A stated default** is one of:
  - `` `a.b` (default V) `` or `` `a.b`, default V ``: "default" within the clause that follows the key;
  - a row of a table whose header has the columns "config key" and "default": the i-th key of the key cell (a
    bare name after a dotted one is its sibling: `` `x.y.bucc_score`, `bucc_k` ``) gets the i-th value of the
    default cell, the cells split at top-level ", " and "; ", where both hold as many.
  V is checked when it is a value: a backticked word, a number, `true`/`false`/`null`, a list `[0, 6]` or
  numbers apart by spaces (`-1 0 1 2 3`); words after it in parentheses or after " = " are its explanation. A
  description in words ("the pivot's UD treebank") is not a value and is not checked, nor is a key with a
  wildcard. `` `a.b: V` `` names a value to set (often a preset's), not a default.
- `ablation.bert.*` and `monolingual.bert.*` name keys of the `bert` block (ALIASES).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "schemas" / "config.schema.yaml"
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
BACKTICKED = re.compile(r"`([^`\n]+)`")
KEY = re.compile(r"^([A-Za-z_]\w*(?:\.(?:[\w-]+|<[^>]+>|\{[^}]+\}|\*))+)(?::\s*(.*))?$")
FILE_SUFFIXES = {
    "md",
    "html",
    "yaml",
    "yml",
    "py",
    "parquet",
    "csv",
    "tsv",
    "png",
    "json",
    "txt",
    "smk",
    "npy",
    "bin",
    "rst",
    "gz",
    "zip",
    "toml",
    "cfg",
    "sh",
}
WILDCARD = re.compile(r"^(<[^>]+>|\{[^}]+\}|\*)$")
# "default" in the clause after a key: `a.b` (default V) / `a.b`, default V / `a.b`, its default V
INLINE_DEFAULT = re.compile(r"^[^.;:`|]{0,30}?\bdefaults?\b\s*(?:is\s+|to\s+|=\s*)?(`[^`]+`|\[[^\]]*\]|[^,;)]+)")
NUMBER = re.compile(r"^[−-]?\d[\d,]*(?:\.\d+)?(?:e[−-]?\d+)?$", re.I)


@dataclass(frozen=True)
class Mention:
    page: str
    line: int
    key: str
    default: str | None  # the stated default, as written (None: the docs state none)


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _is_module(parts: list[str]) -> bool:
    base = REPO / "xling" / Path(*parts)
    return base.with_suffix(".py").exists() or base.is_dir()


def _key_of(text: str, top: set[str]) -> tuple[str, str | None] | None:
    """(key, value set in the backticks) when the backticked `text` names a config key, else None."""
    match = KEY.match(text.strip())
    if not match:
        return None
    key = match.group(1)
    parts = key.split(".")
    if parts[0] not in top or parts[-1].lower() in FILE_SUFFIXES or _is_module(parts):
        return None
    return key, match.group(2)


def _split_top(cell: str) -> list[str]:
    """A table cell split at ", " and "; " outside parentheses and backticks."""
    out, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(cell):
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth -= 1
        elif not quoted and depth == 0 and ch in ",;" and cell[i + 1 : i + 2] == " ":
            out.append(cell[start:i].strip())
            start = i + 1
    out.append(cell[start:].strip())
    return [part for part in out if part]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def mentions(text: str, page: str, top: set[str]) -> list[Mention]:
    """Every config key `text` names, with the default it states (the rule of the module's docstring)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # keep line numbers
    found: list[Mention] = []
    header: list[str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("|"):
            cells = _cells(line)
            if header is None:
                header = [cell.lower() for cell in cells]
                continue
            if set(cells) <= {"", "---"} or all(re.fullmatch(r":?-+:?", cell) for cell in cells):
                continue
            if "config key" in header and "default" in header and len(cells) == len(header):
                key_cell, default_cell = cells[header.index("config key")], cells[header.index("default")]
                keys, parent = [], None
                for name in BACKTICKED.findall(key_cell):
                    named = _key_of(name, top)
                    if named:
                        keys.append(named[0])
                        parent = named[0].rsplit(".", 1)[0]
                    elif parent and re.fullmatch(r"\w+", name):
                        keys.append(f"{parent}.{name}")
                values = _split_top(default_cell)
                pair = len(values) == len(keys)
                found += [Mention(page, number, key, values[i] if pair else None) for i, key in enumerate(keys)]
                rest = line.replace(key_cell, "")  # keys elsewhere in the row: existence only
                found += [
                    Mention(page, number, named[0], None)
                    for named in (_key_of(name, top) for name in BACKTICKED.findall(rest))
                    if named
                ]
                continue
        else:
            header = None
        for match in BACKTICKED.finditer(line):
            named = _key_of(match.group(1), top)
            if not named:
                continue
            key, value = named
            stated = None
            if value is None:
                after = INLINE_DEFAULT.match(line[match.end() :])
                stated = after.group(1) if after else None
            found.append(Mention(page, number, key, stated))
    return found


#: blocks that hold keys of another block: the ablations' and monolingual BERTs' `bert` overrides (the trainer
#: rejects any key the `bert` block does not have)
ALIASES = {"ablation.bert": "bert", "monolingual.bert": "bert"}


def _dealias(key: str) -> str:
    for alias, target in ALIASES.items():
        if key.startswith(alias + "."):
            return target + key[len(alias) :]
    return key


def resolve(schema: dict, key: str) -> bool:
    """Whether `key` (dotted, with wildcards) names a key of the schema."""

    def children(node: dict) -> list[tuple[str | None, dict]]:
        if "$ref" in node:  # "#/definitions/name"
            target = schema
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        out = [(name, child) for name, child in node.get("properties", {}).items()]
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            out.append((None, extra))
        out += [(None, child) for child in node.get("patternProperties", {}).values()]
        for branch in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(branch, []):
                out += children(sub)
        if isinstance(node.get("items"), dict):
            out += children(node["items"])
        return out

    def walk(node: dict, parts: list[str]) -> bool:
        if not parts:
            return True
        head, rest = parts[0], parts[1:]
        wild = bool(WILDCARD.match(head))
        return any(
            walk(child, rest)
            for name, child in children(node)
            if wild or name == head or (name is None and re.fullmatch(r"[\w-]+", head))
        )

    return walk(schema, _dealias(key).split("."))


def effective_config(schema_path: Path = SCHEMA_PATH) -> dict:
    """config.yaml with the schema's defaults filled in, as the workflow validates it."""
    from snakemake.utils import validate

    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    validate(config, str(schema_path))
    return config


def lookup(config: dict, key: str):
    node = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def _scalar(word: str):
    word = word.replace("−", "-")
    if NUMBER.match(word):
        return float(word.replace(",", ""))
    return {"true": True, "false": False, "null": None}.get(word, UNCHECKED)


def stated_value(text: str):
    """The value a stated default names: a backticked word, a number, true/false/null (each followed by nothing,
    a parenthesis or "= its meaning"), a YAML list `[0, 6]` or numbers apart by spaces (`-1 0 1 2 3`, a list);
    UNCHECKED when it is a description in words."""
    text = text.strip()
    quoted = re.match(r"^`([^`]+)`", text)
    if quoted:
        try:
            value = yaml.safe_load(quoted.group(1))
        except yaml.YAMLError:
            return quoted.group(1)
        return quoted.group(1) if isinstance(value, dict) else value
    listed = re.match(r"^\[([^\]]*)\]", text)
    if listed:
        items = [_scalar(item.strip()) for item in listed.group(1).split(",") if item.strip()]
        return UNCHECKED if any(item is UNCHECKED for item in items) else items
    words = text.split(" (")[0].split(" = ")[0].split()
    if len(words) > 1 and all(NUMBER.match(word.replace("−", "-")) for word in words):
        return [_scalar(word) for word in words]
    return _scalar(words[0]) if len(words) == 1 else UNCHECKED


UNCHECKED = object()


def same(stated, actual) -> bool:
    if isinstance(stated, list) and isinstance(actual, list):
        return len(stated) == len(actual) and all(same(a, b) for a, b in zip(stated, actual, strict=True))
    if isinstance(stated, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return abs(stated - actual) <= 1e-12 * max(1.0, abs(actual))
    if isinstance(actual, list) and not isinstance(stated, list):
        return False
    return stated == actual or (isinstance(stated, str) and str(actual) == stated)


def problems(pages: list[tuple[str, str]], schema: dict, config: dict) -> list[str]:
    """What is wrong with the keys and defaults that `pages` ((name, text)) state."""
    top = set(schema["properties"])
    out = []
    for page, text in pages:
        for mention in mentions(text, page, top):
            where = f"{mention.page}:{mention.line}: `{mention.key}`"
            if not resolve(schema, mention.key):
                out.append(f"{where} is not a key of {SCHEMA_PATH.name}")
                continue
            if mention.default is None:
                continue
            stated = stated_value(mention.default)
            if stated is UNCHECKED or any(WILDCARD.match(part) for part in mention.key.split(".")):
                continue
            try:
                actual = lookup(config, mention.key)
            except KeyError:
                out.append(f"{where}: the docs state default {mention.default!r}; config.yaml and the schema set none")
                continue
            if not same(stated, actual):
                out.append(
                    f"{where}: the docs state default {mention.default!r}; config.yaml (with the schema's "
                    f"defaults) has {actual!r}"
                )
    return out


@pytest.fixture(scope="module")
def schema():
    return yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def config():
    return effective_config()


def _docs() -> list[tuple[str, str]]:
    return [(str(page.relative_to(REPO)), page.read_text(encoding="utf-8")) for page in _pages()]


def test_every_key_the_docs_name_exists_with_the_default_they_state(schema, config):
    found = problems(_docs(), schema, config)
    assert not found, "\n".join(found)


def test_the_docs_name_keys_and_state_defaults(schema):
    """The rule finds what it is meant to: many keys and a few dozen checked defaults, so a change of the docs'
    conventions that hid every key from it would fail here, not pass quietly."""
    top = set(schema["properties"])
    found = [m for page, text in _docs() for m in mentions(text, page, top)]
    checked = [m for m in found if m.default is not None and stated_value(m.default) is not UNCHECKED]
    assert len({m.key for m in found}) >= 100, len({m.key for m in found})
    assert len(checked) >= 20, [(m.key, m.default) for m in checked]


PLANTED = """# A page

| choice | config key | default | follows |
|---|---|---|---|
| similarity | `retrieval.metric` | `cosine` | ok |
| CSLS | `retrieval.csls_neighbourhood`, `retrieval.csls_k` | `all_words`, 10 | ok |
| BLEU | `language.sentence_retrieval.bucc_score`, `bucc_k` | `cosine`, 4 | ok |
| words | `retrieval.pos.splits` | the pivot's treebank, every split | a description: unchecked |

The margin (`findings.margins.mrr`, default 0.01) and `represent.rotation` (a module) and `report.html` (a file)
and `synthetic.languages.<code>` (a map's entry) and `transfer.{task}.epochs`. Set `bert.precision: fp32`.
"""


def test_rule_passes_a_true_page_and_fails_a_planted_wrong_key_and_default(schema, config):
    """The checker itself, on planted pages: a true page passes; a key the schema lacks, a wrong default in a
    table and a wrong default in prose each fail, naming the page, line and key."""
    assert problems([("page.md", PLANTED)], schema, config) == []
    wrong_key = PLANTED.replace("`retrieval.metric`", "`retrieval.metrics`")
    assert problems([("page.md", wrong_key)], schema, config) == [
        "page.md:5: `retrieval.metrics` is not a key of config.schema.yaml"
    ]
    wrong_table = PLANTED.replace("`all_words`, 10", "`all_words`, 20")
    assert problems([("page.md", wrong_table)], schema, config) == [
        "page.md:6: `retrieval.csls_k`: the docs state default '20'; config.yaml (with the schema's defaults) has 10"
    ]
    wrong_sibling = PLANTED.replace("`cosine`, 4", "`cosine`, 5")
    assert problems([("page.md", wrong_sibling)], schema, config) == [
        "page.md:7: `language.sentence_retrieval.bucc_k`: the docs state default '5'; config.yaml (with the "
        "schema's defaults) has 4"
    ]
    wrong_prose = PLANTED.replace("default 0.01", "default 0.05")
    assert problems([("page.md", wrong_prose)], schema, config) == [
        "page.md:10: `findings.margins.mrr`: the docs state default '0.05'; config.yaml (with the schema's "
        "defaults) has 0.01"
    ]
    wrong_entry = PLANTED.replace("`synthetic.languages.<code>`", "`synthetic.language.<code>`")
    assert len(problems([("page.md", wrong_entry)], schema, config)) == 1


def test_a_changed_default_in_the_schema_fails_the_docs(schema, tmp_path):
    """The other direction: the docs stay, the schema's default of a key config.yaml leaves to it moves."""
    moved = copy.deepcopy(schema)
    sentence = moved["properties"]["language"]["properties"]["sentence_retrieval"]
    assert "bucc_k" not in lookup(yaml.safe_load((REPO / "config.yaml").read_text()), "language.sentence_retrieval")
    sentence["properties"]["bucc_k"]["default"] = 5
    path = tmp_path / "schema.yaml"
    path.write_text(yaml.safe_dump(moved), encoding="utf-8")
    found = problems([("page.md", PLANTED)], moved, effective_config(path))
    assert found == [
        "page.md:7: `language.sentence_retrieval.bucc_k`: the docs state default '4'; config.yaml (with "
        "the schema's defaults) has 5"
    ]
