"""Tables on PDF pages: where they are, their cells, their headers.

PILAR App. E.1 extracts tables from the PyMuPDF page; Tessera §3.3 wants
them in the same faithful grid as HTML tables, so this module only finds
cells and hands them to :func:`pilar.ingest.tables.build_grid` as
:class:`~pilar.ingest.tables.SourceCell` rows (text, header flag, spans,
bbox).

PyMuPDF's table finder costs ~50 ms per call on a clipped region and ~290 ms
on a whole page (less with its character list built by
:mod:`pilar.ingest.pdf_chars`), so it runs only on candidate regions found
cheaply first:

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
page's last table is merged into it, under its header, each row citing its
own page (:func:`continue_table`).
Coordinates are PDF points.
"""

from __future__ import annotations

import pymupdf

from pilar.ingest import pdf_chars
from pilar.ingest.pdf_layout import Line
from pilar.ingest.pdf_rules import (Box, Candidate, clusters, horizontal_rules, lattice,
                                     rule_rows, ruled_candidates)
from pilar.ingest.pdf_statements import glue_amounts, read_statement
from pilar.ingest.pdf_table_cells import PageTable, axis, read_cells
from pilar.ingest.pdf_table_split import figures, line_rows
from pilar.ingest.tables import cell_id
from pilar.model import GridCell, TableGrid

pdf_chars.install()  # the finder's character list, the same, built faster

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
    (:func:`pilar.ingest.pdf_table_cells.read_cells`). A region of
    horizontal rules (and at most one vertical) where the finder sees no
    table is cut into rows between its rules
    (:func:`pilar.ingest.pdf_rules.rule_rows`), then into the columns and
    rows its text shows. A region to read by text alignment where the
    finder finds no table or one cut through its words is read line by
    line, cut where white space sets columns apart (:func:`_aligned`). A
    region to read by text
    alignment laid out as a financial statement is read as one
    (:func:`pilar.ingest.pdf_statements.read_statement`). A finder failure
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
        if strategy == "text":
            statement = read_statement(glue_amounts(
                [w for w in words if clip.contains(((w[0] + w[2]) / 2, (w[1] + w[3]) / 2))]),
                lines)
            if statement is not None:
                out.append(statement)
                continue
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
        found = [tab.cells for tab in (finder.tables if finder else ())]
        if strategy == "lines_h" and not found:
            # the finder's text columns end at the words, short of the rules
            # above and below them: rows between the rules, cut by the text
            found, strategy = [rule_rows(rect, drawings, hrules or [])], "lines"
        n_found = len(out)
        for cells in found:
            table = read_cells(cells, lines, words, strategy, hrules=hrules or [])
            if table and not any(_cover(pymupdf.Rect(table.bbox), pymupdf.Rect(t.bbox)) > 0.5
                                 for t in out):
                out.append(table)
        if strategy == "text" and len(out) == n_found:
            table = _aligned(clip, lines, words, hrules or [])
            if table is not None:
                out.append(table)
    return out


def _aligned(clip: pymupdf.Rect, lines: list[Line], words: list[tuple],
             hrules: list[Box]) -> PageTable | None:
    """A text table the finder misses or cuts through its words (columns
    aligned on their right edges, right-to-left text): each visual line of
    ``clip`` a row, cut into the columns white space sets apart
    (:func:`pilar.ingest.pdf_table_split.column_cuts`). Kept with three or
    more columns, at most four words a cell (median) and a column of
    figures (two thirds of its cells in the rows below the first without
    spans), else ``None``: a list set in several columns is no table."""
    table = read_cells(line_rows(clip, words), lines, words, "lines", hrules=hrules)
    if table is None or table.n_cols < 3:
        return None
    sizes = sorted(len(c.text.split()) for row in table.rows for c in row if c.text)
    body = [r for r in table.rows[1:] if len(r) == table.n_cols]  # rows without spans
    numeric = any(3 * sum(figures(r[c].text) for r in body)
                  >= 2 * max(1, sum(1 for r in body if r[c].text)) for c in range(table.n_cols))
    return table if numeric and sizes[len(sizes) // 2] <= 4 else None


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
                   prev_grid: TableGrid) -> range | None:
    """Merge a table that continues the previous page's last table into
    that table's grid, in place (Tessera §3.3 "every row keeps its
    headers"; the top complaint about PDF readers). Returns the rows of
    ``prev_grid`` that came from ``grid`` (``None`` when it is no
    continuation, and nothing changed).

    The range starts one row early when the first row was the tail of the
    previous page's last row (its texts joined to it).

    ``grid`` continues ``prev_grid`` when each of its columns starts where a
    column of the previous table starts (within 4 points; a column left
    empty on one page may be missing), or when it has as many columns and
    repeats the header. Its header rows, when it has some, must repeat the
    previous header labels: they become repeated header rows (no units);
    a header row guessed from a first row of values is read as a body row
    again; a title row ("continued") stays a title. A first row whose
    first cell is empty under a table whose rows all fill it is the tail of
    the previous page's last row: its texts are joined to that row (rows
    counted once). Appended rows get their own cell ids and
    ``prev_grid.row_pages`` records each row's page; rows before the
    continuation's first group row keep the last group label."""
    if not any(prev_grid.header_paths) or grid.n_rows == 0:
        return None
    mapping = _column_mapping(table, prev_table, grid, prev_grid)
    if mapping is None:
        return None
    heads = [r for r, k in enumerate(grid.row_kinds) if k in ("header", "title")]
    labels = [" ".join(" ".join(p).split()) for p in prev_grid.header_paths]
    repeats = bool(heads) and all(
        " ".join(" ".join(grid.header_paths[c]).split()) == labels[j]
        for c, j in enumerate(mapping))
    if table.header_rows and not repeats:
        return None  # a header of its own: another table
    kinds = [("header" if repeats else "body") if k == "header" else k for k in grid.row_kinds]
    n0 = prev_grid.n_rows
    if not prev_grid.row_pages:
        prev_grid.row_pages = [prev_grid.page] * n0
    rows = list(range(grid.n_rows))
    first_body = next((r for r in rows if kinds[r] == "body"), None)
    start = n0
    if first_body is not None and _tail_of_last_row(grid, first_body, mapping, prev_grid):
        start = n0 - 1
        last = prev_grid.cells[n0 - 1]
        for c, j in enumerate(mapping):
            cell = grid.cells[first_body][c]
            if cell.text and cell.origin == (first_body, c):
                last[j].text = f"{last[j].text} {cell.text}" if last[j].text else cell.text
        rows.remove(first_body)
    group = next((g for g in reversed(prev_grid.group_labels) if g), None)
    moved: dict[int, GridCell] = {}
    for r in rows:
        line: list[GridCell] = []
        ri = prev_grid.n_rows
        for j in range(prev_grid.n_cols):
            c = mapping.index(j) if j in mapping else None
            cell = grid.cells[r][c] if c is not None else None
            if cell is None:
                line.append(GridCell(cell_id=cell_id(prev_grid.doc_id, prev_grid.table_index,
                                                     ri, j), text="", origin=(ri, j)))
                continue
            if id(cell) not in moved:  # met first where it starts (rows top down)
                cell.origin = (ri, j)
                cell.cell_id = cell_id(prev_grid.doc_id, prev_grid.table_index, ri, j)
                moved[id(cell)] = cell
            line.append(cell)
        prev_grid.cells.append(line)
        prev_grid.row_kinds.append(kinds[r])
        if kinds[r] == "group":
            group = None
        prev_grid.group_labels.append(grid.group_labels[r] or group)
        prev_grid.row_pages.append(grid.page)
    return range(start, prev_grid.n_rows)


def _column_mapping(table: PageTable, prev_table: PageTable, grid: TableGrid,
                    prev_grid: TableGrid) -> list[int] | None:
    """For each column of ``grid``, the column of ``prev_grid`` it
    continues: by left edges (within 4 points), else one to one when both
    have as many columns and ``grid`` starts with the same header labels."""
    if grid.n_cols == len(table.col_x0) and prev_grid.n_cols == len(prev_table.col_x0):
        mapping = []
        for x in table.col_x0:
            j = min(range(len(prev_table.col_x0)), key=lambda k: abs(prev_table.col_x0[k] - x))
            if abs(prev_table.col_x0[j] - x) > 4 or j in mapping:
                break
            mapping.append(j)
        else:
            return mapping
    if grid.n_cols == prev_grid.n_cols and grid.header_paths == prev_grid.header_paths \
            and any(k == "header" for k in grid.row_kinds):
        return list(range(grid.n_cols))
    return None


def _tail_of_last_row(grid: TableGrid, r: int, mapping: list[int], prev: TableGrid) -> bool:
    """Row ``r`` of ``grid`` is the rest of ``prev``'s last row, cut by the
    page break: its first cell is empty while every body row of ``prev``
    fills it, it holds some text, and ``prev`` ends with a body row."""
    if prev.row_kinds[-1] != "body" or 0 not in mapping or mapping.index(0) != 0:
        return False
    row = grid.cells[r]
    if row[0].text or not any(cell.text for cell in row):
        return False
    body = [prev.cells[i][0] for i, k in enumerate(prev.row_kinds) if k == "body"]
    return len(body) >= 2 and all(cell.text for cell in body)
