"""The chains of iterative bridge expansion (PILAR §3.4, multi-hop profile):
how a page joined a chain (:class:`Hop`), a chain of pages in reasoning
order (:class:`Chain`), which chains a hop keeps (:func:`keep_chains`), which
entities can be bridges (:func:`bridge_name`) and the bridging units packing
puts first (:func:`mark_bridging`), the rows a hop carries for a date
(:func:`dated_rows`), the units a chain leaves a page by
(:func:`record_units`), the hops landing on a list of codes
(:func:`listed`), how much of the question a chain's pages hold
(:class:`Coverage`) and the pages that give way to a better page of their
series (:func:`second_of_series`). The search itself is
:class:`pilar.retrieval.bridges.BridgeExpander`."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from pilar.ingest.codes import codes, is_code
from pilar.ingest.dates import dates_in
from pilar.ingest.quantities import is_measure
from pilar.ingest.names import capitalised_spans, model_names, proper_name
from pilar.config import Settings
from pilar.model import RankedPage, Unit
from pilar.parts import words
from pilar.retrieval import PageIndex
from pilar.retrieval.embeddings import Embedder
from pilar.retrieval.hybrid import beside, scaled
from pilar.retrieval.naming import asked_text, names_matcher, same_series, title_key
from pilar.retrieval.terms import tokens

__all__ = ["LINKED_RELEVANCE", "SERIES_PLACES", "Chain", "Coverage", "Hop", "best_per_document",
           "bridge_name", "carried_units", "chain_path", "chain_weights", "dated_rows",
           "end_relevance", "keep_chains", "landing", "leaving", "listed", "lower",
           "mark_bridging", "may_lead", "record_units", "second_of_series"]


def mark_bridging(ranked: list[RankedPage], hops: dict[str, "Hop"]) -> None:
    """Set ``bridging`` of the pages of ``ranked`` joined by a hop whose two
    ends are both in ``ranked`` (in place): on the reached page the unit that
    names the bridge and its dated and linked units (:class:`Hop`), and, when
    the question asks for the hop (:attr:`Hop.asked`), on the source page the
    unit that named it. Packing puts them first and then takes each page's
    units in turn, so the chain's last page is not crowded out by the first."""
    where = {p.page_id: p for p in ranked}
    marks: dict[str, dict[str, None]] = {}
    for pid, h in hops.items():
        if pid in where and h.source in where:
            if h.asked:
                marks.setdefault(h.source, {})[h.source_support] = None
            marks.setdefault(pid, {})[h.support] = None
            marks[pid].update(dict.fromkeys((*h.dated, *h.linked)))
    for pid, sids in marks.items():
        where[pid].bridging = tuple(sids)


@lru_cache(maxsize=65_536)
def bridge_name(entity_id: str, name: str) -> bool:
    """Can an entity be a bridge: a code, a quantity or band
    (:mod:`pilar.ingest.quantities`: a value linked to the range holding
    it), or a proper name of two or more words? (Kept: every hop asks it of
    hundreds of entities.)"""
    return is_code(entity_id) or is_measure(entity_id) or proper_name(name)


def may_lead(unit: Unit) -> bool:
    """Can ``unit`` be a chain's way on: a table row (its cells hold codes,
    names and values), or text holding a code, a proper name of two or
    more words or a model (:func:`bridge_name`'s kinds; a sentence with neither, "the
    findings were shared with all crews", names nothing to follow)?"""
    if len(unit.cells) > 1 or codes(unit.text):
        return True
    spans = capitalised_spans(unit.text)  # read only for text naming no code
    return any(proper_name(surface) for surface, _, _ in spans) or any(
        map(proper_name, model_names(unit.text, spans)))


_LIST_PARTS = re.compile(r"\s*(?:[,;/&]|\band\b|\bto\b|\bor\b)\s*")


def listed(unit: Unit, name: str) -> bool:
    """Does ``unit`` name ``name`` in a table cell that lists several codes:
    split at ``, ; / &`` and the words *and*, *to*, *or*, two or more parts
    hold a code (the cranes of a berth ``QC-09, QC-10``, ``VSD-101 to
    VSD-103``; a container ``CVSU 481207 3`` or ``BMW M6`` is one part)?
    The page names the bridge among others, not as what its row is about."""
    named = names_matcher([name])
    return any(named(cell) and sum(1 for part in _LIST_PARTS.split(cell) if codes(part)) >= 2
               for cell in unit.cells)


def record_units(units: list[Unit], names: list[str], entered: bool) -> frozenset[str] | None:
    """The supports of one page's ``units`` (document order) a chain that
    came to the page through ``names`` may leave from at full weight, or
    None for all (:meth:`~pilar.retrieval.bridges.BridgeExpander._on_bridge`
    says why): on a page a bridge reached (``entered``), the units naming
    it and, when one of those is a row of a two-column table or in the
    page's lead (before its first table), every two-column row (the
    record's fields); on a start, the units naming the question's names
    when all of them are rows of a register (more than two columns), else
    None."""
    wanted = names_matcher(names)
    naming = [u for u in units if wanted(u.text)]
    if not entered and (not naming or any(len(u.cells) <= 2 for u in naming)):
        return None
    first_table = next((i for i, u in enumerate(units) if u.cells), len(units))
    lead = {u.support_id for u in units[:first_table]}
    if not any(len(u.cells) == 2 or u.support_id in lead for u in naming):
        return frozenset(u.support_id for u in naming)
    return frozenset([u.support_id for u in naming]
                     + [u.support_id for u in units if len(u.cells) == 2])


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
    the bridge's context, the column it sits in or the words before it);
    ``dated``: rows of the page of the day the source's record gives
    (:func:`dated_rows`), ``linked``: the unit another hop lands on from a
    unit a page ranked above carries, where it lands better than this one
    (:func:`carried_units`);
    both are carried with the bridging unit."""

    bridge: str
    name: str
    support: str
    source: str
    source_support: str
    hop: int
    weight: float
    asked: bool = False
    dated: tuple[str, ...] = ()
    linked: tuple[str, ...] = ()


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


def best_per_document(pages: Iterable[RankedPage], skip: set[str], n: int,
                      key: Callable[[RankedPage], float] | None = None) -> list[RankedPage]:
    """The ``n`` best ``pages`` by ``key`` (default: score; ties by page id),
    one per document, of documents not in ``skip``: where chains start."""
    key = key or (lambda p: p.score)
    out, seen = [], set(skip)
    for p in sorted(pages, key=lambda p: (-key(p), p.page_id)):
        if p.doc_id not in seen:
            seen.add(p.doc_id)
            out.append(p)
            if len(out) == n:
                break
    return out


def chain_path(chain: Chain, i: int, by_id: dict[str, RankedPage]) -> list[str]:
    """``["question", "X", "QC-09 (unit of X)", "Y", ...]``: the hops of
    ``chain`` up to its ``i``-th page (``by_id``: the pages by id), each page
    named by its source file's stem (its document id without one)."""
    def label(page: RankedPage) -> str:
        return (Path(page.source).stem if page.source else "") or page.doc_id
    steps = ["question", label(by_id[chain.pages[0]])]
    for h, pid in zip(chain.hops[:i], chain.pages[1:i + 1]):
        steps += [f"{h.name} (unit of {label(by_id[h.source])})", label(by_id[pid])]
    return steps


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


def chain_weights(beam: list[Chain], temperature: float) -> list[float]:
    """Softmax weights (unnormalised, the best chain's 1.0) of ``beam``'s
    chains (best first) by :attr:`Chain.score` at ``temperature``: how a
    hop's chains share out their chain mass (the Ranking of
    :mod:`pilar.retrieval.bridges`)."""
    top = beam[0].score if beam else 0.0
    return [math.exp((c.score - top) / temperature) for c in beam]


def leaving(starts: list[Chain], first: list[Chain], temperature: float) -> float:
    """How likely (0-1) a chain leaves its first document at all: the first
    hop's chains (``first``, best first) against *staying*, the best start
    of ``starts`` (chains of no hop: the question answered by one document),
    in one softmax of their :attr:`Chain.score` at ``temperature``: the first
    hop's share.
    Each hop's chain mass is scaled by it (the Ranking of
    :mod:`pilar.retrieval.bridges`): where no chain beats staying by much,
    as for a lookup in one table whose rows name other pages, the pages the
    chains reach gain little, and where the question's start names a code
    that leads on, nearly the whole unit. 1.0 without a first hop or a start."""
    if not first or not starts:
        return 1.0
    chains = sum(chain_weights(first, temperature))
    stay = max(c.score for c in starts)
    return chains / (chains + math.exp(min((stay - first[0].score) / temperature, 700.0)))


SERIES_PLACES = 5
"""The first places of a ranking where a second page of one series gives way
(:func:`second_of_series`)."""


def lower(page: RankedPage, reason: str, weight: float) -> None:
    """Keep ``weight`` (0-1) of ``page``'s score; the score taken off is in
    its trace under ``reason`` (``pilar search --explain`` shows it)."""
    page.trace[reason] = round(page.score * (1 - weight), 6)
    page.score = round(page.score * weight, 6)


def second_of_series(ranked: Iterable[RankedPage], keep: Iterable[str] = ()
                     ) -> list[RankedPage]:
    """The pages of ``ranked`` (best first) below a page of another document
    of their series (:func:`~pilar.retrieval.naming.same_series` of their
    titles) that is not itself one of them: the 2019 charter party below the
    2022 one, the February minutes below May's. A chain never holds two of
    a series, so the second takes a place a chain's next document should
    have. The pages of ``keep`` (the lead chain's) never are; a page
    already lowered as a sibling of the chain (``sibling_of_chain`` in its
    trace: a version the question does not name) is passed over."""
    out, above = [], []
    keep = set(keep)
    for page in ranked:
        if "sibling_of_chain" in page.trace:
            continue
        key = title_key(page.title)
        if page.page_id not in keep and any(doc != page.doc_id and same_series(key, other)
                                            for doc, other in above):
            out.append(page)
        else:
            above.append((page.doc_id, key))
    return out


def end_relevance(index: PageIndex, embedder: Embedder, settings: Settings, question: str,
                  names: list[str], by_id: dict[str, RankedPage], shortlist: list[str],
                  end: dict[str, float]) -> Callable[[list[str]], None]:
    """A function filling ``end`` (``{page_id: relevance 0-1}``) for the page
    ids it is given: each page's relevance as a chain's last page, its hybrid
    score (``settings``' BM25 and dense weights) against
    :func:`~pilar.retrieval.naming.asked_text` (BM25 normalised over the range
    of the ``shortlist``'s page ids for that text; the page's own score in
    ``by_id`` when the question names nothing). Embeds the asked text once
    (``embedder``) and reads ``index`` once per call."""
    ask = asked_text(question, names)
    if not names or not tokens(ask):
        def own(page_ids: list[str]) -> None:
            end.update((pid, by_id[pid].score) for pid in page_ids)
        return own
    vector = embedder.query(ask)
    raw = list(index.bm25_for(ask, shortlist).values())
    lo, hi = (min(raw, default=0.0), max(raw, default=0.0))

    def fill(page_ids: list[str]) -> None:
        new = [pid for pid in page_ids if pid not in end]
        if not new:
            return
        with beside(index.bm25_for, ask, new) as lexical:
            dense = index.dense_for(vector, new)
        bm25 = lexical.result()
        for pid in new:
            end[pid] = max(by_id[pid].score,
                           settings.bm25_weight * scaled(bm25.get(pid, 0.0), lo, hi)
                           + settings.dense_weight * dense[pid])
    return fill


DATED_ROWS = 2
"""Rows of a reached page a hop carries for the date its source gives (at most)."""


LINKED_RELEVANCE = 0.5
"""A page's linked unit is at least this share as relevant to the question
as its most relevant unit (a link landing on a page's by-the-way mention,
the city of a club on a page about another sport, costs the packet room)."""


def landing(hop: Hop, units: list[Unit], relevance: dict[str, float], bridge_cost: float
            ) -> tuple[float, bool, float, str]:
    """Where ``hop`` lands among ``units`` (its page's; ``relevance`` to the
    question by support id): the unit naming its bridge in a table cell,
    most relevant first, else the most relevant naming it (its own support
    when none does); as ``(bridge_cost * log weight + relevance, in a cell,
    relevance, support id)``, better first when compared."""
    named = names_matcher([hop.name])
    cell, rel, sid = max(((any(map(named, u.cells)), relevance[u.support_id], u.support_id)
                          for u in units if named(u.text)), default=(False, 0.0, hop.support))
    return (bridge_cost * math.log(max(hop.weight, 1e-6)) + rel, cell, rel, sid)


def carried_units(hops: dict[str, Hop], every: dict[str, list[Hop]], scores: dict[str, float],
                  units: dict[str, list[Unit]], relevance: dict[str, dict[str, float]],
                  bridge_cost: float) -> dict[str, Hop]:
    """``hops`` (``{page_id: Hop}``) with each reached page's bridging unit
    where its hop lands (:func:`landing`: the tariff's row of ``40RH``, not
    the note listing every size-type code), its dated rows
    (:func:`dated_rows`) and its ``linked`` unit: where another hop of the
    search (``every``: all, by page reached) lands, leaving from a unit the
    packet carries on a page ranked above it (``scores`` by page id; that
    page's bridging, linked or dated units, or the anchor of a hop the
    question asks for), by a bridge no lighter than the page's own hop's,
    when it lands better on a unit at least :data:`LINKED_RELEVANCE` as
    relevant as the page's best (``units`` and ``relevance`` by page id). A
    reader reads the packet from its best page down and follows the links
    between the units it is given: the log's row of the repair names the
    technician ``KDO``, whose roster row is the answer, though the roster's
    best chain came through ``STS`` in the register. Pages are taken best
    first, so the units of the pages above are known."""
    carried: dict[str, set[str]] = {}
    for h in hops.values():
        if h.asked:
            carried.setdefault(h.source, set()).add(h.source_support)
    out = {}
    for pid, h in sorted(hops.items(), key=lambda kv: -scores[kv[0]]):
        rel = relevance[pid]
        own = landing(h, units[pid], rel, bridge_cost)
        linked = max((landing(x, units[pid], rel, bridge_cost) for x in every.get(pid, ())
                      if x.source in carried and scores[x.source] > scores[pid]
                      and x.source_support in carried[x.source] and x.weight >= h.weight),
                     default=own)
        out[pid] = replace(h, support=own[3], dated=dated_rows(
            units.get(h.source, []), h.source_support, units[pid]),
            linked=(linked[3],) if linked[:3] > own[:3] and linked[3] != own[3]
            and linked[2] >= LINKED_RELEVANCE * max(rel.values()) else ())
        carried.setdefault(pid, set()).update((own[3], *out[pid].linked, *out[pid].dated))
    return out


def dated_rows(source: list[Unit], anchor: str, reached: list[Unit]) -> tuple[str, ...]:
    """The supports of the table rows of ``reached`` (units of a page a hop
    reached) that write a date the hop's source page gives its record
    (a two-column row of field and value, ``Date | 13 June 2024``) or its
    ``anchor`` unit writes (:func:`~pilar.ingest.dates.dates_in`): "the
    work order *on the day of the incident*" is the log's row of that day.
    The rows of the date that picks out fewest (a record's "closed on"
    date may fall on a busy day; the day of the event is the one row),
    at most :data:`DATED_ROWS` of them: none when every date picks more."""
    given = frozenset().union(*(dates_in(u.text) for u in source
                                if u.support_id == anchor or len(u.cells) == 2))
    if not given:
        return ()
    by_date: dict[str, list[str]] = {}
    for u in reached:
        if len(u.cells) > 2:
            for day in dates_in(u.text) & given:
                by_date.setdefault(day, []).append(u.support_id)
    fewest = min(by_date.values(), key=len, default=[])
    return tuple(fewest) if len(fewest) <= DATED_ROWS else ()


class Coverage:
    """How much of the question a chain's pages hold together: each of the
    question's words (one per stem) weighs its best BM25 on the search's
    shortlist (``shortlist``: page ids; a rare word weighs more), and a
    chain holds a word as far as its best page for it holds it (BM25
    capped at the weight). :meth:`of` is the share of the total weight
    held, 0-1. A chain whose pages all match the same words (a detour
    through pages like the first) holds less than one whose last page
    holds the words the others lack ("in which *town* are the owners
    named in the charter *headquartered*": the owner's company page, not
    the sister ship's particulars, which say "owners" again); the
    chain's score gains ``chain_coverage`` times it (complementary
    evidence, PILAR §3.4 multi-hop profile). ``bm25_each(texts, page_ids)``
    is the page index's (:meth:`~pilar.retrieval.PageIndex.bm25_each`):
    one read of every word for the shortlist, then per :meth:`read`."""

    def __init__(self, question: str,
                 bm25_each: Callable[[list[str], list[str]], list[dict[str, float]]],
                 shortlist: list[str]):
        stems: dict[str, str] = {}
        for word in words(question):
            for stem in tokens(word)[:1]:
                stems.setdefault(stem, word)
        self.words = list(stems.values())
        self.bm25_each = bm25_each
        self.held: dict[str, np.ndarray] = {}
        self.read(shortlist)
        self.weight = np.maximum.reduce([self.held[pid] for pid in shortlist]) \
            if shortlist and self.words else np.zeros(len(self.words))
        self.total = float(self.weight.sum())

    def read(self, page_ids: list[str]) -> None:
        """Read each question word's BM25 on the pages of ``page_ids`` not read yet."""
        new = [pid for pid in dict.fromkeys(page_ids) if pid not in self.held]
        if not new or not self.words:
            return
        found = self.bm25_each(self.words, new)
        for pid in new:
            self.held[pid] = np.array([f.get(pid, 0.0) for f in found])

    def best(self, pages: tuple[str, ...]) -> np.ndarray:
        """Per question word, the best BM25 of ``pages`` (those read), capped
        at the word's weight: shape ``(len(words),)``."""
        rows = [self.held[pid] for pid in pages if pid in self.held]
        return np.minimum(np.maximum.reduce(rows), self.weight) if rows else \
            np.zeros(len(self.words))

    def of(self, pages: tuple[str, ...], best: np.ndarray | None = None,
           page: str | None = None) -> float:
        """The share (0-1) of the question's word weight ``pages`` hold (0 when
        none of them was read); with ``best`` (:meth:`best` of ``pages``) and
        ``page``, the share ``pages`` and ``page`` hold together, ``pages``
        not read again."""
        if self.total <= 0:
            return 0.0
        if best is None:
            best = self.best(pages)
        if page is not None and page in self.held:
            best = np.maximum(best, np.minimum(self.held[page], self.weight))
        return float(best.sum()) / self.total
