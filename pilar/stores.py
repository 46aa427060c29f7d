"""The store factory: the backends chosen from config, one place.

:func:`open_stores` is the only place that reads ``settings.graph``
(``PILAR_GRAPH`` = sqlite | neo4j) and ``settings.index`` (``PILAR_INDEX`` =
sqlite | elasticsearch). When both roles are embedded they share one
:class:`~pilar.db.SqliteDatabase`, so a document's graph rows and index rows commit in
one SQLite transaction; with separate servers the facade's write protocol
(DESIGN.md "Graph": index first, then the graph, whose Document ``status``
is the visibility switch) keeps a document either fully visible or not at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pilar.config import Settings
from pilar.db import SqliteDatabase
from pilar.errors import ConfigError

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
