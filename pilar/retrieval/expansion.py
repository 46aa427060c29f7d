"""Query-time graph linking with relevance gates (PILAR §3.4, App. E.6).

From the hybrid shortlist: seeds (pages within ``seed_ratio`` of the best
score), a local continuity prior (adjacent page ``+adjacent_bonus``, same
section ``+same_section_bonus``), then two expansions from the entities the
question names: alias expansion ``+alias_bonus`` (pages mentioning the same
canonical entity, directly or through SAME_AS) and graph expansion
``+graph_bonus`` (entity -> assertion -> support -> page). The gate keeps an
expanded page only if its dense score is at least ``gate``. Every page
carries a trace of its score parts and the graph path that brought it.

A question entity mentioned on more than ``hub_pages`` pages is a hub (a
generic noun such as "Silver" or "Country", a medal or a header word that
tables repeat): it links nothing specific, so it is not expanded from (it
would lift every page that mentions it, the gate cannot tell them apart:
they are all on topic), and the trace names it under ``hub_entities``. This
is the gate's "prevents graph drift" (PILAR §3.4) applied to the entity
rather than the page, in the spirit of HippoRAG's node specificity (an
entity's weight falls with the passages it occurs in).
"""

from __future__ import annotations

import math
import re

from rapidfuzz import fuzz

from pilar.config import Settings
from pilar.graph import GraphStore
from pilar.ingest.codes import codes
from pilar.ingest.names import normalise
from pilar.model import RankedPage, Scope
from pilar.retrieval import PageIndex
from pilar.retrieval.bridges import BridgeExpander
from pilar.retrieval.chains import bridge_name, mark_bridging
from pilar.retrieval.hybrid import HybridRetriever, beside, best_first

_DIGIT = re.compile(r"\d")
_ACRONYM = re.compile(r"[A-Z]{2,6}")


def _written(acronym: str, question: str) -> bool:
    """Does ``question`` write ``acronym`` (all capitals) as a word of its
    own, in capitals: "What" is not the acronym ``WHAT`` and the ``ONT`` of
    a code ``IR-ONT-24-142`` is part of the code, not a mention?"""
    return re.search(rf"(?<![\w-]){acronym}(?![\w-])", question) is not None


def query_entities(question: str, graph: GraphStore, threshold: float = 90.0,
                   limit: int = 5, collections: tuple[str, ...] | None = None
                   ) -> list[tuple[str, str, float]]:
    """Entities (of ``collections`` when given) the question names:
    ``[(entity_id, matched name, score 0-100)]``, longest names first. A
    name or alias matches when it occurs in the question as whole words, or
    fuzzily (rapidfuzz partial ratio >= ``threshold``) for names of 6+
    characters without a digit (``QC-09`` and ``IR-ONT-24-131`` are other
    things than ``QC-08`` and ``IR-ONT-24-117``: a name with a number
    matches only as written), and an acronym (a name of 2-6 capitals) only
    where the question writes it in capitals as a word of its own
    (:func:`_written`). Candidates are read by the question's words
    (:meth:`GraphStore.entity_candidates`, 50) and by each code the question
    writes (:func:`~pilar.ingest.codes.codes`, 3 each): among the 50 a call
    number can lose to the names that share the question's common words."""
    q = f" {normalise(question)} "
    found: dict[str, tuple[str, float]] = {}
    scope = None if collections is None else list(collections)
    candidates = graph.entity_candidates(question, 50, scope)
    for surface, _ in codes(question):  # a code is looked up as written, not among 50 by words
        candidates += graph.entity_candidates(surface, 3, scope)
    for entity in candidates:
        for name in (entity.name, *entity.aliases):
            n = normalise(name)
            if len(n) < 3 or (_ACRONYM.fullmatch(name) and not _written(name, question)):
                continue
            score = 100.0 if f" {n} " in q else (
                fuzz.partial_ratio(n, q) if len(n) >= 6 and not _DIGIT.search(n) else 0.0)
            if score >= threshold and score > found.get(entity.entity_id, ("", -1))[1]:
                found[entity.entity_id] = (name, score)
    ranked = sorted(found.items(), key=lambda kv: (-kv[1][1], -len(kv[1][0]), kv[0]))
    return [(eid, name, score) for eid, (name, score) in ranked[:limit]]


class GraphRetriever:
    """Hybrid shortlist + graph linking; see the module docstring.

    ``settings`` should already carry the profile (:meth:`Settings.profiled`).
    """

    def __init__(self, graph: GraphStore, index: PageIndex, hybrid: HybridRetriever,
                 settings: Settings):
        self.graph = graph
        self.index = index
        self.hybrid = hybrid
        self.s = settings
        self.bridges = BridgeExpander(graph, index, hybrid, settings)

    def search(self, question: str, k: int, scope: Scope | None = None) -> list[RankedPage]:
        """The ``k`` best pages within ``scope`` after priors and gated
        expansion, best first (expanded pages outside the scope, or of
        documents not ``ready``, never enter). The graph reads that do not
        need the shortlist (the entity match, then the pages it reaches) run
        beside it, and the section read of the prior beside the expansion."""
        s = self.s
        with beside(self._reached, question, scope) as reaching:
            shortlist = self.hybrid.shortlist(question, scope)
        if not shortlist:
            return []
        pool = shortlist[: s.pool]
        best = pool[0].score
        seeds = [p for p in pool if p.score >= s.seed_ratio * best]
        seed_ids = {p.page_id for p in seeds}
        for p in shortlist:
            p.trace.update(seed=p.page_id in seed_ids, expanded=False)
        by_id = {p.page_id: p for p in shortlist}
        entities, hubs, reached, counts = reaching.result()
        if s.specific_entities and entities:  # a field label ("Length overall") names no thing
            labels = {eid for eid, name, _ in entities
                      if " " in name.strip() and not bridge_name(eid, name)}
            if labels:
                reached = {kind: {pid: path for pid, path in pages.items()
                                  if path[0].removeprefix("entity:") not in labels}
                           for kind, pages in reached.items()}
        sectioned = [p.page_id for p in pool] if s.same_section_bonus else []
        with beside(self.graph.page_sections, sectioned) as sections:
            if entities:
                alias = {**reached["mention"], **reached["alias"]}
                self._expand(question, by_id, [("alias", alias, s.alias_bonus),
                                               ("graph", reached["assertion"], s.graph_bonus)],
                             set() if s.specific_entities else seed_ids, scope,
                             counts if s.specific_entities else None)
        self._local_prior(pool, seeds, sections.result())
        if s.max_hops:
            naming: dict[str, float] = {}
            names = {eid for eid, name, _ in entities if bridge_name(eid, name)}
            for kind in ("mention", "alias"):
                for pid, path in (reached or {}).get(kind, {}).items():
                    eid = path[0].removeprefix("entity:")
                    if eid in names:
                        naming[pid] = max(naming.get(pid, 0.0),
                                          1.0 / math.sqrt(max(counts.get(eid, 1), 1)))
            hops = self.bridges.expand(question, self.hybrid.embedder.query(question), by_id,
                                [(eid, name) for eid, name, _ in entities + hubs], naming, scope,
                                keep=k)
        if entities or hubs:
            for p in by_id.values():
                p.trace["query_entities"] = [f"{name} ({eid})" for eid, name, _ in entities]
                if hubs:
                    p.trace["hub_entities"] = [f"{name} ({eid})" for eid, name, _ in hubs]
        ranked = best_first(by_id.values(), k)
        if s.max_hops:
            mark_bridging(ranked, hops)
        return ranked

    def _reached(self, question: str, scope: Scope | None = None
                 ) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, float]],
                            dict | None, dict[str, int]]:
        """The entities of the scope's collections the question names
        (:func:`query_entities`) that are not hubs, the hubs (mentioned on
        more than ``hub_pages`` pages, :meth:`GraphStore.mention_pages`), the
        pages the graph reaches from the former
        (:meth:`GraphStore.expansion_pages`; None without any), each page's
        path from the entity reaching it that is a name a bridge may carry
        (:func:`~pilar.retrieval.chains.bridge_name`), the most specific
        first (fewest pages: a page naming both "Call sign" and ``VQAR7`` is
        reached by the call sign's value, not by the field label), and the
        pages mentioning each named entity."""
        named = query_entities(question, self.graph, self.s.entity_match,
                               collections=scope.collections if scope else None)
        if not named:
            return named, [], None, {}
        pages = self.graph.mention_pages([e for e, _, _ in named])
        entities = [e for e in named if pages[e[0]] <= self.s.hub_pages]
        hubs = [e for e in named if pages[e[0]] > self.s.hub_pages]
        if not entities:
            return entities, hubs, None, pages
        specific = sorted(entities, key=lambda e: (not bridge_name(e[0], e[1]), pages[e[0]]))
        return entities, hubs, self.graph.expansion_pages([e for e, _, _ in specific],
                                                          self.s.expansion_limit), pages

    def _local_prior(self, pool: list[RankedPage], seeds: list[RankedPage],
                     sections: dict[str, set[tuple[str, ...]]]) -> None:
        """Adjacent-page and same-section bonuses of non-seed ``pool`` pages
        (PILAR §3.4); ``sections`` is :meth:`GraphStore.page_sections` of the
        pool (empty without a same-section bonus)."""
        s = self.s
        if s.adjacent_bonus:
            near = {(p.doc_id, p.number + d) for p in seeds for d in (-1, 1)}
            for p in pool:
                if (p.doc_id, p.number) in near and not p.trace["seed"]:
                    self._bonus(p, "adjacent", s.adjacent_bonus)
        if s.same_section_bonus:
            seed_sections = {(p.doc_id, sec) for p in seeds for sec in sections[p.page_id]
                             if len(sec) > 1}
            for p in pool:
                if not p.trace["seed"] and any((p.doc_id, sec) in seed_sections
                                               for sec in sections[p.page_id]):
                    self._bonus(p, "same_section", s.same_section_bonus)

    def _expand(self, question: str, by_id: dict[str, RankedPage],
                kinds: list[tuple[str, dict[str, list[str]], float]], seed_ids: set[str],
                scope: Scope | None = None, counts: dict[str, int] | None = None) -> None:
        """For each ``(kind, reached, bonus)`` in turn, add ``bonus`` to the
        pages ``reached`` (``{page_id: path}``) whose dense score passes the
        gate; pages outside the shortlist enter as expanded pages. With
        ``counts`` (``{entity_id: pages mentioning it}``) the bonus is scaled
        by the specificity of the entity a path starts from, ``1 /
        sqrt(pages)`` (HippoRAG's node specificity: "Length overall", on the
        particulars of every ship, says less than a call sign). One dense
        lookup and one document read for all kinds together."""
        outside = list(dict.fromkeys(pid for _, reached, _ in kinds for pid in reached
                                     if pid not in by_id))
        dense = {pid: p.dense for pid, p in by_id.items()}
        docs = {}
        if outside:
            query = self.hybrid.embedder.query(question)
            with beside(self.hybrid.visible,
                        [pid for pid in outside if pid not in seed_ids], scope) as visible:
                dense.update(self.index.dense_for(query, outside))
            docs = visible.result()
        for kind, reached, bonus in kinds:
            for pid in reached:
                if pid in seed_ids:
                    continue
                if dense[pid] < self.s.gate:
                    if pid in by_id:
                        by_id[pid].trace.setdefault("gated", []).append(kind)
                    continue
                if pid not in by_id:
                    doc_id, _, number = pid.rpartition(":")
                    doc = docs.get(doc_id)
                    if doc is None:  # not ready, or outside the caller's scope
                        continue
                    base = round(self.s.dense_weight * dense[pid], 6)
                    by_id[pid] = RankedPage(page_id=pid, doc_id=doc_id, number=int(number),
                                            score=base, source=doc.uri, title=doc.title, bm25=0.0,
                                            dense=dense[pid],
                                            trace={"base": base, "seed": False, "expanded": True})
                page = by_id[pid]
                if kind not in page.trace:
                    eid = reached[pid][0].removeprefix("entity:")
                    self._bonus(page, kind, bonus if counts is None else
                                round(bonus / math.sqrt(max(counts.get(eid, 1), 1)), 6))
                    page.trace.setdefault("paths", {})[kind] = reached[pid]

    @staticmethod
    def _bonus(page: RankedPage, kind: str, value: float) -> None:
        page.trace[kind] = value
        page.score = round(page.score + value, 6)
