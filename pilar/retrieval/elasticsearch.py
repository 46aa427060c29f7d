"""The production page index on Elasticsearch 9 (official ``elasticsearch`` client).

One alias, ``<prefix>-pages``, in front of a versioned index
``<alias>-NNNN`` whose settings and mappings come from
``migrations/elasticsearch/NNNN_*.json``. A migration creates the next
index, copies the documents over (the client's ``helpers.scan`` and bulk
helpers: neither the reindex module nor data streams, which
``helpers.reindex`` asks about, are in every distribution),
swaps the alias in one atomic ``update_aliases`` and drops the old index;
a migration that names an index as null drops it (0003 drops the units
index of versions 1 and 2: their vectors were a second copy of the pages').

A page is one document (``_id`` = page id): ``text`` for BM25 (analysed
as the embedded FTS5 index tokenises it, queries weighted to FTS5's idf:
:meth:`ElasticsearchPageIndex._match`), ``chunks`` (nested: one
``dense_vector`` per run of evidence units or text window, cosine, HNSW)
for kNN, where a page scores by its best vector, and ``doc_id``,
``number``, ``collection``, ``sections`` as keywords. Filters
(:class:`~pilar.model.Scope`) go inside the BM25 and kNN queries. Unit
vectors (for packing) are read from their page's ``chunks``, each with its
unit id (as the embedded index reads them from its page vectors), so a
stack of Neo4j + Elasticsearch needs no SQLite file. Vectors travel as base64 of
big-endian float32 (Elasticsearch 9.1+). Writes go as two bulk streams at
once per batch of documents (:meth:`ElasticsearchPageIndex.add_documents`)
and one refresh at its end, so a batch is searchable when the call
returns (the graph's document status, not the refresh, decides what reads
see: DESIGN.md's write protocol). The query bodies live here.

Errors: every failed call (after the client's retries) raises
:class:`~pilar.errors.StoreError` naming the service and URL.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from pilar.errors import StoreError
from pilar.migrations import migration_files
from pilar.model import IndexedPages, Page, Scope
from pilar.parts import batched
from pilar.retrieval import query_terms

MAX_KNN = 10_000
"""Elasticsearch's ceiling on ``k`` and ``num_candidates``."""
MIN_CANDIDATES = 100
"""kNN ``num_candidates`` is at least this and at least 2 x k."""
BULK_ACTIONS = 2000
"""Actions per bulk request (a page with its vectors is one action)."""
WRITE_STREAMS = 2
"""Bulk streams :meth:`ElasticsearchPageIndex.add_documents` sends at once
(every other page in each): a shard runs the items of one bulk request one
after the other on one write thread, so one stream indexes on one core."""


def _b64(vector: np.ndarray) -> str:
    """A vector as Elasticsearch takes it most compactly: base64 of its
    big-endian float32 bytes (about a quarter of the JSON list's size)."""
    return base64.b64encode(np.asarray(vector, dtype=">f4").tobytes()).decode("ascii")


def _vector(value: str | list) -> np.ndarray:
    """A stored vector as ``(dim,)`` float32: ``_source`` keeps the form it
    was sent in, base64 (:func:`_b64`) or a JSON list; both are valid input."""
    if isinstance(value, list):
        return np.asarray(value, dtype=np.float32)
    return np.frombuffer(base64.b64decode(value), dtype=">f4").astype(np.float32)


def _cosine(score: float) -> float:
    """Elasticsearch reports cosine similarity as ``(1 + cos) / 2``."""
    return 2.0 * float(score) - 1.0


def _filters(scope: Scope | None) -> list[dict]:
    if scope is None:
        return []
    out = []
    if scope.collections is not None:
        out.append({"terms": {"collection": list(scope.collections)}})
    if scope.doc_ids is not None:
        out.append({"terms": {"doc_id": list(scope.doc_ids)}})
    return out


def fts5_weight(doc_freq: int, doc_count: int) -> float:
    """How much more a term weighs in SQLite FTS5's BM25 than in Lucene's:
    FTS5's idf, ``ln((N - n + 0.5) / (n + 0.5))`` (1e-6 when not positive),
    over Lucene's, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, times FTS5's
    ``k1 + 1`` (Lucene dropped it), for a term in ``doc_freq`` of
    ``doc_count`` pages. Boosting each term's clause by it gives the
    embedded index's BM25 (same tf and length normalisation, k1 1.2, b 0.75)."""
    ratio = (doc_count - doc_freq + 0.5) / (doc_freq + 0.5)
    return 2.2 * max(1e-6, math.log(ratio)) / math.log1p(ratio)


def _knn(query: np.ndarray, k: int, filters: list[dict]) -> dict:
    body = {"field": "chunks.vector", "query_vector": np.asarray(query, dtype=float).tolist(),
            "k": k, "num_candidates": min(MAX_KNN, max(MIN_CANDIDATES, 2 * k))}
    if filters:
        body["filter"] = filters
    return body


class ElasticsearchPageIndex:
    """PageIndex on Elasticsearch (see :class:`pilar.retrieval.PageIndex`).

    ``url`` is the node's HTTP URL, ``api_key`` an optional API key,
    ``prefix`` the alias prefix (``PILAR_ELASTICSEARCH_INDEX``);
    ``request_timeout`` and the backoff's ``(base, cap)`` in seconds. Applies
    pending migrations on open. Raises :class:`StoreError` when the node
    cannot be reached.
    """

    name = "elasticsearch"

    def __init__(self, url: str, api_key: str | None = None, prefix: str = "pilar",
                 request_timeout: float = 30.0, max_retries: int = 3,
                 retry_backoff: tuple[float, float] = (0.5, 8.0)):
        from elasticsearch import Elasticsearch
        from elasticsearch.serializer import OrjsonSerializer

        self.url = url
        self.prefix = prefix
        self.pages_alias = f"{prefix}-pages"
        # The transport retries connection errors, timeouts and 429/502/503/504
        # up to max_retries times, sleeping between attempts with jittered
        # exponential backoff (retry_backoff = (base, cap) seconds).
        # orjson encodes the bulk bodies: the client's CPU for the 400 dev
        # pages of bench/index_write.py went from 0.43 to 0.28 s (the server's
        # indexing is the rest of the several seconds)
        self.client = Elasticsearch(url, api_key=api_key, request_timeout=request_timeout,
                                    serializer=OrjsonSerializer(),
                                    max_retries=max_retries, retry_on_timeout=True,
                                    retry_backoff_base=retry_backoff[0],
                                    retry_backoff_cap=retry_backoff[1])
        self._call("connect", self.client.info)
        self.migrate()

    # -- plumbing ------------------------------------------------------------
    def _call(self, what: str, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, its failures as one :class:`StoreError`."""
        from elasticsearch import ApiError, TransportError

        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            reason = exc.message
            if isinstance(exc.body, dict) and isinstance(exc.body.get("error"), dict):
                reason = exc.body["error"].get("reason") or reason
            raise StoreError(f"Elasticsearch at {self.url}: {what} failed "
                             f"({exc.meta.status}): {reason}") from exc
        except TransportError as exc:
            raise StoreError(f"cannot reach Elasticsearch at {self.url} ({what}): "
                             f"{exc.message}") from exc

    def close(self) -> None:
        self.client.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Each write stands alone on a server (the facade's write protocol
        makes a document visible only once both stores hold it)."""
        yield

    # -- schema ----------------------------------------------------------------
    def _current(self, alias: str) -> tuple[str, int] | None:
        """``(index, version)`` behind ``alias``, or None when it does not exist."""
        if not self._call("read aliases", self.client.indices.exists_alias, name=alias):
            return None
        name = sorted(self._call("read aliases", self.client.indices.get_alias, name=alias))[-1]
        return name, int(name.rpartition("-")[2])

    def migrate(self) -> list[int]:
        """Apply ``migrations/elasticsearch/NNNN_*.json``: per index named in
        a file whose version is newer than the alias's index, create
        ``<alias>-NNNN``, copy the documents (scan + bulk, vectors included:
        they stay in ``_source``), swap the alias, drop the old index; an
        index given as null is dropped with its alias. Returns the versions
        applied. Idempotent."""
        from elasticsearch import helpers

        applied = []
        specs = [(version, json.loads(path.read_text(encoding="utf-8")))
                 for version, path in migration_files("elasticsearch", ".json")]
        last = {role: body for _, spec in specs for role, body in spec["indexes"].items()}
        for version, spec in specs:
            for role, body in spec["indexes"].items():
                alias = f"{self.prefix}-{role}"
                current = self._current(alias)
                if last[role] is None:  # dropped by this or a later migration: never made
                    if body is None and current is not None:
                        self._call(f"drop {current[0]}", self.client.indices.delete,
                                   index=current[0])
                        if version not in applied:
                            applied.append(version)
                    continue
                if current is not None and current[1] >= version:
                    continue
                new = f"{alias}-{version:04d}"
                if not self.client.indices.exists(index=new):
                    self._call(f"create {new}", self.client.indices.create, index=new,
                               settings=body["settings"], mappings=body["mappings"])
                actions = [{"add": {"index": new, "alias": alias}}]
                if current is not None:
                    hits = helpers.scan(self.client, index=current[0], size=500,
                                        query={"query": {"match_all": {}}})
                    self._bulk([({"_op_type": "index", "_index": new, "_id": h["_id"],
                                  "_source": h["_source"]} for h in hits)],
                               f"copy {current[0]} into {new}", refresh=[new])
                    actions.insert(0, {"remove": {"index": current[0], "alias": alias}})
                self._call(f"point {alias} at {new}", self.client.indices.update_aliases,
                           actions=actions)
                if current is not None:
                    self._call(f"drop {current[0]}", self.client.indices.delete, index=current[0])
                if version not in applied:
                    applied.append(version)
        return applied

    def drop(self) -> None:
        """Delete the pages alias's index (tests and benches start afresh)."""
        current = self._current(self.pages_alias)
        if current is not None:
            self._call(f"drop {current[0]}", self.client.indices.delete, index=current[0])

    # -- writes ----------------------------------------------------------------
    def add_pages(self, pages: list[Page], vectors: list[np.ndarray],
                  unit_ids: list[list[str | None]] | None = None, *,
                  collection: str = "default",
                  sections: list[list[str]] | None = None) -> None:
        """Index one document's ``pages``: :meth:`add_documents` of one."""
        self.add_documents([IndexedPages(pages, vectors, unit_ids, collection, sections)])

    def add_documents(self, docs: list[IndexedPages]) -> None:
        """Index the pages of ``docs`` with :data:`WRITE_STREAMS` bulk
        request streams at once (the client's ``helpers.streaming_bulk``,
        429s retried with backoff; ``create`` per page, its vectors with
        their unit ids inside it) and ONE refresh at the end, so they are
        searchable when it returns. A refresh per document made each write a
        tiny segment and cost about 35 ms a document (25 pages/s on one-page
        documents; one refresh per batch: see ``bench/index_write.py``); a
        second document per unit vector, in an index of its own, took about a
        third of the node's CPU (400 dev pages: 1.2 against 1.7 s) for a copy
        of the same vectors. Raises :class:`StoreError` naming the first
        failed item and how many failed (a page id already indexed is one);
        the items that succeeded stay (the caller removes the documents).
        Raises ValueError when a document has not one vector array per page."""
        def actions(part: list[tuple[IndexedPages, int]]):
            for doc, i in part:
                page, vecs = doc.pages[i], np.asarray(doc.vectors[i], dtype=np.float32)
                ids = doc.unit_ids[i] if doc.unit_ids else [None] * len(vecs)
                yield {"_op_type": "create", "_index": self.pages_alias, "_id": page.page_id,
                       "_source": {"page_id": page.page_id, "doc_id": page.doc_id,
                                   "number": page.number, "collection": doc.collection,
                                   "sections": doc.sections[i] if doc.sections else [],
                                   "text": page.text,
                                   "chunks": [{"unit_id": uid, "vector": _b64(v)}
                                              for uid, v in zip(ids, vecs, strict=True)]}}

        for doc in docs:
            if len(doc.pages) != len(doc.vectors):
                raise ValueError(f"{len(doc.pages)} pages but {len(doc.vectors)} vector arrays")
        pages = [(doc, i) for doc in docs for i in range(len(doc.pages))]
        self._bulk([actions(pages[n::WRITE_STREAMS]) for n in range(WRITE_STREAMS)
                    if pages[n::WRITE_STREAMS]], "index pages")

    def _bulk(self, streams: list, what: str, refresh: list[str] | None = None) -> None:
        """Send each iterable of actions in ``streams`` with
        ``helpers.streaming_bulk`` (requests of at most :data:`BULK_ACTIONS`
        actions or 20 MiB; several streams at once, a thread each), then
        refresh ``refresh`` (default: the pages alias) once, also when some
        items failed, so what was written can be found and removed. Raises
        :class:`StoreError` naming the first failed item and how many
        failed, or saying the node cannot be reached (then nothing is refreshed)."""
        from elasticsearch import helpers

        def send(actions) -> list:
            return self._call(what, lambda: list(helpers.streaming_bulk(
                self.client, actions, chunk_size=BULK_ACTIONS, max_chunk_bytes=20 * 1024 * 1024,
                raise_on_error=False, raise_on_exception=False, max_retries=3,
                initial_backoff=1, max_backoff=30)))

        if len(streams) <= 1:
            results = send(streams[0]) if streams else []
        else:
            with ThreadPoolExecutor(len(streams)) as pool:
                results = [r for part in list(pool.map(send, streams)) for r in part]
        self._call(f"refresh after {what}", self.client.indices.refresh,
                   index=refresh or [self.pages_alias])
        failed, first = 0, None
        for ok, item in results:
            if not ok:
                failed += 1
                if first is None:
                    op, detail = next(iter(item.items()))
                    error = detail.get("error")
                    reason = error.get("reason") if isinstance(error, dict) else error
                    first = f"{op} {detail.get('_id')}: {reason}"
        if failed:
            raise StoreError(f"Elasticsearch at {self.url}: {what}: {failed} of {len(results)} "
                             f"items failed; first: {first}")

    def delete_document(self, doc_id: str) -> int:
        """Remove a document's pages and unit vectors: :meth:`delete_documents` of one."""
        return self.delete_documents([doc_id])

    def delete_documents(self, doc_ids: list[str]) -> int:
        """Remove the pages (with their vectors) of ``doc_ids`` (ids found by
        one scan, deleted in bulk, gone from searches when it returns);
        returns pages removed."""
        from elasticsearch import helpers

        if not doc_ids:
            return 0
        pages = self._call("find pages", lambda: [hit["_id"] for hit in helpers.scan(
            self.client, index=self.pages_alias,
            query={"query": {"terms": {"doc_id": list(doc_ids)}}}, source=False, size=1000)])
        if pages:
            self._bulk([({"_op_type": "delete", "_index": self.pages_alias, "_id": i}
                         for i in pages)], "delete pages")
        return len(pages)

    # -- reads -----------------------------------------------------------------
    def count(self) -> int:
        return self._call("count", self.client.count, index=self.pages_alias)["count"]

    def unit_vectors(self, unit_ids: list[str]) -> dict[str, np.ndarray]:
        """``{unit_id: (dim,) float32}`` from the ``chunks`` of the units'
        pages (a unit id is ``<page id>:u<n>``, :mod:`pilar.ingest.units`,
        and a unit's vector is indexed with its page): one ``mget`` per 500
        pages; ids of no indexed vector are absent."""
        wanted: dict[str, set[str]] = {}
        for uid in unit_ids:
            page, unit, _ = uid.rpartition(":u")
            if unit:  # an id of no unit names no page: absent
                wanted.setdefault(page, set()).add(uid)
        out = {}
        for chunk in batched(list(wanted), 500):
            docs = self._call("read unit vectors", self.client.mget, index=self.pages_alias,
                              ids=chunk, source=["chunks"], filter_path="docs._id,docs._source")
            for doc in docs.get("docs", []):
                for c in doc.get("_source", {}).get("chunks", []):
                    if c.get("unit_id") in wanted[doc["_id"]]:
                        out[c["unit_id"]] = _vector(c["vector"])
        return out

    def _hits(self, what: str, **body) -> list[tuple[str, float]]:
        res = self._call(what, self.client.search, index=self.pages_alias, source=False,
                         filter_path="hits.hits._id,hits.hits._score", **body)
        return [(h["_id"], h["_score"]) for h in res.get("hits", {}).get("hits", [])]

    def bm25_each(self, texts: list[str], page_ids: list[str]) -> list[dict[str, float]]:
        """:meth:`bm25_for` of each of ``texts``, in order, in two round trips
        (one ``mtermvectors`` for their term statistics, one ``msearch``)
        rather than two per text; the same scores."""
        out: list[dict[str, float]] = [{} for _ in texts]
        words = [query_terms(text) for text in texts]
        asked = [i for i, terms in enumerate(words) if terms]
        if not page_ids or not asked:
            return out
        res = self._call("read term statistics", self.client.mtermvectors, index=self.pages_alias,
                         docs=[{"doc": {"text": " ".join(words[i])}, **_TERM_STATS}
                               for i in asked])
        searches, which = [], []
        for i, found in zip(asked, res.get("docs", [])):
            match = _clause(found.get("term_vectors", {}).get("text") or {})
            if match is not None:
                which.append(i)
                searches += [{"index": self.pages_alias}, {
                    "query": {"bool": {"must": [match],
                                       "filter": [{"ids": {"values": list(page_ids)}}]}},
                    "size": len(page_ids), "_source": False}]
        if searches:
            found = self._call("BM25 search", self.client.msearch, searches=searches,
                               filter_path="responses.hits.hits._id,responses.hits.hits._score")
            for i, r in zip(which, found.get("responses", [])):
                out[i] = {h["_id"]: float(h["_score"]) for h in r.get("hits", {}).get("hits", [])}
        return out

    def _match(self, question: str) -> dict | None:
        """The BM25 clause for ``question``: its content words
        (:func:`query_terms`, the terms the embedded index ORs) analysed as
        the page text is (:func:`_clause`); None when no term is in the
        index. Term and page counts come from one ``termvectors`` call on
        the question as an artificial document."""
        terms = query_terms(question)
        if not terms:
            return None
        res = self._call("read term statistics", self.client.termvectors,
                         index=self.pages_alias, doc={"text": " ".join(terms)}, **_TERM_STATS)
        return _clause(res.get("term_vectors", {}).get("text") or {})

    def bm25(self, question: str, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: bm25}`` for the ``n`` best pages within ``scope``, best
        first: the embedded index's BM25 (SQLite FTS5's idf, k1=1.2,
        b=0.75, see :meth:`_match`) on Lucene's term statistics; Lucene
        stores page lengths in one byte (lossily for long pages), so scores agree with
        the embedded index's to a few percent, not exactly."""
        if n <= 0:
            return {}
        match = self._match(question)
        if match is None:
            return {}
        query = {"bool": {"must": [match], "filter": _filters(scope)}}
        return {pid: float(s) for pid, s in self._hits("BM25 search", query=query, size=n)}

    def bm25_for(self, question: str, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: bm25}`` of ``question`` on exactly ``page_ids`` (those
        matching none of its terms absent): :meth:`bm25_each` of one text."""
        return self.bm25_each([question], page_ids)[0]

    def dense_top(self, query: np.ndarray, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: cosine}`` of the ``n`` nearest pages within ``scope``
        (approximate kNN over HNSW, ``num_candidates`` = max(100, 2n); the
        cosines of the pages found are exact), best first."""
        if n <= 0:
            return {}
        n = min(n, MAX_KNN)
        return {pid: _cosine(s) for pid, s in self._hits(
            "kNN search", knn=_knn(query, n, _filters(scope)), size=n)}

    def dense_for(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: cosine}`` of exactly ``page_ids`` (0.0 for unknown pages
        and pages without vectors): a kNN filtered to those ids, which
        Elasticsearch answers exactly (the filter admits fewer pages than
        ``num_candidates``)."""
        out = {pid: 0.0 for pid in page_ids}
        ids = list(out)
        for chunk in batched(ids, MAX_KNN // 2):
            for pid, s in self._hits("kNN search", knn=_knn(
                    query, len(chunk), [{"ids": {"values": chunk}}]), size=len(chunk)):
                out[pid] = _cosine(s)
        return out


_TERM_STATS = {"fields": ["text"], "term_statistics": True, "field_statistics": True,
               "positions": False, "offsets": False, "payloads": False}
"""What a ``termvectors`` read of a question's terms asks for."""


def _clause(found: dict) -> dict | None:
    """The BM25 clause of a question from its ``text`` term vectors read as
    an artificial document (``found``): one ``term`` clause per analysed
    term any page holds, boosted by :func:`fts5_weight` times its
    occurrences (FTS5 scores each OR-ed word, two words of one stem twice),
    any of which may match; None when no term is in the index."""
    doc_count = found.get("field_statistics", {}).get("doc_count", 0)
    if not doc_count:
        return None
    clauses = [{"term": {"text": {"value": term, "boost": stats["term_freq"] * fts5_weight(
                   stats["doc_freq"], doc_count)}}}
               for term, stats in found.get("terms", {}).items() if stats.get("doc_freq")]
    if not clauses:
        return None
    return {"bool": {"should": clauses, "minimum_should_match": 1}}
