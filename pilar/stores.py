"""The store factory: the backends chosen from config, one place.

:func:`open_stores` is the only place that reads ``settings.graph``
(``PILAR_GRAPH`` = sqlite | neo4j) and ``settings.index`` (``PILAR_INDEX`` =
sqlite | elasticsearch). When both roles are embedded they share one
:class:`~pilar.db.SqliteDatabase`, so a document's graph rows and index rows commit in
one SQLite transaction; with separate servers the facade's write protocol
(DESIGN.md "Graph": index first, then the graph, whose Document ``status``
is the visibility switch) keeps a document either fully visible or not at all.

:class:`PageCache` keeps the packing material of recently read pages in
front of the graph; the writer empties it (its ``clear`` is the writer's
change callback).
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from pilar.config import Settings
from pilar.db import SqliteDatabase
from pilar.errors import ConfigError
from pilar.model import Support, Unit
from pilar.packing.statistics import refresh_stats
from pilar.packing.tokens import TokenCounter

if TYPE_CHECKING:
    from pilar.graph import GraphStore
    from pilar.retrieval import PageIndex


def open_stores(settings: Settings, create: bool = True) -> tuple[GraphStore, PageIndex]:
    """``(graph, index)`` chosen by ``settings.graph`` and ``settings.index``,
    migrated. Embedded roles share one :class:`SqliteDatabase` at
    ``settings.db_path`` (created unless ``create`` is False); no SQLite
    file is created when neither role is embedded.

    Server stores are opened first, so their errors come before the
    embedded file's. Raises :class:`ConfigError` when a server backend lacks its URL,
    :class:`EmptyStoreError` when ``create`` is False and there is no
    embedded store, and :class:`StoreError` when a store cannot be opened or
    reached.
    """
    # server stores first: a missing URL or an unreachable server is the
    # error to report, even when the embedded file does not exist yet
    graph = index = db = None
    try:
        if settings.graph != "sqlite":
            graph = _open_graph(settings, None)
        if settings.index != "sqlite":
            index = _open_index(settings, None)
        if graph is None or index is None:
            db = SqliteDatabase(settings.db_path, create=create)
        graph = graph or _open_graph(settings, db)
        index = index or _open_index(settings, db)
    except BaseException:
        for store in (graph, db):
            if store is not None:
                store.close()
        raise
    return graph, index


PAGE_CACHE = 1024
"""Pages whose supports and units a :class:`PageCache` keeps in memory for packing."""

YOUNG_THRESHOLD = 10_000
"""The cyclic collector's first threshold in a process holding a
:class:`PageCache` (CPython's default is 700). A cached page is some 600
tracked objects (units, supports, their tuples), so a searching process
holds about 300,000 once a few hundred pages are cached, and a full
collection walks them all (0.3-0.9 s at load 10 on 2 cores). A full
collection comes once the objects promoted to the oldest generation reach
a quarter of it, and at 700 a search's own temporaries are promoted many
times over (they are alive whenever a young collection runs): 11 full
collections in 400 searches of a cold server, 10 ms per search. At 10,000
young collections run 14 times less often and catch few temporaries alive:
1 full collection in those 400 searches, 3-5 ms CPU per search less
(48 against 52 ms, load 9-13); the young generation then holds at most
10,000 objects between collections."""


def fewer_collections() -> None:
    """Raise the cyclic collector's first threshold to :data:`YOUNG_THRESHOLD`
    (a higher one set by the program is kept); process-wide, idempotent."""
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)


class PageCache:
    """An LRU of ``size`` pages' packing material in front of ``graph``;
    ``counter()`` gives the token counter whose statistics units must carry
    (called on the first read, so no tokenizer loads before one). Making
    one raises the process's young-collection threshold
    (:func:`fewer_collections`): what it caches is long-lived."""

    def __init__(self, graph: GraphStore, counter: Callable[[], TokenCounter],
                 size: int = PAGE_CACHE):
        self.graph = graph
        self.counter = counter
        self.size = size
        self._pages: OrderedDict[str, tuple[list[Support], list[Unit]]] = OrderedDict()
        self._lock = threading.Lock()
        fewer_collections()

    def __contains__(self, page_id: str) -> bool:
        return page_id in self._pages

    def __len__(self) -> int:
        return len(self._pages)

    def material(self, page_ids: list[str]) -> dict[str, tuple[list[Support], list[Unit]]]:
        """``{page_id: (supports, units)}`` in document order, the pages not
        cached read in one query (units with their ingest-time statistics,
        filled now when missing, :func:`~pilar.packing.statistics.refresh_stats`):
        units are query-independent and may be cached per page (Tessera
        §3.2), and pages are content-addressed (a doc_id derives from the
        SHA-256 of the bytes and the collection), so a cached page stays
        valid until a write through this object's owner calls :meth:`clear`.
        Safe under threads (the store reads run outside the cache's lock).
        Raises ``KeyError`` for a page the graph does not hold."""
        cache = self._pages
        with self._lock:
            out = {pid: cache[pid] for pid in page_ids if pid in cache}
        missing = [pid for pid in dict.fromkeys(page_ids) if pid not in out]
        if missing:
            read = self.graph.page_material(missing)
            refresh_stats([u for pid in missing for u in read[pid][1]], self.counter(),
                          self.graph.set_unit_stats)
            out.update(read)
        with self._lock:
            for pid in page_ids:
                cache[pid] = out[pid]
                cache.move_to_end(pid)
            while len(cache) > self.size:
                cache.popitem(last=False)
        return {pid: out[pid] for pid in page_ids}

    def supports(self, page_ids: list[str]) -> dict[str, list[Support]]:
        """``{page_id: supports}`` (document order) of :meth:`material`."""
        return {pid: m[0] for pid, m in self.material(page_ids).items()}

    def row_headers(self, page_id: str) -> dict[str, tuple[str, ...]]:
        """``{support_id: column headers}`` of the table rows on page
        ``page_id``: the header path of each cell, as the row's evidence unit
        carries them (Tessera §3.3; a key-value row's key); empty without
        rows. Raises ``KeyError`` for a page the graph does not hold."""
        return {u.support_id: u.headers for u in self.material([page_id])[page_id][1]
                if u.kind == "row"}

    def clear(self) -> None:
        """Forget every cached page (after a write or delete)."""
        with self._lock:
            self._pages.clear()


def _open_graph(settings: Settings, db: SqliteDatabase | None) -> GraphStore:
    if settings.graph == "sqlite":
        from pilar.graph.sqlite import SqliteGraphStore

        return SqliteGraphStore(db)
    if settings.graph == "neo4j":
        from pilar.graph.neo4j import Neo4jGraphStore

        if not settings.neo4j_uri:
            raise ConfigError("PILAR_GRAPH=neo4j needs NEO4J_URI")
        auth = ((settings.neo4j_username, settings.neo4j_password or "")
                if settings.neo4j_username else None)
        return Neo4jGraphStore(settings.neo4j_uri, auth)
    raise ConfigError(f"graph backend {settings.graph!r} is not available")


def _open_index(settings: Settings, db: SqliteDatabase | None) -> PageIndex:
    if settings.index == "sqlite":
        from pilar.retrieval.dense import AnnDense, ExactDense
        from pilar.retrieval.sqlite import SqlitePageIndex

        dense = (AnnDense(db, settings.home / "dense", dtype=settings.dense_dtype)
                 if settings.dense_index == "ann" else ExactDense(db))
        return SqlitePageIndex(db, dense)
    if settings.index == "elasticsearch":
        from pilar.retrieval.elasticsearch import ElasticsearchPageIndex

        if not settings.elasticsearch_url:
            raise ConfigError("PILAR_INDEX=elasticsearch needs ELASTICSEARCH_URL")
        return ElasticsearchPageIndex(settings.elasticsearch_url,
                                      api_key=settings.elasticsearch_api_key,
                                      prefix=settings.elasticsearch_index)
    raise ConfigError(f"page index backend {settings.index!r} is not available")
