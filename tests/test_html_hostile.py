"""Hostile and broken HTML from ../shared/data/hostile: each parses with the
expected result or raises IngestError with a clear reason, in bounded time
(hostile/README.md and index.jsonl give the expectations)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pilar.config import Settings
from pilar.errors import IngestError, UnsupportedTypeError
from pilar.ingest import new_document, parse
from pilar.ingest.html import parse_html
from pilar.model import ParsedDocument

SETTINGS = Settings()


def parse_file(path: Path, data: bytes | None = None) -> ParsedDocument:
    """parse_html alone (no sniffing, no graph extraction) on a file."""
    data = path.read_bytes() if data is None else data
    return parse_html(data, new_document(data, str(path), "text/html"), SETTINGS)


def all_text(parsed: ParsedDocument) -> str:
    return "\n".join([parsed.pages[0].text] + [u.completed_text for u in parsed.units])


def test_empty_file_is_a_clear_error(hostile):
    with pytest.raises(IngestError, match="empty file"):
        parse(hostile / "empty-0.html")
    with pytest.raises(IngestError, match="empty"):
        parse_file(hostile / "empty-0.html")


def test_random_bytes_are_rejected(hostile):
    with pytest.raises(UnsupportedTypeError, match="not HTML"):
        parse(hostile / "binary-named-html-0.html")


def test_script_only_page_has_no_content(hostile):
    with pytest.raises(IngestError, match="no text content"):
        parse_file(hostile / "script-only-0.html")


@pytest.mark.timeout(30)
def test_deep_nesting_does_not_crash(hostile):
    # libxml2 stops at depth 2048; the only text sits below that.
    with pytest.raises(IngestError, match="nested deeper than the parser limit"):
        parse_file(hostile / "deep-nesting-0.html")


def test_span_bomb_is_capped(hostile):
    parsed = parse_file(hostile / "span-bomb-0.html")
    [grid] = parsed.tables
    assert (grid.n_rows, grid.n_cols) == (2, 2)
    assert [[c.text for c in row] for row in grid.cells] == [["h", "h"], ["a", "b"]]
    assert parsed.warnings == ["table 0: rowspan/colspan over 1000 capped"]
    assert grid.title == "h"  # one cell across the full width at the top
    [unit] = parsed.units
    assert unit.completed_text == "span-bomb-0 > h | a | b"


def test_malformed_spans_are_read_leniently(hostile):
    parsed = parse_file(hostile / "malformed-spans-0.html")
    [grid] = parsed.tables
    assert [[c.text for c in row] for row in grid.cells] == [
        ["Year", "Title", "Role"], ["2001", "Night Train", "Night Train"],
        ["2003", "River", "Lead"]]
    assert grid.cells[1][1] is grid.cells[1][2]  # colspan="2;" -> 2
    assert grid.cells[2][0].origin == (2, 0)  # rowspan="abc" -> 1
    assert [u.completed_text for u in parsed.units] == [
        "malformed-spans-0 | Year: 2001 | Title / Role: Night Train",
        "malformed-spans-0 | Year: 2003 | Title: River | Role: Lead"]


def test_latin1_without_charset_is_detected(hostile):
    parsed = parse_file(hostile / "latin1-no-charset-0.html")
    assert parsed.document.title == "Café Müller"
    assert parsed.pages[0].text == "Café Müller\nGrüße aus Köln, 1984."
    assert parsed.warnings == ["no usable charset declared; decoded as windows-1252"]


def test_utf16_with_bom(hostile):
    parsed = parse_file(hostile / "utf16-bom-0.html")
    assert [u.text for u in parsed.units] == ["Tromsø harbour, 1962"]


@pytest.mark.timeout(60)
def test_huge_paragraph_is_split_within_limits(hostile):
    data = gzip.decompress((hostile / "huge-paragraph-0.html.gz").read_bytes())
    parsed = parse_file(hostile / "huge-paragraph-0.html", data)
    limit = SETTINGS.max_unit_chars
    assert len(parsed.units) > 2000
    assert all(len(u.text) <= limit and len(u.completed_text) <= limit for u in parsed.units)
    assert {u.kind for u in parsed.units} == {"paragraph"}
    words = sum(len(u.text.split()) for u in parsed.units)
    assert words == data.count(b"word")  # nothing lost at the cuts
    spans = [(s.provenance.char_start, s.provenance.char_end) for s in parsed.supports]
    assert spans[0][0] == 0 and all(a[1] < b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.timeout(60)
def test_long_token_is_cut_to_unit_size(hostile):
    parsed = parse_file(hostile / "long-line-0.html")
    limit = SETTINGS.max_unit_chars
    assert all(len(u.text) <= limit for u in parsed.units)
    assert sum(len(u.text) for u in parsed.units) == 8_000_000
    assert set("".join(u.text for u in parsed.units[:3])) == {"x"}


@pytest.mark.timeout(120)
def test_sixty_thousand_tables_are_read_as_text(hostile):
    parsed = parse_file(hostile / "many-tables-0.html")
    # one-cell tables are layout, read as text: one unit each, no grids
    assert len(parsed.units) == 60_000 and parsed.tables == []
    assert parsed.units[59_999].text == "59999"


@pytest.mark.parametrize("name", ["entity-bomb-0.xhtml", "xxe-0.xhtml"])
def test_xhtml_entities_are_never_expanded(hostile, name):
    parsed = parse_file(hostile / name)
    text = all_text(parsed)
    assert "lollol" not in text and "root:" not in text
    assert [u.text for u in parsed.units] == ["&lol9;" if "bomb" in name else "&x;"]
    assert len(text) < 200


def test_odd_file_name(hostile):
    path = hostile / "odd name é中.html"
    parsed = parse(path)
    assert parsed.document.title == "Name test"
    assert parsed.document.uri.endswith("odd name é中.html")
    assert [u.completed_text for u in parsed.units] == [
        "Name test | Unicode file name with spaces."]


def test_html_with_a_pdf_name_is_ingested_as_html(hostile):
    parsed = parse(hostile / "html-named-pdf-0.pdf")
    assert parsed.document.media_type == "text/html"
    assert any(u.kind == "row" for u in parsed.units)

