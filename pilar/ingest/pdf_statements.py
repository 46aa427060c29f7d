"""Borderless financial statements in PDF (issue 35 kind 9; Tessera §3.3
"every value under its header"): a label column indented by level and
columns of amounts aligned on their right edges, read from the words of a
candidate region instead of PyMuPDF's text-alignment finder, which cuts
the indented labels and the amounts' ragged left edges into spurious
columns and rows.

A region is read as a statement (:func:`read_statement`) when at least three
of its lines end in amounts (figures, a currency sign apart or glued,
negatives in parentheses, dashes for nil; not years) set apart from their
label by more than a line's height, the amounts' right edges fall
into one to eight columns (within 4 points; a closing parenthesis may hang
past the edge), every other word of an amount line lies left of the
leftmost amount column (the label), the labels are short (a median of 8
words at most) and start at two or more indents (over 4 points apart).
Then:

- lines above the first amount line whose words lie over the amount columns
  are header rows; a phrase (words a space apart) covers every amount
  column it overlaps ("Year ended June 30" over "2025" and "2024");
- a line with a label and no amounts is a heading: a row spanning the
  table (a group row of the grid), unless it wraps onto the next line's
  label (that line starting in lower case);
- dot leaders after a label are dropped;
- each row's outline is the headings above it at a smaller indent
  (``PageTable.groups``: "Operating expenses" for "Research and
  development"; a total at the heading's own indent is outside it).

Coordinates are PDF points; words are ``page.get_text("words")`` tuples.
"""

from __future__ import annotations

import re

from pilar.ingest.pdf_layout import Line
from pilar.ingest.pdf_table_cells import PageTable
from pilar.ingest.pdf_table_split import word_lines
from pilar.ingest.tables import SourceCell

_CURRENCY = frozenset("$€£¥")
_NUMBER = r"[-\u2212\u2013\u2014]?[$€£¥]?(\d{1,3}(,\d{3})+|\d{1,3}( \d{3})+|\d+)([.,]\d+)?%?"
_GROUP_HEAD = re.compile(r"^[$€£¥]?\(?[-\u2212]?[$€£¥]?\d{1,3}( \d{3})*$")
_GROUP_TAIL = re.compile(r"^\d{3}([.,]\d+)?\)?%?$")
_AMOUNT = re.compile(rf"^[$€£¥]?({_NUMBER}|\({_NUMBER}\))$|^[-\u2013\u2014]$")
_YEAR = re.compile(r"^(1[6-9]|20)\d\d$")  # a year ends a line of prose or a list, not a row
_LEADER = re.compile(r"\s*(?:[.·…_]\s?){3,}$")  # dot leaders from a label to its amounts
_EDGE_TOL = 4.0
_INDENT = 4.0


def glue_amounts(words: list[tuple]) -> list[tuple]:
    """``words`` with the parts of one printed amount joined: a currency
    sign standing alone ("$") to the amount right of it on its line
    ("$8,412" at the amount's box: a sign set at the column's left edge
    belongs to the figure, not to the label or the column before), and
    digit groups a space apart ("1 204.5", thousands separated by spaces)."""
    out: list[tuple] = []
    for line in word_lines(words):
        sign = None
        for w in line:
            h = w[3] - w[1]
            if w[4] in _CURRENCY:
                if sign is not None:
                    out.append(sign)
                sign = w
                continue
            if sign is not None:
                if _AMOUNT.match(w[4]) or _GROUP_HEAD.match(w[4]):
                    w = (*w[:4], sign[4] + w[4], *w[5:])
                else:
                    out.append(sign)
                sign = None
            last = out[-1] if out else None
            if last is not None and last[1] < (w[1] + w[3]) / 2 < last[3] \
                    and _GROUP_HEAD.match(last[4]) and _GROUP_TAIL.match(w[4]) \
                    and 0 <= w[0] - last[2] < 0.5 * h:
                out[-1] = (last[0], min(last[1], w[1]), w[2], max(last[3], w[3]),
                           f"{last[4]} {w[4]}", *w[5:])
                continue
            out.append(w)
        if sign is not None:
            out.append(sign)
    return out


def _edge(w: tuple) -> float:
    """Right edge of an amount, a closing parenthesis hanging past it not
    counted."""
    return w[2] - (w[3] - w[1]) * 0.3 if w[4].endswith(")") else w[2]


def read_statement(words: list[tuple], lines: list[Line]) -> PageTable | None:
    """The statement in ``words`` (those of a candidate region, currency
    glued by :func:`glue_amounts`) as a :class:`PageTable` with
    ``groups``, or ``None`` when the words are not laid out as one (see the
    module docstring). ``lines`` are the page's lines (those inside are
    kept as the table's)."""
    rows = word_lines(words)
    amounts: list[list[tuple]] = []
    for ws in rows:
        tail = []
        for w in reversed(ws):
            if not _AMOUNT.match(w[4]) or _YEAR.match(w[4]):
                break
            tail.append(w)
        amounts.append(tail[::-1])
    edges: list[list[float]] = []
    for tail in amounts:
        for w in tail:
            near = next((e for e in edges if abs(sum(e) / len(e) - _edge(w)) <= _EDGE_TOL), None)
            if near is None:
                edges.append([_edge(w)])
            else:
                near.append(_edge(w))
    cols = sorted(sum(e) / len(e) for e in edges if len(e) >= 3)
    if not 1 <= len(cols) <= 8 or len(cols) < len(edges) - 1:
        return None
    for tail in amounts:  # a line's amounts: its words after the last one off the columns
        while any(abs(cols[_column(w, cols)] - _edge(w)) > _EDGE_TOL for w in tail):
            tail.pop(0)
    left = min((w[0] for tail in amounts for w in tail), default=0.0)
    labels = [ws[:len(ws) - len(tail)] for ws, tail in zip(rows, amounts)]
    # the first line with a label and amounts starts the body, with the
    # headings right above it; lines above those are header candidates
    first = next((i for i, (label, tail) in enumerate(zip(labels, amounts))
                  if tail and label and label[-1][2] < left), None)
    if first is None or any(label and tail and tail[0][0] - label[-1][2] < tail[0][3] - tail[0][1]
                            for label, tail in zip(labels[first:], amounts[first:])):
        return None  # a figure a space after its words ends a sentence, not a row
    while first and labels[first - 1] and labels[first - 1][-1][2] < left \
            and not amounts[first - 1]:
        first -= 1
    if sum(1 for tail in amounts[first:] if tail) < 3:
        return None
    indents = []
    for label in labels[first:]:
        if label and label[-1][2] > left:
            return None  # words between the label and the amounts: not a statement
        if label:
            indents.append(label[0][0])
    words_per_label = sorted(len(label) for label in labels[first:] if label)
    if words_per_label[len(words_per_label) // 2] > 8:
        return None  # lines of prose, not labels
    levels = sorted(set(round(x / _INDENT) for x in indents))
    if len(levels) < 2:
        return None
    n = len(cols) + 1
    col_left = [min(w[0] for tail in amounts for w in tail if _column(w, cols) == j)
                for j in range(len(cols))]
    out_rows: list[list[SourceCell]] = []
    groups: list[str | None] = []
    header_rows = 0
    for ws in rows[:first]:
        if ws[0][0] < left - 1 and ws[-1][2] < left:
            continue  # a title or note line above the table: not a header
        out_rows.append(_header_row(ws, cols, col_left, left))
        groups.append(None)
        header_rows += 1
    outline: list[tuple[float, str]] = []
    body = list(zip(labels[first:], amounts[first:]))
    wrapped: list[tuple] = []  # the first line(s) of a label wrapped onto the amounts' line
    for k, (label, tail) in enumerate(body):
        if not tail and k + 1 < len(body) and _continues(label, *body[k + 1]):
            wrapped += label
            continue
        x0 = (wrapped or label)[0][0] if wrapped or label else left
        label, wrapped = wrapped + label, []
        while outline and outline[-1][0] >= x0 - 1:
            outline.pop()
        text = _LEADER.sub("", " ".join(w[4] for w in label))
        groups.append(" > ".join(t for _, t in outline) or None)
        if not tail:  # a heading over the rows below it
            out_rows.append([SourceCell(text=text, colspan=n, bbox=_box(label))])
            outline.append((x0, text.rstrip(" :")))
            continue
        row = [SourceCell(text=text, bbox=_box(label) if label else None)]
        row += [SourceCell(text="") for _ in cols]
        for w in tail:
            j = _column(w, cols)
            cell = row[1 + j]
            cell.text = f"{cell.text} {w[4]}".strip()
            cell.bbox = _box([w]) if cell.bbox is None else _box([w, (*cell.bbox, "")])
        out_rows.append(row)
    box = _box([w for ws in rows for w in ws])
    inside = [ln for ln in lines if box[0] - 1 <= ln.bbox[0] and ln.bbox[2] <= box[2] + 1
              and box[1] - 1 <= ln.bbox[1] and ln.bbox[3] <= box[3] + 1]
    return PageTable(box, out_rows, n, "statement", header_rows, inside,
                     [min(w[0] for ws in rows for w in ws), *col_left], groups)


def _continues(label: list[tuple], next_label: list[tuple], next_tail: list[tuple]) -> bool:
    """A label-only line wrapped onto the next line, which holds amounts and
    starts in lower case at the same or a deeper indent ("Selling, general
    and" / "administrative expenses  1,097")."""
    return bool(label and next_label and next_tail) and not label[-1][4].endswith(":") \
        and next_label[0][4][:1].islower() and next_label[0][0] >= label[0][0] - 1


def _column(w: tuple, cols: list[float]) -> int:
    """Index of the amount column whose right edge is nearest ``w``'s."""
    return min(range(len(cols)), key=lambda j: abs(cols[j] - _edge(w)))


def _header_row(ws: list[tuple], cols: list[float], col_left: list[float],
                left: float) -> list[SourceCell]:
    """A header line over the amount columns: each phrase (words less than
    0.6 of their height apart) covers the columns it overlaps; words left of
    the amounts are the label column's header."""
    n = len(cols) + 1
    label = [w for w in ws if w[2] < left]
    cells: list[SourceCell] = [SourceCell(text=" ".join(w[4] for w in label), is_header=True,
                                          bbox=_box(label) if label else None)]
    phrases: list[list[tuple]] = []
    for w in ws:
        if w in label:
            continue
        if phrases and w[0] - phrases[-1][-1][2] < 0.6 * (w[3] - w[1]):
            phrases[-1].append(w)
        else:
            phrases.append([w])
    at = 1
    for ph in phrases:
        over = _under(ph[0][0], ph[-1][2], cols, col_left)
        if not over or over[0] + 1 < at:
            continue
        cells += [SourceCell(text="") for _ in range(at, over[0] + 1)]
        cells.append(SourceCell(text=" ".join(w[4] for w in ph), is_header=True,
                                colspan=len(over), bbox=_box(ph)))
        at = over[-1] + 2
    cells += [SourceCell(text="") for _ in range(at, n)]
    return cells


def _under(x0: float, x1: float, cols: list[float], col_left: list[float]) -> list[int]:
    """The amount columns a header phrase from ``x0`` to ``x1`` stands over:
    those whose middle it covers, else those it overlaps; a phrase centred
    in the space between columns covers the columns on both sides too."""
    js = range(len(cols))
    over = [j for j in js if x0 <= (col_left[j] + cols[j]) / 2 <= x1] or [
        j for j in js if x0 < cols[j] + 2 and x1 > col_left[j] - 2]
    mid = (x0 + x1) / 2
    if not any(col_left[j] - 2 <= mid <= cols[j] + 2 for j in js):
        below = [j for j in js if cols[j] < mid]
        above = [j for j in js if col_left[j] > mid]
        if below and above:
            over = sorted(set(over) | {below[-1], above[0]})
    return list(range(over[0], over[-1] + 1)) if over else []


def _box(ws: list[tuple]) -> tuple[float, float, float, float]:
    return (min(w[0] for w in ws), min(w[1] for w in ws), max(w[2] for w in ws),
            max(w[3] for w in ws))
