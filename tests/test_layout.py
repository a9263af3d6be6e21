"""docs/architecture.md's tree describes the package as it is: every xling module, nested packages' included, is
named under its subpackage, and every subpackage it names exists."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE = REPO / "docs" / "architecture.md"


def architecture_listing() -> dict[str, set[str]]:
    """{subpackage ('' for top-level modules): words listed for it} from the tree block of docs/architecture.md."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    block = page.split("## The tree in layers", 1)[1].split("```", 2)[1]
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


def package_modules(package: Path) -> set[str]:
    """The module and subpackage names under a package, nested packages' modules included."""
    names = set()
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        names.update(part for part in parts if part != "__init__")
    return names


def test_architecture_names_every_module():
    listing = architecture_listing()
    package = REPO / "xling"
    actual = {p.name: package_modules(p) for p in package.iterdir() if (p / "__init__.py").exists()}
    actual[""] = {m.stem for m in package.glob("*.py") if m.stem != "__init__"}
    assert set(listing) == set(actual), "subpackages in docs/architecture.md vs xling/"
    for name, modules in actual.items():
        missing = modules - listing[name]
        assert not missing, f"xling/{name}: modules not in docs/architecture.md's tree: {sorted(missing)}"


def test_listing_reads_nested_packages():
    """The check covers nested packages: a module of xling/evaluate/findings/ must be named under evaluate/."""
    assert {"findings", "liu_what", "cao"} <= package_modules(REPO / "xling" / "evaluate")
    assert {"findings", "liu_what", "cao"} <= architecture_listing()["evaluate"]
