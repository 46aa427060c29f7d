"""One PDF page -> blocks, tables and figures (PILAR §3.1, App. B.3, E.1).

:func:`parse_page` reads a page into lightweight records and lets go of
the page: text lines with font facts (or OCR lines for pages without a
usable text layer), the layout analyser's regions, tables found in
candidate regions, figure regions, and the remaining lines grouped into
labelled blocks. Document-level passes (running headers, section paths)
run later in :mod:`pilar.ingest.pdf_structure`.

Frames. PyMuPDF reports text, drawings and images in the *unrotated* page
space. Each page is read in its *natural* frame, the page turned so that
its dominant text runs left to right (``/Rotate`` pages and sideways-printed
tables alike; pages without text keep their own ``/Rotate`` so scans are
OCR'd upright). Every bbox handed out is mapped back to the page as
displayed (``page.rect``, points, origin top-left), which is also the
``width``/``height`` reported for the page.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pymupdf
from pymupdf.table import page_rotation_reset, page_rotation_set0

from pilar.config import Settings
from pilar.ingest.ocr import OcrPage, ocr_page, ocr_region, plan_render
from pilar.ingest.pdf_caps import check_chars, text_chars
from pilar.ingest.pdf_figures import Figure, figure_regions, inner_text
from pilar.ingest.pdf_layout import (TEXT_FLAGS, Block, LayoutAnalyser, Line, bullet_marks,
                                     extract_lines, group_blocks, region_rank)
from pilar.ingest.pdf_tables import (find_tables, horizontal_rules, raster_tables,
                                     region_candidates, ruled_candidates)

_DIR_ANGLE = {(1, 0): 0, (0, -1): 90, (-1, 0): 180, (0, 1): 270}


@dataclass(slots=True)
class PageParse:
    """What one page yields: ``blocks`` in reading order (tables and
    figures included as blocks whose ``obj`` is a
    :class:`~pilar.ingest.pdf_tables.PageTable` / :class:`Figure`), the displayed size in points, and how it was read."""

    number: int
    width: float
    height: float
    blocks: list[Block] = field(default_factory=list)
    ocr: bool = False
    to_display: pymupdf.Matrix | None = None

    def display_bbox(self, bbox) -> tuple[float, float, float, float]:
        """``bbox`` (natural frame) -> displayed page space, clipped to it."""
        r = pymupdf.Rect(bbox)
        if self.to_display is not None:
            r = r * self.to_display
        r &= pymupdf.Rect(0, 0, self.width, self.height)
        return (round(r.x0, 2), round(r.y0, 2), round(r.x1, 2), round(r.y1, 2))


@dataclass(slots=True)
class DocState:
    """Per-document budget shared by the pages (figure OCR is capped)."""

    figures_ocrd: int = 0


def _natural_angle(blocks: list[dict]) -> int | None:
    """The rotation that makes the page's dominant text run left to right,
    from the characters per line direction of the text page's ``dict``
    ``blocks`` (``None`` without text)."""
    weight: dict[int, int] = {}
    for block in blocks:
        for line in block.get("lines", ()):
            d = (round(line["dir"][0]), round(line["dir"][1]))
            angle = _DIR_ANGLE.get(d)
            if angle is not None:
                n = sum(len(s["text"]) for s in line["spans"])
                weight[angle] = weight.get(angle, 0) + n
    return max(weight, key=weight.get) if weight else None


def _has_ink(drawings: list[dict]) -> bool:
    """Anything drawn that is not a white fill (Chromium paints every page
    with a white rectangle)."""
    for d in drawings:
        for colour in (d.get("color"), d.get("fill")):
            if colour is not None and len(colour) and min(colour) < 0.97:
                return True
    return False


def _transform_drawings(drawings: list[dict], m: pymupdf.Matrix) -> list[dict]:
    out = []
    for d in drawings:
        items = []
        for item in d["items"]:
            if item[0] == "l":
                items.append(("l", item[1] * m, item[2] * m))
            elif item[0] == "re":
                items.append(("re", pymupdf.Rect(item[1]) * m))
            elif item[0] == "qu":
                items.append(("re", item[1].rect * m))
        out.append({**d, "items": items, "rect": pymupdf.Rect(d["rect"]) * m})
    return out


def parse_page(page: pymupdf.Page, analyser: LayoutAnalyser | None, settings: Settings,
               warnings: list[str], state: DocState) -> PageParse:
    """Parse ``page`` (its document must be writable in memory: the page's
    rotation is changed to its natural frame).

    Steps: text lines and words; OCR when the text layer holds fewer than
    ``settings.ocr_min_chars`` characters and the page has an image or
    ink (truly blank pages are neither rendered nor read); ruled tables;
    the layout analyser (``analyser``; skipped on pages whose lines are
    mostly in ruled tables, where it adds nothing) and the unruled tables
    in its ``table`` regions; figures (OCR'd when they hold no text layer,
    at most ``settings.figure_ocr_max`` per document, counted in
    ``state``); the other lines grouped into blocks; all of it sorted into
    reading order. Raises :class:`~pilar.errors.IngestError` for a page over
    ``settings.pdf_max_page_chars`` (:mod:`pilar.ingest.pdf_caps`), else never
    for page content; PyMuPDF errors propagate to the caller, which skips the page.
    """
    number = page.number + 1
    shown = pymupdf.Rect(page.rect)
    orig_rot = page.rotation
    to_orig = page.rotation_matrix  # unrotated -> displayed as published
    out = PageParse(number, round(shown.width, 2), round(shown.height, 2))
    textpage = page.get_textpage(flags=TEXT_FLAGS)
    check_chars(number, text_chars(textpage), settings)  # before anything is built from it
    blocks = textpage.extractDICT()["blocks"]
    angle = _natural_angle(blocks)
    frame = orig_rot if angle is None else angle
    if frame != orig_rot:
        page.set_rotation(frame)
        page = page.parent.reload_page(page)
        textpage = page.get_textpage(flags=TEXT_FLAGS)
        blocks = None
    to_natural = page.rotation_matrix
    identity = frame == 0
    back = ~to_natural * to_orig
    out.to_display = None if (identity and orig_rot == 0) else back

    lines = extract_lines(page, textpage, blocks)
    words = page.get_text("words", flags=TEXT_FLAGS, textpage=textpage)
    drawings = page.get_drawings()
    images = page.get_image_info()
    if not identity:
        lines = [_move_line(ln, to_natural) for ln in lines]
        words = [(*tuple(pymupdf.Rect(w[:4]) * to_natural), *w[4:]) for w in words]
        drawings = _transform_drawings(drawings, to_natural)
        images = [{**i, "bbox": tuple(pymupdf.Rect(i["bbox"]) * to_natural)} for i in images]

    scan = None
    if sum(len(ln.text) for ln in lines) < settings.ocr_min_chars:
        if not images and not _has_ink(drawings):
            plan = plan_render(page.rect, settings.ocr_dpi, settings.pdf_max_render_pixels, "")
            if plan.warning:  # say so: OCR of such a page would be a pixel bomb
                warnings.append(f"page {number}: {shown.width:.0f} x {shown.height:.0f} pt "
                                "is over the render limit; blank, not rendered")
            return out  # truly blank: nothing to read, nothing to render
        scan = _ocr(page, images, settings, warnings)
        if scan is None:
            return out
        out.ocr = True
        lines, words = scan.lines, scan.words
        check_chars(number, sum(len(ln.text) for ln in lines), settings)

    hrules = horizontal_rules(drawings)
    if scan is not None:
        cands = []
        tables = raster_tables(scan.horizontal, scan.vertical, lines, words)
    else:
        cands = ruled_candidates(drawings)
        tables = find_tables(page, lines, words, cands, warnings, drawings if identity else None,
                             hrules)
    in_tables = sum(len(t.lines) for t in tables)
    regions: list = []
    if analyser and not out.ocr and len(lines) - in_tables >= 0.4 * len(lines):
        # skipped on pages that are mostly ruled tables; a turned page is
        # read on an upright copy, in the frame of ``lines`` and ``words``
        with _upright(page, identity) as upright:
            regions = analyser.regions(upright)
            more = region_candidates(regions, tables)
            tables += find_tables(upright, lines, words, more, warnings, hrules=hrules)
        if not identity:
            page = page.parent[page.number]  # the page as turned again
        cands += more
    boxes = [c.rect for c in cands if c.strategy in ("lines", "frame") and not any(
        pymupdf.Rect(t.bbox).intersects(c.rect) for t in tables)]
    fig_rects = figure_regions(page, regions, images, scanned=out.ocr)
    fig_rects = [r for r in fig_rects if not any(
        pymupdf.Rect(t.bbox).contains(r) for t in tables)]
    taken = [pymupdf.Rect(t.bbox) for t in tables] + fig_rects
    blocks = group_blocks(number, lines, regions, taken, bullet_marks(drawings))
    for b in blocks:
        if boxes and any(r.contains(pymupdf.Rect(b.bbox)) for r in boxes):
            b.extra["boxed"] = True
    if out.ocr or not regions:
        for b in blocks:  # stream (or OCR paragraph) order
            b.order = b.lines[0].block
            b.source = "ocr" if out.ocr else "text"
    for t in tables:
        out.blocks.append(Block(number, t.bbox, [], "table", _order(t.bbox, t.lines, regions),
                                obj=t))
    for rect in fig_rects:
        fig = Figure(number, tuple(rect))
        fig.text, inside = inner_text(rect, lines)
        if not fig.text and state.figures_ocrd < settings.figure_ocr_max:
            state.figures_ocrd += 1
            fig.text = ocr_region(page, rect, dpi=settings.figure_dpi,
                                  max_pixels=settings.pdf_max_render_pixels,
                                  lang=settings.ocr_lang, timeout=settings.ocr_timeout)
        out.blocks.append(Block(number, tuple(rect), [], "picture",
                                _order(tuple(rect), inside, regions, blocks), obj=fig))
    out.blocks.extend(blocks)
    out.blocks.sort(key=lambda b: (b.order, b.bbox[1], b.bbox[0]))
    return out


def _ocr(page: pymupdf.Page, images: list[dict], settings: Settings, warnings: list[str]
         ) -> OcrPage | None:
    """OCR a page without a usable text layer (``None``: not rendered
    because it holds an image over ``settings.pdf_max_image_pixels``)."""
    number = page.number + 1
    pixels = [(i.get("width", 0) * i.get("height", 0), i) for i in images]
    huge = [i for n, i in pixels if n > settings.pdf_max_image_pixels]
    if huge:
        i = huge[0]
        warnings.append(f"page {number}: image of {i['width']} x {i['height']} px is over "
                        f"the {settings.pdf_max_image_pixels / 1e6:.0f} MP image limit; "
                        "page not OCR'd")
        return None
    plan = plan_render(page.rect, settings.ocr_dpi, settings.pdf_max_render_pixels, "")
    big = [i for n, i in pixels if n > settings.pdf_max_render_pixels]
    if big and not plan.warning:
        i = big[0]
        warnings.append(f"page {number}: image of {i['width']} x {i['height']} px "
                        f"({i['width'] * i['height'] / 1e6:.0f} MP) read downscaled at "
                        f"{settings.ocr_dpi} dpi")
    return ocr_page(page, dpi=settings.ocr_dpi, max_pixels=settings.pdf_max_render_pixels,
                    lang=settings.ocr_lang, timeout=settings.ocr_timeout, warnings=warnings)


@contextmanager
def _upright(page: pymupdf.Page, identity: bool) -> Iterator[pymupdf.Page]:
    """``page`` itself, or for a turned page (``set_rotation`` to its natural
    frame) the page with ``/Rotate`` 0 and its content turned instead
    (PyMuPDF's ``page_rotation_set0``, as its table finder does), undone on
    exit: the layout analyser and the table finder read a sideways table
    (issue 35 kind 6) in the frame of the page's turned lines and words."""
    if identity:
        yield page
        return
    flat, xref, rot, mediabox = page_rotation_set0(page)
    try:
        yield flat
    finally:
        page_rotation_reset(flat, xref, rot, mediabox)


def _move_line(line: Line, m: pymupdf.Matrix) -> Line:
    return Line(tuple(pymupdf.Rect(line.bbox) * m), line.text, line.size, line.bold,
                line.block, line.line,
                tuple((tuple(pymupdf.Rect(b) * m), t) for b, t in line.raised))


def _order(bbox, lines: list[Line], regions, blocks: list[Block] | None = None) -> float:
    """Reading-order key of a table or figure: its analyser region rank, or
    (stream order) the first PyMuPDF block inside it, or the block after it."""
    if regions:
        return region_rank(bbox, regions)[0]
    if lines:
        return float(min(ln.block for ln in lines))  # ties: by y
    below = [b.order for b in blocks or () if b.bbox[1] >= bbox[1]]
    return min(below) - 0.25 if below else float(10**6)
