"""Per-page caps of a PDF, checked before a page's records are built.

What a page costs to parse is set by what its content streams hold, not by
the file's size: the issue's bomb is a 3.6 MB file whose one page inflates
to 1 GiB of ``BT (AAAA...) Tj ET`` (a 58 KB version took 41 s and 2.1 GB).
As the pixel caps keep a page from being rendered too large
(``pdf_max_render_pixels``), these keep it from being read too large:

- :func:`check_content`: the bytes the page's content streams (its
  ``/Contents`` and the form XObjects it uses, each once) inflate to,
  counted by decoding them through MuPDF's own filters in chunks that are
  discarded (``fz_skip``), stopping one byte past
  ``settings.pdf_max_page_content_bytes``: no stream is ever held whole;
- :func:`check_chars`: the characters of the text layer MuPDF read (or of
  the OCR text), before lines, blocks, tables and units are built from it;
- :class:`RecordCaps`: the units and supports the page yields, as each
  block is emitted.

Over a cap the file fails with :class:`~pilar.errors.IngestError` naming
the page, the cap and its setting. A page past these caps (40 times the
largest content stream and 19 times the most characters of any page in our
corpora) is an attack or a drawing that no text search can use; skipping it
would store a silently incomplete document, so the whole file is refused
and the user may raise the setting.
"""

from __future__ import annotations

import pymupdf
import pymupdf.mupdf as mupdf

from pilar.config import Settings
from pilar.errors import IngestError
from pilar.ingest.limits import human_bytes

SKIP_CHUNK = 16 * 1024 * 1024
"""Bytes decoded (and dropped) per ``fz_skip`` call."""


def content_bytes(pdf: pymupdf.Document, page: pymupdf.Page, limit: int) -> int:
    """Bytes the content streams of ``page`` (``/Contents`` and its form
    XObjects, each counted once) inflate to, counted up to ``limit + 1``
    (a larger page stops there). Memory stays at MuPDF's decode buffers.
    Raises what MuPDF raises for a stream it cannot decode."""
    doc = mupdf.pdf_document_from_fz_document(pdf.this)
    xrefs = dict.fromkeys([*page.get_contents(), *(x[0] for x in page.get_xobjects())])
    total = 0
    for xref in xrefs:
        stream = mupdf.pdf_open_stream_number(doc, xref)
        while total <= limit:
            n = mupdf.fz_skip(stream, min(SKIP_CHUNK, limit + 1 - total))
            if n == 0:
                break
            total += n
        if total > limit:
            break
    return total


def check_content(pdf: pymupdf.Document, page: pymupdf.Page, settings: Settings) -> None:
    """Raise :class:`IngestError` when the content streams of ``page``
    inflate past ``settings.pdf_max_page_content_bytes``."""
    limit = settings.pdf_max_page_content_bytes
    if content_bytes(pdf, page, limit) > limit:
        raise IngestError(f"page {page.number + 1}: its content streams inflate to over "
                          f"{human_bytes(limit)}, the per-page limit "
                          "(PILAR_PDF_MAX_PAGE_CONTENT_BYTES)")


def check_chars(number: int, chars: int, settings: Settings) -> None:
    """Raise :class:`IngestError` when page ``number`` (1-based) holds
    more than ``settings.pdf_max_page_chars`` characters."""
    if chars > settings.pdf_max_page_chars:
        raise IngestError(f"page {number}: {chars:,} characters of text, over the "
                          f"{settings.pdf_max_page_chars:,}-character per-page limit "
                          "(PILAR_PDF_MAX_PAGE_CHARS)")


def text_chars(textpage: pymupdf.TextPage) -> int:
    """Characters of a MuPDF text page (line breaks not counted)."""
    text = textpage.extractText()
    return len(text) - text.count("\n")


class RecordCaps:
    """Counts the units and supports one page yields; :meth:`check` raises
    :class:`IngestError` once either is over its cap
    (``settings.pdf_max_page_units``, ``settings.pdf_max_page_supports``)."""

    def __init__(self, settings: Settings):
        self.units = settings.pdf_max_page_units
        self.supports = settings.pdf_max_page_supports

    def check(self, number: int, units: int, supports: int) -> None:
        """``units`` and ``supports`` are page ``number``'s counts so far."""
        for what, n, cap, setting in (("evidence units", units, self.units, "UNITS"),
                                      ("supports", supports, self.supports, "SUPPORTS")):
            if n > cap:
                raise IngestError(f"page {number}: over {cap:,} {what}, the per-page limit "
                                  f"(PILAR_PDF_MAX_PAGE_{setting})")
