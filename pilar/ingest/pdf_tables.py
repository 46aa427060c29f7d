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

import bisect
import re
from dataclasses import dataclass, field

import pymupdf

from pilar.ingest.pdf_layout import Line, join_lines, normalise_text
from pilar.ingest.tables import SourceCell
from pilar.model import BBox, TableGrid

RULE_MAX = 2.5
"""Rules are at most this thick (points)."""
RULE_MIN_LEN = 6.0
JOIN_TOL = 3.0
"""Rules closer than this (points) belong to one cluster."""
MIN_TABLE_SIDE = 15.0


@dataclass(slots=True)
class Candidate:
    """A region that may hold a table and the finder strategy to use."""

    rect: pymupdf.Rect
    strategy: str  # "lines" | "lines_h" | "text" | "frame" (side rules only: no table)


@dataclass(slots=True)
class PageTable:
    """A table found on a page, before grid resolution: ``rows`` of source
    cells in reading order, its ``bbox`` and the page ``lines`` it holds."""

    bbox: BBox
    rows: list[list[SourceCell]]
    n_cols: int
    strategy: str
    header_rows: int = 0
    lines: list[Line] = field(default_factory=list)
    col_x0: list[float] = field(default_factory=list)  # left edge of each column (points)


Box = tuple[float, float, float, float]
_NUMERIC = re.compile(r"^[\d\s.,:;%+\-\u2212\u2013()/]+$")


def _rules(drawings: list[dict]) -> tuple[list[Box], list[Box]]:
    """Horizontal and vertical rule segments (as thin boxes) of the page."""
    horiz: list[Box] = []
    vert: list[Box] = []
    for d in drawings:
        stroked = "s" in (d.get("type") or "")
        for item in d["items"]:
            op = item[0]
            if op == "l":
                p, q = item[1], item[2]
                x0, x1 = (p.x, q.x) if p.x <= q.x else (q.x, p.x)
                y0, y1 = (p.y, q.y) if p.y <= q.y else (q.y, p.y)
            elif op in ("re", "qu"):
                r = item[1] if op == "re" else item[1].rect
                x0, x1 = (r.x0, r.x1) if r.x0 <= r.x1 else (r.x1, r.x0)
                y0, y1 = (r.y0, r.y1) if r.y0 <= r.y1 else (r.y1, r.y0)
            else:
                continue
            w, h = x1 - x0, y1 - y0
            if h <= RULE_MAX and w >= RULE_MIN_LEN:
                horiz.append((x0, y0, x1, y1))
            elif w <= RULE_MAX and h >= RULE_MIN_LEN:
                vert.append((x0, y0, x1, y1))
            elif stroked and op != "l" and w >= RULE_MIN_LEN and h >= RULE_MIN_LEN:
                horiz += [(x0, y0, x1, y0), (x0, y1, x1, y1)]
                vert += [(x0, y0, x0, y1), (x1, y0, x1, y1)]
    return horiz, vert


def _clusters(boxes: list[Box]) -> list[list[int]]:
    """Union-find over boxes touching within :data:`JOIN_TOL` (sweep on y);
    returns index groups."""
    order = sorted(range(len(boxes)), key=lambda i: boxes[i][1])
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    active: list[int] = []
    for i in order:
        x0, y0, x1, _ = boxes[i]
        active = [j for j in active if boxes[j][3] + JOIN_TOL >= y0]
        for j in active:
            b = boxes[j]
            if b[0] - JOIN_TOL <= x1 and x0 - JOIN_TOL <= b[2]:
                parent[find(i)] = find(j)
        active.append(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(boxes)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _distinct(values: list[float], tol: float = 1.5) -> int:
    out = 0
    last = None
    for v in sorted(values):
        if last is None or v - last > tol:
            out += 1
        last = v
    return out


def ruled_candidates(drawings: list[dict]) -> list[Candidate]:
    """Candidate regions drawn with rules: ``lines``, ``lines_h`` and
    ``frame`` (see the module docstring)."""
    horiz, vert = _rules(drawings)
    horiz, vert = horiz[:10000], vert[:10000]  # absurd vector art: cap the work
    boxes = horiz + vert
    n_horiz = len(horiz)
    found: list[Candidate] = []
    for group in _clusters(boxes):
        hs = [boxes[i] for i in group if i < n_horiz]
        vs = [boxes[i] for i in group if i >= n_horiz]
        x0 = min(boxes[i][0] for i in group)
        y0 = min(boxes[i][1] for i in group)
        x1 = max(boxes[i][2] for i in group)
        y1 = max(boxes[i][3] for i in group)
        if x1 - x0 < MIN_TABLE_SIDE or y1 - y0 < MIN_TABLE_SIDE:
            continue
        box = pymupdf.Rect(x0, y0, x1, y1)
        n_h = _distinct([(r[1] + r[3]) / 2 for r in hs])
        n_v = _distinct([(r[0] + r[2]) / 2 for r in vs])
        if n_h >= 2 and n_v >= 2:
            found.append(Candidate(box, "lines"))
        elif n_h >= 3 and not vs:
            wide = [r for r in hs if r[2] - r[0] >= 0.6 * (x1 - x0)]
            if _distinct([r[1] for r in wide]) >= 3:
                found.append(Candidate(box, "lines_h"))
        elif n_v >= 2 and y1 - y0 >= 2 * MIN_TABLE_SIDE:
            found.append(Candidate(box, "frame"))  # a box cut by a page break
    return found


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


def horizontal_rules(drawings: list[dict]) -> list[Box]:
    """The page's thin horizontal rules (boxes, points), as
    :func:`find_tables` wants them to tell drawn row boundaries from
    wrapped text."""
    return _rules(drawings)[0][:10000]


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
    they are one wrapped cell (:func:`_wrapped_rows`). A finder failure
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
            table = _read(tab.cells, lines, words, strategy, hrules=hrules or [])
            if table and not any(_cover(pymupdf.Rect(table.bbox), pymupdf.Rect(t.bbox)) > 0.5
                                 for t in out):
                out.append(table)
    return out


def _axis(values: list[float], tol: float = 2.0) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > tol:
            out.append(v)
    return out


def _index(axis: list[float], v: float) -> int:
    i = bisect.bisect_left(axis, v)
    if i <= 0:
        return 0
    if i >= len(axis):
        return len(axis) - 1
    return i if axis[i] - v < v - axis[i - 1] else i - 1


def _read(cells: list, lines: list[Line], words: list[tuple], strategy: str,
          hard_breaks: bool = True, hrules: list[Box] | None = None) -> PageTable | None:
    """Cells (bbox tuples from the finder) -> :class:`PageTable`; without
    ``hard_breaks`` (OCR words) the lines of a cell are joined by spaces.
    With ``hrules`` (the page's horizontal rules), rows that are the wrapped
    lines of one row are joined first (:func:`_wrapped_rows`)."""
    boxes = [tuple(c) for c in cells if c]
    if len(boxes) < 2:
        return None
    # boundaries closer than a glyph (double borders) are one boundary
    xs = _axis([b[0] for b in boxes] + [b[2] for b in boxes], 6.0)
    ys = _axis([b[1] for b in boxes] + [b[3] for b in boxes], 3.0)
    if len(xs) < 3 or len(ys) < 2:
        return None
    bbox = (xs[0], ys[0], xs[-1], ys[-1])
    placed: dict[tuple[int, int], tuple[int, int, BBox]] = {}
    owner: dict[tuple[int, int], tuple[int, int]] = {}
    for b in boxes:
        r0, r1 = _index(ys, b[1]), _index(ys, b[3])
        c0, c1 = _index(xs, b[0]), _index(xs, b[2])
        if r1 > r0 and c1 > c0 and (r0, c0) not in placed:
            placed[(r0, c0)] = (r1 - r0, c1 - c0, b)
            for r in range(r0, r1):
                for c in range(c0, c1):
                    owner.setdefault((r, c), (r0, c0))
    by_cell: dict[tuple[int, int], list[tuple]] = {}
    for w in words:
        cx, cy = (w[0] + w[2]) / 2, (w[1] + w[3]) / 2
        if not (bbox[0] <= cx <= bbox[2] and bbox[1] <= cy <= bbox[3]):
            continue
        r = bisect.bisect_right(ys, cy) - 1
        c = bisect.bisect_right(xs, cx) - 1
        key = owner.get((min(r, len(ys) - 2), min(c, len(xs) - 2)))
        if key is not None:
            by_cell.setdefault(key, []).append(w)
    table_lines = [ln for ln in lines if bbox[0] <= (ln.bbox[0] + ln.bbox[2]) / 2 <= bbox[2]
                   and bbox[1] <= (ln.bbox[1] + ln.bbox[3]) / 2 <= bbox[3]]
    if strategy != "lines" and _prose(table_lines, xs):
        return None
    bold_lines = {(ln.block, ln.line) for ln in table_lines if ln.bold}
    texts = {key: _cell_text(val[2], by_cell.get(key, []), bold_lines, hard_breaks)
             for key, val in placed.items()}
    if hrules is not None:
        spread = _spread_rows(placed, by_cell, table_lines, ys, xs) if strategy != "lines" \
            else set()
        joined = _wrapped_rows(placed, texts, by_cell, ys, hrules, spread)
        if joined or spread:
            return _read(_join_rows(placed, ys, joined, spread), lines, words, strategy,
                         hard_breaks)
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    cover_r = [False] * n_rows
    cover_c = [False] * n_cols
    for (r0, c0), (rs, cs, _) in placed.items():
        if texts[(r0, c0)][0]:
            for r in range(r0, r0 + rs):
                cover_r[r] = True
            for c in range(c0, c0 + cs):
                cover_c[c] = True
    keep_r = [r for r in range(n_rows) if cover_r[r]]
    keep_c = [c for c in range(n_cols) if cover_c[c]]
    if len(keep_c) < 2 or len(keep_r) < (1 if strategy == "lines" else 2):
        return None  # a one-row ruled table is kept: it may continue a table
    if _frame(texts, len(keep_r) * len(keep_c)):
        return None
    rows = _source_rows(placed, texts, keep_r, keep_c)
    header_rows = 0
    for row in rows:
        if row and all(c.is_header for c in row if c.text):
            header_rows += 1
        else:
            break
    return PageTable(bbox, rows, len(keep_c), strategy, header_rows, table_lines,
                     [xs[c] for c in keep_c])


def _wrapped_rows(placed: dict, texts: dict, by_cell: dict, ys: list[float],
                  hrules: list[Box], spread: set[int] = frozenset()) -> set[int]:
    """Inner row boundaries ``k`` (between rows ``k - 1`` and ``k``) that cut
    one wrapped row in two. Two neighbouring rows with text (rows without
    text between them are passed over) are one row when no drawn rule runs
    between them, their cells have the same column extents, their text is
    within a line's height, and either both are header rows (every
    non-empty cell bold: ``"No."`` over ``"of"`` over ``"Cases"``) or one
    is the stray line of a wrapped cell (at most one cell in four filled,
    each under or over a filled cell of the other) closer to it than the
    table's row pitch (the median gap between two full rows).
    Rows in ``spread`` (titles inside the table) are never joined."""
    above: dict[int, set[tuple[int, int]]] = {}
    below: dict[int, set[tuple[int, int]]] = {}
    starts: dict[int, list[tuple[int, int]]] = {}
    n_cols = 0
    for (r0, c0), (rs, cs, _) in placed.items():
        above.setdefault(r0 + rs, set()).add((c0, cs))
        below.setdefault(r0, set()).add((c0, cs))
        if texts[(r0, c0)][0]:
            starts.setdefault(r0, []).append((r0, c0))
        n_cols = max(n_cols, c0 + cs)
    if n_cols < 2:
        return set()

    def ruled(k: int) -> bool:  # a rule along the boundary under any of its cells
        y = ys[k]
        spans = [(placed[key][2][0], placed[key][2][2]) for key in starts.get(k, ())] or [
            (placed[key][2][0], placed[key][2][2]) for key in placed if key[0] == k]
        return any(abs((h[1] + h[3]) / 2 - y) <= 2.5 and any(
            min(h[2], x1) - max(h[0], x0) >= 6 for x0, x1 in spans) for h in hrules)

    def header(r: int) -> bool:
        return all(texts[key][1] for key in starts[r])

    def sparse(r: int) -> bool:
        return n_cols >= 3 and 4 * len(starts[r]) <= n_cols

    def gap(a: int, b: int) -> tuple[float, float] | None:
        """Smallest gap between the text of a's and b's cells in one column
        (without a common column: between the rows' text), and the line
        height there; None when either holds no words."""
        cols_b = {key[1]: key for key in starts[b]}
        best = None
        for key in starts[a]:
            mate = cols_b.get(key[1])
            if mate is None or not by_cell.get(key) or not by_cell.get(mate):
                continue
            g = min(w[1] for w in by_cell[mate]) - max(w[3] for w in by_cell[key])
            h = min(w[3] - w[1] for w in by_cell[key] + by_cell[mate])
            if best is None or g < best[0]:
                best = (g, h)
        if best is None:  # no column in common: the rows' text as a whole
            wa = [w for key in starts[a] for w in by_cell.get(key, ())]
            wb = [w for key in starts[b] for w in by_cell.get(key, ())]
            if wa and wb:
                best = (min(w[1] for w in wb) - max(w[3] for w in wa),
                        min(w[3] - w[1] for w in wa + wb))
        return best

    def mates(r: int, other: int) -> bool:
        cols = {key[1] for key in starts[other]}
        return all(key[1] in cols for key in starts[r])

    text_rows = sorted(starts)
    pairs = list(zip(text_rows, text_rows[1:]))
    full = sorted(g[0] for a, b in pairs if not sparse(a) and not sparse(b)
                  and not (header(a) and header(b)) and (g := gap(a, b)) is not None)
    pitch = full[len(full) // 2] if len(full) >= 2 else None
    joined: set[int] = set()
    for a, b in pairs:
        if a in spread or b in spread:
            continue
        cuts = range(a + 1, b + 1)
        if any(above.get(k) != below.get(k) or k not in below or ruled(k) for k in cuts):
            continue
        g = gap(a, b)
        if g is None or g[0] > g[1]:
            continue
        if header(a) and header(b) or (pitch is None or g[0] < pitch - 0.75) and (
                sparse(b) and mates(b, a) or sparse(a) and mates(a, b)):
            joined.update(cuts)
    return joined


def _spread_rows(placed: dict, by_cell: dict, table_lines: list[Line], ys: list[float],
                 xs: list[float]) -> set[int]:
    """Rows of a text-aligned table that hold one text line of two or more
    words running across column boundaries and nothing else: a title inside the table (``"Outbreaks
    reported late"``), cut into columns by the finder."""
    inner = xs[1:-1]
    out: set[int] = set()
    by_row: dict[int, list[tuple]] = {}
    for (r0, c0), (rs, _, _) in placed.items():
        if rs == 1:
            by_row.setdefault(r0, []).extend(by_cell.get((r0, c0), []))
    for r, ws in by_row.items():
        if not ws:
            continue
        mid = [ln for ln in table_lines if ys[r] <= (ln.bbox[1] + ln.bbox[3]) / 2 <= ys[r + 1]]
        if len(mid) != 1:
            continue
        ln = mid[0]
        if " " in ln.text.strip() and any(ln.bbox[0] + 3 < x < ln.bbox[2] - 3 for x in inner) and all(
                ln.bbox[0] - 1 <= (w[0] + w[2]) / 2 <= ln.bbox[2] + 1 for w in ws):
            out.add(r)
    return out


def _join_rows(placed: dict, ys: list[float], joined: set[int],
               spread: set[int] = frozenset()) -> list[Box]:
    """The cell boxes with the rows on both sides of each boundary in
    ``joined`` merged (cells of equal column extent become one box), and
    each row in ``spread`` made one cell across the table."""
    boxes: dict[tuple[int, int], list[float]] = {}
    rows: dict[int, list[float]] = {}
    for (r0, _), (rs, _, b) in placed.items():
        if r0 in spread and rs == 1:
            box = rows.setdefault(r0, list(b))
            box[0], box[1] = min(box[0], b[0]), min(box[1], b[1])
            box[2], box[3] = max(box[2], b[2]), max(box[3], b[3])
    placed = {key: val for key, val in placed.items() if key[0] not in rows or val[0] != 1}
    order = sorted(placed.items())
    owner: dict[tuple[int, int, int], tuple[int, int]] = {}  # (end row, c0, cs) -> key
    for (r0, c0), (rs, cs, b) in order:
        key = owner.pop((r0, c0, cs), None) if r0 in joined else None
        if key is not None:
            box = boxes[key]
            box[1], box[3] = min(box[1], b[1]), max(box[3], b[3])
            box[0], box[2] = min(box[0], b[0]), max(box[2], b[2])
        else:
            key = (r0, c0)
            boxes[key] = list(b)
        owner[(r0 + rs, c0, cs)] = key
    return [tuple(b) for b in boxes.values()] + [tuple(b) for b in rows.values()]


def _source_rows(placed: dict, texts: dict, keep_r: list[int], keep_c: list[int]
                 ) -> list[list[SourceCell]]:
    """Rows of :class:`SourceCell` (HTML table model) over the kept rows and
    columns; slots no cell covers get empty filler cells."""
    rmap = {r: i for i, r in enumerate(keep_r)}
    cmap = {c: i for i, c in enumerate(keep_c)}
    grid: dict[tuple[int, int], SourceCell] = {}
    covered: set[tuple[int, int]] = set()
    for (r0, c0), (rs, cs, b) in placed.items():
        rows_in = [rmap[r] for r in range(r0, r0 + rs) if r in rmap]
        cols_in = [cmap[c] for c in range(c0, c0 + cs) if c in cmap]
        if not rows_in or not cols_in:
            continue
        text, bold = texts[(r0, c0)]
        start = (rows_in[0], cols_in[0])
        grid[start] = SourceCell(text=text, is_header=bold, rowspan=len(rows_in),
                                 colspan=len(cols_in), bbox=b)
        covered.update((r, c) for r in rows_in for c in cols_in)
    rows: list[list[SourceCell]] = []
    for r in range(len(keep_r)):
        row = []
        for c in range(len(keep_c)):
            if (r, c) in grid:
                row.append(grid[(r, c)])
            elif (r, c) not in covered:
                row.append(SourceCell(text=""))
        rows.append(row)
    return rows


def _cell_text(box: BBox, mine: list[tuple], bold_lines: set[tuple[int, int]],
               hard_breaks: bool = True) -> tuple[str, bool]:
    """Text of a cell from its words (``get_text("words")`` tuples), and
    whether most of them are bold. Words are grouped into visual lines;
    lines are joined with :func:`join_lines` (hyphenation) per paragraph,
    paragraphs split where a line ended short of the cell's right edge."""
    if not mine:
        return "", False
    x0, x1 = box[0], box[2]
    by_line: dict[tuple, list[tuple]] = {}
    for w in mine:  # the words of one text line...
        by_line.setdefault((w[5], w[6]), []).append(w)
    groups = sorted(by_line.values(), key=lambda g: min((w[1] + w[3]) / 2 for w in g))
    merged: list[list[tuple]] = []
    for g in groups:  # ...and of lines side by side form one visual line
        top, bottom = min(w[1] for w in g), max(w[3] for w in g)
        if merged:
            m_top, m_bottom = min(w[1] for w in merged[-1]), max(w[3] for w in merged[-1])
            overlap = min(bottom, m_bottom) - max(top, m_top)
            if overlap > 0.5 * min(bottom - top, m_bottom - m_top):
                merged[-1].extend(g)
                continue
        merged.append(list(g))
    width = x1 - x0
    paras: list[list[Line]] = [[]]
    prev_end = None
    for g in merged:
        g.sort(key=lambda w: w[0])
        text = normalise_text(" ".join(w[4] for w in g))
        first_word = g[0][2] - g[0][0]
        if hard_breaks and prev_end is not None and prev_end + first_word + 6 < x1 - 0.04 * width:
            paras.append([])  # the previous line stopped short: a hard break
        paras[-1].append(Line((g[0][0], g[0][1], g[-1][2], g[-1][3]), text, 0.0, False, 0))
        prev_end = g[-1][2]
    text = "\n".join(join_lines(p) for p in paras if p)
    bold = sum((w[5], w[6]) in bold_lines for w in mine) / len(mine) >= 0.6
    return text, bold and not _NUMERIC.match(text)  # bold figures are data, not labels


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


def _prose(lines: list[Line], xs: list[float]) -> bool:
    """A text-aligned "table" whose text lines run across its column
    boundaries is prose cut into columns: more than a quarter of its lines
    (of two or more words) cross an inner boundary by over 3 points."""
    inner = xs[1:-1]
    multi = [ln for ln in lines if " " in ln.text]
    if not multi:
        return False
    crossing = sum(1 for ln in multi
                   if any(ln.bbox[0] + 3 < x < ln.bbox[2] - 3 for x in inner))
    return crossing > 0.25 * len(multi)


def raster_tables(horizontal: list[Box], vertical: list[Box], lines: list[Line],
                  words: list[tuple]) -> list[PageTable]:
    """Ruled tables of a scanned page, from the rules found in its render
    (:func:`pilar.ingest.ocr.remove_rules`, thin boxes in points) and its
    OCR words: the lattice of rule positions in each cluster is cut into
    cells, neighbouring slots merged where no rule separates them."""
    out: list[PageTable] = []
    boxes = horizontal + vertical
    n_h = len(horizontal)
    for group in _clusters(boxes):
        hs = [boxes[i] for i in group if i < n_h]
        vs = [boxes[i] for i in group if i >= n_h]
        ys = _axis([(b[1] + b[3]) / 2 for b in hs], 3.0)
        xs = _axis([(b[0] + b[2]) / 2 for b in vs], 3.0)
        if len(ys) < 2 or len(xs) < 3:
            continue
        cells = _lattice(xs, ys, hs, vs)
        table = _read(cells, lines, words, "lines", hard_breaks=False)
        if table:
            out.append(table)
    return out


def _lattice(xs: list[float], ys: list[float], hs: list[Box], vs: list[Box]) -> list[Box]:
    """Cell boxes of a lattice: slot (r, c) joins its right neighbour when
    no vertical rule at ``xs[c+1]`` crosses the row's middle, its lower
    neighbour when no horizontal rule at ``ys[r+1]`` crosses the column's
    middle."""
    def v_rule(x: float, y: float) -> bool:
        return any(abs((b[0] + b[2]) / 2 - x) <= 3 and b[1] - 2 <= y <= b[3] + 2 for b in vs)

    def h_rule(y: float, x: float) -> bool:
        return any(abs((b[1] + b[3]) / 2 - y) <= 3 and b[0] - 2 <= x <= b[2] + 2 for b in hs)

    n_r, n_c = len(ys) - 1, len(xs) - 1
    parent = {(r, c): (r, c) for r in range(n_r) for c in range(n_c)}

    def find(k):
        while parent[k] != k:
            k = parent[k]
        return k

    for r in range(n_r):
        ym = (ys[r] + ys[r + 1]) / 2
        for c in range(n_c):
            xm = (xs[c] + xs[c + 1]) / 2
            if c + 1 < n_c and not v_rule(xs[c + 1], ym):
                parent[find((r, c + 1))] = find((r, c))
            if r + 1 < n_r and not h_rule(ys[r + 1], xm):
                parent[find((r + 1, c))] = find((r, c))
    spans: dict = {}
    for (r, c) in parent:
        root = find((r, c))
        r0, c0, r1, c1 = spans.get(root, (r, c, r, c))
        spans[root] = (min(r0, r), min(c0, c), max(r1, r), max(c1, c))
    return [(xs[c0], ys[r0], xs[c1 + 1], ys[r1 + 1]) for r0, c0, r1, c1 in spans.values()]


def _frame(texts: dict, n_slots: int) -> bool:
    """A page frame or layout box read as a table: one cell holds over 100
    words and 80% of the table's words, or a grid of at most 6 slots
    averages over 30 words a cell."""
    counts = [len(t.split()) for t, _ in texts.values()]
    top, total = max(counts, default=0), sum(counts)
    return (top > 100 and top > 0.8 * total) or (n_slots <= 6 and total > 30 * max(n_slots, 1))
