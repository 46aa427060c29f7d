"""Unit selection (Tessera §3.4): units of the anchor pages, a lexical
prefilter to ``prefilter`` candidates (BM25 over completed text, from the
term counts stored at ingest, :mod:`pilar.packing.statistics`), then a
reranker on completed text: a sentence-transformers CrossEncoder when one is
configured (``PILAR_RERANKER_MODEL``), else the embedder's cosine (unit
vectors computed at ingest: a unit's own, or that of the run of units of
its context it was embedded with, :func:`pilar.retrieval.unit_runs.unit_groups`)
mixed with the prefilter's BM25 as in PILAR's hybrid page score (0.4 BM25
min-max + 0.6 dense). A table row whose key cell (its table's key column,
found by the rule table assertions use for their subjects,
:func:`pilar.ingest.assertions.key_of_columns`, read from the row units)
holds a rare question word is named by the question: it joins the prefilter and
gains up to :data:`KEY_WEIGHT` (the row's entity is what is asked about,
PILAR §3.2; "how many feet above sea level is K2?" names the K2 row, not the
rows whose *parent* is K2)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np
from cachetools import LRUCache

from pilar.ingest.assertions import key_of_columns
from pilar.model import Unit
from pilar.packing.cues import MAX_CUE_UNITS, cue_units, neighbour_units
from pilar.packing.statistics import PageFacts, TableKey, table_key
from pilar.retrieval.unit_runs import UNIT_TOKENS
from pilar.retrieval.terms import bm25_of_postings, bm25_scores, tokens

__all__ = ["ScoredUnit", "UnitSelector", "bm25_scores", "tokens"]

KEY_WEIGHT = 0.1
"""Score a row gains when its key cell holds the question's rarest word
(less for a commoner one: the word's IDF over the anchor units, divided by
the largest IDF of a question word)."""
KEY_ROWS = 20
"""Rows named by their key cell that join the lexical prefilter (best first)."""
KEY_TABLES = 4096
"""Tables whose key column a selector remembers (tables are content-addressed)."""
FACT_PAGES = 1024
"""Pages whose :class:`PageFacts` a selector remembers."""
UNIT_VECTORS = 16_384
"""Unit vectors a selector keeps (about 1.5 KiB each at 384 dimensions)."""

CUE_TOKENS = 256
"""Packet tokens per cue row: a 1,024-token packet takes the best page's 4,
a larger one rows of other pages too (each cue row displaces a unit)."""


@dataclass(slots=True)
class ScoredUnit:
    """A unit with its lexical and reranker scores (higher is better);
    ``bridging``: put first because a multi-hop chain runs through it, not
    for its own score."""

    unit: Unit
    lexical: float
    score: float
    page_rank: int  # rank of its anchor page (0 = best)
    bridging: bool = False


def _table_of(u: Unit) -> TableKey | None:
    """The table of a body row with at least two cells
    (:func:`~pilar.packing.statistics.table_key`); None for any other unit."""
    return table_key(u) if len(u.cells) > 1 else None


def _on_top(first: list[ScoredUnit], scored: list[ScoredUnit], limit: int
            ) -> list[ScoredUnit]:
    """``first`` (in their order, scored just above the best of ``scored``)
    then the units of ``scored`` not among them; at most ``limit``."""
    top = scored[0].score if scored else 0.0
    taken = {su.unit.unit_id for su in first}
    lifted = [replace(su, score=top + 1e-3 * (len(first) - i)) for i, su in enumerate(first)]
    return (lifted + [s for s in scored if s.unit.unit_id not in taken])[:limit]


def _by_page_in_turn(scored: list[ScoredUnit]) -> list[ScoredUnit]:
    """``scored`` reordered page by page in turn (each anchor page's best
    unit in page order, then each one's second...), scores rewritten to
    keep that order: a chain's evidence is spread over its documents, and
    the question's own page would otherwise fill the block."""
    by_page: dict[int, list[ScoredUnit]] = {}
    for su in scored:
        by_page.setdefault(su.page_rank, []).append(su)
    order = []
    for depth in range(max((len(v) for v in by_page.values()), default=0)):
        order += [v[depth] for _, v in sorted(by_page.items()) if depth < len(v)]
    top = scored[0].score if scored else 0.0
    return [ScoredUnit(su.unit, su.lexical, top - 1e-4 * i, su.page_rank)
            for i, su in enumerate(order)]


class UnitSelector:
    """Prefilter + rerank; ``cross_encoder`` is a loaded CrossEncoder or None,
    ``embedder`` an :class:`~pilar.retrieval.embeddings.Embedder` and
    ``unit_vectors`` a callable ``ids -> {id: vector}`` (the page index's)."""

    def __init__(self, embedder, unit_vectors, cross_encoder=None, prefilter: int = 100,
                 page_weight: float = 0.0, cues: bool = True):
        self.embedder = embedder
        self.unit_vectors = unit_vectors
        self.cross_encoder = cross_encoder
        self.prefilter = prefilter
        self.page_weight = page_weight
        self.cues = cues
        self._key_columns: OrderedDict[tuple, int | None] = OrderedDict()
        self._facts: OrderedDict[tuple, PageFacts] = OrderedDict()
        self._facts_lock = threading.Lock()
        self._vectors: LRUCache[str, np.ndarray | None] = LRUCache(UNIT_VECTORS)
        self._vectors_lock = threading.Lock()

    def select(self, question: str, units: list[tuple[int, Unit]],
               page_scores: list[float] | None = None,
               budget: int | None = None, bridging: frozenset[str] = frozenset(),
               facts: list[PageFacts] | None = None) -> list[ScoredUnit]:
        """Rank ``[(page_rank, unit)]`` for ``question``; at most ``prefilter``
        results, best first. With ``page_scores`` (the anchor pages' retrieval
        scores, by rank) each unit's score gains ``page_weight`` times its
        page's score minus the best page's: the ranked list is a reliable
        pointer to pages (Tessera §3.2). Cue rows (:mod:`pilar.packing.cues`)
        go first, at most one per :data:`CUE_TOKENS` tokens of ``budget``
        (the packet's, in tokens; None: :data:`~pilar.packing.cues.MAX_CUE_UNITS`).
        Units whose support is in ``bridging`` (the units a multi-hop chain
        runs through, :attr:`~pilar.model.RankedPage.bridging`) go first of
        all, page by page, each page's followed by its best other unit: a
        reader follows the chain through them; with any, the other units
        come page by page in turn. ``facts`` are
        :meth:`page_facts` of the units (read now when not given)."""
        if not units:
            return []
        q = tokens(question)
        plain = [u for _, u in units]
        facts = self.page_facts(plain) if facts is None else facts
        lexical, idf = bm25_of_postings(q, [f.postings for f in facts])
        named = self._key_scores(plain, lexical, idf)
        order = np.argsort(-lexical, kind="stable")[: self.prefilter]
        extra = [i for i in np.argsort(-named, kind="stable")[:KEY_ROWS] if named[i] > 0]
        order = list(dict.fromkeys([*order.tolist(), *extra]))
        picked = [(units[i][0], units[i][1], float(lexical[i])) for i in order]
        rerank = self._rerank(question, [u for _, u, _ in picked],
                              np.array([lex for _, _, lex in picked]),
                              facts) + KEY_WEIGHT * named[order]
        prior = [0.0] * len(picked)
        if page_scores and self.page_weight:
            top = max(page_scores)
            prior = [self.page_weight * (page_scores[rank] - top) for rank, _, _ in picked]
        scored = [ScoredUnit(u, lex, float(r) + b, rank)
                  for (rank, u, lex), r, b in zip(picked, rerank, prior)]
        scored.sort(key=lambda s: (-s.score, s.page_rank, s.unit.unit_id))
        limit = MAX_CUE_UNITS if budget is None else budget // CUE_TOKENS
        scored = self._with_cues(question, units, lexical, scored, limit)
        if bridging:
            scored = _by_page_in_turn(scored)
        return self._with_bridging(units, lexical, scored, bridging)

    def tables(self, units: list[Unit],
               facts: list[PageFacts] | None = None) -> dict[TableKey, list[Unit]]:
        """The row units of ``units`` (the anchor pages' units, page after
        page) by table, as :func:`~pilar.packing.statistics.tables_of` gives
        them, from each page's remembered :class:`PageFacts` (``facts``:
        :meth:`page_facts` of ``units``, read now when not given; lists
        shared between searches: read them, never change them)."""
        out: dict[TableKey, list[Unit]] = {}
        for page in self.page_facts(units) if facts is None else facts:
            out.update(page.tables)
        return out

    def page_facts(self, units: list[Unit]) -> list[PageFacts]:
        """The :class:`PageFacts` of ``units`` (anchor pages' units, page
        after page), one per run of units of one page; a page's are
        remembered for :data:`FACT_PAGES` pages (pages are content-addressed,
        so their units never change)."""
        runs: list[list[Unit]] = []
        for u in units:
            if runs and runs[-1][0].doc_id == u.doc_id and runs[-1][0].page == u.page:
                runs[-1].append(u)
            else:
                runs.append([u])
        out = []
        for members in runs:
            key = tuple(u.unit_id for u in members)
            with self._facts_lock:
                found = self._facts.get(key)
                if found is not None:
                    self._facts.move_to_end(key)
            if found is None:
                found = PageFacts.of(members)
                with self._facts_lock:
                    self._facts[key] = found
                    while len(self._facts) > FACT_PAGES:
                        self._facts.popitem(last=False)
            out.append(found)
        return out

    def _with_bridging(self, units: list[tuple[int, Unit]], lexical: np.ndarray,
                       scored: list[ScoredUnit], bridging: frozenset[str]) -> list[ScoredUnit]:
        """``scored`` (page by page in turn) with, at the top, page by page
        in page order, each page's units of ``bridging`` supports (moved or
        added: the links a reader follows) and then its best-scored other
        unit (what the chain came to the page for), scored above the rest
        in that order: the last page of a chain is not crowded out by the
        links of the pages before it."""
        if not bridging:  # the single-shot profile: nothing to look for
            return scored
        pinned = [(rank, u, float(lex)) for (rank, u), lex in zip(units, lexical)
                  if u.support_id in bridging]
        if not pinned:
            return scored
        ids = {u.unit_id for _, u, _ in pinned}
        by_page: dict[int, list[ScoredUnit]] = {}
        for rank, u, lex in sorted(pinned, key=lambda t: t[0]):
            by_page.setdefault(rank, []).append(ScoredUnit(u, lex, 0.0, rank, bridging=True))
        best: dict[int, ScoredUnit] = {}
        for su in scored:
            if su.unit.unit_id not in ids:
                best.setdefault(su.page_rank, su)
        first = [su for rank in sorted(set(by_page) | set(best))
                 for su in [*by_page.get(rank, ()), *([best[rank]] if rank in best else [])]]
        return _on_top(first, scored, self.prefilter)

    def _key_scores(self, units: list[Unit], lexical: np.ndarray,
                    idf: dict[str, float]) -> np.ndarray:
        """Per unit of ``units``, how rare the rarest question word in its key
        cell is: that word's IDF (``idf``: the question's words found in the
        units, as BM25 weighed them) divided by the largest; 0 for a unit that
        is not a table row, whose BM25 score (``lexical``) is 0 (it holds no
        question word), or whose key cell holds none. Shape ``(len(units),)``."""
        out = np.zeros(len(units))
        if not idf:
            return out
        top = max(idf.values())
        rows = [(i, t) for i in np.flatnonzero(lexical > 0).tolist()
                if (t := _table_of(units[i])) is not None]
        columns = self._key_column_of({t for _, t in rows}, units)
        for i, t in rows:
            u = units[i]
            col = columns[t]
            if col is not None and col < len(u.cells):
                hit = [idf[w] for w in set(tokens(u.cells[col])) if w in idf]
                if hit:
                    out[i] = max(hit) / top
        return out

    def _key_column_of(self, tables: set[tuple], units: list[Unit]) -> dict[tuple, int | None]:
        """The key column of each table in ``tables`` (keys of :func:`_table_of`),
        found from its rows among ``units`` the first time and remembered for
        :data:`KEY_TABLES` tables."""
        known = self._key_columns
        missing = {t for t in tables if t not in known}
        if missing:
            rows: dict[tuple, list[Unit]] = {}
            for u in units:
                if (t := _table_of(u)) in missing:
                    rows.setdefault(t, []).append(u)
            for t, members in rows.items():
                width = min(4, max(len(u.cells) for u in members))
                known[t] = key_of_columns([[u.cells[c] if c < len(u.cells) else ""
                                            for u in members] for c in range(width)])
        found = {t: known.get(t) for t in tables}
        while len(known) > KEY_TABLES:
            known.popitem(last=False)
        return found

    def _with_cues(self, question: str, units: list[tuple[int, Unit]], lexical: np.ndarray,
                   scored: list[ScoredUnit], limit: int) -> list[ScoredUnit]:
        """``scored`` with at most ``limit`` rows the question points at by
        position or extreme value (:func:`pilar.packing.cues.cue_units`) or
        as the neighbours of a row it names
        (:func:`pilar.packing.cues.neighbour_units`) moved or added to the
        top, scored just above the best unit; at most ``prefilter``."""
        if not self.cues or limit <= 0:
            return scored
        ranked = [s.unit for s in scored]
        cues = list({u.unit_id: u for u in [
            *cue_units(question, units, ranked, limit),
            *neighbour_units(question, units, ranked, limit)]}.values())[:limit]
        if not cues:
            return scored
        ids = {u.unit_id for u in cues}
        where = {u.unit_id: (rank, float(lexical[i])) for i, (rank, u) in enumerate(units)
                 if u.unit_id in ids}
        return _on_top([ScoredUnit(u, where[u.unit_id][1], 0.0, where[u.unit_id][0])
                        for u in cues], scored, self.prefilter)

    def _rerank(self, question: str, units: list[Unit], lexical: np.ndarray,
                facts: list[PageFacts]) -> np.ndarray:
        """CrossEncoder scores, or without one the hybrid of PILAR §3.4 at unit
        level: 0.4 x BM25 (min-max over the candidates) + 0.6 x cosine.
        ``facts`` are those of the anchor pages, whose runs
        (:func:`~pilar.retrieval.unit_runs.group_leaders`) give a unit
        without a vector of its own its run's (a store built before runs
        has one per unit); one with neither is embedded now."""
        if self.cross_encoder is not None:
            pairs = [(question, u.completed_text) for u in units]
            return np.asarray(self.cross_encoder.predict(pairs, show_progress_bar=False))
        query = self.embedder.query(question)
        lead: dict[str, str] = {}
        for page in facts:
            lead.update(page.leaders)
        ids = [u.unit_id for u in units]
        found = self._stored_vectors(list(dict.fromkeys(ids + [lead.get(i, i) for i in ids])))
        vectors = {i: found[i] if i in found else found.get(lead.get(i, i)) for i in ids}
        missing = [u for u in units if vectors[u.unit_id] is None]
        if missing:
            fresh = self.embedder.encode([u.completed_text for u in missing],
                                         max_tokens=UNIT_TOKENS)
            vectors.update({u.unit_id: v for u, v in zip(missing, fresh)})
        cosine = np.array([float(vectors[u.unit_id] @ query) for u in units])
        span = lexical.max() - lexical.min() if len(lexical) else 0.0
        lex = (lexical - lexical.min()) / span if span > 1e-12 else np.ones_like(lexical)
        return 0.4 * lex + 0.6 * cosine

    def _stored_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """``{unit_id: (dim,) float32}`` of the ``ids`` the page index holds a
        vector for, the answers for the last :data:`UNIT_VECTORS` ids kept in
        memory (a unit without a vector of its own too): a unit id names its
        document's bytes (the doc_id is their digest), so what the index holds
        for it never changes."""
        with self._vectors_lock:
            known = {i: self._vectors[i] for i in ids if i in self._vectors}
        missing = [i for i in ids if i not in known]
        if missing:
            found = self.unit_vectors(missing)
            fresh = {i: found.get(i) for i in missing}
            with self._vectors_lock:
                self._vectors.update(fresh)
            known.update(fresh)
        return {i: v for i, v in known.items() if v is not None}
