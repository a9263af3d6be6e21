"""The README stays short, and every relative link of README.md and docs/ resolves to a file (and to a heading,
where it names an anchor), so moving a page or renaming a section cannot leave a dead link behind."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
README_MAX_LINES = 250

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The text outside fenced blocks and inline code, where a bracket is not a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page's headings make, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    result = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def relative_links(page: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(prose(page.read_text(encoding="utf-8")))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)
    ]  # http:, https:, mailto: are not checked here


def dead_links(page: Path) -> list[str]:
    dead = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            dead.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            dead.append(f"{target}: no heading with anchor #{anchor}")
    return dead


def test_readme_fits_a_few_screens():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_links_resolve(page):
    assert not dead_links(page), f"{page.relative_to(REPO)}: {dead_links(page)}"


def test_every_docs_page_is_linked():
    """A page no other page links to is lost to a reader who starts at the README."""
    linked = {
        (page.parent / target.partition("#")[0]).resolve()
        for page in PAGES
        for target in relative_links(page)
        if target.partition("#")[0]
    }
    orphans = [str(page.relative_to(REPO)) for page in PAGES[1:] if page.resolve() not in linked]
    assert not orphans, f"docs pages no page links to: {orphans}"


def test_checker_finds_dead_links(tmp_path):
    """The checker itself: a missing file, a missing anchor and a link in code are told apart."""
    (tmp_path / "other.md").write_text("# Title\n\n## A × b section\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a--b-section) [file](missing.md) [anchor](other.md#nope) [self](#title-x)\n"
        "`[code](not-a-link.md)`\n```\n[fenced](not-a-link.md)\n```\n# Title x\n",
        encoding="utf-8",
    )
    assert dead_links(page) == ["missing.md: no such file", "other.md#nope: no heading with anchor #nope"]
