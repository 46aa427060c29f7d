"""Tables on PDF pages: where they are, their cells, their headers.

PILAR App. E.1 extracts tables from the PyMuPDF page; Tessera §3.3 wants
them in the same faithful grid as HTML tables, so this module only finds
cells and hands them to :func:`pilar.ingest.tables.build_grid` as
:class:`~pilar.ingest.tables.SourceCell` rows (text, header flag, spans,
bbox).

PyMuPDF's table finder costs ~50 ms per call on a clipped region and ~290 ms
on a whole page, so it runs only on candidate regions found cheaply first:

- ruled tables: clusters of thin vector rules (``page.get_drawings()``,
  ~2 ms per page) with at least two horizontal and two vertical rules
  (``strategy="lines"``, one call for all of a page's ruled regions), or
  three or more full-width horizontal rules (horizontal lines, vertical
  text alignment);
- unruled tables: the layout analyser's ``table`` regions
  (``strategy="text"``), kept only when their text lines do not run across
  the column boundaries (prose cut into columns is no table);
- frames (two or more vertical rules, no grid: a box continued from the
  previous page) are returned so their text is known to be boxed, but are
  not searched;
- scanned pages: the rules found in the render (:mod:`pilar.ingest.ocr`)
  are cut into a lattice of cells directly (:func:`raster_tables`).

A "table" whose one cell holds most of its words is a page frame and is
dropped. Cell text is read from the page's (or OCR) words (a word belongs
to the cell holding its centre), not from the finder's own text, which
splits punctuation into separate lines. Lines inside a cell are joined with
a space when the text wrapped, with ``"\\n"`` when the line ended early (a
hard break). A cell is a header cell when most of its words are bold and it
is not a number. A table at the top of a page that continues the previous
page's last table inherits its header (:func:`continue_table`).
Coordinates are PDF points.
"""

from __future__ import annotations

import pymupdf

from pilar.ingest.pdf_layout import Line
from pilar.ingest.pdf_rules import (Box, Candidate, clusters, horizontal_rules, lattice,
                                     ruled_candidates)
from pilar.ingest.pdf_table_cells import PageTable, axis, read_cells
from pilar.model import TableGrid

__all__ = ["Candidate", "PageTable", "continue_table", "find_tables", "horizontal_rules",
           "raster_tables", "region_candidates", "ruled_candidates"]


def region_candidates(regions: list[tuple[pymupdf.Rect, str]], found: list[PageTable]
                      ) -> list[Candidate]:
    """The layout analyser's ``table`` regions not already covered (over
    30%) by a table in ``found``, to be read by text alignment."""
    rects = [pymupdf.Rect(t.bbox) for t in found]
    return [Candidate(pymupdf.Rect(rect), "text") for rect, label in regions
            if label == "table" and not any(_cover(rect, r) > 0.3 for r in rects)]


def _cover(a: pymupdf.Rect, b: pymupdf.Rect) -> float:
    """Share of ``a`` covered by ``b``."""
    inter = pymupdf.Rect(a) & b
    return inter.get_area() / a.get_area() if a.get_area() > 0 and not inter.is_empty else 0.0


def find_tables(page: pymupdf.Page, lines: list[Line], words: list[tuple],
                cands: list[Candidate], warnings: list[str],
                drawings: list[dict] | None = None,
                hrules: list[Box] | None = None) -> list[PageTable]:
    """Run PyMuPDF's finder on the candidate regions and read the cells.

    All ruled candidates of a page share one finder call clipped to their
    union (the ``lines`` strategy only sees rules, so text between them
    does not matter); other candidates get one call each. ``words`` are
    ``page.get_text("words")`` tuples; ``drawings`` (``get_drawings()`` of
    the page in its own frame, optional) spare the finder extracting them
    again; ``hrules`` (:func:`horizontal_rules`) are the drawn row
    boundaries: rows the finder cut where no rule runs are joined again when
    they are one wrapped cell
    (:func:`pilar.ingest.pdf_table_cells.read_cells`). A finder failure
    appends a warning and skips the region.
    Tables with fewer than two columns, or two rows unless ruled, are
    discarded (rows and columns without text are dropped first).
    """
    out: list[PageTable] = []
    ruled = [c.rect for c in cands if c.strategy == "lines"]
    calls: list[tuple[pymupdf.Rect, str]] = []
    if ruled:
        union = pymupdf.Rect(ruled[0])
        for r in ruled[1:]:
            union |= r
        calls.append((union, "lines"))
    calls += [(c.rect, c.strategy) for c in cands if c.strategy in ("lines_h", "text")]
    for rect, strategy in calls:
        clip = pymupdf.Rect(rect) + (-2, -2, 2, 2)
        if strategy == "lines":
            kwargs = {"strategy": "lines"}
        elif strategy == "lines_h":
            kwargs = {"horizontal_strategy": "lines", "vertical_strategy": "text"}
        else:
            kwargs = {"strategy": "text"}
        if drawings is not None:  # the finder edits paths in place: give it copies
            kwargs["paths"] = [dict(d, rect=pymupdf.Rect(d["rect"]), items=[
                (it[0], pymupdf.Rect(it[1]), *it[2:]) if it[0] == "re" else it
                for it in d["items"]]) for d in drawings]
        try:
            finder = page.find_tables(clip=clip, use_layout=False, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a finder bug must not stop the page
            warnings.append(f"page {page.number + 1}: table finder failed ({type(exc).__name__})")
            continue
        for tab in (finder.tables if finder else ()):
            table = read_cells(tab.cells, lines, words, strategy, hrules=hrules or [])
            if table and not any(_cover(pymupdf.Rect(table.bbox), pymupdf.Rect(t.bbox)) > 0.5
                                 for t in out):
                out.append(table)
    return out


def raster_tables(horizontal: list[Box], vertical: list[Box], lines: list[Line],
                  words: list[tuple]) -> list[PageTable]:
    """Ruled tables of a scanned page, from the rules found in its render
    (:func:`pilar.ingest.ocr.remove_rules`, thin boxes in points) and its
    OCR words: the lattice of rule positions in each cluster is cut into
    cells, neighbouring slots merged where no rule separates them."""
    out: list[PageTable] = []
    boxes = horizontal + vertical
    n_h = len(horizontal)
    for group in clusters(boxes):
        hs = [boxes[i] for i in group if i < n_h]
        vs = [boxes[i] for i in group if i >= n_h]
        ys = axis([(b[1] + b[3]) / 2 for b in hs], 3.0)
        xs = axis([(b[0] + b[2]) / 2 for b in vs], 3.0)
        if len(ys) < 2 or len(xs) < 3:
            continue
        cells = lattice(xs, ys, hs, vs)
        table = read_cells(cells, lines, words, "lines", hard_breaks=False)
        if table:
            out.append(table)
    return out


def continue_table(grid: TableGrid, table: PageTable, prev_table: PageTable,
                   prev_grid: TableGrid) -> bool:
    """Let a table that continues the previous page's last table inherit
    its header, caption and title (in place; Tessera §3.3 "every row keeps
    its headers"). It continues it when it has no bold header row of its
    own and each of its columns starts where a column of the previous table
    starts (within 4 points; a column left empty on one page may be
    missing); a header row guessed from its first row is read as a body row
    again. Returns whether it was continued."""
    if table.header_rows or not any(prev_grid.header_paths):
        return False
    if grid.n_cols != len(table.col_x0) or prev_grid.n_cols != len(prev_table.col_x0):
        return False
    mapping = []
    for x in table.col_x0:
        j = min(range(len(prev_table.col_x0)), key=lambda k: abs(prev_table.col_x0[k] - x))
        if abs(prev_table.col_x0[j] - x) > 4:
            return False
        mapping.append(j)
    grid.header_paths = [prev_grid.header_paths[j] for j in mapping]
    grid.row_kinds = ["body" if k in ("header", "title") else k for k in grid.row_kinds]
    grid.caption = grid.caption or prev_grid.caption
    grid.title = grid.title or prev_grid.title
    return True
