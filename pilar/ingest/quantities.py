"""Quantities and the bands that hold them: the numeric links a chain needs
where no name is shared (PILAR §3.4's bridges; issue "links the chains
need, made at ingest").

A ship's particulars lead to the pilotage rules by its length and to the
port tariff by its tonnage, though neither names the other: the link is a
value falling in a range. Two kinds of entity carry it:

- a **quantity**: the value a record gives a field, a two-column row of
  label and number (``Maximum draught | 15.5 m``, ``Gross tonnage |
  152,300``);
- a **band**: a range in the key column of a table whose rows are ranges
  (``14.1 m to 15.0 m``, ``up to 5,000 GT``, ``above 330 m`` under
  ``Draught on arrival`` or ``Gross tonnage band``); a table is a band
  table when at least two of its body rows start with one.

Each is its document's own entity (id ``quantity:<doc>:<table>.<row>`` or
``band:<doc>:<table>.<row>``, named by the cell's text, aliased by
``"<label>: <text>"``), so two ships of the same draught never share a node.
Cross-document linking (:func:`pilar.graph.linking.link_bands`) adds a
``SAME_AS`` (method ``band``) from a quantity to each band of a *compatible
dimension* holding its value (and from a new band to the stored quantities
it holds): the words of the shorter label, modifiers such as "maximum" left
out, are all in the other (``Maximum draught`` ~ ``Draught on arrival``, not
``Air draught``), and the units agree where both give one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pilar.ingest.names import normalise
from pilar.model import Entity, ParsedDocument, TableGrid

__all__ = ["QUANTITY_TYPE", "BAND_TYPE", "Band", "band_entities", "parse_band", "parse_quantity",
           "compatible_dimensions", "holds", "is_measure"]

QUANTITY_TYPE = "quantity"
BAND_TYPE = "band"

_NUM = r"(\d{1,3}(?:[,\u202f ]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_UNIT = r"([^\W\d_][^\W\d_]{0,5}(?:/[^\W\d_]{1,4})?|%|m[23²³])?"
_Q = _NUM + r"\s*" + _UNIT
_BELOW = re.compile(r"(?:up to|to|not more than|not exceeding|at most|max(?:imum)?|below|"
                    r"under|less than|<=?|≤)\s*" + _Q + "$", re.I)
_ABOVE = re.compile(r"(?:above|over|more than|greater than|exceeding|at least|min(?:imum)?|"
                    r">=?|≥)\s*" + _Q + "$", re.I)
_OR_MORE = re.compile(_Q + r"\s*(?:\+|and (?:above|over|more)|or (?:above|over|more))$", re.I)
_BETWEEN = re.compile(r"(?:from\s+|between\s+)?" + _Q + r"\s*(?:to|-|–|—|and|until)\s*"
                      + _Q + "$", re.I)
_VALUE = re.compile(_Q + "$")
_MEASURE = re.compile(rf"(?:[^:]+:)?(?:{QUANTITY_TYPE}|{BAND_TYPE}):[0-9a-f]+:\d+\.\d+$")
_MODIFIERS = frozenset("maximum max minimum min nominal actual rated total overall band bands "
                       "range ranges class on of the at in per a an and or".split())


@dataclass(frozen=True, slots=True)
class Band:
    """A closed range ``low``-``high`` (``-inf``/``inf`` for an open end) of
    one ``unit`` (lower-cased; empty when the text gives none)."""

    low: float
    high: float
    unit: str


def is_measure(entity_id: str) -> bool:
    """Is ``entity_id`` a quantity's or a band's (``<type>:<doc>:...``,
    prefixed by the collection outside ``default``)?"""
    return _MEASURE.match(entity_id) is not None


def _number(text: str) -> float:
    return float(re.sub(r"[,\u202f ]", "", text))


def _unit(*units: str | None) -> str:
    return next((u.lower() for u in units if u), "")


def parse_band(text: str) -> Band | None:
    """The range ``text`` writes (``"up to 14.0 m"``, ``"150.1 m to 250 m"``,
    ``"above 150,000 GT"``, ``"20+ t"``), or None when it writes none (a
    bare number is a value, not a range)."""
    t = " ".join(text.split()).strip(" .;:")
    if m := _BELOW.match(t):
        return Band(-math.inf, _number(m[1]), _unit(m[2]))
    if m := _ABOVE.match(t):
        return Band(_number(m[1]), math.inf, _unit(m[2]))
    if m := _OR_MORE.match(t):
        return Band(_number(m[1]), math.inf, _unit(m[2]))
    if m := _BETWEEN.match(t):
        low, high = _number(m[1]), _number(m[3])
        units = {u.lower() for u in (m[2], m[4]) if u}
        if low <= high and len(units) <= 1:
            return Band(low, high, _unit(m[2], m[4]))
    return None


def parse_quantity(text: str) -> tuple[float, str] | None:
    """``(value, unit)`` of a cell that is one number with an optional unit
    (``"15.5 m"``, ``"152,300"``), else None."""
    m = _VALUE.match(" ".join(text.split()).strip())
    return (_number(m[1]), _unit(m[2])) if m else None


def dimension(label: str) -> frozenset[str]:
    """The words of a field label or band header that say what is measured
    (``"Maximum draught"`` -> ``{"draught"}``; a parenthesised gloss such as
    ``(LOA)`` or ``(m)`` is left out, plural ``s`` dropped)."""
    words = normalise(re.sub(r"\([^)]*\)", " ", label)).split()
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") else w
                     for w in words if w not in _MODIFIERS and not w.isdigit())


def compatible_dimensions(a: str, b: str) -> bool:
    """Do the labels ``a`` and ``b`` measure the same thing: every word of
    the shorter :func:`dimension` is in the other's."""
    x, y = dimension(a), dimension(b)
    return bool(x and y) and (x <= y or y <= x)


def holds(band: Band, value: float, unit: str) -> bool:
    """Is ``value`` (of ``unit``) inside ``band``? Units must agree when both
    are given."""
    if band.unit and unit and band.unit != unit:
        return False
    return band.low <= value <= band.high


def _label(grid: TableGrid, col: int) -> str:
    return " ".join(dict.fromkeys(p for p in grid.header_paths[col] if p)) \
        if col < len(grid.header_paths) else ""


def band_entities(parsed: ParsedDocument, rows: dict[int, dict[int, str]]) -> list[Entity]:
    """The quantity and band entities of ``parsed``'s tables (see the module
    docstring); ``rows``: ``{table_index: {row: support_id}}`` of the row
    supports. The label (field or column header) is in the alias."""
    doc_id = parsed.document.doc_id
    out: list[Entity] = []
    for grid in parsed.tables:
        supports = rows.get(grid.table_index, {})
        body = [r for r, kind in enumerate(grid.row_kinds)
                if kind in ("body", "keyvalue") and r in supports and grid.cells[r]]
        bands = [r for r in body if parse_band(grid.cells[r][0].text)]
        header = _label(grid, 0)
        if len(bands) >= 2 and header:
            for r in bands:
                text = " ".join(grid.cells[r][0].text.split())
                out.append(Entity(f"{BAND_TYPE}:{doc_id}:{grid.table_index}.{r}", text,
                                  BAND_TYPE, (f"{header}: {text}",), (supports[r],)))
        if grid.n_cols != 2:
            continue
        for r in body:
            label, value = (" ".join(c.text.split()) for c in grid.cells[r])
            if label and parse_quantity(value) and not parse_band(label):
                out.append(Entity(f"{QUANTITY_TYPE}:{doc_id}:{grid.table_index}.{r}", value,
                                  QUANTITY_TYPE, (f"{label}: {value}",), (supports[r],)))
    return out
