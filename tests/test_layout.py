"""README's architecture section describes the package as it is: every xling module is named under its
subpackage, and every subpackage it names exists."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def architecture_listing() -> dict[str, set[str]]:
    """{subpackage ('' for top-level modules): words listed for it} from README's architecture block."""
    readme = REPO.joinpath("README.md").read_text(encoding="utf-8")
    block = readme.split("## Architecture", 1)[1].split("```", 2)[1]
    lines = block.split("xling/", 1)[1].splitlines()[1:]
    listing: dict[str, set[str]] = {}
    current = None
    for line in lines:
        if line and not line.startswith(" "):  # the next top-level entry (envs/, ...)
            break
        head = re.match(r"^  (\w+)/\s", line)
        if head:
            current = head[1]
        elif re.match(r"^  \w", line):  # top-level modules: "  io, logs, tables   ..."
            current = ""
            listing.setdefault(current, set()).update(re.findall(r"\w+", line.split("   ")[0].strip()))
            continue
        if current:
            listing.setdefault(current, set()).update(re.findall(r"\w+", line))
    return listing


def test_readme_architecture_names_every_module():
    listing = architecture_listing()
    package = REPO / "xling"
    actual = {p.name: {m.stem for m in p.glob("*.py") if m.stem != "__init__"}
              for p in package.iterdir() if (p / "__init__.py").exists()}
    actual[""] = {m.stem for m in package.glob("*.py") if m.stem != "__init__"}
    assert set(listing) == set(actual), "subpackages in README vs xling/"
    for name, modules in actual.items():
        missing = modules - listing[name]
        assert not missing, f"xling/{name}: modules not in README's architecture section: {sorted(missing)}"
