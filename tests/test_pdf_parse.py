"""PDF ingestion on small real PDFs (tests/fixtures/pdf): page records, section
paths (PILAR App. F.1), tables and row units, running headers, hyphenation,
sideways pages, tables continued across pages, figures."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from pilar.config import Settings
from pilar.ingest import parse
from pilar.ingest.pdf_figures import crop_path
from pilar.model import ParsedDocument

PDFS = Path(__file__).parent / "fixtures" / "pdf"


@pytest.fixture(scope="module")
def maurice() -> ParsedDocument:
    """"Child Maurice" printed from Wikipedia: two pages, h2/h3, one table."""
    return parse(PDFS / "204-268.pdf")


@pytest.fixture(scope="module")
def diesel() -> ParsedDocument:
    """Three pages of a Bureau Veritas rule book: two columns, justified."""
    return parse(PDFS / "diesel_engines-p1-3.pdf")


def _support(doc: ParsedDocument, text: str, kind: str | None = None):
    return next(s for s in doc.supports if s.text.startswith(text)
                and (kind is None or s.kind == kind))


def test_document_and_pages(maurice):
    doc = maurice.document
    assert doc.media_type == "application/pdf"
    assert doc.title == "Child Maurice"
    assert doc.n_pages == 2 and [p.number for p in maurice.pages] == [1, 2]
    page = maurice.pages[0]
    assert page.width == pytest.approx(594.96) and page.height == pytest.approx(841.92)
    assert page.text.startswith("Child Maurice\nChild Maurice or Gil Morrice is Child ballad 83.")
    assert "Ewan MacColl | 1956 | Gil Morice" in page.text
    assert maurice.warnings == []


def test_section_paths(maurice):
    assert _support(maurice, "Child Maurice or Gil").provenance.section_path == ("Child Maurice",)
    assert _support(maurice, "The hero sends tokens").provenance.section_path == (
        "Child Maurice", "Synopsis")
    heading = _support(maurice, "Recordings", "heading")
    assert heading.provenance.section_path == ("Child Maurice", "Adaptations", "Recordings")
    after_table = _support(maurice, "The James Madison Carpenter Collection")
    assert after_table.provenance.section_path == ("Child Maurice", "Adaptations", "Recordings")
    see_also = _support(maurice, "The White Fisher")
    assert see_also.kind == "list_item" and see_also.provenance.page == 2
    assert see_also.provenance.section_path == ("Child Maurice", "See also")


def test_table_grid_and_row_unit(maurice):
    assert len(maurice.tables) == 1
    grid = maurice.tables[0]
    assert grid.page == 1 and grid.n_rows == 8 and grid.n_cols == 5
    assert grid.header_paths == [("Album/Single",), ("Performer",), ("Year",), ("Variant",),
                                 ("Notes",)]
    assert grid.row_kinds[0] == "header" and set(grid.row_kinds[1:]) == {"body"}
    assert grid.section_path == ("Child Maurice", "Adaptations", "Recordings")
    unit = next(u for u in maurice.units if u.kind == "row" and u.row_index == 1)
    assert unit.completed_text == (
        "Child Maurice > Adaptations > Recordings | Album/Single: The English and Scottish "
        "Popular Ballads vol 3 | Performer: Ewan MacColl | Year: 1956 | Variant: Gil Morice | "
        "Notes: The earliest known professional recording (8'37\").")
    assert unit.headers == ("Album/Single", "Performer", "Year", "Variant", "Notes")
    support = next(s for s in maurice.supports if s.support_id == unit.support_id)
    prov = support.provenance
    assert support.kind == "row" and prov.table_index == 0 and prov.row == 1
    assert prov.cell_ids[0] == f"{maurice.document.doc_id}:t0:r1c0"
    cell = grid.cells[1][0]
    assert cell.text == "The English and Scottish Popular Ballads vol 3"
    x0, y0, x1, y1 = cell.bbox
    assert 50 < x0 < x1 < 210 and 470 < y0 < y1 < 510  # the cell's own box, points
    assert prov.bbox[1] == pytest.approx(y0) and prov.bbox[3] == pytest.approx(y1)


def test_bboxes_within_page_bounds(maurice, diesel):
    for doc in (maurice, diesel):
        sizes = {p.number: (p.width, p.height) for p in doc.pages}
        for s in doc.supports:
            x0, y0, x1, y1 = s.provenance.bbox
            w, h = sizes[s.provenance.page]
            assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h, s.support_id


def test_id_scheme(maurice):
    doc_id = maurice.document.doc_id
    for s in maurice.supports:
        page = s.provenance.page
        m = re.fullmatch(rf"{doc_id}:{page}:s(\d+)", s.support_id)
        assert m, s.support_id
        assert s.provenance.provenance_id == f"{doc_id}:{page}:p{m.group(1)}"
    ids = {s.support_id for s in maurice.supports}
    assert len(ids) == len(maurice.supports)
    for u in maurice.units:
        assert u.support_id in ids
        assert u.unit_id == u.support_id.replace(":s", ":u")


def test_running_headers_and_footers_removed(diesel):
    raw = pymupdf.open(PDFS / "diesel_engines-p1-3.pdf")
    assert "Bureau Veritas" in raw[0].get_text() and "Pt C, Ch 1, Sec 2" in raw[1].get_text()
    for page in diesel.pages:
        assert "Bureau Veritas" not in page.text
        assert "Pt C, Ch 1, Sec 2" not in page.text
        assert not re.search(rf"(?m)^{47 + page.number}$", page.text)  # page numbers 48-50
    for unit in diesel.units:
        assert "Bureau Veritas" not in unit.text


def test_hyphenated_words_joined(diesel):
    text = " ".join(p.text for p in diesel.pages)
    raw = " ".join(page.get_text() for page in pymupdf.open(PDFS / "diesel_engines-p1-3.pdf"))
    assert "con-\nstructed" in raw and "docu-\nmentation" in raw
    assert "to be designed, constructed, installed, tested and certified" in text
    assert "con- structed" not in text and "con-structed" not in text
    assert "documentation" in text


def test_numbered_section_paths(diesel):
    para = _support(diesel, "1.1.1 Diesel engines listed below")
    assert para.provenance.section_path == ("SECTION 2", "DIESEL ENGINES", "1 General",
                                            "1.1 Application")
    heading = _support(diesel, "1.2.2 Document flow for engine certificate", "heading")
    assert heading.provenance.section_path[-2:] == (
        "1.2 Documentation flow for diesel engine", "1.2.2 Document flow for engine certificate")


def test_rules_fallback_gives_the_same_sections():
    doc = parse(PDFS / "204-268.pdf", settings=Settings(pdf_layout="rules"))
    heading = _support(doc, "Recordings", "heading")
    assert heading.provenance.section_path == ("Child Maurice", "Adaptations", "Recordings")
    assert _support(doc, "The hero sends").provenance.section_path == ("Child Maurice",
                                                                       "Synopsis")
    assert sum(u.kind == "row" for u in doc.units) == 7


def test_sideways_table_read_upright():
    doc = parse(PDFS / "anticlockwise_table_1.pdf")
    page = doc.pages[0]
    assert (page.width, page.height) == (612.0, 792.0)  # reported as the page is shown
    kerala = next(u for u in doc.units if u.kind == "row" and u.cells[:1] == ("Kerala",))
    assert "State: Kerala" in kerala.completed_text
    assert kerala.cells[1:4] == ("5738", "6633", "8864")
    assert doc.tables[0].caption.startswith("Table 1 : STATE WISE COVERAGE PARTICULARS")
    x0, y0, x1, y1 = next(s for s in doc.supports if s.support_id == kerala.support_id
                          ).provenance.bbox
    assert y1 - y0 > 5 * (x1 - x0)  # a row of a sideways table is tall and thin on the page
    assert 0 <= x0 < x1 <= 612 and 0 <= y0 < y1 <= 792


def test_table_continued_on_next_page_keeps_its_header(shared_data):
    doc = parse(shared_data / "pdf" / "wiki" / "203-348.pdf")
    # one table over pages 1-17, its rows citing their own pages
    first = doc.tables[0]
    assert first.page == 1 and sorted(set(first.row_pages)) == list(range(1, 18))
    assert first.header_paths[:3] == [("Number",), ("Name",), ("Team",)]
    assert doc.tables[1].page == 17
    row = next(u for u in doc.units if u.kind == "row" and u.page == 2)
    assert row.table_index == 0
    assert row.completed_text.startswith(
        "List of National Basketball Association retired jersey numbers > List | Number: 17 |")
    assert "Team: Atlanta Hawks" in row.completed_text


def test_figure_crop_caption_and_ocr(tmp_path):
    """A page holding a raster figure (a render of the fixture's table) and
    its caption: the figure is linked to the caption, its text is OCR'd and
    its crop written under home/crops when asked for."""
    src = pymupdf.open(PDFS / "204-268.pdf")
    png = src[0].get_pixmap(dpi=150, clip=pymupdf.Rect(50, 455, 545, 670)).tobytes("png")
    out = pymupdf.open()
    page = out.new_page(width=595, height=842)
    page.insert_text((72, 90), "Recordings of the ballad are listed in the figure below.",
                     fontsize=11)
    page.insert_image(pymupdf.Rect(72, 110, 523, 306), stream=png)
    page.insert_text((72, 326), "Figure 1: Recordings of Child Maurice", fontsize=10)
    settings = Settings(home=tmp_path, pdf_figure_crops=True)
    doc = parse(out.tobytes(), settings=settings)
    fig = next(s for s in doc.supports if s.kind == "figure")
    assert fig.text.startswith("Figure 1: Recordings of Child Maurice\n")
    assert "Ewan MacColl" in fig.text or "MacColl" in fig.text
    x0, y0, x1, y1 = fig.provenance.bbox
    assert (x0, y0, x1, y1) == pytest.approx((72, 110, 523, 306), abs=1)
    caption = next(s for s in doc.supports if s.kind == "caption")
    assert caption.text == "Figure 1: Recordings of Child Maurice"
    crop = crop_path(tmp_path, fig.support_id)
    assert crop.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # without the setting nothing is written
    parse(out.tobytes(), settings=Settings(home=tmp_path / "other"))
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("name", ["204-268.pdf", "anticlockwise_table_1.pdf",
                                  "diesel_engines-p1-3.pdf"])
def test_table_finder_characters_as_pymupdf_builds_them(name):
    """pilar.ingest.pdf_chars.make_chars fills the finder's character list
    with PyMuPDF's own dicts, key for key and value for value: whole page
    and clipped, turned, and with a media box away from the origin."""
    import pymupdf.table as ptable

    from pilar.ingest import pdf_chars

    def chars(make, page, clip):
        ptable._CHARS_VAR.set([])
        make(page, clip=clip)
        return list(ptable.CHARS)

    doc = pymupdf.open(PDFS / name)
    small = pymupdf.TOOLS.set_small_glyph_heights()
    pymupdf.TOOLS.set_small_glyph_heights(True)  # as the finder runs it
    try:
        for page in doc:
            r = page.rect
            for clip in (None, pymupdf.Rect(r.x0 + 20, r.y0 + 40, r.x1 - 30, r.y1 / 2)):
                ours = chars(pdf_chars.make_chars, page, clip)
                assert ours and ours == chars(pdf_chars._PYMUPDF_MAKE_CHARS, page, clip)
        page = doc[0]
        page.set_rotation(90)
        r = page.mediabox
        page.set_mediabox(pymupdf.Rect(r.x0 + 13.37, r.y0 + 7.1, r.x1 - 3.3, r.y1 - 5.9))
        page = doc.reload_page(page)
        ours = chars(pdf_chars.make_chars, page, None)
        assert ours and ours == chars(pdf_chars._PYMUPDF_MAKE_CHARS, page, None)
    finally:
        pymupdf.TOOLS.set_small_glyph_heights(small)
    # in place only on the PyMuPDF versions this was checked on
    assert (ptable.make_chars is pdf_chars.make_chars) == (
        pymupdf.pymupdf_version in pdf_chars.VERIFIED)
