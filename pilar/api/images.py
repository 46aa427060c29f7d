"""Page images: a stored PDF page rendered to PNG with support boxes drawn
(PyMuPDF). Boxes are in PDF points, origin top-left, as provenance stores them."""

from __future__ import annotations

from pilar.model import BBox

HIGHLIGHT = (0.95, 0.55, 0.0)
"""Stroke colour of highlighted boxes (RGB, 0-1)."""


def render_page(pdf: bytes, number: int, boxes: list[BBox], dpi: int = 110) -> bytes:
    """PNG bytes of page ``number`` (1-based) of the PDF ``pdf``, with
    ``boxes`` outlined and lightly filled. Raises ``ValueError`` when the
    bytes are not a readable PDF or have no such page."""
    import pymupdf

    try:
        doc = pymupdf.open(stream=pdf, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - any open failure: not a readable PDF
        raise ValueError(f"not a readable PDF: {type(exc).__name__}") from None
    with doc:
        if not doc.is_pdf or not 1 <= number <= doc.page_count:
            raise ValueError(f"the PDF has no page {number}")
        page = doc[number - 1]
        for box in boxes:
            rect = pymupdf.Rect(*box)
            page.draw_rect(rect, color=HIGHLIGHT, fill=HIGHLIGHT, fill_opacity=0.18, width=1.5,
                           overlay=True)
        return page.get_pixmap(dpi=dpi).tobytes("png")
