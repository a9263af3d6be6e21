"""One flag everywhere: every number of the report's tables that the findings flag carries the mark and the
label of the findings' own reason, the reason whole is attached to that cell (its tooltip and the note under its
table the cell's letter points to), and no other number is marked. The reference is computed here with the
findings' functions (xling.evaluate.findings), not with the report's, and the findings' judged claims are walked
too. A fraction's reason is shown in percent, as its number is (xling.report.flags.in_percent)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from xling.evaluate.alignment import language_study_rows
from xling.evaluate.findings import judge_claims
from xling.evaluate.findings.core import bucc_flags, transfer_flags, with_table_flags
from xling.report.blocks import model_name
from xling.report.flags import LABELS, MARK, in_percent, label, reason_parts, said_once

import test_report_published as published
from test_report_transfer import LANGS, header, render, table_rows, transfer_table

CONSTANT = ("bert", 12000, 128)  # this BERT's fine-tunings predict one class: 167 of 500 on every XNLI split


@pytest.fixture(scope="module")
def flagged(tmp_path_factory):
    table = transfer_table()
    one_class = (
        (table["model"] == CONSTANT[0])
        & (table["size"] == CONSTANT[1])
        & (table["window"] == CONSTANT[2])
        & (table["task"] == "xnli")
    )
    table.loc[one_class, ["value", "n"]] = [33.4, 500]
    html, _ = render(tmp_path_factory.mktemp("flags"), {"transfer": table})
    rows = language_study_rows(table)
    reference = rows.assign(flag=with_table_flags(rows, transfer_flags(rows, "en")))
    return html, reference, judge_claims({"transfer": table}, "en")


class Cell(str):
    """A rendered table cell ('text | sub', as table_rows gives it) with its tooltip (`title`) and the reason whole
    its mark's letter points to in the note under its table (`note`; '' when the cell has no letter)."""

    title: str
    note: str


def flagged_table(html: str, title: str) -> tuple[list[str], list[list[Cell]]]:
    """(headers, rows of Cells) of the table titled `title`; every letter a cell shows must have its note."""
    start = html.index(title)
    end = html.index("</table>", start)
    notes = dict(
        re.findall(
            r"<li><b>(" + MARK + r"[a-z]+)</b> (.*?)</li>",
            html[end:]
            .split("<h3")[0]
            .split("<details")[0]
            .split("</section>")[0]
            .split('<ul class="flags">', 1)[-1]
            .split("</ul>")[0],
            flags=re.S,
        )
    )
    titles = [
        [(re.search(r'title="([^"]*)"', attrs) or [None, ""])[1] for attrs in re.findall(r"<td([^>]*)>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", html[start:end].split("</thead>")[1], flags=re.S)
    ]
    rows = []
    for texts, tips in zip(table_rows(html, title), titles, strict=True):
        row = []
        for text, tip in zip(texts, tips, strict=True):
            cell = Cell(text)
            cell.title = tip
            key = re.search(MARK + r"[a-z]+(?= )", text.split(" | ", 1)[-1])
            cell.note = expanded(notes[key.group(0)], notes) if key else ""  # KeyError: a letter without its note
            row.append(cell)
        rows.append(row)
    return [c.split()[0] if c else c for c in header(html, title)], rows


def expanded(note: str, notes: dict[str, str]) -> str:
    """A note whole: an average's 'xa: as †a; xc: as †b' with the reasons of †a and †b, each part prefixed."""
    window = re.fullmatch(r"(window \d+): ([\w-]+: as " + MARK + r"[a-z]+(?:; [\w-]+: as " + MARK + r"[a-z]+)*)", note)
    if window:  # 'window 128: xa: as †a; xc: as †b', whose notes are that window's: 'window 128: r'
        named = {key: text.removeprefix(f"{window.group(1)}: ") for key, text in notes.items()}
        return f"{window.group(1)}: {expanded(window.group(2), named)}"
    refs = re.fullmatch(r"(?:[\w-]+(?: \d+)?: as " + MARK + r"[a-z]+(?:; |$))+", note)
    if not refs:
        return note
    # as xling.report.transfer.common.average_stats names each language's reason, and joins them (each part once)
    return "; ".join(
        dict.fromkeys(
            part
            for prefix, key in re.findall(r"([\w-]+(?: \d+)?): as (" + MARK + r"[a-z]+)", note)
            for part in reason_parts(f"{prefix}: {notes[key]}")
        )
    )


def check_flag(cell: Cell, reasons: list[str], where) -> bool:
    """The cell carries exactly the findings' `reasons`: the mark and the label of their joined reason, and every
    part of every reason in its tooltip and in its note; no mark, tooltip or letter when there is none."""
    if not reasons:
        assert MARK not in cell and not cell.title and not cell.note, (where, cell)
        return False
    whole = "; ".join(reasons)
    labels = {text.split(" {")[0] for _, text in LABELS}
    assert MARK in cell.split(" | ")[0], (where, cell)
    assert label(whole) in cell.split(" | ", 1)[-1] and any(label(whole).startswith(t) for t in labels), (where, cell)
    for reason in reasons:  # each said once: a part that restates another of its number is not repeated
        for part in reason_parts(said_once(reason)):
            assert part in cell.title and part in cell.note, (where, part, cell.title, cell.note)
    assert cell.title == cell.note, (where, cell.title, cell.note)
    return True


def xnli_cells(html: str) -> dict[tuple[str, str], Cell]:
    """(model name, language) -> the cell of the XNLI table (English dev selection)."""
    columns, rows = flagged_table(html, "XNLI test accuracy (%) by model, checkpoint chosen on English dev")
    cells = {}
    for row in rows:
        name = row[0] if row[1] == "\u2014" else f"{row[0]} {row[1]} w{row[2]}"
        for lang in LANGS:
            cells[(name, lang)] = row[columns.index(lang)]
    return cells


def check_xnli(html: str, reference: pd.DataFrame) -> int:
    """Walk the XNLI table against the findings' flags of its rows; the number of flagged cells checked."""
    shown = reference[
        (reference["task"] == "xnli")
        & (reference["split"] == "test")
        & (reference["transform"] == "none")
        & (reference["selection"] == "en_dev")
        & reference["selected"].astype(bool)
    ]
    shown = shown[shown["freeze"] == shown.groupby(["model", "size", "window"])["freeze"].transform("min")]
    cells = xnli_cells(html)
    checked = 0
    for (model, size, window, lang), rows in shown.groupby(["model", "size", "window", "lang"]):
        name = model_name({"model": model, "size": size, "window": window})
        if size:
            name = name.replace("bert", "BERT").replace("glove", "GloVe").replace("word2vec", "Word2Vec")
        reasons = list(dict.fromkeys(f for f in rows["flag"] if isinstance(f, str) and f))
        checked += check_flag(cells[(name, lang)], reasons, (name, lang))
    return checked


def test_every_flagged_xnli_cell_carries_the_findings_reason_and_no_other(flagged):
    html, reference, _ = flagged
    assert check_xnli(html, reference) >= 4  # the planted constant BERT (3 languages) and the Word2Vec below chance


def test_the_walk_fails_when_a_flag_or_its_reason_is_dropped(flagged):
    """Mutants of the rendered page: one flagged cell's mark gone, one note cut short, a tooltip dropped."""
    html, reference, _ = flagged
    table = html.index("XNLI test accuracy (%) by model, checkpoint chosen on English dev")
    before, after = html[:table], html[table:]
    cell = re.search(r"<td[^>]*title=[^>]*>([^<]*) " + MARK, after)
    note = re.search(r"<li><b>" + MARK + r"a</b> (.*?)</li>", after)
    tip = re.search(r' title="[^"]*"', after)
    for mutant in (
        after[: cell.start(1)] + after[cell.start(1) :].replace(f"{cell.group(1)} {MARK}", cell.group(1), 1),
        after[: note.start(1)] + note.group(1)[:20] + after[note.end(1) :],
        after[: tip.start()] + after[tip.end() :],
    ):
        with pytest.raises(AssertionError):
            check_xnli(before + mutant, reference)


def test_the_constant_classifier_is_named_in_every_language_and_the_window_drop(flagged):
    html, _, _ = flagged
    cells = xnli_cells(html)
    for lang in LANGS:
        cell = cells[("BERT 12k w128", lang)]
        assert "one class's share (167/500): one class predicted" in cell.note, cell.note
        # the mark and one label: the root cause first (its English dev is constant too, so it did not learn)
        assert cell.count(MARK) == 2 and "fine-tuning did not learn en" in cell, cell
        assert "one class predicted" not in cell  # the reason whole is in the note, not the cell
    _, window = flagged_table(html, "XNLI accuracy drop")
    (bert,) = [r for r in window if r[:2] == ["BERT", "12k"]]
    assert all(MARK in cell and "window 128: " in cell.note and "window 128: " in cell.title for cell in bert[3:])
    assert "drops start or end at a degenerate accuracy" not in html  # said in the figure, not the page text


def test_a_flag_has_one_short_label_of_one_vocabulary():
    """Hand-written reasons of every kind the findings write, and the label a cell shows for them."""
    cases = {
        "constant predictions: 'neutral' is 100.0% of 500; not above chance: 95% interval 33.400 "
        "[29.395, 37.800] holds chance 33.400; one class's share (167/500): one class predicted": "constant predictions",
        "not above chance: 95% interval 1.7 [0.0, 3.8] % holds chance 0.0061 %": "not above chance",
        "at or below chance: 33.200 <= chance 33.333": "at or below chance",
        "the fine-tuning did not learn en (en dev not above chance: 1.0 [0.0, 2.0] holds chance 0.0; "
        "one class's share (1/3): one class predicted); no entity predicted": "fine-tuning did not learn en",
        "nothing mined correctly: none of 51 mined pairs is gold": "nothing mined",
        "one distinct output piece; the shift changed no output piece": "one token repeated",
        "the shift changed no output piece": "shift changed nothing",
        "F1 0: no correct entity": "no correct entity",
        "all 40 scores tied at 0.500": "all scores tied",
        "window 16: xa: no entity predicted": "no entity predicted",
        "a new kind of reason: with its details": "a new kind of reason",
    }
    assert {reason: label(reason) for reason in cases} == cases
    assert reason_parts("the fine-tuning did not learn en (a; b); c") == [
        "the fine-tuning did not learn en (a; b)",
        "c",
    ]


def test_an_average_s_note_points_to_its_languages_notes():
    """Lettered by hand: two languages' reasons, and the average that joins them (each part prefixed with its
    language, as xling.report.transfer.common.average_stats names them) points to their letters."""
    from xling.report.flags import flagged_cell, lettered

    xa, xc = "constant predictions: 'neutral' is 100.0% of 500; one class predicted", "not above chance: 34.6"
    average = "xa: constant predictions: 'neutral' is 100.0% of 500; one class predicted; xc: not above chance: 34.6"
    rows, notes = lettered(
        [
            [
                flagged_cell("33.4", xa),
                flagged_cell("34.6", xc),
                flagged_cell("34.0", average),
                flagged_cell("1.0", "window 16: " + xc),
            ]
        ]
    )
    assert notes == [
        (MARK + "a", xa),
        (MARK + "b", xc),
        (MARK + "c", f"xa: as {MARK}a; xc: as {MARK}b"),
        (MARK + "d", f"window 16: as {MARK}b"),
    ]
    assert rows[0][2]["title"] == average and rows[0][2]["sub"] == f"{MARK}c constant predictions"
    assert expanded(notes[2][1], dict(notes)) == average
    ((_, alone),) = lettered([[flagged_cell("34.0", average)]])[1]  # no language's note to point to: whole
    assert alone == average
    # a part both languages give stands once in the average ('xa: p; shared; xc: q'): still both letters
    xb = "constant predictions: 'entailment' is 97.8% of 500; one class predicted"
    shared = (
        "xa: constant predictions: 'neutral' is 100.0% of 500; one class predicted; xb: constant predictions: "
        "'entailment' is 97.8% of 500"
    )
    rows, notes = lettered([[flagged_cell("33.4", xa), flagged_cell("33.2", xb), flagged_cell("33.3", shared)]])
    assert notes[2] == (MARK + "c", f"xa: as {MARK}a; xb: as {MARK}b") and expanded(notes[2][1], dict(notes)) == shared


def test_a_window_s_average_note_points_to_that_window_s_language_notes():
    """The effect-of-window table names each drop's reasons by window ('window 128: xa: r; xc: s' for the
    average): its note points to the notes of that window's languages, the window said once."""
    from xling.report.flags import flagged_cell, lettered

    xa, xc = "constant predictions: 'neutral' is 100.0% of 500; one class predicted", "not above chance: 34.6"
    average = f"window 128: xa: {xa}; xc: {xc}"
    rows, notes = lettered(
        [
            [
                flagged_cell("-53.3", f"window 128: {xa}"),
                flagged_cell("-1.0", f"window 128: {xc}"),
                flagged_cell("-20.0", average),
                flagged_cell("-2.0", f"window 16: xa: {xa}"),
            ]
        ]
    )
    assert notes[2] == (MARK + "c", f"window 128: xa: as {MARK}a; xc: as {MARK}b")
    assert expanded(notes[2][1], dict(notes)) == average
    assert notes[3] == (MARK + "d", f"window 16: xa: {xa}")  # no note of window 16's xa to point to: whole


def test_a_fraction_s_reason_is_shown_in_percent():
    assert (
        in_percent("nothing mined: no pair; not above chance: 95% interval 0.017 [0.000, 0.038] holds chance 6.1e-05")
        == "nothing mined: no pair; not above chance: 95% interval 1.7 [0.0, 3.8] % holds "
        "chance 0.0061 %"
    )
    assert in_percent("at or below chance: 0.002 <= chance 0.004") == "at or below chance: 0.2 % <= chance 0.4 %"
    assert in_percent(None) is None


def test_every_flag_of_a_transfer_finding_is_shown_in_a_table(flagged):
    html, _, findings = flagged
    judged = findings[findings["table"] == "transfer"]
    flags = {
        part
        for cell in judged["measures"].dropna()
        for m in json.loads(cell)
        if m.get("flag")
        for part in m["flag"].split("; ")
    }
    assert flags, "the planted constant classifier must reach a finding"
    missing = sorted(f for f in flags if f not in html)
    assert not missing, missing


def test_each_finding_links_to_the_section_of_its_numbers_and_the_csv(flagged, tmp_path):
    _, _, findings = flagged
    table = transfer_table()
    html, _ = render(tmp_path, {"transfer": table, "findings": findings})
    sections = set(re.findall(r'<section id="([^"]+)"', html))
    judged = findings[findings["table"] == "transfer"]
    assert len(judged)
    for claim in judged["claim"]:
        match = re.search(r'<a href="#([^"]+)">' + re.escape(claim) + "</a>", html)
        assert match and match.group(1) in sections and match.group(1).startswith("transfer"), claim
    for _, row in judged.iterrows():  # the paper's section and the quote stand under the claim
        assert f"the paper's {row['where']}" in html and row["quote"] in html


# ---------------------------------------------------------------------------------------------- the language study


def language_tables() -> dict[str, pd.DataFrame]:
    """Demo-like Tatoeba, BUCC and token-translation tables of our BERT with degenerate rows planted: a Tatoeba
    row at chance (the gather's flag), a BUCC variant that mined nothing, and a token translation at one
    alpha whose decoder repeats one token (one distinct prediction, as the findings check)."""
    tatoeba = published.tatoeba(with_mbert=False).assign(report_layer=2, flag=None)
    at_chance = (tatoeba["layer"] == 2) & (tatoeba["variant"] == "mds") & (tatoeba["direction"] == "en->xx")
    tatoeba.loc[at_chance, ["accuracy", "flag"]] = [0.1, "not above chance: 0.100 [0.000, 0.300] holds chance 0.100"]
    bucc = published.bucc().assign(model="bert", size=4000, window=128, report_layer=8)
    bucc.loc[bucc["variant"] == "mds", ["f1", "precision", "recall", "n_extracted"]] = [0.0, 0.0, 0.0, 0]
    translation = published.token_translation()
    translation = translation[translation["model"] == "bert"].assign(distinct_predictions=5)
    translation.loc[translation["alpha"] == 2.0, ["distinct_predictions", "convert_rate"]] = [1, 1.0]
    return {"tatoeba": tatoeba, "bucc": bucc, "token_translation": translation}


@pytest.fixture(scope="module")
def language_report(tmp_path_factory):
    tables = language_tables()
    config = {**published.CONFIG, "language": {"sentence_retrieval": {"layer": 2}}}
    html = published.render(tmp_path_factory.mktemp("language"), tables, config)
    return html, tables, judge_claims(tables, "en")


def test_every_flagged_retrieval_cell_carries_the_findings_reason_and_no_other(language_report):
    html, tables, _ = language_report
    checked = 0
    for task, title, computed in (
        ("tatoeba", "Tatoeba accuracy (%, en\u2192xx, layer 2)", lambda r: [None] * len(r)),
        ("bucc", "BUCC F1 (%, test, xx\u2194en", bucc_flags),
    ):
        rows = tables[task]
        rows = rows[rows["layer"] == 2] if task == "tatoeba" else rows
        rows = rows[rows["direction"] == "en->xx"] if task == "tatoeba" else rows
        reference = with_table_flags(rows, pd.Series(computed(rows), index=rows.index, dtype=object))
        columns, shown = flagged_table(html, title)
        for variant, name in (("original", "Original"), ("zero_mean", "Zero-mean"), ("mds", "MDS")):
            (row,) = [r for r in shown if r[1] == name]
            reasons = [in_percent(f) for f in reference[rows["variant"] == variant] if isinstance(f, str) and f]
            for column in ("de", "mean"):
                checked += check_flag(row[columns.index(column)], reasons, (task, variant, column))
            assert (row[-1] == "none") == (not reasons), row
    assert checked == 4  # Tatoeba's and BUCC's MDS rows, each in its language and its mean


def test_fractions_flags_are_in_percent_on_the_page(language_report):
    """Tatoeba's accuracy and BUCC's F1 are shown in %: so are the intervals and chance levels of their reasons,
    in the tables and in the findings (issue 35: 'mds 0.6 [0.0, 1.3] (f1, %)' beside '0.017 ... chance 6.1e-05')."""
    html, _, _ = language_report
    assert "not above chance: 0.100 [0.000, 0.300] holds chance 0.100" not in html
    assert "not above chance: 10.0 [0.0, 30.0] % holds chance 10.0 %" in html
    assert not re.search(r"(holds|<=) chance \d\.\d+e-\d", html)


def test_the_one_token_translation_is_flagged_in_its_cells_and_figures(language_report):
    html, tables, _ = language_report
    columns, rows = flagged_table(html, "Token translation: BLEU-1 / convert rate")
    two = [
        i for i, c in enumerate(header(html, "Token translation: BLEU-1 / convert rate")) if c.startswith("\u03b1 = 2")
    ][0]
    assert len(rows) == 2  # our BERT, both directions
    for row in rows:
        check_flag(row[two], ["one token repeated: one distinct prediction"], row[:2])
        assert sum(MARK in cell for cell in row[2:-1]) == 1, row  # only alpha 2 repeats one token
    for name in ("language_translation_alpha", "language_translation_convert_rate"):
        caption = re.search(rf'<figure id="fig-{name}">.*?<figcaption>(.*?)<br>', html, flags=re.S).group(1)
        assert MARK in caption and "one token repeated: one distinct prediction" in caption, caption


def test_every_flag_of_a_language_finding_is_shown_in_a_table(language_report):
    html, _, findings = language_report
    judged = findings[findings["table"].isin(["tatoeba", "bucc", "token_translation"])]
    flags = {
        part
        for cell in judged["measures"].dropna()
        for m in json.loads(cell)
        if m.get("flag")
        for part in m["flag"].split("; ")
    }
    assert {
        "nothing mined: no candidate pair above the dev threshold",
        "not above chance: 0.100 [0.000, 0.300] holds chance 0.100",
    } <= flags
    missing = sorted(f for f in flags if in_percent(f) not in html)
    assert not missing, missing


# ---------------------------------------------------------------------------------------------- Cao et al.


def test_cao_xnli_cells_and_figure2_carry_the_findings_flags(tmp_path):
    """Two of three languages at XNLI chance: their cells in the Table 1 layout and the Figure 2 points carry
    the findings' reason (transfer_flags on the whole transfer table, as xling.evaluate.findings.cao flags it);
    the figure's caption says most points are degenerate and the legend states n."""
    import test_alignment_report as cao
    from xling.report.alignment import render_alignment_xnli, render_alignment_xnli_retrieval

    base = cao.BASE
    rows = [
        dict(
            lm=base,
            lang=lang,
            contextual=True,
            layer=4,
            k=10,
            method="none",
            parallel_sentences=0,
            accuracy=value,
            n_queries=100,
            model="bert",
            size=4000,
            window=128,
            exclude_seen=True,
        )
        for lang, value in {"de": 0.2, "xb": 0.4, "xc": 0.6}.items()
    ]
    xnli = cao.transfer(
        {
            (base, "none"): {"en": 80, "de": 50, "xb": 32, "xc": 33},
            (cao.ALIGNED[400], "none"): {"en": 80, "de": 60, "xb": 58, "xc": 56},
        }
    )
    reference = with_table_flags(xnli, transfer_flags(xnli, "en"))
    reasons = {lang: reference[xnli["lang"] == lang].dropna().tolist() for lang in ("de", "xb", "xc")}
    assert not reasons["de"] and reasons["xb"] and reasons["xc"]
    ctx = cao.context({"contextual_retrieval": pd.DataFrame(rows), "transfer": xnli}, tmp_path)
    table1 = cao.table(render_alignment_xnli(ctx), "Table 1 layout")
    (base_row,) = [r for r in table1["rows"] if r[0] == "Base BERT (zero-shot)"]
    cells = dict(zip(table1["columns"][1:], [cao.text_of(c) for c in base_row[1:]], strict=True))
    tips = dict(
        zip(
            table1["columns"][1:],
            [c.get("title", "") if isinstance(c, dict) else "" for c in base_row[1:]],
            strict=True,
        )
    )
    notes = dict(table1["flags"])
    for lang in ("de", "xb", "xc"):
        assert (MARK in cells[lang]) == bool(reasons[lang]), (lang, cells[lang])
        assert all(part in tips[lang] for r in reasons[lang] for part in reason_parts(r)), tips[lang]
        if reasons[lang]:  # the letter under the number points to the same reason in the note under the table
            (key,) = [k for k in notes if f"{k} " in base_row[1 + table1["columns"][1:].index(lang)]["sub"]]
            assert notes[key] == tips[lang], (notes[key], tips[lang])
    assert MARK in cells["average"]
    # the average names each language's reason, so its note points to theirs instead of repeating them
    assert tips["average"].startswith("xb: ") and "; xc: " in tips["average"], tips["average"]
    (key,) = [k for k in notes if f"{k} " in base_row[-1]["sub"]]
    assert re.fullmatch(rf"xb: as {MARK}[a-z]+; xc: as {MARK}[a-z]+", notes[key]), notes[key]
    figure, numbers = render_alignment_xnli_retrieval(ctx)
    assert "2 of 3 points" in figure["caption"] and "Most of its points are degenerate" in figure["caption"]
    assert all(part in figure["caption"] for r in reasons["xb"] for part in r.split("; "))
    assert sum(MARK in cao.text_of(r[3]) for r in numbers["rows"]) == 2


def test_cao_retrieval_cells_carry_their_rows_flag(tmp_path):
    """Table 3's layout: a language whose retrieval row the gather flags (at chance by its interval) is marked
    with that reason; the others are not."""
    import test_alignment_report as cao
    from xling.report.alignment import render_alignment_retrieval

    table = cao.good_retrieval().assign(flag=None)
    at_chance = (table["lang"] == "xb") & (table["lm"] == cao.BASE) & (table["method"] == "none") & table["contextual"]
    reason = "not above chance: 0.010 [0.000, 0.030] holds chance 0.010"
    table.loc[at_chance, "flag"] = reason
    ctx = cao.context({"contextual_retrieval": table, "transfer": cao.good_transfer()}, tmp_path)
    layout = cao.table(render_alignment_retrieval(ctx), "Word retrieval accuracy")
    marked = [(r[0], r[1], i) for r in layout["rows"] for i, c in enumerate(r) if MARK in cao.text_of(c)]
    assert marked == [("contextual", "Base BERT", layout["columns"].index("xb-en"))], marked
    (row,) = [r for r in layout["rows"] if r[:2] == ["contextual", "Base BERT"]]
    cell = row[layout["columns"].index("xb-en")]
    shown = "not above chance: 1.0 [0.0, 3.0] % holds chance 1.0 %"  # the fraction's reason in %, as the cell
    assert in_percent(reason) == shown and cell["title"] == shown and layout["flags"] == [(MARK + "a", shown)]
    assert cell["sub"].endswith(f"{MARK}a not above chance"), cell


# ---------------------------------------------------------------------------------------------- word retrieval

#: (model, size, window, layer) -> MRR of en-xa, en-xb on 1000 queries each, chance 0.05: the small BERT and the
#: short-window BERT at chance (their intervals hold it), the rest far above
RETRIEVAL_GRID = {
    ("bert", 100, 64, 1): (0.05, 0.06),
    ("glove", 100, 64, 0): (0.40, 0.40),
    ("word2vec", 100, 64, 0): (0.40, 0.40),
    ("bert", 500, 64, 1): (0.60, 0.80),
    ("glove", 500, 64, 0): (0.50, 0.50),
    ("word2vec", 500, 64, 0): (0.40, 0.60),
    ("bert", 500, 8, 1): (0.05, 0.05),
}
RETRIEVAL_CONFIG = {
    "run": "t",
    "languages": ["en", "xa", "xb"],
    "models": ["glove", "word2vec", "bert"],
    "windows": [64, 8],
    "retrieval": {"report_layer": 1},
    "bootstrap": {"resamples": 200, "seed": 3},
}


@pytest.fixture(scope="module")
def retrieval_report(tmp_path_factory):
    from test_findings import retrieval

    from xling.evaluate.findings import criteria_from_config
    from xling.plan.figures import selection_config

    tables = retrieval(RETRIEVAL_GRID, chance=0.05)
    criteria = criteria_from_config({}, RETRIEVAL_CONFIG["bootstrap"], selection_config(RETRIEVAL_CONFIG))
    html = published.render(tmp_path_factory.mktemp("retrieval"), tables, RETRIEVAL_CONFIG)
    return html, tables, criteria, judge_claims(tables, "en", criteria)


def test_every_flagged_mrr_cell_carries_the_findings_reason_and_no_other(retrieval_report):
    """The MRR table walked against the findings' measure of each cell (xling.evaluate.findings.liu_what: the
    interval from the per-query ranks against the job's chance MRR): each pair's cell and each model's mean."""
    from xling.evaluate.findings.liu_what import mrr_label, mrr_measure

    html, tables, criteria, _ = retrieval_report
    columns, rows = flagged_table(html, "MRR by language pair (")
    names = {"GloVe": "glove", "Word2Vec": "word2vec", "BERT": "bert"}
    table, checked = tables["word_retrieval"], 0
    for row in rows:
        if row[0] not in names:
            continue  # the chance row
        key = (names[row[0]], int(row[1].replace(",", "")), int(row[2]), int(row[3]))
        part = table[(table[["model", "size", "window", "layer"]] == list(key)).all(axis=1)]
        for pairs, column in [*(([p], p) for p in ("en-xa", "en-xb")), (["en-xa", "en-xb"], "mean")]:
            found = mrr_measure(tables, key, part, pairs, mrr_label(key[0], pairs, key[3]), criteria).flag
            checked += check_flag(row[columns.index(column)], [found] if found else [], (key, column))
    assert checked == 6  # the small BERT and the short-window BERT: both pairs and their mean


def test_every_flag_of_a_word_retrieval_finding_is_shown_in_the_mrr_table(retrieval_report):
    """Each flagged number of the word-retrieval claims stands flagged in the table with the same interval and
    chance level; a claim on one pair names it as the table's cell does, so its reason is there whole."""
    html, _, _, findings = retrieval_report
    judged = findings[findings["table"] == "word_retrieval"]
    measures = [m for cell in judged["measures"].dropna() for m in json.loads(cell) if m.get("flag")]
    assert {m["label"] for m in measures} >= {"en-xa BERT (layer 1)", "en-xb BERT (layer 1)", "window 8 (layer 1)"}
    for m in measures:
        number = m["flag"].split(m["label"] + " ", 1)[1]  # the value, its interval and the chance level
        assert number in html, m
        if re.fullmatch(r"en-x\w \S+ \(layer \d+\)|en-x\w \S+", m["label"]):
            assert m["flag"] in html, m


def test_cao_analysis_cells_carry_the_findings_flags(tmp_path):
    """Table 4 and Figure 3: base BERT's closed-class accuracy and its largest frequency-rank bin planted at 0 (their
    intervals at 0, chance 0.2 %): each such cell is flagged with the findings' own reason for that number (the
    mean over the languages, xling.evaluate.findings.cao), no other cell is, and the figure's caption says so."""
    import test_alignment_report as cao
    from xling.report.alignment import render_alignment_frequency, render_alignment_pos

    pos = cao.with_interval(cao.pos_table(), 0.02).assign(chance=0.002)
    base = (pos["lm"] == cao.BASE) & (pos["method"] == "none")  # base BERT itself, not its rotation
    pos.loc[base & (pos["group"] == "closed_class"), ["accuracy", "ci_low", "ci_high"]] = 0.0
    bins = cao.with_interval(cao.frequency_table(), 0.02).assign(chance=0.002)
    last = (bins["lm"] == cao.BASE) & (bins["rank_difference"] == "100+")
    bins.loc[last, ["accuracy", "ci_low", "ci_high"]] = [0.0, 0.0, 0.001]
    tables = {"contextual_retrieval_pos": pos, "contextual_retrieval_frequency": bins}
    findings = judge_claims(tables, "en", resamples=100, aligned_langs=("de", "xb")).set_index("id")
    flagged = {
        m["label"]: m["flag"]
        for claim in ("cao2020.pos", "cao2020.frequency")
        for m in json.loads(findings.at[claim, "measures"])
        if m.get("flag")
    }
    assert set(flagged) == {"base BERT, closed classes", "base BERT, rank difference 100+"}, flagged
    ctx = cao.context(tables, tmp_path)
    layout = cao.table(render_alignment_pos(ctx), "Accuracy (%) by part of speech, BERT")
    groups = [c["sub"] for c in layout["columns"][1:]]
    (base,) = [r for r in layout["rows"] if r[0] == "Base BERT"]
    marked = [g for g, c in zip(groups, base[1:], strict=True) if MARK in cao.text_of(c)]
    assert marked and set(marked) == {"closed class"} and len(marked) == groups.count("closed class"), marked
    assert not [c for r in layout["rows"] if r[0] != "Base BERT" for c in r if MARK in cao.text_of(c)]
    (average,) = [
        c
        for g, c, h in zip(groups, base[1:], layout["columns"][1:], strict=True)
        if g == "closed class" and h["text"] == "average"
    ]
    assert average["title"] == flagged["base BERT, closed classes"], (average["title"], flagged)
    figure, numbers = render_alignment_frequency(ctx)
    marked = [r for r in numbers["rows"] if MARK in cao.text_of(r[3])]
    assert [(r[1], r[2]) for r in marked] == [("Base BERT", "100+")] and marked[0][3]["title"] == flagged[
        "base BERT, rank difference 100+"
    ]
    assert (
        f"1 of {len(numbers['rows'])} points" in figure["caption"]
        and flagged["base BERT, rank difference 100+"] in figure["caption"]
    )


def test_a_number_s_reasons_are_said_once():
    """Hand-written: the four reasons the gather and the findings give one constant XNLI classifier, and the
    three of a decoder repeating one token, each said once; a second row's reasons joined after them stay."""
    constant = (
        "constant predictions: 'neutral' is 100.0% of 500; not above chance: 95% interval 33.400 "
        "[29.395, 37.800] holds chance 33.400; at or below chance: 33.400 <= chance 33.400; "
        "one class's share (167/500): one class predicted"
    )
    assert said_once(constant) == (
        "constant predictions: 'neutral' is 100.0% of 500; at or below chance: 95% "
        "interval 33.400 [29.395, 37.800] holds chance 33.400"
    )
    token = (
        "one token repeated: 'da' is 100.0% of 2335 output pieces; one distinct output piece; the shift "
        "changed no output piece; not above chance: 95% interval 0.0 [0.0, 1.4] % holds chance 0.0 %; "
        "one token repeated: one distinct prediction"
    )
    assert said_once(token) == (
        "one token repeated: 'da' is 100.0% of 2335 output pieces; the shift changed no "
        "output piece; not above chance: 95% interval 0.0 [0.0, 1.4] % holds chance 0.0 %"
    )
    # not the same number, or a part of another row (prefixed): kept
    other = (
        "not above chance: 95% interval 34.600 [30.400, 38.600] holds chance 33.400; at or below chance: "
        "33.200 <= chance 33.400; xb: one class's share (166/500): one class predicted"
    )
    assert said_once(other) == other
    mostly = "one token repeated: 'da' is 82.2% of 2335 output pieces; one distinct output piece"
    assert said_once(mostly) == mostly  # 82 % is not one piece: the second reason says more
    assert said_once(said_once(constant)) == said_once(constant)
    from xling.report.flags import cell_reason

    assert cell_reason([constant, token]) == "; ".join([said_once(constant), said_once(token)])
