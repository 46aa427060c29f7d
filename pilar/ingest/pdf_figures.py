"""Figures on PDF pages: regions, captions, text inside, PNG crops.

PILAR §3.1 / App. E.1 parse figures and captions as page-anchored units;
App. B.3 reads text in detected regions with Tesseract. A figure region is
a layout-analyser ``picture`` region or a placed raster image of at least
:data:`MIN_SIDE` points a side (a full-page scan is the page, not a
figure). Each figure is linked to its caption: the nearest caption block
("Figure N", "Fig. N", or a block the analyser labels ``caption``) above or
below it that overlaps it horizontally, within :data:`CAPTION_GAP` points;
tables are linked the same way to "Table N" captions.

Crops: when ``Settings.pdf_figure_crops`` is true, each figure is rendered
to PNG at ``Settings.figure_dpi`` into :func:`crop_path` (under
``Settings.home / "crops"``); otherwise nothing is written and a caller can
render one later with :func:`render_png` from the PDF, the page and the
bbox kept in the figure support's provenance. Crop files are named after
the figure's support id (:func:`crop_path`), so a support finds its crop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from pilar.ingest.ocr import plan_render
from pilar.ingest.pdf_layout import Block, Line, join_lines
from pilar.model import BBox

MIN_SIDE = 36.0
"""Smallest figure side (points); smaller images are icons or rules."""
CAPTION_GAP = 72.0
"""Largest vertical distance (points) between a figure and its caption."""

_FIG_CAPTION = re.compile(r"^\s*(?:figure|fig\.|chart|plate|map|exhibit)\s*[0-9IVX]", re.I)
_TAB_CAPTION = re.compile(r"^\s*table\s*[0-9IVX]", re.I)


@dataclass(slots=True)
class Figure:
    """A figure region (points) with its caption block and inner text."""

    page: int
    bbox: BBox
    caption: Block | None = None
    text: str = ""
    crop: str | None = None


def figure_regions(page: pymupdf.Page, regions: list[tuple[pymupdf.Rect, str]],
                   images: list[dict], scanned: bool) -> list[pymupdf.Rect]:
    """Figure rectangles of a page (analyser pictures and placed images),
    merged when they overlap, clipped to the page."""
    page_area = page.rect.get_area() or 1.0
    rects = [pymupdf.Rect(r) for r, label in regions if label == "picture"]
    for info in images:
        r = pymupdf.Rect(info["bbox"]) & page.rect
        if r.is_empty or r.width < MIN_SIDE or r.height < MIN_SIDE:
            continue
        if scanned and r.get_area() > 0.6 * page_area:
            continue  # the scan itself
        rects.append(r)
    merged: list[pymupdf.Rect] = []
    for r in sorted(rects, key=lambda r: (r.y0, r.x0)):
        for m in merged:
            if m.intersects(r):
                m |= r
                break
        else:
            merged.append(pymupdf.Rect(r))
    return [r for r in merged if r.width >= MIN_SIDE and r.height >= MIN_SIDE]


def is_caption(block: Block, for_table: bool = False) -> bool:
    """Does ``block`` read as a figure (or, ``for_table``, a table) caption?"""
    pattern = _TAB_CAPTION if for_table else _FIG_CAPTION
    return bool(pattern.match(block.text)) or (block.label == "caption" and not (
        (_FIG_CAPTION if for_table else _TAB_CAPTION).match(block.text)))


def nearest_caption(bbox: BBox, blocks: list[Block], for_table: bool = False) -> Block | None:
    """The caption block nearest ``bbox`` (above or below, overlapping it
    horizontally, at most :data:`CAPTION_GAP` away), or ``None``."""
    best, best_d = None, CAPTION_GAP
    for b in blocks:
        if not is_caption(b, for_table) or b.extra.get("caption_of"):
            continue
        if min(b.bbox[2], bbox[2]) <= max(b.bbox[0], bbox[0]):
            continue
        d = b.bbox[1] - bbox[3] if b.bbox[1] >= bbox[3] - 2 else bbox[1] - b.bbox[3]
        if -2 <= d < best_d:
            best, best_d = b, max(d, 0)
    return best


def inner_text(rect: pymupdf.Rect, lines: list[Line]) -> tuple[str, list[Line]]:
    """Text-layer lines inside a figure (labels of a vector chart)."""
    inside = [ln for ln in lines if rect.contains(pymupdf.Rect(ln.bbox))]
    return join_lines(inside), inside


def crop_path(home: Path, support_id: str) -> Path:
    """Where the crop of figure support ``support_id`` (``doc:page:sN``) is
    written: ``home / "crops" / doc_id / f"{page}-s{N}.png"``."""
    doc_id, page, n = support_id.split(":")
    return Path(home) / "crops" / doc_id / f"{page}-{n}.png"


def render_png(page: pymupdf.Page, bbox: BBox, dpi: int, max_pixels: int) -> bytes | None:
    """PNG bytes of ``bbox`` (points) at ``dpi``, downscaled to fit
    ``max_pixels``; ``None`` when even :data:`~pilar.ingest.ocr.MIN_DPI`
    does not fit."""
    clip = pymupdf.Rect(bbox) & page.rect
    plan = plan_render(clip, dpi, max_pixels, "figure")
    if plan.skip or clip.is_empty:
        return None
    return page.get_pixmap(dpi=int(plan.dpi), clip=clip, alpha=False).tobytes("png")


def write_crop(page: pymupdf.Page, fig: Figure, path: Path, dpi: int, max_pixels: int) -> None:
    """Render ``fig`` to ``path`` (PNG); sets ``fig.crop``. OS errors are
    left to the caller."""
    data = render_png(page, fig.bbox, dpi, max_pixels)
    if data is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    fig.crop = str(path)
