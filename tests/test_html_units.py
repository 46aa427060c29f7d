"""Structure-completed units from real Wikipedia pages (Tessera §3.3):
exact completed text of rows under a two-row header, rowspan cells, group
rows, infobox rows and a nested table; block units and provenance."""

from __future__ import annotations

import re

import pytest
from lxml import etree

from pilar.ingest import parse
from pilar.model import ParsedDocument, Unit
from tests.conftest import FIXTURES

HTML = FIXTURES / "html"
CORPUS = FIXTURES / "corpus"
# the real pages these tests read: two here, two shared with the retrieval corpus
PAGES = [HTML / "202-278.html", HTML / "202-285.html", CORPUS / "203-189.html",
         CORPUS / "203-534.html"]


@pytest.fixture(scope="module")
def pages() -> dict[str, ParsedDocument]:
    return {path.stem: parse(path) for path in PAGES}


def row(parsed: ParsedDocument, first_cell: str, table: int | None = None) -> Unit:
    [unit] = [u for u in parsed.units if u.kind == "row" and u.cells[0] == first_cell
              and (table is None or u.table_index == table)]
    return unit


def test_titles_come_from_the_lead_sentence(pages):
    # MediaWiki fragments have no <title> or <h1>: the lead's bold subject.
    assert pages["202-278"].document.title == "Edelweiss"
    assert pages["203-189"].document.title == "Habte Jifar"
    assert pages["203-534"].document.title == "2004 Philadelphia Soul season"
    assert all(p.document.n_pages == 1 and len(p.pages) == 1 for p in pages.values())


def test_row_under_two_row_header(pages):
    unit = row(pages["202-278"], "1988 / 89")
    assert unit.completed_text == (
        'Edelweiss > Discography > Singles | Year: 1988 / 89 | Single: "Bring Me Edelweiss" | '
        "Peak chart positions > AT: 1 | Peak chart positions > UK: 5 | "
        "Peak chart positions > U.S. Dance: 7 | Peak chart positions > U.S. Rock: 24 | "
        "Peak chart positions > GER: 2 | Peak chart positions > SUI: 1 | "
        "Peak chart positions > NED: 2 | Peak chart positions > SWE: 1 | Album: Singles only")
    assert unit.context == ("Edelweiss", "Discography", "Singles")
    # the UK header's citation mark is dropped
    assert unit.headers[3] == "Peak chart positions > UK"


def test_cell_spanning_rows_repeats_in_each_row(pages):
    parsed = pages["202-278"]
    first, second = row(parsed, "1988 / 89"), row(parsed, "1989")
    assert second.completed_text.endswith("Peak chart positions > SWE: — | Album: Singles only")
    assert (first.table_index, first.row_index, second.row_index) == (1, 2, 3)
    prov = {s.support_id: s.provenance for s in parsed.supports}
    # one source cell (rowspan=2), so both rows cite the same cell id
    assert prov[first.support_id].cell_ids[-1] == prov[second.support_id].cell_ids[-1]
    assert prov[second.support_id].cell_ids[-1].endswith(":t1:r2c10")

    jifar = pages["203-189"]
    units = [u for u in jifar.units if u.kind == "row" and u.cells[0] == "1995"]
    assert [u.completed_text for u in units] == [
        "Habte Jifar > Achievements > Representing Ethiopia | Year: 1995 | "
        "Competition: All-Africa Games | Venue: Harare, Zimbabwe | Position: 2nd | "
        "Notes: 5,000 m",
        "Habte Jifar > Achievements > Representing Ethiopia | Year: 1995 | "
        "Competition: All-Africa Games | Venue: Harare, Zimbabwe | Position: 2nd | "
        "Notes: 10,000 m"]


def test_group_row_labels_the_rows_below(pages):
    [grid] = pages["203-189"].tables
    assert grid.row_kinds[:3] == ["header", "group", "body"]
    assert grid.group_labels[2:] == ["Representing Ethiopia"] * 6
    rows = [u for u in pages["203-189"].units if u.kind == "row"]
    assert len(rows) == 6  # the group row is context, not a unit
    assert rows[0].completed_text == (
        "Habte Jifar > Achievements > Representing Ethiopia | Year: 1994 | "
        "Competition: World Junior Championships | Venue: Lisbon, Portugal | "
        "Position: 2nd | Notes: 5,000 m")


def test_infobox_rows_are_key_value(pages):
    box = pages["202-278"].tables[0]
    assert (box.kind, box.title) == ("infobox", "Edelweiss")
    unit = row(pages["202-278"], "Past members", table=0)
    assert unit.completed_text == (
        "Edelweiss | Past members: Martin Gletschermayer / Matthias Schweger / Walter Werzowa")
    assert unit.cells == ("Past members",
                          "Martin Gletschermayer\nMatthias Schweger\nWalter Werzowa")
    soul = row(pages["203-534"], "Record", table=0)
    assert soul.completed_text == "2004 Philadelphia Soul season > Results | Record: 5–11"


def test_nested_table_inherits_enclosing_title_and_group(pages):
    parsed = pages["203-534"]
    nested = parsed.tables[1]
    assert (nested.parent_index, nested.title) == (0, "2004 Philadelphia Soul season")
    unit = row(parsed, "< 2003")
    assert unit.completed_text == (
        "2004 Philadelphia Soul season > Timeline | Previous season: < 2003 | "
        "Next season: 2005 >")
    assert unit.table_index == 1
    # the enclosing row holds only the nested table: no unit of its own
    assert not [u for u in parsed.units if u.table_index == 0 and "2005 >" in u.text]


def test_title_row_and_bold_header(pages):
    grid = next(t for t in pages["202-285"].tables if t.wikitable_index == 0)
    assert grid.title == "2004 Host City Election — ballot results"
    assert grid.row_kinds[:2] == ["title", "header"]
    assert grid.header_paths[2] == ("Round 1",)  # <td><b>Round 1</b></td>
    unit = row(pages["202-285"], "Athens", table=grid.table_index)
    assert unit.completed_text.endswith(
        "Official voting results > 2004 Host City Election — ballot results | City: Athens | "
        "Country (NOC): Greece | Round 1: 32 | Round 3: 38 | Round 4: 52 | Round 5: 66")


def test_wikitable_index_counts_like_wikitablequestions(pages):
    parsed = pages["202-278"]
    assert [(t.table_index, t.wikitable_index, t.kind) for t in parsed.tables] == [
        (0, None, "infobox"), (1, 0, "table"), (2, 1, "table")]


def test_block_units_carry_section_paths(pages):
    parsed = pages["203-189"]
    lead = parsed.units[0]
    assert lead.kind == "paragraph"
    assert lead.completed_text.startswith(
        "Habte Jifar | Habte Jifar (born January 29, 1976 in Ambo, Ethiopia) is an "
        "Ethiopian middle distance runner.")
    link = [u for u in parsed.units if u.kind == "list_item"]
    assert [u.completed_text for u in link] == [
        "Habte Jifar > External links | Habte Jifar profile at IAAF"]
    headings = [s.text for s in parsed.supports if s.kind == "heading"]
    assert headings == ["Achievements", "External links"]
    text = parsed.pages[0].text
    assert "[edit]" not in text and "Representing Ethiopia" in text
    assert "1994 | World Junior Championships | Lisbon, Portugal | 2nd | 5,000 m" in text


def test_ids_and_provenance(pages):
    parsed = pages["202-278"]
    doc_id = parsed.document.doc_id
    for n, support in enumerate(parsed.supports):
        assert support.support_id == f"{doc_id}:1:s{n}"
        assert support.provenance.provenance_id == f"{doc_id}:1:p{n}"
    for unit in parsed.units:
        assert unit.unit_id == unit.support_id.replace(":s", ":u")
    unit = row(parsed, "1988 / 89")
    prov = next(s.provenance for s in parsed.supports if s.support_id == unit.support_id)
    assert prov.section_path == ("Edelweiss", "Discography", "Singles")
    assert (prov.table_index, prov.row, prov.col) == (1, 2, None)
    assert prov.cell_ids[:2] == (f"{doc_id}:t1:r2c0", f"{doc_id}:t1:r2c1")


def _select(root, css: str):
    """Resolve our CSS paths (``tag:nth-of-type(k)`` steps) with XPath."""
    xpath = "/" + "/".join(re.sub(r":nth-of-type\((\d+)\)", r"[\1]", step)
                           for step in css.split(" > "))
    return root.getroottree().xpath(xpath)[0]


@pytest.mark.parametrize("name", ["202-278", "203-534"])
def test_css_paths_point_at_the_source_elements(pages, name):
    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True)
    [path] = [p for p in PAGES if p.stem == name]
    root = etree.fromstring(path.read_bytes(), parser)
    parsed = pages[name]
    by_id = {s.support_id: s for s in parsed.supports}
    for unit in parsed.units:
        prov = by_id[unit.support_id].provenance
        el = _select(root, prov.css_path)
        words = " ".join("".join(el.itertext()).split())
        texts = unit.cells or (unit.text,)
        assert any(t.split("\n")[0][:20] in words for t in texts), (prov.css_path, unit.text)
        assert el.tag == ("tr" if unit.kind == "row" else el.tag)
