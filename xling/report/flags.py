"""The report's degenerate-number flags: the same flag and reason the findings use, on every cell the report
shows.

Why: a table that shows 33.40 without a mark beside a finding that calls the same number "one class predicted"
misleads; the chance level and the degenerate checks are computed in one place (xling.evaluate.chance, applied
per table by xling.evaluate.findings.core), and the report only reads them. A cell shows the mark, a letter and
a short label of one vocabulary (`LABELS`: "constant predictions", "nothing mined", ...); the reason whole stands
once under its table, after that letter, and in the cell's tooltip (a table of 33.4 % cells that printed the whole
reason in each cell grew to a screen). A cell that averages several rows carries every reason of its rows.
"""

from __future__ import annotations

import re
from typing import Iterable

import pandas as pd

from xling.evaluate.chance import flag as joined, is_degenerate
from xling.evaluate.findings.core import bucc_flags, transfer_flags, translation_flags, with_table_flags

MARK = "\u2020"
#: the short label of each kind of reason, in the order a cell prefers them (the most specific first: a constant
#: classifier is also at chance): (pattern searched in one reason, label; {0} is the pattern's first group)
LABELS = (
    (r"did not learn (\w+)", "fine-tuning did not learn {0}"),
    (r"constant predictions|one class predicted", "constant predictions"),
    (r"one token repeated|one distinct output piece", "one token repeated"),
    (r"shift changed no output piece", "shift changed nothing"),
    (r"nothing mined", "nothing mined"),
    (r"no entity predicted", "no entity predicted"),
    (r"no correct entity", "no correct entity"),
    (r"scores tied", "all scores tied"),
    (r"at or below chance", "at or below chance"),
    (r"not above chance", "not above chance"),
)
#: the tables whose gather flags state the interval and the chance level of a fraction (0-1) that the report shows
#: in percent (xling.report.blocks.PERCENT_METRICS); their reasons are shown in percent too (`in_percent`)
FRACTION_FLAG_TABLES = frozenset({"tatoeba", "bucc", "token_translation", "contextual_retrieval"})
_NUMBER = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
#: an interval's (or a bare number's) comparison with chance, as xling.evaluate.chance.at_or_below_chance writes it
_AGAINST_CHANCE = re.compile(
    rf"(?P<level>\d+% interval )?(?P<value>{_NUMBER})(?: \[(?P<low>{_NUMBER}), "
    rf"(?P<high>{_NUMBER})\])? (?P<op>holds chance|<= chance) (?P<chance>{_NUMBER})"
)


def no_word_pairs(n_links: int, recall: float | None = None) -> str | None:
    """An aligner that kept no word pair (precision undefined, recall 0), or none of whose pairs is a sure gold
    link: the word pairs carry no alignment, and whatever is trained or scored on them measures nothing. Here, not
    in xling.evaluate.chance: only the report reads it, and a change there would rerun every job that imports it."""
    if n_links == 0:
        return "no word pairs kept"
    if recall == 0:
        return f"none of {n_links} word pairs is a gold link"
    return None


#: how the findings compute each table's own flags (besides the gather's `flag` column, which every table keeps)
COMPUTED = {
    "transfer": lambda rows, pivot: transfer_flags(rows, pivot),
    "bucc": lambda rows, pivot: bucc_flags(rows),
    "token_translation": lambda rows, pivot: translation_flags(rows),
    "word_pairs": lambda rows, pivot: pd.Series(
        [no_word_pairs(int(n), r if pd.notna(r) else None) for n, r in zip(rows["links"], rows["recall"], strict=True)],
        index=rows.index,
        dtype=object,
    ),
}


def row_flags(table: str, rows: pd.DataFrame, pivot: str) -> pd.Series:
    """Each row's degenerate reasons (None where there are none), exactly as the findings flag that table's rows:
    the gather's `flag` column joined with the findings' own checks of the table (transfer: at chance, one class
    predicted, a fine-tuning that did not learn the pivot; BUCC: nothing mined; token translation: one token
    repeated), in the unit the report shows the metric in (`in_percent`). The transfer rows must already be the
    language study's (xling.evaluate.alignment)."""
    if rows.empty:
        return pd.Series([], index=rows.index, dtype=object)
    computed = COMPUTED.get(table)
    own = computed(rows, pivot) if computed else pd.Series([None] * len(rows), index=rows.index, dtype=object)
    found = with_table_flags(rows, own)
    shown = found.map(in_percent) if table in FRACTION_FLAG_TABLES else found
    return shown.map(lambda f: f if is_degenerate(f) else None)


def with_flags(table: str, rows: pd.DataFrame, pivot: str) -> pd.DataFrame:
    """The rows with their `flag` column replaced by `row_flags`."""
    return rows.assign(flag=row_flags(table, rows, pivot))


def reason_parts(reason: str) -> list[str]:
    """The reasons `joined` into one flag, split back ("; " outside parentheses: a did-not-learn reason quotes
    its dev flag, which may itself be joined)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(reason):
        depth += (char == "(") - (char == ")")
        if depth == 0 and reason.startswith("; ", i):
            parts.append(reason[start:i])
            start = i + 2
    return [p for p in [*parts, reason[start:]] if p]


def cell_reason(flags: Iterable) -> str | None:
    """The reasons of the rows one cell shows (several rows: seeds or languages averaged), each once, and none
    that restates another of its number (`said_once`)."""
    reasons = [part for f in flags if is_degenerate(f) for part in reason_parts(said_once(str(f)))]
    return joined(*reasons)


_NUM = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"
#: a number's interval holding chance, and the same number at or below that chance (either unit: 'V % ...')
_HOLDS = re.compile(
    rf"not above chance: (?:\d+% interval )?(?P<value>{_NUM})(?: \[{_NUM}, {_NUM}\])?(?: %)? "
    rf"holds chance (?P<chance>{_NUM})(?: %)?$"
)
_AT_OR_BELOW = re.compile(rf"at or below chance: (?P<value>{_NUM})(?: %)? <= chance (?P<chance>{_NUM})(?: %)?$")
_CONSTANT = re.compile(r"constant predictions: .* is [\d.]+% of (\d+)$")
_ONE_CLASS = re.compile(r"one class's share \(\d+/(\d+)\): one class predicted$")
_ONE_TOKEN = re.compile(r"one token repeated: .* is 100\.0% of \d+ output pieces$")
_ONE_PIECE = re.compile(r"one distinct output piece$")
_ONE_PREDICTION = re.compile(r"one token repeated: one distinct prediction$")


def said_once(reason: str) -> str:
    """The reason with what one number's checks each say about it said once: the gather and the findings check
    the same number separately, so a constant XNLI classifier came with four reasons ('constant predictions:
    'neutral' is 100.0% of 500; not above chance: 95% interval 33.4 [...] holds chance 33.4; at or below chance:
    33.4 <= chance 33.4; one class's share (167/500): one class predicted') and a decoder that repeats one token
    with three. Kept: the interval against chance, under 'at or below chance' when the number also is (one part,
    not two); the constant class with its share (its 'one class's share' of the same test set dropped); the
    repeated token with its share (its 'one distinct output piece' and 'one distinct prediction' dropped). Each
    part absorbs at most one restatement of each kind, of a part before it (a row's checks come in that order),
    so a second row's reason joined after it stays."""
    parts = reason_parts(reason)
    shown, dropped, used = list(parts), set(), set()
    for i, part in enumerate(parts):
        for restating, stated, same in _RESTATEMENTS:
            found = restating.match(part)  # at the part's start: a part a row's prefix names ('xa: ...') stays
            j = (
                next(
                    (
                        j
                        for j in reversed(range(i))
                        if j not in dropped
                        and (restating, j) not in used  # its row's
                        and stated.search(parts[j])
                        and same(found, stated.search(parts[j]))
                    ),
                    None,
                )
                if found
                else None
            )
            if j is not None:
                dropped.add(i)
                used.add((restating, j))
                if restating is _AT_OR_BELOW:  # the interval said under the stronger of the two labels
                    shown[j] = shown[j].replace("not above chance: ", "at or below chance: ", 1)
                break
    return "; ".join(text for i, text in enumerate(shown) if i not in dropped) if dropped else reason


def _same_number(a: re.Match, b: re.Match) -> bool:
    return all(
        abs(float(a.group(k)) - float(b.group(k))) <= 1e-3 * max(abs(float(a.group(k))), 1e-9)
        for k in ("value", "chance")
    )


#: (a part that restates another, the part it restates, whether the two are about the same number)
_RESTATEMENTS = (
    (_AT_OR_BELOW, _HOLDS, _same_number),
    (_ONE_CLASS, _CONSTANT, lambda a, b: a.group(1) == b.group(1)),
    (_ONE_PIECE, _ONE_TOKEN, lambda a, b: True),
    (_ONE_PREDICTION, _ONE_TOKEN, lambda a, b: True),
)


def label(reason: str) -> str:
    """The short label of a flag: the label of its first reason in `LABELS` order ("constant predictions" for a
    constant classifier at chance); a reason no label names: its words before the first colon."""
    parts = reason_parts(reason)
    for pattern, text in LABELS:
        for part in parts:
            found = re.search(pattern, part)
            if found:
                return text.format(*found.groups())
    head = parts[0].split(":")[0].strip() if parts else reason
    return head if len(head) <= 40 else head[:39].rsplit(" ", 1)[0] + " \u2026"


def in_percent(reason: str | None) -> str | None:
    """A gather flag of a fraction (FRACTION_FLAG_TABLES) with its interval and chance level in percent, the unit
    the report shows that metric in: 'holds chance 6.1e-05' beside an F1 of 1.7 % would read as a second unit."""
    if not is_degenerate(reason):
        return reason

    def percent(found: re.Match) -> str:
        def pc(key: str) -> str:
            value = 100 * float(found.group(key))
            return f"{value:.1f}" if value == 0 or abs(value) >= 0.1 else f"{value:.2g}"

        interval = f" [{pc('low')}, {pc('high')}]" if found.group("low") is not None else ""
        return f"{found.group('level') or ''}{pc('value')}{interval} % {found.group('op')} {pc('chance')} %"

    return _AGAINST_CHANCE.sub(percent, reason)


def flagged_text(shown: str, reason: str | None) -> str:
    """A number as a cell shows it, marked when degenerate."""
    return f"{shown} {MARK}" if is_degenerate(reason) else shown


def flagged_cell(shown: str, reason: str | None, sub: str = "") -> dict | str:
    """A cell: the number (marked when degenerate) and under it its small print and the flag's label; the reason
    whole in `title` (the tooltip) and in `flag`, which `lettered` turns into the table's note."""
    if not is_degenerate(reason):
        return {"text": shown, "sub": sub} if sub else shown
    return {
        "text": flagged_text(shown, reason),
        "sub": _with_label(sub, MARK + " " + label(reason)),
        "title": reason,
        "flag": {"reason": reason, "sub": sub, "label": label(reason)},
    }


def _with_label(sub: str, flag: str) -> str:
    return " \u00b7 ".join(p for p in (sub, flag) if p)


def letter(index: int) -> str:
    """a, b, ..., z, aa, ab, ...: the key of a table's index-th reason."""
    return letter(index // 26 - 1) + chr(97 + index % 26) if index >= 26 else chr(97 + index)


def lettered(rows: list[list]) -> tuple[list[list], list[tuple[str, str]]]:
    """The table's flagged cells keyed by a letter per distinct reason (in reading order), and the note under the
    table: (MARK + letter, the reason) of each. The label stays in the cell, the reason once per table; an
    average's reason that joins its languages' reasons already noted says so ('xa: as †a; xc: as †b', `by_key`;
    the tooltip keeps it whole)."""
    keys: dict[str, str] = {}

    def key(cell):
        if not (isinstance(cell, dict) and isinstance(cell.get("flag"), dict)):
            return cell
        flag = cell["flag"]
        mark = keys.setdefault(flag["reason"], MARK + letter(len(keys)))
        return {**cell, "sub": _with_label(flag["sub"], f"{mark} {flag['label']}")}

    rows = [[key(cell) for cell in row] for row in rows]
    return rows, [(mark, by_key(reason, keys) or reason) for reason, mark in keys.items()]


def by_key(reason: str, keys: dict[str, str]) -> str | None:
    """'xa: as †a; xc: as †b' when the reason is an average's: its languages' reasons, each prefixed with its
    language and joined as `cell_reason` joins them (xling.report.transfer.common.average_stats), and a and b
    are reasons of the table; 'window 128: xa: as †a; xc: as †b' when a window names the average (the effect of
    window's drop, xling.report.transfer.window), its rows' notes named by the same window; None otherwise."""
    windows = _window_groups(reason)
    if windows:
        found = []
        for window, rest in windows:
            named = {
                noted[len(window) + 2 :]: mark
                for noted, mark in keys.items()
                if noted != reason and noted.startswith(f"{window}: ")
            }
            known = {**{n: m for n, m in keys.items() if n != reason}, **named}
            inner = f"as {known[rest]}" if rest in known else by_key(rest, known)
            if inner is None:
                return None
            found.append(f"{window}: {inner}")
        return "; ".join(found)
    return _by_language(reason, keys)


def _window_groups(reason: str) -> list[tuple[str, str]] | None:
    """[('window 128', 'xa: r; xc: s'), ...] when the reason's first part names a window and a language after
    it (an average's reason, per window); None otherwise."""
    parts = reason_parts(reason)
    if not parts or not re.match(r"window \d+: [\w-]+: ", parts[0]):
        return None
    groups: list[tuple[str, list[str]]] = []
    for part in parts:
        window = re.match(r"(window \d+): ", part)
        if window:
            groups.append((window.group(1), [part[window.end() :]]))
        else:
            groups[-1][1].append(part)
    return [(window, "; ".join(rest)) for window, rest in groups]


def _by_language(reason: str, keys: dict[str, str]) -> str | None:
    """`by_key` of a reason whose parts a language (or a window) prefixes, without a window before them."""
    groups: list[tuple[str, list[str]]] = []
    for part in reason_parts(reason):
        prefix, _, rest = part.partition(": ")
        if rest and re.fullmatch(r"[\w-]+|window \d+", prefix):  # a language or a window names its row
            groups.append((prefix, [part]))
        elif groups:
            groups[-1][1].append(part)
        else:
            return None
    found, seen = [], set()
    for prefix, parts in groups:  # a part an earlier language has already given is not repeated (cell_reason)
        match = next(
            (
                mark
                for noted, mark in keys.items()
                if noted != reason and [p for p in reason_parts(f"{prefix}: {noted}") if p not in seen] == parts
            ),
            None,
        )
        if match is None:
            return None
        found.append((prefix, match))
        seen.update(parts)
    noted = {mark: text for text, mark in keys.items()}
    if cell_reason(f"{prefix}: {noted[mark]}" for prefix, mark in found) != reason:
        return None
    return "; ".join(f"{prefix}: as {mark}" for prefix, mark in found)


def figure_note(rows: pd.DataFrame, flags: pd.Series, point: list[str]) -> str:
    """The caption's sentence for a figure whose points (the means over `rows` grouped by `point`) are drawn
    from degenerate rows: how many of its points, and the findings' reasons; '' when none is. A point averages
    its rows, so one flagged row flags it (as `cell_reason` does for a table cell)."""
    if rows.empty:
        return ""
    reasons = [cell_reason(flags[part.index]) for _, part in rows.groupby(point, dropna=False)]
    marked = [r for r in reasons if r]
    if not marked:
        return ""
    every = cell_reason(marked)
    mostly = (
        " Most of its points are degenerate: it shows no evidence either way." if 2 * len(marked) > len(reasons) else ""
    )
    return f"{MARK} {len(marked)} of {len(reasons)} points are drawn from numbers the findings flag ({every}).{mostly}"


def with_figure_note(block: dict, note: str) -> dict:
    """The figure block with `note` added to its caption."""
    return {**block, "caption": f"{block['caption']} {note}".strip()}
