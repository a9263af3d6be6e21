"""Each rule's conda env (envs/*.yaml) holds every third-party package its code imports, at versions
pyproject.toml allows, so `--sdm conda` runs; and each rule declares the xling code its entry point runs.

The rules are read from the workflow's source (every .smk, whatever the config includes), the imports
with xling.imports (the script or `python -m` module, through every xling module it reaches), and
import names become distributions through the installed packages' metadata (`yaml` -> PyYAML).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from xling.imports import analyse

REPO = Path(__file__).resolve().parents[1]
# Downloads are checked against their sha256: a downloader edit need not fetch them again.
NO_CODE_PARAM = {"fetch"}


@dataclass(frozen=True)
class Rule:
    name: str
    where: str  # file:line of the rule, for messages
    env: Path | None
    entry: Path | None  # the script, or the module file of `python -m`
    code_entry: str | None  # the argument of its code=code_version(...)


def workflow_rules(root: Path = REPO) -> list[Rule]:
    """Every rule in the Snakefile and rules/*.smk, with what its source declares."""
    rules = []
    for smk in [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]:
        text = smk.read_text()
        heads = list(re.finditer(r"^[ \t]*rule\b[ \t]*(\w*)[ \t]*:", text, re.M))
        for head, after in zip(heads, [*heads[1:], None], strict=False):
            block = text[head.start() : after.start() if after else len(text)]
            name = head[1] or re.search(r"^\s*name:\s*\n\s*(.+)", block, re.M)[1]
            env = _value(block, "conda")
            script = _value(block, "script")
            command = re.search(r"^\s*shell:\s*\n\s*([A-Z_]+)\s*$", block, re.M)  # a shell command held in a name
            if command:
                block += re.search(rf"^{command[1]} = \"\"\"(.*?)\"\"\"", text, re.M | re.S)[1]
            module = re.search(r"\s-m\s+(xling(?:\.\w+)+)", block)
            entry = (smk.parent / script).resolve() if script else None
            if module:
                entry = root.joinpath(*module[1].split(".")).with_suffix(".py")
            code = re.search(r"\bcode=code_version\(\s*\"([^\"]+)\"", block)
            rules.append(
                Rule(
                    name,
                    f"{smk.name}:{text.count(chr(10), 0, head.start()) + 1}",
                    (smk.parent / env).resolve() if env else None,
                    entry,
                    code and code[1],
                )
            )
    return rules


def _value(block: str, key: str) -> str | None:
    found = re.search(rf"^\s*{key}:\s*\n\s*\"([^\"]+)\"", block, re.M)
    return found and found[1]


def project_requirements(root: Path = REPO) -> tuple[dict[str, Requirement], SpecifierSet]:
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    reqs = (Requirement(line) for line in project["dependencies"])
    return {canonicalize_name(r.name): r for r in reqs}, SpecifierSet(project["requires-python"])


def env_requirements(env: Path) -> tuple[dict[str, Requirement], list[str]]:
    """(the env's pip packages by canonical name, its conda packages as written)."""
    deps = yaml.safe_load(env.read_text())["dependencies"]
    pip = [line for dep in deps if isinstance(dep, dict) for line in dep.get("pip", [])]
    return {canonicalize_name(r.name): r for r in map(Requirement, pip)}, [d for d in deps if isinstance(d, str)]


@cache
def _import_names() -> dict[str, list[str]]:
    return packages_distributions()


def missing_packages(env: Path, entry: Path, root: Path = REPO) -> list[str]:
    """The third-party imports of `entry` whose distribution `env` does not install."""
    have = set(env_requirements(env)[0])
    problems = []
    for module in sorted(analyse(entry, root).third_party):
        dists = {canonicalize_name(d) for d in _import_names().get(module, [])}
        if not dists:
            problems.append(f"{module} (no installed distribution provides it; install the project first)")
        elif not dists & have:
            problems.append(f"{module} (pip: {' or '.join(sorted(dists))})")
    return problems


def version_problems(env: Path, root: Path = REPO) -> list[str]:
    """What in `env` disagrees with pyproject.toml: a package it does not list, a version range outside
    its range (an env's range holds all of pyproject's bounds, or pins a version inside them), a Python
    it does not support, or a Python package from conda (the envs install pyproject's PyPI names)."""
    project, python = project_requirements(root)
    pip, conda = env_requirements(env)
    problems = []
    for dep in conda:
        name, version = re.fullmatch(r"([\w.-]+)\s*[=<>!~]*\s*(\S*)", dep).groups()
        if name == "python" and version and Version(version) not in python:
            problems.append(f"{dep} is outside requires-python {python}")
        elif name not in ("python", "pip"):
            problems.append(f"{dep}: a conda package; list Python packages under pip: by their PyPI name")
    for name, req in pip.items():
        if name not in project:
            problems.append(f"{req}: not a dependency in pyproject.toml")
            continue
        allowed = project[name].specifier
        pins = [spec.version for spec in req.specifier if spec.operator in ("==", "===")]
        if pins and not all(allowed.contains(v, prereleases=True) for v in pins):
            problems.append(f"{req}: pins a version outside pyproject.toml's {project[name]}")
        elif not pins and not set(allowed) <= set(req.specifier):
            problems.append(f"{req}: allows versions outside pyproject.toml's {project[name]}")
    return problems


RULES = workflow_rules()
WITH_CODE = [rule for rule in RULES if rule.entry]


def test_rules_are_read_from_the_workflow():
    names = {rule.name for rule in RULES}
    assert {"synthetic_data", "fetch", "bert_pretrain", "word_retrieval", "report", "all"} <= names
    assert {rule.name for rule in RULES if rule.entry is None} <= {"all", "fetch_all", "fetch_checkpoints"}, (
        "a rule without code?"
    )
    pretrain = next(rule for rule in RULES if rule.name == "bert_pretrain")
    assert pretrain.entry == REPO / "xling/models/bert.py"


@pytest.mark.parametrize("rule", WITH_CODE, ids=lambda rule: rule.name)
def test_rule_env_has_every_package_its_code_imports(rule):
    assert rule.env, f"{rule.where} {rule.name}: no conda: env"
    assert rule.entry.is_file(), f"{rule.where} {rule.name}: {rule.entry} not found"
    missing = missing_packages(rule.env, rule.entry)
    assert not missing, f"{rule.env.relative_to(REPO)} lacks what {rule.name} imports: {', '.join(missing)}"


@pytest.mark.parametrize("env", sorted((REPO / "envs").glob("*.yaml")), ids=lambda env: env.name)
def test_env_agrees_with_pyproject(env):
    problems = version_problems(env)
    assert not problems, f"{env.relative_to(REPO)}: " + "; ".join(problems)


@pytest.mark.parametrize("rule", WITH_CODE, ids=lambda rule: rule.name)
def test_rule_declares_the_code_of_its_entry_point(rule):
    """code=code_version(entry) names the rule's own script or module: another would track the wrong code."""
    if rule.name in NO_CODE_PARAM:
        assert rule.code_entry is None, f"{rule.where} {rule.name}"
        return
    assert rule.code_entry, f"{rule.where} {rule.name}: no code=code_version(...) param"
    assert (REPO / rule.code_entry).resolve() == rule.entry, f"{rule.where} {rule.name}: {rule.code_entry}"


# --- the checks catch planted defects -----------------------------------------------------------


def planted_env(tmp_path: Path, source: str, drop: str = "", replace: tuple[str, str] = ("", "")) -> Path:
    text = (REPO / "envs" / source).read_text()
    lines = [line for line in text.splitlines() if not drop or line.strip() != f"- {drop}"]
    assert len(lines) < len(text.splitlines()) or not drop, f"{drop} not in {source}"
    path = tmp_path / source
    path.write_text("\n".join(lines).replace(*replace) + "\n")
    return path


def test_env_missing_an_imported_package_is_caught(tmp_path):
    """torch.yaml without scipy: word retrieval's metrics import scipy.special."""
    env = planted_env(tmp_path, "torch.yaml", drop="scipy>=1.11")
    assert missing_packages(env, REPO / "scripts/word_retrieval.py") == ["scipy (pip: scipy)"]
    assert missing_packages(REPO / "envs/torch.yaml", REPO / "scripts/word_retrieval.py") == []


def test_import_name_maps_to_its_distribution(tmp_path):
    """`import yaml` needs PyYAML and `import glove` bicleaner-ai-glove: the names differ."""
    assert missing_packages(planted_env(tmp_path, "torch.yaml", drop="pyyaml>=6"), REPO / "xling/models/bert.py") == [
        "yaml (pip: pyyaml)"
    ]
    static = planted_env(tmp_path, "static.yaml", drop="bicleaner-ai-glove>=0.2")
    assert missing_packages(static, REPO / "scripts/train_static.py") == ["glove (pip: bicleaner-ai-glove)"]


@pytest.mark.parametrize("replace, problem", [
    (("pandas>=2.1", "pandas>=1.5"), "pandas>=1.5: allows versions outside pyproject.toml's pandas>=2.1"),
    (("pandas>=2.1", "pandas"), "pandas: allows versions outside"),
    (("torch==2.13.0", "torch==2.1.0"), "torch==2.1.0: pins a version outside pyproject.toml's torch>=2.4"),
    (("scipy>=1.11", "scikit-learn>=1.4"), "scikit-learn>=1.4: not a dependency in pyproject.toml"),
    (("python=3.11", "python=3.10"), "python=3.10 is outside requires-python >=3.11"),
    (("  - pip\n", "  - pip\n  - numpy>=1.26\n"), "numpy>=1.26: a conda package"),
])  # fmt: skip
def test_env_disagreeing_with_pyproject_is_caught(tmp_path, replace, problem):
    env = planted_env(tmp_path, "torch.yaml", replace=replace)
    assert env.read_text() != (REPO / "envs/torch.yaml").read_text()
    assert any(p.startswith(problem) for p in version_problems(env)), version_problems(env)
