"""Page layout for PDFs: text lines with font facts, layout regions, blocks.

PILAR §3.1 and App. E.1 parse each PDF page with PyMuPDF into page-anchored
blocks; App. B.3 classifies them in the DocLayNet label space (title,
section-header, text, list-item, caption, table, picture, footnote,
page-header, page-footer, formula). Two classifiers share one output:

- ``onnx``: PyMuPDF's offline layout analyser (``pymupdf.layout``, package
  ``pymupdf-layout``, a graph network over the page's text boxes). Its
  ``rf`` feature set (text and geometry features only) costs ~50-90 ms per
  page on one core; ``imf+rf`` adds image features (~170-280 ms per page).
  Its per-line table grid model is switched off: tables come from
  :mod:`pilar.ingest.pdf_tables`.
- ``rules``: font size, boldness and numbering cues (:func:`rule_label`),
  also used for every line the analyser leaves outside its regions.

Coordinates are PDF points in the page's displayed (rotated) space, origin
top-left, as PyMuPDF reports them.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field

import pymupdf

from pilar.model import BBox

LABELS = ("title", "section-header", "text", "list-item", "caption", "table", "picture",
          "footnote", "page-header", "page-footer", "formula")
"""The DocLayNet label space (PILAR App. B.3)."""

TEXT_FLAGS = pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE
"""``get_text`` flags: no image payloads (an image bomb would be decoded),
ligatures expanded, text outside the mediabox dropped."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff\ufffd]")
_SPACE = re.compile(r"\s+")
_BULLET = re.compile(r"^\s*(?:[\u2022\u25cf\u25cb\u25aa\u25a0\u25e6\u2023\u2043\u2219\u00b7\u2013\u2014*\-]"
                     r"|\(?(?:\d{1,3}|[a-z]|[ivx]{1,4})[.)])\s+\S")
_CAPTION = re.compile(r"^\s*(?:figure|fig\.|table|chart|exhibit|plate|map)\s*[0-9IVX]+[a-z]?\b",
                      re.IGNORECASE)
_TOC_LINE = re.compile(r"^\s*\d{1,2}(?:\.\d{1,2}){0,4}\.?\s+\S")
_NUMBERED = re.compile(r"^\s*((?:\d{1,2}\.){0,5}\d{1,2})\.?\s+\S")


def normalise_text(text: str) -> str:
    """Unicode NFC, control and zero-width characters removed, whitespace
    collapsed to single spaces (PILAR App. B.3 OCR normalisation; applied to
    every extracted string). Case is kept, and so are compatibility
    characters such as "3ª" or "½" (NFKC would change the data)."""
    text = unicodedata.normalize("NFC", text)
    return _SPACE.sub(" ", _CONTROL.sub("", text)).strip()


@dataclass(slots=True)
class Line:
    """One text line: ``bbox`` in points, ``size`` the dominant font size in
    points, ``bold`` when most characters are bold, ``block`` and ``line``
    its PyMuPDF (or OCR) block and line numbers (``get_text("words")``
    tuples carry the same numbers when read from the same text page);
    ``raised`` the spans MuPDF flags as superscript (footnote markers)."""

    bbox: BBox
    text: str
    size: float
    bold: bool
    block: int
    line: int = 0
    raised: tuple[tuple[BBox, str], ...] = ()  # superscript spans (bbox, text): note markers


@dataclass(slots=True)
class Block:
    """A page-anchored block (PILAR App. E.1): lines with one layout label.

    ``order`` sorts blocks, tables and figures of a page into reading
    order; ``level`` is the heading level (0 = title) once
    :func:`pilar.ingest.pdf_structure.assign_sections` ran; ``source`` is
    ``"text"`` (text layer) or ``"ocr"``. Tables and figures take part in
    reading order and section assignment as blocks labelled ``table`` /
    ``picture`` whose ``obj`` holds the table or figure.
    """

    page: int
    bbox: BBox
    lines: list[Line]
    label: str
    order: float = 0.0
    text: str = ""
    size: float = 0.0
    bold: bool = False
    source: str = "text"
    level: int | None = None
    section_path: tuple[str, ...] = ()
    running: bool = False
    obj: object | None = None
    extra: dict = field(default_factory=dict)


def extract_lines(page: pymupdf.Page, textpage: pymupdf.TextPage | None = None,
                  blocks: list[dict] | None = None) -> list[Line]:
    """Text lines of ``page`` from ``get_text("dict")`` (no image payloads),
    or from its ``blocks`` when the caller read them already.

    Empty lines are dropped; the text is normalised but hyphens kept (they
    are joined in :func:`join_lines`).
    """
    out: list[Line] = []
    if blocks is None:
        blocks = page.get_text("dict", flags=TEXT_FLAGS, textpage=textpage)["blocks"]
    for bno, block in enumerate(blocks):
        for lno, line in enumerate(block.get("lines", ())):
            spans = line["spans"]
            text = "".join(s["text"] for s in spans)
            clean = normalise_text(text)
            if not clean:
                continue
            if text.rstrip().endswith("\u00ad"):
                clean += "\u00ad"  # soft hyphen at the line end: a break point
            weights = [len(s["text"].strip()) for s in spans]
            total = sum(weights) or 1
            bold = sum(w for w, s in zip(weights, spans)
                       if s["flags"] & 16 or "bold" in s["font"].lower()) / total >= 0.6
            size = max(spans, key=lambda s: len(s["text"].strip()))["size"]
            raised = tuple((tuple(s["bbox"]), s["text"].strip()) for s in spans
                           if s["flags"] & 1 and s["text"].strip())
            out.append(Line(tuple(line["bbox"]), clean, round(size, 1), bold, bno, lno, raised))
    return out


def join_lines(lines: list[Line]) -> str:
    """Join lines into one string, restoring words hyphenated across lines.

    A line ending in ``letter-`` followed by a line starting with a
    lower-case letter is joined without the hyphen ("docu-" + "ment" ->
    "document"); other breaks right after a hyphen or en dash keep it and
    add no space ("1995-" + "08-06", "1995–" + "2011"); a soft hyphen
    (U+00AD) at a line end is always a break point. Other lines are joined
    with a space.
    """
    parts: list[str] = []
    for line in lines:
        text = line.text
        if parts:
            prev = parts[-1]
            if prev.endswith("\u00ad"):
                parts[-1] = prev[:-1]
            elif len(prev) > 1 and prev[-1] in "-\u2010\u2013" and not prev[-2].isspace():
                if prev[-1] != "\u2013" and prev[-2].isalpha() and text[:1].islower():
                    parts[-1] = prev[:-1]  # "docu-" + "ment"
                # else: a break after a hyphen or dash that stays ("1995-" + "08")
            else:
                parts.append(" ")
        parts.append(text)
    return "".join(parts).replace("\u00ad", "").strip()


class LayoutAnalyser:
    """PyMuPDF's ONNX layout analyser, loaded once per feature set.

    ``regions(page)`` returns ``[(Rect, label), ...]`` in the analyser's
    reading order. Raises nothing: a failing page yields ``[]`` (the rule
    classifier takes over).
    """

    _lock = threading.Lock()
    _models: dict[str, object] = {}

    def __init__(self, features: str = "rf"):
        self.features = features

    def _model(self):
        with self._lock:
            model = self._models.get(self.features)
            if model is None:
                from pymupdf.layout import DocumentLayoutAnalyzer

                # the smallest table grid model, dropped at once (tables:
                # pdf_tables); the image feature model only for features using it
                unused = {} if "imf" in self.features else {"imf_model_path": ""}
                model = DocumentLayoutAnalyzer.get_model(feature_set_name=self.features,
                                                         n_workers=1, use_sort=True,
                                                         table_grid_model_ver="V1", **unused)
                model._model.table_grid_extractor = None
                model._model.session = _one_thread_session(model._model.model_path)
                self._models[self.features] = model
            return model

    def regions(self, page: pymupdf.Page) -> list[tuple[pymupdf.Rect, str]]:
        try:
            raw = self._model().predict(page)
        except Exception:  # noqa: BLE001 - analyser failure falls back to rules
            return []
        return [(pymupdf.Rect(r[:4]), str(r[4])) for r in raw if r[4] in LABELS]


def _one_thread_session(path: str):
    """An ONNX Runtime session of the layout model ``path`` that runs each
    page on the calling thread, its threads never spinning while idle (and,
    as PyMuPDF's own, without the memory arena). PyMuPDF's session takes a
    thread per core that spins between calls: in parse workers, one per
    core already, that cost ~1.7x the CPU per page for the same regions
    (49 pages of the PDF bench corpus: 4.4-4.6 against 7.4-7.5 CPU seconds,
    regions identical)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.enable_cpu_mem_arena = False
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])


def _overlap(a: BBox, b: pymupdf.Rect) -> float:
    w = min(a[2], b.x1) - max(a[0], b.x0)
    h = min(a[3], b.y1) - max(a[1], b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _inside(box: BBox, rects: list[pymupdf.Rect]) -> bool:
    area = max((box[2] - box[0]) * (box[3] - box[1]), 1e-6)
    return any(_overlap(box, r) / area > 0.5 for r in rects)


def region_rank(box: BBox, regions: list[tuple[pymupdf.Rect, str]]) -> tuple[float, str | None]:
    """Reading-order rank of ``box`` among the analyser ``regions`` and the
    label of the region holding it. A box outside every region ranks just
    after the last region above it that overlaps it horizontally."""
    best, best_i = 0.0, -1
    for i, (rect, _) in enumerate(regions):
        a = _overlap(box, rect)
        if a > best:
            best, best_i = a, i
    if best_i >= 0:
        return float(best_i), regions[best_i][1]
    above = [i for i, (r, _) in enumerate(regions)
             if r.y0 <= box[1] and min(r.x1, box[2]) > max(r.x0, box[0])]
    return (max(above) + 0.5 if above else -0.5), None


def rule_label(text: str, size: float, bold: bool, body: float, n_lines: int) -> str:
    """Rule classifier (the fallback of PILAR App. B.3's detector).

    ``size`` and ``body`` (the document's body font size) in points.
    Headings are short lines set larger than body text, or bold and
    numbered/short without a final full stop; list items start with a
    bullet or an enumerator; captions start "Figure N" / "Table N";
    smaller text is a footnote only when it starts with a marker.
    """
    words = len(text.split())
    if _CAPTION.match(text):
        return "caption"
    if n_lines <= 3 and words <= 20 and not text.endswith((".", ",", ";", ":")):
        if size >= body * 1.12:
            return "section-header"
        if bold and (words <= 12 or _NUMBERED.match(text)) and size >= body * 0.95:
            return "section-header"
    if _BULLET.match(text):
        return "list-item"
    if size <= body * 0.85 and re.match(r"^\s*(?:\d{1,3}|[*\u2020\u2021])\s*\S", text):
        return "footnote"
    return "text"


def numbering_depth(text: str) -> int | None:
    """Depth of a section number ("2" -> 1, "2.3" -> 2, "2.3.1" -> 3);
    ``None`` when the text does not start with one."""
    m = _NUMBERED.match(text)
    return m.group(1).count(".") + 1 if m else None


def group_blocks(page_no: int, lines: list[Line], regions: list[tuple[pymupdf.Rect, str]],
                 taken: list[pymupdf.Rect], bullets: list[BBox] = ()) -> list[Block]:
    """Group ``lines`` not inside ``taken`` rectangles (tables, figures) into
    blocks: consecutive lines of the same PyMuPDF block and the same
    analyser region, split at vertical gaps, font-size changes and list
    items (a drawn bullet, a bullet character or enumerator, or a run of
    numbered lines as in a table of contents). Labels are the region's (``""`` -> decided
    later by :func:`rule_label`); ``order`` is the region rank. A block
    starting a list item gets ``extra["item"]`` (``bullets`` are drawn
    bullet marks, bboxes in points).
    """
    blocks: list[Block] = []
    key = None
    prev_toc = False
    for line in lines:
        if taken and _inside(line.bbox, taken):
            continue
        rank, label = region_rank(line.bbox, regions)
        k = (line.block, rank)
        bullet = _has_bullet(line, bullets)
        toc = bool(_TOC_LINE.match(line.text))
        item = bullet or bool(_BULLET.match(line.text)) or (toc and prev_toc)
        if toc and prev_toc and blocks and _TOC_LINE.match(blocks[-1].lines[0].text):
            blocks[-1].extra["item"] = True  # the first entry of the run
        prev_toc = toc
        if k != key or not blocks or item or _gap(blocks[-1].lines[-1], line):
            blocks.append(Block(page_no, line.bbox, [], label or "", rank))
            key = k
            if bullet:
                blocks[-1].extra["bullet"] = True
            if item:
                blocks[-1].extra["item"] = True
        b = blocks[-1]
        b.lines.append(line)
        b.bbox = (min(b.bbox[0], line.bbox[0]), min(b.bbox[1], line.bbox[1]),
                  max(b.bbox[2], line.bbox[2]), max(b.bbox[3], line.bbox[3]))
    for b in blocks:
        finish_block(b)
    return blocks


def _has_bullet(line: Line, bullets) -> bool:
    """Is a drawn bullet mark just left of the line's first glyph?"""
    x0, y0, x1, y1 = line.bbox
    for bx0, by0, bx1, by1 in bullets:
        if x0 - 24 <= bx1 <= x0 - 1 and y0 <= (by0 + by1) / 2 <= y1:
            return True
    return False


def bullet_marks(drawings: list[dict]) -> list[BBox]:
    """Small filled, roughly square shapes (1.5-8 points a side): list
    bullets drawn as vector graphics (Chromium, Word)."""
    out: list[BBox] = []
    for d in drawings:
        r = d["rect"]
        if d.get("fill") is not None and 1.5 <= r.width <= 8 and 1.5 <= r.height <= 8 \
                and abs(r.width - r.height) <= 1.5:
            out.append((r.x0, r.y0, r.x1, r.y1))
    return out[:500]


def _gap(prev: Line, line: Line) -> bool:
    """A vertical gap of more than one line height, or a font-size jump,
    splits a PyMuPDF block."""
    height = max(prev.bbox[3] - prev.bbox[1], 1.0)
    return (line.bbox[1] - prev.bbox[3] > 0.9 * height
            or abs(line.size - prev.size) > 0.15 * max(prev.size, 1.0))


def finish_block(block: Block) -> None:
    """Fill ``text`` (hyphenation joined), dominant ``size`` and ``bold``."""
    block.text = join_lines(block.lines)
    weights: dict[float, int] = {}
    for line in block.lines:
        weights[line.size] = weights.get(line.size, 0) + len(line.text)
    block.size = max(weights, key=weights.get) if weights else 0.0
    n = sum(len(line.text) for line in block.lines) or 1
    block.bold = sum(len(line.text) for line in block.lines if line.bold) / n >= 0.6


def body_size(blocks: list[Block]) -> float:
    """The document's body font size: the size carrying most characters."""
    weights: dict[float, int] = {}
    for b in blocks:
        for line in b.lines:
            weights[line.size] = weights.get(line.size, 0) + len(line.text)
    return max(weights, key=weights.get) if weights else 10.0
