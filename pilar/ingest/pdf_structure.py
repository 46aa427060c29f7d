"""Document-level structure of a PDF: final labels, running headers and
footers, heading levels and section paths.

PILAR App. E.1: "a stack-based document hierarchy parser then reconstructs
section structure and assigns each block a section_path"; App. F.1: the
path runs from the root to the governing header, ``Title > Sec > Subsec``.
These passes run once per document over the lightweight :class:`Block`
records of every page (text only, so memory stays proportional to the
document's text, not to its pages' rendering).
"""

from __future__ import annotations

import re

from pilar.ingest.pdf_layout import Block, numbering_depth, rule_label

MARGIN_BAND = 0.09
"""Top and bottom share of the page height where running headers,
footers and page numbers live."""

MAX_HEADING_CHARS = 200

_PAGE_NUMBER = re.compile(
    r"^\s*(?:page|p\.|seite|pagina|página)?\s*(?:\d{1,5}|[ivxlcdm]{1,7})"
    r"(?:\s*(?:of|/|de|von)\s*\d{1,5})?\s*$|^\s*[-\u2013\u2014]\s*\d{1,5}\s*[-\u2013\u2014]\s*$",
    re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+|#", re.UNICODE)
_ALNUM = re.compile(r"[^\W_]", re.UNICODE)
_JUNK_TITLE = re.compile(r"^(?:untitled|microsoft (?:word|powerpoint|excel)|document\d*$|"
                         r"slide \d+|\S+\.(?:docx?|pdf|pptx?|xlsx?|indd|tex|dvi))", re.IGNORECASE)


def resolve_labels(blocks: list[Block], body: float) -> None:
    """Decide each block's final DocLayNet label (PILAR App. B.3).

    Analyser labels are kept when the font evidence agrees: a
    ``section-header`` must be short and set larger, bold or numbered;
    ``page-header``/``page-footer`` must have been confirmed as running
    (:func:`mark_running`, which must run first); text the rules see as a
    caption, list item or larger-set heading is relabelled. Text inside a
    ruled box that is not a table (sidebars, notices: ``extra["boxed"]``)
    never heads a section. Blocks without an analyser label get
    :func:`rule_label`. ``body`` is the body font size in points.
    """
    for b in blocks:
        if b.obj is not None:
            continue
        rules = rule_label(b.text, b.size, b.bold, body, len(b.lines))
        label = b.label
        if label in ("section-header", "title"):
            short = len(b.text.split()) <= 25 and len(b.lines) <= 3
            styled = b.size >= body * 1.05 or b.bold or numbering_depth(b.text) is not None
            label = label if short and styled else rules
        elif label in ("page-header", "page-footer"):
            label = label if b.running else rules
        elif label in ("", "text", "table", "picture"):
            label = rules
        if label in ("section-header", "title") and (
                len(_ALNUM.findall(b.text)) < 2 or b.extra.get("boxed")):
            label = "text"  # a glyph ("”"), a lone number, a sidebar's title: no heading
        if b.extra.get("item") and label not in ("section-header", "title", "caption"):
            label = "list-item"
        b.label = label


def mark_running(pages: list[list[Block]], heights: list[float], body: float) -> None:
    """Flag running headers, footers and page numbers (``block.running``).

    A block in the top or bottom :data:`MARGIN_BAND` of its page is running
    when its words (digits masked, order ignored: "48 Bureau Veritas" and
    "Bureau Veritas 49" match) all recur in the same band on at least two
    pages and on at least a fifth of the pages, or when it reads as a page
    number, or when the layout analyser calls it a page header/footer and
    it is short and set no larger than body text (``body``, points) and
    not bold. Flagged blocks become neither supports nor units.
    """
    band_blocks: list[tuple[Block, str, frozenset[str]]] = []
    band_words: dict[str, list[set[str]]] = {"t": [], "b": []}
    for page_blocks, height in zip(pages, heights):
        seen = {"t": set(), "b": set()}
        for b in page_blocks:
            if b.obj is not None:
                continue
            top = b.bbox[3] <= height * MARGIN_BAND
            bottom = b.bbox[1] >= height * (1 - MARGIN_BAND)
            b.extra["band"] = top or bottom
            if not (top or bottom) or len(b.text) > 200:
                continue
            side = "t" if top else "b"
            words = frozenset(_WORD.findall(re.sub(r"\d+", "#", b.text.lower())))
            band_blocks.append((b, side, words))
            seen[side] |= words
        for side in seen:
            band_words[side].append(seen[side])
    need = max(2, len(pages) // 5)
    for b, side, words in band_blocks:
        recurring = bool(words) and sum(words <= page for page in band_words[side]) >= need
        if recurring or _PAGE_NUMBER.match(b.text):
            b.running = True
        elif (b.label in ("page-header", "page-footer") and len(b.text.split()) <= 12
              and b.size <= body * 1.05 and not b.bold):
            b.running = True


def document_title(metadata_title: str, blocks: list[Block], fallback: str) -> str:
    """The title: the PDF's metadata title unless empty or a producer's
    placeholder, else the first ``title`` block, else the first heading on
    page 1, else ``fallback`` (the file name stem)."""
    meta = (metadata_title or "").strip()
    if meta and not _JUNK_TITLE.match(meta) and len(meta) <= 300:
        return meta
    for b in blocks:
        if b.label == "title" and not b.running:
            return b.text[:MAX_HEADING_CHARS]
    for b in blocks:
        if b.page == 1 and b.label == "section-header" and not b.running:
            return b.text[:MAX_HEADING_CHARS]
    return fallback


def _heading_key(b: Block) -> tuple[float, int]:
    return (-round(b.size * 2) / 2, 0 if b.bold else 1)


def assign_sections(blocks: list[Block], title: str) -> None:
    """Assign heading levels and section paths (PILAR App. E.1, F.1).

    ``blocks`` are the document's blocks in reading order (running blocks
    are skipped). The title block is the heading on page 1 whose text is
    ``title``, else the first ``title`` or the largest-set heading among the
    first blocks of page 1 when it is set at least as large as every other
    heading; it becomes level 0 and its text the root of every path
    (``title`` otherwise). Other headings are ranked by style (font size,
    then bold) and, within a style, by the depth of a dotted section number
    ("2.1" under "2"); a stack keeps the open headings, popping every entry
    whose level is not above the new heading's. Each block's
    ``section_path`` is the stack's texts from the root to its governing
    header; a heading's path ends with itself.
    """
    live = [b for b in blocks if not b.running]
    heads = [b for b in live if b.label in ("title", "section-header")]
    title_block = _title_block(live, heads, title)
    styles = sorted({_heading_key(b) for b in heads if b is not title_block})
    rank = {s: i + 1 for i, s in enumerate(styles)}
    root = title_block.text[:MAX_HEADING_CHARS] if title_block else title
    stack: list[tuple[tuple[int, int], str]] = []
    for b in live:
        if b is title_block:
            b.level, b.label = 0, "title"
            stack.clear()
        elif b.label in ("title", "section-header"):
            b.label = "section-header"
            level = (rank[_heading_key(b)], max((numbering_depth(b.text) or 1) - 1, 0))
            b.level = level[0]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, b.text[:MAX_HEADING_CHARS]))
        b.section_path = (root, *(text for _, text in stack)) if root else tuple(
            text for _, text in stack)


def _title_block(live: list[Block], heads: list[Block], title: str) -> Block | None:
    wanted = _key(title)
    for b in heads:
        if b.page == 1 and wanted and _key(b.text) == wanted:
            return b
        if b.page > 1:
            break
    titled = [b for b in heads if b.label == "title"]
    if titled:
        return titled[0]
    first = [b for b in heads if b.page == 1][:3]
    if not first:
        return None
    top = max(first, key=lambda b: b.size)
    if all(top.size >= h.size for h in heads) and top.size > min(h.size for h in heads):
        return top
    if len(heads) == 1 and live and live[0] is top:
        return top
    return None


def _key(text: str) -> str:
    return "".join(_ALNUM.findall(text.lower())) if text else ""
