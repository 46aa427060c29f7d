"""The chains of iterative bridge expansion (PILAR §3.4, multi-hop profile):
how a page joined a chain (:class:`Hop`), a chain of pages in reasoning
order (:class:`Chain`), which chains a hop keeps (:func:`keep_chains`), which
entities can be bridges (:func:`bridge_name`) and the bridging units packing
puts first (:func:`mark_bridging`). The search itself is
:class:`pilar.retrieval.bridges.BridgeExpander`."""

from __future__ import annotations

from dataclasses import dataclass

from pilar.ingest.codes import is_code
from pilar.ingest.quantities import is_measure
from pilar.ingest.names import proper_name
from pilar.model import RankedPage

__all__ = ["Chain", "Hop", "bridge_name", "keep_chains", "mark_bridging"]


def mark_bridging(ranked: list[RankedPage], hops: dict[str, "Hop"]) -> None:
    """Set ``bridging`` of the pages of ``ranked`` joined by a hop whose two
    ends are both in ``ranked`` (in place): on the reached page the unit that
    names the bridge, and, when the question asks for the hop
    (:attr:`Hop.asked`), on the source page the unit that named it. Packing
    puts them first and then takes each page's units in turn, so the
    chain's last page is not crowded out by the first."""
    where = {p.page_id: p for p in ranked}
    marks: dict[str, dict[str, None]] = {}
    for pid, h in hops.items():
        if pid in where and h.source in where:
            if h.asked:
                marks.setdefault(h.source, {})[h.source_support] = None
            marks.setdefault(pid, {})[h.support] = None
            marks[pid].update(dict.fromkeys(h.dated))
    for pid, sids in marks.items():
        where[pid].bridging = tuple(sids)


def bridge_name(entity_id: str, name: str) -> bool:
    """Can an entity be a bridge: a code, a quantity or band
    (:mod:`pilar.ingest.quantities`: a value linked to the range holding
    it), or a proper name of two or more words?"""
    return is_code(entity_id) or is_measure(entity_id) or proper_name(name)


def start_names(named: list[tuple[str, str]]) -> list[str]:
    """The names a chain's start is entered through, of the question's
    ``(entity_id, name)`` pairs: its codes and proper names (those that
    could be a bridge: :func:`bridge_name`), not the common nouns it also
    links ("Reefer", "Chief executive": every page of a kind names them, so
    a manifest row naming the container would not stand out of the page);
    all the names when it gives none of those."""
    return [name for eid, name in named if bridge_name(eid, name)] or [n for _, n in named]


@dataclass(slots=True)
class Hop:
    """How a page joined a chain: the ``bridge`` entity (id and name), the
    ``support`` on the page that names it (its bridging unit), the page the
    hop started from (``source``) and the anchor there (``source_support``),
    the hop number, the bridge's weight (see the module docstring) and
    whether the question asks for it (``asked``: a word of the question in
    the bridge's context, the column it sits in or the words before it)."""

    bridge: str
    name: str
    support: str
    source: str
    source_support: str
    hop: int
    weight: float
    asked: bool = False
    dated: tuple[str, ...] = ()


@dataclass(slots=True)
class Chain:
    """Pages joined by bridges, in reasoning order: ``hops[i]`` joins
    ``pages[i]`` to ``pages[i + 1]``; ``score`` is the first page's score
    (a start alone: just that, with its ``named_start`` gain), plus the
    last page's relevance as an end, plus ``bridge_cost``
    times the sum of the bridges' log weights (the module docstring's step 3)."""

    pages: tuple[str, ...]
    hops: tuple[Hop, ...]
    score: float


def keep_chains(chains: list[Chain], end: dict[str, float], beam: int, paths: int
                ) -> list[Chain]:
    """The ``beam`` chains a hop keeps, best score first: the ``beam -
    paths`` best by score, then the best by score without their last
    page's relevance as an end (``end[page_id]``), so a chain whose last
    page is a lookup on the way (a register row giving a model code,
    sharing no word with the question) is not judged as an answer."""
    by_score = sorted(chains, key=lambda c: (-c.score, c.pages))
    keep = {c.pages: c for c in by_score[: max(beam - paths, 0)]}
    for c in sorted(chains, key=lambda c: (end[c.pages[-1]] - c.score, c.pages)):
        if len(keep) >= beam:
            break
        keep.setdefault(c.pages, c)
    return sorted(keep.values(), key=lambda c: (-c.score, c.pages))
