"""Iterative bridge expansion: the documents of a multi-hop chain reached
through the entities their units name (PILAR §3.4, multi-hop profile; node
specificity and score propagation after HippoRAG's personalised PageRank).

A question names the first document of a chain (an incident report by its
number); the next document is reached through an entity the question never
names but the first document's relevant unit does (the crane ``QC-09`` in
the incident's account, then the crane's model code ``VSC-65`` in the
equipment register's ``QC-09`` row, then the datasheet carrying that code).

The hops start from the *frontier*: the ``bridge_frontier`` best pages by
score and as many of the best pages naming the question's codes or proper
names (one page per document each). Each hop:

1. ranks each frontier page's evidence units by their relevance to the
   question (0.5 BM25 over the page's units, min-max normalised, + 0.5
   cosine of the unit's run vector), raised a third of the way to 1 for a
   unit naming the entity that brought the page (its bridging unit) or an
   entity the question names; the best ``bridge_units`` are the anchors;
2. reads the entities the anchors mention and where they lead
   (:meth:`GraphStore.bridges`, one read per hop). A *bridge* is a code
   (:mod:`pilar.ingest.codes`) or a proper name of two or more words
   (:func:`~pilar.ingest.names.proper_name`: "Length overall" on the
   particulars of every ship is a field, not a thing) that the question
   does not name, no earlier hop used, and at most ``bridge_documents``
   documents mention (more: a hub, it leads nowhere). Its weight is its
   specificity ``1 / sqrt(documents - 1)`` (an entity two documents share
   links them more surely than one ten share) times ``0.5 + 0.5 x`` the
   anchor's relevance, times ``unasked`` unless the question *asks* for it:
   a word of the question in the bridge's context, the column it sits in
   or the words just before it ("the *vessel* being worked" meets
   ``vessel call VC-24-1183``; "the *operator*" meets the ``Operator``
   column);
3. keeps, for each page a bridge reaches, the best chain to it (the
   chain's start score plus ``bridge_bonus`` times the sum of its bridges'
   log weights), never two pages of one kind in one chain (:func:`siblings`:
   from an incident report to another one, from a tariff to its superseded
   version) and never a cycle; a reached page outside the shortlist is
   scored like one (dense cosine, BM25 normalised over the shortlist's
   range);
4. the new pages with the strongest links are the next frontier; the hops
   stop after ``max_hops`` or when a hop adds no page.

Ranking: scores flow along the links, both ways, three rounds: a page gains
``bridge_bonus`` times the sum of (link weight x linked page's score), so
the middle of a chain, which shares no word with the question, rises with
the pages it joins. Then a page of the same kind as a chained page (the
sister ship, the other week's schedule, the other incidents) that no chain
holds keeps ``sibling_weight`` of its score: the chain has picked which of
them the question means. Every chained page's trace names its path, hop by
hop: ``question -> ont_incident_ir_24_117 -> QC-09 (unit of
ont_incident_ir_24_117) -> ont_equipment_register``, and the pages of a
hop the question asks for carry its units in ``bridging``
(:func:`mark_bridging`), which packing puts first.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz

from pilar.config import Settings
from pilar.graph import GraphStore
from pilar.ingest.codes import codes, is_code
from pilar.ingest.names import normalise, proper_name
from pilar.model import Bridge, RankedPage, Scope, Unit
from pilar.retrieval import PageIndex
from pilar.retrieval.embeddings import group_leaders
from pilar.retrieval.hybrid import HybridRetriever, beside, min_max
from pilar.retrieval.terms import bm25_scores, tokens

__all__ = ["BridgeExpander", "Hop", "bridge_name", "mark_bridging", "names_matcher", "siblings",
           "template"]


@lru_cache(maxsize=4096)
def _name_pattern(name: str) -> re.Pattern | None:
    """A regex finding ``name`` as written or with other separators between
    its letter and digit groups (``VSC-65``, ``VSC 65``, ``vsc65``;
    ``Corvassa  Ardent``), case-insensitive, not inside a longer word."""
    parts = re.findall(r"[^\W\d_]+|\d+", name)
    if not parts:
        return None
    return re.compile(r"(?<![^\W_])" + r"[\W_]*".join(map(re.escape, parts)) + r"(?![^\W_])",
                      re.IGNORECASE)


def names_matcher(names: Iterable[str]):
    """``text -> bool``: does ``text`` name one of ``names`` (see
    :func:`_name_pattern`: a code by its key, :func:`~pilar.ingest.codes.code_key`,
    a name by its words)?"""
    patterns = [p for p in map(_name_pattern, names) if p is not None]
    return lambda text: any(p.search(text) for p in patterns)


def template(section_paths: Iterable[tuple[str, ...]]) -> frozenset[str]:
    """The section headings of a page (the last name of each section path)
    with codes and digits taken out: what documents of one kind share (every
    incident report has "Findings", "Root cause", "Timeline")."""
    out = set()
    for path in section_paths:
        if path:
            name = path[-1]
            for surface, _ in codes(name):
                name = name.replace(surface, " ")
            key = normalise("".join(c for c in name if not c.isdigit()))
            if key:
                out.add(key)
    return frozenset(out)


def mention_context(unit: Unit, name: str) -> str:
    """The words that say what ``name`` is where ``unit`` mentions it: in a
    table row each cell holding it with its header (and the row's label,
    the first cell, in a two-column table of labels and values), in running
    text the five words before it and two after."""
    match = names_matcher([name])
    if unit.cells:
        out = []
        for i, cell in enumerate(unit.cells):
            if match(cell):
                out += [unit.headers[i] if i < len(unit.headers) else "", cell]
                if len(unit.cells) == 2 and i == 1:
                    out.append(unit.cells[0])
        return " ".join(out)
    pattern = _name_pattern(name)
    found = pattern.search(unit.text) if pattern is not None else None
    if found is None:
        return ""
    before = unit.text[:found.start()].split()[-5:]
    after = unit.text[found.end():].split()[:2]
    return " ".join(before + after)


def mark_bridging(ranked: list[RankedPage], hops: dict[str, "Hop"]) -> None:
    """Set ``bridging`` of the pages of ``ranked`` joined by a hop the
    question asks for (:attr:`Hop.asked`) whose two ends are both in
    ``ranked``: on the source page the unit that named the bridge, on the
    reached page the unit that names it (in place)."""
    where = {p.page_id: p for p in ranked}
    marks: dict[str, dict[str, None]] = {}
    for pid, h in hops.items():
        if pid in where and h.source in where and h.asked:
            marks.setdefault(h.source, {})[h.source_support] = None
            marks.setdefault(pid, {})[h.support] = None
    for pid, sids in marks.items():
        where[pid].bridging = tuple(sids)


def title_key(title: str) -> str:
    """A document title with its codes and digits taken out, normalised:
    what versions and sibling models share ("ONT terminal handling charges",
    "Crane – Maintenance log", "Vostrand Megalift ship-to-shore crane –
    Datasheet")."""
    for surface, _ in codes(title):
        title = title.replace(surface, " ")
    return normalise("".join(c for c in title if not c.isdigit()))


def siblings(a: tuple[str, frozenset[str]], b: tuple[str, frozenset[str]]) -> bool:
    """Are two pages, as ``(title_key, template)``, of one kind: titles alike
    once codes and digits are out (rapidfuzz ratio >= 85), or at least three
    section headings shared and half of all (Jaccard >= 0.5)? Two incident
    reports, two versions of a tariff, the particulars of sister ships: a
    chain never holds two siblings (the second would be the distractor
    beside the page it holds)."""
    if a[0] and b[0] and fuzz.ratio(a[0], b[0]) >= 85:
        return True
    shared = len(a[1] & b[1])
    return shared >= 3 and shared >= 0.5 * len(a[1] | b[1])


def bridge_name(entity_id: str, name: str) -> bool:
    """Can an entity be a bridge: a code, or a proper name of two or more words?"""
    return is_code(entity_id) or proper_name(name)


@dataclass(slots=True)
class Hop:
    """How a page joined a chain: the ``bridge`` entity (id and name), the
    ``support`` on the page that names it (its bridging unit), the page the
    hop started from (``source``) and the anchor there (``source_support``),
    the hop number, the bridge's weight, whether the question asks for it
    (``asked``: a word of the question in the bridge's context, the column
    it sits in or the words before it), ``prefix`` (the sum of the log
    weights of the chain's bridges up to the page) and ``key`` (the chain's
    start score plus ``bridge_bonus`` times ``prefix``: of the chains
    reaching a page, the best is kept)."""

    bridge: str
    name: str
    support: str
    source: str
    source_support: str
    hop: int
    weight: float
    asked: bool = False
    prefix: float = 0.0
    key: float = 0.0


UNIT_PAGES = 512
"""Pages whose units a :class:`BridgeExpander` keeps between searches."""


def _label(page: RankedPage) -> str:
    return (Path(page.source).stem if page.source else "") or page.doc_id


class BridgeExpander:
    """See the module docstring; ``settings`` should carry the profile."""

    def __init__(self, graph: GraphStore, index: PageIndex, hybrid: HybridRetriever,
                 settings: Settings):
        self.graph = graph
        self.index = index
        self.hybrid = hybrid
        self.s = settings
        self._units: OrderedDict[str, list[Unit]] = OrderedDict()
        self._lock = threading.Lock()
        self._kind_cache: OrderedDict[str, tuple[str, frozenset[str]]] = OrderedDict()

    def _units_on(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """:meth:`GraphStore.units_on_pages` through an LRU of
        :data:`UNIT_PAGES` pages (units never change for a page id: ids
        are content-addressed)."""
        cache = self._units
        with self._lock:
            out = {pid: cache[pid] for pid in page_ids if pid in cache}
        missing = [pid for pid in page_ids if pid not in out]
        if missing:  # read outside the lock
            out.update(self.graph.units_on_pages(missing))
        with self._lock:
            for pid in page_ids:
                if pid in out:
                    cache[pid] = out[pid]
                    cache.move_to_end(pid)
            while len(cache) > UNIT_PAGES:
                cache.popitem(last=False)
        return out

    def expand(self, question: str, query: np.ndarray, by_id: dict[str, RankedPage],
               named: list[tuple[str, str]], naming: dict[str, set[str]],
               scope: Scope | None = None) -> dict[str, Hop]:
        """Run the hops from the question's pages in ``by_id`` (the shortlist
        after the question-entity expansion, scores final so far), adding
        reached pages to ``by_id`` and raising the scores of chained pages in
        place (the Ranking of the module docstring). ``named``: ids of the
        entities the question names (never bridges); ``naming``: ``{page_id:
        support ids}`` of the supports that mention them. Returns ``{page_id:
        Hop}`` for every page a chain holds (the bridging support of each is
        what packing should carry)."""
        s = self.s
        if s.max_hops < 1 or not by_id:
            return {}
        qterms = tokens(question)
        blocked = {eid for eid, _ in named}
        names = [name for _, name in named]
        asks = set(qterms) - {t for n in names for t in tokens(n)}
        hops: dict[str, Hop] = {}
        raw = [p.trace.get("bm25_raw", 0.0) for p in by_id.values() if not p.trace.get("expanded")]
        lo, hi = (min(raw), max(raw)) if raw else (0.0, 0.0)
        self._score(question, query, naming, by_id, scope, (lo, hi))
        starts = self._best(by_id.values(), set(), s.bridge_frontier)
        starts += self._best((by_id[pid] for pid in naming if pid in by_id),
                             {p.doc_id for p in starts}, s.bridge_frontier)
        kinds: dict[str, tuple[str, frozenset[str]]] = {}
        self._kinds([p.page_id for p in starts], by_id, kinds)
        root = {p.page_id: p.page_id for p in starts}
        links = {p.page_id: 0.0 for p in starts}  # sum of the links' log weights so far
        frontier = starts
        chained: set[str] = set()  # documents a hop reached (a start may still be reached)
        for hop in range(1, s.max_hops + 1):
            anchors = self._anchors(frontier, hops, names, qterms, query)
            if not anchors:
                break
            bridges = self.graph.bridges(list(anchors), s.bridge_documents, s.bridge_pages)
            reached = self._reached(bridges, anchors, blocked, chained, hop, asks)
            self._score(question, query, reached, by_id, scope, (lo, hi))
            self._kinds([pid for pid in reached if pid in by_id], by_id, kinds)
            options = []
            for pid, found in reached.items():
                if pid not in by_id:
                    continue
                for h in found:
                    h.prefix = links[h.source] + math.log(max(h.weight, 1e-6))
                    h.key = by_id[root[h.source]].score + s.bridge_bonus * h.prefix
                    options.append((pid, h))
            new: dict[str, Hop] = {}
            for pid, h in sorted(options, key=lambda t: (-t[1].key, t[0], t[1].source)):
                if pid in new:
                    continue
                path = self._chain(h.source, {**hops, **new})
                if pid in path or any(siblings(kinds[pid], kinds[x]) for x in path):
                    continue  # no cycle, no two siblings in one chain
                new[pid] = h
            if not new:
                break
            hops.update(new)
            for pid in [*root, *new]:  # a start a hop reached moves under that hop's chain
                path = self._chain(pid, hops)
                root[pid] = path[-1]
                links[pid] = sum(math.log(max(hops[x].weight, 1e-6)) for x in path[:-1])
            frontier = self._best((by_id[pid] for pid in new), chained, s.bridge_frontier,
                                  key=lambda p: links[p.page_id] + 0.5 * p.score)
            chained |= {by_id[pid].doc_id for pid in new}
            blocked |= {h.bridge for h in new.values()}
        self._rank(hops, starts, by_id, kinds)
        return hops

    def _rank(self, hops: dict[str, Hop], starts: list[RankedPage],
              by_id: dict[str, RankedPage], kinds: dict[str, tuple[str, frozenset[str]]]
              ) -> None:
        """Raise the pages that chains join and lower the siblings they
        leave (the Ranking of the module docstring); write each chained
        page's path in its trace."""
        s = self.s
        linked: dict[str, list[tuple[str, float]]] = {}
        for pid, h in hops.items():
            linked.setdefault(pid, []).append((h.source, h.weight))
            linked.setdefault(h.source, []).append((pid, h.weight))
        own = {pid: by_id[pid].score for pid in linked}
        score = dict(own)
        for _ in range(3):
            score = {pid: own[pid] + s.bridge_bonus * sum(w * score[q] for q, w in linked[pid])
                     for pid in linked}
        for pid, value in score.items():
            page = by_id[pid]
            page.trace["chain"] = round(value - page.score, 6)
            page.score = round(value, 6)
        chained = set(hops) | {p.page_id for p in starts[:1]}
        near = sorted(by_id.values(), key=lambda p: -p.score)[: 2 * s.shortlist]
        self._kinds([p.page_id for p in near if p.page_id not in kinds], by_id, kinds)
        for pid, page in by_id.items():
            if pid not in chained and pid in kinds and any(
                    siblings(kinds[pid], kinds[c]) for c in chained if c in kinds):
                page.trace["sibling_of_chain"] = round(page.score * (1 - s.sibling_weight), 6)
                page.score = round(page.score * s.sibling_weight, 6)
        for pid, h in hops.items():
            by_id[pid].trace["hop"] = h.hop
            by_id[pid].trace["bridge_path"] = self._path(pid, hops, by_id)

    def _kinds(self, page_ids: Iterable[str], by_id: dict[str, RankedPage],
               known: dict[str, tuple[str, frozenset[str]]]) -> None:
        """Add ``(title_key, template)`` of each page not in ``known`` (one
        read for the sections of those this expander has not seen lately)."""
        wanted = [pid for pid in dict.fromkeys(page_ids) if pid not in known]
        with self._lock:
            seen = {pid: self._kind_cache[pid] for pid in wanted if pid in self._kind_cache}
        missing = [pid for pid in wanted if pid not in seen]
        for pid, paths in (self.graph.page_sections(missing) if missing else {}).items():
            seen[pid] = (title_key(by_id[pid].title), template(paths))
        known.update(seen)
        with self._lock:
            self._kind_cache.update(seen)
            while len(self._kind_cache) > 8 * UNIT_PAGES:
                self._kind_cache.popitem(last=False)

    @staticmethod
    def _chain(pid: str, hops: dict[str, Hop]) -> list[str]:
        """The pages of the chain ending at ``pid``, from the end back to its start."""
        path = [pid]
        while path[-1] in hops:
            path.append(hops[path[-1]].source)
        return path

    @staticmethod
    def _best(pages: Iterable[RankedPage], skip: set[str], n: int,
              key=None) -> list[RankedPage]:
        """The ``n`` best pages by ``key`` (default: score), one per
        document, of documents not in ``skip``."""
        key = key or (lambda p: p.score)
        out, seen = [], set(skip)
        for p in sorted(pages, key=lambda p: (-key(p), p.page_id)):
            if p.doc_id not in seen:
                seen.add(p.doc_id)
                out.append(p)
                if len(out) == n:
                    break
        return out

    def _anchors(self, frontier: list[RankedPage], hops: dict[str, Hop],
                 names: list[str], qterms: tuple[str, ...],
                 query: np.ndarray) -> dict[str, tuple[float, str, Unit]]:
        """``{support_id: (relevance 0-1, page_id, unit)}``: the units of each
        frontier page a hop starts from (step 1 of the module docstring);
        a unit names an entity when its text holds the entity's name as
        words, or a code of the same key (every row of ``VC-24-1183``, not
        only the first)."""
        units = self._units_on([p.page_id for p in frontier])
        leaders = {}
        for us in units.values():
            leaders.update(group_leaders(us))
        vectors = self.index.unit_vectors(sorted(set(leaders.values())))
        out: dict[str, tuple[float, str, Unit]] = {}
        for page in frontier:
            us: list[Unit] = units.get(page.page_id, [])
            if not us:
                continue
            lexical = min_max(dict(enumerate(bm25_scores(qterms, [u.completed_text for u in us]))))
            into = hops.get(page.page_id)
            wanted = names_matcher([into.name] if into is not None else names)
            scored = []
            for i, u in enumerate(us):
                vec = vectors.get(leaders.get(u.unit_id, ""))
                dense = float(vec @ query) if vec is not None else 0.0
                rel = 0.5 * lexical.get(i, 0.0) + 0.5 * max(dense, 0.0)
                if wanted(u.text):
                    rel = (rel + 0.5) / 1.5
                scored.append((rel, u.support_id, u))
            scored.sort(key=lambda t: (-t[0], t[1]))
            for rel, sid, u in scored[: self.s.bridge_units]:
                out[sid] = (rel, page.page_id, u)
        return out

    def _reached(self, bridges: list[Bridge], anchors: dict[str, tuple[float, str, Unit]],
                 blocked: set[str], chained: set[str], hop: int,
                 asks: set[str]) -> dict[str, list[Hop]]:
        """``{page_id: [Hop, ...]}``: the bridges (step 2 of the module
        docstring) to each page of a document outside ``chained``; ``asks``:
        the question's words (stemmed) outside the names it gives."""
        s = self.s
        out: dict[str, list[Hop]] = {}
        for b in bridges:
            if b.entity_id in blocked or b.documents > s.bridge_documents or not b.pages \
                    or not bridge_name(b.entity_id, b.name):
                continue
            spec = 1.0 / math.sqrt(max(b.documents - 1, 1))
            by_source: dict[str, tuple[float, str, bool]] = {}
            for sid in b.supports:
                if sid in anchors:
                    rel, source, unit = anchors[sid]
                    asked = bool(asks & set(tokens(mention_context(unit, b.name))))
                    weight = spec * (0.5 + 0.5 * rel) * (1.0 if asked else s.unasked)
                    if weight > by_source.get(source, (-1.0, "", False))[0]:
                        by_source[source] = (weight, sid, asked)
            for pid, support, _ in b.pages:
                if pid.rpartition(":")[0] in chained:
                    continue
                for source, (weight, sid, asked) in by_source.items():
                    out.setdefault(pid, []).append(
                        Hop(b.entity_id, b.name, support, source, sid, hop, round(weight, 4),
                            asked))
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
            norm = min(max((raw.get(pid, 0.0) - lo) / (hi - lo), 0.0), 1.0) if hi > lo else 0.0
            base = round(s.bm25_weight * norm + s.dense_weight * dense[pid], 6)
            doc = docs[doc_id]
            by_id[pid] = RankedPage(pid, doc_id, int(number), base, doc.uri, doc.title,
                                    round(norm, 6), round(dense[pid], 6),
                                    {"bm25_raw": round(raw.get(pid, 0.0), 4), "base": base,
                                     "seed": False, "expanded": True})

    @staticmethod
    def _path(pid: str, hops: dict[str, Hop], by_id: dict[str, RankedPage]) -> list[str]:
        """``["question", "QC-09 (unit of X)", "Y", ...]``: the hops that led to ``pid``."""
        steps = []
        while pid in hops:
            h = hops[pid]
            steps += [_label(by_id[pid]), f"{h.name} (unit of {_label(by_id[h.source])})"]
            pid = h.source
        steps += [_label(by_id[pid]), "question"]
        return steps[::-1]
