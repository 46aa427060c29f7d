"""Cells of a PDF table read into rows: the cell boxes PyMuPDF's finder
(or a lattice of rules) gives are placed on a grid of row and column
boundaries, the page's words are assigned to the cell holding their centre,
wrapped rows and titles inside the table are joined, and the result is a
:class:`PageTable` of :class:`~pilar.ingest.tables.SourceCell` rows (text,
header flag, spans, bbox) for :func:`pilar.ingest.tables.build_grid`
(Tessera §3.3). Coordinates are PDF points.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from pilar.ingest.pdf_layout import Line, join_lines, normalise_text
from pilar.ingest.pdf_rules import Box
from pilar.ingest.pdf_table_split import column_cuts, cut_columns, cut_rows, row_cuts
from pilar.ingest.tables import SourceCell
from pilar.model import BBox

@dataclass(slots=True)
class PageTable:
    """A table found on a page, before grid resolution: ``rows`` of source
    cells in reading order, its ``bbox`` and the page ``lines`` it holds;
    ``groups`` (empty, or one per row) the outline of a financial
    statement's rows (:mod:`pilar.ingest.pdf_statements`)."""

    bbox: BBox
    rows: list[list[SourceCell]]
    n_cols: int
    strategy: str
    header_rows: int = 0
    lines: list[Line] = field(default_factory=list)
    col_x0: list[float] = field(default_factory=list)  # left edge of each column (points)
    groups: list[str | None] = field(default_factory=list)  # a statement's outline per row


_NUMERIC = re.compile(r"^[\d\s.,:;%+\-\u2212\u2013()/]+$")


def axis(values: list[float], tol: float = 2.0) -> list[float]:
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


def read_cells(cells: list, lines: list[Line], words: list[tuple], strategy: str,
               hard_breaks: bool = True, hrules: list[Box] | None = None,
               splits: int = 4) -> PageTable | None:
    """Cells (bbox tuples from the finder) -> :class:`PageTable`; without
    ``hard_breaks`` (OCR words) the lines of a cell are joined by spaces.
    With ``hrules`` (the page's horizontal rules), rows that are the wrapped
    lines of one row are joined first (:func:`_wrapped_rows`). Cells of a
    ruled table holding several rows or columns the rules leave out are cut
    first (:mod:`pilar.ingest.pdf_table_split`, at most ``splits`` rounds)."""
    boxes = [tuple(c) for c in cells if c]
    if len(boxes) < 2:
        return None
    # boundaries closer than a glyph (double borders) are one boundary
    xs = axis([b[0] for b in boxes] + [b[2] for b in boxes], 6.0)
    ys = axis([b[1] for b in boxes] + [b[3] for b in boxes], 3.0)
    if len(xs) < (2 if strategy == "lines" and splits else 3) or len(ys) < 2:
        return None  # one ruled column may still be cut into columns by its text
    found_top = ys[0]
    if strategy == "text":
        above = _header_above(xs, ys, words)
        if above:
            boxes += above
            ys = axis([b[1] for b in boxes] + [b[3] for b in boxes], 3.0)
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
    if strategy != "lines":
        _widen(xs, ys, words)  # after placing: cells keep the finder's boundaries
    bbox = (xs[0], ys[0], xs[-1], ys[-1])
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
    if splits and strategy in ("lines", "lines_h"):
        cut = column_cuts(placed, by_cell, xs) if strategy == "lines" else {}
        boxes = cut_columns(placed, by_cell, cut) if cut else []
        if not cut and (cut := row_cuts(placed, by_cell)):
            boxes = cut_rows(placed, cut)
        if cut:
            return read_cells(boxes, lines, words, strategy, hard_breaks, hrules, splits - 1)
    table_lines = [ln for ln in lines if bbox[0] <= (ln.bbox[0] + ln.bbox[2]) / 2 <= bbox[2]
                   and bbox[1] <= (ln.bbox[1] + ln.bbox[3]) / 2 <= bbox[3]]
    if strategy != "lines" and _prose([ln for ln in table_lines  # a centred header may cross
                                       if (ln.bbox[1] + ln.bbox[3]) / 2 > found_top], xs,
                                      words):
        return None
    bold_lines = {(ln.block, ln.line) for ln in table_lines if ln.bold}
    rtl = right_to_left(w[4] for ws in by_cell.values() for w in ws)
    texts = {key: _cell_text(val[2], by_cell.get(key, []), bold_lines, hard_breaks)
             for key, val in placed.items()}
    if hrules is not None:
        spread = _spread_rows(placed, by_cell, table_lines, ys, xs) if strategy != "lines" \
            else {}
        joined = _wrapped_rows(placed, texts, by_cell, ys, hrules, spread)
        if joined or spread:
            return read_cells(_join_rows(placed, ys, joined, spread), lines, words, strategy,
                              hard_breaks, splits=splits)
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
    raised = {(ln.block, ln.line): ln.raised for ln in table_lines if ln.raised}
    rows = _source_rows(placed, texts, keep_r, keep_c,
                        {key: _raised_end(by_cell.get(key, []), raised) for key in placed}
                        if raised else {})
    header_rows = 0
    for row in rows:
        if row and all(c.is_header for c in row if c.text):
            header_rows += 1
        else:
            break
    col_x0 = [xs[c] for c in keep_c]
    if rtl:  # the table's first column is its rightmost
        rows = [row[::-1] for row in rows]
        col_x0 = col_x0[::-1]
    return PageTable(bbox, rows, len(keep_c), strategy, header_rows, table_lines, col_x0)


def _header_above(xs: list[float], ys: list[float], words: list[tuple]) -> list[BBox]:
    """Cells of a header row the text-alignment finder left above the table:
    the line right above its first row (within 1.6 row heights), inside the
    table's width and no taller than its words, whose words stand over two
    or more columns with more than a space between columns (a caption or a
    sentence runs on with single spaces), with up to two wrapped lines
    above it over the same columns. [] when there is none."""
    rows = sorted(ys[i + 1] - ys[i] for i in range(len(ys) - 1))
    h = rows[len(rows) // 2]
    lo, hi = xs[0] - 12, xs[-1] + 12
    body = sorted(w[3] - w[1] for w in words
                  if ys[0] <= (w[1] + w[3]) / 2 <= ys[-1] and lo <= w[0] and w[2] <= hi)
    if not body:
        return []
    tall = 1.4 * body[len(body) // 2]
    top, cols, bottom = ys[0], set(), ys[0]
    for step in range(3):
        band = [w for w in words if top - 1.6 * h <= (w[1] + w[3]) / 2 < top]
        if not band or any(w[0] < lo or w[2] > hi or w[3] - w[1] > tall for w in band):
            break
        band.sort(key=lambda w: w[0])
        at = [min(max(bisect.bisect_right(xs, (w[0] + w[2]) / 2) - 1, 0), len(xs) - 2)
              for w in band]
        if step == 0:
            spaced = all(b[0] - a[2] >= 0.35 * (a[3] - a[1])
                         for a, b, ca, cb in zip(band, band[1:], at, at[1:]) if ca != cb)
            if len(set(at)) < 2 or not spaced or all(_NUMERIC.match(w[4]) for w in band):
                return []
        elif not set(at) <= cols or top - max(w[3] for w in band) > 0.5 * h:
            break
        cols |= set(at)
        top = min(w[1] for w in band)
    if top == bottom:
        return []
    return [(xs[i], top, xs[i + 1], bottom) for i in range(len(xs) - 1)]


def _widen(xs: list[float], ys: list[float], words: list[tuple], gap: float = 12.0) -> None:
    """Move the outer column edges of a table found by text alignment (in
    place) over the words of its rows that hang past them (within ``gap``
    points): a header centred over a narrower column of values, wider
    than it, belongs to that column, not to the page around."""
    inside = [w for w in words if ys[0] <= (w[1] + w[3]) / 2 <= ys[-1]]
    grown = True
    while grown:
        grown = False
        for w in inside:
            if xs[-1] < w[2] and w[0] - xs[-1] < gap and w[0] > xs[-2]:
                xs[-1], grown = w[2], True
            if w[0] < xs[0] and xs[0] - w[2] < gap and w[2] < xs[1]:
                xs[0], grown = w[0], True


def _wrapped_rows(placed: dict, texts: dict, by_cell: dict, ys: list[float],
                  hrules: list[Box], spread: dict | frozenset = frozenset()) -> set[int]:
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
                 xs: list[float]) -> dict[int, tuple[float, float]]:
    """Rows of a text-aligned table that hold one text line of two or more
    words running across column boundaries and nothing else, with the
    line's left and right ends: a title inside the table (``"Outbreaks
    reported late"``) or a header over several columns (``"Year ended June
    30"``), cut into columns by the finder."""
    inner = xs[1:-1]
    out: dict[int, tuple[float, float]] = {}
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
            out[r] = (ln.bbox[0], ln.bbox[2])
    return out


def _join_rows(placed: dict, ys: list[float], joined: set[int],
               spread: dict[int, tuple[float, float]] | None = None) -> list[Box]:
    """The cell boxes with the rows on both sides of each boundary in
    ``joined`` merged (cells of equal column extent become one box), and
    each row in ``spread`` made one cell across the table, or across the
    columns under its line when the line starts right of the first
    column (a header over several columns of figures)."""
    boxes: dict[tuple[int, int], list[float]] = {}
    rows: dict[int, list[float]] = {}
    merged: set[tuple[int, int]] = set()
    first = {}
    for (r0, c0), (rs, _, b) in placed.items():
        if r0 in (spread or {}) and rs == 1 and (r0 not in first or c0 < first[r0][0]):
            first[r0] = (c0, b)
    for (r0, c0), (rs, _, b) in placed.items():
        if r0 not in first:
            continue
        x0, x1 = spread[r0]
        if first[r0][1][2] <= x0 + 1 and not (b[2] > x0 and b[0] < x1):
            continue  # a header over some columns: the others keep their cells
        box = rows.setdefault(r0, list(b))
        box[0], box[1] = min(box[0], b[0]), min(box[1], b[1])
        box[2], box[3] = max(box[2], b[2]), max(box[3], b[3])
        merged.add((r0, c0))
    placed = {key: val for key, val in placed.items() if key not in merged}
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


def _source_rows(placed: dict, texts: dict, keep_r: list[int], keep_c: list[int],
                 markers: dict[tuple[int, int], str]) -> list[list[SourceCell]]:
    """Rows of :class:`SourceCell` (HTML table model) over the kept rows and
    columns; slots no cell covers get empty filler cells. ``markers`` are
    the raised texts ending cells (:func:`_raised_end`)."""
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
                                 colspan=len(cols_in), bbox=b,
                                 marker=markers.get((r0, c0), ""))
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


def _raised_end(mine: list[tuple], raised: dict[tuple[int, int], tuple]) -> str:
    """The superscript span that ends a cell's last word (``"1,2502"`` whose
    ``"2"`` is raised), or ``""``. ``mine`` are the cell's words, ``raised``
    the superscript spans (bbox, text) per (block, line)."""
    if not mine:
        return ""
    last = max(mine, key=lambda w: ((w[1] + w[3]) / 2 // 3, w[0]))
    for box, text in raised.get((last[5], last[6]), ()):
        if abs(box[2] - last[2]) < 1 and box[0] > last[0] + 0.5 and last[4].endswith(text):
            return text
    return ""


def _cell_text(box: BBox, mine: list[tuple], bold_lines: set[tuple[int, int]],
               hard_breaks: bool = True) -> tuple[str, bool]:
    """Text of a cell from its words (``get_text("words")`` tuples), and
    whether most of them are bold. Words are grouped into visual lines;
    lines are joined with :func:`join_lines` (hyphenation) per paragraph,
    paragraphs split where a line ended short of the cell's far edge. In a
    cell of right-to-left text (:func:`right_to_left`) a visual line reads
    from its right end (MuPDF numbers the words of such a line in visual
    order in some files, in logical order in others)."""
    if not mine:
        return "", False
    rtl = right_to_left(w[4] for w in mine)
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
        g.sort(key=lambda w: -w[2] if rtl else w[0])  # right to left: from the right end
        text = normalise_text(" ".join(w[4] for w in g))
        first_word = g[0][2] - g[0][0]
        # the previous line stopped short of the far edge: a hard break
        end = x0 + x1 - prev_end if rtl and prev_end is not None else prev_end
        if hard_breaks and end is not None and end + first_word + 6 < x1 - 0.04 * width:
            paras.append([])
        left, right_x = min(w[0] for w in g), max(w[2] for w in g)
        paras[-1].append(Line((left, g[0][1], right_x, g[-1][3]), text, 0.0, False, 0))
        prev_end = left if rtl else right_x
    text = "\n".join(join_lines(p) for p in paras if p)
    bold = sum((w[5], w[6]) in bold_lines for w in mine) / len(mine) >= 0.6
    return text, bold and not _NUMERIC.match(text)  # bold figures are data, not labels


_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_LTR = re.compile(r"[^\W\d_]")


def right_to_left(texts) -> bool:
    """Most letters of ``texts`` (an iterable of strings) are of a script
    written right to left (Hebrew, Arabic, Syriac, Thaana)."""
    rtl = ltr = 0
    for t in texts:
        n = len(_RTL.findall(t))
        rtl += n
        ltr += len(_LTR.findall(t)) - n
    return rtl > ltr


def _prose(lines: list[Line], xs: list[float], words: list[tuple]) -> bool:
    """A text-aligned "table" whose text lines run across its column
    boundaries is prose cut into columns: more than a quarter of its lines
    (of two or more words) cross an inner boundary by over 3 points. A
    boundary in a space wider than the line is high does not count: MuPDF
    joins a row's cells on one baseline into one line (right-to-left text,
    cells far apart)."""
    inner = xs[1:-1]
    multi = [ln for ln in lines if " " in ln.text]
    if not multi:
        return False
    keys = {(ln.block, ln.line) for ln in multi}
    by_line: dict[tuple[int, int], list[tuple]] = {}
    for w in words:
        if (w[5], w[6]) in keys:
            by_line.setdefault((w[5], w[6]), []).append(w)

    def crosses(ln: Line, x: float) -> bool:
        if not ln.bbox[0] + 3 < x < ln.bbox[2] - 3:
            return False
        ws = sorted(by_line.get((ln.block, ln.line), ()), key=lambda w: w[0])
        if not ws:
            return True
        wide = ln.bbox[3] - ln.bbox[1]
        return not any(a[2] <= x <= b[0] and b[0] - a[2] >= wide for a, b in zip(ws, ws[1:]))
    crossing = sum(1 for ln in multi if any(crosses(ln, x) for x in inner))
    return crossing > 0.25 * len(multi)


def _frame(texts: dict, n_slots: int) -> bool:
    """A page frame or layout box read as a table: one cell holds over 100
    words and 80% of the table's words, or a grid of at most 6 slots
    averages over 30 words a cell."""
    counts = [len(t.split()) for t, _ in texts.values()]
    top, total = max(counts, default=0), sum(counts)
    return (top > 100 and top > 0.8 * total) or (n_slots <= 6 and total > 30 * max(n_slots, 1))
