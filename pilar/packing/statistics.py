"""Ingest-time statistics of evidence units (:class:`~pilar.model.UnitStats`):
what selection and packing read of a unit instead of recomputing it on
every search (Tessera §3.4's lexical prefilter needs each unit's term
counts; the packer needs each unit line's reader-token count, and units
never change after ingest).

They are computed once when a document is written (:func:`fill_stats` on
its units) and stored beside the units on both graph backends; units of
an older store, or counted with another tokenizer than the configured one,
are filled on first read and written back
(:meth:`pilar.graph.GraphStore.set_unit_stats`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pilar.model import Unit, UnitStats
from pilar.packing.tokens import TokenCounter
from pilar.retrieval.unit_runs import group_leaders
from pilar.retrieval.terms import Postings, term_counts, unit_term_counts

log = logging.getLogger(__name__)

TableKey = tuple[str, int, int]
"""A table of a page: (doc_id, page number, table index)."""
_warned = False  # a failed write of statistics was logged


def unit_line(u: Unit) -> str:
    """The line a unit is packed as: a row's cells joined with ``" | "``
    (a cell's line breaks as ``" / "``), any other unit's own text."""
    if u.kind == "row" and u.cells:
        return " | ".join(c.replace("\n", " / ") for c in u.cells)
    return u.text


def stale(units: Iterable[Unit], counter: TokenCounter) -> list[Unit]:
    """The units of ``units`` whose statistics are missing or were counted
    with another tokenizer than ``counter``'s."""
    return [u for u in units if u.stats is None or u.stats.tokenizer != counter.name]


def fill_stats(units: list[Unit], counter: TokenCounter) -> dict[str, UnitStats]:
    """Compute and set ``u.stats`` on every unit of ``units`` (term counts of
    its completed text, tokens of its :func:`unit_line` under ``counter``);
    returns ``{unit_id: UnitStats}`` of those units (to be stored)."""
    if not units:
        return {}
    counts = counter.count_many([unit_line(u) for u in units])
    out = {}
    for u, n in zip(units, counts):
        terms, length = term_counts(u.completed_text)
        u.stats = out[u.unit_id] = UnitStats(terms=terms, length=length, tokens=n,
                                             tokenizer=counter.name)
    return out


def line_tokens(units: list[Unit], counter: TokenCounter) -> list[int]:
    """Reader tokens of each unit's :func:`unit_line`, in order: the stored
    count when it was made with ``counter``'s tokenizer, else counted now."""
    out: list[int | None] = [u.stats.tokens if u.stats is not None
                             and u.stats.tokenizer == counter.name else None for u in units]
    missing = [i for i, n in enumerate(out) if n is None]
    if missing:
        for i, n in zip(missing, counter.count_many([unit_line(units[i]) for i in missing])):
            out[i] = n
    return out  # type: ignore[return-value]


def refresh_stats(units: list[Unit], counter: TokenCounter,
                  store: Callable[[dict[str, UnitStats]], None]) -> int:
    """Fill the statistics of the :func:`stale` units of ``units`` (read from a
    store) and hand them to ``store`` (:meth:`pilar.graph.GraphStore.set_unit_stats`)
    so later reads find them; returns how many were filled. A failed write
    is logged (once per process) and the filled statistics are used all the same."""
    filled = fill_stats(stale(units, counter), counter)
    if filled:
        try:
            store(filled)
        except Exception as exc:  # noqa: BLE001 - a read-only or busy store: use them unstored
            global _warned
            if not _warned:  # once per process: a read-only store would say it every search
                _warned = True
                log.warning("unit statistics of %d units not stored (they are computed on each "
                            "first read instead): %s", len(filled), exc)
    return len(filled)


def table_key(u: Unit) -> TableKey | None:
    """The table a row unit belongs to; None for other units."""
    return (u.doc_id, u.page, u.table_index) if u.kind == "row" and u.table_index is not None \
        else None


def tables_of(units: Iterable[Unit]) -> dict[TableKey, list[Unit]]:
    """The row units of ``units`` (document order) grouped by their table."""
    tables: dict[TableKey, list[Unit]] = {}
    for u in units:
        if (key := table_key(u)) is not None:
            tables.setdefault(key, []).append(u)
    return tables


@dataclass(slots=True, frozen=True)
class PageFacts:
    """What selection and packing read of one page's units on every search,
    made once per page: the :class:`~pilar.retrieval.terms.Postings` of
    their term counts (stored, else counted from the completed texts), the
    first unit of each unit's vector run
    (:func:`~pilar.retrieval.unit_runs.group_leaders`; runs never cross
    pages) and the page's tables (:func:`tables_of`; a table never crosses
    pages either). Shared between searches: read, never change."""

    postings: Postings
    leaders: dict[str, str]
    tables: dict[TableKey, list[Unit]]

    @classmethod
    def of(cls, units: list[Unit]) -> "PageFacts":
        """The facts of ``units``: all units of one page, in document order."""
        return cls(Postings([unit_term_counts(u) for u in units]), group_leaders(units),
                   tables_of(units))
