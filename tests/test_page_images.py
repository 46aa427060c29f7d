"""Page images of the served API (pilar.api.images) on real PDF files:
rendered once per (document, page, dpi) and then served from a byte-capped
LRU cache (a source removed after the first render still serves it; one
never rendered does not), highlights drawn on the cached render where the
PDF's own drawing puts them (rotated pages too), and the pixel caps of
ingest applied (a lower dpi, or a refusal)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from PIL import Image

from pilar.api.images import HIGHLIGHT, PageImages, highlight, render_page
from pilar.config import Settings
from pilar.model import Document

BOX = (40.0, 30.0, 120.0, 80.0)


def _pdf(path: Path, rotations=(0, 90), size=(300, 200), image_px: int = 0) -> Document:
    """A PDF of one page per rotation written to ``path`` (with a grey
    ``image_px`` square raster image on each page when given), as the store
    would record it."""
    doc = pymupdf.open()
    for rotation in rotations:
        page = doc.new_page(width=size[0], height=size[1])
        page.insert_text((20, 50), "hello", fontsize=20)
        if image_px:
            pix = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, image_px, image_px), False)
            pix.clear_with(128)
            page.insert_image(pymupdf.Rect(150, 20, 250, 120), pixmap=pix)
        page.set_rotation(rotation)
    data = doc.tobytes()
    path.write_bytes(data)
    return Document(doc_id=hashlib.sha256(data).hexdigest()[:16], uri=str(path), title="t",
                    media_type="application/pdf", sha256=hashlib.sha256(data).hexdigest(),
                    n_pages=len(rotations))


def _orange(png: bytes) -> tuple[int, int, int, int]:
    """Bounding box (pixels) of the highlight's outline colour in ``png``."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    mask = (np.abs(rgb - np.array(HIGHLIGHT)) < 12).all(axis=2)
    ys, xs = np.nonzero(mask)
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def test_rendered_once_then_served_from_the_cache(tmp_path):
    doc = _pdf(tmp_path / "a.pdf")
    images = PageImages(Settings(home=tmp_path))
    first = images.render(doc, 1, 110)
    assert Image.open(io.BytesIO(first.png)).size == (459, 306)  # 300 x 200 pt at 110 dpi, rounded up
    Path(doc.uri).unlink()  # the source is gone: only the cache can answer now
    assert images.render(doc, 1, 110) is first
    with pytest.raises(ValueError, match=f"the source of {doc.doc_id} is no longer on the server"):
        images.render(doc, 1, 144)  # never rendered at this dpi


def test_the_cache_keeps_at_most_its_bytes(tmp_path):
    doc = _pdf(tmp_path / "a.pdf")
    one = len(render_page(Path(doc.uri).read_bytes(), 1, 110, 10**9, 10**9).png)
    images = PageImages(Settings(home=tmp_path, api_image_cache_bytes=int(one * 1.5)))
    images.render(doc, 1, 110)
    images.render(doc, 2, 110)  # the first page's render is pushed out
    assert images.cache.currsize <= one * 1.5 and len(images.cache) == 1
    Path(doc.uri).unlink()
    images.render(doc, 2, 110)
    with pytest.raises(ValueError, match="no longer on the server"):
        images.render(doc, 1, 110)
    off = PageImages(Settings(home=tmp_path, api_image_cache_bytes=0))
    with pytest.raises(ValueError, match="no longer on the server"):
        off.render(doc, 2, 110)


def test_a_changed_source_is_not_rendered(tmp_path):
    doc = _pdf(tmp_path / "a.pdf")
    _pdf(tmp_path / "a.pdf", rotations=(0, 0, 0))
    with pytest.raises(ValueError, match="changed since it was ingested"):
        PageImages(Settings(home=tmp_path)).render(doc, 1, 110)


@pytest.mark.parametrize("number", [1, 2, 3])
def test_highlights_land_where_the_pdf_would_draw_them(tmp_path, number):
    """The box drawn on the cached render covers the pixels PyMuPDF's own
    drawing of it in the page (the renderer before the cache) covered,
    to within a pixel, on upright and rotated pages."""
    doc = _pdf(tmp_path / "a.pdf", rotations=(0, 90, 270))
    data = Path(doc.uri).read_bytes()
    drawn = pymupdf.open(stream=data, filetype="pdf")
    page = drawn[number - 1]
    page.draw_rect(pymupdf.Rect(*BOX), color=tuple(c / 255 for c in HIGHLIGHT), width=1.5,
                   overlay=True)
    expected = _orange(page.get_pixmap(dpi=110).tobytes("png"))
    render = render_page(data, number, 110, 10**9, 10**9)
    got = _orange(highlight(render, [BOX]))
    assert max(abs(a - b) for a, b in zip(got, expected)) <= 1, (got, expected)
    assert highlight(render, []) is render.png


def test_pixel_caps_of_ingest_apply(tmp_path):
    doc = _pdf(tmp_path / "a.pdf", rotations=(0,), size=(720, 720), image_px=40)
    data = Path(doc.uri).read_bytes()
    # 10 x 10 inches: 1 MP at 100 dpi, 1.21 MP at 110; the cap lowers the dpi to 100
    lowered = render_page(data, 1, 110, 1_000_000, 10**9)
    assert lowered.dpi == 100 and Image.open(io.BytesIO(lowered.png)).size == (1000, 1000)
    with pytest.raises(ValueError, match="over the 0 MP render limit even at 50 dpi"):
        render_page(data, 1, 110, 240_000, 10**9)  # 49 dpi would fit: not rendered
    with pytest.raises(ValueError, match="page 1 holds an image of 40 x 40 px, over the 0 MP"):
        render_page(data, 1, 110, 10**9, 1_599)
    images = PageImages(Settings(home=tmp_path, pdf_max_image_pixels=1_599))
    with pytest.raises(ValueError, match=f"the source of {doc.doc_id} cannot be rendered: page 1 "
                                         "holds an image of 40 x 40 px"):
        images.render(doc, 1, 110)
    with pytest.raises(ValueError, match="the PDF has no page 2"):
        render_page(data, 2, 110, 10**9, 10**9)
