"""PDF ingestion: bytes -> :class:`~pilar.model.ParsedDocument`.

PILAR §3.1: "each PDF is parsed into page-anchored units such as text
blocks, tables, figures, and captions, and a lightweight hierarchy parser
assigns each unit a section path"; App. E.1 (PyMuPDF blocks, layout cues,
stack-based hierarchy parser), App. B.3 (DocLayNet labels, Tesseract OCR),
App. F.1 (section paths ``Title > Sec > Subsec``).

:func:`parse_pdf` opens the file (:func:`open_pdf`), reads it page by page
(:func:`pilar.ingest.pdf_page.parse_page`; only text records are kept and
the heap the page freed goes back to the OS, :mod:`pilar.ingest.heap`, so
memory is bounded by the document's text), then runs the document passes
(running headers/footers, labels, title, section paths, captions, tables
continued across pages) and emits records:

- one :class:`~pilar.model.Page` per PDF page (1-based ``number``, displayed
  ``width``/``height`` in points, ``text`` in reading order for indexing;
  running headers, footers and page numbers left out);
- supports with provenance (page, bbox in points, section path; table rows
  with ``table_index``, ``row`` and ``cell_ids``): ``heading``,
  ``paragraph``, ``list_item``, ``caption``, ``footnote``, ``table``,
  ``row``, ``figure``; ids ``{doc_id}:{page}:s{n}`` / ``p{n}`` / ``u{n}``;
- :class:`~pilar.model.TableGrid` per table (shared builder
  :func:`pilar.ingest.tables.build_grid`) and units (block units and row
  units, :mod:`pilar.ingest.units`) with completed text.

Figure crops are a side effect only when ``settings.pdf_figure_crops`` is
true: a PNG per figure under ``settings.home / "crops"``, named after the
figure's support id (:func:`pilar.ingest.pdf_figures.crop_path`); the
records never depend on them.

Bad input raises :class:`~pilar.errors.IngestError` with a one-line reason
(empty, corrupt beyond repair, encrypted without the password, no pages,
too many pages); damaged but repairable files, unreadable pages, pixel and
image bombs go through with a note in ``ParsedDocument.warnings``. MuPDF's
own messages are silenced and the serious ones collected there. Embedded
files and ``javascript:`` links are never read or run; their presence is
noted in ``warnings``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pymupdf

from pilar.config import Settings
from pilar.errors import IngestError
from pilar.ingest.footnotes import has_mark, note_lines
from pilar.ingest.heap import release_freed
from pilar.ingest.limits import out_of_memory
from pilar.ingest.pdf_caps import RecordCaps, check_content
from pilar.ingest.pdf_figures import Figure, crop_path, nearest_caption, write_crop
from pilar.ingest.pdf_layout import Block, LayoutAnalyser, body_size
from pilar.ingest.pdf_page import DocState, PageParse, parse_page
from pilar.ingest.pdf_structure import (assign_sections, document_title, mark_running,
                                        resolve_labels)
from pilar.ingest.pdf_tables import PageTable, continue_table
from pilar.ingest.tables import build_grid
from pilar.ingest.units import add_support, block_units, render_cell, row_units
from pilar.model import Document, Page, ParsedDocument, Support, TableGrid, Unit

__all__ = ["parse_pdf", "open_pdf"]

MAX_WARNINGS = 50
_MUPDF_CODE = re.compile(r"^code=\d+: ")
_SERIOUS = re.compile(r"error|repair|broken|damaged|cannot|invalid|corrupt", re.I)
_UNIT_KIND = {"text": "paragraph", "formula": "paragraph", "list-item": "list_item",
              "caption": "caption", "footnote": "paragraph"}


def open_pdf(data: bytes, settings: Settings) -> pymupdf.Document:
    """Open PDF bytes with MuPDF (repairing damaged files), quietly.

    Raises :class:`IngestError`: "empty file", "corrupt PDF: ...",
    "encrypted PDF: ...", "no pages", or over ``settings.pdf_max_pages``.
    An owner-password-only file opens normally; a user password is tried
    from ``settings.pdf_password``.
    """
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    pymupdf.TOOLS.reset_mupdf_warnings()
    if not data:
        raise IngestError("empty file")
    try:
        pdf = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - MuPDF raises several types
        hint = _mupdf_notes(limit=1)
        what = "truncated or damaged" if b"%%EOF" not in data[-2048:] else "damaged"
        raise IngestError(f"corrupt PDF: {what}, MuPDF could not repair it"
                          f" ({hint[0] if hint else type(exc).__name__})") from None
    if pdf.needs_pass:
        password = settings.pdf_password
        if not password:
            raise IngestError("encrypted PDF: a user password is needed to open it "
                              "(set PILAR_PDF_PASSWORD)")
        if not pdf.authenticate(password):
            raise IngestError("encrypted PDF: the configured PILAR_PDF_PASSWORD does not open it")
    try:
        n = pdf.page_count
    except Exception:  # noqa: BLE001
        n = 0
    if n == 0:
        raise IngestError("no pages: the PDF's page tree is empty or unreadable")
    if n > settings.pdf_max_pages:
        raise IngestError(f"{n} pages, over the {settings.pdf_max_pages}-page limit "
                          "(PILAR_PDF_MAX_PAGES)")
    return pdf


def _mupdf_notes(limit: int = 3) -> list[str]:
    """Distinct MuPDF warnings since the last reset (then reset)."""
    text = pymupdf.TOOLS.mupdf_warnings(reset=True) or ""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line and line not in out:
            out.append(line)
    return out[:limit]


def parse_pdf(data: bytes, doc: Document, settings: Settings,
              on_page: Callable[[int, int], None] | None = None) -> ParsedDocument:
    """Parse PDF ``data`` into a :class:`ParsedDocument` for ``doc``;
    ``on_page(done, total)`` is called once the file is open (``done`` 0)
    and after each page.

    Raises :class:`IngestError` (one-line reason) for files that cannot be
    read at all (see :func:`open_pdf`); damaged pages are skipped with a
    warning. Figure crops are written only when
    ``settings.pdf_figure_crops`` is set (see :mod:`pilar.ingest.pdf_figures`).
    """
    pdf = open_pdf(data, settings)
    if on_page:
        on_page(0, pdf.page_count)  # the page count, before any page is read
    warnings: list[str] = []
    if pdf.is_repaired:
        notes = _mupdf_notes(limit=2)
        warnings.append("damaged PDF repaired by MuPDF" + (f" ({'; '.join(notes)})"
                                                            if notes else ""))
    try:
        meta_title = (pdf.metadata or {}).get("title") or ""
        if pdf.embfile_count():
            warnings.append(f"{pdf.embfile_count()} embedded file(s) ignored")
        analyser = LayoutAnalyser(settings.pdf_layout_features) \
            if settings.pdf_layout == "onnx" else None
        state = DocState()
        pages: list[PageParse] = []
        js_links = 0
        for i in range(pdf.page_count):
            try:
                page = pdf.load_page(i)
                check_content(pdf, page, settings)
                js_links += sum(1 for link in page.get_links()
                                if str(link.get("uri", "")).lower().startswith("javascript:"))
                pages.append(parse_page(page, analyser, settings, warnings, state))
            except IngestError:  # over a page cap
                raise
            except Exception as exc:  # noqa: BLE001 - a broken page must not stop the file
                if out_of_memory(exc):  # over the parse's memory budget: the file fails
                    raise
                why = _MUPDF_CODE.sub("", str(exc).splitlines()[0]) if str(exc) else ""
                warnings.append(f"page {i + 1}: unreadable, skipped ({why or type(exc).__name__})")
                pages.append(PageParse(i + 1, 0.0, 0.0))
            finally:
                page = None
                release_freed()  # what the page's layout analysis freed (bounded memory)
            if on_page:
                on_page(i + 1, pdf.page_count)
        if js_links:
            warnings.append(f"{js_links} javascript: link(s) ignored")
        notes = [n for n in _mupdf_notes() if _SERIOUS.search(n)]
        if notes:
            warnings.append("MuPDF: " + "; ".join(notes))
        return _assemble(doc, pages, meta_title, settings, warnings, pdf)
    finally:
        pdf.close()


def _assemble(doc: Document, pages: list[PageParse], meta_title: str, settings: Settings,
              warnings: list[str], pdf: pymupdf.Document) -> ParsedDocument:
    """Document passes and records (see the module docstring)."""
    blocks = [b for p in pages for b in p.blocks]
    text_blocks = [b for b in blocks if b.obj is None]
    body = body_size(text_blocks)
    mark_running([p.blocks for p in pages], [p.height for p in pages], body)
    resolve_labels(text_blocks, body)
    for p in pages:
        _link_captions(p)
    title = document_title(meta_title, text_blocks, doc.title)
    assign_sections(blocks, title)
    doc.title = title
    doc.n_pages = len(pages)
    out = ParsedDocument(document=doc, pages=[], warnings=warnings)
    prev: tuple[PageTable, TableGrid] | None = None
    caps = RecordCaps(settings)
    for p in pages:
        supports: list[Support] = []
        texts: list[str] = []
        first = True
        units_before = len(out.units)
        for b in p.blocks:
            if b.running:
                continue
            if isinstance(b.obj, PageTable):
                grid = _emit_table(b, p, out, supports, texts, settings, title, prev, first)
                # a merged continuation keeps the columns of the page the table began on
                prev = (b.obj if prev is None or grid is not prev[1] else prev[0], grid)
            elif isinstance(b.obj, Figure):
                _emit_figure(b, p, doc, supports, texts, settings, pdf, warnings)
            else:
                _emit_block(b, p, doc.doc_id, supports, out.units, texts, settings, title)
            first = False
            caps.check(p.number, len(out.units) - units_before, len(supports))
        last = next((b for b in reversed(p.blocks) if not b.running), None)
        if last is None or not isinstance(last.obj, PageTable):
            prev = None  # only a table ending its page can go on on the next
        out.supports.extend(supports)
        out.pages.append(Page(doc_id=doc.doc_id, number=p.number, text="\n".join(texts),
                              width=p.width, height=p.height))
    if len(warnings) > MAX_WARNINGS:
        del warnings[MAX_WARNINGS:]
        warnings.append("more warnings dropped")
    return out


def _link_captions(p: PageParse) -> None:
    """Link tables and figures of a page to their captions (in place): a
    short block centred right above a table is its caption (an infobox's
    title, an HTML ``<caption>`` printed), else the nearest "Table N" /
    "Figure N" / analyser caption block (:func:`nearest_caption`)."""
    text_blocks = [b for b in p.blocks if b.obj is None and not b.running]
    for b in p.blocks:
        if isinstance(b.obj, PageTable):
            cap = _centred_above(b.bbox, text_blocks)
            if cap is not None:
                cap.label = "caption"
                cap.extra["caption_of"] = True
                b.extra["caption"] = cap.text
    for b in p.blocks:
        if isinstance(b.obj, (PageTable, Figure)) and "caption" not in b.extra:
            cap = nearest_caption(b.bbox, text_blocks, for_table=isinstance(b.obj, PageTable))
            if cap is not None:
                cap.extra["caption_of"] = True
                b.extra["caption"] = cap.text


def _centred_above(box, blocks: list[Block]) -> Block | None:
    width = box[2] - box[0]
    centre = (box[0] + box[2]) / 2
    for b in blocks:
        gap = box[1] - b.bbox[3]
        if (-2 <= gap <= 10 and len(b.lines) <= 3 and b.bbox[2] - b.bbox[0] < 0.9 * width
                and abs((b.bbox[0] + b.bbox[2]) / 2 - centre) < 0.1 * width
                and not b.extra.get("caption_of")):
            return b
    return None


def _emit_block(b: Block, p: PageParse, doc_id: str, supports: list[Support],
                units: list[Unit], texts: list[str], settings: Settings, title: str) -> None:
    bbox = p.display_bbox(b.bbox)
    if b.label in ("title", "section-header"):
        add_support(supports, kind="heading", text=b.text[:settings.max_unit_chars],
                    doc_id=doc_id, page=p.number, section_path=b.section_path, bbox=bbox)
        texts.append(b.text)
        return
    kind = _UNIT_KIND.get(b.label, "paragraph")
    start = len(supports)
    new = block_units(kind, b.text, supports, doc_id=doc_id, page=p.number, page_title=title,
                      section_path=b.section_path, bbox=bbox, max_chars=settings.max_unit_chars)
    if b.label == "footnote":
        for s in supports[start:]:
            s.kind = "footnote"
    units.extend(new)
    texts.append(b.text)


def _emit_table(b: Block, p: PageParse, out: ParsedDocument, supports: list[Support],
                texts: list[str], settings: Settings, title: str,
                prev: tuple[PageTable, TableGrid] | None, first: bool) -> TableGrid:
    table: PageTable = b.obj  # type: ignore[assignment]
    doc_id = out.document.doc_id
    rows = [[_display_cell(c, p) for c in row] for row in table.rows]
    grid = build_grid(rows, table_index=len(out.tables), doc_id=doc_id, page=p.number,
                      caption=b.extra.get("caption", ""), section_path=b.section_path,
                      bbox=p.display_bbox(b.bbox), max_span=settings.max_span,
                      warnings=out.warnings, notes=_notes(b, p))
    if len(table.groups) == grid.n_rows:  # a statement's outline (pdf_statements)
        grid.group_labels = [g if k != "header" else None
                             for g, k in zip(table.groups, grid.row_kinds)]
    added = None
    if first and prev is not None and (prev[1].row_pages or [prev[1].page])[-1] == p.number - 1:
        n0 = prev[1].n_rows
        added = continue_table(grid, table, *prev)
        if added is not None and added.start < n0:  # the last row went on: its unit again
            _amend_row(prev[1], added.start, out, title, settings)
            added = range(n0, added.stop)
    if added is not None:
        grid = prev[1]  # rows appended to the table of the previous page
    else:
        out.tables.append(grid)
        added = range(grid.n_rows)
    lines = []
    for row in grid.cells[added.start:added.stop]:
        cells, last = [], None
        for cell in row:
            if cell is not last and cell.text:
                cells.append(render_cell(cell.text))
            last = cell
        if cells:
            lines.append(" | ".join(cells))
    body = "\n".join(lines)
    add_support(supports, kind="table", text=body[:settings.max_unit_chars], doc_id=doc_id,
                page=p.number, section_path=grid.section_path, bbox=p.display_bbox(b.bbox),
                table_index=grid.table_index)
    out.units.extend(row_units(grid, supports, title, max_chars=settings.max_unit_chars,
                               rows=added))
    texts.append(body)
    return grid


def _notes(b: Block, p: PageParse) -> dict[str, str]:
    """Footnotes of the table in block ``b``
    (:func:`~pilar.ingest.footnotes.note_lines`): its rows holding one cell
    of text, and the first text blocks after it on the page, up to the next
    heading or table; ``{}`` when no cell of it could hold a marker (raised
    text, a superscript character or a note symbol)."""
    table: PageTable = b.obj  # type: ignore[assignment]
    if not any(cell.marker or has_mark(cell.text) for row in table.rows for cell in row):
        return {}
    notes: dict[str, str] = {}
    for row in table.rows:
        filled = [cell.text for cell in row if cell.text]
        if len(filled) == 1:
            notes.update(note_lines(filled[0]))
    after = p.blocks[p.blocks.index(b) + 1:]
    for block in after[:3]:
        if block.obj is not None or block.label in ("title", "section-header"):
            break
        for key, text in note_lines("\n".join(ln.text for ln in block.lines)).items():
            notes.setdefault(key, text)
    return notes


def _amend_row(grid: TableGrid, r: int, out: ParsedDocument, title: str,
               settings: Settings) -> None:
    """Rewrite, in place, the unit and support of row ``r`` of ``grid``
    (emitted on an earlier page) after the row's text went on on the next
    page; ids and provenance page stay."""
    unit = next((u for u in out.units if u.table_index == grid.table_index
                 and u.row_index == r), None)
    if unit is None:
        return
    [new] = row_units(grid, [], title, max_chars=settings.max_unit_chars, rows=range(r, r + 1))
    support = next(s for s in out.supports if s.support_id == unit.support_id)
    support.text = new.text
    unit.text, unit.completed_text, unit.cells = new.text, new.completed_text, new.cells


def _display_cell(cell, p: PageParse):
    if cell.bbox is not None:
        cell.bbox = p.display_bbox(cell.bbox)
    return cell


def _emit_figure(b: Block, p: PageParse, doc: Document, supports: list[Support],
                 texts: list[str], settings: Settings, pdf: pymupdf.Document,
                 warnings: list[str]) -> None:
    fig: Figure = b.obj  # type: ignore[assignment]
    caption = b.extra.get("caption", "")
    text = "\n".join(t for t in (caption, fig.text) if t) or "figure"
    support = add_support(supports, kind="figure", text=text[:settings.max_unit_chars],
                          doc_id=doc.doc_id, page=p.number, section_path=b.section_path,
                          bbox=p.display_bbox(b.bbox))
    if fig.text:
        texts.append(fig.text)
    if settings.pdf_figure_crops:
        try:
            write_crop(pdf.load_page(p.number - 1), fig,
                       crop_path(settings.home, support.support_id),
                       settings.figure_dpi, settings.pdf_max_render_pixels)
        except (OSError, RuntimeError, ValueError) as exc:
            warnings.append(f"page {p.number}: figure crop not written ({exc})")
