"""HTML decoding, main-content extraction and section paths
(pilar.ingest.html), plus a grid-fidelity sample on real WTQ pages."""

from __future__ import annotations

import csv
import json

import pytest

from pilar.config import Settings
from pilar.errors import IngestError
from pilar.ingest import new_document
from pilar.ingest.footnotes import printed
from pilar.ingest.html import parse_html
from pilar.ingest.html_cells import parse_span
from pilar.ingest.html_decode import decode_html

SETTINGS = Settings()


def parse_str(html: str | bytes, name: str = "page") -> object:
    data = html.encode("utf-8") if isinstance(html, str) else html
    return parse_html(data, new_document(data, f"/x/{name}.html", "text/html"), SETTINGS)


def texts(parsed) -> list[tuple[str, str]]:
    return [(u.kind, u.completed_text) for u in parsed.units]


def test_decoding_order():
    assert decode_html("<p>é</p>".encode("utf-8")) == ("<p>é</p>".encode("utf-8"), "utf-8", False)
    assert decode_html(b"\xef\xbb\xbf<p>x</p>") == (b"<p>x</p>", "utf-8", False)
    utf16 = "\ufeff<p>ø</p>".encode("utf-16-le")
    assert decode_html(utf16) == ("<p>ø</p>".encode("utf-8"), "utf-16-le", False)
    declared = '<meta charset="iso-8859-1"><p>caf\xe9</p>'.encode("latin-1")
    assert decode_html(declared)[0].decode("utf-8").endswith("café</p>")
    koi8 = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>Мир</p>'
    assert decode_html(koi8.encode("koi8-r"))[:2] == (koi8.encode("utf-8"), "koi8-r")
    # bytes cp1252 leaves undefined survive as Latin-1 characters
    out, enc, guessed = decode_html(b"<p>\x81\x93ok\x94</p>")
    assert out.decode("utf-8") == "<p>\x81\u201cok\u201d</p>"
    assert (enc, guessed) == ("windows-1252", True)


def test_parse_span_is_lenient():
    values = ("2", "2;", " 3 ", "abc", "", None, "0")
    assert [parse_span(v) for v in values] == [2, 2, 3, 1, 1, 1, 0]


def test_title_and_section_paths():
    parsed = parse_str("""<html><head><title>Page T</title><script>x()</script></head><body>
      <h1>Page T</h1><p>Lead.</p>
      <h2>History<span class="mw-editsection">[edit]</span></h2><p>Old.</p>
      <h3>Early</h3><ul><li>One</li><li>Two <ul><li>Two.a</li></ul></li></ul>
      <h2>Later</h2><dl><dt>Term</dt><dd>Meaning</dd><dd>Second</dd></dl>
      <dl><dt>Lonely</dt></dl>
      <div class="thumb"><div class="thumbcaption">A caption.</div></div>
      <figure><figcaption>Fig 1.</figcaption></figure>
    </body></html>""")
    assert parsed.document.title == "Page T"
    assert texts(parsed) == [
        ("paragraph", "Page T | Lead."),
        ("paragraph", "Page T > History | Old."),
        ("list_item", "Page T > History > Early | One"),
        ("list_item", "Page T > History > Early | Two"),
        ("list_item", "Page T > History > Early | Two.a"),
        ("definition", "Page T > Later | Term: Meaning"),
        ("definition", "Page T > Later | Term: Second"),
        ("definition", "Page T > Later | Lonely"),
        ("caption", "Page T > Later | A caption."),
        ("caption", "Page T > Later | Fig 1."),
    ]
    assert [s.text for s in parsed.supports if s.kind == "heading"] == [
        "Page T", "History", "Early", "Later"]
    assert parsed.pages[0].text.splitlines()[:4] == ["Page T", "Lead.", "History", "Old."]


def test_boilerplate_is_dropped_and_collapsed_content_kept():
    parsed = parse_str("""<body><p>Fact<sup class="reference"><a>[1]</a></sup> here.</p>
      <nav><p>Menu</p></nav>
      <div style="display: none"><p>Hidden</p></div>
      <div class="NavFrame"><div class="NavHead">Squad</div>
        <div class="NavContent" style="display:none"><p>Shown when expanded.</p></div></div>
      <table class="navbox"><tr><th>Links</th><td><a>A</a> · <a>B</a></td></tr>
        <tr><th>More</th><td><a>C</a></td></tr></table>
      <table class="navbox"><tr><td><table class="wikitable"><tr><th>K</th><th>V</th></tr>
        <tr><td>k1</td><td>v1</td></tr></table></td></tr></table>
      <div class="reflist"><ol class="references"><li>Cite</li></ol></div>
      <table class="wikitable"><tr><th>Name</th><th>Nat.</th></tr>
        <tr><td><span class="sortkey">Smith, Ann</span>Ann Smith</td>
            <td><span class="flagicon"><img alt=""></span>
                <a><span style="display:none">Georgia</span></a></td></tr>
      </table></body>""")
    assert [u.completed_text for u in parsed.units] == [
        "page | Fact here.",
        "page | Squad",
        "page | Shown when expanded.",
        "page | K: k1 | V: v1",
        "page | Name: Ann Smith | Nat.: Georgia",
    ]
    assert [t.wikitable_index for t in parsed.tables] == [0, 1]
    text = parsed.pages[0].text
    assert "Menu" not in text and "Hidden" not in text and "Cite" not in text


def test_layout_tables_read_as_flow_and_cells_keep_line_breaks():
    parsed = parse_str("""<body><table><tr><td><p>Left column.</p></td>
      <td><ul><li>Right item</li></ul></td></tr></table>
      <table class="wikitable"><tr><th>Who</th><th>Roles</th></tr>
        <tr><td>Ann</td><td>Singer<br>actress<ul><li>author</li></ul></td></tr></table></body>""")
    assert texts(parsed) == [
        ("paragraph", "page | Left column."),
        ("list_item", "page | Right item"),
        ("row", "page | Who: Ann | Roles: Singer / actress / author"),
    ]
    [grid] = parsed.tables
    assert grid.cells[1][1].text == "Singer\nactress\nauthor"


def test_caption_becomes_a_caption_unit_and_table_context():
    parsed = parse_str("""<body><h2>Results</h2><table class="wikitable">
      <caption>Men's 100 m</caption><tr><th>Rank</th><th>Athlete</th></tr>
      <tr><td>1</td><td>Bolt</td></tr></table></body>""")
    assert texts(parsed) == [
        ("caption", "Results | Men's 100 m"),  # the page opens with its heading: its title
        ("row", "Results > Men's 100 m | Rank: 1 | Athlete: Bolt"),
    ]


def test_errors_are_one_line():
    with pytest.raises(IngestError, match="^empty file$"):
        parse_str(b"   \n")
    with pytest.raises(IngestError, match="no text content"):
        parse_str("<html><body><img src=x><br></body></html>")
    small = Settings(max_html_bytes=100)
    data = b"<p>" + b"x" * 200 + b"</p>"
    with pytest.raises(IngestError, match="over the"):
        parse_html(data, new_document(data, "x", "text/html"), small)


def test_gold_tables_of_a_wtq_sample(wtq_pages):
    """The check of bench/html_grid_fidelity.py on the first 40 dev pages."""
    base = wtq_pages.parent
    metas = [json.loads(line) for line in (base / "pages.jsonl").open(encoding="utf-8")][:40]
    rows = found = 0
    for meta in metas:
        data = (base / meta["html"]).read_bytes()
        parsed = parse_html(data, new_document(data, meta["page_id"], "text/html"), SETTINGS)
        grid = next(t for t in parsed.tables if t.wikitable_index == meta["table_index"])
        units = [" ".join(" | ".join((*u.cells, *printed(grid.cells[u.row_index]))).lower().split())
                 for u in parsed.units if u.table_index == grid.table_index]
        with (base / meta["csv"]).open(encoding="utf-8", newline="") as f:
            gold = list(csv.reader(f, escapechar="\\", doublequote=False))[1:]
        for row in gold:
            values = [" ".join(v.lower().split()) for v in row if v.strip()]
            rows += 1
            found += any(all(v in u for v in values) for u in units)
    assert rows > 1000 and found == rows
