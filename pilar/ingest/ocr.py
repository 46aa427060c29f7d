"""OCR of PDF pages and regions with Tesseract (pytesseract).

PILAR App. B.3: "We use Tesseract to perform OCR ... Extracted text is
lowercased, control characters are removed, and whitespace is normalized".
We remove control characters and collapse whitespace
(:func:`~pilar.ingest.pdf_layout.normalise_text`) but keep case: readers and
BM25 see the text as printed.

Pages are rendered in grey at ``dpi`` (default 200), long straight rules
are whitened (they would be read as "|" and merge table cells; they are
kept as segments so tables can be rebuilt from them) and the image is read
with ``image_to_data`` (``--psm 3``, ``OMP_THREAD_LIMIT=1`` unless set);
words are grouped into lines by Tesseract's
(block, paragraph, line) numbers and their pixel boxes converted back to PDF
points (``x_pt = x_px * 72 / dpi + clip.x0``). Renders are capped at
``max_pixels`` (default 40 MP): a larger page is rendered at the highest dpi
that fits, and skipped when that falls below :data:`MIN_DPI`.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import pymupdf

from pilar.ingest.pdf_layout import Line, normalise_text

MIN_DPI = 50
"""Below this resolution OCR reads nothing useful: such renders are skipped."""

_OCR_BULLET = re.compile(r"^(?:[eo\u00b0\u00ab\u00bb*\u00a2\u00a9+\u00b7]|ee|oe)\s+(?=[A-Z0-9\"'(])")
_NOISE = re.compile(r"^[|\[\](){}_=~`'\".,:;\-\u2014\u2013]+$")


@dataclass(slots=True)
class RenderPlan:
    """The resolution a region will be rendered at (``dpi``), the pixel
    size, and a warning when the pixel cap changed or prevented it."""

    dpi: float
    width_px: int
    height_px: int
    warning: str | None = None

    @property
    def skip(self) -> bool:
        return self.dpi < MIN_DPI


def plan_render(rect: pymupdf.Rect, dpi: float, max_pixels: int, what: str) -> RenderPlan:
    """Fit a render of ``rect`` (points) at ``dpi`` under ``max_pixels``."""
    w_in, h_in = rect.width / 72.0, rect.height / 72.0
    pixels = w_in * h_in * dpi * dpi
    use = float(dpi)
    warning = None
    if pixels > max_pixels:
        use = math.floor(math.sqrt(max_pixels / max(w_in * h_in, 1e-9)))
        size = f"{rect.width:.0f} x {rect.height:.0f} pt"
        cap = f"{max_pixels / 1e6:.0f} MP"
        if use < MIN_DPI:
            warning = f"{what}: {size} is over the {cap} render limit even at {MIN_DPI} dpi; not rendered"
        else:
            warning = f"{what}: {size} is over the {cap} render limit at {dpi} dpi; rendered at {use:.0f} dpi"
    return RenderPlan(use, int(w_in * use), int(h_in * use), warning)


def render_gray(page: pymupdf.Page, plan: RenderPlan, clip: pymupdf.Rect | None = None):
    """Render ``page`` (or ``clip``) in grey as a ``uint8`` array (rows,
    columns) at ``plan.dpi``."""
    import numpy as np

    pix = page.get_pixmap(dpi=int(plan.dpi), colorspace=pymupdf.csGRAY, alpha=False, clip=clip)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[
        :, :pix.width].copy()


def _runs(dark, length: int):
    """Pixels lying on a horizontal run of at least ``length`` dark pixels
    (boolean array, same shape); cumulative sums, no per-pixel Python."""
    import numpy as np

    rows, width = dark.shape
    if width < length:
        return np.zeros_like(dark)
    c = np.zeros((rows, width + 1), dtype=np.int32)
    np.cumsum(dark, axis=1, dtype=np.int32, out=c[:, 1:])
    full = (c[:, length:] - c[:, :-length]) == length  # a full run starts here
    f = np.zeros((rows, width + length), dtype=np.int32)
    np.cumsum(full, axis=1, dtype=np.int32, out=f[:, length:length + full.shape[1]])
    f[:, length + full.shape[1]:] = f[:, length + full.shape[1] - 1:length + full.shape[1]]
    return (f[:, length:] - f[:, :width]) > 0


def remove_rules(gray, dpi: float):
    """Whiten table rules and other long straight lines of a grey render
    before OCR (Tesseract reads rules as "|" and lets them merge cells into
    one line). Returns the cleaned image and the boolean masks of the
    horizontal and vertical rules (runs over ~1/3 inch)."""
    dark = gray < 160
    length = max(40, int(dpi / 3))
    horiz = _runs(dark, length)
    vert = _runs(dark.T, length).T
    clean = gray.copy()
    clean[horiz | vert] = 255
    return clean, horiz, vert


def rule_segments(mask, dpi: float, origin: tuple[float, float], vertical: bool
                  ) -> list[tuple[float, float, float, float]]:
    """Segments of a rule mask as thin boxes in points: consecutive
    pixel rows (columns) holding rules are merged, then each run of
    covered columns (rows) is one segment."""
    import numpy as np

    m = mask.T if vertical else mask
    scale = 72.0 / dpi
    out = []
    rows = np.flatnonzero(m.any(axis=1))
    if not len(rows):
        return out
    groups = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)
    for g in groups:
        band = m[g[0]:g[-1] + 1].any(axis=0)
        edges = np.flatnonzero(np.diff(np.concatenate(([0], band.view(np.int8), [0]))))
        for a, b in zip(edges[::2], edges[1::2]):
            lo, hi = float(g[0]) * scale, float(g[-1] + 1) * scale
            a, b = float(a) * scale, float(b) * scale
            if vertical:
                out.append((origin[0] + lo, origin[1] + a, origin[0] + hi, origin[1] + b))
            else:
                out.append((origin[0] + a, origin[1] + lo, origin[0] + b, origin[1] + hi))
    return out


def ocr_words(image, dpi: float, origin: tuple[float, float] = (0.0, 0.0), *,
              lang: str = "eng", timeout: float = 60.0) -> tuple[list[Line], list[tuple]]:
    """Tesseract lines and words of a rendered grey image, boxes in points.

    ``image`` is a ``uint8`` array; ``origin`` the top-left of the rendered
    region in page points. Each :class:`Line` gets ``block`` = a running
    paragraph number, ``line`` its line number and ``size`` ~ the font size
    in points (median over words of box height / the share of the em the
    word's letters span, :func:`_em_share`); words are
    ``(x0, y0, x1, y1, text, block, line, n)`` tuples as PyMuPDF's
    ``get_text("words")`` gives. Raises :class:`RuntimeError` when Tesseract
    fails or times out.
    """
    import pytesseract
    from PIL import Image

    os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # one thread per page: no oversubscription
    try:
        data = pytesseract.image_to_data(Image.fromarray(image), lang=lang, config="--psm 3",
                                         output_type=pytesseract.Output.DICT, timeout=timeout)
    except (pytesseract.TesseractError, pytesseract.TesseractNotFoundError, OSError) as exc:
        raise RuntimeError(f"tesseract failed: {str(exc).splitlines()[0][:120]}") from None
    except RuntimeError:
        raise RuntimeError(f"tesseract timed out after {timeout:.0f} s") from None
    scale = 72.0 / dpi
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i, word in enumerate(data["text"]):
        word = word.strip()
        if not word or float(data["conf"][i]) < 0:
            continue
        if _NOISE.match(word) and float(data["conf"][i]) < 60:
            continue  # specks read as punctuation
        key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
        groups.setdefault(key, []).append(i)
    lines: list[Line] = []
    words: list[tuple] = []
    paragraphs: dict[tuple[int, int], int] = {}

    def box(i: int) -> tuple[float, float, float, float]:
        return (origin[0] + data["left"][i] * scale, origin[1] + data["top"][i] * scale,
                origin[0] + (data["left"][i] + data["width"][i]) * scale,
                origin[1] + (data["top"][i] + data["height"][i]) * scale)

    for key in sorted(groups):
        idx = groups[key]
        text = normalise_text(" ".join(data["text"][i] for i in idx))
        text = _OCR_BULLET.sub("\u2022 ", text)  # "e 1 Synopsis": a bullet read as a letter
        if not text:
            continue
        para = paragraphs.setdefault(key[:2], len(paragraphs))
        boxes = [box(i) for i in idx]
        for n, (i, b) in enumerate(zip(idx, boxes)):
            words.append((*b, normalise_text(data["text"][i]), para, key[2], n))
        sizes = sorted((b[3] - b[1]) / _em_share(data["text"][i]) for i, b in zip(idx, boxes))
        size = sizes[len(sizes) // 2]
        bbox = (min(b[0] for b in boxes), min(b[1] for b in boxes),
                max(b[2] for b in boxes), max(b[3] for b in boxes))
        lines.append(Line(bbox, text, round(size * 2) / 2, False, para, key[2]))
    return lines, words


def _em_share(word: str) -> float:
    """Share of the font size a word's box spans: x-height, plus ascender
    (capitals, digits, b d f h k l t) and descender (g j p q y) parts."""
    asc = any(c.isupper() or c.isdigit() or c in "bdfhklt([{/|'\"!?" for c in word)
    desc = any(c in "gjpqy,;()[]{}" for c in word)
    return 0.53 + (0.21 if asc else 0.0) + (0.22 if desc else 0.0)


@dataclass(slots=True)
class OcrPage:
    """OCR of one page: lines and words (points), and the table rules found
    in the render as thin boxes in points (``horizontal``, ``vertical``)."""

    lines: list[Line] = field(default_factory=list)
    words: list[tuple] = field(default_factory=list)
    horizontal: list[tuple[float, float, float, float]] = field(default_factory=list)
    vertical: list[tuple[float, float, float, float]] = field(default_factory=list)


def ocr_page(page: pymupdf.Page, *, dpi: int, max_pixels: int, lang: str, timeout: float,
             warnings: list[str]) -> OcrPage:
    """OCR a whole page (points, the page's displayed space): render in
    grey, take out the rules (:func:`remove_rules`, kept as segments for
    table detection), read with Tesseract.

    Appends a warning when the pixel cap downscales or skips the render or
    Tesseract fails; the result is then empty.
    """
    label = f"page {page.number + 1}"
    plan = plan_render(page.rect, dpi, max_pixels, label)
    if plan.warning:
        warnings.append(plan.warning)
    if plan.skip:
        return OcrPage()
    origin = (page.rect.x0, page.rect.y0)
    try:
        gray = render_gray(page, plan)
        clean, horiz, vert = remove_rules(gray, plan.dpi)
        lines, words = ocr_words(clean, plan.dpi, origin, lang=lang, timeout=timeout)
    except RuntimeError as exc:
        warnings.append(f"{label}: OCR skipped, {exc}")
        return OcrPage()
    return OcrPage(lines, words, rule_segments(horiz, plan.dpi, origin, False),
                   rule_segments(vert, plan.dpi, origin, True))


def ocr_region(page: pymupdf.Page, clip: pymupdf.Rect, *, dpi: int, max_pixels: int,
               lang: str, timeout: float) -> str:
    """OCR text of a page region (figures), one normalised string; ``""``
    when the region is too large to render or Tesseract fails."""
    plan = plan_render(clip, dpi, max_pixels, "figure")
    if plan.skip or plan.width_px < 16 or plan.height_px < 16:
        return ""
    try:
        clean, _, _ = remove_rules(render_gray(page, plan, clip), plan.dpi)
        lines, _ = ocr_words(clean, plan.dpi, (clip.x0, clip.y0), lang=lang, timeout=timeout)
    except RuntimeError:
        return ""
    return normalise_text(" ".join(line.text for line in lines))
