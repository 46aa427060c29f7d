"""Page images: a stored PDF page rendered to PNG (PyMuPDF) once per
(document, page, dpi) and kept in a byte-capped LRU cache (cachetools); the
support boxes a request highlights are drawn on the cached render (Pillow),
so a highlight costs a PNG decode and encode, never a render. Renders obey
the pixel caps of ingest: ``PILAR_PDF_MAX_RENDER_PIXELS`` lowers the
resolution (a page still too large at :data:`~pilar.ingest.ocr.MIN_DPI` is
not rendered) and a page holding a raster image over
``PILAR_PDF_MAX_IMAGE_PIXELS`` is not rendered. Boxes are in PDF points,
origin top-left, as provenance stores them."""

from __future__ import annotations

import hashlib
import io
import threading
from dataclasses import dataclass
from pathlib import Path

from pilar.config import Settings
from pilar.model import BBox, Document

HIGHLIGHT = (242, 140, 0)
"""Stroke colour of highlighted boxes (RGB, 0-255)."""
FILL_ALPHA = 46
"""Opacity of the boxes' fill (0-255: 18%)."""
STROKE_POINTS = 1.5
"""Width of the boxes' outline in PDF points."""


@dataclass(frozen=True, slots=True)
class Render:
    """One rendered page: ``png`` bytes, the resolution it was rendered at
    (``dpi``, lower than asked when the pixel cap applied) and ``matrix``,
    the 6 numbers of the PyMuPDF matrix from page points to its pixels."""

    png: bytes
    dpi: float
    matrix: tuple[float, float, float, float, float, float]


def render_page(pdf: bytes, number: int, dpi: int, max_pixels: int,
                max_image_pixels: int) -> Render:
    """Page ``number`` (1-based) of the PDF ``pdf`` at ``dpi``, under the
    pixel caps (``max_pixels`` of the render, ``max_image_pixels`` of any
    raster image the page draws). Raises ``ValueError`` (one line) when the
    bytes are not a readable PDF, have no such page, or the page is over a cap."""
    import pymupdf

    from pilar.ingest.ocr import plan_render

    try:
        doc = pymupdf.open(stream=pdf, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - any open failure: not a readable PDF
        raise ValueError(f"not a readable PDF: {type(exc).__name__}") from None
    with doc:
        if not doc.is_pdf or not 1 <= number <= doc.page_count:
            raise ValueError(f"the PDF has no page {number}")
        page = doc[number - 1]
        for image in page.get_images(full=True):
            width, height = image[2], image[3]
            if width * height > max_image_pixels:
                raise ValueError(f"page {number} holds an image of {width} x {height} px, over "
                                 f"the {max_image_pixels / 1e6:.0f} MP image limit")
        plan = plan_render(page.rect, dpi, max_pixels, f"page {number}")
        if plan.skip:
            raise ValueError(plan.warning)
        zoom = int(plan.dpi) / 72.0
        matrix = pymupdf.Matrix(zoom, zoom)
        png = page.get_pixmap(matrix=matrix, alpha=False).tobytes("png")
        return Render(png, int(plan.dpi), tuple(page.rotation_matrix * matrix))


def highlight(render: Render, boxes: list[BBox]) -> bytes:
    """PNG bytes of ``render`` with ``boxes`` (page points) outlined and
    lightly filled; the render itself when there are none."""
    if not boxes:
        return render.png
    import pymupdf
    from PIL import Image, ImageDraw

    base = Image.open(io.BytesIO(render.png)).convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width = max(1, round(STROKE_POINTS * render.dpi / 72.0))
    for box in boxes:
        rect = pymupdf.Rect(*box) * pymupdf.Matrix(*render.matrix)
        rect.normalize()
        draw.rectangle((rect.x0, rect.y0, rect.x1, rect.y1), fill=(*HIGHLIGHT, FILL_ALPHA),
                       outline=(*HIGHLIGHT, 255), width=width)
    out = io.BytesIO()
    Image.alpha_composite(base, overlay).convert("RGB").save(out, "PNG")
    return out.getvalue()


class PageImages:
    """Renders of stored PDF pages, each made once per (document, its
    sha256, page, dpi) and kept while the cache's PNG bytes stay under
    ``PILAR_API_IMAGE_CACHE_BYTES`` (least recently used first out; 0 = no
    cache). Concurrent requests for a page not yet cached wait for one render."""

    def __init__(self, settings: Settings):
        from cachetools import LRUCache, cached

        self.settings = settings
        self.cache = LRUCache(maxsize=settings.api_image_cache_bytes,
                              getsizeof=lambda r: len(r.png))
        lock = threading.Lock()
        self._render = cached(self.cache, key=lambda doc, number, dpi: (
            doc.doc_id, doc.sha256, number, dpi), lock=lock,
            condition=threading.Condition(lock))(self._from_source)

    def render(self, doc: Document, number: int, dpi: int) -> Render:
        """The render of page ``number`` of ``doc`` at ``dpi`` (cached).
        Raises ``ValueError`` (one line) when the source is no longer on the
        server, changed since it was ingested, or cannot be rendered."""
        return self._render(doc, number, dpi)

    def _from_source(self, doc: Document, number: int, dpi: int) -> Render:
        try:
            data = Path(doc.uri).read_bytes()
        except OSError:
            raise ValueError(f"the source of {doc.doc_id} is no longer on the server") from None
        if hashlib.sha256(data).hexdigest() != doc.sha256:
            raise ValueError(f"the source of {doc.doc_id} changed since it was ingested")
        try:
            return render_page(data, number, dpi, self.settings.pdf_max_render_pixels,
                               self.settings.pdf_max_image_pixels)
        except ValueError as exc:
            raise ValueError(f"the source of {doc.doc_id} cannot be rendered: {exc}") from None
