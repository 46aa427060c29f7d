"""Rules drawn on a PDF page: the thin vector segments of
``page.get_drawings()`` (or, on a scanned page, of its render), their
clusters, the candidate table regions they outline, and a lattice of
rules cut into cell boxes. Coordinates are PDF points; a box is
``(x0, y0, x1, y1)``. Used by :mod:`pilar.ingest.pdf_tables`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pymupdf

from pilar.parts import UnionFind

Box = tuple[float, float, float, float]
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


def clusters(boxes: list[Box]) -> list[list[int]]:
    """Union-find over boxes touching within :data:`JOIN_TOL` (sweep on y);
    returns index groups."""
    order = sorted(range(len(boxes)), key=lambda i: boxes[i][1])
    uf = UnionFind(len(boxes))
    active: list[int] = []
    for i in order:
        x0, y0, x1, _ = boxes[i]
        active = [j for j in active if boxes[j][3] + JOIN_TOL >= y0]
        for j in active:
            b = boxes[j]
            if b[0] - JOIN_TOL <= x1 and x0 - JOIN_TOL <= b[2]:
                uf.union(i, j)
        active.append(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(boxes)):
        groups.setdefault(uf.find(i), []).append(i)
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
    for group in clusters(boxes):
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
        elif n_h >= 3 and n_v < 2:  # no vertical rule, or one (after a label column)
            wide = [r for r in hs if r[2] - r[0] >= 0.6 * (x1 - x0)]
            if _distinct([r[1] for r in wide]) >= 3:
                found.append(Candidate(box, "lines_h"))
        elif n_v >= 2 and y1 - y0 >= 2 * MIN_TABLE_SIDE:
            found.append(Candidate(box, "frame"))  # a box cut by a page break
    return found


def horizontal_rules(drawings: list[dict]) -> list[Box]:
    """The page's thin horizontal rules (boxes, points), as
    :func:`pilar.ingest.pdf_tables.find_tables` wants them to tell drawn row boundaries from
    wrapped text."""
    return _rules(drawings)[0][:10000]


def rule_rows(rect: pymupdf.Rect, drawings: list[dict] | None,
              hrules: list[Box]) -> list[Box]:
    """Cell boxes of a ``lines_h`` region (horizontal rules, at most one
    vertical): a row between each two horizontal rules spanning most of
    its width, cut by its vertical rule (``drawings`` may be ``None``: no
    vertical rule). The columns set apart by white space and the rows
    the rules leave out are cut later
    (:mod:`pilar.ingest.pdf_table_split`)."""
    inside = pymupdf.Rect(rect) + (-2, -2, 2, 2)
    hs = [h for h in hrules if inside.contains(pymupdf.Rect(h))
          and h[2] - h[0] >= 0.6 * rect.width]
    vs = [v for v in (_rules(drawings)[1] if drawings else [])
          if inside.contains(pymupdf.Rect(v))]
    ys = sorted({round((h[1] + h[3]) / 2, 1) for h in hs})
    ys = [y for i, y in enumerate(ys) if i == 0 or y - ys[i - 1] > JOIN_TOL]
    xs = [rect.x0, *sorted({round((v[0] + v[2]) / 2, 1) for v in vs
                            if rect.x0 + 3 < v[0] < rect.x1 - 3}), rect.x1]
    if len(ys) < 3:
        return []
    return lattice(xs, ys, hs, vs)


def lattice(xs: list[float], ys: list[float], hs: list[Box], vs: list[Box]) -> list[Box]:
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
