"""The embedded store file: one SQLite database with migrations applied,
shared by the embedded graph (:mod:`pilar.graph.sqlite`) and page index
(:mod:`pilar.retrieval.sqlite`, :mod:`pilar.retrieval.dense`), so a
document's graph rows and index rows commit in one transaction. It sits
below both backends and the store factory (:mod:`pilar.stores`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pilar.errors import EmptyStoreError, StoreError
from pilar.migrations import migration_files


class SqliteDatabase:
    """The embedded store file with migrations applied: one writer, many readers.

    ``path`` is created (with its folder) if missing, unless ``create`` is
    False. Writes go through
    :meth:`transaction` on the one writer connection (serialised by a lock):
    everything inside commits together or not at all. Reads use
    :attr:`conn`, a connection of the calling thread (WAL mode: readers see
    the last committed state and never wait for the writer); inside a
    transaction the writing thread reads through the writer connection, so it
    sees its own uncommitted rows and no other thread does. Raises
    :class:`EmptyStoreError` when ``create`` is False and there is no file,
    :class:`StoreError` if the file cannot be created, opened or migrated.
    """

    def __init__(self, path: Path, create: bool = True):
        self.path = Path(path)
        self._lock = threading.RLock()
        self._owner: int | None = None  # thread holding the write transaction
        self._depth = 0
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        if not create and not self.path.is_file():
            raise EmptyStoreError(f"no store at {self.path.parent} (PILAR_HOME or --home): "
                                  "add documents with `pilar ingest PATH`")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {self.path.parent} "
                             f"(PILAR_HOME): {exc.strerror or exc}") from None
        try:
            self._writer = self._connect()
            self._writer.execute("PRAGMA journal_mode=WAL")
            self.migrate()
            self._monitor = self._connect()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the embedded store {self.path}: {exc}") from exc
        self._monitor_lock = threading.Lock()
        self._closed = False

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection to read with: the writer inside this thread's own
        transaction, else this thread's reader connection (opened on first use)."""
        if self._owner == threading.get_ident():
            return self._writer
        return self._reader()

    def _reader(self) -> sqlite3.Connection:
        """This thread's reader connection (opened on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction on the last committed state, through this
        thread's reader connection even inside its own write transaction
        (so nothing uncommitted is seen): reads inside agree with each other."""
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def data_version(self) -> int:
        """A number that changes whenever a write is committed to the file,
        by this process or another (SQLite's ``PRAGMA data_version`` on a
        connection that never writes)."""
        with self._monitor_lock:
            return self._monitor.execute("PRAGMA data_version").fetchone()[0]

    def migrate(self) -> list[int]:
        """Apply pending ``migrations/sqlite`` files, each in one transaction;
        returns the versions applied. Foreign keys are off while a file runs
        (SQLite's way to rebuild a table others refer to) and checked before
        it commits: a violation rolls it back and raises ``sqlite3.IntegrityError``."""
        with self._lock:
            current = self._writer.execute("PRAGMA user_version").fetchone()[0]
            applied = []
            for version, path in migration_files("sqlite", ".sql"):
                if version <= current:
                    continue
                script = path.read_text(encoding="utf-8")
                self._writer.execute("PRAGMA foreign_keys=OFF")
                try:
                    self._writer.executescript(
                        f"BEGIN;\n{script}\nPRAGMA user_version={version};")
                    broken = self._writer.execute("PRAGMA foreign_key_check").fetchone()
                    if broken:
                        self._writer.execute("ROLLBACK")
                        raise sqlite3.IntegrityError(
                            f"migration {path.name} leaves a row of {broken[0]} without "
                            f"its {broken[2]} row")
                    self._writer.execute("COMMIT")
                finally:
                    if self._writer.in_transaction:
                        self._writer.execute("ROLLBACK")
                    self._writer.execute("PRAGMA foreign_keys=ON")
                applied.append(version)
            return applied

    def in_transaction(self) -> bool:
        """Whether the calling thread is inside its own write transaction
        (its reads see rows that may yet roll back)."""
        return self._owner == threading.get_ident()

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``) on the writer connection;
        nested uses join the outer one; other threads wait for it to end."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._writer
                finally:
                    self._depth -= 1
                return
            self._writer.execute("BEGIN IMMEDIATE")
            self._depth, self._owner = 1, threading.get_ident()
            try:
                yield self._writer
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
            else:
                self._writer.execute("COMMIT")
            finally:
                self._depth, self._owner = 0, None

    def close(self) -> None:
        """Close every connection; later calls do nothing (both stores may close it)."""
        if self._closed:
            return
        self._closed = True
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._monitor.close()
        self._writer.close()
