"""The cells of an HTML table, as :mod:`pilar.ingest.html` reads them: a
table's own rows with each cell's CSS path, lenient spans, bold cells and
the footnote ``sup`` that ends a cell (Tessera §3.3: the grid behind every
row unit)."""

from __future__ import annotations

import re

__all__ = ["bold", "holds_wikitable", "parse_span", "row_cells", "short_list", "table_rows",
           "trailing_sup"]

LIST_MAX_ITEMS = 8
LIST_MAX_CHARS = 80

_DIGITS = re.compile(r"\s*(\d{1,9})")
_BOLD_STYLE = re.compile(r"font-weight\s*:\s*(bold|bolder|[6-9]00)", re.I)
_WRAPPERS = frozenset({"span", "font", "a", "p", "div", "i", "em", "u", "center", "small", "big"})


def parse_span(value: str | None) -> int:
    """A lenient ``rowspan``/``colspan``: leading digits (``"2;"`` -> 2),
    else 1 (``"abc"``, missing). Capping is :func:`build_grid`'s job."""
    if not value:
        return 1
    m = _DIGITS.match(value)
    return int(m.group(1)) if m else 1


def row_cells(tr, prefix: str) -> list[tuple[object, str]]:
    """The ``td``/``th`` cells of row ``tr`` with their CSS paths under
    ``prefix`` (the row's path)."""
    out = []
    seen: dict[str, int] = {}
    for cell in tr:
        tag = cell.tag
        if tag in ("td", "th"):
            n = seen[tag] = seen.get(tag, 0) + 1
            out.append((cell, f"{prefix} > {tag}:nth-of-type({n})"))
    return out


def table_rows(table) -> list[list[tuple[object, str]]]:
    """The table's own rows, each a list of its ``td``/``th`` cells with
    their CSS path relative to the table. Cells placed directly in
    ``table``, ``thead``, ``tbody`` or ``tfoot`` without a ``tr`` (lxml
    keeps them there; browsers wrap them in a row) form one row per run
    of such cells."""
    rows: list[list[tuple[object, str]]] = []

    def cells_of(parent, prefix: str) -> None:
        seen: dict[str, int] = {}
        loose: list[tuple[object, str]] = []
        for child in parent:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            n = seen[tag] = seen.get(tag, 0) + 1
            here = f"{prefix}{tag}:nth-of-type({n})"
            if tag in ("td", "th"):
                loose.append((child, here))
                continue
            if loose:
                rows.append(loose)
                loose = []
            if tag == "tr":
                rows.append(row_cells(child, here))
            elif tag in ("tbody", "thead", "tfoot") and parent is table:
                cells_of(child, f"{here} > ")
        if loose:
            rows.append(loose)

    cells_of(table, "")
    return rows


def holds_wikitable(el) -> bool:
    """Does ``el`` hold a ``table.wikitable`` (itself or below)?"""
    return any("wikitable" in (t.get("class") or "") for t in el.iter("table"))


def bold(cell) -> bool:
    """The cell's whole text is bold: ``font-weight`` bold (or 600-900) on
    the cell or its row, or the text inside one ``b`` / ``strong`` reached
    through single inline wrappers (``span``, ``font``, ``a``, ``p`` ...)
    with no text around them."""
    if _BOLD_STYLE.search(cell.get("style") or ""):
        return True
    row = cell.getparent()
    if row is not None and _BOLD_STYLE.search(row.get("style") or ""):
        return True
    el = cell
    while True:
        if (el.text or "").strip():
            return False
        kids = [k for k in el if isinstance(k.tag, str)]
        if len(kids) != 1 or (kids[0].tail or "").strip():
            return False
        el = kids[0]
        if el.tag in ("b", "strong") or _BOLD_STYLE.search(el.get("style") or ""):
            return True
        if el.tag not in _WRAPPERS:
            return False


def trailing_sup(cell) -> str:
    """The text of the ``sup`` that ends ``cell`` (nothing but blanks after
    it), or ``""``."""
    sup = None
    for sup in cell.iter("sup"):
        pass
    if sup is None:
        return ""
    el = sup
    while el is not cell:
        if (el.tail or "").strip():
            return ""
        for sib in el.itersiblings():
            if (sib.tail or "").strip() or "".join(sib.itertext()).strip():
                return ""
        el = el.getparent()
    return " ".join("".join(sup.itertext()).split())


def short_list(el) -> bool:
    """A ``ul``/``ol`` that reads as one cell value: 1 to
    :data:`LIST_MAX_ITEMS` items of at most :data:`LIST_MAX_CHARS`
    characters each."""
    items = [li for li in el if li.tag == "li"]
    return 0 < len(items) <= LIST_MAX_ITEMS and all(
        len(" ".join("".join(li.itertext()).split())) <= LIST_MAX_CHARS for li in items)
