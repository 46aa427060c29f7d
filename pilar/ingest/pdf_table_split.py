"""Ruled PDF tables whose rules leave rows or columns out (issue 35 kinds 5
and 7; Tessera §3.3 "faithful grid"): the cells PyMuPDF's ``lines``
finder gives are cut again where the text shows rows or columns the rules
do not.

- Rows (:func:`row_cuts`): a report ruled by columns, with horizontal rules
  only here and there, gives one cell per column holding several rows'
  lines ("Alabama / Alaska / ..." beside "26,074 / 3,101 / ..."). A cell's
  lines are cut into rows where the key cell (the row's first cell with
  text) has a line beside which another cell has a line of figures and at
  least half of the row's other cells have a line, none of them wrapped
  from the line above; a key line with nothing beside it
  stays in its row ("District of" / "Columbia"), and so do rows whose
  cells wrapped together ("LaFayette L." / "Patterson" beside "1928–" /
  "1933").
- Columns (:func:`column_cuts`): a table ruled after its label column only,
  its other columns set apart by white space, gives one cell holding
  several columns' values. A ruled column is cut where a vertical strip at
  least a line high stays free of words in every line below the first row,
  with words on both sides in at least half of those lines (the cut placed where
  the header's words leave the strip free, if they do); a header cell whose
  words cross the cut spans the new columns.

Coordinates are PDF points; words are ``page.get_text("words")`` tuples.
"""

from __future__ import annotations

import re

from pilar.model import BBox

_FIGURE = re.compile(r"^[$€£¥]?[-\u2212(]?[$€£¥]?[\d.,]*\d[\d.,]*\)?%?$|^[$€£¥]$")


def figures(text: str) -> bool:
    """``text`` is one or more figures (amounts, counts, shares; currency
    signs apart or glued; negatives in parentheses) set apart by spaces."""
    return all(_FIGURE.match(t) for t in text.split()) and any(c.isdigit() for c in text)


def word_lines(words: list[tuple]) -> list[list[tuple]]:
    """The words' visual lines, top down, each in x order: words whose
    vertical centre lies within half a word height of a line's centre."""
    out: list[list] = []
    for w in sorted(words, key=lambda w: (w[1] + w[3]) / 2):
        cy, h = (w[1] + w[3]) / 2, w[3] - w[1]
        if out and abs(cy - (out[-1][0] + out[-1][1]) / 2) <= 0.5 * h:
            line = out[-1]
            line[0], line[1] = min(line[0], w[1]), max(line[1], w[3])
            line[2].append(w)
        else:
            out.append([w[1], w[3], [w]])
    return [sorted(ws, key=lambda w: w[0]) for _, _, ws in out]


def line_rows(rect, words: list[tuple]) -> list[BBox]:
    """One box a visual line (:func:`word_lines`) of the words whose centre
    lies in ``rect`` (a ``pymupdf.Rect``), across its width, the boundaries
    midway between lines: the rows of a text table before its columns are
    cut (:func:`column_cuts`). Lines of running text (:func:`_phrase`) at
    its top or bottom are left out. ``[]`` with fewer than two lines."""
    inside = [w for w in words if rect.x0 <= (w[0] + w[2]) / 2 <= rect.x1
              and rect.y0 <= (w[1] + w[3]) / 2 <= rect.y1]
    found = word_lines(inside)
    while found and _phrase(found[-1]):
        found.pop()  # a note or caption under the table
    while found and _phrase(found[0]):
        found.pop(0)  # a title over it
    spans = [(min(w[1] for w in ln), max(w[3] for w in ln)) for ln in found]
    if len(spans) < 2:
        return []
    edges = [spans[0][0]] + [(a[1] + b[0]) / 2 for a, b in zip(spans, spans[1:])] + [spans[-1][1]]
    return [(rect.x0, y0, rect.x1, y1) for y0, y1 in zip(edges, edges[1:])]


def _phrase(line: list[tuple]) -> bool:
    """A line of running text, not a row of cells: three or more words, no
    space between them as wide as the line is high."""
    h = max(w[3] - w[1] for w in line)
    return len(line) >= 3 and all(b[0] - a[2] < h for a, b in zip(line, line[1:]))


def row_cuts(placed: dict, by_cell: dict) -> dict[int, list[float]]:
    """Rows of one-row cells that hold several table rows: ``{row: [y, ...]}``
    the heights (points) to cut the row's cells at, top down. ``placed`` maps
    a cell's (row, col) start to ``(rowspan, colspan, bbox)``, ``by_cell``
    to the words whose centre it holds. A cut goes above a key line beside
    which at least half the other cells have a line, one of them of
    figures, one below a line of its own cell, and none wrapped into from
    the line above (its first word would have fit there)."""
    rows: dict[int, list[tuple[int, int]]] = {}
    for (r0, c0), (rs, _, _) in placed.items():
        if rs == 1 and by_cell.get((r0, c0)):
            rows.setdefault(r0, []).append((r0, c0))
    cuts: dict[int, list[float]] = {}
    for r, keys in rows.items():
        keys.sort(key=lambda k: k[1])
        cells = [(word_lines(by_cell[k]), placed[k][2]) for k in keys]
        key_lines = cells[0][0]
        if len(key_lines) < 2 or len(cells) < 2:
            continue
        at: list[float] = []
        for i in range(1, len(key_lines)):
            line = key_lines[i]
            top, bottom = min(w[1] for w in line), max(w[3] for w in line)
            mid, h = (top + bottom) / 2, bottom - top
            beside = []
            for lines, box in cells[1:]:
                j = next((j for j, ln in enumerate(lines)
                          if abs((ln[0][1] + ln[0][3]) / 2 - mid) <= 0.35 * h), None)
                if j is not None:
                    beside.append((lines, j, box))
            texts = [" ".join(w[4] for w in lines[j]) for lines, j, _ in beside]
            if 2 * len(beside) >= len(cells) - 1 and any(figures(t) for t in texts) \
                    and any(j for _, j, _ in beside) and all(
                        j == 0 or _broken(lines[j - 1], lines[j], box) for lines, j, box in beside):
                at.append((max(w[3] for w in key_lines[i - 1]) + top) / 2)
        if at:
            cuts[r] = at
    return cuts


def _broken(prev: list[tuple], line: list[tuple], box: BBox) -> bool:
    """``line`` starts anew after ``prev`` in a cell of ``box``: the first
    word of ``line`` would have fit after ``prev`` (no wrap)."""
    width = prev[-1][2] - prev[0][0]
    first = line[0][2] - line[0][0]
    return width + first + 6 < 0.9 * (box[2] - box[0])


def cut_rows(placed: dict, cuts: dict[int, list[float]]) -> list[BBox]:
    """The cell boxes of ``placed`` with each one-row cell of a row in
    ``cuts`` cut at its heights (:func:`row_cuts`)."""
    boxes: list[BBox] = []
    for (r0, _), (rs, _, b) in placed.items():
        ys = [y for y in cuts.get(r0, ()) if b[1] < y < b[3]] if rs == 1 else []
        edges = [b[1], *ys, b[3]]
        boxes += [(b[0], y0, b[2], y1) for y0, y1 in zip(edges, edges[1:])]
    return boxes


def column_cuts(placed: dict, by_cell: dict, xs: list[float]) -> dict[int, list[float]]:
    """Ruled columns holding several columns of values: ``{col: [x, ...]}``
    the abscissae (points) to cut the column's cells at, left to right."""
    first = min((r0 for r0, _ in placed), default=0)
    cuts: dict[int, list[float]] = {}
    for c in range(len(xs) - 1):
        cells = [key for key, (_, cs, _) in placed.items()
                 if key[1] == c and cs == 1 and key[0] > first and by_cell.get(key)]
        samples = [ln for key in cells for ln in word_lines(by_cell[key])]
        if len(samples) < 2:
            continue
        words = [w for ln in samples for w in ln]
        h = sorted(w[3] - w[1] for w in words)[len(words) // 2]
        spans = sorted((w[0], w[2]) for w in words)
        gaps: list[tuple[float, float]] = []
        right = spans[0][1]
        for x0, x1 in spans[1:]:
            if x0 - right >= h:
                gaps.append((right, x0))
            right = max(right, x1)
        heads = [w for key, (_, cs, _) in placed.items()
                 if key[1] == c and cs == 1 and key not in cells for w in by_cell.get(key, ())]
        at = []
        for g0, g1 in gaps:
            both = sum(1 for ln in samples if any(w[2] <= g0 for w in ln)
                       and any(w[0] >= g1 for w in ln))
            if 2 * both >= len(samples):
                at.append(_free_middle(g0, g1, heads))
        if at:
            cuts[c] = at
    return cuts


def _free_middle(g0: float, g1: float, words: list[tuple]) -> float:
    """The middle of the widest stretch of ``(g0, g1)`` no word of ``words``
    (the header rows') covers; the middle of the gap when they cover it."""
    edges = [g0]
    for w in sorted(words, key=lambda w: w[0]):
        if w[2] > edges[-1] and w[0] < g1:
            edges += [max(w[0], edges[-1]), w[2]]
    edges.append(g1)
    free = [(b - a, (a + b) / 2) for a, b in zip(edges[::2], edges[1::2]) if b > a]
    return max(free)[1] if free else (g0 + g1) / 2


def cut_columns(placed: dict, by_cell: dict, cuts: dict[int, list[float]]) -> list[BBox]:
    """The cell boxes of ``placed`` with each one-column cell of a column in
    ``cuts`` cut at its abscissae (:func:`column_cuts`), except where one of
    the cell's words crosses the cut (a header over the new columns)."""
    boxes: list[BBox] = []
    for key, (_, cs, b) in placed.items():
        xs = [x for x in cuts.get(key[1], ()) if b[0] < x < b[2]
              and not any(w[0] < x < w[2] for w in by_cell.get(key, ()))] if cs == 1 else []
        edges = [b[0], *xs, b[2]]
        boxes += [(x0, b[1], x1, b[3]) for x0, x1 in zip(edges, edges[1:])]
    return boxes
