"""Order, extreme and sequence cues: table rows that a question names by
position, by an extreme value or as the neighbour of a row, rather than by
their words.

"What is the first category listed?", "which area covers the most land in
square kilometres?": the answer's row shares no words with the question, so
the lexical prefilter of unit selection (Tessera §3.4) drops it, and a
packet of well-matching rows from the middle of the table misses it. Tessera
§4.6 counts such prefilter and selection losses among the answers inside the
anchor pages that never reach the reader. This module finds those rows by
structure, not words: for an ordinal cue (``first``, ``last``...) the first
or last body row of the most relevant tables; for a superlative cue
(``most``, ``lowest``, ``oldest``...) the rows holding the largest or
smallest number in the numeric columns whose header the question names;
for a sequence cue (``before``, ``after``, ``next``, ``preceded``...) the
rows beside the row the question names ("what championship was played just
before the US Open?": the row above the US Open's, which holds none of the
question's words). :class:`pilar.packing.selection.UnitSelector` puts them
at the top of its ranking, so they are packed first; their cost is a few
rows of the budget.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rapidfuzz.distance import Levenshtein

from pilar.model import Unit
from pilar.retrieval.terms import tokens

FIRST = frozenset({"first", "earliest", "top", "initial", "opening"})
LAST = frozenset({"last", "final", "bottom", "latest"})
# superlatives only: a comparative ("which is larger, A or B?") names its rows
MOST = frozenset({"most", "largest", "highest", "biggest", "greatest", "longest", "maximum",
                  "max", "tallest", "heaviest", "top", "best", "newest", "latest"})
LEAST = frozenset({"least", "smallest", "lowest", "fewest", "shortest", "minimum", "min",
                   "lightest", "worst", "earliest"})
EITHER = frozenset({"oldest", "youngest"})  # an age (largest) or a date (smallest)
# a row's neighbour; not "above" / "below", which mostly bound a value ("above 1,000 m")
SEQUENCE = frozenset({"before", "after", "previous", "preceding", "preceded", "precedes",
                      "prior", "next", "following", "followed", "follows", "succeeded",
                      "succeeds", "succeeding", "subsequent"})

MAX_CUE_UNITS = 7
"""At most this many cue rows per question (each costs one row of the budget)."""
MAX_TABLES = 7
"""Cues look at this many tables: the best page's first, then one per other page."""
BEST_PAGE_TABLES = 3
"""Tables of the best-ranked anchor page that cues look at."""
BEST_PAGE_CUES = 4
"""Cue rows taken from the best page's tables; each other page gives at most one."""
MIN_ROWS = 3
"""A table needs this many body rows for a position or an extreme to mean anything."""
NAMED_ROWS = 2
"""Rows named by the question whose neighbours a sequence cue brings (best first)."""
FIELD_WORDS = 3
"""Words (at least) of a key cell that names a field with a superlative (:func:`_compared`)."""

_NUMBER = re.compile(r"[-\u2212]?\d[\d,]*(?:\.\d+)?")
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")


def number(cell: str) -> float | None:
    """The first number in a table cell (thousands separators and a Unicode
    minus read), or None: ``"3,083.06"`` -> 3083.06, ``"−0.7"`` -> -0.7."""
    m = _NUMBER.search(cell)
    if not m:
        return None
    try:
        return float(m.group().replace(",", "").replace("\u2212", "-"))
    except ValueError:
        return None


_BOUNDS = re.compile(r"\b(?:at|no) (?:least|most)\b")  # a bound, not an extreme
_LETTERS = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    """The lower-cased words of ``text`` as cue words are matched (not stems)."""
    return set(_LETTERS.findall(text.lower()))


def cue_words(question: str) -> tuple[bool, bool, bool, bool]:
    """``(first, last, most, least)``: which cues ``question`` carries
    (lower-cased words, not stems: "firsts" is no cue; "at least 3" is a
    bound, not an extreme)."""
    words = _words(_BOUNDS.sub(" ", question.lower()))
    either = bool(words & EITHER)
    return (bool(words & FIRST), bool(words & LAST), bool(words & MOST) or either,
            bool(words & LEAST) or either)


def neighbour_units(question: str, units: Sequence[tuple[int, Unit]], ranked: Sequence[Unit],
                    limit: int | None = None) -> list[Unit]:
    """For a question with a sequence cue (:data:`SEQUENCE`), the body rows
    next to the rows it names: the row above, then the row below (table
    order), of each of the first :data:`NAMED_ROWS` named rows. Both sides,
    since a table may run either way in time. A named row is a body row of a
    table (as :func:`cue_units` reads ``units``, ``(page_rank, unit)``)
    whose cells hold question words: the best page's first, then the most
    distinct words, then the order of ``ranked`` (units in selection order,
    best first). At most ``limit`` (and :data:`MAX_CUE_UNITS`) rows, no
    named one; empty without a cue. Our addition to Tessera §3.4's
    selection, as the order and extreme cues are (§4.6 counts such rows
    among the answers that never reach the reader)."""
    if not _words(question) & SEQUENCE:
        return []
    tables, page_rank = _tables(units)
    q = set(tokens(question))
    order = {u.unit_id: i for i, u in enumerate(ranked)}
    named = [(page_rank[key], -hits, order.get(u.unit_id, len(order)), i, key)
             for key, rows in tables.items() if _eligible(rows)
             for i, u in enumerate(rows) if (hits := len(q & set(tokens(u.text))))]
    anchors = [(key, i) for *_, i, key in sorted(named, key=lambda t: t[:4])[:NAMED_ROWS]]
    skip = {tables[key][i].unit_id for key, i in anchors}
    out: dict[str, Unit] = {}
    for key, i in anchors:
        for j in (i - 1, i + 1):
            if 0 <= j < len(tables[key]) and tables[key][j].unit_id not in skip:
                out.setdefault(tables[key][j].unit_id, tables[key][j])
    return list(out.values())[:min(MAX_CUE_UNITS, limit or MAX_CUE_UNITS)]


def _tables(units: Sequence[tuple[int, Unit]]) -> tuple[dict[tuple[str, int, int], list[Unit]],
                                                        dict[tuple[str, int, int], int]]:
    """The body rows of ``units`` (``(page_rank, unit)``) by table (doc_id,
    page, table index), in ``row_index`` order, and each table's page rank."""
    tables: dict[tuple[str, int, int], list[Unit]] = {}
    page_rank: dict[tuple[str, int, int], int] = {}
    for rank, u in units:
        if u.kind == "row" and u.table_index is not None and u.row_index is not None:
            key = (u.doc_id, u.page, u.table_index)
            tables.setdefault(key, []).append(u)
            page_rank[key] = min(rank, page_rank.get(key, rank))
    for rows in tables.values():
        rows.sort(key=lambda u: u.row_index)
    return tables, page_rank


def _eligible(rows: list[Unit]) -> bool:
    """Whether a table's rows make a table cues read: at least :data:`MIN_ROWS`
    body rows under at least two named columns (not an infobox)."""
    return len(rows) >= MIN_ROWS and sum(1 for h in _headers(rows) if h.strip()) >= 2


def cue_units(question: str, units: Sequence[tuple[int, Unit]],
              ranked: Iterable[Unit], limit: int | None = None) -> list[Unit]:
    """The rows of ``units`` (``(page_rank, unit)``, 0 = the best page) that
    ``question`` points at by position or extreme value, at most ``limit``
    (and :data:`MAX_CUE_UNITS`): rows picked by value first, then rows picked by
    position, each most relevant table first.

    Tables (at least :data:`MIN_ROWS` body rows under at least two named
    columns: not an infobox), most relevant first (the most question words
    in their headers, then the order in which ``ranked``, units in selection
    order, best first, meets their rows): the best page's first
    :data:`BEST_PAGE_TABLES` give up to :data:`BEST_PAGE_CUES` rows, then
    each other page's most relevant table one row, best page first (the
    answer's page is often not the best one). In each, an ordinal cue gives the
    first / last body row (by ``row_index``) and, when a numeric column (a
    number in at least 60% of the rows; a year in a Year / Season / Date
    column) is named by the question or holds years, the row with its
    smallest / largest number ("the first completed"); a superlative cue
    gives, per named numeric column other than a year (for oldest /
    youngest, an ``Age`` column), the row with the largest / smallest
    number. Empty when the question carries no cue."""
    first, last, most, least = cue_words(question)
    if most or least:
        most, least = _compared(question, units, most, least)
    if not (first or last or most or least):
        return []
    tables, page_rank = _tables(units)
    met: dict[tuple[str, int, int], int] = {}
    for u in ranked:
        met.setdefault((u.doc_id, u.page, u.table_index), len(met))
    q = set(tokens(question))
    eligible = []
    for key, rows in tables.items():
        if _eligible(rows):
            headers = _headers(rows)
            names = [_named_words(q, h) for h in headers]  # per column, read again by _cue_rows
            eligible.append((page_rank[key], -sum(map(len, names)), met.get(key, len(met)), key,
                             headers, names))
    best_page: list[tuple] = []  # the best page's tables, most relevant first
    others: dict[tuple[str, int], tuple] = {}  # each other page's most relevant table
    best = min((e[0] for e in eligible), default=0)
    for entry in sorted(eligible):
        if entry[0] == best:
            best_page.append(entry)
        else:
            others.setdefault(entry[3][:2], entry)
    cues = (first, last, most, least)
    cap = min(MAX_CUE_UNITS, limit or MAX_CUE_UNITS)
    out = {u.unit_id: u for u in
           _cue_rows(best_page[:BEST_PAGE_TABLES], tables, q, cues)[:BEST_PAGE_CUES]}
    for entry in list(others.values())[:MAX_TABLES - BEST_PAGE_TABLES]:
        if len(out) >= cap:
            break
        # one row from each other page: the answer's page is often not the best one
        for u in _cue_rows([entry], tables, q, cues)[:1]:
            out.setdefault(u.unit_id, u)
    return list(out.values())[:cap]


def _compared(question: str, units: Sequence[tuple[int, Unit]], most: bool, least: bool
              ) -> tuple[bool, bool]:
    """``(most, least)`` less the superlatives ``question`` uses as part of
    a field's name: "what *maximum in-service wind speed* does the maker
    allow" looks up the row whose key cell (its first) is a name of
    :data:`FIELD_WORDS` words or more, a superlative among them, all of
    them the question's ("Maximum in-service wind speed | 22 m/s"); it does
    not ask for the row with the largest speed of a speed table. A shorter
    key ("Largest city") is too common a phrase to tell."""
    words = _words(_BOUNDS.sub(" ", question.lower()))
    for _, u in units:
        if not u.cells:
            continue
        key = _words(u.cells[0])
        used = key & words & (MOST | LEAST | EITHER)
        if used and len(key) >= FIELD_WORDS and key <= words:
            most = most and not used & (MOST | EITHER)
            least = least and not used & (LEAST | EITHER)
    return most, least


def _cue_rows(entries: list[tuple], tables: dict, q: set[str],
              cues: tuple[bool, bool, bool, bool]) -> list[Unit]:
    """The cue rows of the tables of ``entries`` (``(..., key, headers,
    names)``: ``names`` the question words naming each column): rows picked
    by value, then rows picked by position, each in table order (see
    :func:`cue_units`)."""
    first, last, most, least = cues
    by_value: list[Unit] = []
    by_position: list[Unit] = []
    for *_, key, headers, names in entries:
        rows = tables[key]
        years = [c for c, h in enumerate(headers)
                 if set(tokens(h)) & _TIME and _numeric(rows, c, True)]
        numeric = [c for c in range(len(headers)) if c in years or _numeric(rows, c, False)]
        named = [c for c in numeric if names[c]]
        # "which year had the most ...": the year is what is asked, not compared
        measures = [c for c in named if c not in years] or \
            ([c for c in numeric if "age" in tokens(headers[c])] if EITHER & q else [])
        if first:
            by_position.append(rows[0])
            by_value += _extremes(rows, named or years, years, min)
        if last:
            by_position.append(rows[-1])
            by_value += _extremes(rows, named or years, years, max)
        if most:
            by_value += _extremes(rows, measures, years, max)
        if least:
            by_value += _extremes(rows, measures, years, min)
    return list({u.unit_id: u for u in by_value + by_position}.values())


_TIME = frozenset({"year", "season", "date"})
FUZZY_MIN = 5
"""Words of at least this many letters name a header one edit away
("vicitims" names "Victims"); shorter ones only when equal."""


def _named_words(q: set[str], header: str) -> set[str]:
    """The header tokens of ``header`` that question tokens ``q`` name:
    equal, or for words of :data:`FUZZY_MIN` letters or more, one
    Levenshtein edit apart (a misspelled column name)."""
    fuzzy = [w for w in q if len(w) >= FUZZY_MIN]
    return {h for h in tokens(header) if h in q or (len(h) >= FUZZY_MIN and any(
        Levenshtein.distance(w, h, score_cutoff=1) <= 1 for w in fuzzy))}


def _headers(rows: list[Unit]) -> tuple[str, ...]:
    """The header path of each column of a table's rows (the widest row's)."""
    return max((u.headers for u in rows), key=len)


def _value(cell: str, time: bool) -> float | None:
    """A cell's number; in a time column its year (``"June 12, 2007"`` -> 2007)."""
    if time:
        m = _YEAR.search(cell)
        return float(m.group()) if m else None
    return number(cell)


def _numeric(rows: list[Unit], col: int, time: bool) -> bool:
    """Whether at least 60% of ``rows`` hold a number (a year) in column ``col``."""
    return sum(1 for u in rows if col < len(u.cells) and _value(u.cells[col], time) is not None) \
        >= 0.6 * len(rows)


def _extremes(rows: list[Unit], cols: list[int], years: list[int], pick) -> list[Unit]:
    """Per column of ``cols``, the row whose number there ``pick`` (min or
    max) chooses, the first such row on a tie (``years``: time columns)."""
    out = []
    for col in cols:
        values = [(v, u.row_index, u) for u in rows if col < len(u.cells)
                  and (v := _value(u.cells[col], col in years)) is not None]
        if values:
            out.append(pick(values, key=lambda t: (t[0], -t[1] if pick is max else t[1]))[2])
    return out
