"""Code versions by content (xling.plan.code) and the switch that accepts code changes (xling.plan.accept_code).

Small checkouts and a three-rule workflow in a temporary folder: seconds, no study run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xling.plan import accept_code
from xling.plan.code import PREFIX, CodeVersions, checkout_file, code_version, planned_checkout_file, syntax_hash

REPO = Path(__file__).resolve().parents[1]

MODULES = {
    "xling/__init__.py": '"""The package."""\n',
    "xling/helpers.py": '"""Helpers."""\n\n\ndef double(x):\n    """Twice x."""\n    return 2 * x\n',
    "xling/other.py": "def triple(x):\n    return 3 * x\n",
    "scripts/uses_helpers.py": "from xling.helpers import double\n\nprint(double(2))\n",
    "scripts/uses_other.py": "from xling import other\n\nprint(other.triple(2))\n",
}


@pytest.fixture
def checkout(tmp_path) -> Path:
    for name, text in MODULES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def versions(root: Path) -> dict[str, str]:
    """Each script's version, computed afresh."""
    return {script: code_version(script, root) for script in ("scripts/uses_helpers.py", "scripts/uses_other.py")}


def test_a_version_is_a_marked_sha256(checkout):
    version = versions(checkout)["scripts/uses_helpers.py"]
    assert version.startswith(PREFIX) and len(version) == len(PREFIX) + 64


def test_a_moved_checkout_keeps_its_versions(checkout, tmp_path_factory):
    moved = tmp_path_factory.mktemp("elsewhere") / "checkout"
    shutil.copytree(checkout, moved)
    assert versions(moved) == versions(checkout)


def test_a_checkout_file_is_its_path_and_content_wherever_the_checkout_lies(tmp_path):
    """The report's files of the checkout: the same param in a moved copy, another after an edit; the job reads the
    planned content or stops naming the file."""
    first, second = tmp_path / "a" / "checkout", tmp_path / "b" / "c" / "checkout"
    for root in (first, second):
        (root / "resources").mkdir(parents=True)
        (root / "resources" / "table.yaml").write_text("a: 1\n", encoding="utf-8")
    planned = checkout_file(first, "resources/table.yaml")
    assert planned == {"path": "resources/table.yaml", "sha256": hashlib.sha256(b"a: 1\n").hexdigest()}
    assert checkout_file(second, "resources/table.yaml") == planned
    assert planned_checkout_file(planned, second) == second / "resources" / "table.yaml"
    (second / "resources" / "table.yaml").write_text("a: 2\n", encoding="utf-8")
    assert checkout_file(second, "resources/table.yaml") != planned
    with pytest.raises(ValueError, match=r"b/c/checkout/resources/table\.yaml: sha256 .* is not the"):
        planned_checkout_file(planned, second)


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text + "# a comment\n",
        lambda text: text.replace('"""Twice x."""', '"""Two times x, a longer docstring."""'),
        lambda text: text.replace("return 2 * x", "return (2 *\n            x)  # reformatted"),
        lambda text: text.replace('"""Helpers."""\n', ""),
    ],
    ids=["comment", "docstring", "formatting", "module docstring removed"],
)
def test_an_edit_that_changes_no_code_changes_no_version(checkout, edit):
    before = versions(checkout)
    path = checkout / "xling/helpers.py"
    path.write_text(edit(path.read_text()))
    assert versions(checkout) == before


def test_a_body_edit_changes_the_version_of_its_importers_only(checkout):
    before = versions(checkout)
    path = checkout / "xling/helpers.py"
    path.write_text(path.read_text().replace("2 * x", "x + x"))
    after = versions(checkout)
    assert after["scripts/uses_helpers.py"] != before["scripts/uses_helpers.py"]
    assert after["scripts/uses_other.py"] == before["scripts/uses_other.py"]


def test_a_renamed_module_changes_the_version(checkout):
    """Modules are keyed by their path in the checkout: moving one is a code change (accept it with the switch)."""
    before = versions(checkout)
    (checkout / "xling/helpers.py").rename(checkout / "xling/helpers2.py")
    script = checkout / "scripts/uses_helpers.py"
    script.write_text(script.read_text().replace("xling.helpers", "xling.helpers2"))
    assert versions(checkout)["scripts/uses_helpers.py"] != before["scripts/uses_helpers.py"]


def test_one_parse_reads_each_file_once(checkout):
    """The versions of one instance (one parse) stay as they were read: a later edit needs a new parse."""
    versions_of_parse = CodeVersions(checkout)
    before = versions_of_parse("scripts/uses_helpers.py")
    path = checkout / "xling/helpers.py"
    path.write_text(path.read_text().replace("2 * x", "x + x"))
    assert versions_of_parse("scripts/uses_helpers.py") == before
    assert CodeVersions(checkout)("scripts/uses_helpers.py") != before


def test_the_parse_cache_gives_the_versions_of_a_fresh_parse(checkout, tmp_path, monkeypatch):
    """The cache (keyed by each file's text) changes no version: cold, warm, corrupted or unwritable, the
    versions are those of a parse without it; on this checkout's scripts too."""
    scripts = sorted(str(p.relative_to(REPO)) for p in (REPO / "scripts").glob("*.py"))
    monkeypatch.setenv("XLING_CODE_CACHE", "off")
    fresh, ours = versions(checkout), {s: code_version(s, REPO) for s in scripts}
    cache = tmp_path / "cache"
    monkeypatch.setenv("XLING_CODE_CACHE", str(cache))
    assert versions(checkout) == fresh and not CodeVersions(checkout)._parsed  # cold: parsed and stored
    entries = sorted(cache.glob("*/*.json"))
    assert len(entries) == len(MODULES)  # the two scripts and the three package files they import
    assert versions(checkout) == fresh  # warm
    for entry in entries:
        entry.write_text("{not json", "utf-8")
    assert versions(checkout) == fresh and json.loads(entries[0].read_text("utf-8"))["syntax"]  # rewritten
    assert {s: code_version(s, REPO) for s in scripts} == ours
    assert {s: code_version(s, REPO) for s in scripts} == ours  # from the cache
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XLING_CODE_CACHE", str(blocked / "cache"))  # a path under a file: nothing can be written
    assert versions(checkout) == fresh


def test_the_shell_command_is_part_of_the_version(checkout):
    assert code_version("xling/other.py", checkout, "python -m x") != code_version("xling/other.py", checkout, "")


def test_syntax_hash_ignores_nested_docstrings(tmp_path):
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text('class A:\n    """A."""\n\n    def f(self):\n        """F."""\n        return 1\n')
    two.write_text("class A:\n    def f(self):\n        return 1\n")
    assert syntax_hash(one) == syntax_hash(two)


# --- the switch: accept code changes without rerunning ------------------------------------------------------

TOY = """
rule all:
    input: "b.txt"
rule a:
    output: "a.txt"
    params: code=config["code"], n=config["n"]
    shell: "echo {params.n} > {output}"
rule b:
    input: "a.txt"
    output: "b.txt"
    shell: "cat {input} > {output}"
"""


def toy_config(folder: Path, digit: str, n: int) -> str:
    path = folder / f"config-{digit}-{n}.yaml"
    path.write_text(f"code: {PREFIX}{digit * 64}\nn: {n}\n")
    return str(path)


def toy_plan(folder: Path, config: str) -> str:
    dry = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--configfile", config], cwd=folder, capture_output=True, text=True
    )
    assert dry.returncode == 0, dry.stderr
    return dry.stdout + dry.stderr


@pytest.fixture
def toy(tmp_path, monkeypatch) -> Path:
    """A finished run of a rule `a` with a code version and a setting `n`, and `b` downstream of it."""
    (tmp_path / "Snakefile").write_text(TOY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", toy_config(tmp_path, "0", 1)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path


@pytest.mark.slow
def test_the_switch_marks_code_only_changes_current(toy):
    changed = toy_config(toy, "1", 1)
    assert "Params have changed" in toy_plan(toy, changed)
    outputs = {name: (toy / name).read_text() for name in ("a.txt", "b.txt")}
    assert accept_code.main(["--configfile", changed]) == 0
    assert "Nothing to be done" in toy_plan(toy, changed), "the next ordinary run plans nothing"
    assert {name: (toy / name).read_text() for name in outputs} == outputs, "nothing was rerun"


@pytest.mark.slow
def test_the_switch_refuses_a_settings_change_and_touches_nothing(toy, capsys):
    changed = toy_config(toy, "1", 2)
    assert accept_code.main(["--configfile", changed]) == 1
    assert "a: Params have changed" in capsys.readouterr().err
    assert "Params have changed" in toy_plan(toy, toy_config(toy, "1", 1)), "the code change is still pending"


def test_the_switch_refuses_a_missing_output(toy):
    (toy / "b.txt").unlink()
    assert accept_code.main(["--configfile", toy_config(toy, "1", 1)]) == 1


@pytest.mark.slow
def test_the_switch_needs_the_reasons_of_the_dry_run(toy):
    assert accept_code.main(["--configfile", toy_config(toy, "1", 1), "--quiet"]) == 2
    assert "Params have changed" in toy_plan(toy, toy_config(toy, "1", 1)), "nothing was touched"


def test_the_switch_with_nothing_planned_does_nothing(toy, capsys):
    assert accept_code.main(["--configfile", toy_config(toy, "0", 1)]) == 0
    assert "Nothing planned" in capsys.readouterr().out


def test_reasons_are_read_per_job():
    dry = (
        "rule a:\n    output: a.txt\n    reason: Missing output files: a.txt\n"
        "localrule all:\n    input: a.txt\n    reason: Input files updated by another job: a.txt\n"
    )
    jobs = accept_code.planned_jobs(dry)
    assert jobs == [("a", "Missing output files: a.txt"), ("all", "Input files updated by another job: a.txt")]
    assert [accept_code.other_changes(reason) for _, reason in jobs] == [["Missing output files: a.txt"], []]
