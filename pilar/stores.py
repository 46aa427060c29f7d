"""The store factory and the shared embedded database.

:func:`open_stores` is the only place that reads ``settings.graph``
(``PILAR_GRAPH`` = sqlite | neo4j) and ``settings.index`` (``PILAR_INDEX`` =
sqlite | elasticsearch). When both roles are embedded they share one
:class:`SqliteDatabase`, so a document's graph rows and index rows commit in
one SQLite transaction; with separate servers the facade's write protocol
(DESIGN.md "Graph": index first, then the graph, whose Document ``status``
is the visibility switch) keeps a document either fully visible or not at all.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pilar.config import Settings
from pilar.errors import ConfigError, StoreError
from pilar.migrations import migration_files

if TYPE_CHECKING:
    from pilar.graph import GraphStore
    from pilar.retrieval import PageIndex


class SqliteDatabase:
    """A connection to the embedded store file with migrations applied.

    ``path`` is created (with its folder) if missing. Use :meth:`transaction`
    for writes: everything inside commits together or not at all. Raises
    :class:`StoreError` if the file cannot be opened or migrated.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=10000")
            self.migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the embedded store {self.path}: {exc}") from exc
        self._lock = threading.RLock()
        self._depth = 0
        self._closed = False

    def migrate(self) -> list[int]:
        """Apply pending ``migrations/sqlite`` files; returns the versions
        applied (``[]`` when up to date). Idempotent."""
        current = self.conn.execute("PRAGMA user_version").fetchone()[0]
        applied = []
        for version, path in migration_files("sqlite", ".sql"):
            if version <= current:
                continue
            script = path.read_text(encoding="utf-8")
            self.conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version={version};\nCOMMIT;")
            applied.append(version)
        return applied

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``); nested uses join the outer one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                self._depth = 0

    def close(self) -> None:
        """Close the connection; later calls do nothing (both stores may close it)."""
        if not self._closed:
            self._closed = True
            self.conn.close()


def open_stores(settings: Settings) -> tuple[GraphStore, PageIndex]:
    """``(graph, index)`` chosen by ``settings.graph`` and ``settings.index``,
    migrated. Embedded roles share one :class:`SqliteDatabase` at
    ``settings.db_path``; no SQLite file is created when neither role is
    embedded.

    Raises :class:`ConfigError` when a server backend lacks its URL, and
    :class:`StoreError` when a store cannot be opened or reached.
    """
    db = None
    if "sqlite" in (settings.graph, settings.index):
        db = SqliteDatabase(settings.db_path)
    graph = _open_graph(settings, db)
    try:
        index = _open_index(settings, db)
    except BaseException:
        graph.close()
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
        from pilar.retrieval.sqlite import SqlitePageIndex

        return SqlitePageIndex(db)
    if settings.index == "elasticsearch":
        from pilar.retrieval.elasticsearch import ElasticsearchPageIndex

        if not settings.elasticsearch_url:
            raise ConfigError("PILAR_INDEX=elasticsearch needs ELASTICSEARCH_URL")
        return ElasticsearchPageIndex(settings.elasticsearch_url,
                                      api_key=settings.elasticsearch_api_key,
                                      prefix=settings.elasticsearch_index)
    raise ConfigError(f"page index backend {settings.index!r} is not available")
