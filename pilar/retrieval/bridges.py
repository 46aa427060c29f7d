"""Iterative bridge expansion: the documents of a multi-hop chain reached
through the entities their units name (PILAR §3.4, multi-hop profile; node
specificity after HippoRAG, chains searched with a beam and ranked by the
share of the chains that hold each page).

A question names the first document of a chain (an incident report by its
number); the next document is reached through an entity the question never
names but the first document's unit does (the crane ``QC-09`` in the
incident's account, then the crane's model code ``VSC-65`` in the equipment
register's ``QC-09`` row, then the datasheet carrying that code).

Chains start from the ``bridge_frontier`` best pages (one per document)
and as many of the best pages naming the question's codes or names. Each
hop grows every chain of the beam by one page:

1. *anchors*: the units of each chain's last page whose entities may lead on:
   the ``bridge_units`` most relevant to the question (0.5 BM25 over the page's
   units, min-max normalised, + 0.5 cosine of the unit's run vector) of those
   that can lead on (:func:`~pilar.retrieval.chains.may_lead`: a table row, or
   text naming a code or a proper name; a sentence naming neither would only
   take a place) and are not template text (a line ``template_documents``
   documents carry word for word naming the same entity,
   :meth:`GraphStore.template_supports`: a report's footer names what every
   report names) and as many of those naming the entity that brought the page
   (the question's names on a start), whatever their relevance, and on a page a
   bridge reached every unit on that bridge (the fields of the record it names:
   the particulars' ``Length overall`` row leads on to the harbour rules'
   length band, though it shares no word with the question);
2. *bridges*: the entities the anchors mention and the pages they lead to
   (:meth:`GraphStore.bridges`, one read per hop). A bridge is a code
   (:mod:`pilar.ingest.codes`) or a proper name of two or more words or a
   model, a name and its number (:func:`~pilar.ingest.names.proper_name`:
   "Megalift 65"; "Length overall" on the particulars of every ship is a field,
   not a thing) that the question does not name and at most
   ``bridge_documents`` documents mention (more: a hub, it leads nowhere). Its
   weight is its specificity ``1 / sqrt(documents - 1)`` (an entity two
   documents share links them more surely than one ten share), times
   ``unasked`` unless the question *asks* for it (a word the question asks
   with, not one that names its start, in the column the bridge sits in or the
   words just before it: "the *vessel* being worked" meets ``vessel call
   VC-24-1183``, "the *spreader* on the crane" the ``Spreader`` column), times
   ``off_bridge`` when the anchor is not about what the chain came through
   (another row of the register than the one naming ``QC-09``; the rows of a
   two-column record all are, and on a start every unit is unless the
   question's codes and proper names,
   :func:`~pilar.retrieval.chains.start_names`, are named only in register
   rows), times ``listed_weight`` when it lands on a table cell listing
   several codes (:func:`~pilar.retrieval.chains.listed`: the cranes of a
   berth, ``QC-09, QC-10``, on a guide naming every crane);
3. *chains*: a chain's score is its first page's score (plus ``named_start``
   times the specificity of the question's entity it names: the question names
   where its chain starts) plus its last page's relevance as an end (the better
   of its score and its score against the question without the names it starts
   from, :func:`~pilar.retrieval.naming.asked_text`: the end does not name
   them) plus ``chain_coverage`` times the share of the question's words its
   pages hold together (:class:`~pilar.retrieval.chains.Coverage`: pages that
   complement each other, not a detour through pages matching the same words)
   plus ``bridge_cost`` times the sum of its bridges' log weights (the pages
   between are lookups, sharing no word with the question); a chain never holds
   two documents of one kind (:func:`~pilar.retrieval.naming.siblings`: an
   incident report and another one, a tariff and its superseded version), a
   version the question does not name
   (:func:`~pilar.retrieval.naming.names_version`: "the 2024 tariff", not the
   2023 one), one document twice or one bridge twice. The ``bridge_beam`` best
   go on to the next hop, ``bridge_paths`` of them the best by first page and
   bridges alone (a lookup page is a poor end, but the way to one); the hops
   stop after ``max_hops`` or when no chain grows.

Ranking: each hop's chains share out one unit of *chain mass*, by a softmax of
their scores (``chain_temperature``), to the pages they hold; a page gains
``chain_bonus`` times its mass summed over the hops, so the pages that many
good chains pass through (the register between the incident and the datasheet)
rise, and a page the links alone reach (a sibling model's datasheet with the
same words) does not. The unit is scaled by how likely a chain leaves its
start at all (:func:`~pilar.retrieval.chains.leaving`: the first hop's chains
against staying on the best start, in the same softmax), so a question one
document answers (a lookup in a table whose rows name other pages) keeps its
ranking, and one whose start names a code that leads on gains the whole unit.
A page of the same kind as a page of the best chain that
no chain holds, or a version the question does not name, keeps
``sibling_weight`` of its score; a chained page among the first
:data:`~pilar.retrieval.chains.SERIES_PLACES` below a page of its series
(:func:`~pilar.retrieval.chains.second_of_series`: the 2019 charter party below
the 2022 one) keeps ``series_weight``: a chain's next document should have its
place. Every chained page's trace names its path in its best chain, hop by hop:
``question -> ont_incident_ir_24_117 -> QC-09 (unit of ont_incident_ir_24_117)
-> ont_equipment_register``; the pages of a hop the question asks for carry its
units in ``bridging`` (:func:`~pilar.retrieval.chains.mark_bridging`), which
packing puts first, with the unit where another hop from a unit carried
above lands better (:func:`~pilar.retrieval.chains.carried_units`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
from cachetools import LRUCache

from pilar.config import Settings
from pilar.graph import GraphStore
from pilar.model import Bridge, RankedPage, Scope, Unit
from pilar.parts import KeptMap
from pilar.retrieval import PageIndex
from pilar.retrieval.unit_runs import group_leaders
from pilar.retrieval.hybrid import HybridRetriever, beside, best_first, scaled
from pilar.retrieval.chains import (SERIES_PLACES, Chain, Coverage, Hop, best_per_document,
                                    bridge_name, carried_units, chain_path, chain_weights,
                                    end_relevance, keep_chains, leaving, listed, lower,
                                    may_lead, record_units, second_of_series, start_names)
from pilar.retrieval.naming import (mention_context, names_matcher, names_version,
                                    naming_words, siblings, template, title_key, versions)
from pilar.retrieval.terms import Postings, bm25_of_postings, tokens, unit_term_counts

__all__ = ["BridgeExpander"]


@dataclass(slots=True)
class _Memo:
    """What one search works out once: each page's unit relevance, whether
    the question asks for an entity where a support names it, which supports
    are template text, each page's relevance as an end and the question's
    words each page holds (:class:`Coverage`)."""

    relevance: dict[str, list[float]] = field(default_factory=dict)
    asked: dict[tuple[str, str], bool] = field(default_factory=dict)
    end: dict[str, float] = field(default_factory=dict)
    template: dict[str, bool] = field(default_factory=dict)
    coverage: Coverage | None = None


UNIT_PAGES = 512
"""Pages whose units a :class:`BridgeExpander` keeps between searches."""

KEPT = 64 * UNIT_PAGES
"""Entries of each per-unit finding (a mention's context, a record's rows,
a list of codes, the units naming a bridge) a :class:`BridgeExpander` keeps
between searches."""


class BridgeExpander:
    """See the module docstring; ``settings`` should carry the profile."""

    def __init__(self, graph: GraphStore, index: PageIndex, hybrid: HybridRetriever,
                 settings: Settings):
        self.graph = graph
        self.index = index
        self.hybrid = hybrid
        self.s = settings
        self._units: LRUCache[str, list[Unit]] = LRUCache(UNIT_PAGES)
        self._lock = threading.Lock()
        self._kind_cache: LRUCache[str, tuple[str, frozenset[str]]] = LRUCache(8 * UNIT_PAGES)
        # what is worked out of pages' units, kept as they are (see _units_on)
        self._facts: LRUCache = LRUCache(UNIT_PAGES)
        self._contexts, self._records, self._lists, self._naming = (
            KeptMap(KEPT), KeptMap(KEPT), KeptMap(KEPT), KeptMap(KEPT))
        self.on_chains: Callable[[str, list[list[Chain]], dict[str, RankedPage]], None] | None \
            = None
        """Called once per search, before the ranking, with the question,
        its chains (``[h]``: the beam of ``h`` hops, best first; ``[0]``:
        the starts) and the pages by id: for diagnostics
        (``bench/chain_beams.py``), never set by pilar itself."""

    def _context(self, unit: Unit, name: str) -> frozenset[str]:
        """The words (stemmed) of :func:`mention_context` of ``name`` in ``unit``
        (kept between searches, as the units are)."""
        return self._contexts.through((unit.support_id, name),
                                      lambda: frozenset(tokens(mention_context(unit, name))))

    def _units_on(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """:meth:`GraphStore.units_on_pages` through an LRU of
        :data:`UNIT_PAGES` pages (units never change for a page id: ids
        are content-addressed)."""
        with self._lock:
            out = {pid: us for pid in page_ids if (us := self._units.get(pid)) is not None}
        missing = [pid for pid in page_ids if pid not in out]
        if missing:  # read outside the lock
            read = self.graph.units_on_pages(missing)
            out.update(read)
            with self._lock:
                self._units.update(read)
        return out

    def expand(self, question: str, query: np.ndarray, by_id: dict[str, RankedPage],
               named: list[tuple[str, str]], naming: dict[str, float],
               scope: Scope | None = None, keep: int | None = None) -> dict[str, Hop]:
        """Search chains from the question's pages in ``by_id`` (the shortlist
        after the question-entity expansion, scores final so far), adding
        reached pages to ``by_id`` and setting the scores of chained pages
        and their siblings in place (the Ranking of the module docstring).
        ``named``: ids of the entities the question names (never bridges);
        ``naming``: ``{page_id: specificity}`` of the pages that mention
        them (``1 / sqrt(pages)`` of the most specific one they mention): a
        chain starting there gains ``named_start`` times it. Returns
        ``{page_id: Hop}``: how each page a chain holds was reached in the
        best chain holding it (its bridging support is what packing should
        carry: found for the hops between two of the ``keep`` best pages
        only, all when None, as those are the pages a search returns)."""
        s = self.s
        if s.max_hops < 1 or not by_id:
            return {}
        qterms = tokens(question)
        names = [name for _, name in named]
        asks = set(qterms) - naming_words(question, names)
        specific = start_names(named)
        shortlist = [pid for pid, p in by_id.items() if not p.trace.get("expanded")]
        raw = [by_id[pid].trace.get("bm25_raw", 0.0) for pid in shortlist]
        lo, hi = (min(raw), max(raw)) if raw else (0.0, 0.0)
        self._score(question, query, naming, by_id, scope, (lo, hi))
        starts = best_per_document(by_id.values(), set(), s.bridge_frontier)
        starts += best_per_document((by_id[pid] for pid in naming if pid in by_id),
                             {p.doc_id for p in starts}, s.bridge_frontier,
                             key=lambda p: p.score + s.named_start * naming[p.page_id])
        kinds: dict[str, tuple[str, frozenset[str]]] = {}
        memo = _Memo()  # the question's end vector is embedded while the first hop reads
        with beside(end_relevance, self.index, self.hybrid.embedder, s, question, names,
                    by_id, shortlist, memo.end) as ending:
            with beside(Coverage, question, self.index.bm25_each, shortlist) as coverage:
                self._kinds([p.page_id for p in starts], by_id, kinds)
                superseded = self._superseded(question, by_id, kinds)
            memo.coverage = coverage.result()
            depths = [[Chain((p.page_id,), (),
                             p.score + s.named_start * naming.get(p.page_id, 0.0)
                             + s.chain_coverage * memo.coverage.of((p.page_id,)))
                       for p in starts]]
            blocked = frozenset(eid for eid, _ in named)
            every: dict[str, list[Hop]] = {}  # every hop to a page, for its bridging unit
            for hop in range(1, s.max_hops + 1):
                beam, into, on = depths[-1], {}, {}
                for c in beam:
                    into.setdefault(c.pages[-1], []).extend([c.hops[-1].name] if c.hops
                                                            else names)
                    if c.hops:
                        on.setdefault(c.pages[-1], set()).update(self._on_bridge(
                            c.pages[-1], [c.hops[-1].name], True) or ())
                anchors = self._anchors([by_id[pid] for pid in into], into, qterms, query,
                                        memo, on)
                if not anchors:
                    break
                bridges = self.graph.bridges(list(anchors), s.bridge_documents, s.bridge_pages)
                reached = self._reached(bridges, anchors, blocked, hop, asks, memo)
                for pid, found in reached.items():
                    every.setdefault(pid, []).extend(found)
                self._score(question, query, reached, by_id, scope, (lo, hi))
                found = [pid for pid in reached if pid in by_id]
                with beside(memo.coverage.read, found) as reading:
                    self._kinds(found, by_id, kinds)
                    ending.result()(found)
                reading.result()
                grown = self._grow(beam, specific, reached, by_id, kinds, superseded, memo)
                if not grown:
                    break
                depths.append(grown)
        if self.on_chains is not None:
            self.on_chains(question, depths, by_id)
        hops = self._rank(depths, by_id, kinds, superseded)
        if keep is not None:
            top = {p.page_id for p in best_first(by_id.values(), keep)}
            hops = {pid: h for pid, h in hops.items() if pid in top and h.source in top}
        return self._bridging_units(hops, every, by_id, qterms, query, memo)

    def _grow(self, beam: list["Chain"], names: list[str], reached: dict[str, list[Hop]],
              by_id: dict[str, RankedPage], kinds: dict[str, tuple[str, frozenset[str]]],
              superseded: set[str], memo: _Memo) -> list["Chain"]:
        """The ``bridge_beam`` best chains one hop longer than those of
        ``beam`` (step 3 of the module docstring): each chain grown by every
        page a bridge of its last page reaches (``reached``), in a document
        the chain does not hold, of no kind it holds and not
        ``superseded``, through a bridge it has not used; a bridge leaving
        from a unit off the chain's bridge (:meth:`_on_bridge`; ``names``:
        the question's, for a start) keeps ``off_bridge`` of its weight, one
        landing on a list of codes (:meth:`_listed`) ``listed_weight``.
        ``bridge_paths`` of them are the best by their score without their
        last page's (``memo.end``: :func:`~pilar.retrieval.chains.end_relevance`
        has filled it)."""
        s = self.s
        by_source: dict[str, dict[str, list[Hop]]] = {}  # source -> reached page -> hops
        for pid, found in reached.items():
            if pid in by_id:
                for h in found:
                    by_source.setdefault(h.source, {}).setdefault(pid, []).append(h)
        grown: dict[tuple[str, ...], Chain] = {}
        for c in beam:
            used = {h.bridge for h in c.hops}
            docs = {by_id[pid].doc_id for pid in c.pages}
            on = self._on_bridge(c.pages[-1], [c.hops[-1].name] if c.hops else names,
                                 bool(c.hops))
            held = memo.coverage.best(c.pages)
            covered = memo.coverage.of(c.pages, held)
            last = memo.end[c.pages[-1]] if c.hops else 0.0
            for pid, found in by_source.get(c.pages[-1], {}).items():
                found = [h for h in found if h.bridge not in used]
                if not found or by_id[pid].doc_id in docs or pid in superseded:
                    continue
                if any(siblings(kinds[pid], kinds[x]) for x in c.pages):
                    continue
                base = c.score - last + memo.end[pid] + s.chain_coverage * (
                    memo.coverage.of(c.pages, held, pid) - covered)
                key = c.pages + (pid,)
                for h in found:
                    weight = h.weight * (1.0 if on is None or h.source_support in on
                                         else s.off_bridge) * (
                        s.listed_weight if self._listed(pid, h.support, h.name) else 1.0)
                    score = base + s.bridge_cost * math.log(max(weight, 1e-6))
                    if key not in grown or score > grown[key].score:
                        if weight != h.weight:
                            h = Hop(h.bridge, h.name, h.support, h.source, h.source_support,
                                    h.hop, round(weight, 4), h.asked, h.dated, h.linked)
                        grown[key] = Chain(key, c.hops + (h,), round(score, 6))
        return keep_chains(list(grown.values()), memo.end, s.bridge_beam, s.bridge_paths)

    def _listed(self, page_id: str, support_id: str, name: str) -> bool:
        """:func:`~pilar.retrieval.chains.listed` of the unit ``support_id``
        of ``page_id`` (kept between searches, as the units are)."""
        return self._lists.through((page_id, support_id, name), lambda: any(
            listed(u, name) for u in self._units_on([page_id]).get(page_id, [])
            if u.support_id == support_id))

    def _superseded(self, question: str, by_id: dict[str, RankedPage],
                    kinds: dict[str, tuple[str, frozenset[str]]]) -> set[str]:
        """Pages of the ``2 * shortlist`` best whose sibling among them the
        question names by version and they not (:func:`~pilar.retrieval.naming.names_version`):
        no chain holds them and they keep ``sibling_weight`` of their score."""
        named = versions(question)
        near = sorted(by_id.values(), key=lambda p: -p.score)[: 2 * self.s.shortlist]
        if not named:
            return set()
        self._kinds([p.page_id for p in near], by_id, kinds)
        of_kind: dict[tuple[str, frozenset[str]], list[RankedPage]] = {}
        for p in near:
            of_kind.setdefault(kinds[p.page_id], []).append(p)
        # the sibling q a page is superseded by must carry a version the question names
        named_in = {q.page_id: bool(versions(q.title) & named) for q in near}
        return {p.page_id for a, these in of_kind.items() for b, those in of_kind.items()
                if siblings(a, b) for q in those if named_in[q.page_id] for p in these
                if q.title != p.title and names_version(named, q.title, p.title)}

    def _rank(self, depths: list[list["Chain"]], by_id: dict[str, RankedPage],
              kinds: dict[str, tuple[str, frozenset[str]]], superseded: set[str]
              ) -> dict[str, Hop]:
        """Raise each page by its chain mass over the hops' beams
        (``depths[h]``: the chains of ``h`` hops, best first; the Ranking of
        the module docstring), scaled by how likely a chain leaves its start
        at all (:func:`~pilar.retrieval.chains.leaving`), lower the pages of
        the kind of the first hop's best chain that no chain holds, the
        ``superseded`` versions (even those a chain starts from) and the
        second pages of a series, and write each chained page's path in its
        best chain in its trace. The
        *lead* chain (the first hop's best, grown while the next hop's best
        grows it, as far as its pages hold the first places but one) takes
        the places its pages earned, in reasoning order. Returns ``{page_id:
        Hop}``: how each page was reached in its best chain."""
        s = self.s
        mass: dict[str, float] = {}
        held: dict[str, tuple[Chain, int]] = {}
        leave = leaving(depths[0], depths[1], s.chain_temperature) if len(depths) > 1 else 1.0
        for beam in depths[1:]:
            weights = chain_weights(beam, s.chain_temperature)
            total = sum(weights)
            for c, w in zip(beam, weights):
                for i, pid in enumerate(c.pages):
                    mass[pid] = mass.get(pid, 0.0) + leave * w / total
                    if i and (pid not in held or held[pid][0].score < c.score):
                        held[pid] = (c, i)
        hops: dict[str, Hop] = {}
        for pid, m in mass.items():
            page = by_id[pid]
            page.trace["chain"] = round(s.chain_bonus * m, 6)
            page.trace["leaving"] = round(leave, 4)
            page.score = round(page.score + s.chain_bonus * m, 6)
        for pid, (c, i) in held.items():
            page = by_id[pid]
            hops[pid] = c.hops[i - 1]
            page.trace["hop"] = i
            page.trace["bridge_path"] = chain_path(c, i, by_id)
        lead: tuple[str, ...] = depths[1][0].pages if len(depths) > 1 else ()
        for beam in depths[2:]:
            if beam[0].pages[: len(lead)] != lead:
                break
            lead = beam[0].pages
        first = {p.page_id for p in best_first(by_id.values(), len(lead) + 1)}
        while lead and any(pid not in first for pid in lead):
            lead = lead[:-1]  # only a chain that holds the first places is put in order
        slots = sorted((by_id[pid].score for pid in lead), reverse=True)
        for pid, value in zip(lead, slots):  # the lead chain's places, in reasoning order
            by_id[pid].score = value
        held_pages = set(depths[1][0].pages) if len(depths) > 1 else set()
        near = sorted(by_id.values(), key=lambda p: -p.score)[: 2 * s.shortlist]
        self._kinds([p.page_id for p in near if p.page_id not in kinds], by_id, kinds)
        for pid, page in by_id.items():
            if pid not in kinds or (pid in mass and pid not in superseded):
                continue
            if pid in superseded or any(c in kinds and siblings(kinds[pid], kinds[c])
                                        for c in held_pages):
                lower(page, "sibling_of_chain", s.sibling_weight)
        places = best_first(by_id.values(), SERIES_PLACES)
        for page in second_of_series(places, {*lead, *(pid for pid in by_id if pid not in mass)}):
            lower(page, "second_of_series", s.series_weight)
        return hops

    def _kinds(self, page_ids: Iterable[str], by_id: dict[str, RankedPage],
               known: dict[str, tuple[str, frozenset[str]]]) -> None:
        """Add ``(title_key, template)`` of each page not in ``known`` (one
        read for the sections of those this expander has not seen lately)."""
        wanted = [pid for pid in dict.fromkeys(page_ids) if pid not in known]
        with self._lock:
            seen = {pid: k for pid in wanted if (k := self._kind_cache.get(pid)) is not None}
        missing = [pid for pid in wanted if pid not in seen]
        read = {pid: (title_key(by_id[pid].title), template(paths))
                for pid, paths in (self.graph.page_sections(missing) if missing else {}).items()}
        known.update(seen)
        known.update(read)
        with self._lock:
            self._kind_cache.update(read)

    def _anchors(self, frontier: list[RankedPage], into: dict[str, list[str]],
                 qterms: tuple[str, ...], query: np.ndarray, memo: _Memo,
                 on: dict[str, set[str]]) -> dict[str, tuple[float, str, Unit]]:
        """``{support_id: (relevance 0-1, page_id, unit)}``: the units of each
        frontier page a hop starts from (step 1 of the module docstring):
        the ``bridge_units`` most relevant of those that :func:`may_lead`
        and are not template text (of the ``2 * bridge_units`` most relevant:
        :meth:`GraphStore.template_supports`, ``template_documents``; a
        footer names the same thing on every page of its kind), as many of
        those naming an
        entity of ``into[page_id]`` (the bridges that brought the page, the
        question's names for a start), whatever their relevance, and every
        unit of ``on[page_id]`` (the units on the bridge of a page a bridge
        reached: :meth:`_on_bridge`). A unit
        names an entity when its text holds the entity's name as words, or a
        code of the same key (every row of ``VC-24-1183``, not only the
        first)."""
        units = self._units_on([p.page_id for p in frontier])
        relevance = self._relevance(units, qterms, query, memo)
        facts = self._page_facts(units)
        out: dict[str, tuple[float, str, Unit]] = {}
        n = self.s.bridge_units
        picks: list[tuple[str, list, list]] = []
        for page in frontier:
            us: list[Unit] = units.get(page.page_id, [])
            names = tuple(into.get(page.page_id, ()))
            match = names_matcher(names)
            naming = self._naming.through((page.page_id, names), lambda: frozenset(
                u.support_id for u in us if match(u.text)))
            scored, bridging = [], []
            held = on.get(page.page_id, set())
            for u, rel, leads in zip(us, relevance[page.page_id], facts[page.page_id][3]):
                if u.support_id in naming:
                    rel = (rel + 0.5) / 1.5
                    bridging.append((rel, u.support_id, u))
                elif u.support_id in held:
                    out[u.support_id] = (rel, page.page_id, u)
                if leads:
                    scored.append((rel, u.support_id, u))
            for rows in (scored, bridging):
                rows.sort(key=lambda t: (-t[0], t[1]))
            picks.append((page.page_id, scored[: 2 * n], bridging[:n]))
        unread = [sid for _, scored, _ in picks for _, sid, _ in scored if sid not in memo.template]
        if unread:
            found = self.graph.template_supports(unread, self.s.template_documents,
                                                 self.s.bridge_documents)
            memo.template.update((sid, sid in found) for sid in unread)
        for pid, scored, bridging in picks:
            for rel, sid, u in [*[r for r in scored if not memo.template[r[1]]][:n], *bridging]:
                out[sid] = (rel, pid, u)
        return out

    def _relevance(self, units: dict[str, list[Unit]], qterms: tuple[str, ...],
                   query: np.ndarray, memo: _Memo) -> dict[str, list[float]]:
        """``{page_id: [relevance 0-1 of each unit]}``: 0.5 BM25 of the
        question over the page's units (min-max normalised within the page)
        + 0.5 cosine of the unit's run vector (:func:`group_leaders`), for
        the pages ``memo`` does not hold yet (their facts: :meth:`_page_facts`)."""
        new = {pid: us for pid, us in units.items() if pid not in memo.relevance}
        cosines: dict[str, float] = {}  # once a run
        for pid, (postings, leaders, vectors, _) in self._page_facts(new).items():
            cosines.update((uid, float(vec @ query)) for uid, vec in vectors.items()
                           if uid not in cosines)
            lexical = bm25_of_postings(qterms, [postings])[0]  # min-max within the page:
            lo, hi = (lexical.min(), lexical.max()) if len(lexical) else (0.0, 0.0)
            if hi - lo >= 1e-12:
                lexical = (lexical - lo) / (hi - lo)
            else:  # all alike: 1.0 where they match, 0.0 where none does
                lexical = np.full(len(lexical), 1.0 if hi > 0 else 0.0)
            dense = np.array([max(cosines.get(uid, 0.0), 0.0) for uid in leaders])
            memo.relevance[pid] = (0.5 * lexical + 0.5 * dense).tolist()
        return {pid: memo.relevance[pid] for pid in units}

    def _page_facts(self, units: dict[str, list[Unit]]
                    ) -> dict[str, tuple[Postings, list[str], dict[str, np.ndarray], list[bool]]]:
        """``{page_id: (postings of its units' term counts, the id of its run's first
        unit, {that id: its vector}, whether it :func:`may_lead`)}`` of the
        pages of ``units`` (kept like the units; one vector read for the
        pages not kept)."""
        with self._lock:
            out = {pid: self._facts[pid] for pid in units if pid in self._facts}
        new = {pid: group_leaders(us) for pid, us in units.items() if pid not in out}
        vectors = self.index.unit_vectors(sorted({x for ls in new.values() for x in ls.values()}))
        for pid, leader in new.items():
            of = [leader[u.unit_id] for u in units[pid]]
            out[pid] = (Postings([unit_term_counts(u) for u in units[pid]]), of,
                        {x: vectors[x] for x in of if x in vectors},
                        [may_lead(u) for u in units[pid]])
        with self._lock:
            self._facts.update((pid, out[pid]) for pid in new)
        return {pid: out[pid] for pid in units}

    def _bridging_units(self, hops: dict[str, Hop], every: dict[str, list[Hop]],
                        by_id: dict[str, RankedPage], qterms: tuple[str, ...],
                        query: np.ndarray, memo: _Memo) -> dict[str, Hop]:
        """``hops`` with their bridging and linked units
        (:func:`~pilar.retrieval.chains.carried_units`, ``every``: all hops of
        the search by page reached), from the pages' units and their relevance
        to the question."""
        units = self._units_on(list(dict.fromkeys([*hops, *(h.source for h in hops.values())])))
        relevance = self._relevance({pid: units[pid] for pid in hops}, qterms, query, memo)
        return carried_units(hops, every, {pid: by_id[pid].score for pid in units}, units,
                             {pid: dict(zip((u.support_id for u in units[pid]), rel))
                              for pid, rel in relevance.items()}, self.s.bridge_cost)

    def _on_bridge(self, page_id: str, names: list[str], entered: bool
                   ) -> frozenset[str] | None:
        """The supports of ``page_id`` a chain that came to it through
        ``names`` may leave from at full weight (the others keep
        ``off_bridge``), or None for all: on a page a bridge reached (``entered``),
        the units naming it and the rows of its record: the two-column
        tables of fields and values of the page when one of their rows or
        the page's lead (a paragraph before its first table) names it (a
        datasheet's "Manufacturer" row is about the model its "Model code"
        row gives; a ship's particulars spread over "Identification" and
        "Dimensions" tables are one record);
        on a start, the rows naming the question's entity when all of them
        are rows of a register (tables of more than two columns: the other
        rows are other things), else all (:func:`~pilar.retrieval.chains.record_units`,
        kept between searches)."""
        return self._records.through((page_id, tuple(names), entered), lambda: record_units(
            self._units_on([page_id]).get(page_id, []), names, entered))

    def _reached(self, bridges: list[Bridge],
                 anchors: dict[str, tuple[float, str, Unit]],
                 blocked: frozenset[str], hop: int, asks: set[str],
                 memo: _Memo) -> dict[str, list[Hop]]:
        """``{page_id: [Hop, ...]}``: the bridges (step 2 of the module
        docstring) from each anchor's page to each page they reach, but for
        those of ``blocked`` entities (the question's); ``asks``: the
        question's words (stemmed) outside the names it gives."""
        s = self.s
        out: dict[str, list[Hop]] = {}
        for b in bridges:
            if b.entity_id in blocked or b.documents > s.bridge_documents or not b.pages \
                    or not bridge_name(b.entity_id, b.name):
                continue
            spec = 1.0 / math.sqrt(max(b.documents - 1, 1))
            leaving = []  # every anchor naming it: which is on a chain's bridge is the chain's say
            for sid in b.supports:
                if sid in anchors:
                    _, source, unit = anchors[sid]
                    if (sid, b.entity_id) not in memo.asked:
                        memo.asked[sid, b.entity_id] = not asks.isdisjoint(
                            self._context(unit, b.name))
                    asked = memo.asked[sid, b.entity_id]
                    leaving.append((source, sid, round(spec * (1.0 if asked else s.unasked), 4),
                                    asked))
            for pid, support, _ in b.pages:  # a hop back to its own page leads nowhere
                out.setdefault(pid, []).extend(
                    Hop(b.entity_id, b.name, support, source, sid, hop, weight, asked)
                    for source, sid, weight, asked in leaving if source != pid)
        return out

    def _score(self, question: str, query: np.ndarray, reached: dict, by_id: dict,
               scope: Scope | None, bm25_range: tuple[float, float]) -> None:
        """Add the reached pages not in ``by_id`` with their hybrid score:
        dense cosine and BM25 normalised over the shortlist's raw range;
        pages of documents not ready, or outside ``scope``, are left out."""
        new = [pid for pid in reached if pid not in by_id]
        if not new:
            return
        with beside(self.hybrid.visible, new, scope) as visible, \
                beside(self.index.bm25_for, question, new) as lexical:
            dense = self.index.dense_for(query, new)
        docs, raw = visible.result(), lexical.result()
        new = [pid for pid in new if pid.rpartition(":")[0] in docs]
        lo, hi = bm25_range
        s = self.s
        for pid in new:
            doc_id, _, number = pid.rpartition(":")
            norm = scaled(raw.get(pid, 0.0), lo, hi)
            base = round(s.bm25_weight * norm + s.dense_weight * dense[pid], 6)
            doc = docs[doc_id]
            by_id[pid] = RankedPage(pid, doc_id, int(number), base, doc.uri, doc.title,
                                    round(norm, 6), round(dense[pid], 6),
                                    {"bm25_raw": round(raw.get(pid, 0.0), 4), "base": base,
                                     "seed": False, "expanded": True})
