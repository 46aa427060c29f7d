"""OCR of an image-only page with the real Tesseract (PILAR App. B.3): lines
with bboxes in points, headings and section paths from OCR'd font sizes,
and a ruled table rebuilt from the rules in the scan."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from pilar.ingest import parse
from pilar.ingest.ocr import plan_render
from pilar.model import ParsedDocument

PDFS = Path(__file__).parent / "fixtures" / "pdf"


@pytest.fixture(scope="module")
def scan() -> ParsedDocument:
    """Page 1 of "Child Maurice" rasterised at 150 dpi, no text layer."""
    assert pymupdf.open(PDFS / "204-268-scan-p1.pdf")[0].get_text() == ""
    return parse(PDFS / "204-268-scan-p1.pdf")


def test_ocr_reads_known_words(scan):
    text = scan.pages[0].text
    for phrase in ("Child Maurice or Gil Morrice is Child ballad 83.",
                   "The hero sends tokens to his lady", "Ewan MacColl",
                   "James Madison Carpenter Collection"):
        assert phrase in text
    assert "|" not in text.split("\n")[0]  # rules are taken out before OCR
    assert all(s.provenance.page == 1 for s in scan.supports)


def test_ocr_lines_have_bboxes_in_points(scan):
    page = scan.pages[0]
    assert (page.width, page.height) == pytest.approx((595.2, 841.92), abs=0.5)
    para = next(s for s in scan.supports if s.text.startswith("Child Maurice or Gil"))
    x0, y0, x1, y1 = para.provenance.bbox
    # where the born-digital PDF has it: (50.7, 94.7, 332.0, 107.6)
    assert x0 == pytest.approx(50.7, abs=3) and y0 == pytest.approx(95, abs=4)
    assert x1 == pytest.approx(332, abs=4) and y1 == pytest.approx(106, abs=4)
    for s in scan.supports:
        b = s.provenance.bbox
        assert 0 <= b[0] < b[2] <= page.width and 0 <= b[1] < b[3] <= page.height


def test_ocr_headings_give_section_paths(scan):
    headings = [(s.text, s.provenance.section_path) for s in scan.supports
                if s.kind == "heading"]
    assert headings == [
        ("Child Maurice", ("Child Maurice",)),
        ("Contents", ("Child Maurice", "Contents")),
        ("Synopsis", ("Child Maurice", "Synopsis")),
        ("Adaptations", ("Child Maurice", "Adaptations")),
        ("Recordings", ("Child Maurice", "Adaptations", "Recordings"))]
    assert scan.document.title == "Child Maurice"


def test_ocr_table_rows_with_headers(scan):
    grid = scan.tables[0]
    assert grid.header_paths == [("Album/Single",), ("Performer",), ("Year",), ("Variant",),
                                 ("Notes",)]
    rows = [u for u in scan.units if u.kind == "row"]
    assert len(rows) == 7
    assert rows[1].completed_text == (
        "Child Maurice > Adaptations > Recordings | Album/Single: Blood and Roses Vol 2 | "
        "Performer: Ewan MacColl | Year: 1981 | Variant: Child Maurice | Notes: This is a "
        "different version from MacColl's 1956 recording.")


def test_render_plan_caps_pixels():
    plan = plan_render(pymupdf.Rect(0, 0, 14400, 14400), 200, 40_000_000, "page 1")
    assert plan.skip and "render limit" in plan.warning
    plan = plan_render(pymupdf.Rect(0, 0, 3000, 3000), 200, 40_000_000, "page 1")
    assert not plan.skip and plan.dpi == 151 and "rendered at 151 dpi" in plan.warning
    assert plan.width_px * plan.height_px <= 40_000_000
    plan = plan_render(pymupdf.Rect(0, 0, 595, 842), 200, 40_000_000, "page 1")
    assert plan.dpi == 200 and plan.warning is None
