"""Every hostile PDF of ../shared/data/hostile gives a clear one-line reason or
the expected result (hostile/index.jsonl), never a crash or a hang."""

from __future__ import annotations

import json

import pytest

from pilar.config import Settings
from pilar.errors import IngestError, UnsupportedTypeError
from pilar.ingest import parse
from pilar.ingest.sniff import HTML


def _expect_error(path, pattern: str, cls=IngestError) -> str:
    with pytest.raises(cls) as info:
        parse(path)
    reason = str(info.value)
    assert "\n" not in reason and pattern in reason.lower(), reason
    assert info.value.path == str(path.resolve())
    return reason


def test_index_lists_the_pdfs_tested_here(hostile):
    names = {json.loads(line)["file"] for line in (hostile / "index.jsonl").open()}
    pdfs = {n for n in names if n.endswith(".pdf")}
    assert pdfs == {p.name for p in hostile.glob("*.pdf")} and len(pdfs) == 14


def test_empty_file(hostile):
    _expect_error(hostile / "empty-0.pdf", "empty file")


def test_truncated(hostile):
    reason = _expect_error(hostile / "truncated-0.pdf", "corrupt pdf")
    assert "truncated" in reason


def test_broken_xref_is_repaired(hostile):
    doc = parse(hostile / "broken-xref-0.pdf")
    assert doc.document.n_pages == 13 and doc.document.title == "Bad Boy Records"
    assert any("repaired" in w for w in doc.warnings)
    assert sum(u.kind == "row" for u in doc.units) > 20


def test_encrypted_user_password(hostile):
    reason = _expect_error(hostile / "encrypted-user-0.pdf", "encrypted pdf")
    assert "password" in reason
    with pytest.raises(IngestError, match="does not open it"):
        parse(hostile / "encrypted-user-0.pdf", settings=Settings(pdf_password="wrong"))


def test_encrypted_owner_only_ingests(hostile):
    doc = parse(hostile / "encrypted-owner-only-0.pdf")
    assert doc.document.n_pages == 2
    assert doc.pages[0].text.startswith("river alpha river season alpha engine")


@pytest.mark.parametrize("name,what", [("png-named-pdf-0.pdf", "png image"),
                                       ("docx-named-pdf-0.pdf", "zip container")])
def test_other_types_named_pdf(hostile, name, what):
    _expect_error(hostile / name, what, UnsupportedTypeError)


def test_html_named_pdf_is_read_as_html(hostile):
    doc = parse(hostile / "html-named-pdf-0.pdf")
    assert doc.document.media_type == HTML and doc.units


def test_zero_pages(hostile):
    _expect_error(hostile / "zero-pages-0.pdf", "no pages")


@pytest.mark.timeout(120)  # a hang guard; speed is measured in bench/pdf_parse.py
def test_many_blank_pages_read_empty(hostile):
    doc = parse(hostile / "many-blank-pages-0.pdf")
    assert doc.document.n_pages == len(doc.pages) >= 1500
    assert doc.units == [] and doc.supports == []
    assert [p.number for p in doc.pages[:3]] == [1, 2, 3]


@pytest.mark.timeout(60)  # a hang guard; speed is measured in bench/pdf_parse.py
def test_giant_page_not_rendered(hostile):
    doc = parse(hostile / "giant-page-0.pdf")
    assert doc.pages[0].width == 14400 and doc.units == []
    assert any("render limit" in w for w in doc.warnings)


@pytest.mark.timeout(180)  # a hang guard; speed is measured in bench/pdf_parse.py
def test_image_bomb_read_downscaled(hostile):
    doc = parse(hostile / "image-bomb-0.pdf")
    assert any("12000 x 12000 px" in w and "downscaled" in w for w in doc.warnings)
    assert len(doc.pages) == 1


def test_rotated_pages_in_reading_order(hostile):
    doc = parse(hostile / "rotated-0.pdf")
    page = doc.pages[0]
    assert (page.width, page.height) == (842.0, 595.0)  # /Rotate 90: shown landscape
    assert page.text.startswith("1984 alpha alpha season delta 1984 river delta delta delta")
    (para,) = [s for s in doc.supports if s.provenance.page == 1]
    x0, y0, x1, y1 = para.provenance.bbox
    # the text runs top to bottom along the right edge of the page as shown
    assert 600 < x0 < x1 <= 842 and 0 <= y0 < y1 <= 595 and y1 - y0 > x1 - x0


def test_attachment_and_javascript_ignored(hostile):
    doc = parse(hostile / "attachment-and-js-link-0.pdf")
    assert doc.pages[0].text.startswith("Oslo delta engine delta river alpha")
    assert any("embedded file" in w for w in doc.warnings)
    assert any("javascript" in w for w in doc.warnings)
    for s in doc.supports:
        assert "javascript:" not in s.text and "alert(" not in s.text
