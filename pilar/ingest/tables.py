"""The faithful table grid (Tessera §3.3), shared by HTML and PDF ingestion.

A parser (HTML or PDF) describes a table as rows of :class:`SourceCell`
(text, header flag, spans, bbox or CSS path) in reading order and calls
:func:`build_grid`, which

1. resolves ``rowspan``/``colspan`` into a rectangular grid (the HTML table
   model: a spanning cell fills every slot it covers, the slots share one
   :class:`~pilar.model.GridCell`), capping absurd spans and grid sizes;
2. drops columns and rows in which no cell starts (they only repeat a span,
   e.g. ``colspan="10000"`` over a two-column table);
3. classifies every row (:func:`classify_rows`): title rows (one cell spanning
   the full width at the top), header rows (``th`` rows at the top, stopping
   at a row whose cells span down into the body; else a first row of ``th``
   and bold cells; else, when the table has no ``th`` at all, a first row
   of distinct labels over a column of another kind, such as quantities:
   :func:`_looks_like_header`), group rows inside the body (one
   full-width cell, or a ``th``-only row with one label) that label the rows
   below them, repeated header rows (an exact repetition of a header row;
   rows of header cells may repeat it loosely; the only body rows are never
   taken for repeats), key-value rows (``th`` + ``td``, as in
   infoboxes, when the table has no header rows) and body rows;
4. combines multi-row headers into one header path per column, dropping the
   repeats that colspans and rowspans produce
   (``("Peak chart positions", "US")``).

Nested tables inherit the enclosing table's title and headers with
:func:`inherit`. Cell text keeps line breaks (``<br>``, list items, blocks
inside a cell) as ``"\\n"``; units render them as ``" / "``.

Grid coordinates are 0-based (row, col); cell ids are
``f"{doc_id}:t{table_index}:r{row}c{col}"`` of the slot where the cell starts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pilar.ingest.footnotes import split_marker
from pilar.model import BBox, GridCell, RowKind, TableGrid

__all__ = ["SourceCell", "build_grid", "classify_rows", "inherit", "cell_id",
           "MAX_GRID_ROWS", "MAX_GRID_COLS", "MAX_GRID_SLOTS"]

MAX_GRID_ROWS = 20_000
"""Rows kept per table; later rows are dropped with a warning."""
MAX_GRID_COLS = 1_000
"""Columns kept per table; cells beyond are dropped with a warning."""
MAX_GRID_SLOTS = 2_000_000
"""Grid slots (rows x columns before collapsing) kept per table."""

_GROUP_MAX_CHARS = 120
_NUMERIC = re.compile(r"^[\d\s.,:;%+\-\u2212\u2013\u2014()/$€£¥#*]+$")
_STARTS_NUMERIC = re.compile(r"^[\s$€£¥#+\-\u2212(~≈<>≤≥.]*\d")
_QUANTITY = re.compile(r"^[\s$€£¥#+\-\u2212(~≈<>≤≥.]*\d[\d\s.,:/%()\-\u2212\u2013]*(\s*\S+){0,2}$")
_YEAR = re.compile(r"^(1[5-9]|20)\d\d$")
_SAMPLE_ROWS = 10


@dataclass(slots=True)
class SourceCell:
    """One cell as the source shows it, before spans are resolved.

    ``text`` uses ``"\\n"`` for line breaks inside the cell. ``rowspan`` and
    ``colspan`` are the declared spans (values < 1 count as 1; over
    ``max_span`` are capped). ``emphasis`` marks a cell whose whole text is
    bold (a ``td`` styled as a header): a first row of such cells is read as
    a header row. ``bbox`` is in PDF points (PDF), ``css_path`` the cell's
    CSS path (HTML). ``marker`` is trailing text printed raised (an HTML
    ``sup``, a PDF superscript span); ``notes`` are set by :func:`build_grid`
    to the footnotes of a marker it split from the text
    (:mod:`pilar.ingest.footnotes`). ``origin`` is set by
    :func:`build_grid` to the (row, col) where the cell landed, or stays
    ``None`` when a size cap dropped it.
    """

    text: str
    is_header: bool = False
    rowspan: int = 1
    colspan: int = 1
    bbox: BBox | None = None
    css_path: str | None = None
    emphasis: bool = False
    origin: tuple[int, int] | None = None
    marker: str = ""
    notes: tuple[str, ...] = ()


def cell_id(doc_id: str, table_index: int, row: int, col: int) -> str:
    """The id of the grid cell starting at (``row``, ``col``)."""
    return f"{doc_id}:t{table_index}:r{row}c{col}"


def build_grid(rows: Sequence[Sequence[SourceCell]], *, table_index: int, doc_id: str,
               page: int, caption: str = "", section_path: tuple[str, ...] = (),
               kind: str = "table", css_path: str | None = None, bbox: BBox | None = None,
               parent_index: int | None = None, max_span: int = 1000,
               max_rows: int = MAX_GRID_ROWS, max_cols: int = MAX_GRID_COLS,
               warnings: list[str] | None = None,
               notes: dict[str, str] | None = None) -> TableGrid:
    """Resolve ``rows`` of source cells into a :class:`~pilar.model.TableGrid`
    (Tessera §3.3 "faithful grid").

    ``kind`` is ``"table"`` or ``"infobox"`` (infoboxes read ``th``/``td``
    rows as key-value pairs and only take ``th`` rows as group labels).
    Spans are capped at ``max_span``, rows spans also at the rows left in the
    table; the grid at ``max_rows`` x ``max_cols`` and :data:`MAX_GRID_SLOTS`.
    Each cap that bites appends one line to ``warnings``. ``notes`` are the
    table's footnotes (``{marker: text}``, :func:`pilar.ingest.footnotes.note_lines`):
    a marker glued to a cell's text that has a note is split off into the
    cell's ``notes``. Never raises on odd input: an empty table gives an
    empty grid (``n_rows == 0``).
    """
    label = f"table {table_index}"

    def warn(msg: str) -> None:
        if warnings is not None:
            warnings.append(f"{label}: {msg}")

    flat = [cell for row in rows for cell in row]
    if notes:
        for cell in flat:
            cell.text, cell.notes = split_marker(cell.text, notes, cell.marker)
    slots, placed = _place(rows, max_span, max_rows, max_cols, warn)
    # Drop columns / rows in which no cell starts: they only repeat a span.
    width = max((len(line) for line in slots), default=0)
    used_cols = sorted({c for _, (_, c) in placed})
    used_rows = sorted({r for _, (r, _) in placed})
    col_map = {c: i for i, c in enumerate(used_cols)}
    row_map = {r: i for i, r in enumerate(used_rows)}
    grid_cells: dict[int, GridCell] = {}
    emphasized: set[str] = set()
    for k, (r, c) in placed:
        src = flat[k]
        origin = (row_map[r], col_map[c])
        src.origin = origin
        grid_cells[k] = GridCell(cell_id=cell_id(doc_id, table_index, *origin), text=src.text,
                                 is_header=src.is_header, origin=origin, bbox=src.bbox,
                                 css_path=src.css_path, notes=src.notes)
        if src.emphasis:
            emphasized.add(grid_cells[k].cell_id)
    cells: list[list[GridCell]] = []
    keep_all_cols = len(used_cols) == width
    for r in used_rows:
        line = slots[r]
        if len(line) < width:
            line = line + [-1] * (width - len(line))
        if not keep_all_cols:
            line = [line[c] for c in used_cols]
        ri = len(cells)
        out = []
        for ci, k in enumerate(line):
            gc = grid_cells.get(k) if k >= 0 else None
            if gc is None:
                gc = GridCell(cell_id=cell_id(doc_id, table_index, ri, ci), text="",
                              origin=(ri, ci))
            out.append(gc)
        cells.append(out)
    row_kinds, title, header_paths, group_labels = classify_rows(cells, kind=kind,
                                                                 emphasized=emphasized)
    return TableGrid(table_index=table_index, doc_id=doc_id, page=page, cells=cells,
                     row_kinds=row_kinds, header_paths=header_paths,
                     group_labels=group_labels, caption=caption, title=title,
                     section_path=section_path, kind="infobox" if kind == "infobox" else "table",
                     css_path=css_path, bbox=bbox, parent_index=parent_index)


def _place(rows: Sequence[Sequence[SourceCell]], max_span: int, max_rows: int,
           max_cols: int, warn) -> tuple[list[list[int]], list[tuple[int, tuple[int, int]]]]:
    """The HTML table model: slots[r][c] = number of the source cell covering
    (r, c) (cells numbered row by row) or -1; also (number, origin) pairs."""
    n_src = len(rows)
    if n_src > max_rows:
        warn(f"{n_src} rows, kept the first {max_rows}")
        n_src = max_rows
    slots: list[list[int]] = []
    placed: list[tuple[int, tuple[int, int]]] = []
    carry_cell: list[int] = []  # per column: the cell spanning down into the next row
    carry_left: list[int] = []  # per column: how many more rows it covers
    k = -1
    n_slots = 0
    span_capped = col_capped = False
    for r in range(n_src):
        line: list[int] = []
        c = 0
        for cell in rows[r]:
            k += 1
            while c < len(carry_left) and carry_left[c] > 0:
                line.append(carry_cell[c])
                carry_left[c] -= 1
                c += 1
            rs, cs = cell.rowspan, cell.colspan
            if rs < 1:
                rs = 1
            if cs < 1:
                cs = 1
            if rs > max_span or cs > max_span:
                span_capped = True
                rs, cs = min(rs, max_span), min(cs, max_span)
            rs = min(rs, n_src - r)
            if c + cs > max_cols:
                col_capped = True
                cs = max_cols - c
                if cs <= 0:
                    continue
            placed.append((k, (r, c)))
            if c + cs > len(carry_left):
                grow = c + cs - len(carry_left)
                carry_left.extend([0] * grow)
                carry_cell.extend([-1] * grow)
            for j in range(c, c + cs):
                line.append(k)
                carry_left[j] = rs - 1
                carry_cell[j] = k
            c += cs
        while c < len(carry_left):
            if carry_left[c] > 0:
                line.append(carry_cell[c])
                carry_left[c] -= 1
            else:
                line.append(-1)
            c += 1
        while line and line[-1] < 0:
            line.pop()
        slots.append(line)
        n_slots += len(line)
        if n_slots > MAX_GRID_SLOTS:
            warn(f"grid larger than {MAX_GRID_SLOTS} slots, kept the first {r + 1} rows")
            break
    if span_capped:
        warn(f"rowspan/colspan over {max_span} capped")
    if col_capped:
        warn(f"more than {max_cols} columns, cells beyond dropped")
    return slots, placed


def classify_rows(cells: list[list[GridCell]], *, kind: str = "table",
                  emphasized: set[str] | frozenset[str] = frozenset()
                  ) -> tuple[list[RowKind], str, list[tuple[str, ...]], list[str | None]]:
    """Row kinds, title, per-column header paths and per-row group labels of
    a resolved grid (Tessera §3.3). ``emphasized`` holds the ids of bold
    ``td`` cells (header hints). See the module docstring for the rules."""
    n = len(cells)
    width = len(cells[0]) if cells else 0
    kinds: list[RowKind] = ["body"] * n
    groups: list[str | None] = [None] * n
    if not n:
        return kinds, "", [], groups
    distinct = [_distinct(row) for row in cells]
    infobox = kind == "infobox"

    def full_width(r: int) -> bool:
        return width > 1 and len(distinct[r]) == 1

    def all_header(r: int) -> bool:
        seen = False
        for cell in distinct[r]:
            if cell.is_header:
                seen = True
            elif cell.text:
                return False
        return seen

    def spans_into_body(r: int) -> bool:
        # A cell starting here that runs down into a row that is not all th
        # (row headers of the body, e.g. th scope="row" beside a rowspan).
        if r + 1 >= n or all_header(r + 1):
            return False
        below = cells[r + 1]
        return any(cell.origin[0] == r and below[c] is cell for c, cell in enumerate(cells[r]))

    def key_value(r: int) -> bool:  # a th key, then td values
        row = distinct[r]
        return len(row) >= 2 and row[0].is_header and not any(c.is_header for c in row[1:])

    # Title rows: one cell across the full width at the top (the first may be
    # a td, later ones only th), while a body row is still to follow.
    titles: list[str] = []
    r = 0
    while r < n - 1 and full_width(r) and (r == 0 or distinct[r][0].is_header):
        kinds[r] = "title"
        if distinct[r][0].text:
            titles.append(distinct[r][0].text.replace("\n", " "))
        r += 1

    # Header rows: th rows at the top (a full-width th row after them starts
    # the body as a group label).
    h0 = r
    if not infobox:
        while r < n and all_header(r) and not (r > h0 and full_width(r)) \
                and not spans_into_body(r):
            r += 1
        if r == n and n - h0 > 1:  # every row is th: only the first is a header
            r = h0 + 1
        if r == h0 and r < n - 1 and (_mostly_header(distinct[h0], emphasized)
                                      or _looks_like_header(cells, distinct, h0)) \
                and not (spans_into_body(h0) and _holds_values(distinct[h0][1:])) \
                and not (key_value(h0) and key_value(h0 + 1)):
            r = h0 + 1
    header_rows = range(h0, r)
    for i in header_rows:
        kinds[i] = "header"
    # A header cell that runs down over two or more body rows is a row label
    # of the rows it covers, not a column header: no column's path names it.
    labels = {id(cells[i][c]) for i in header_rows for c in range(width)
              if r + 1 < n and cells[r + 1][c] is cells[i][c]}
    header_paths = [_header_path(cells, header_rows, c, labels) for c in range(width)]
    header_texts = {_row_text(distinct[i]) for i in header_rows}
    loose_texts = {tuple(_key(cell.text) for cell in distinct[i]) for i in header_rows}
    last_labels = [_key(path[-1]) if path else "" for path in header_paths]

    def repeats_header(i: int) -> bool:
        # An exact repetition of a whole header row (same text, same case).
        # A row marked up as header cells (th, bold td, bold PDF cells) may
        # repeat one loosely, case kept: "Pos" for "Pos.", or most of its
        # cells (two or more) repeating their own column's label. A row of
        # plain values never does ("a | b" under "A | B" is data).
        if _row_text(distinct[i]) in header_texts:
            return True
        if not all(cell.is_header or cell.cell_id in emphasized
                   for cell in distinct[i] if cell.text):
            return False
        if tuple(_key(cell.text) for cell in distinct[i]) in loose_texts:
            return True
        filled = [(c, cell) for c, cell in enumerate(cells[i]) if cell.text]
        same = sum(1 for c, cell in filled if last_labels[c] and _key(cell.text) == last_labels[c])
        return same >= 2 and 2 * same > len(filled)

    # Body: group rows label the rows below them; th+td rows are key-value.
    kv_ok = infobox or not header_rows
    group: str | None = None
    for i in range(r, n):
        row = distinct[i]
        texts = [cell.text for cell in row if cell.text]
        if full_width(i) and (infobox and row[0].is_header or not infobox and
                              (row[0].is_header or len(row[0].text) <= _GROUP_MAX_CHARS)):
            if i < n - 1 and row[0].text:
                kinds[i] = "group"
                group = row[0].text.replace("\n", " ")
                continue
        elif all_header(i) and len(row) > 1 or repeats_header(i):
            if repeats_header(i):
                kinds[i] = "header"  # a repeated header row (e.g. below a section title)
                continue
            if len(set(texts)) == 1 and i < n - 1 and not infobox:
                kinds[i] = "group"
                group = texts[0].replace("\n", " ")
                continue
        if kv_ok and len(row) >= 2 and row[0].is_header and row[0].text and (
                not any(cell.is_header for cell in row[1:]) or _spans_down(cells, i, 0)):
            kinds[i] = "keyvalue"
        groups[i] = group
    if header_rows and all(kinds[i] == "header" for i in range(r, n)):
        for i in range(r, n):  # the only body rows are never dropped as repeats
            kinds[i] = "body"
    return kinds, " — ".join(titles), header_paths, groups


def inherit(child: TableGrid, parent: TableGrid, row: int, col: int) -> None:
    """Let a nested table (in the cell at ``row``, ``col`` of ``parent``)
    inherit the enclosing table's context, in place (Tessera §3.3): its
    title when it has neither title nor caption, the header path of the
    enclosing column as a prefix of its own header paths, and the enclosing
    row's group label (or, failing that, the row's first cell) as its group
    label where it has none."""
    child.parent_index = parent.table_index
    if not child.title and not child.caption:
        child.title = parent.caption or parent.title
    prefix = parent.header_paths[col] if col < len(parent.header_paths) else ()
    if parent.row_kinds[row] == "keyvalue":
        prefix = (parent.cells[row][0].text,)
    if prefix:
        child.header_paths = [path if path[:len(prefix)] == prefix else prefix + path
                              for path in child.header_paths]
    label = parent.group_labels[row]
    if label is None and col > 0 and parent.row_kinds[row] == "body":
        label = parent.cells[row][0].text or None
    if label:
        child.group_labels = [g or label for g in child.group_labels]


def _distinct(row: list[GridCell]) -> list[GridCell]:
    out: list[GridCell] = []
    last = None
    for cell in row:
        if cell is not last:
            out.append(cell)
            last = cell
    return out


def _key(text: str) -> str:
    """Text compared loosely: letters (case kept) and digits only."""
    return "".join(ch for ch in text if ch.isalnum())


def _row_text(row: list[GridCell]) -> tuple[str, ...]:
    """A row's cell texts as compared for a repeated header: exact, case
    kept, only whitespace (line breaks, wrapping) collapsed."""
    return tuple(" ".join(cell.text.split()) for cell in row)


def _spans_down(cells: list[list[GridCell]], r: int, c: int) -> bool:
    """The cell at (r, c) starts in row r and covers row r + 1 too."""
    cell = cells[r][c]
    return cell.origin[0] == r and r + 1 < len(cells) and cells[r + 1][c] is cell


def _holds_values(row: list[GridCell]) -> bool:
    """Some cell of ``row`` is a value, not a label: a ``td`` with text or
    a text starting with a digit (``"412 kg"``)."""
    return any(cell.text and (not cell.is_header or cell.text[0].isdigit()) for cell in row)


def _header_path(cells: list[list[GridCell]], rows: range, col: int,
                 labels: set[int] = frozenset()) -> tuple[str, ...]:
    path: list[str] = []
    for r in rows:
        if id(cells[r][col]) in labels:
            continue
        text = cells[r][col].text.replace("\n", " ")
        if text and (not path or path[-1] != text):
            path.append(text)
    return tuple(path)


def _mostly_header(row: list[GridCell], emphasized: set[str] | frozenset[str]) -> bool:
    """A first row of th and bold td cells (at least 3 in 4 of its non-empty
    cells, at least two of them) that is not all numbers."""
    filled = [cell for cell in row if cell.text]
    if len(filled) < 2:
        return False
    marked = sum(1 for cell in filled if cell.is_header or cell.cell_id in emphasized)
    if marked < 2 or 4 * marked < 3 * len(filled):
        return False
    return not all(_NUMERIC.match(cell.text) for cell in filled)


def _looks_like_header(cells: list[list[GridCell]], distinct: list[list[GridCell]],
                       r: int) -> bool:
    """A first row without th that reads like column labels, inferred from
    the content as readers do when told ``header=0``: the table has no th
    at all; the row's cells are distinct labels (short text not starting
    with a digit, or a run of increasing years; only the first cell may be
    empty, a corner over row labels), none of them found again below as a
    value; and some column changes kind under its label (see
    :func:`_column_changes`) in the next :data:`_SAMPLE_ROWS` rows."""
    n = len(cells)
    if n - r < 2 or len(distinct[r]) < 2:
        return False
    if any(cell.is_header for row in cells for cell in row):
        return False
    row = [cell for c, cell in enumerate(cells[r]) if cell.origin[1] == c]
    texts = [" ".join(cell.text.split()) for cell in row]
    if not texts[-1] or any(not t for t in texts[1:]) or len(set(texts)) < len(texts):
        return False
    years = [int(t) for t in texts if _YEAR.match(t)]
    if years and (years != sorted(years) or len(years) < len(texts) - 1 or len(years) < 2):
        return False  # years label columns only as a run after the first cell
    if any(not _YEAR.match(t) and not _label(t) for t in texts if t):
        return False
    sample = cells[r + 1:r + 1 + _SAMPLE_ROWS]
    values = {_first_line(cell.text) for line in sample for cell in line if cell.text}
    if any(cell.text and _first_line(cell.text) in values for cell in row):
        return False  # a label (or its first line) is also a value of the table
    for cell in row:
        c = cell.origin[1]
        below = [line[c].text for line in sample if line[c].text and line[c].origin[1] == c]
        if _column_changes(cell.text, below):
            return True
    return False


def _column_changes(label: str, below: list[str]) -> bool:
    """The values ``below`` a label are of another kind than it (at least
    half of them): quantities (a number with at most two words after it:
    ``"31"``, ``"2.5 kg"``, ``"$4"``, ``"14-Oct-87"``) under a text label,
    or under a year when they are not years; or mixed case under an all
    upper-case label."""
    if not label or not below:
        return False
    half = (len(below) + 1) // 2
    numbers = sum(1 for v in below if _QUANTITY.match(v))
    if _YEAR.match(label):
        return numbers >= half and not all(_YEAR.match(v) for v in below)
    if numbers >= half:
        return True
    return label.isupper() and sum(1 for v in below if not v.isupper()) >= half


def _first_line(text: str) -> str:
    return " ".join(text.split("\n", 1)[0].split())


def _label(text: str) -> bool:
    """Short text that is not a value: at most 60 characters, not starting
    with a digit (``"Q1"``, ``"Depth (m)"`` are labels; ``"12 kg"`` is not)."""
    return len(text) <= 60 and not _STARTS_NUMERIC.match(text)
